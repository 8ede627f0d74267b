"""What every registered experiment shares (tanbias.lab.analysis.registered): its runs, its pinned
registration, power from realised SDs, Holm's one rule for a missing p, the t interval, the
learning check and the matched-progress reading."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.analysis import registered as rg
from tanbias.lab.experiments import ALIAS, CAUSAL, DOSE, EXPERIMENTS, RIVALS, SWEEP


# --------------------------------------------------------------------------- the runs
def test_the_status_of_every_cell_of_every_design_derives_from_its_design():
    for design in EXPERIMENTS.values():
        st = rg.run_status(design)
        assert list(st.columns) == ["run", "kind", design.factor, "seed", "shared", "committed", "minutes"]
        assert st["run"].tolist() == [run for *_, run in design.cells()]
        assert st["shared"].sum() == len(design.cells()) - len(design.names())
        assert st.loc[st["committed"], "minutes"].gt(0).all() and st.loc[~st["committed"], "minutes"].isna().all()
    alias = rg.run_status(ALIAS)
    assert alias.loc[alias["shared"], "run"].str.startswith("causal-decoder-control-s").any()


def test_load_reads_the_committed_runs_of_a_design_in_queue_order(tmp_path):
    names = DOSE.names()[:2]
    loaded = rg.load(DOSE, names=names)
    assert list(loaded) == names and all(r.config.name == n for n, r in loaded.items())
    assert rg.load(DOSE, runs_dir=tmp_path) == {}                      # nothing committed there


def test_complete_seeds_need_every_level_of_the_architecture_and_no_divergence():
    rows = [{"kind": k, "arm": a, "seed": s, "diverged": False} for k in ("encoder", "decoder")
            for s in range(3) for a in CAUSAL.levels[k]]
    t = pd.DataFrame(rows)
    t = t[~((t["kind"] == "decoder") & (t["seed"] == 2) & (t["arm"] == "tied"))].copy()   # the decoder's own arm
    t.loc[(t["kind"] == "encoder") & (t["seed"] == 1) & (t["arm"] == "random"), "diverged"] = True
    assert rg.complete_seeds(CAUSAL, t, "decoder") == [0, 1]
    assert rg.complete_seeds(CAUSAL, t, "encoder") == [0, 2]
    sweep = pd.DataFrame({"kind": "decoder", "regime": ["natural", "balanced", "natural"], "seed": [0, 0, 1]})
    assert rg.complete_seeds(SWEEP, sweep, "decoder") == [0]           # no ``diverged`` column: none diverged
    # a design whose levels have different seeds: a seed is complete with the levels its grid has
    cells = [c for c in RIVALS.levels["encoder"] if c.endswith(("-control", "-proxy"))]
    six = pd.DataFrame({"kind": "encoder", "cell": cells, "seed": 6})
    assert rg.complete_seeds(RIVALS, six, "encoder") == [6]
    assert rg.complete_seeds(RIVALS, six.assign(seed=3), "encoder") == []      # seed 3 has every cell
    with pytest.raises(ParameterError, match="kind"):
        rg.complete_seeds(CAUSAL, t, "bert")


def test_learning_reads_the_gain_over_unigram_and_tolerates_a_missing_field():
    got = rg.learning({"loss": 5.0, "unigram_loss": 6.25, "accuracy": 0.3, "unigram_accuracy": 0.1})
    assert got == {"eval_loss": 5.0, "unigram_loss": 6.25, "gain": 1.25, "accuracy": 0.3, "unigram_accuracy": 0.1}
    assert np.isnan(rg.learning({"loss": 5.0})["gain"])


# --------------------------------------------------------------------------- the registration
def test_every_registered_design_reads_its_pinned_files():
    for design in EXPERIMENTS.values():
        if design.registration is None:
            with pytest.raises(ParameterError, match="no registration"):
                rg.registration(design)
            continue
        assert "rule" in rg.registration(design)
        if design.posthoc_sha256:
            assert rg.registration(design, posthoc=True)["meta"]["date"]


def test_a_changed_or_missing_registration_is_refused(tmp_path):
    (tmp_path / "dose.toml").write_bytes((rg.REGISTRATION_DIR / "dose.toml").read_bytes() + b"\n")
    with pytest.raises(CorruptFileError, match="sha256"):
        rg.load_registration("dose", DOSE.registration_sha256, directory=tmp_path)
    with pytest.raises(CorruptFileError, match="missing"):
        rg.load_registration("nothing", DOSE.registration_sha256, directory=tmp_path)
    (tmp_path / "bad.toml").write_text("[unclosed")
    with pytest.raises(CorruptFileError, match="not TOML"):
        rg.load_registration("bad", sha256=None, directory=tmp_path)


# --------------------------------------------------------------------------- intervals and Holm
def test_t_interval_matches_scipy():
    x = np.array([0.3, 1.1, 0.7, 0.2])
    m, lo, hi, n = rg.t_interval(x)
    ref = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert n == 4 and np.isclose(lo, ref[0]) and np.isclose(hi, ref[1])
    assert np.isnan(rg.t_interval([2.0])[1]) and rg.t_interval([np.nan, 1.0, 3.0])[3] == 2


@pytest.mark.slow
def test_holm_keeps_a_row_without_p_in_its_family_at_p_one():
    """The one rule: a row whose p cannot be computed stays in its registered family with p = 1,
    so the others are adjusted as in a family of its registered size, not a smaller one."""
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.02, np.nan, 0.04]
    got = rg.holm(p, family=4)
    assert np.isnan(got[2])
    assert np.allclose(got[[0, 1, 3]], multipletests([0.01, 0.02, 1.0, 0.04], method="holm")[1][[0, 1, 3]])
    dropped = multipletests([0.01, 0.02, 0.04], method="holm")[1]
    assert (got[[0, 1, 3]] >= dropped).all() and got[0] > dropped[0]        # never easier than dropping it
    assert np.allclose(rg.holm([0.01, 0.02]), multipletests([0.01, 0.02], method="holm")[1])   # complete: Holm
    assert np.isnan(rg.holm([np.nan, np.nan])).all()
    with pytest.raises(ParameterError, match="family's 6 rows"):
        rg.holm(p, family=6)


# --------------------------------------------------------------------------- power from realised SDs
def _seed_paired_regression_power(b, sd, n, x, reps, rng):
    hits = 0
    df = n * len(x) - n - 1
    for _ in range(reps):
        y = b * x[None, :] + rng.normal(0, 0.3, (n, 1)) + rng.normal(0, sd, (n, len(x)))
        yc = y - y.mean(1, keepdims=True)
        xc = np.broadcast_to(x - x.mean(), y.shape)
        slope = (xc * yc).sum() / (xc ** 2).sum()
        se = np.sqrt(((yc - slope * xc) ** 2).sum() / df / (xc ** 2).sum())
        hits += abs(slope / se) > stats.t.ppf(0.975, df)
    return hits / reps


@pytest.mark.slow
def test_the_detectable_ratio_has_the_stated_power_in_a_simulation():
    x = np.array([0, 1 / 3, 2 / 3, 1])
    ratio = rg.detectable_ratio(0.08, 3, x)
    assert abs(_seed_paired_regression_power(np.log(ratio), 0.08, 3, x, 2000, np.random.default_rng(0)) - 0.8) < 0.03


@pytest.mark.slow
def test_power_at_a_ratio_matches_a_simulation():
    x = np.array([0, 1 / 3, 2 / 3, 1])
    sd, n, ratio = 0.15, 3, 1.25
    want = rg.power_at(ratio, sd, n, x)
    assert abs(_seed_paired_regression_power(np.log(ratio), sd, n, x, 3000, np.random.default_rng(1)) - want) < 0.03
    assert rg.power_at(1 / ratio, sd, n, x) == pytest.approx(want)            # two-sided
    assert rg.power_at(ratio, 2 * sd, n, x) < want < rg.power_at(ratio, sd, 6, x)
    with pytest.raises(ParameterError, match="ratio"):
        rg.power_at(-1.0, sd, n, x)


def test_contrast_power_rises_with_seeds_falls_with_noise_and_with_alpha():
    assert rg.contrast_power(1.25, 0.1, 8, 6, 0.05) > rg.contrast_power(1.25, 0.1, 4, 6, 0.05)
    assert rg.contrast_power(1.25, 0.2, 8, 6, 0.05) < rg.contrast_power(1.25, 0.1, 8, 6, 0.05)
    assert rg.contrast_power(1.25, 0.1, 8, 6, 0.05 / 6) < rg.contrast_power(1.25, 0.1, 8, 6, 0.05)
    assert rg.seeds_needed(0.05, 6, 1.25, 0.8, 0.05 / 6) == 5
    with pytest.raises(ValueError, match="more than 200 seeds"):
        rg.seeds_needed(10.0, 6, 1.01, 0.99, 1e-6)


def test_seed_blocked_sd_is_the_residual_of_the_additive_model():
    g = np.random.default_rng(2)
    y = g.normal(size=(5, 1)) + g.normal(size=(1, 4)) + g.normal(0, 0.1, (5, 4))
    s = rg.seed_blocked_sd(y)
    import statsmodels.formula.api as smf

    long = pd.DataFrame([{"y": y[i, j], "seed": i, "level": j} for i in range(5) for j in range(4)])
    fit = smf.ols("y ~ C(seed) + C(level)", data=long).fit()
    assert s["df"] == fit.df_resid == 12 and s["sd"] == pytest.approx(np.sqrt(fit.mse_resid))


# --------------------------------------------------------------------------- the matched-progress reading
def test_an_interval_reads_against_a_sign_by_the_one_interval_rule():
    assert [rg.relative_word(s, -0.3, -0.1) for s in ("-", "+", -2.0, 0.0)] == ["same", "opposite", "same",
                                                                                 "undecided"]
    assert rg.relative_word("+", -0.1, 0.2) == "indistinguishable"
    assert rg.relative_word("+", np.nan, 0.2) == rg.relative_word("0", 0.1, 0.2) == "undecided"
    assert [rg.progress_word("+", lo, hi) for lo, hi in ((0.1, 0.2), (-0.2, -0.1), (-0.1, 0.1), (np.nan, np.nan))] \
        == ["survives", "reverses", "not told apart from progress", "undecided"]


def test_a_run_is_read_at_a_held_out_loss_by_interpolation_or_at_its_end():
    steps, loss, out = [0, 10, 20, 30], [9.0, 7.0, 6.5, 6.0], [0.0, 1.0, 2.0, 4.0]
    assert rg.value_at_progress(steps, loss, out, 6.75) == pytest.approx(1.5)
    assert rg.value_at_progress(steps, loss, out, 9.5) == 0.0                 # already below at step 0
    assert rg.value_at_progress(steps[::-1], loss[::-1], out[::-1], 6.75) == pytest.approx(1.5)   # any order
    assert rg.value_at_progress(steps, loss, out, 5.0, last=True) == 4.0
    assert rg.value_at_progress(steps, [9.0, 6.0, 7.0, 5.0], out, 6.5) == pytest.approx(5 / 6)   # first crossing
    assert np.isnan(rg.value_at_progress(steps, [9.0, np.nan, 7.0, 5.0], out, 6.5))
    with pytest.raises(ValueError, match="level=5.0.*never reaches"):
        rg.value_at_progress(steps, loss, out, 5.0)


def test_the_design_target_is_defined_once_and_every_design_face_takes_no_argument():
    """One definition of the x1.25 target and its power (registered.py); every design module's face is a
    no-argument ``design_numbers()`` (its inputs computed when not given)."""
    import inspect
    import re
    from pathlib import Path

    from tanbias.lab.analysis import (alias_design, causal_design, dose_design, horizon_design, registered,
                                      rivals_design)

    package = Path(registered.__file__).resolve().parents[3]
    literal = re.compile(r"^\s*[A-Z_]+\s*=\s*(float\(np\.log\()?1\.25\b", re.M)
    defined = [p.relative_to(package) for p in package.rglob("*.py") if literal.search(p.read_text(encoding="utf8"))]
    assert defined == [Path("tanbias/lab/analysis/registered.py")], defined
    assert registered.TARGET_LOG == pytest.approx(np.log(registered.TARGET_RATIO))
    for module in (dose_design, alias_design, causal_design, rivals_design, horizon_design):
        params = inspect.signature(module.design_numbers).parameters.values()
        assert all(p.default is None for p in params), module.__name__
        assert module.__name__ == "tanbias.lab.analysis.dose_design" or module.TARGET_RATIO is registered.TARGET_RATIO
