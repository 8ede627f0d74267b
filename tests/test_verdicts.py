"""The verdicts' vocabulary: the property rule, the premise's readings and one cell, each refusing what is
outside the vocabulary."""
from __future__ import annotations

import pytest

from tanbias.errors import ParameterError
from tanbias.lab.analysis import verdicts


@pytest.mark.parametrize("readings,word", [
    (["as predicted", "as predicted"], "supported"),
    (["as predicted", "neither"], "partly"),
    (["neither", "neither"], "undetected"),
    (["as predicted", "against"], "contradicted"),
    (["against", "undecided"], "undecided"),
    ([], "undecided"),
])
def test_the_property_rule(readings, word):
    assert verdicts.property_word(readings) == word


def test_the_property_rule_refuses_an_unknown_reading():
    with pytest.raises(ParameterError, match="reading"):
        verdicts.property_word(["holds"])


def test_a_premise_word_is_read_as_the_premise_predicts_a_negative_correlation():
    readings = {w: verdicts.premise_reading(verdicts.PREMISE_WORDS[w]) for w in verdicts.PREMISE_WORDS}
    assert readings == {"negative": "as predicted", "positive": "against", "indistinguishable": "neither",
                        "mixed": "neither", "undecided": "undecided"}


def test_a_cell_takes_its_category_and_its_lines_home_and_refuses_what_the_vocabulary_lacks():
    c = verdicts.cell("mechanisms", "causal_encoder", "decays", rule="registered", anisotropy="shared mean")
    assert list(c) == verdicts.CELL_COLUMNS
    assert (c["category"], c["chapter"], c["label"]) == ("against", "12_causal_test", "sec-ch12-encoder")
    assert verdicts.cell("balancing", "rivals", "partly survives")["category"] == verdicts.SURVIVAL
    for bad in ({"prop": "curvature"}, {"evidence": "folklore"}, {"word": "proven"}, {"rule": "vibes"},
                {"anisotropy": "some"}):
        args = {"prop": "premise", "evidence": "lab", "word": "supported", **bad}
        extra = {k: args.pop(k) for k in ("rule", "anisotropy") if k in args}
        with pytest.raises(ParameterError, match=next(iter(bad))):
            verdicts.cell(args["prop"], args["evidence"], args["word"], **extra)


def test_every_line_of_evidence_has_a_home_and_every_word_a_category():
    assert set(verdicts.HOME) == set(verdicts.EVIDENCE)
    assert set(verdicts.WORD_CATEGORY.values()) == set(verdicts.CATEGORIES)
    assert not set(verdicts.SURVIVAL_WORDS) & set(verdicts.WORD_CATEGORY)
