"""The causal test's statistics (tanbias.lab.analysis.causal, causal_report): the registered rules on
tables with planted effects, whose verdicts are known, and the run tables of real smoke runs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tanbias.lab.analysis import causal, causal_report
from tanbias.lab.analysis.registered import complete_seeds
from tanbias.lab.experiments import CAUSAL, causal_arms
from tanbias.lab.probe import probe_steps
from tanbias.book.tables import format_table, too_precise

STEPS = 320


def _table(effects=None, loss=None, seeds=range(5), noise=0.02, rng=0):
    """A run table with ``log_mean_cosine = seed + effect[arm] + noise`` and ``heldout_loss`` likewise."""
    g = np.random.default_rng(rng)
    effects, loss = effects or {}, loss or {}
    rows = []
    for kind in ("encoder", "decoder"):
        for s in seeds:
            base = g.normal(0, 0.3)
            for arm in causal_arms(kind):
                rows.append({"run": f"causal-{kind}-{arm}-s{s}", "kind": kind, "arm": arm, "seed": s, "steps": STEPS,
                             "log_mean_cosine": -1 + base + effects.get(arm, 0.0) + g.normal(0, noise),
                             "heldout_loss": 5 + loss.get(arm, 0.0) + g.normal(0, 0.01), "diverged": False,
                             "share": 0.4 if arm in ("proxy", "uniform") else 0.25 if arm == "random" else np.nan,
                             **{o: g.normal(0, 0.1) for o in causal.OUTCOMES
                                if o not in ("log_mean_cosine", "heldout_loss")}})
    return pd.DataFrame(rows)


def _trajectory(table, gap_end=-0.3, gap_last=-0.3, noise=0.01, rng=0):
    """Trajectories whose proxy-early - control gap is ``gap_end`` at the window's end and ``gap_last``
    at the last step (0 elsewhere in the other arms); every run's held-out loss falls from 9 to 6."""
    g = np.random.default_rng(rng)
    end = causal.window_end(STEPS)
    steps = probe_steps(STEPS, 14)
    rows = []
    for _, r in table.iterrows():
        for i, step in enumerate(steps):
            gap = 0.0
            if r["arm"] == "proxy-early":
                gap = gap_end if step <= end else gap_end + (gap_last - gap_end) * (step - end) / (STEPS - 1 - end)
            rows.append({"run": r["run"], "kind": r["kind"], "arm": r["arm"], "seed": r["seed"], "step": step,
                         "layer": "mean", "log_mean_cosine": -1 + gap + g.normal(0, noise),
                         "heldout_loss": 9.0 - 3.0 * i / (len(steps) - 1)})
    return pd.DataFrame(rows)


def test_a_planted_specific_effect_is_supported_in_both_architectures():
    t = _table({"proxy": -0.3, "random": -0.05, "uniform": -0.05, "proxy-early": -0.25})
    rows = causal.causal_rows(t)
    assert len(rows) == 6 and (rows["p_holm"] >= rows["p"] - 1e-12).all()
    assert {causal.causal_word(rows, k) for k in ("encoder", "decoder")} == {"supported"}
    e = causal.early_share(t, "decoder", "supported")
    assert e["share"] == pytest.approx(0.25 / 0.3, abs=0.15) and e["lo"] < e["share"] < e["hi"]
    assert e["word"] == "supported"


def test_an_interim_reading_keeps_holms_family_at_six():
    """With the encoder's seeds missing, the decoder's three contrasts are adjusted as three of
    six (the absent ones enter with p = 1), not as a family of three."""
    from statsmodels.stats.multitest import multipletests

    t = _table({"proxy": -0.3, "random": -0.05, "uniform": -0.05})
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
    rows = causal.causal_rows(_table(effects))
    assert causal.causal_word(rows, "decoder") == word


def test_a_specificity_contrast_confounded_by_learning_does_not_count():
    t = _table({"proxy": -0.3, "random": -0.05, "uniform": -0.05}, loss={"proxy": 0.5})
    rows = causal.causal_rows(t)
    flagged = rows[rows["learning_differs"]]
    assert set(flagged["contrast"]) == {"proxy - random", "proxy - uniform"}
    assert causal.causal_word(rows, "decoder") == "not specific"


