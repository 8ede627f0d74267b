"""The book's verdicts at a glance (tanbias.lab.analysis.findings): the glossary's property rule, the
rivals experiment's survival rule on planted tables, and the grid of the committed runs, whose every
word is its chapter's rule's and whose every cell links a section that exists."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from tanbias.errors import ParameterError
from tanbias.lab.analysis import findings, rivals_report

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def _survival(words, verdict="surgery lowers it: proxy - control (chapter 12)"):
    """A survival table of one verdict in both architectures (the columns of
    :func:`tanbias.lab.analysis.rivals_posthoc.survival_rows`): the standard word 'less anisotropic'
    and ``words`` for the five corrections (n/a where a correction does not apply)."""
    from tanbias.lab.analysis.rivals_posthoc import SURVIVAL_CORRECTIONS

    return pd.DataFrame([{"verdict": verdict, "kind": k, "standard": "less anisotropic",
                          **dict(zip(SURVIVAL_CORRECTIONS, words))} for k in ("encoder", "decoder")])


LESS, NONE, MORE = "less anisotropic", "not detected", "more anisotropic"


@pytest.mark.parametrize("words,word", [
    ([LESS] * 4 + ["n/a"], "survives"),
    ([NONE] * 4 + ["n/a"], "does not survive"),
    ([LESS, LESS, MORE, LESS, "n/a"], "partly survives"),
])
def test_a_verdict_survives_a_rival_when_its_correction_keeps_the_word(words, word):
    assert rivals_report.survival_word(_survival(words), ("surgery",), interim=False) == word
    # while the rivals experiment is interim, nothing is tested yet, whatever the table says
    assert rivals_report.survival_word(_survival(words), ("surgery",), interim=True) == "not yet tested"
    # a verdict the table does not hold is not tested
    assert rivals_report.survival_word(_survival(words), ("aliasing",), interim=False) == "not tested"


@pytest.fixture(scope="module")
def grid():
    a = findings.analyses()
    return findings.verdict_grid(a), a["causal"], a["rivals"].analysis


def _labels(stem):
    text = (CHAPTERS / f"{stem}.md").read_text(encoding="utf8")
    return set(re.findall(r"^\(([\w-]+)\)=", text, re.MULTILINE))


@pytest.mark.slow
def test_the_grid_of_the_committed_runs_has_every_cell_a_word_and_a_section(grid):
    g, ca, ra = grid
    assert len(g) == len(findings.PROPERTIES) * len(findings.EVIDENCE)
    assert list(dict.fromkeys(g["property"])) == list(findings.PROPERTIES)
    assert set(g["category"]) <= {*findings.CATEGORIES, findings.SURVIVAL}
    # a survival word judges verdicts, not its property: it takes no verdict category, and only the rivals
    # column holds one
    for w, c, e in zip(g["word"], g["category"], g["evidence"]):
        assert c == (findings.SURVIVAL if w in findings.SURVIVAL_WORDS else findings.WORD_CATEGORY[w]), w
        assert c != findings.SURVIVAL or e == "rivals", (w, e)
    for _, cell in g.iterrows():
        assert (CHAPTERS / f"{cell['chapter']}.md").exists(), cell["chapter"]
        assert not cell["label"] or cell["label"] in _labels(cell["chapter"]), (cell["chapter"], cell["label"])


@pytest.mark.slow
def test_the_closing_tables_hold_every_tested_cell_and_keep_survival_apart(grid):
    """The closing page's table has one row per tested cell outside the rivals column, its verdict one of the
    six and its rule's word the grid's; every link reaches a section; the survival table holds the rivals
    column's words, one row per framed cell of the figure (the rival accounts' own row, which sums them up,
    included)."""
    g = grid[0]
    t = findings.closing_table(g)
    tested = g[(g["word"] != "not tested") & (g["evidence"] != "rivals")]
    assert len(t) == len(tested) and list(t["the rule's word"]) == list(tested["word"])
    assert set(t["verdict"]) <= set(findings.CATEGORIES) and not set(t["the rule's word"]) & set(findings.SURVIVAL_WORDS)
    assert [name for name in t["property"] if name] == [findings.PROPERTIES[p] for p in dict.fromkeys(tested["property"])]
    for href in t.attrs["links"]["line of evidence"]:
        stem, _, label = href.partition(".html")
        assert (CHAPTERS / f"{stem}.md").exists() and (not label or label[1:] in _labels(stem)), href
    assert all(h[1:] in _labels("conclusions") for h in t.attrs["links"]["property"] if h)
    s = findings.survival_table(g)
    rivals = g[(g["evidence"] == "rivals") & (g["word"] != "not tested") & (g["category"] == findings.SURVIVAL)]
    # every cell the figure frames has its row, the rival accounts' own included, with the earlier rule's word
    assert list(s["against the rivals"]) == list(rivals["word"]) and len(s) == len(rivals)
    assert set(s["by the earlier rule"]) <= set(findings.SURVIVAL_WORDS) - {"not decided"}


def test_the_grid_reads_each_chapters_rule(grid):
    g, ca, ra = grid
    w = g.set_index(["property", "evidence"])["word"]
    for kind in ("encoder", "decoder"):
        assert w[("mechanisms", f"causal_{kind}")] == ca.words[kind]
        assert w[("early", f"causal_{kind}")] == ca.early[kind]["word"]
        assert w[("reinforcing", f"causal_{kind}")] == ca.reinforcing[kind]["word"]
    # the rivals experiment: while it is interim, no anisotropy verdict is tested against it
    if ra.interim:
        assert w[("rivals", "rivals")] == "interim"
        assert {w[(p, "rivals")] for p in ("mechanisms", "balancing")} == {"not yet tested"}
    else:           # final: the survival rule's words, the whole row included
        words = set(findings.SURVIVAL_WORDS)
        assert {w[(p, "rivals")] for p in ("rivals", "mechanisms", "balancing")} <= words
    # chapter 13's registration re-reads no verdict of these properties
    assert {w[(p, "rivals")] for p in ("premise", "reinforcing", "early", "adaptive")} == {"not tested"}
    h = findings.headline_words(g)
    assert all(len(v.split()) == 1 for v in h.values())
    assert h["causal_decoder"] == ca.words["decoder"] and "rivals" not in h


def test_every_verdict_cell_says_its_rule_and_the_kind_of_anisotropy_it_reads(grid):
    g, ca, ra = grid
    tested = g[g["word"] != "not tested"]
    assert set(tested["rule"]) <= set(findings.RULES) and "" not in set(tested["rule"])
    assert set(tested["anisotropy"]) <= set(findings.ANISOTROPY_KINDS)
    cells = g.set_index(["property", "evidence"])
    # a qualifier is written where its reading holds: the decoder's surgery moves the shared mean only
    assert cells.loc[("mechanisms", "causal_decoder"), "anisotropy"] == "shared mean"
    assert "IsoScore*" in cells.loc[("mechanisms", "causal_decoder"), "qualifier"]
    assert cells.loc[("mechanisms", "lab"), "rule"] == "correlational"
    assert "variance" in cells.loc[("mechanisms", "lab"), "qualifier"]
    # "possibly adaptive" reads the rule fixed before the dose runs; the post-hoc one is its qualifier
    assert cells.loc[("adaptive", "knobs"), "word"] == "undetected"
    assert "added after the data" in cells.loc[("adaptive", "knobs"), "qualifier"]


def test_a_headline_word_of_several_words_is_refused(grid):
    g = grid[0].copy()
    g.loc[(g["property"] == "balancing") & (g["evidence"] == "knobs"), "word"] = "not yet tested"
    with pytest.raises(ValueError, match="one word"):
        findings.headline_words(g)


def test_the_book_posthoc_file_is_pinned_dated_and_names_each_reading_it_adds():
    import hashlib

    from tanbias.lab.analysis import registered

    path = Path(__file__).resolve().parents[1] / "data" / "preregistration" / "book-posthoc.toml"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == registered.BOOK_POSTHOC_SHA256
    post = registered.book_posthoc()
    assert post["meta"]["date"] == "2026-12-07" and "NOT pre-registered" in path.read_text()
    assert {"retired", "survival", "accounts", "words", "horizon", "categories"} <= set(post)


def test_the_glossary_gathers_every_grid_word_under_its_verdict():
    """The glossary's six verdict words are findings.CATEGORIES, and each rule word the verdict grid can
    give stands in the row of its category (findings.WORD_CATEGORY): the reader's table and the
    figure's colours cannot drift apart."""
    text = (Path(__file__).resolve().parents[1] / "chapters" / "glossary.md").read_text(encoding="utf8")
    section = text.split("(glossary-verdict-words)=")[1].split("\n(glossary-")[0]
    rows = [line.split("|")[1:4] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    table = {verdict.strip(): [w.strip() for w in words.split(";")] for verdict, _, words in rows[1:]}
    assert tuple(table) == findings.CATEGORIES
    placed = {word: verdict for verdict, words in table.items() for word in words}
    wrong = {w: (placed.get(w), c) for w, c in findings.WORD_CATEGORY.items() if placed.get(w) != c}
    assert not wrong, f"grid words in the wrong row of the glossary (row, category): {wrong}"


#: what a deciding effect's interval must say where its cell reads a word (the rule that gives the word,
#: read on the interval the record quotes): (property, evidence, word) -> (lo, hi, reference) -> bool
_INTERVAL_SAYS = {
    ("mechanisms", "causal_decoder", "supported"): lambda lo, hi, ref: hi < ref,
    ("mechanisms", "causal_encoder", "against"): lambda lo, hi, ref: lo > ref,
    ("premise", "lab", "contradicted"): lambda lo, hi, ref: lo > ref,           # reversed: frequent types spread out
    ("premise", "released", "contradicted"): lambda lo, hi, ref: lo > ref,
    ("mechanisms", "lab", "supported"): lambda lo, hi, ref: lo > ref,
    ("early", "lab", "supported"): lambda lo, hi, ref: hi <= ref,                # the peak within the first 30 %
    ("early", "causal_decoder", "supported"): lambda lo, hi, ref: lo >= ref,     # at least half the effect
    ("reinforcing", "causal_decoder", "not assessable"): lambda lo, hi, ref: lo < ref < hi,
    ("reinforcing", "causal_encoder", "decays"): lambda lo, hi, ref: hi < ref,
    ("balancing", "knobs", "contradicted"): lambda lo, hi, ref: hi < ref,        # IsoScore* falls: more anisotropic
    ("balancing", "lab", "undetected"): lambda lo, hi, ref: lo < ref < hi,
    ("adaptive", "knobs", "undetected"): lambda lo, hi, ref: lo < ref < hi,
    ("adaptive", "causal_decoder", "no cost"): lambda lo, hi, ref: hi < ref,     # the loss falls
    ("rivals", "causal_decoder", "indistinguishable"): lambda lo, hi, ref: lo < ref < hi,
}


@pytest.fixture(scope="module")
def records(grid):
    return findings.verdict_records(findings.analyses(), grid[0])


def _forward(column):
    """The closing table's property names, repeated on every row (the page writes each once)."""
    return list(pd.Series(column).replace("", pd.NA).ffill())


def test_the_records_are_the_pages_tables_word_for_word(grid, records):
    """One record per row of the closing page's two tables, in their order, with their words."""
    g = grid[0]
    table, survival = findings.closing_table(g), findings.survival_table(g)
    words = ["line of evidence", "verdict", "the rule's word", "kind", "rule", "qualifier"]
    main = records[records.index.get_level_values("evidence key") != "rivals"]
    assert main[words].to_dict("records") == table[words].to_dict("records")
    assert list(main["property"]) == _forward(table["property"])
    framed = records[records.index.get_level_values("evidence key") == "rivals"]
    assert list(framed["property"]) == list(survival["property"])
    assert list(framed["verdict"]) == list(survival["against the rivals"])
    for column in ("what is re-read", "re-readings that cannot decide", "by the earlier rule"):
        assert list(framed[column]) == list(survival[column]), column


def test_the_downloaded_csv_equals_the_pages_tables(grid, records):
    """The file the closing page offers (verdicts_csv of the same records): the same rows as the page's two
    tables, the same words, and the deciding numbers at full precision."""
    import io

    g = grid[0]
    text = findings.verdicts_csv(records, "https://example.org/book/")
    csv = pd.read_csv(io.StringIO(text), keep_default_na=False, dtype=str)
    table, survival = findings.closing_table(g), findings.survival_table(g)
    n = len(table)
    assert len(csv) == n + len(survival)
    for column in ("line of evidence", "verdict", "the rule's word", "kind", "rule", "qualifier"):
        assert list(csv[column][:n]) == list(table[column]), column
    assert list(csv["property"][:n]) == _forward(table["property"])
    assert list(csv["property"][n:]) == list(survival["property"])
    assert list(csv["verdict"][n:]) == list(survival["against the rivals"])
    assert list(csv["by the earlier rule"][n:]) == list(survival["by the earlier rule"])
    measured = csv["estimate"] != ""
    assert measured.sum() == records["estimate"].notna().sum() > 0
    assert [float(v) for v in csv["estimate"][measured]] == list(records["estimate"].dropna())
    assert all(link.startswith("https://example.org/book/chapters/") for link in csv["link"])
    assert "glue key" not in csv.columns


def test_each_deciding_effect_is_the_number_its_chapter_glues(grid, records):
    """Read, not recomputed: each record's estimate and interval are the chapter's glued numbers under the keys
    it names, and its words quote them with the chapter's format (the minus sign U+2212)."""
    from tanbias.numerals import format_spec

    n = findings.chapter_numbers(findings.analyses())
    measured = records[records["glue key"] != ""]
    assert len(measured) >= 15
    for _, r in measured.iterrows():
        key = r["glue key"]
        assert r["estimate"] == n[key], key
        if r["low key"]:
            assert (r["low"], r["high"]) == (n[r["low key"]], n[r["high key"]]), key
            assert r["interval level"] in (0.95, 0.975)
        assert format_spec(r["estimate"], r["glue spec"]) in r["deciding effect"], key
        # a number's minus is U+2212; a hyphen inside a word or a name (held-out, SmolLM2-135M) is not a minus
        assert not re.search(r"(?:^|[\s\[(,×÷:])-\d", r["deciding effect"]), r["deciding effect"]
    # a derivation and a survival row have no single deciding effect, and say so
    assert records.loc[("mechanisms", "derivation"), "deciding effect"].startswith("none: a derivation")
    assert records.loc[("rivals", "rivals"), "deciding effect"].startswith("none")


def test_a_deciding_interval_says_what_its_verdict_word_says(grid, records):
    """The effect a record picks is the one its rule reads: its interval, against the value the rule compares
    it with, gives the cell's word."""
    read = 0
    for (prop, evidence), r in records.iterrows():
        says = _INTERVAL_SAYS.get((prop, evidence, r["the rule's word"]))
        if says is not None:
            assert says(r["low"], r["high"], r["compared with"]), (prop, evidence, r["deciding effect"])
            read += 1
    assert read >= 8, "too few cells read: did the verdicts' words change?"


def test_every_record_says_its_seeds_and_its_horizon_and_a_cell_may_carry_another(grid, records):
    g, ca, _ = grid
    r = records.loc[("mechanisms", "causal_decoder")]
    assert r["seeds, decoder"] == len(ca.seeds["decoder"]) and pd.isna(r["seeds, encoder"])
    assert f"decoder {len(ca.seeds['decoder'])}" == r["seeds"] and r["chapter"] == "chapter 12"
    lab = records[~records.index.get_level_values("evidence key").isin(["derivation", "released"])]
    assert lab["horizon"].notna().all() and (lab["seeds"] != "").all()
    assert records.loc[("mechanisms", "derivation"), "horizon"] is pd.NA
    later = findings.verdict_records(findings.analyses(), g, horizons={("mechanisms", "causal_decoder"): 1280})
    assert later.loc[("mechanisms", "causal_decoder"), "horizon"] == 1280
    assert later.loc[("mechanisms", "causal_encoder"), "horizon"] == r["horizon"]


def test_the_intros_table_takes_its_rows_from_the_records_and_names_a_missing_cell():
    import pandas as pd

    cols = ["property", "line of evidence", "verdict", "the rule's word", "deciding effect", "measure", "glue key"]
    idx = pd.MultiIndex.from_tuples([("rivals", "rivals"), *reversed(findings.HEADLINE_ROWS)])
    rec = pd.DataFrame([[f"{p}/{e}"] * len(cols) for p, e in idx], index=idx, columns=cols)
    t = findings.headline_table(rec)
    assert list(t["verdict"]) == [f"{p}/{e}" for p, e in findings.HEADLINE_ROWS]     # in the intro's order
    assert "glue key" not in t and "rivals/rivals" not in set(t["verdict"])
    with pytest.raises(KeyError, match="early"):
        findings.headline_table(rec.drop(index=[("early", "lab")]))
