"""Numbers in prose (tanbias.book.prose): a value formatted as myst-nb's ``{glue:text}`` would show
it, the registry the chapters fill, and the one pattern of what an ``{eval}`` role may say."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanbias.book import prose
from tanbias.book.prose import EVAL_PATTERN, NOT_AVAILABLE, Glued, format_value, glue, glued
from tanbias.numerals import MINUS

SPECS = (".0f", ".3f", ".2e", ".3g", ".1%", "+.2f", ",.0f")


@settings(max_examples=80, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from(SPECS))
def test_a_number_reads_as_python_formats_it_with_the_minus_sign(x, spec):
    text = format_value(x, spec)
    assert text == format(x, spec).replace("-", MINUS) and "-" not in text


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=-10**9, max_value=10**9), st.sampled_from(("d", ",d", "+d", "x")))
def test_an_integer_spec_coerces_the_value_to_int(n, spec):
    assert format_value(float(n), spec) == format(n, spec).replace("-", MINUS)


@pytest.mark.parametrize("value, spec, text", [
    (-0.0192, "+.3f", "−0.019"), (-0.0192, ".3f", "−0.019"), (-0.46, ".0%", "−46%"), (-3, "d", "−3"),
    (-2.5e-6, ".2e", "−2.50e−06"), (-0.5, "", "−0.5"), ((-1, 2), "d", "−1, 2"), (0.0, "+.2f", "+0.00"),
])
def test_a_negative_glued_number_reads_with_the_minus_sign_u2212(value, spec, text):
    """The prose's numbers take U+2212, as the tables' do; a word keeps its hyphen."""
    assert format_value(value, spec) == text and "-" not in text
    assert format_value("not-assessable") == format_value("not-assessable", "s") == "not-assessable"


@pytest.mark.parametrize("spec", [".2f", ".1%", ".3g", ".2e"])
def test_a_number_the_data_cannot_give_yet_reads_not_available(spec):
    assert format_value(math.nan, spec) == NOT_AVAILABLE == "n/a"


def test_words_and_tuples():
    assert format_value("weaker") == format_value("weaker", "s") == "weaker"
    assert format_value((47, 75, 122)) == "47, 75, 122"
    assert format_value([0.5, 0.25], ".0%") == "50%, 25%"
    assert format_value((1.0, math.nan), ".1f") == "1.0, n/a"


def test_a_value_that_does_not_fit_its_spec_names_both():
    with pytest.raises(ValueError, match=r"cannot format 'weaker' with spec '\.3f'"):
        format_value("weaker", ".3f")
    with pytest.raises(ValueError, match=r"spec '\.3d'"):
        format_value(3.0, ".3d")


@pytest.mark.parametrize("key", ["", "1st", "_a", "a-b", "a b", "a:b", None, 3])
def test_a_key_is_letters_digits_and_underscores_starting_with_a_letter(key):
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        Glued().put(key, 1)


def test_recording_a_key_again_replaces_it_and_a_missing_key_lists_the_known_ones():
    g = Glued()
    g.put("ch1_slope", 1.99812)
    g.put("ch1_slope", 2.00312)             # a re-run cell
    assert g["ch1_slope:.3f"] == "2.003" and g["ch1_slope"] == "2.00312" and len(g) == 1
    g.put("ch1_b", 7)
    with pytest.raises(KeyError, match=r"no number glued as 'ch1_c' \(known: ch1_b, ch1_slope\)"):
        g["ch1_c:.2f"]
    with pytest.raises(KeyError, match="known: none yet"):
        Glued()["x"]


def test_glue_records_in_the_registry_the_chapters_read(monkeypatch):
    monkeypatch.setattr(prose, "glued", Glued())
    glue("demo_ratio", 0.25)
    assert prose.glued["demo_ratio:.0%"] == "25%" and "demo_ratio" not in glued


@pytest.mark.parametrize("expr, ok", [
    ('glued["ch1_slope:.3f"]', True), ('glued["ch1_slope"]', True), ("a_name", True),
    ('glued["ch1_slope:+.2%"]', True),
    ('glued["ch1_slope"] + 1', False), ('glued["ch-1"]', False), ("__import__('os')", False),
    ("glued['ch1_slope']", False), ("1 + 1", False), ('glued["a"]["b"]', False),
])
def test_the_eval_pattern_admits_a_glued_key_or_a_plain_name_only(expr, ok):
    assert bool(re.match(EVAL_PATTERN, expr)) is ok


@settings(max_examples=60, deadline=None)
@given(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,20}", fullmatch=True), st.sampled_from(("",) + SPECS))
def test_every_key_put_accepts_the_pattern_quotes(key, spec):
    g = Glued()
    g.put(key, 0.5)
    expr = f'glued["{key}:{spec}"]' if spec else f'glued["{key}"]'
    assert re.match(EVAL_PATTERN, expr)
    assert g[f"{key}:{spec}"] == format_value(0.5, spec)


def test_the_glue_log_records_every_glued_value(tmp_path, monkeypatch):
    import json

    from tanbias.book import prose

    log = tmp_path / "glued.jsonl"
    monkeypatch.setenv(prose.GLUE_LOG, str(log))
    prose.glue("log_a", 0.5)
    prose.glue("log_b", "supported")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert rows == [{"key": "log_a", "value": "0.5"}, {"key": "log_b", "value": "'supported'"}]
    monkeypatch.delenv(prose.GLUE_LOG)
    prose.glue("log_c", 1.0)
    assert len(log.read_text().splitlines()) == 2
