"""The verdicts figure (tanbias.figures.verdicts) on a grid planted by hand."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from tanbias.figures.verdicts import (CELL_CHARS, CELL_FONT, QUALIFIED_MARK, QUALIFIED_OPACITY, headline_effects_svg,
                                     verdicts_figure)
from tanbias.lab.analysis.findings import (CATEGORIES, EVIDENCE, PROPERTIES, RECORD_COLUMNS, SURVIVAL, SURVIVAL_WORDS,
                                           WORD_CATEGORY)
from tanbias.numerals import MINUS
from tanbias.palette import VERDICT_COLORS


def _grid():
    """Every cell 'not tested' but two: the decoder's causal test supported, the knobs against balancing."""
    rows = []
    for p in PROPERTIES:
        for e in EVIDENCE:
            word, cat, chapter, label = "not tested", "not tested", "01_manifold_hypothesis", ""
            if (p, e) == ("mechanisms", "causal_decoder"):
                word, cat, chapter, label = "supported", "supported", "12_causal_test", "sec-ch12-decoder"
            if (p, e) == ("balancing", "knobs"):
                word, cat, chapter, label = "contradicted", "against", "10_dose_response", "sec-ch10-balancing"
            rows.append({"property": p, "evidence": e, "word": word, "category": cat, "chapter": chapter,
                         "label": label})
    return pd.DataFrame(rows)


def test_each_cell_is_coloured_by_its_category_and_links_its_section():
    fig = verdicts_figure(_grid())
    n_e = len(EVIDENCE)
    i, j = list(EVIDENCE).index("causal_decoder"), list(PROPERTIES).index("mechanisms")
    cell = fig.layout.shapes[j * n_e + i]
    assert cell.fillcolor == VERDICT_COLORS["supported"] and cell.x0 < i < cell.x1 and cell.y0 < j < cell.y1
    note = fig.layout.annotations[j * n_e + i]
    assert 'href="12_causal_test.html#sec-ch12-decoder"' in note.text and ">supported</a>" in note.text
    k = list(PROPERTIES).index("balancing") * n_e + list(EVIDENCE).index("knobs")
    assert fig.layout.shapes[k].fillcolor == VERDICT_COLORS["against"]
    assert 'href="10_dose_response.html#sec-ch10-balancing"' in fig.layout.annotations[k].text
    # a cell without a section links its chapter's page
    assert 'href="01_manifold_hypothesis.html"' in fig.layout.annotations[0].text
    # the legend names every category a cell has once, in order, and no other; the rows read top to bottom
    assert [t.name for t in fig.data if t.showlegend is not False] == ["supported", "against", "not tested"]
    assert fig.layout.yaxis.autorange == "reversed"
    assert [t.replace("<br>", " ") for t in fig.layout.yaxis.ticktext] == list(PROPERTIES.values())
    assert fig.layout.title.text


def test_no_legend_swatch_that_no_cell_uses():
    g = _grid()
    assert "not yet tested" not in [t.name for t in verdicts_figure(g).data]
    g.loc[(g["property"] == "early") & (g["evidence"] == "rivals"), ["word", "category"]] = ["interim", "not yet tested"]
    g["qualifier"] = ""
    names = [t.name for t in verdicts_figure(g).data if t.showlegend is not False]
    assert "not yet tested" in names and f"{QUALIFIED_MARK} paler: qualified" not in names


def test_every_word_fits_its_cell_at_one_size():
    """No word is shrunk to fit: every cell's word is drawn at CELL_FONT, in lines of at most CELL_CHARS
    characters (its qualifier's mark included), whatever word of the grid it is; the title sits right above
    the column headers (no empty band)."""
    g = _grid()
    g["qualifier"] = "a qualifier"
    words = [*WORD_CATEGORY, *SURVIVAL_WORDS]
    cells = [(p, e) for p in PROPERTIES for e in EVIDENCE]
    for (p, e), word in zip(cells, words):
        g.loc[(g["property"] == p) & (g["evidence"] == e), ["word", "category"]] = [
            word, SURVIVAL if word in SURVIVAL_WORDS else WORD_CATEGORY[word]]
    fig = verdicts_figure(g)
    assert {note.font.size for note in fig.layout.annotations} == {CELL_FONT}
    for note in fig.layout.annotations:
        text = re.sub(r"<[^>]+>", "", note.text.replace("<br>", "\n"))
        assert all(len(line) <= CELL_CHARS for line in text.split("\n")), text
    assert fig.layout.margin.t <= 100


def test_a_qualified_word_is_drawn_paler_and_marked():
    g = _grid()
    at = (g["property"] == "balancing") & (g["evidence"] == "knobs")
    g["qualifier"] = ""
    g.loc[at, "qualifier"] = "narrowly, on one reading"
    fig = verdicts_figure(g)
    k = list(PROPERTIES).index("balancing") * len(EVIDENCE) + list(EVIDENCE).index("knobs")
    word = re.sub(r"<[^>]+>", "", fig.layout.annotations[k].text.replace("-<br>", ""))   # a word broken to fit its cell
    assert fig.layout.shapes[k].opacity == QUALIFIED_OPACITY and f"contradicted{QUALIFIED_MARK}" in word
    j = list(PROPERTIES).index("mechanisms") * len(EVIDENCE) + list(EVIDENCE).index("causal_decoder")
    assert fig.layout.shapes[j].opacity == 1 and QUALIFIED_MARK not in fig.layout.annotations[j].text
    assert any("narrowly, on one reading" in t for t in fig.data[0].hovertext)


