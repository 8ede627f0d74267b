"""The rival accounts' readings added after the data (tanbias.lab.analysis.rivals_posthoc), on planted tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tanbias.lab.analysis import rivals, rivals_posthoc as rp
from test_rivals import planted_table


def _analyse(t):
    c = rivals.contrast_rows(t)
    s = rivals.share_rows(t)
    return c, s, rivals.account_words(c, s)


def _shares(t, q=0.1, mean_share=0.2, top=0.05, enr=2.0, enr_out=1.0):
    rng = np.random.default_rng(5)
    t = t.copy()
    t["centred"] = q * np.exp(t["raw"])
    t["standardised"] = q * np.exp(t["raw"])
    t["mean_share"] = mean_share + 0.01 * rng.normal(size=len(t))
    t["top_share"] = top + 0.001 * rng.normal(size=len(t))
    t["enrichment"] = enr + 0.05 * rng.normal(size=len(t))
    t["enrichment_outside"] = enr_out + 0.05 * rng.normal(size=len(t))
    return t


@pytest.mark.slow
def test_every_registered_prediction_is_read_and_named_in_the_registration():
    reg = rp.registration_predicts()
    for account, key, _, _ in rp.PREDICTIONS:
        assert account in reg
    t = _shares(planted_table())
    c, s, a = _analyse(t)
    p = rp.prediction_rows(t, c, a)
    assert len(p) == 2 * len(rp.PREDICTIONS)
    assert set(p["outcome"]) <= {"met", "failed", "undecided"}


@pytest.mark.slow
def test_a_null_prediction_fails_where_the_contrast_is_significant_and_is_met_only_inside_the_margin():
    # planted: the unigram head lowers the centred reading in the decoder, the encoder's is flat and tight
    t = _shares(planted_table(noise=0.005))
    t.loc[(t.kind == "decoder") & (t.cell == "unigram-control"), "centred"] -= 0.05
    c, s, a = _analyse(t)
    p = rp.prediction_rows(t, c, a).set_index(["kind", "account", "key"])["outcome"]
    assert p[("decoder", "unigram_first", "head_final_centred")] == "failed"
    assert p[("encoder", "unigram_first", "head_final_centred")] == "met"
    # a wide interval around 0 is undecided, not met
    wide = _shares(planted_table(noise=0.3, seeds=range(3)))
    c, s, a = _analyse(wide)
    q = rp.prediction_rows(wide, c, a).set_index(["kind", "account", "key"])["outcome"]
    assert q[("encoder", "tangent_bias", "surgery_interaction")] == "undecided"


@pytest.mark.slow
def test_the_opposite_sign_prediction_fails_when_aliasing_rises_more_under_the_unigram_head():
    eff = {("decoder", "standard-k3", "raw"): 0.3, ("decoder", "unigram-k3", "raw"): 0.6}
    t = _shares(planted_table(eff))
    c, s, a = _analyse(t)
    p = rp.prediction_rows(t, c, a).set_index(["kind", "account", "key"])["outcome"]
    assert p[("decoder", "unigram_first", "alias_interaction")] == "failed"
    eff = {("decoder", "standard-k3", "raw"): 0.6, ("decoder", "unigram-k3", "raw"): 0.3}
    t = _shares(planted_table(eff))
    c, s, a = _analyse(t)
    p = rp.prediction_rows(t, c, a).set_index(["kind", "account", "key"])["outcome"]
    assert p[("decoder", "unigram_first", "alias_interaction")] == "met"


@pytest.mark.slow
def test_share_predictions_read_their_side_of_the_threshold():
    t = _shares(planted_table(), mean_share=0.2, top=0.2, enr_out=0.0)
    c, s, a = _analyse(t)
    p = rp.prediction_rows(t, c, a).set_index(["kind", "account", "key"])["outcome"]
    assert p[("decoder", "common_drift", "mean_share")] == "failed"
    assert p[("decoder", "common_drift", "q_c")] == "met"
    assert p[("decoder", "rogue_dimensions", "top_share")] == "met"
    assert p[("decoder", "output_bottleneck", "enrichment_outside")] == "met"      # near 0
    t = _shares(planted_table(), mean_share=0.8, top=0.01)
    c, s, a = _analyse(t)
    p = rp.prediction_rows(t, c, a).set_index(["kind", "account", "key"])["outcome"]
    assert p[("decoder", "common_drift", "mean_share")] == "met"
    assert p[("decoder", "rogue_dimensions", "top_share")] == "failed"


@pytest.mark.slow
def test_realised_power_detects_its_own_detectable_change_with_80_percent():
    from tanbias.lab.analysis import registered

    t = planted_table(noise=0.1)
    c = rivals.contrast_rows(t)
    power = rp.realised_power(c, planned={"encoder": 0.1, "decoder": 0.1})
    assert len(power) == 4
    for _, r in power.iterrows():
        se = r["sd"] * np.sqrt(2 / r["n_seeds"])
        assert registered.t_test_power(np.log(r["detectable"]), se, r["df"], 0.05 / 4) == pytest.approx(0.8, abs=1e-6)
        assert 0 < r["power_first"] < r["power_alpha"] <= 1
    noisier = rp.realised_power(rivals.contrast_rows(planted_table(noise=0.3)), planned={"encoder": 0.1, "decoder": 0.1})
    assert (noisier["detectable"].to_numpy() > power["detectable"].to_numpy()).all()


def test_both_kinds_turn_the_sign_of_the_shape_readings():
    # planted: the surgery lowers the mean cosine only; aliasing lowers IsoScore* (more anisotropic shape)
    eff = {("decoder", "standard-proxy", "raw"): -0.3, ("decoder", "standard-proxy", "log_mean_share"): -0.3,
           ("decoder", "standard-k3", "isoscore"): -0.3, ("decoder", "standard-k3", "participation"): -0.3}
    t = planted_table(eff, rng=2)       # a seed at which no unplanted contrast is a 5 % false positive
    k = rp.kind_rows(t).set_index(["kind", "verdict", "head"])
    row = k.loc[("decoder", "surgery, proxy - control", "standard")]
    assert row["shared mean"] == "less anisotropic" and row["shape"] == "not detected" and not row["agree"]
    row = k.loc[("decoder", "aliasing, k3 - control", "standard")]
    assert row["shape"] == "more anisotropic" and row["shared mean"] == "not detected"


def test_survival_counts_only_the_corrections_that_apply():
    eff = {("decoder", c, "raw"): -0.3 for c in ("standard-proxy", "unigram-proxy")}
    eff.update({("decoder", c, "type_balanced"): -0.3 for c in ("standard-proxy",)})
    t = _shares(planted_table(eff))
    t["standardised"] = 0.01 + 0.001 * np.random.default_rng(4).normal(size=len(t))    # standardising removes it
    s = rivals.share_rows(t)
    v = rp.survival_rows(t, s).set_index(["verdict", "kind"])
    row = v.loc[(next(k for k in rp.SURVIVAL_VERDICTS if "proxy - control" in k), "decoder")]
    assert row["standard"] == "less anisotropic" and row["unigram head"] == "less anisotropic"
    assert row["type-balanced"] == "less anisotropic" and row["IsoScore*"] == "not detected"
    assert (row["kept"], row["applies"]) == (2, 4)
    enr = v.loc[(rivals.ENRICHMENT_VERDICT, "decoder")]
    assert enr["applies"] == 2 and enr["standard"] == "enriched"


def test_a_wide_null_cannot_exclude_the_uncorrected_effect():
    # planted: the surgery lowers the raw reading by a lot; the centred reading is pure noise around its level
    eff = {("decoder", "standard-proxy", "raw"): -0.3}
    t = _shares(planted_table(eff, noise=0.01))
    rng = np.random.default_rng(3)
    t["centred"] = 0.01 + 0.02 * rng.normal(size=len(t))
    n = rp.null_rows(t)
    row = n[(n["kind"] == "decoder") & (n["correction"] == "centred") & (n["head"] == "standard")
            & n["verdict"].str.contains("proxy - control")].iloc[0]
    assert row["raw"] == pytest.approx(np.expm1(-0.3), abs=0.02)
    assert row["lo"] < row["raw"] < row["hi"] and not row["excludes_raw"]


def test_the_scatter_reads_each_seeds_ratio_of_the_heads():
    eff = {("decoder", "unigram-control", "raw"): np.log(0.5)}
    t = planted_table(eff, noise=0.0)
    n = rp.scatter_numbers(t)
    assert n["short_ratio_lo_decoder"] == pytest.approx(0.5) == n["short_ratio_hi_decoder"]
    assert n["peak_within"] > n["peak_step_max"]


def test_the_committed_rules_file_is_the_one_the_module_reads():
    post = rp.posthoc()
    assert {"predictions", "words", "long_runs", "null_shares", "two_kinds", "power"} <= set(post)
    assert rp.MARGIN_LINEAR == 0.25 and "25 %" in post["predictions"]["margin"]
    assert rp.TOP_SHARE_FACTOR == 2 and "twice" in post["predictions"]["top_share"]
    assert "0.9" in post["words"]["collapse"] and rp.COLLAPSE == 0.9


def _tested_row(t, verdict="proxy - control", kind="decoder"):
    s = rivals.share_rows(t)
    cells = rp.survival_tested(t, s).set_index(["verdict", "kind"])
    return cells.loc[(next(k for k in rp.SURVIVAL_VERDICTS if verdict in k), kind)]


def test_a_null_whose_interval_overlaps_the_standard_effect_cannot_decide_survival():
    """book-posthoc.toml [survival]: a correction that reads 'not detected' beside a detected standard effect is
    'not decided' while a common effect fits both (the old rule counted it lost: a difference in significance)."""
    eff = {("decoder", c, "raw"): -0.3 for c in ("standard-proxy", "unigram-proxy")}
    eff[("decoder", "standard-proxy", "type_balanced")] = -0.3
    t = _shares(planted_table(eff, rng=2))
    rng = np.random.default_rng(7)
    t["isoscore"] = 0.5 + 0.3 * rng.normal(size=len(t))       # IsoScore*: noise so wide it cannot decide
    row = _tested_row(t)
    assert row["unigram head"] == "kept" and row["type-balanced"] == "kept"
    assert row["IsoScore*"] == "not decided" and row["standardised"] == "no test"
    old = rp.survival_rows(t, rivals.share_rows(t)).set_index(["verdict", "kind"])
    assert old.loc[(row.name[0], "decoder"), "IsoScore*"] == "not detected"      # what the earlier rule lost


def test_a_correction_that_removes_the_effect_with_a_narrow_interval_loses_it():
    eff = {("decoder", c, "raw"): -0.3 for c in ("standard-proxy", "unigram-proxy")}
    t = _shares(planted_table(eff, noise=0.01, rng=2))
    t["type_balanced"] = 0.3 + 0.001 * np.random.default_rng(8).normal(size=len(t))    # no effect, tightly
    row = _tested_row(t)
    assert row["type-balanced"] == "lost" and row["unigram head"] == "kept"
    cells = rp.survival_tested(t, rivals.share_rows(t))
    assert rp.survival_tested_word(cells, ("surgery lowers it: proxy - control",)) == "partly survives"


def test_the_unigram_head_loses_a_verdict_only_by_its_registered_interaction():
    # the surgery's effect vanishes under the unigram head; whether the interaction decides it depends on the noise
    eff = {("decoder", "standard-proxy", "raw"): -0.3}
    decided = _tested_row(_shares(planted_table(eff, noise=0.01, rng=2)))
    assert decided["unigram head"] == "lost"
    noisy = _tested_row(_shares(planted_table(eff, noise=0.25, rng=2)))
    assert noisy["unigram head"] in ("kept", "not decided")


def test_accounts_are_also_read_without_the_shares_small_by_construction():
    assert set(rp.BY_CONSTRUCTION) == {"q_c", "q_s"}
    p = pd.DataFrame([{"account": "rogue_dimensions", "kind": "decoder", "key": "q_s", "outcome": "met"},
                      {"account": "rogue_dimensions", "kind": "decoder", "key": "top_share", "outcome": "undecided"}])
    acc = pd.DataFrame([{"account": "rogue_dimensions", "kind": "decoder", "word": "supported"}])
    row = rp.account_summary(p, acc).iloc[0]
    assert row["all_predictions"] == "not distinguished" and row["no_test"] == 1 and row["tested"] == "not distinguished"
    p.loc[1, "outcome"] = "met"
    row = rp.account_summary(p, acc).iloc[0]
    assert row["all_predictions"] == "supported" == row["tested"]