def test_the_contrast_is_the_mean_paired_difference_in_a_balanced_design():
    t = _table({"proxy": -0.2}, noise=0.05)
    c = causal.fit_contrasts(t, "log_mean_cosine", "encoder", [("proxy", "control")]).iloc[0]
    d = t[t["kind"] == "encoder"].pivot_table(index="seed", columns="arm", values="log_mean_cosine")
    assert c["estimate"] == pytest.approx(float((d["proxy"] - d["control"]).mean()))
    assert c["df"] == (5 - 1) * (len(causal_arms("encoder")) - 1) and c["lo"] < c["estimate"] < c["hi"]


def test_incomplete_or_diverged_seeds_are_left_out_and_one_seed_decides_nothing():
    t = _table({"proxy": -0.3})
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
    t = _table({"proxy": -0.4, "proxy-early": -0.4 * share, "random": -0.05, "uniform": -0.05})
    assert causal.early_share(t, "encoder", "supported")["word"] == word
    # no effect to imprint: not assessable, whatever the share
    assert causal.early_share(t, "encoder", "not detected")["word"] == "not assessable"


@pytest.mark.parametrize("gap_last,word", [(-0.6, "grows"), (-0.1, "decays"), (-0.3, "neither detected")])
def test_the_reinforcing_rule_reads_the_gap_after_the_window(gap_last, word):
    t = _table()
    g = causal.reinforcing(_trajectory(t, gap_end=-0.3, gap_last=gap_last), t, "decoder")
    assert g["window_end"] == 75 and g["last_step"] == 319
    assert g["word"] == word
    assert causal.reinforcing(_trajectory(t, gap_end=0.0, gap_last=-0.5), t, "decoder")["word"] == "not assessable"


def test_the_report_quotes_only_architectures_with_two_seeds(tmp_path):
    t = _table({"proxy": -0.3})
    two = t[(t["kind"] == "decoder") | (t["seed"] == 0)]
    traj = _trajectory(two)
    ca = causal.from_tables(two, traj, _status(two))
    assert ca.interim
    n = causal_report.causal_numbers(ca)
    assert n["complete_decoder"] == 5 and n["complete_encoder"] == 1
    assert "decoder_proxy_control" in n and not any(k.startswith("encoder_") for k in n)
    assert n["decoder_proxy_control_lo"] < n["decoder_proxy_control"] < n["decoder_proxy_control_hi"] < 1
    v = causal_report.verdict_table(ca)
    assert set(v.loc[v["architecture"] == "encoder", "verdict"]) <= {"too few seeds", "not assessable"}
    words = causal_report.closing_words(ca)
    assert words["gradient side"] == "incomplete" and words["gradient side, decoder"] == "supported"
    ct = causal_report.contrast_table(ca)
    assert list(ct.columns)[:4] == ["architecture", "contrast", "mean cosine ratio", "ratio's 95 % CI"]
    dec = ct[ct["architecture"] == "decoder"]
    assert all(lo < r < hi < 1 for r, (lo, hi) in zip(dec["mean cosine ratio"], dec["ratio's 95 % CI"]))
    d = causal_report.descriptive_table(ca)
    assert len(d) == 5 * 6 + 1 * 5 and set(d["arm"]) == set(causal_arms("decoder")) - {"control"}
    sec = causal_report.secondary_table(ca)
    assert set(sec["outcome"]) == set(causal.OUTCOMES.values()) - {causal.OUTCOMES[causal.PRIMARY]}
    assert sec.loc[sec["architecture"] == "encoder", "its 95 % CI"].isna().all()   # one seed: no interval
    for table in (ct, causal_report.verdict_table(ca), d, sec):       # numbers, printed by the one formatter
        assert not too_precise(format_table(table).to_html())


def test_an_interim_design_reads_incomplete_on_the_closing_page_whatever_its_words():
    """Two complete seeds give an architecture words, but while a registered seed is missing the
    closing page's gradient-side verdict stays 'incomplete' (every verdict before that is interim)."""
    t = _table({"proxy": -0.3, "random": -0.05, "uniform": -0.05}, seeds=range(3))
    traj = _trajectory(t)
    interim = causal.from_tables(t, traj, _status(t))
    assert interim.interim and interim.words == {"encoder": "supported", "decoder": "supported"}
    assert causal_report.closing_words(interim)["gradient side"] == "incomplete"
    assert causal_report.closing_words(causal.from_tables(t, traj, _status(t), interim=False))["gradient side"] \
        == "supported"


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


