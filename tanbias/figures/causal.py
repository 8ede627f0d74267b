"""Figures of the causal test (chapter 12): the operator's worked example, the trajectories per
arm, the forest plot of the registered contrasts.

The numbers come from :mod:`tanbias.lab.surgery` and :mod:`tanbias.lab.analysis.causal`;
this module only draws.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from tanbias.figures import COLORS, GREY, KIND_COLORS, LIGHT_GREY, frozen_layout, labelled
from tanbias.figures.interactive import Interactive, Param
from tanbias.lab.config import EARLY_FRAC, KINDS
from tanbias.lab.experiments import CAUSAL_ARMS, causal_arms

__all__ = ["ARM_COLORS", "operator_interactive", "trajectory_interactive", "progress_interactive", "forest_figure"]

#: one colour per arm, from the palette (the early arms dashed in the trajectories)
ARM_COLORS = {"control": COLORS[7], "proxy": COLORS[1], "random": COLORS[2], "uniform": COLORS[4],
              "proxy-early": COLORS[1], "uniform-early": COLORS[4], "tied": COLORS[3]}


@frozen_layout
def _operator_layout():
    fig = go.Figure()
    fig.update_yaxes(type="log")
    return labelled(fig, " ", "principal direction k of the layer's inputs (largest variance first)",
                    "update energy along it, ‖ΔW u<sub>k</sub>‖² [log]", legend="update")


def operator_interactive() -> Interactive:
    """Interactive: an update's energy along each principal direction of its inputs, before and after
    the surgery (:func:`tanbias.lab.surgery.worked_example`). Sliders: α and the rank r."""
    from tanbias.lab.surgery import worked_example

    def compute(alpha, rank):
        return worked_example(alpha, int(rank))

    def figure(data, alpha, rank):
        k = np.arange(1, len(data["before"]) + 1)
        traces = [dict(type="bar", x=k.tolist(), y=data["before"].tolist(), name="before surgery",
                       marker=dict(color=LIGHT_GREY)),
                  dict(type="bar", x=k.tolist(), y=np.maximum(data["after"], 1e-6).tolist(), name="after surgery",
                       marker=dict(color=ARM_COLORS["proxy"]))]
        layout = _operator_layout()
        layout["barmode"] = "group"
        layout["shapes"] = [dict(type="line", xref="x", yref="paper", x0=int(rank) + 0.5, x1=int(rank) + 0.5,
                                 y0=0, y1=1, line=dict(color=GREY, dash="dot"))]
        layout["title"]["text"] = (f"α = {alpha:.2f}, r = {int(rank)}: {data['share']:.0%} of the update's energy "
                                   f"lies in P, {data['removed']:.0%} removed")
        return {"data": traces, "layout": layout}

    return Interactive(
        params=[Param("alpha", "α (factor on the component in P)", 0.0, 1.0, default=0.0, steps=5),
                Param("rank", "rank r of P", options=(1, 2, 4, 8, 16), default=4)],
        compute=compute, figure=figure, title="The surgery on one update",
        caption="A map reads 24-dimensional inputs with 4 strong principal directions; its update is one "
                "gradient step for random output gradients. Grey: the update's energy along each principal "
                "direction of the inputs, which follows the inputs' variance (the gradient side's tangent "
                "bias in miniature). Colour: after ΔW ← ΔW (α P + I − P), P the top-r principal directions "
                "(left of the dotted line). α = 0 removes the component in P, α = 1 leaves the update as it "
                "was; the directions right of the line are never touched. Energies below 10⁻⁶ are drawn at 10⁻⁶.",
        name="ch12-operator", height=430)


@frozen_layout
def _trajectory_layout(early_x: float):
    fig = go.Figure()
    fig.add_vline(x=early_x, line=dict(color=GREY, width=1, dash="dot"))
    fig.update_xaxes(type="log")
    return labelled(fig, " ", "training step + 1 [log]", "ln mean cosine of the activations", legend="arm")


@frozen_layout
def _progress_layout():
    fig = go.Figure()
    fig.update_xaxes(autorange="reversed")          # training runs left to right, as the loss falls
    return labelled(fig, " ", "held-out loss on the common text [nats per token] (training progresses →)",
                    "ln mean cosine of the activations", legend="arm")


def _arm_curves(traj, seeds: dict, against: str):
    """``compute`` of the two views: per arm, the mean over the seeds shown of the outcome at every probe
    step, ±1 standard error, against the step + 1 or the arm's mean held-out loss at that step."""
    def compute(kind, layer):
        t = traj[(traj["kind"] == kind) & (traj["layer"].astype(str) == str(layer))
                 & traj["seed"].isin(seeds.get(kind, []))]
        out = []
        for arm in causal_arms(kind):
            g = t[t["arm"] == arm].groupby("step")
            m = g["log_mean_cosine"].mean()
            se = g["log_mean_cosine"].std(ddof=1) / np.sqrt(g["log_mean_cosine"].count())
            x = m.index.to_numpy() + 1 if against == "step" else g["heldout_loss"].mean().to_numpy(float)
            out.append((arm, x, m.to_numpy(), np.nan_to_num(se.to_numpy())))
        return out + [("", np.empty(0), np.empty(0), np.empty(0))] * (len(CAUSAL_ARMS) - len(out))
    return compute


