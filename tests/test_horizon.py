"""The horizon experiment's analysis: planted effects recovered by the registered model, the family
kept whole while runs are missing, the words of the collapse part, and the committed runs read."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tanbias.errors import ParameterError
from tanbias.lab.analysis import horizon, horizon_design, registered
from tanbias.lab.experiments import HORIZON, HORIZON_COLLAPSE


def planted_collapse(seeds=range(4), corruption=-0.5, attention=0.0, noise=0.02, rng=0) -> pd.DataFrame:
    """A collapse part whose ln peak drops by ``corruption`` under random corruption, with seed effects."""
    g = np.random.default_rng(rng)
    rows = []
    for s in seeds:
        for cell in HORIZON_COLLAPSE:
            c, a = cell.split("-")
            y = 0.1 * s + corruption * (c == "random") + attention * (a == "causal") + noise * g.normal()
            rows.append({"run": f"horizon-encoder-{cell}-s{s}", "kind": "encoder", "part": "collapse",
                         "cell": cell, "seed": s, "raw_peak": y, "diverged": False,
                         "collapses": bool(y > -0.3), "peak_level": float(np.exp(y))})
    return pd.DataFrame(rows)


def test_the_registered_model_recovers_planted_main_effects():
    rows = horizon.contrast_rows(planted_collapse(corruption=-0.5, attention=0.0))
    c = rows.set_index("contrast")
    assert c.loc["corruption_peak", "estimate"] == pytest.approx(-0.5, abs=0.05)
    assert c.loc["corruption_peak", "word"] == "negative" and c.loc["corruption_peak", "significant"]
    assert c.loc["attention_peak", "word"] == "indistinguishable"
    assert c.loc["corruption_peak", "df"] == 9                       # 3 (n - 1) with 4 seeds
    assert not c.loc["corruption_peak", "interim"]


@pytest.mark.slow
def test_missing_long_runs_stay_in_the_family_at_p_one():
    rows = horizon.contrast_rows(planted_collapse())
    assert len(rows) == 8                                              # the registered primary family
    long = rows[rows["part"] == "long"]
    assert long["p"].isna().all() and long["interim"].all()
    p = rows.set_index("contrast").loc["corruption_peak", "p"]
    assert rows.set_index("contrast").loc["corruption_peak", "p_holm"] == pytest.approx(
        registered.holm([p, *[np.nan] * 7], family=8)[0])
    assert rows.set_index("contrast").loc["corruption_peak", "p_holm"] == pytest.approx(min(1.0, 8 * p))


def test_a_seed_missing_a_cell_or_diverged_is_not_complete():
    t = planted_collapse()
    t = t[~((t["seed"] == 3) & (t["cell"] == "mask-causal"))]
    t.loc[(t["seed"] == 2) & (t["cell"] == "mask-native"), "diverged"] = True
    assert horizon.complete_seeds(t, "encoder", "collapse") == [0, 1]
    rows = horizon.contrast_rows(t).set_index("contrast")
    assert rows.loc["corruption_peak", "n_seeds"] == 2 and rows.loc["corruption_peak", "interim"]
    with pytest.raises(ParameterError, match="part"):
        horizon.complete_seeds(t, "encoder", "short")


def test_one_seed_gives_no_interval():
    rows = horizon.contrast_rows(planted_collapse(seeds=[0])).set_index("contrast")
    assert np.isnan(rows.loc["corruption_peak", "p"]) and rows.loc["corruption_peak", "n_seeds"] == 1


@pytest.mark.parametrize("collapsing, word", [((True, True), "kept"), ((False, False), "removed"),
                                              ((True, False), "mixed")])
def test_the_collapse_words(collapsing, word):
    t = planted_collapse(seeds=[0, 1])
    for s, c in zip((0, 1), collapsing):
        t.loc[(t["seed"] == s) & (t["cell"] == "mask-native"), "collapses"] = c
    w = horizon.collapse_words(t).set_index("cell")
    assert w.loc["mask-native", "word"] == word
    assert w.loc["mask-native", "runs"] == 2


@pytest.mark.slow
@pytest.mark.committed
def test_no_run_gives_an_empty_analysis_with_every_row():
    a = horizon.analyse_horizon(loaded={}, stand_ins={})
    assert len(a.table) == 0 and len(a.contrasts) == 8 and a.contrasts["p"].isna().all()
    assert (horizon.collapse_words(a.table)["word"] == "–").all()


def test_the_committed_collapse_runs_are_read_on_intact_positions():
    loaded = registered.load(HORIZON, names=[f"horizon-encoder-{c}-s0" for c in HORIZON_COLLAPSE])
    if len(loaded) < len(HORIZON_COLLAPSE):
        pytest.skip("the collapse part's seed 0 is not committed")
    t = horizon.run_table(loaded)
    assert (t["part"] == "collapse").all()
    assert (t["peak_step"] < horizon.EARLY_FRACTION * 320).all() and (t["final_step"] == 319).all()
    assert t["raw_at319"].isna().all()                  # a 320-step run has no step 319 beside its last
    run = loaded["horizon-encoder-mask-native-s0"]
    an = run.anisotropy
    intact = an[(an["positions"] == "intact") & (an["layer"] >= 1)].groupby("step")["mean_cosine"].mean()
    row = t.set_index("run").loc["horizon-encoder-mask-native-s0"]
    assert row["raw_final"] == pytest.approx(np.log(intact.loc[319]))
    assert row["peak_level"] == pytest.approx(intact[intact.index < 96].max())


def test_the_secondary_family_is_the_registered_29_and_reads_the_interaction():
    t = planted_collapse(corruption=-0.4)
    # plant an interaction: random corruption lowers the peak only under native attention
    t.loc[t["cell"] == "random-causal", "raw_peak"] += 0.4
    rows = horizon.family_rows(t, horizon.SECONDARY)
    assert len(rows) == 18 + 10 + 1
    inter = rows.set_index("contrast").loc["interaction_peak"]
    assert inter["estimate"] == pytest.approx(-0.4, abs=0.06) and inter["word"] == "negative"
    assert rows[rows["outcome"] != "raw"]["p"].isna().all()          # columns not in the planted table


def test_the_horizon_word_reads_chapter_13_beside_the_long_runs():
    primary = horizon.contrast_rows(planted_collapse())
    primary.loc[primary["contrast"] == "head_final", ["estimate", "word"]] = [-0.5, "negative"]
    c13 = pd.DataFrame({"contrast": ["head_final", "head_final", "surgery_unigram"], "kind": ["encoder", "decoder", "decoder"],
                        "outcome": "raw", "estimate": [-0.7, -0.8, -0.3],
                        "word": ["negative", "negative", "negative"]})
    h = horizon.horizon_rows(primary, c13).set_index(["contrast", "kind"])
    assert len(h) == 6
    assert h.loc[("head_final", "decoder"), "horizon"] == "holds"
    assert h.loc[("surgery_standard", "decoder"), "horizon"] == "–"          # no word yet at either horizon
    primary.loc[primary["contrast"] == "surgery_unigram", "word"] = "positive"
    assert horizon.horizon_rows(primary, c13).set_index(["contrast", "kind"]).loc[
        ("surgery_unigram", "decoder"), "horizon"] == "reverses"


def test_matched_progress_reads_each_run_at_the_slowest_runs_final_loss():
    # per seed, four runs whose raw reading is a line in their held-out loss; the random cells learn slower
    rows = []
    for s in range(3):
        for cell in HORIZON_COLLAPSE:
            slow = cell.startswith("random")
            loss = np.linspace(9.0, 7.0 if slow else 6.0, 5)
            raw = -0.5 * (9.0 - loss) + 0.01 * s                   # the same curve in every cell
            rows += [{"run": f"horizon-encoder-{cell}-s{s}", "kind": "encoder", "part": "collapse", "cell": cell,
                      "seed": s, "step": st, "raw": r, "heldout_loss": lo} for st, r, lo in zip(range(5), raw, loss)]
    traj = pd.DataFrame(rows)
    table = traj.groupby(["run", "kind", "part", "cell", "seed"], as_index=False).last().assign(diverged=False)
    reg = pd.DataFrame({"contrast": ["corruption_raw_final"], "kind": ["encoder"], "estimate": [0.5],
                        "significant": [True]})
    m = horizon.matched_progress(traj, table, reg).set_index("contrast")
    # at the slow runs' final loss (7) every cell reads the same: the corruption effect vanishes
    assert m.loc["corruption_final", "estimate"] == pytest.approx(0.0, abs=1e-12)
    assert m.loc["corruption_final", "n_seeds"] == 3
    assert m.loc["attention_final", "word"] == "n/a"                  # its registered contrast is not there


def test_the_variance_null_reads_the_standard_control_runs_last_step():
    from types import SimpleNamespace

    def run(values):
        rows = [{"step": st, "layer": layer, "calibrated": v if st == 1279 else 99.0}
                for st in (0, 1279) for layer, v in enumerate(values)]
        return SimpleNamespace(rivals=pd.DataFrame(rows))
    loaded = {f"horizon-decoder-standard-control-s{s}": run([5.0, 2.0 * np.exp(0.1 * s), 2.0 * np.exp(0.1 * s)])
              for s in range(3)}
    loaded["horizon-decoder-standard-proxy-s0"] = run([1.0, 50.0, 50.0])          # another cell: not read
    v = horizon.variance_null_rows(loaded).set_index("kind")
    assert v.loc["decoder", "n_seeds"] == 3                         # layer 0 (the embeddings) left out
    assert v.loc["decoder", "estimate"] == pytest.approx(np.log(2.0) + 0.1)
    assert v.loc["decoder", "word"] == "positive" and v.loc["encoder", "n_seeds"] == 0


def _predictions(readings):
    import pandas as pd
    return pd.DataFrame({"account": "a", "predicted": [p for p, _ in readings], "reading": [r for _, r in readings]})


@pytest.mark.parametrize("readings, word", [
    ([("negative", "met"), ("positive", "met")], "supported"),
    ([("negative", "met"), ("positive", "failed")], "against"),        # a predicted sign fails: against
    ([("negative", "met"), ("no change", "failed")], "mixed"),         # a 'no change' fails beside a met one
    ([("no change", "failed"), ("negative", "undecided")], "against"),
    ([("negative", "met"), ("negative", "undecided")], "not distinguished"),
    ([("negative", "undecided")], "not distinguished"),
])
def test_an_account_is_read_by_all_its_predictions(readings, word):
    assert horizon.account_words(_predictions(readings))["word"].item() == word


@pytest.mark.parametrize("predicted, est, lo, hi, sig, reading", [
    ("negative", -0.3, -0.5, -0.1, True, "met"),
    ("negative", -0.3, -0.5, -0.1, False, "undecided"),     # a primary contrast not significant after Holm
    ("positive", -0.3, -0.5, -0.1, True, "failed"),
    ("no change", 0.01, -0.2, 0.2, False, "met"),           # within a ratio of 1.25 either way
    ("no change", 0.01, -0.3, 0.3, False, "undecided"),     # too wide to say
    ("no change", 0.5, 0.3, 0.7, True, "failed"),
    ("no change", 0.1, 0.05, 0.15, True, "met"),            # a significant but small change still meets it
    ("negative", np.nan, np.nan, np.nan, False, "undecided"),
])
def test_a_prediction_is_met_failed_or_undecided(predicted, est, lo, hi, sig, reading):
    assert horizon.prediction_reading(predicted, est, lo, hi, sig) == reading


@pytest.mark.slow
@pytest.mark.committed
def test_every_registered_prediction_is_read():
    """The accounts of the registration, each with as many readings as it has predictions and architectures."""
    reg = horizon_design.registration()["accounts"]
    assert set(horizon.ACCOUNTS) == {k for k in reg if k != "word"}
    for name, predictions in horizon.ACCOUNTS.items():
        assert len(predictions) == len(reg[name]["predicts"]), name
    empty = horizon.analyse_horizon(loaded={}, stand_ins={})
    assert (empty.predictions["reading"] == "undecided").all()
    assert (empty.accounts["word"] == "not distinguished").all()


@pytest.mark.slow
@pytest.mark.committed
def test_the_unigram_check_reads_a_planted_gap():
    """The check compares the logged step-0 loss with the unigram's cross-entropy: a run whose logged loss is
    moved by 0.1 nats fails it."""
    import copy
    (name,) = [n for n in horizon.STAND_INS if "decoder" in n]
    runs_ = registered.load(HORIZON, names=[name])
    if not runs_:
        pytest.skip(f"{name} is not committed")
    rows = horizon.unigram_check_rows({}, runs_)
    assert rows["passes"].item() and abs(rows["gap"].item()) <= horizon.UNIGRAM_TOLERANCE
    moved = copy.copy(runs_[name])
    pe = moved.probe_evals.copy()
    pe.loc[pe["step"] == 0, "loss"] += 0.1
    moved.probe_evals = pe
    assert not horizon.unigram_check_rows({}, {name: moved})["passes"].item()
