"""The numbers, tables and words chapter 12 and the closing page quote (tanbias.lab.analysis.causal_report),
on analyses of planted tables (tests/plantedtables.py) whose words are known. (That the chapters
quote exactly these numbers: test_reports.py.)"""
from __future__ import annotations

import pytest

from tanbias.book.tables import format_table, too_precise
from tanbias.lab.analysis import causal, causal_report
from tanbias.lab.experiments import causal_arms
from plantedtables import causal_status, causal_table, causal_trajectory, complete_causal, progress_trajectory


def test_the_report_quotes_only_architectures_with_two_seeds(tmp_path):
    t = causal_table({"proxy": -0.3})
    two = t[(t["kind"] == "decoder") | (t["seed"] == 0)]
    traj = causal_trajectory(two)
    ca = causal.from_tables(two, traj, causal_status(two))
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
    t = causal_table({"proxy": -0.3, "random": -0.05, "uniform": -0.05}, seeds=range(3))
    traj = causal_trajectory(t)
    interim = causal.from_tables(t, traj, causal_status(t))
    assert interim.interim and interim.words == {"encoder": "supported", "decoder": "supported"}
    assert causal_report.closing_words(interim)["gradient side"] == "incomplete"
    assert causal_report.closing_words(causal.from_tables(t, traj, causal_status(t), interim=False))["gradient side"] \
        == "supported"


def test_the_report_shows_the_matched_reading_beside_the_registered_one():
    t = causal_table(seeds=range(4))
    traj = progress_trajectory(t, lag=0.2, offset=0.0)
    last = traj[traj["step"] == traj["step"].max()].set_index("run")
    t = t.assign(log_mean_cosine=t["run"].map(last["log_mean_cosine"]), heldout_loss=t["run"].map(last["heldout_loss"]))
    ca = complete_causal(t, traj)
    n = causal_report.causal_numbers(ca)
    assert n["encoder_matched_lo"] < 1 < n["encoder_matched_hi"] < n["encoder_proxy_control"]
    assert n["encoder_loss_gap"] == pytest.approx(0.2, abs=0.02)
    assert causal_report.progress_words(ca)[("encoder", "proxy - control")] == "not told apart from progress"
    p = causal_report.progress_table(ca)
    assert list(p.columns) == ["architecture", "contrast", "loss gap at end [nats]", "ratio, last step",
                               "ratio, matched loss", "its 95 % CI", "reading", "seeds"]
    assert len(p) == 3 + 4 and not too_precise(format_table(p).to_html())


def test_the_word_checks_read_the_named_words_and_refuse_an_unknown_name():
    t = causal_table({"proxy": +0.3}, seeds=range(3))
    traj = progress_trajectory(t)
    ca = complete_causal(t, traj)
    w = causal_report.words_of(ca)
    assert w["causal, encoder"] == "against" and w["gradient side"] == "contradicted"
    assert w["every seed complete"] == "yes" and w["learning differs, decoder, proxy - control"] == "no"
    checks = causal_report.word_checks(ca, {"causal, encoder": "against", "causal, decoder": "supported"})
    assert [c.passed for c in checks] == [True, False]
    with pytest.raises(KeyError, match="causal, nowhere"):
        causal_report.word_checks(ca, {"causal, nowhere": "against"})
