"""The numbers, tables and words chapter 12 and the closing page quote (tanbias.lab.analysis.causal_report),
on analyses of planted tables (tests/plantedtables.py) whose words are known. (That the chapters
quote exactly these numbers: test_reports.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.book.tables import format_table, too_precise
from tanbias.lab.analysis import causal, causal_report
from tanbias.lab.experiments import causal_arms
from tanbias.stats import check_words
from plantedtables import causal_status, causal_table, causal_trajectory, complete_causal, progress_trajectory


@pytest.mark.slow
def test_the_report_quotes_only_architectures_with_two_seeds(tmp_path):
    t = causal_table({"proxy": -0.3})
    two = t[(t["kind"] == "decoder") | (t["seed"] == 0)]
    traj = causal_trajectory(two)
    ca = causal.from_tables(two, traj, causal_status(two))
    assert ca.interim
    n = causal_report.numbers(ca)
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


@pytest.mark.slow
def test_an_interim_design_reads_incomplete_on_the_closing_page_whatever_its_words():
    """Two complete seeds give an architecture words, but while a registered seed is missing the
    closing page's gradient-side verdict stays 'incomplete' (every verdict before that is interim)."""
    t = causal_table({"proxy": -0.3, "random": -0.05, "uniform": -0.05}, seeds=range(3))
    traj = causal_trajectory(t)
    interim = causal.from_tables(t, traj, causal_status(t))
    assert interim.interim and interim.words == {"encoder": "supported", "decoder": "supported"}
    assert causal_report.closing_words(interim)["gradient side"] == "incomplete"
    assert causal_report.closing_words(causal.from_tables(t, traj, causal_status(t), interim=False))["gradient side"] \
        == "supported"


@pytest.mark.slow
def test_the_report_shows_the_matched_reading_beside_the_registered_one():
    t = causal_table(seeds=range(4))
    traj = progress_trajectory(t, lag=0.2, offset=0.0)
    last = traj[traj["step"] == traj["step"].max()].set_index("run")
    t = t.assign(log_mean_cosine=t["run"].map(last["log_mean_cosine"]), heldout_loss=t["run"].map(last["heldout_loss"]))
    ca = complete_causal(t, traj)
    n = causal_report.numbers(ca)
    assert n["encoder_matched_lo"] < 1 < n["encoder_matched_hi"] < n["encoder_proxy_control"]
    assert n["encoder_loss_gap"] == pytest.approx(0.2, abs=0.02)
    assert causal_report.progress_words(ca)[("encoder", "proxy - control")] == "not told apart from progress"
    p = causal_report.progress_table(ca)
    assert list(p.columns) == ["architecture", "contrast", "loss gap at end [nats]", "ratio, last step",
                               "ratio, matched loss", "lo", "hi", "reading", "seeds"]
    assert (p["lo"] <= p["ratio, matched loss"]).all() and (p["ratio, matched loss"] <= p["hi"]).all()
    assert len(p) == 3 + 4 and not too_precise(format_table(p, intervals={"its 95 % CI": ("lo", "hi")}).to_html())


@pytest.mark.slow
def test_the_word_checks_read_the_named_words_and_refuse_an_unknown_name():
    t = causal_table({"proxy": +0.3}, seeds=range(3))
    traj = progress_trajectory(t)
    ca = complete_causal(t, traj)
    w = causal_report.words(ca)
    # the registered closing rule: the gradient side is supported only if supported in both architectures
    assert w["causal, encoder"] == "against" and w["gradient side"] == "not supported"
    assert w["every seed complete"] == "yes" and w["learning differs, decoder, proxy - control"] == "no"
    checks = check_words(w, {"causal, encoder": "against", "causal, decoder": "supported"})
    assert [c.passed for c in checks] == [True, False]
    with pytest.raises(KeyError, match="causal, nowhere"):
        check_words(w, {"causal, nowhere": "against"})


@pytest.mark.slow
def test_the_verdict_table_gives_each_interval_its_registered_level_and_shows_isoscore_beside_the_cosine():
    """rule.early and rule.reinforcing read their intervals at 1 - α/2 = 97.5 %, rule.causal and rule.cost
    at 95 %; prediction 1's mean cosine has IsoScore* beside it, read for what it says of anisotropy."""
    t = causal_table({"proxy": -0.3, "random": -0.05, "uniform": -0.05, "proxy-early": -0.3})
    t.loc[t["arm"] == "proxy", "isoscore"] -= 0.5                 # IsoScore* lower: more anisotropic
    ca = complete_causal(t, causal_trajectory(t))
    v = causal_report.verdict_table(ca)
    level = dict(zip(v["prediction"], v["level"]))
    assert level == {"1. causal": "95 %", "1. beside it (secondary)": "95 %", "2. imprinted early": "97.5 %",
                     "3. self-reinforcing": "97.5 %", "5. cost (measured)": "95 %"}
    iso = v[v["measure"] == "IsoScore*, proxy − control"]
    assert list(iso["architecture"]) == ["encoder", "decoder"] and set(iso["verdict"]) == {"more anisotropic"}
    assert (iso["estimate"] < 0).all()


@pytest.mark.slow
def test_the_report_reads_the_uniform_arms_cost_and_the_trajectories_ratio():
    """The uniform arm's held-out loss against the control's, IsoScore* beside the cosine, and the largest
    ratio proxy / control over the probe steps, where a planted proxy arm runs above its control mid-way."""
    t = causal_table({"proxy": -0.3}, loss={"uniform": -0.05}, seeds=range(4))
    traj = causal_trajectory(t)
    mid = traj["step"] == 75
    traj.loc[mid & (traj["arm"] == "proxy"), "log_mean_cosine"] += 0.4        # x1.49 at step 75
    early = traj["step"] == 3
    traj.loc[early & (traj["arm"] == "proxy"), "log_mean_cosine"] -= 0.2     # x0.82 at step 3
    late = traj["step"] > 75
    traj.loc[late & (traj["arm"] == "proxy"), "log_mean_cosine"] -= 0.3      # below its control after step 75
    n = causal_report.numbers(complete_causal(t, traj))
    for kind in ("encoder", "decoder"):
        assert n[f"{kind}_uniform_cost_lo"] < n[f"{kind}_uniform_cost"] < n[f"{kind}_uniform_cost_hi"] < 0
        assert n[f"{kind}_iso_proxy_control_lo"] < n[f"{kind}_iso_proxy_control"] < n[f"{kind}_iso_proxy_control_hi"]
        assert n[f"{kind}_traj_max_step"] == 75 and n[f"{kind}_traj_max"] == pytest.approx(np.exp(0.4), rel=0.05)
        assert n[f"{kind}_traj_max_lo"] < n[f"{kind}_traj_max"] < n[f"{kind}_traj_max_hi"]
        assert n[f"{kind}_traj_min_step"] == 3 and n[f"{kind}_traj_min"] == pytest.approx(np.exp(-0.2), rel=0.05)
        assert n[f"{kind}_above_last"] == 75
    w = causal_report.words(complete_causal(t, traj))
    assert w["loss, decoder, uniform - control"] == "negative"