def _progress_trajectory(table, slow_arm="proxy", lag=0.2, offset=0.0, seeds_noise=0.02, rng=0):
    """Trajectories along one curve ``ln cos = loss - 7 + offset`` (anisotropy falls as the loss falls):
    every arm's held-out loss goes from 9 down to 6, ``slow_arm``'s only to 6 + ``lag``, and
    ``slow_arm`` sits ``offset`` above the curve at every loss."""
    g = np.random.default_rng(rng)
    steps = probe_steps(STEPS, 14)
    rows = []
    for _, r in table.iterrows():
        end = 6.0 + (lag if r["arm"] == slow_arm else 0.0) + g.normal(0, 0.01)
        shift = (offset if r["arm"] == slow_arm else 0.0) + g.normal(0, seeds_noise)
        for i, step in enumerate(steps):
            loss = 9.0 - (9.0 - end) * i / (len(steps) - 1)
            rows.append({"run": r["run"], "kind": r["kind"], "arm": r["arm"], "seed": r["seed"], "step": step,
                         "layer": "mean", "log_mean_cosine": loss - 7 + shift, "heldout_loss": loss})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("offset,word", [
    (0.0, "not told apart from progress"),     # the slow arm's excess anisotropy is its lag on one curve
    (0.15, "survives"),                        # above the curve as well: the excess stays at matched loss
    (-0.15, "reverses"),
])
def test_a_contrast_that_is_only_slower_learning_is_not_told_apart_at_matched_progress(offset, word):
    """The proxy arm learns less (ends 0.2 nats higher) on the same loss-anisotropy curve: its
    registered contrast is +0.2 (against), and at matched held-out loss it is ``offset``."""
    t = _table(seeds=range(6))
    traj = _progress_trajectory(t, lag=0.2, offset=offset)
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


def _status(t):
    """The status table of planted runs: every run committed, ten minutes each."""
    return pd.DataFrame({"run": t["run"], "kind": t["kind"], "committed": True, "minutes": 10.0})


def _complete_analysis(t, traj):
    """Every registered rule and the matched reading applied to a planted table and its trajectories, as
    :func:`causal.analyse_causal` applies them to committed runs (every seed complete)."""
    return causal.from_tables(t, traj, _status(t), interim=False)


def test_the_report_shows_the_matched_reading_beside_the_registered_one():
    t = _table(seeds=range(4))
    traj = _progress_trajectory(t, lag=0.2, offset=0.0)
    last = traj[traj["step"] == traj["step"].max()].set_index("run")
    t = t.assign(log_mean_cosine=t["run"].map(last["log_mean_cosine"]), heldout_loss=t["run"].map(last["heldout_loss"]))
    ca = _complete_analysis(t, traj)
    n = causal_report.causal_numbers(ca)
    assert n["encoder_matched_lo"] < 1 < n["encoder_matched_hi"] < n["encoder_proxy_control"]
    assert n["encoder_loss_gap"] == pytest.approx(0.2, abs=0.02)
    assert causal_report.progress_words(ca)[("encoder", "proxy - control")] == "not told apart from progress"
    p = causal_report.progress_table(ca)
    assert list(p.columns) == ["architecture", "contrast", "loss gap at end [nats]", "ratio, last step",
                               "ratio, matched loss", "its 95 % CI", "reading", "seeds"]
    assert len(p) == 3 + 4 and not too_precise(format_table(p).to_html())


def test_the_word_checks_read_the_named_words_and_refuse_an_unknown_name():
    t = _table({"proxy": +0.3}, seeds=range(3))
    traj = _progress_trajectory(t)
    ca = _complete_analysis(t, traj)
    w = causal_report.words_of(ca)
    # the registered closing rule: the gradient side is supported only if supported in both architectures
    assert w["causal, encoder"] == "against" and w["gradient side"] == "not supported"
    assert w["every seed complete"] == "yes" and w["learning differs, decoder, proxy - control"] == "no"
    checks = causal_report.word_checks(ca, {"causal, encoder": "against", "causal, decoder": "supported"})
    assert [c.passed for c in checks] == [True, False]
    with pytest.raises(KeyError, match="causal, nowhere"):
        causal_report.word_checks(ca, {"causal, nowhere": "against"})


