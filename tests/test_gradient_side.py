"""Chapters 4-6: the figure builders, interactives and helpers added for the chapters.

Closed forms first, then properties, then the interactives (static grids stay
light), then bad inputs. The modules' original functions are tested in
test_gradients.py, test_attention.py and test_residual.py.
"""

import math

import numpy as np
import plotly.graph_objects as go
import pytest

import tanbias.attention as att
import tanbias.figures.attention as fatt
import tanbias.figures.gradients as fgrad
import tanbias.figures.residual as fres
import tanbias.gradients as grad
import tanbias.residual as res
from tanbias.errors import ParameterError
from tanbias.exercises import check_exercise_1, check_exercise_2, check_exercise_3
from tanbias.interactive import Interactive
from tanbias.manifolds import Cylinder, GeneralizedCylinder, Sphere
from tanbias.radial import Epanechnikov, Gaussian, Laplace
from tanbias.stats import loglog_slope


@pytest.fixture(scope="module")
def cyl():
    return GeneralizedCylinder(1, 2, R=1.0, D=5, seed=0)


@pytest.fixture(scope="module")
def quad():
    return res.default_loop_manifold()


def _static_ok(inter, n_frames, max_bytes=1_000_000):
    assert isinstance(inter, Interactive)
    fig = inter.static_dict()
    assert len(fig["frames"]) == n_frames
    html = inter.to_html()
    assert len(html) < max_bytes
    return fig


# --- chapter 4: gradients ---------------------------------------------------------------

@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_radial_shape_constant_closed_forms(d):
    assert grad.radial_shape_constant(Gaussian(0.37), d) == pytest.approx((d + 2) / d)
    # Laplace: m_k = k!, so kappa = (d+3)! (d-1)! / ((d+1)!)^2
    expected = math.factorial(d + 3) * math.factorial(d - 1) / math.factorial(d + 1) ** 2
    assert grad.radial_shape_constant(Laplace(2.0), d) == pytest.approx(expected)


def test_predicted_rms_from_eta_sphere():
    S = Sphere(2, R=2.0, D=4, seed=0)            # c = 1/(2R) = 1/4
    assert grad.predicted_rms_from_eta(S, Gaussian(1.0), 0.02) == pytest.approx(0.25 * math.sqrt(0.04))


@pytest.mark.parametrize("law", [Gaussian(1.0), Epanechnikov(1.0)])
def test_eta_scaling_matches_prediction(cyl, law):
    etas = np.geomspace(1e-4, 1e-2, 5)
    df = grad.eta_scaling(cyl, law, etas, n=8000, rng=0)
    np.testing.assert_allclose(df["mean_r2"] / df["eta_g"], 1.0, rtol=0.05)
    np.testing.assert_allclose(df["rms"] / df["predicted_rms"], 1.0, rtol=0.08)
    assert abs(loglog_slope(df["eta_g"], df["rms"]).slope - 0.5) < 0.03


def test_counterexample_batch_scaling_grows_like_sqrt_n():
    df = grad.counterexample_batch_scaling(0.1, [100, 1000, 10_000, 100_000], reps=201)
    assert abs(loglog_slope(df["n"], df["median_mean_ratio"]).slope - 0.5) < 0.1
    np.testing.assert_allclose(df["rms_ratio"], 0.1)


def test_gradient_cloud_is_the_parabola_for_a_constant_signal():
    # Cylinder in R^3: the normal coordinate of exp(t u) is R (1 - cos(t u_1 / R)),
    # so with delta = 1 the cloud (divided by t) is the curve (sin(t u_1)/t, (1 - cos(t u_1))/t).
    C = Cylinder(R=1.0, D=3, seed=0)
    c = grad.gradient_cloud(C, 0.2, n=500, delta="constant", rng=0)
    assert np.all(c["normal"] >= -1e-12)                         # even in u: one sign
    assert np.max(c["normal"]) == pytest.approx((1 - math.cos(0.2)) / 0.2, rel=0.02)
    assert c["rms"] == pytest.approx(c["predicted"], rel=0.05)
    # the normal mean is t/4 in these units and never averages away; the tangent mean is
    # sampling noise of size ~0.7/sqrt(n)
    big = grad.gradient_cloud(C, 0.3, n=40_000, delta="constant", rng=0)
    assert big["mean"][1] == pytest.approx(0.3 / 4, rel=0.05)
    assert big["mean"][1] > 10 * abs(big["mean"][0])
    g = grad.gradient_cloud(C, 0.3, n=40_000, delta="gaussian", rng=0)
    assert g["mean_ratio"] < 0.2 * big["mean_ratio"]


