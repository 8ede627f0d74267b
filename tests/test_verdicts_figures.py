"""The verdicts figure (tanbias.figures.verdicts) on a grid planted by hand."""
from __future__ import annotations

import pandas as pd
import pytest

from tanbias.figures.verdicts import QUALIFIED_MARK, QUALIFIED_OPACITY, verdicts_figure
from tanbias.lab.analysis.findings import CATEGORIES, EVIDENCE, PROPERTIES, SURVIVAL
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
    # the legend names every category once, in order; the rows read top to bottom
    assert [t.name for t in fig.data if t.showlegend is not False] == [*CATEGORIES, f"{QUALIFIED_MARK} paler: qualified"]
    assert fig.layout.yaxis.autorange == "reversed" and list(fig.layout.yaxis.ticktext) == list(PROPERTIES.values())
    assert fig.layout.title.text


def test_a_qualified_word_is_drawn_paler_and_marked():
    g = _grid()
    at = (g["property"] == "balancing") & (g["evidence"] == "knobs")
    g["qualifier"] = ""
    g.loc[at, "qualifier"] = "narrowly, on one reading"
    fig = verdicts_figure(g)
    k = list(PROPERTIES).index("balancing") * len(EVIDENCE) + list(EVIDENCE).index("knobs")
    assert fig.layout.shapes[k].opacity == QUALIFIED_OPACITY and f"contradicted{QUALIFIED_MARK}" in fig.layout.annotations[k].text
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
