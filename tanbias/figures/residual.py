"""Figures and interactives of chapter 6 (residual propagation and the feedback loop).

Every function here turns the data of :mod:`tanbias.theory.residual` into a plotly
figure or a :class:`tanbias.figures.interactive.Interactive`; the mathematics, the
training runs and the numbers the figures show live there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tanbias._checks import check_choice
from tanbias.errors import ParameterError
from tanbias.figures import BLACK, COLORS, FAINT_GREY, REFERENCE_GREY, frozen_layout, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.theory.residual import default_loop_manifold, depth_cloud, tangent_alignment, unit_energies

__all__ = [
    "depth_figure",
    "loop_figure",
    "depth_cloud_figure",
    "depth_interactive",
    "learning_figure",
    "loop_interactive",
]


def depth_figure(df, title="Residual stream: tangent and normal parts against depth") -> go.Figure:
    """Tangent/normal RMS norms (log scale) and normal share against layer.

    Parameters
    ----------
    df : pandas.DataFrame or dict of lists
        Output of :func:`tanbias.theory.residual.residual_depth_profile`.
    title : str

    Returns
    -------
    plotly.graph_objects.Figure
    """
    df = pd.DataFrame(df)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=df["layer"], y=df["tangent_norm"], name="||P_T h|| (tangent)",
                             mode="lines+markers"))
    fig.add_trace(go.Scatter(x=df["layer"], y=df["normal_norm"], name="||P_N h|| (normal)",
                             mode="lines+markers"))
    fig.add_trace(go.Scatter(x=df["layer"], y=df["normal_share"], name="normal share",
                             mode="lines", line=dict(dash="dot")))
    fig.update_layout(yaxis_type="log", yaxis_exponentformat="power")
    return labelled(fig, title, "layer l [blocks applied]",
                    "RMS norm over tokens / normal share [log]")


def loop_figure(df, metric="alignment", title=None) -> go.Figure:
    """A loop metric against SGD step, closed vs cut.

    Parameters
    ----------
    df : pandas.DataFrame or dict of lists
        Output of :func:`tanbias.theory.residual.feedback_loop`.
    metric : {"alignment", "share", "loss", "update_alignment"}

    Returns
    -------
    plotly.graph_objects.Figure
    """
    df = pd.DataFrame(df)
    check_choice("metric", metric, ("alignment", "share", "loss", "update_alignment"))
    labels = dict(alignment="tangent alignment of W1 (1 = isotropic)",
                  update_alignment="tangent alignment of W1 - W1(0)",
                  share="tangent share of layer-2 inputs seen by the gradient",
                  loss="training loss (MSE / 2)")
    fig = go.Figure()
    for loop, g in df.groupby("loop", sort=False):
        fig.add_trace(go.Scatter(x=g["step"], y=g[metric], mode="lines",
                                 name=f"loop {loop}"))
    if metric in ("alignment", "update_alignment"):
        fig.update_layout(yaxis_type="log", yaxis_exponentformat="power")   # orders of magnitude
    return labelled(fig, title or f"Feedback loop: {metric} during SGD", "SGD step [count]",
                    labels[metric], legend="loop")


def learning_figure(history, title="What each run learns, and what its activations look like"
                    ) -> go.Figure:
    """Fit of each target half and normal share of the hidden pre-activations, against step.

    Parameters
    ----------
    history : pandas.DataFrame
        ``tanbias.theory.residual.LoopRun.history`` (needs ``fit_tangent``, ``fit_normal``, ``share``).
    title : str

    Returns
    -------
    plotly.graph_objects.Figure
    """
    df = pd.DataFrame(history)
    df = df[df["step"] > 0]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16,
                        subplot_titles=["fraction of each target half fitted",
                                        "normal share of the hidden pre-activations"])
    colors = {"closed": COLORS[0], "cut": COLORS[1]}
    for loop, g in df.groupby("loop", sort=False):
        for col, dash, half in (("fit_tangent", "solid", "tangent half"),
                                ("fit_normal", "dot", "normal half")):
            fig.add_trace(go.Scatter(x=g["step"], y=g[col], mode="lines",
                                     name=f"{loop}: {half}",
                                     line=dict(color=colors.get(loop), dash=dash)), row=1, col=1)
        fig.add_trace(go.Scatter(x=g["step"], y=1.0 - g["share"], mode="lines",
                                 name=f"{loop}: normal share", showlegend=True,
                                 line=dict(color=colors.get(loop), width=3, dash="dashdot")),
                      row=1, col=2)
    fig.update_xaxes(type="log", title_text="SGD step [log]", exponentformat="power")
    fig.update_yaxes(title_text="least-squares coefficient (1 = fitted)", row=1, col=1)
    fig.update_yaxes(type="log", title_text="normal share [log]", row=1, col=2)
    fig.update_layout(title=dict(text=title), height=520, margin=dict(t=90, b=150),
                      legend=dict(orientation="h", y=-0.2, yanchor="top", x=0.0))
    fig.update_yaxes(exponentformat="power")
    return fig


@frozen_layout
def _two_panel_layout(titles, axes, column_widths=(0.5, 0.5)):
    """Layout dict of a 1x2 subplot figure, built once (make_subplots is slow per frame).

    ``axes`` is ``((x1_title, x1_log, y1_title, y1_log), (x2_title, ...))``.
    """
    fig = make_subplots(rows=1, cols=2, column_widths=list(column_widths),
                        horizontal_spacing=0.12, subplot_titles=list(titles))
    for col, (xt, xlog, yt, ylog) in enumerate(axes, start=1):
        fig.update_xaxes(title_text=xt, type="log" if xlog else "linear", row=1, col=col)
        fig.update_yaxes(title_text=yt, type="log" if ylog else "linear", row=1, col=col)
    # legend above the panels: below them is where the interactive puts its sliders
    fig.update_layout(legend=dict(orientation="h", x=0.0, y=1.09, yanchor="bottom"),
                      margin=dict(t=150))
    for ann in fig.layout.annotations:          # subplot titles: smaller, just above each panel
        ann.font = dict(size=13)
    fig.update_yaxes(exponentformat="power")
    fig.update_xaxes(exponentformat="power")
    return fig


def _layout(title, *args, **kwargs) -> dict:
    layout = _two_panel_layout(*args, **kwargs)
    layout["title"] = dict(text=title, font=dict(size=14), y=0.98, yanchor="top")
    return layout


def _trace(x, y, name, col=1, **style) -> dict:
    """A scatter trace as a plain dict (no per-frame validation cost)."""
    axis = "" if col == 1 else str(col)
    return dict(type="scatter", x=np.asarray(x), y=np.asarray(y), name=name,
                xaxis=f"x{axis}", yaxis=f"y{axis}", **style)


def _depth_cloud_dict(data, title=None) -> dict:
    l = data["layer"]
    if title is None:
        kind = "tangent-aligned blocks" if data["iso"] == 0 else \
            f"blocks with an isotropic part (iso = {data['iso']:.3g})"
        title = (f"Residual stream, t = {data['t']:.3g}, layer {l}, {kind}: "
                 f"normal share {data['normal_share'][l]:.2g}")
    layout = _layout(title, ("tokens: tangent vs normal norm", "normal share of the stream"),
                     (("||P<sub>T</sub> h|| (tangent) [log]", True,
                       "||P<sub>N</sub> h|| (normal) [log]", True),
                      ("layer l [blocks applied]", False, "normal share [log]", True)),
                     (0.55, 0.45))
    traces = [
        _trace(data["tangent0"], data["normal0"], "tokens at layer 0", mode="markers",
               marker=dict(size=5, color=FAINT_GREY)),
        _trace(data["tangent"], data["normal"], "tokens at the chosen layer", mode="markers",
               marker=dict(size=6, color=COLORS[0], opacity=0.7)),
        _trace(data["layers"], data["normal_share"], "normal share ||P<sub>N</sub>h||² / ||h||²",
               col=2, mode="lines", line=dict(color=COLORS[1])),
        _trace([l], [data["normal_share"][l]], "chosen layer", col=2, mode="markers",
               marker=dict(size=11, color=BLACK)),
    ]
    return dict(data=traces, layout=layout)


def depth_cloud_figure(data, title=None) -> go.Figure:
    """Two panels: the tokens at one layer (log-log norms) and the normal share against depth.

    Parameters
    ----------
    data : dict
        Output of :func:`tanbias.theory.residual.depth_cloud` (with a ``layer``).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return go.Figure(_depth_cloud_dict(data, title))