def test_affine_signal_mean_ratio_is_order_one(cyl):
    df = grad.affine_signal_scaling(cyl, np.geomspace(0.03, 0.3, 5), n=20_000, rng=1)
    # sampling noise of the tangent mean is ~ t / sqrt(n) against its t^2 value: a few percent
    assert float(np.median(df["mean"] / df["predicted_mean"])) == pytest.approx(1.0, rel=0.1)
    np.testing.assert_allclose(df["mean"] / df["predicted_mean"], 1.0, rtol=0.2)
    assert abs(loglog_slope(df["t"], df["mean"]).slope) < 0.1
    assert abs(loglog_slope(df["t"], df["rms"]).slope - 1.0) < 0.05


def test_chapter4_interactives_and_figures(cyl):
    fig = _static_ok(fgrad.gradient_cloud_interactive(cyl), 7 * 2)
    assert fig["layout"]["sliders"][1]["steps"][1]["label"] == "constant"
    _static_ok(fgrad.eta_histogram_interactive(cyl, Gaussian(1.0)), 7)
    f = fgrad.two_types_figure(cyl, 0.02, 0.2)
    assert isinstance(f, go.Figure) and len(f.data) == 2 and f.layout.title.text
    f = fgrad.gradient_cloud_figure(grad.gradient_cloud(cyl, 0.1, n=100))
    assert f.layout.xaxis.title.text and f.layout.yaxis.title.text and len(f.data) == 2


def test_chapter4_bad_inputs(cyl):
    with pytest.raises(ParameterError, match=r"eta_g=-0.01 is out of range"):
        grad.predicted_rms_from_eta(cyl, Gaussian(1.0), -0.01)
    with pytest.raises(ParameterError, match=r"delta='uniform'"):
        grad.gradient_cloud(cyl, 0.1, delta="uniform")
    with pytest.raises(ParameterError, match=r"ns=1 is out of range"):
        grad.counterexample_batch_scaling(0.1, [1, 10])
    with pytest.raises(ParameterError, match=r"t=0.0 is out of range"):
        grad.gradient_cloud(cyl, 0.0)
    with pytest.raises(ParameterError, match=r"d=0 is out of range"):
        grad.radial_shape_constant(Gaussian(1.0), 0)


# --- chapter 5: attention ---------------------------------------------------------------

def test_key_centred_rms_kills_query_only_terms(quad):
    st = att.simulated_attention_stack(2, quad.D, seed=0)
    s = quad.sample_at_radius(0.1, 32, 0)
    terms = att.score_decomposition(s.y, quad.mu, quad.tangent_basis, quad.normal_basis,
                                    *st.layer(0))
    r = att.key_centred_rms(terms)
    for name in ("mu_mu", "v_mu", "n_mu"):
        assert r[name] <= 1e-12 * r["mu_v"]
    for name in att.KEY_TERMS:
        assert r[name] > 0


def test_softmax_terms_orders(quad):
    st = att.simulated_attention_stack(1, quad.D, seed=0)
    ts = np.geomspace(0.02, 0.2, 5)
    rows = [att.softmax_terms(quad, st, t, 0)["rms"] for t in ts]
    for name in att.KEY_TERMS:
        fit = loglog_slope(ts, np.array([r[name] for r in rows]))
        assert abs(fit.slope - att.ORDERS[name]) < 0.06, (name, str(fit))
    d = att.softmax_terms(quad, st, 0.05, 0)
    assert d["tv_normal"] < d["tv_tangent"]


def test_chapter5_interactive_and_figures(quad):
    st = att.simulated_attention_stack(6, quad.D, seed=0)
    fig = _static_ok(fatt.softmax_terms_interactive(quad, st), 7 * 6)
    assert len(fig["data"]) == 2                                 # two bar groups
    df = att.removal_scaling(quad, [0.05, 0.1], *st.layer(0), n_tokens=16)
    f = fatt.removal_figure(df)
    assert isinstance(f, go.Figure) and len(f.data) == 2 and f.layout.title.text
    sens = att.sensitivity_over_heads(quad, st, 0.1, n_tokens=16)
    assert list(sens.columns) == ["layer", "tangent", "normal"] and len(sens) == 6


def test_over_heads_match_the_per_head_loops(quad):
    st = att.simulated_attention_stack(2, quad.D, seed=3)
    ts = [0.02, 0.05, 0.1]
    slopes = att.term_slopes_over_heads(quad, st, ts, n_tokens=16)
    for layer in range(2):
        fits = att.fit_term_slopes(att.score_term_scaling(quad, ts, *st.layer(layer),
                                                          n_tokens=16, rng=layer))
        got = slopes[slopes["layer"] == layer].set_index("term")
        assert list(got.index) == list(fits) and "mu_mu" not in got.index
        for term, fit in fits.items():
            assert got.loc[term, "slope"] == fit.slope and got.loc[term, "order"] == att.ORDERS[term]
            assert got.loc[term, "ci_low"] == fit.ci_low and got.loc[term, "ci_high"] == fit.ci_high
    removal = att.removal_over_heads(quad, st, ts, n_tokens=8)
    assert list(removal.columns) == ["t", "removed", "change", "layer"]
    for layer in range(2):
        one = att.removal_scaling(quad, ts, *st.layer(layer), n_tokens=8, rng=layer)
        assert removal[removal["layer"] == layer]["change"].tolist() == one["change"].tolist()


