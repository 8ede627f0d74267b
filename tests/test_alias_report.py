"""The numbers, tables and words of chapter 11's aliasing section (tanbias.lab.analysis.alias_report),
on analyses of planted tables (tests/plantedtables.py) whose words are known. (On real smoke runs:
test_alias.py; that the chapters quote exactly these numbers: test_reports.py.)"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tanbias.lab.analysis import alias, alias_report
from tanbias.stats import check_words
from plantedtables import alias_analysis, alias_table


@pytest.mark.slow
def test_the_words_the_chapter_states_are_computed_once_by_name():
    aa = alias_analysis(False, log_enrichment_late=-0.5, mean_cosine_late=0.3)
    w = alias_report.words(aa)
    assert w["every seed complete"] == "yes" and w["closing"] == alias_report.closing_verdict(aa)
    assert w["verdict, encoder, log_enrichment_late"] == "as predicted"
    assert w["verdict, decoder, mean_cosine_late"] == "against the prediction"
    assert w["verdict, decoder, log_eta_q1"] == "not detected" and w["progress, decoder, log_eta_q1"] == "n/a"
    assert w["learning, encoder"] == "less" and w["clouds, decoder, k3"] == "one cloud"
    assert w["clouds at initialisation, decoder, k3"] == "separate clouds"
    assert {f"balancing, {k} {p}" for k in ("encoder", "decoder") for p in ("alignment", "anisotropy")} <= set(w)
    checks = check_words(w, {"learning, decoder": "less", "clouds, encoder, k1": "separate clouds"})
    assert [c.passed for c in checks] == [True, False]
    with pytest.raises(KeyError, match="no such word.*known names"):
        check_words(w, {"learning, nobody": "less"})
    interim = alias_report.words(alias_analysis(True, log_enrichment_late=-0.5))
    assert interim["every seed complete"] == "no" and interim["closing"] == "undecided (interim)"
    assert {interim[f"balancing, {k} alignment"] for k in ("encoder", "decoder")} == {"undecided"}


@pytest.mark.slow
def test_the_matched_progress_change_is_quoted_beside_each_row():
    # a reading planted along the knob alone, the gain unrelated to the knob: the change at matched
    # gain is the planted one; with the gain tied to the knob, the correlation says so
    aa = alias_analysis(False, log_enrichment_late=-0.5)
    n = alias_report.numbers(dataclasses.replace(aa, responses=aa.responses.assign(p_holm=aa.responses["p"])))
    assert n["alias_enr_encoder_progress"] == pytest.approx(np.exp(-0.5), rel=0.1)
    assert n["alias_enr_encoder_progress_lo"] < n["alias_enr_encoder_progress"] < n["alias_enr_encoder_progress_hi"]
    assert abs(n["alias_xgain_encoder"]) < 0.5
    assert "alias_col_decoder_progress" not in n and "alias_iso_decoder_progress" in n   # the balancing readings
    t = alias_table({"log_enrichment_late": -0.5}, gain={"encoder": -0.8, "decoder": -0.8})
    assert alias.responses(t).set_index(["metric", "kind"]).loc[("log_enrichment_late", "encoder"),
                                                                "x_gain_corr"] > 0.9
