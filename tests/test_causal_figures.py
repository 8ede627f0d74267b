"""The figures of the causal test (tanbias.figures.causal), on trajectories planted by hand."""
from __future__ import annotations

import numpy as np
import pandas as pd
from figurehelpers import static_ok

import tanbias.figures.causal as causal_figures
from tanbias.lab.experiments import causal_arms
from tanbias.lab.probe import probe_steps

STEPS = 320


def _traj(seeds=range(3), layers=(1, 2)):
    """ln mean cosine = held-out loss − 7 (the control's curve); the proxy arm stops 0.2 nats short."""
    rows = []
    steps = probe_steps(STEPS, 14)
    for kind in ("encoder", "decoder"):
        for s in seeds:
            for arm in causal_arms(kind):
                end = 6.2 if arm == "proxy" else 6.0
                for i, step in enumerate(steps):
                    loss = 9.0 - (9.0 - end) * i / (len(steps) - 1)
                    for layer in (*layers, "mean"):
                        rows.append({"run": f"causal-{kind}-{arm}-s{s}", "kind": kind, "arm": arm, "seed": s,
                                     "step": step, "layer": layer, "log_mean_cosine": loss - 7 + 0.01 * s,
                                     "heldout_loss": loss})
    return pd.DataFrame(rows)


def test_the_progress_view_plots_each_arm_against_its_held_out_loss():
    traj = _traj()
    seeds = {"encoder": [0, 1, 2], "decoder": [0, 1, 2]}
    it = causal_figures.progress_interactive(traj, seeds)
    fig = static_ok(it, n_frames=2 * 3)                        # two architectures x (mean, layer 1, layer 2)
    assert fig["layout"]["xaxis"]["autorange"] == "reversed"   # training progresses to the right
    assert "encoder" in fig["layout"]["title"]["text"]          # the default view: the arm that learns less
    assert "held-out loss" in fig["layout"]["xaxis"]["title"]["text"]
    data = it.compute("encoder", "mean")
    curves = {arm: (x, m) for arm, x, m, _ in data if arm}
    x, m = curves["proxy"]
    assert np.isclose(x.min(), 6.2) and np.allclose(m, x - 7 + 0.01)    # the proxy arm on the control's curve
    assert np.isclose(curves["control"][0].min(), 6.0)


def test_the_trajectories_share_the_arms_colours_and_plot_against_the_step():
    traj = _traj()
    it = causal_figures.trajectory_interactive(traj, {"encoder": [0, 1], "decoder": [0, 1, 2]}, STEPS)
    fig = static_ok(it, n_frames=2 * 3)
    assert fig["layout"]["xaxis"]["type"] == "log"
    data = it.compute("decoder", 1)
    assert [a for a, *_ in data if a] == list(causal_arms("decoder"))
    assert np.array_equal(data[0][1], np.asarray(probe_steps(STEPS, 14)) + 1)