# --- chapter 6: residual ----------------------------------------------------------------

def test_run_feedback_loop_matches_feedback_loop():
    a = res.feedback_loop(steps=120, log_every=20, seed=1)
    run = res.run_feedback_loop(steps=120, log_every=20, seed=1, snapshot_steps=(0, 60, 120))
    assert run.history[a.columns].equals(a)                     # bit for bit
    assert sorted(run.snapshots) == [(loop, s) for loop in ("closed", "cut") for s in (0, 60, 120)]
    np.testing.assert_array_equal(run.snapshots["closed", 0], run.snapshots["cut", 0])
    M = res.default_loop_manifold()
    last = run.history.set_index(["loop", "step"]).loc[("closed", 120), "alignment"]
    assert res.tangent_alignment(run.snapshots["closed", 120], M.tangent_basis,
                                 M.normal_basis) == pytest.approx(last, rel=1e-12)


def test_fit_columns_measure_the_target_halves():
    h = res.run_feedback_loop(steps=1500, log_every=100).history.set_index(["loop", "step"])
    assert abs(h.loc[("closed", 0), "fit_tangent"]) < 0.01      # untrained: nothing fitted
    assert h.loc[("closed", 1500), "fit_tangent"] > 0.9         # the tangent half is learned
    assert abs(h.loc[("cut", 1500), "fit_normal"]) < 0.05


def test_depth_cloud_and_interactive(quad):
    c = res.depth_cloud(quad, 0.1, 24, n=32)
    np.testing.assert_allclose(c["normal"], c["normal0"], rtol=1e-12)
    assert c["normal_share"][-1] < c["normal_share"][0] / 10   # random blocks: not every layer
    iso = res.depth_cloud(quad, 0.1, 24, iso=0.05, n=32)
    assert iso["normal_share"][-1] > c["normal_share"][-1]
    fig = _static_ok(fres.depth_interactive(quad), 7 * 4 * 2)
    assert len(fig["data"]) == 4
    assert isinstance(fres.depth_cloud_figure(c), go.Figure)


def test_alignment_at_loss_and_loop_report():
    snaps = (0, 20, 100, 200)
    runs = {s: res.run_feedback_loop(steps=200, log_every=20, init_scale=s, snapshot_steps=snaps)
            for s in (0.1, 1.0)}
    h = runs[0.1].history
    at = res.alignment_at_loss(h, [10.0])                       # reached at step 0 by both
    assert list(at["step"]) == [0, 0]
    assert res.alignment_at_loss(h, [1e-9]).empty
    rep = res.loop_report(h, runs[1.0].history, loss_level=10.0, early_step=100,
                          late_steps=(160, 200))
    assert rep["ratio_early"] == pytest.approx(rep["closed_100"] / rep["cut_100"])
    assert all(isinstance(v, float) for v in rep.values())
    with pytest.raises(ParameterError, match=r"step 110 is not logged"):
        res.loop_report(h, runs[1.0].history, early_step=110, late_steps=(160, 200))
    with pytest.raises(ParameterError, match=r"loss_level=1e-09 is not reached"):
        res.loop_report(h, runs[1.0].history, loss_level=1e-9, early_step=100,
                        late_steps=(160, 200))
    fig = _static_ok(fres.loop_interactive(runs), 3 * 2)
    assert len(fig["data"]) == 6
    f = fres.learning_figure(h)
    assert isinstance(f, go.Figure) and len(f.data) == 6


def test_chapter6_bad_inputs(quad):
    with pytest.raises(ParameterError, match=r"snapshot_steps=50 is out of range"):
        res.run_feedback_loop(steps=20, snapshot_steps=(50,))
    with pytest.raises(ParameterError, match=r"layer=30 is out of range"):
        res.depth_cloud(quad, 0.1, 30, n_layers=24)
    run = res.run_feedback_loop(steps=20, log_every=10, snapshot_steps=(0,))
    with pytest.raises(ParameterError, match=r"at least 2"):
        fres.loop_interactive({0.1: run})