def depth_interactive(manifold=None, ts=(0.05, 0.1, 0.2, 0.4), layers=None, n_layers=24,
                      gain=0.1, isos=(0.0, 0.05), n=128, seed=0) -> Interactive:
    """Interactive over the layer, ``t`` and the blocks' isotropic part (chapter 6).

    Parameters
    ----------
    manifold : tanbias.theory.manifolds.Submanifold, optional
        Default :func:`tanbias.theory.residual.default_loop_manifold`.
    ts : sequence of float
        Radii of the static grid.
    layers : sequence of int, optional
        Layers of the static grid (default every 4th, 0..n_layers).
    n_layers, gain, n, seed
        See :func:`tanbias.theory.residual.depth_cloud`.
    isos : sequence of float
        Values of the isotropic strength (a categorical slider).

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    manifold = default_loop_manifold() if manifold is None else manifold
    layers = tuple(range(0, n_layers + 1, 4)) if layers is None else tuple(layers)
    ts = tuple(float(v) for v in ts)
    stacks = {}

    def compute(layer, t, iso):
        # the whole stack once per (t, iso); moving the layer slider only slices it
        if (t, iso) not in stacks:
            if len(stacks) > 32:             # live sliders take continuous t: keep it bounded
                stacks.clear()
            stacks[t, iso] = depth_cloud(manifold, t, None, iso, n, n_layers, gain, seed)
        full = stacks[t, iso]
        return dict(full, tangent=full["all_tangent"][layer], normal=full["all_normal"][layer],
                    layer=int(layer))

    return Interactive(
        params=[Param("layer", "layer l", 0, n_layers, default=layers[len(layers) // 2],
                      integer=True, values=layers),
                Param("t", "radius t", ts[0], ts[-1], default=ts[1], log=True, values=ts),
                Param("iso", "isotropic part of the blocks", options=tuple(isos))],
        compute=compute, figure=lambda data, layer, t, iso: _depth_cloud_dict(data),
        title="Residual stream against depth",
        caption="Left: every token's tangent and normal norm, at layer 0 (grey) and at the "
                "chosen layer (blue). With tangent-aligned blocks (isotropic part 0) the cloud "
                "slides to the right and not up: the identity path copies the normal part "
                "exactly while the blocks reinforce the tangent part. Give the blocks an "
                "isotropic part and the cloud also moves up: the blocks then write tangent "
                "signal into normal directions.",
        name="ch6-depth", height=540)


def _log_spaced(steps, k=120):
    """About ``k`` logged steps, roughly evenly spaced in log(step), for light traces."""
    steps = np.asarray(sorted(set(int(s) for s in steps if s > 0)))
    if steps.size <= k:
        return steps
    idx = np.unique(np.round(np.geomspace(1, steps.size, k)).astype(int) - 1)
    return steps[idx]


def loop_interactive(runs, manifold=None) -> Interactive:
    """Interactive over the training step and the initial scale: the loop, unit by unit.

    Parameters
    ----------
    runs : dict
        ``{init_scale: tanbias.theory.residual.LoopRun}``; every run must hold snapshots at the same
        steps (the slider's values; step 0 is skipped for the log axis).
    manifold : tanbias.theory.manifolds.Submanifold, optional
        The manifold of the runs (default :func:`tanbias.theory.residual.default_loop_manifold`).

    Returns
    -------
    tanbias.figures.interactive.Interactive
    """
    manifold = default_loop_manifold() if manifold is None else manifold
    T, N = manifold.tangent_basis, manifold.normal_basis
    scales = tuple(sorted(runs))
    snap_steps = sorted({s for (_, s) in runs[scales[0]].snapshots if s > 0})
    if len(snap_steps) < 2:
        raise ParameterError(f"runs hold {len(snap_steps)} positive snapshot steps: valid range "
                             f"is at least 2. Pass snapshot_steps to run_feedback_loop.")
    shown = {sc: r.history[r.history["step"].isin(_log_spaced(r.history["step"]))]
             for sc, r in runs.items()}
    colors = {"closed": COLORS[0], "cut": COLORS[1]}

    def compute(step, init_scale):
        run = runs[init_scale]
        out = {"step": step, "init_scale": init_scale}
        for loop in ("closed", "cut"):
            out[loop] = unit_energies(run.snapshots[loop, step], T, N)
        h = shown[init_scale]
        out["curves"] = {loop: (g["step"].to_numpy(), g["alignment"].to_numpy())
                         for loop, g in h.groupby("loop", sort=False)}
        out["now"] = {loop: tangent_alignment(run.snapshots[loop, step], T, N)
                      for loop in ("closed", "cut")}
        return out

    def figure(data, step, init_scale):
        lo = min(float(np.min(data[k][i])) for k in ("closed", "cut") for i in (0, 1))
        hi = max(float(np.max(data[k][i])) for k in ("closed", "cut") for i in (0, 1))
        traces = [_trace(*data[loop], f"loop {loop}: units", mode="markers",
                         marker=dict(size=7, opacity=0.75, color=colors[loop]))
                  for loop in ("closed", "cut")]
        traces.append(_trace([lo, hi], [lo, hi], "isotropic unit", mode="lines",
                             line=dict(color=REFERENCE_GREY, dash="dash")))
        traces += [_trace(*data["curves"][loop], f"loop {loop}: alignment", col=2, mode="lines",
                          line=dict(color=colors[loop])) for loop in ("closed", "cut")]
        traces.append(_trace([step, step], [data["now"]["closed"], data["now"]["cut"]],
                             "chosen step", col=2, mode="markers",
                             marker=dict(size=11, color=BLACK)))
        regime = "feature learning" if init_scale < 1 else "standard init"
        title = (f"init scale {init_scale:g} ({regime}), step {step}: alignment "
                 f"{data['now']['closed']:.3g} closed vs {data['now']['cut']:.3g} cut")
        layout = _layout(title, ("hidden units: input-weight energy per dimension",
                                 "tangent alignment of W<sub>1</sub>"),
                         (("tangent energy per dim [log]", True, "normal energy per dim [log]",
                           True),
                          ("SGD step [log]", True, "alignment (1 = isotropic) [log]", True)))
        return dict(data=traces, layout=layout)

    return Interactive(
        params=[Param("step", "SGD step", options=tuple(snap_steps),
                      default=min(snap_steps, key=lambda s: abs(s - 500))),
                Param("init_scale", "initial weight scale", options=scales)],
        compute=compute, figure=figure, title="The feedback loop, unit by unit",
        caption="Left: each hidden unit's input weights, tangent vs normal energy per "
                "dimension (above the dashed line = leaning normal, below = leaning tangent). "
                "Right: the aggregate alignment of both runs, the chosen step in black. "
                "Step through the feature-learning run: the closed loop's units swing to the "
                "tangent side early, then back across the diagonal; at standard init the two "
                "runs stay close for hundreds of steps.",
        name="ch6-loop", height=540)
