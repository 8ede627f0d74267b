"""The causal test's statistics (tanbias.lab.analysis.causal): the registered rules on tables with
planted effects, whose verdicts are known (tests/plantedtables.py), and the run tables of real smoke
runs. (The report on planted tables: test_causal_report.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.lab.analysis import causal
from tanbias.lab.analysis.registered import complete_seeds
from tanbias.lab.experiments import CAUSAL, causal_arms
from tanbias.lab.probe import probe_steps
from plantedtables import causal_table, causal_trajectory, progress_trajectory


@pytest.mark.slow
def test_a_planted_specific_effect_is_supported_in_both_architectures():
    t = causal_table({"proxy": -0.3, "random": -0.05, "uniform": -0.05, "proxy-early": -0.25})
    rows = causal.causal_rows(t)
    assert len(rows) == 6 and (rows["p_holm"] >= rows["p"] - 1e-12).all()
    assert {causal.causal_word(rows, k) for k in ("encoder", "decoder")} == {"supported"}
    e = causal.early_share(t, "decoder", "supported")
    assert e["share"] == pytest.approx(0.25 / 0.3, abs=0.15) and e["lo"] < e["share"] < e["hi"]
    assert e["word"] == "supported"


@pytest.mark.slow
def test_an_interim_reading_keeps_holms_family_at_six():
    """With the encoder's seeds missing, the decoder's three contrasts are adjusted as three of
    six (the absent ones enter with p = 1), not as a family of three."""
    from statsmodels.stats.multitest import multipletests

    t = causal_table({"proxy": -0.3, "random": -0.05, "uniform": -0.05})
    t = t[t["kind"] == "decoder"]                       # the encoder has no complete seed yet
    rows = causal.causal_rows(t)
    dec = rows[rows["kind"] == "decoder"]
    assert rows.loc[rows["kind"] == "encoder", "p_holm"].isna().all()
    assert np.allclose(dec["p_holm"], multipletests([*dec["p"], 1, 1, 1], method="holm")[1][:3])
    three = multipletests(dec["p"], method="holm")[1]
    assert (dec["p_holm"].to_numpy() >= three - 1e-15).all() and (dec["p_holm"].to_numpy() > three).any()


@pytest.mark.parametrize("effects,word", [
    ({"proxy": -0.3, "uniform": -0.3}, "not specific"),     # no more than an undirected removal
    ({}, "not detected"),
    ({"proxy": +0.3}, "against"),
])
def test_each_word_of_the_causal_rule(effects, word):
    rows = causal.causal_rows(causal_table(effects))
    assert causal.causal_word(rows, "decoder") == word


def test_a_specificity_contrast_confounded_by_learning_does_not_count():
    t = causal_table({"proxy": -0.3, "random": -0.05, "uniform": -0.05}, loss={"proxy": 0.5})
    rows = causal.causal_rows(t)
    flagged = rows[rows["learning_differs"]]
    assert set(flagged["contrast"]) == {"proxy - random", "proxy - uniform"}
    assert causal.causal_word(rows, "decoder") == "not specific"


def test_the_contrast_is_the_mean_paired_difference_in_a_balanced_design():
    t = causal_table({"proxy": -0.2}, noise=0.05)
    c = causal.fit_contrasts(t, "log_mean_cosine", "encoder", [("proxy", "control")]).iloc[0]
    d = t[t["kind"] == "encoder"].pivot_table(index="seed", columns="arm", values="log_mean_cosine")
    assert c["estimate"] == pytest.approx(float((d["proxy"] - d["control"]).mean()))
    assert c["df"] == (5 - 1) * (len(causal_arms("encoder")) - 1) and c["lo"] < c["estimate"] < c["hi"]


def test_incomplete_or_diverged_seeds_are_left_out_and_one_seed_decides_nothing():
    t = causal_table({"proxy": -0.3})
    t = t[~((t["kind"] == "decoder") & (t["seed"] == 4) & (t["arm"] == "tied"))].copy()
    t.loc[(t["kind"] == "encoder") & (t["seed"] == 3) & (t["arm"] == "random"), "diverged"] = True
    assert complete_seeds(CAUSAL, t, "decoder") == [0, 1, 2, 3]
    assert complete_seeds(CAUSAL, t, "encoder") == [0, 1, 2, 4]
    one = t[t["seed"] == 0]
    rows = causal.causal_rows(one)
    assert rows["p"].isna().all() and causal.causal_word(rows, "decoder") == "too few seeds"
    assert causal.early_share(one, "decoder", "too few seeds")["word"] == "not assessable"


@pytest.mark.parametrize("share,word", [(0.9, "supported"), (0.1, "against")])
def test_the_early_share_rule(share, word):
    t = causal_table({"proxy": -0.4, "proxy-early": -0.4 * share, "random": -0.05, "uniform": -0.05})
    assert causal.early_share(t, "encoder", "supported")["word"] == word
    # no effect to imprint: not assessable, whatever the share
    assert causal.early_share(t, "encoder", "not detected")["word"] == "not assessable"


@pytest.mark.parametrize("gap_last,word", [(-0.6, "grows"), (-0.1, "decays"), (-0.3, "neither detected")])
def test_the_reinforcing_rule_reads_the_gap_after_the_window(gap_last, word):
    t = causal_table()
    g = causal.reinforcing(causal_trajectory(t, gap_end=-0.3, gap_last=gap_last), t, "decoder")
    assert g["window_end"] == 75 and g["last_step"] == 319
    assert g["word"] == word
    assert causal.reinforcing(causal_trajectory(t, gap_end=0.0, gap_last=-0.5), t, "decoder")["word"] == "not assessable"


@pytest.mark.slow
def test_the_run_tables_of_real_smoke_runs(tmp_path):
    """Two arms of one seed, trained and analysed: the outcomes are finite, the surgery's shares are
    logged for the surgical arm only, and one seed decides nothing."""
    from tanbias.lab.experiments import causal_config
    from tanbias.lab.pipeline import train_and_analyse
    from tanbias.lab.runs import load_run

    loaded = {}
    for arm in ("control", "proxy"):
        cfg = causal_config("decoder", arm, 0, steps=8, size="smoke", languages=["en", "de"], eval_batches=1,
                            probe={"rank": 4, "local_rank": 2, "min_count": 4})
        train_and_analyse(cfg, out_dir=tmp_path / cfg.name, progress=False)
        loaded[cfg.name] = load_run(tmp_path / cfg.name)
    t = causal.run_table(loaded)
    assert np.isfinite(t[["log_mean_cosine", "log_participation", "isoscore", "heldout_loss", "gain"]]).all().all()
    assert np.isnan(t.loc[t["arm"] == "control", "share"]).all()
    assert (t.loc[t["arm"] == "proxy", "share"] > 0.25).all()     # above r / D = 8 / 32: the inputs' top directions
    traj = causal.trajectory_table(loaded)
    assert set(traj["layer"]) == {1, 2, "mean"} and set(traj["step"]) == set(probe_steps(8, 8))
    assert traj["heldout_loss"].notna().all()            # the held-out loss of every probe step, for progress
    last = traj[traj["step"] == traj["step"].max()].groupby("run")["heldout_loss"].first()
    assert (last < traj[traj["step"] == 0].groupby("run")["heldout_loss"].first()).all()
    assert complete_seeds(CAUSAL, t, "decoder") == []
    with pytest.raises(ValueError, match="make causal"):
        causal.run_table({})


@pytest.mark.parametrize("offset,word", [
    (0.0, "not told apart from progress"),     # the slow arm's excess anisotropy is its lag on one curve
    (0.15, "survives"),                        # above the curve as well: the excess stays at matched loss
    (-0.15, "reverses"),
])
@pytest.mark.slow
def test_a_contrast_that_is_only_slower_learning_is_not_told_apart_at_matched_progress(offset, word):
    """The proxy arm learns less (ends 0.2 nats higher) on the same loss-anisotropy curve: its
    registered contrast is +0.2 (against), and at matched held-out loss it is ``offset``."""
    t = causal_table(seeds=range(6))
    traj = progress_trajectory(t, lag=0.2, offset=offset)
    last = traj[traj["step"] == traj["step"].max()].set_index("run")
    t = t.assign(log_mean_cosine=t["run"].map(last["log_mean_cosine"]), heldout_loss=t["run"].map(last["heldout_loss"]))
    rows = causal.causal_rows(t)
    assert causal.causal_word(rows, "encoder") == "against"          # registered: 0.2 + offset > 0
    m = causal.matched_progress(traj, t, rows).set_index(["kind", "contrast"])
    r = m.loc[("encoder", "proxy - control")]
    assert r["lo"] < offset < r["hi"] and r["n_seeds"] == 6 and r["loss_gap"] == pytest.approx(0.2, abs=0.02)
    assert r["word"] == word and r["registered"] == pytest.approx(0.2 + offset, abs=0.03)
    assert ("decoder", "tied - control") in m.index and ("encoder", "tied - control") not in m.index
    assert m.loc[("decoder", "tied - control"), "word"] == "n/a"        # a rival: no registered verdict


def test_the_trajectory_contrast_is_the_seed_paired_difference_at_each_step():
    t = causal_table(seeds=range(3))
    traj = causal_trajectory(t)
    traj.loc[traj["arm"] == "random", "log_mean_cosine"] += 0.1
    c = causal.trajectory_contrast(traj, t, "encoder", "random", "control")
    assert list(c["step"]) == sorted(set(traj["step"])) and (c["n_seeds"] == 3).all()
    assert np.allclose(c["estimate"], 0.1, atol=0.03) and (c["lo"] < c["estimate"]).all()
    assert causal.trajectory_contrast(traj.iloc[:0], t, "encoder").empty