def test_depth_report_is_the_chapter_computation(quad):
    r = res.depth_report(quad, 0.1, n=64, n_layers=6, gain=0.1, iso=0.05, draws=3)
    depth = res.residual_profile_from_manifold(quad, 0.1, n=64, n_layers=6, gain=0.1)
    iso = res.residual_profile_from_manifold(quad, 0.1, n=64, n_layers=6, gain=0.1, iso=0.05)
    s = quad.sample_at_radius(0.1, 64, np.random.default_rng(0))
    rates = [np.log(p["tangent_norm"].iloc[-1] / p["tangent_norm"].iloc[0]) / 6
             for p in (res.residual_depth_profile(s.y - quad.mu, quad.tangent_basis,
                                                  quad.normal_basis, 6, gain=0.1, seed=k)
                       for k in range(3))]
    assert r["share0"] == depth["normal_share"].iloc[0]
    assert r["shareL"] == depth["normal_share"].iloc[-1]
    assert r["shareL_iso"] == iso["normal_share"].iloc[-1] > r["shareL"]
    assert r["rate"] == float(np.exp(np.mean(rates))) and r["log_growth"] == float(np.mean(rates))
    assert r["growth"] == depth["tangent_norm"].iloc[-1] / depth["tangent_norm"].iloc[0]
    assert r["normal_change"] < 1e-12            # the identity path copies the normal part
    assert r["share0"] == pytest.approx(r["share0_predicted"], rel=0.1)
    with pytest.raises(ParameterError, match=r"draws=0 is out of range"):
        res.depth_report(quad, 0.1, draws=0)


def test_unit_energies_average_to_the_alignment(quad):
    W = np.random.default_rng(0).standard_normal((5, quad.D))
    et, en = res.unit_energies(W, quad.tangent_basis, quad.normal_basis)
    assert et.shape == en.shape == (5,)
    assert np.sum(et) / np.sum(en) == pytest.approx(
        res.tangent_alignment(W, quad.tangent_basis, quad.normal_basis))
    with pytest.raises(ParameterError, match=r"W has shape"):
        res.unit_energies(W[:, :3], quad.tangent_basis, quad.normal_basis)


# --- shared validation helpers (tanbias._checks) ------------------------------------------

def test_shared_checks(quad):
    import torch

    from tanbias._checks import (check_bases, check_radii, check_radius, check_rows,
                                 max_radius, to_numpy)

    x = torch.ones(2, 3, dtype=torch.float64)
    assert isinstance(to_numpy(x), np.ndarray) and check_rows("x", x, D=3).shape == (2, 3)
    with pytest.raises(ParameterError, match=r"x_c has 0 rows"):
        check_rows("x_c", np.zeros((0, 3)))
    with pytest.raises(ParameterError, match=r"normal_basis has shape \(4, 1\)"):
        check_bases(np.eye(3)[:, :1], np.eye(4)[:, :1])
    with pytest.raises(ParameterError, match=r"tangent_basis has 0 and normal_basis 3 columns"):
        check_bases(np.eye(3)[:, :0], np.eye(3))
    assert max_radius(quad) == 0.5 and max_radius(None) is None
    assert check_radius(0.5, quad) == 0.5
    with pytest.raises(ParameterError, match=r"t=0.6 is out of range.*inside the manifold's patch"):
        check_radius(0.6, quad)
    with pytest.raises(ParameterError, match=r"ts is empty"):
        check_radii([], quad)


def test_maths_modules_do_not_load_plotly_or_pandas():
    import subprocess
    import sys

    code = ("import sys, tanbias.gradients, tanbias.attention, tanbias.residual; "
            "print(sorted(m for m in ('plotly', 'pandas', 'tanbias.interactive', "
            "'tanbias.figures') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the chapters' exercise solutions pass their checkers ----------------------------------

def test_chapter_solutions_pass_checkers(capsys):
    def gradient_ratio_rms(x, mu, delta, tangent_basis, normal_basis):
        x_c = np.asarray(x, dtype=float) - mu
        d_norm = np.linalg.norm(delta, axis=1)
        tangent = d_norm * np.linalg.norm(x_c @ tangent_basis, axis=1)
        normal = d_norm * np.linalg.norm(x_c @ normal_basis, axis=1)
        return float(np.sqrt(np.sum(normal ** 2) / np.sum(tangent ** 2)))

    def loop_gains(df, step):
        out = {}
        for loop in ("closed", "cut"):
            a = df[df["loop"] == loop].set_index("step")["alignment"]
            out[loop] = float(a.loc[step] / a.loc[0])
        return out

    check_exercise_1(gradient_ratio_rms)
    check_exercise_2(lambda t1, t2: 1 if t1 < t2 else 2, lambda t1, t2: t1 / t2)
    check_exercise_3(loop_gains, compounds=True)
    out = capsys.readouterr().out
    assert out.count("passed") == 3
    with pytest.raises(AssertionError, match="does not match the run"):
        check_exercise_3(loop_gains, compounds=False)
