"""tanbias.figures.residual: chapter 6's figures and interactives (static grids stay light)."""

import numpy as np
import plotly.graph_objects as go
import pytest

from figurehelpers import static_ok
from tanbias.errors import ParameterError
from tanbias.figures.residual import (depth_cloud_figure, depth_figure, depth_interactive,
                                      learning_figure, loop_figure, loop_interactive)
from tanbias.theory.residual import (default_loop_manifold, depth_cloud, feedback_loop,
                              residual_depth_profile, run_feedback_loop)


@pytest.fixture(scope="module")
def M():
    return default_loop_manifold()


@pytest.fixture(scope="module")
def history():
    """The feedback loop at its defaults (the run test_residual.py checks)."""
    return feedback_loop()


@pytest.mark.slow
def test_loop_and_depth_figures(history):
    for fig in (loop_figure(history), loop_figure(history, "share"),
                depth_figure(residual_depth_profile(np.ones((2, 3)), np.eye(3)[:, :1],
                                                    np.eye(3)[:, 1:], 3))):
        assert isinstance(fig, go.Figure) and len(fig.data) >= 2
        assert fig.layout.title.text and fig.layout.xaxis.title.text


def test_depth_interactive_and_cloud_figure(M):
    c = depth_cloud(M, 0.1, 24, n=32)
    fig = static_ok(depth_interactive(M), 7 * 4 * 2)
    assert len(fig["data"]) == 4
    assert isinstance(depth_cloud_figure(c), go.Figure)


@pytest.mark.slow
def test_loop_interactive_and_learning_figure():
    snaps = (0, 20, 100, 200)
    runs = {s: run_feedback_loop(steps=200, log_every=20, init_scale=s, snapshot_steps=snaps)
            for s in (0.1, 1.0)}
    h = runs[0.1].history
    fig = static_ok(loop_interactive(runs), 3 * 2)
    assert len(fig["data"]) == 6
    f = learning_figure(h)
    assert isinstance(f, go.Figure) and len(f.data) == 6


def test_loop_interactive_needs_two_snapshots():
    run = run_feedback_loop(steps=20, log_every=10, snapshot_steps=(0,))
    with pytest.raises(ParameterError, match=r"at least 2"):
        loop_interactive({0.1: run})