def _arm_traces(data, band: bool = True) -> list:
    traces = []
    for arm, x, m, se in data:
        color = ARM_COLORS.get(arm, GREY)
        dash = "dash" if arm.endswith("-early") else "solid"
        if band:
            traces.append(dict(type="scatter", x=np.concatenate([x, x[::-1]]).tolist(),
                               y=np.concatenate([m + se, (m - se)[::-1]]).tolist(), fill="toself",
                               fillcolor=color, opacity=0.15, line=dict(width=0), hoverinfo="skip",
                               showlegend=False, name=arm or " "))
        traces.append(dict(type="scatter", x=x.tolist(), y=m.tolist(), mode="lines+markers", name=arm or " ",
                           showlegend=bool(arm), line=dict(color=color, width=2, dash=dash), marker=dict(size=4)))
    return traces


def _params(traj, kind: str = "decoder") -> list:
    L = int(max(x for x in traj["layer"] if x != "mean"))
    return [Param("kind", "architecture", options=KINDS, default=kind),
            Param("layer", "layer", options=("mean", *range(1, L + 1)), default="mean")]


def _layer_name(layer) -> str:
    return "mean over layers 1–L" if layer == "mean" else f"layer {layer}"


def trajectory_interactive(traj, seeds: dict, steps: int) -> Interactive:
    """Interactive: the primary outcome during training, one line per arm (mean over ``seeds[kind]``,
    the seeds shown, with a ±1 standard-error band). Sliders: architecture, layer (``mean``: ln of
    the layer mean)."""
    def figure(data, kind, layer):
        layout = _trajectory_layout(EARLY_FRAC * steps + 1)
        n = len(seeds.get(kind, []))
        layout["title"]["text"] = f"Anisotropy during training, {kind}, {_layer_name(layer)} (seeds shown: {n})"
        return {"data": _arm_traces(data), "layout": layout}

    return Interactive(
        params=_params(traj), compute=_arm_curves(traj, seeds, "step"), figure=figure,
        title="Anisotropy during training, by arm",
        caption="The ln of the mean cosine between the activations of the probe's captured positions (special "
                "tokens and the first position left out), at every probe step; lines: the mean over the seeds "
                "whose run of that arm is committed, bands: ±1 standard error across them. Dashed: the early arms, whose surgery stops at "
                "the dotted line (30 % of training). Lower is more isotropic.",
        name="ch12-trajectories", height=480)


def progress_interactive(traj, seeds: dict) -> Interactive:
    """Interactive: the primary outcome against training progress, one line per arm: at every probe
    step the mean over ``seeds[kind]`` of the ln mean cosine (±1 standard error) against the arm's mean
    held-out loss on the common text at that step. An arm that only learns more slowly follows the
    control's curve and stops short of its end. Sliders: architecture (the encoder first: its proxy arm
    is the one that learns less), layer."""
    def figure(data, kind, layer):
        layout = _progress_layout()
        n = len(seeds.get(kind, []))
        layout["title"]["text"] = f"Anisotropy against progress, {kind}, {_layer_name(layer)} (seeds: {n})"
        return {"data": _arm_traces(data), "layout": layout}

    return Interactive(
        params=_params(traj, "encoder"), compute=_arm_curves(traj, seeds, "loss"), figure=figure,
        title="Anisotropy against training progress, by arm",
        caption="The same outcome as the trajectories above, plotted against how far each arm has learned: "
                "at every probe step, the arm's mean held-out loss on the common text (x, falling to the right) "
                "and its mean ln mean cosine (y, ±1 standard error across the seeds). An arm that only learns "
                "more slowly runs along the control's curve and ends short of the control's end; an arm with "
                "its own effect on anisotropy runs above or below it at the same loss.",
        name="ch12-progress", height=480)


def forest_figure(causal_rows, tied_rows) -> go.Figure:
    """Forest plot: every registered contrast of the primary outcome as a ratio with its 95 % interval
    (prediction 1's six, and the decoder's tied rival), a line at 1 (no effect)."""
    rows = [(r["kind"], r["contrast"], r["estimate"], r["lo"], r["hi"]) for _, r in causal_rows.iterrows()]
    rows += [("decoder", r["contrast"], r["estimate"], r["lo"], r["hi"]) for _, r in tied_rows.iterrows()
             if r["contrast"] == "tied - control"]
    fig = go.Figure()
    fig.add_vline(x=1.0, line=dict(color=GREY, width=1))
    for kind in KINDS:
        sel = [r for r in rows if r[0] == kind and np.isfinite(r[2])]
        if not sel:
            continue
        y = [f"{kind}: {c}" for _, c, *_ in sel]
        est = np.exp([r[2] for r in sel])
        lo, hi = np.exp([r[3] for r in sel]), np.exp([r[4] for r in sel])
        fig.add_trace(go.Scatter(x=est, y=y, mode="markers", name=kind,
                                 marker=dict(color=KIND_COLORS[kind], size=9),
                                 error_x=dict(type="data", symmetric=False, array=hi - est, arrayminus=est - lo)))
    fig.update_xaxes(type="log")
    fig.update_yaxes(autorange="reversed")
    if not fig.data:                     # before two seeds are complete there is no contrast to draw
        fig.update_xaxes(range=[np.log10(0.5), np.log10(2.0)])
        fig.update_yaxes(visible=False)
        fig.add_annotation(text="no contrast yet: fewer than two complete seeds in each architecture",
                           x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    return labelled(fig, "Registered contrasts of the primary outcome", "ratio of the mean cosine [log]", "",
                    legend="architecture")
