"""The verdicts' vocabulary and one verdict cell.

The closing table crosses the statement's premise, its properties and the rival accounts
(:data:`PROPERTIES`, its rows) with the lines of evidence (:data:`EVIDENCE`, its columns). Each
experiment's report returns the cells it decides, ``cells(analysis)``, built by :func:`cell` in
these terms; :func:`tanbias.lab.analysis.findings.verdict_grid` gathers them and fills every other
cell with ``not tested``. A new experiment adds its column here and its ``cells`` to its report.
"""

from __future__ import annotations

from tanbias._checks import check_choice

__all__ = ["PROPERTIES", "EVIDENCE", "HOME", "CATEGORIES", "WORD_CATEGORY", "SURVIVAL_WORDS", "SURVIVAL", "RULES",
           "ANISOTROPY_KINDS", "PREMISE_WORDS", "property_word", "premise_reading", "cell", "CELL_COLUMNS"]

#: the rows: the statement's premise and five properties, and the rival accounts
PROPERTIES = {"premise": "the premise", "mechanisms": "two independent mechanisms",
              "reinforcing": "self-reinforcing", "early": "imprinted early",
              "balancing": "weaker under balancing", "adaptive": "possibly adaptive",
              "rivals": "the rival accounts"}
#: the columns: the lines of evidence, with the chapters that hold them
EVIDENCE = {"derivation": ("derivations", "chapters 1–6"), "lab": ("lab runs", "chapters 7–8"),
            "released": ("released models", "chapter 9"), "knobs": ("frequency knobs", "chapters 10–11"),
            "causal_decoder": ("causal test, decoder", "chapter 12"),
            "causal_encoder": ("causal test, encoder", "chapter 12"),
            "rivals": ("rival accounts", "chapter 13"),
            "horizon": ("past the transient", "chapter 14")}
#: the chapter (file stem) and section of each line of evidence, for the cells no section decides
HOME = {"derivation": ("01_manifold_hypothesis", ""), "lab": ("07_alignment_test", ""),
        "released": ("09_pretrained_models", ""), "knobs": ("10_dose_response", ""),
        "causal_decoder": ("12_causal_test", "sec-ch12-decoder"),
        "causal_encoder": ("12_causal_test", "sec-ch12-encoder"),
        "rivals": ("13_rival_accounts", "sec-ch13-survival"),
        "horizon": ("14_past_the_transient", "")}
#: what a word says of its property, in the order of the figure's legend (:mod:`tanbias.palette`
#: names a colour for each)
CATEGORIES = ("supported", "partly", "against", "neither", "not yet tested", "not tested")
#: every verdict word of a cell, with its category (the glossary's verdict words define them);
#: "not specific": the surgery lowers the reading as predicted, but so does a control, so the prediction
#: is met only in part
WORD_CATEGORY = {
    "supported": "supported", "grows": "supported",
    "partly": "partly", "corrected": "partly", "transient": "partly", "not specific": "partly",
    "contradicted": "against", "against": "against", "decays": "against",
    "undetected": "neither", "not assessable": "neither", "indistinguishable": "neither",
    "no cost": "neither", "undecided": "neither", "not detected": "neither", "neither detected": "neither",
    "not yet tested": "not yet tested", "interim": "not yet tested",
    "not tested": "not tested",
}
#: the rival accounts' words: whether other cells' verdicts keep their word under the rivals'
#: corrections. They judge verdicts, not a property ("survives" keeps an "against" against), so
#: they take no verdict category: their cells' ``category`` is :data:`SURVIVAL`
SURVIVAL_WORDS = ("survives", "partly survives", "does not survive", "not decided")
#: the ``category`` of a cell whose word is one of :data:`SURVIVAL_WORDS` (drawn framed, in italics, on the
#: background colour, that of ``not tested``)
SURVIVAL = "survival"
#: where a verdict's word comes from (the closing page's "rule" column; rivals-posthoc.toml [closing])
RULES = ("registered", "added after the data", "not registered", "correlational", "derivation")
#: which kind of anisotropy a verdict rests on (the closing page's column; rivals-posthoc.toml [two_kinds])
ANISOTROPY_KINDS = ("shared mean", "shape", "both", "not anisotropy")
#: What an interval word of ρ(log frequency, radius t) says about the premise (frequent types have a
#: small radius, so the premise predicts a negative correlation); a band's "mixed" stays "mixed".
PREMISE_WORDS = {"negative": "holds", "positive": "reversed", "indistinguishable": "no sign",
                 "mixed": "mixed", "undecided": "undecided"}