def test_the_verdict_table_gives_each_interval_its_registered_level_and_shows_isoscore_beside_the_cosine():
    """rule.early and rule.reinforcing read their intervals at 1 - α/2 = 97.5 %, rule.causal and rule.cost
    at 95 %; prediction 1's mean cosine has IsoScore* beside it, read for what it says of anisotropy."""
    t = _table({"proxy": -0.3, "random": -0.05, "uniform": -0.05, "proxy-early": -0.3})
    t.loc[t["arm"] == "proxy", "isoscore"] -= 0.5                 # IsoScore* lower: more anisotropic
    ca = _complete_analysis(t, _trajectory(t))
    v = causal_report.verdict_table(ca)
    level = dict(zip(v["prediction"], v["level"]))
    assert level == {"1. causal": "95 %", "1. beside it (secondary)": "95 %", "2. imprinted early": "97.5 %",
                     "3. self-reinforcing": "97.5 %", "5. cost (measured)": "95 %"}
    iso = v[v["measure"] == "IsoScore*, proxy − control"]
    assert list(iso["architecture"]) == ["encoder", "decoder"] and set(iso["verdict"]) == {"more anisotropic"}
    assert (iso["estimate"] < 0).all()


def test_the_report_reads_the_uniform_arms_cost_and_the_trajectories_ratio():
    """The uniform arm's held-out loss against the control's, IsoScore* beside the cosine, and the largest
    ratio proxy / control over the probe steps, where a planted proxy arm runs above its control mid-way."""
    t = _table({"proxy": -0.3}, loss={"uniform": -0.05}, seeds=range(4))
    traj = _trajectory(t)
    mid = traj["step"] == 75
    traj.loc[mid & (traj["arm"] == "proxy"), "log_mean_cosine"] += 0.4        # x1.49 at step 75
    early = traj["step"] == 3
    traj.loc[early & (traj["arm"] == "proxy"), "log_mean_cosine"] -= 0.2     # x0.82 at step 3
    late = traj["step"] > 75
    traj.loc[late & (traj["arm"] == "proxy"), "log_mean_cosine"] -= 0.3      # below its control after step 75
    n = causal_report.causal_numbers(_complete_analysis(t, traj))
    for kind in ("encoder", "decoder"):
        assert n[f"{kind}_uniform_cost_lo"] < n[f"{kind}_uniform_cost"] < n[f"{kind}_uniform_cost_hi"] < 0
        assert n[f"{kind}_iso_proxy_control_lo"] < n[f"{kind}_iso_proxy_control"] < n[f"{kind}_iso_proxy_control_hi"]
        assert n[f"{kind}_traj_max_step"] == 75 and n[f"{kind}_traj_max"] == pytest.approx(np.exp(0.4), rel=0.05)
        assert n[f"{kind}_traj_max_lo"] < n[f"{kind}_traj_max"] < n[f"{kind}_traj_max_hi"]
        assert n[f"{kind}_traj_min_step"] == 3 and n[f"{kind}_traj_min"] == pytest.approx(np.exp(-0.2), rel=0.05)
        assert n[f"{kind}_above_last"] == 75
    w = causal_report.words_of(_complete_analysis(t, traj))
    assert w["loss, decoder, uniform - control"] == "negative"


def test_the_trajectory_contrast_is_the_seed_paired_difference_at_each_step():
    t = _table(seeds=range(3))
    traj = _trajectory(t)
    traj.loc[traj["arm"] == "random", "log_mean_cosine"] += 0.1
    c = causal.trajectory_contrast(traj, t, "encoder", "random", "control")
    assert list(c["step"]) == sorted(set(traj["step"])) and (c["n_seeds"] == 3).all()
    assert np.allclose(c["estimate"], 0.1, atol=0.03) and (c["lo"] < c["estimate"]).all()
    assert causal.trajectory_contrast(traj.iloc[:0], t, "encoder").empty
