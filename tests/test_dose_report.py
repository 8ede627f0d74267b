"""The verdict rules of chapter 10 (tanbias.lab.analysis.dose_report) on synthetic rows with known words,
and its checks on the committed runs' analysis. (That chapter 10 quotes exactly the report's numbers is
test_reports.py's.)
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tanbias.lab.analysis import alias, dose_report, sweep
from tanbias.lab.analysis.dose import POSTHOC
from tanbias.lab.analysis.sweep import BALANCING_WORDS, balancing_property
from tanbias.stats import check_words, interval_word


def row(metric="log_enrichment_late", kind="decoder", verdict="as predicted", survives=True, flat=(1.0, 2.0),
        change=(-0.5, -0.1), n_seeds=3, **extra):
    return {"metric": metric, "knob": "token", "kind": kind, "verdict": verdict, "progress_survives": survives,
            "flat_lo": flat[0], "flat_hi": flat[1], "change_lo": change[0], "change_hi": change[1],
            "n_seeds": n_seeds, **extra}


def test_a_flattest_level_not_shown_present_is_not_read_as_removed():
    """Failing to show presence is not absence (``dose-posthoc.toml`` ``[presence]``): the registered
    rule read 'removed' and so 'contradicted'; the corrected rule reads 'undecided'."""
    absent = row(flat=(-0.2, 1.5))
    assert dose_report.alignment_word(absent) == "undecided"
    assert dose_report.alignment_word(row()) == "attenuated"
    assert dose_report.alignment_word(row(change=(-0.5, 0.1))) == "indistinguishable"
    assert dose_report.alignment_word(row(verdict="not detected")) == "indistinguishable"
    assert dose_report.alignment_word(row(verdict="against the prediction")) == "strengthened"
    assert dose_report.alignment_word(row(n_seeds=1)) == "undecided"
    assert dose_report.alignment_word(row(flat=(np.nan, np.nan))) == "undecided"
    words = {dose_report.alignment_word(row(verdict=v, flat=f)) for v in ("as predicted", "not detected",
                                                                           "against the prediction")
             for f in ((1.0, 2.0), (-1.0, 2.0), (-2.0, -1.0))}
    assert "removed" not in words and words <= set(BALANCING_WORDS)
    # the registered rule, shown beside it, still reads the flaw
    registered = dose_report.registered_balancing_words(pd.DataFrame([{**absent, "kind": "decoder"},
                                                                      {**row(), "kind": "encoder"}]))
    assert registered == {"decoder": "removed", "encoder": "attenuated"}
    assert balancing_property(registered) == "contradicted"


def test_a_sign_that_does_not_survive_matched_training_progress_does_not_count():
    assert dose_report.alignment_word(row(survives=False)) == "indistinguishable"
    assert dose_report.alignment_word(row(survives=None)) == "indistinguishable"
    assert dose_report.alignment_word(row(survives=np.True_)) == "attenuated"
    assert dose_report.alignment_word(row(survives=False), gate=False) == "attenuated"
    assert dose_report.alignment_word(row(verdict="against the prediction", survives=False)) == "indistinguishable"


def test_the_anisotropy_word_reads_both_link_3_readings():
    cos, iso = "mean_cosine_late", "isoscore_late"
    aw = dose_report.anisotropy_word
    assert aw([row(cos, verdict="against the prediction"), row(iso, verdict="not detected")]) == "strengthened"
    assert aw([row(cos, verdict="as predicted"), row(iso, verdict="not detected")]) == "attenuated"
    assert aw([row(cos, verdict="as predicted"), row(iso, verdict="against the prediction")]) == "indistinguishable"
    assert aw([row(cos, verdict="not detected"), row(iso, verdict="not detected")]) == "indistinguishable"
    assert aw([row(cos, verdict="against the prediction", survives=False), row(iso, verdict="not detected")]) \
        == "indistinguishable"
    assert aw([row(cos, n_seeds=1), row(iso)]) == "undecided"


@pytest.mark.parametrize("enc_align,enc_cos,dec_align,dec_iso,want", [
    ("as predicted", "as predicted", "as predicted", "as predicted", "supported"),
    ("as predicted", "not detected", "not detected", "not detected", "partly"),
    ("as predicted", "against the prediction", "as predicted", "as predicted", "contradicted"),
    ("not detected", "not detected", "not detected", "not detected", "undetected"),
])
def test_weaker_under_balancing_reads_alignment_and_anisotropy(enc_align, enc_cos, dec_align, dec_iso, want):
    rows = []
    for kind, align, aniso in (("encoder", enc_align, enc_cos), ("decoder", dec_align, dec_iso)):
        rows += [row("log_enrichment_late", kind, align), row("mean_cosine_late", kind, aniso),
                 row("isoscore_late", kind, "not detected")]
    comp = dose_report.balancing_components(pd.DataFrame(rows))
    assert set(comp) == {"encoder alignment", "encoder anisotropy", "decoder alignment", "decoder anisotropy"}
    assert balancing_property(comp) == want
    assert POSTHOC["balancing"]["anisotropy"] == ["mean_cosine_late", "isoscore_late"]   # the rule read


def test_the_narrow_verdict_table_says_each_row_word_change_and_what_survives_matched_progress():
    def r(metric, kind, verdict, change, survives=None, knob="token"):
        return {"metric": metric, "knob": knob, "kind": kind, "verdict": verdict, "end_to_end": change,
                "progress_survives": survives}

    rows = pd.DataFrame([
        r("log_enrichment_late", "encoder", "as predicted", np.log(0.5), False),
        r("log_enrichment_late", "decoder", "not detected", np.log(0.9)),
        r("isoscore_late", "encoder", "against the prediction", -0.0421, True),
        r("isoscore_late", "decoder", "against the prediction", -0.0122, np.True_),
        r("mean_cosine_late", "encoder", "no detectable trend, as predicted", 0.01, knob="language"),
        r("mean_cosine_late", "decoder", "no detectable trend, as predicted", -0.02, knob="language")])
    s = dose_report.verdict_summary(rows, "token").set_index("reading")
    assert list(s.columns) == ["link", "encoder", "decoder", "at matched progress"]
    assert s.loc["late enrichment", "encoder"] == "as predicted, ×0.50"
    assert s.loc["late enrichment", "at matched progress"] == "neither"
    assert s.loc["IsoScore*", "encoder"] == "against the prediction, −0.042"
    assert s.loc["IsoScore*", "at matched progress"] == "both" and s.loc["IsoScore*", "link"] == 3
    lang = dose_report.verdict_summary(rows, "language", names={"mean_cosine_late": "cosine"})
    assert lang["reading"].tolist() == ["cosine"] and lang["at matched progress"].tolist() == ["–"]
    from tanbias.errors import ParameterError
    with pytest.raises(ParameterError, match="knob"):
        dose_report.verdict_summary(rows, "alias")


@pytest.mark.slow
@pytest.mark.committed
def test_the_words_read_the_intervals_and_rows_they_name():
    da = alias.joint_analyses().dose          # chapter 10's reading of the committed runs, memoised
    r = da.responses.set_index(["metric", "knob", "kind"]).loc[("log_enrichment_late", "token", "encoder")]
    a = da.association["loss"]
    named = {"enr_token_encoder": (r["end_to_end_lo"], r["end_to_end_hi"]),
             "enr_token_encoder_flat": (r["flat_lo"], r["flat_hi"]),
             "enr_token_encoder_change": (r["change_lo"], r["change_hi"]),
             "enr_token_encoder_progress": (r["progress_lo"], r["progress_hi"]),
             "adapt_loss": (a["lo"], a["hi"]), "adapt_loss_naive": (a["naive_lo"], a["naive_hi"]),
             "adapt_loss_per_run": (a["per_run_lo"], a["per_run_hi"])}
    words = dose_report.words(da)
    assert {key: words[key] for key in named} == {key: interval_word(*iv) for key, iv in named.items()}
    assert words["verdict, encoder, token, log_enrichment_late"] == r["verdict"]
    assert len([k for k in words if k.startswith("verdict, ")]) == len(da.responses)
    checks = check_words(words, {"enr_token_encoder": words["enr_token_encoder"]})
    assert checks[0].passed
    wrong = check_words(words, {"enr_token_encoder": "positive" if words["enr_token_encoder"] != "positive"
                                else "negative"})[0]
    assert not wrong.passed
    with pytest.raises(AssertionError):
        wrong.require()
    assert dose_report.balancing_verdict(da) in sweep.PROPERTY_WORDS
    assert dose_report.adaptive_verdict(da) in sweep.PROPERTY_WORDS
    assert set(dose_report.balancing_words(da).values()) <= set(sweep.BALANCING_WORDS)


@pytest.mark.slow
@pytest.mark.committed
def test_the_full_verdict_tables_split_every_column_once_and_keep_the_words_in_the_first():
    from tanbias.lab.analysis.dose import verdict_table
    from tanbias.book.tables import format_table

    responses = alias.joint_analyses().dose.responses
    rows = verdict_table(responses)
    (first, i1), (second, i2) = dose_report.full_verdict_tables(rows)
    key = ["reading", "knob", "architecture"]
    assert list(first.columns[:3]) == key and list(second.columns[:3]) == key
    assert len(first.columns) + len(second.columns) - 3 == len(rows.columns)       # nothing lost, no twice
    assert "verdict" in first and "verdict" not in second
    assert set(first["reading"]) <= {name for _, name in dose_report.READING_NAMES.values()}
    for part, intervals in ((first, i1), (second, i2)):      # ten columns at the wide tables' size fit the
        assert format_table(part, intervals=intervals).data.shape[1] <= 10      # page (the browser test measures)