#: a cell's fields, in the closing table's order
CELL_COLUMNS = ["property", "evidence", "word", "category", "chapter", "label", "qualifier", "rule", "anisotropy"]


def property_word(readings) -> str:
    """A property's word from its readings, by the glossary's rule. Each reading is ``as predicted``,
    ``against`` (the prediction), ``neither`` (no answer either way) or ``undecided`` (it cannot be
    computed): ``undecided`` when any is, ``contradicted`` when any goes against, ``supported``
    when every one is as predicted, ``partly`` when some are, ``undetected`` when none is.

    Raises
    ------
    tanbias.errors.ParameterError
        For a reading that is none of the four.

    Example
    -------
    >>> property_word(["as predicted", "neither"]), property_word(["neither", "against"])
    ('partly', 'contradicted')
    """
    readings = list(readings)
    for r in readings:
        check_choice("reading", r, ("as predicted", "against", "neither", "undecided"))
    if not readings or "undecided" in readings:
        return "undecided"
    if "against" in readings:
        return "contradicted"
    n = readings.count("as predicted")
    return "supported" if n == len(readings) else "partly" if n else "undetected"


def premise_reading(word: str) -> str:
    """A premise word (:data:`PREMISE_WORDS`' values) as a reading of :func:`property_word`.

    >>> premise_reading(PREMISE_WORDS["positive"]), premise_reading("no sign")
    ('against', 'neither')
    """
    return {"holds": "as predicted", "reversed": "against", "undecided": "undecided"}.get(word, "neither")


def cell(prop: str, evidence: str, word: str, chapter: str | None = None, label: str = "", *, qualifier: str = "",
         rule: str = "", anisotropy: str = "") -> dict:
    """One cell of the closing table: ``prop`` (:data:`PROPERTIES`) read by ``evidence``
    (:data:`EVIDENCE`) says ``word`` (:data:`WORD_CATEGORY` or :data:`SURVIVAL_WORDS`), decided in
    ``chapter`` (a file stem; default the evidence's :data:`HOME`) at the section ``label``;
    ``qualifier``: what the word needs beside it (written only where the reading it names holds);
    ``rule``: :data:`RULES`; ``anisotropy``: :data:`ANISOTROPY_KINDS` (``""`` for a cell not tested).

    Raises
    ------
    tanbias.errors.ParameterError
        For a property, line of evidence, word, rule or kind outside the vocabulary.

    Example
    -------
    >>> cell("premise", "lab", "contradicted", "08_eurobert_vs_decoder", rule="correlational")["category"]
    'against'
    """
    check_choice("prop", prop, tuple(PROPERTIES))
    check_choice("evidence", evidence, tuple(EVIDENCE))
    check_choice("word", word, (*WORD_CATEGORY, *SURVIVAL_WORDS))
    check_choice("rule", rule, ("", *RULES))
    check_choice("anisotropy", anisotropy, ("", *ANISOTROPY_KINDS))
    if chapter is None:
        chapter, label = HOME[evidence]
    category = SURVIVAL if word in SURVIVAL_WORDS else WORD_CATEGORY[word]
    return {"property": prop, "evidence": evidence, "word": word, "category": category, "chapter": chapter,
            "label": label, "qualifier": qualifier, "rule": rule, "anisotropy": anisotropy}