def test_a_survival_word_takes_no_verdict_colour():
    """The rivals column's words judge other cells' verdicts: a dotted frame on the untested colour, never
    the colour of supported, partly or against, and a legend entry of its own."""
    g = _grid()
    at = (g["property"] == "mechanisms") & (g["evidence"] == "rivals")
    g.loc[at, ["word", "category"]] = ["partly survives", SURVIVAL]
    fig = verdicts_figure(g)
    k = list(PROPERTIES).index("mechanisms") * len(EVIDENCE) + list(EVIDENCE).index("rivals")
    shape = fig.layout.shapes[k]
    assert shape.fillcolor == VERDICT_COLORS["not tested"] and shape.line.dash == "dot"
    assert shape.fillcolor not in {VERDICT_COLORS[c] for c in ("supported", "partly", "against")}
    assert "<i>partly" in fig.layout.annotations[k].text
    assert any("survival" in str(t.name) for t in fig.data)
    # a grid without one has no such legend entry
    assert not any("survival" in str(t.name) for t in verdicts_figure(_grid()).data)


def test_a_grid_with_a_missing_cell_or_an_unknown_category_is_refused():
    with pytest.raises(ValueError, match="lacks the cells"):
        verdicts_figure(_grid().iloc[1:])
    bad = _grid()
    bad.loc[0, "category"] = "maybe"
    with pytest.raises(ValueError, match="maybe"):
        verdicts_figure(bad)


def _records():
    """Three rows of tanbias.lab.analysis.findings.verdict_records: a ratio supported, a difference against
    (negative numbers) and a derivation (no measured effect)."""
    base = {c: "" for c in RECORD_COLUMNS}
    rows = [base | {"property": "two independent mechanisms", "line of evidence": "causal test, decoder, ch. 12",
                    "verdict": "supported", "the rule's word": "supported", "reading": "decoder",
                    "measure": "mean cosine, proxy / control", "scale": "ratio", "glue key": "ch12_x",
                    "glue spec": ".2f", "interval level": 0.95, "estimate": 0.7821, "low": 0.7256, "high": 0.843,
                    "compared with": 1.0, "chapter": "chapter 12"},
            base | {"property": "weaker under balancing", "line of evidence": "frequency knobs, ch. 11",
                    "verdict": "against", "the rule's word": "contradicted", "reading": "decoder",
                    "measure": "IsoScore*, change", "scale": "difference", "glue key": "ch11_y", "glue spec": "+.3f",
                    "interval level": 0.95, "estimate": -0.0192, "low": -0.0364, "high": -0.0019,
                    "compared with": 0.0, "chapter": "chapter 11"},
            base | {"property": "self-reinforcing", "line of evidence": "derivations, ch. 6", "verdict": "partly",
                    "the rule's word": "transient", "chapter": "chapter 6", "estimate": float("nan"),
                    "low": float("nan"), "high": float("nan"), "interval level": float("nan"),
                    "compared with": float("nan")}]
    index = pd.MultiIndex.from_tuples([("mechanisms", "causal_decoder"), ("balancing", "knobs"),
                                       ("reinforcing", "derivation")])
    return pd.DataFrame(rows, columns=RECORD_COLUMNS, index=index)


def test_the_headline_figure_is_an_svg_of_each_effect_with_its_interval_in_words():
    import re
    import xml.etree.ElementTree as ET

    svg = headline_effects_svg(_records(), cells=list(_records().index), source="the closing page")
    root = ET.fromstring(svg)                               # a well-formed SVG document, as wide as the column
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg" and int(root.get("width")) <= 720 and svg._repr_svg_() == svg
    texts = [t.text or "" for t in root.iter(f"{ns}text")]
    joined = " ".join(texts)
    # each effect in words, with its numbers as the book writes them (U+2212), its verdict and its rule's word
    assert "×0.78 [0.73, 0.84]" in joined and f"{MINUS}0.019 [{MINUS}0.036, {MINUS}0.002]" in joined
    assert "decoder: mean cosine, proxy / control" in joined and "the rule’s word: contradicted" in joined
    assert not [t for t in texts if re.search(r"-\d", t)], "a number with a hyphen-minus"
    # one dot per measured effect; the derivation is named under the rows, not drawn
    assert len(list(root.iter(f"{ns}circle"))) == 2
    assert any("Self-reinforcing is partly (transient) by a derivation" in t for t in texts)
    assert "the closing page" in joined
    with pytest.raises(ValueError, match="lack the cells"):
        headline_effects_svg(_records(), cells=[("premise", "lab")])
