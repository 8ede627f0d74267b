"""The numbers, checks and tables of chapter 9 (tanbias.lab.analysis.pretrained_report), read from
the committed measurements of the zoo's models (no model is loaded). (That chapter 9 quotes exactly
these numbers is test_reports.py's.)"""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.lab import zoo
from tanbias.lab.analysis import pretrained_report
from tanbias.lab.analysis.pretrained import load_pretrained
from tanbias.stats import check_words, interval_word


@pytest.fixture(scope="module")
def tables() -> dict:
    return {name: load_pretrained(name) for name in zoo.ZOO}


@pytest.fixture(scope="module")
def table(tables) -> dict:
    return pretrained_report.pretrained_table(tables)


@pytest.mark.parametrize("layers, text", [([], "none"), ([4], "4"), ([3, 1, 2], "1–3"), ([1, 2, 3, 7, 9, 10], "1–3,7,9–10"),
                                          ([0, 2, 4], "0,2,4")])
def test_layers_read_as_runs(layers, text):
    assert pretrained_report.layer_ranges(layers) == text


@pytest.mark.slow
def test_the_numbers_chapter_9_quotes_are_the_tables_numbers(tables, table):
    numbers = pretrained_report.numbers(tables)
    assert numbers and all(numbers[k] == table["ch9_" + k] or (isinstance(numbers[k], float) and np.isnan(numbers[k]))
                           for k in numbers)
    for m, keys in pretrained_report.PRETRAINED_QUOTED.items():
        for k in keys:
            assert f"{m}_{k}" in numbers, (m, k)
    assert set(pretrained_report.SHORT) == set(zoo.ZOO)


def test_every_sign_and_band_word_is_the_one_rule_on_its_interval(table):
    """A glued word is the interval's word by the one rule (tanbias.stats), never typed."""
    signs = [k for k in table if k.endswith("_sign")]
    assert signs
    for k in signs:
        lo, hi = table[k.removesuffix("_sign") + "_lo"], table[k.removesuffix("_sign") + "_hi"]
        assert table[k] == interval_word(lo, hi), k
    # the layers a band places above (below) zero: counted and listed from the same layers
    for k in (k for k in table if k.endswith(("_band_pos", "_band_neg"))):
        listed = table[k + "_layers"]
        count = 0 if listed == "none" else sum(
            int(b) - int(a) + 1 for a, _, b in (r.partition("–") if "–" in r else (r, "", r) for r in listed.split(",")))
        assert count == table[k], (k, listed)


@pytest.mark.slow
def test_the_checks_can_fail_and_read_their_rules(tables, table):
    checks = pretrained_report.pretrained_checks(tables)
    decoders = [pretrained_report.SHORT[n] for n, e in zoo.ZOO.items() if e.kind == "decoder"]
    assert {f"{m}_sink" for m in decoders} <= set(checks) and {f"{m}_beyond_null" for m in decoders} <= set(checks)
    key = next(k for k in table if k.endswith("_t_corpus_sign"))
    m, lang = key.split("_")[1:3]
    words = pretrained_report.words(tables)
    assert words[f"{m}_{lang}_t_corpus_last"] == table[key]
    right = check_words(words, {f"{m}_{lang}_t_corpus_last": table[key]})
    wrong = check_words(words, {f"{m}_{lang}_t_corpus_last": "no such word"})
    assert right[0].passed and not wrong[0].passed


def test_zoo_table_lists_every_model_once():
    t = pretrained_report.zoo_table()
    assert list(t.index) == list(zoo.ZOO) and (t["parameters (M)"] > 0).all()
    assert set(t["kind"]) == {"encoder", "decoder"}


@pytest.mark.slow
def test_premise_verdicts_read_the_premise_table(tables):
    """The narrow premise table says, per model and language, what the wide one's interval words say."""
    narrow, wide = pretrained_report.premise_verdicts(tables), pretrained_report.premise_table(tables)
    assert list(narrow.index) == list(dict.fromkeys((m, lang) for m, lang, _ in wide.index))
    t = wide.xs("radius_t", level="reading")
    d = wide.xs("centroid_distance", level="reading")
    for key, row in narrow.iterrows():
        assert row["premise, last layer"] == pretrained_report.PREMISE_WORDS[t.loc[key, "last layer"]]
        assert row["premise over the blocks"] == pretrained_report.PREMISE_WORDS[t.loc[key, "band over the blocks"]]
        assert row["ρ(log frequency, t) [95 %]"] == t.loc[key, "ρ, last layer"]
        assert row["centroid distance, last layer"] == d.loc[key, "last layer"]
    # the premise predicts a negative correlation: "holds" is negative, "reversed" positive
    assert pretrained_report.PREMISE_WORDS["negative"] == "holds"
    assert pretrained_report.PREMISE_WORDS["positive"] == "reversed"
