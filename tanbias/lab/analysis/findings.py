"""The book's verdicts at a glance: each property of the statement against each line of evidence.

The closing page (``chapters/conclusions.md``) and the introduction read the book's findings
from here, and the verdicts figure (:func:`tanbias.figures.verdicts.verdicts_figure`) draws
:func:`verdict_grid`. Every word of a line of evidence comes from the rule its chapter states,
through that chapter's report; nothing is decided here but how the words are gathered:

* :mod:`tanbias.lab.analysis.verdicts`: the vocabulary (the rows ``PROPERTIES``, the columns
  ``EVIDENCE``, the words and their categories, one ``cell``), which each report's ``cells(a)`` speaks;
* :data:`REPORTS` and :func:`analyses`: every registered experiment's report (its face: ``analyse()``,
  ``numbers(a)``, ``words(a)``, ``cells(a)``) and their analyses, computed once;
* :func:`cells`: every decided cell, gathered from the reports (and chapter 9's, and the derivations');
* :func:`verdict_grid`: one row per property and line of evidence: its word, the word's
  :data:`~tanbias.lab.analysis.verdicts.CATEGORIES` entry (the figure's colour) and the section that decides it;
* :func:`headline_words`: the single words the closing page and the introduction glue;
* :func:`verdict_records`: every verdict of the closing page with the effect that decides it (its
  interval, measure, seeds, horizon and chapter), as the page's CSV file (:func:`verdicts_csv`) gives
  it and the introduction's verdict lines quote it.

The derivations of chapters 1 to 6 are not measurements: their words (:data:`DERIVATION`) say
what those chapters derive and check, and each chapter's own checks fail the build if a
derivation stops holding.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple
from types import SimpleNamespace

import numpy as np

from tanbias.lab.analysis import (alias, alias_report, causal_report, dose_report, horizon_report, pretrained_report,
                                  rivals_report, sweep_report)
from tanbias.lab.analysis.rivals_report import SURVIVAL_ROWS
from tanbias.lab.analysis.verdicts import (ANISOTROPY_KINDS, CATEGORIES, CELL_COLUMNS, EVIDENCE, PROPERTIES, RULES,
                                           SURVIVAL, SURVIVAL_WORDS, WORD_CATEGORY, cell, property_word)
from tanbias.lab.analysis.causal import EARLY_THRESHOLD
from tanbias.lab.config import EARLY_FRAC, KINDS
from tanbias.lab.experiments import EXPERIMENTS
from tanbias.numerals import MINUS, format_number, format_spec

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DERIVATION", "REPORTS", "analyses", "cells", "verdict_grid",
           "cell_href", "closing_table", "survival_table", "headline_words", "chapter_numbers", "Effect",
           "verdict_records", "RECORD_COLUMNS", "verdicts_csv", "HEADLINE_CELLS", "HEADLINE_ROWS", "headline_table"]

#: every registered experiment's report (tanbias.lab.experiments.EXPERIMENTS, those a chapter reads), by
#: name: each exposes ``analyse()``, ``numbers(analysis)`` (what its chapter glues, keys without the
#: chapter's prefix ``ch<Design.chapter>_``) and ``words(analysis)`` (the words it states, by name, for
#: :func:`tanbias.stats.check_words`). The one exception to ``analyse()``: the dose experiment's verdicts
#: are read at Holm over the joint family with the aliasing knob's rows, so its analysis comes from the
#: aliasing analysis (:func:`tanbias.lab.analysis.alias.joint_analyses`), not from a ``dose_report.analyse``.
REPORTS = {
    "sweep": sweep_report,
    "dose": SimpleNamespace(analyse=lambda: alias.joint_analyses().dose, numbers=dose_report.numbers,
                            words=dose_report.words, cells=dose_report.cells),
    "alias": alias_report,
    "causal": causal_report,
    "rivals": rivals_report,
    "horizon": horizon_report,
}

#: what the derivations of chapters 1-6 give each property (word, chapter, section label)
DERIVATION = {
    "mechanisms": ("corrected", "03_curvature_attenuation", "sec-ch3-first-order"),
    "reinforcing": ("transient", "06_residual_feedback", "sec-ch6-loop-result"),
}
#: what each re-reading of the rivals column covers, in words (the closing page's survival table)
_RE_READ = {"mechanisms": "chapter 7's late enrichment, and the surgery's proxy − control and proxy − random (chapter 12)",
            "rivals": "every verdict above, under every correction that applies",
            "balancing": "the aliasing knob's raw effect (chapter 11), not the IsoScore* reading at matched progress "
                         "that decides its verdict"}
@functools.cache
def analyses() -> dict:
    """``{name: analysis}`` of every report of :data:`REPORTS`, and ``"pretrained"``: chapter 9's measurements
    of the released models (:func:`tanbias.lab.analysis.pretrained_report.analyse`), computed once per process
    (each is memoised on disk as well)."""
    return {**{name: report.analyse() for name, report in REPORTS.items()}, "pretrained": pretrained_report.analyse()}


def _derivation_cells() -> list[dict]:
    """The derivations' cells (chapters 1-6, :data:`DERIVATION`): no experiment reads them."""
    notes = {"mechanisms": "details of the statement's wording corrected, one of them a sign",
             "reinforcing": "the loop compounds only early, then reverses"}
    return [cell(prop, "derivation", word, chapter, label, qualifier=notes[prop], rule="derivation",
                 anisotropy="not anisotropy") for prop, (word, chapter, label) in DERIVATION.items()]


def cells(a: dict) -> list[dict]:
    """Every decided cell of the closing table: the derivations', then each report's own
    (``cells(analysis)`` of :data:`REPORTS`, and of chapter 9's released models), in that order."""
    out = _derivation_cells()
    for name, report in REPORTS.items():
        out += report.cells(a[name])
    return out + pretrained_report.cells(a["pretrained"])


def verdict_grid(a: dict | None = None) -> pd.DataFrame:
    """Every property of :data:`~tanbias.lab.analysis.verdicts.PROPERTIES` against every line of
    :data:`~tanbias.lab.analysis.verdicts.EVIDENCE`: the cells each report decides (:func:`cells`),
    ``not tested`` elsewhere.

    Parameters
    ----------
    a : dict, optional
        :func:`analyses` (the default): each report's analysis by its name in :data:`REPORTS`, and
        ``pretrained`` (chapter 9).

    Returns
    -------
    pandas.DataFrame
        One row per property and line of evidence, in the order of ``PROPERTIES`` and ``EVIDENCE``,
        with the columns :data:`~tanbias.lab.analysis.verdicts.CELL_COLUMNS`: ``property``, ``evidence``,
        ``word`` (the rule's word, ``not tested`` where the line does not test the property),
        ``category`` (``CATEGORIES``), ``chapter`` (the file stem of the chapter that decides it),
        ``label`` (its section, ``""`` for the chapter's top), ``qualifier`` (what the word needs beside
        it, ``""`` where nothing: the figure marks such a cell), ``rule`` (``RULES``, ``""`` for a cell
        not tested) and ``anisotropy`` (``ANISOTROPY_KINDS``: the kind of anisotropy the word rests on).
        ``attrs``: ``premise_readings`` (every decoder's reading, for the headline), ``survival_earlier``
        (the rivals column by rivals-posthoc.toml's earlier rule), ``survival_undecided`` (its cells
        that cannot decide, per row).

    Raises
    ------
    ValueError
        When two reports decide the same cell.
    """
    import pandas as pd

    a = analyses() if a is None else a
    decided = {}
    for c in cells(a):
        key = (c["property"], c["evidence"])
        if key in decided:
            raise ValueError(f"two reports decide the cell {key}: {decided[key]['chapter']} and {c['chapter']}")
        decided[key] = c
    rows = [decided.get((p, e)) or cell(p, e, "not tested") for p in PROPERTIES for e in EVIDENCE]
    grid = pd.DataFrame(rows, columns=CELL_COLUMNS)
    grid.attrs["premise_readings"] = sweep_report.premise_readings(a["sweep"]) + pretrained_report.premise_readings(
        a["pretrained"])
    grid.attrs["survival_earlier"], grid.attrs["survival_undecided"] = rivals_report.survival_readings(a["rivals"])
    return grid


def cell_href(chapter: str, label: str = "", suffix: str = ".html") -> str:
    """The address of a grid cell's section, relative to a page of ``chapters/`` (the closing table's
    links and the verdicts figure's).

    >>> cell_href("12_causal_test", "sec-ch12-decoder"), cell_href("13_rival_accounts")
    ('12_causal_test.html#sec-ch12-decoder', '13_rival_accounts.html')
    """
    return f"{chapter}{suffix}" + (f"#{label}" if label else "")


def closing_table(grid, suffix: str = ".html") -> pd.DataFrame:
    """The closing page's table: one row per cell of :func:`verdict_grid` that tests its property, the
    rivals column apart (:func:`survival_table`).

    Columns: ``property`` (its name on its first row only), ``line of evidence`` (with its chapter),
    ``verdict`` (the cell's :data:`~tanbias.lab.analysis.verdicts.CATEGORIES` word), ``the rule's word`` (the word the chapter's rule
    gives, which decides the verdict), ``kind`` (the kind of anisotropy it reads, :data:`~tanbias.lab.analysis.verdicts.ANISOTROPY_KINDS`, ``none`` for not anisotropy), ``rule`` (:data:`~tanbias.lab.analysis.verdicts.RULES`) and
    ``qualifier`` (what the verdict needs beside it, ``""`` where nothing). ``attrs["links"]``:
    ``{"property": hrefs, "line of evidence": hrefs}``, the closing page's section of the property and
    the section that decides the cell (``suffix`` turns a chapter's file stem into its page), for
    :func:`tanbias.book.tables.format_table`'s ``links``.

    >>> rows = [{"property": p, "evidence": e, "word": "not tested", "category": "not tested", "chapter": "x",
    ...          "label": "", "qualifier": "", "rule": "", "anisotropy": ""} for p in PROPERTIES for e in EVIDENCE]
    >>> rows[1].update(word="contradicted", category="against", chapter="08_eurobert_vs_decoder", label="sec-ch8-link2",
    ...                rule="correlational", anisotropy="not anisotropy")
    >>> import pandas as pd
    >>> t = closing_table(pd.DataFrame(rows))
    >>> t.iloc[0].to_dict()["verdict"], t.iloc[0]["the rule's word"], t.attrs["links"]["line of evidence"]
    ('against', 'contradicted', ['08_eurobert_vs_decoder.html#sec-ch8-link2'])
    """
    import pandas as pd

    tested = grid[(grid["word"] != "not tested") & (grid["evidence"] != "rivals")]
    rows, seen = [], set()
    for cell in tested.itertuples():
        chapter = int(cell.chapter[:2]) if cell.chapter[:2].isdigit() else None
        rows.append({"property": "" if cell.property in seen else PROPERTIES[cell.property],
                     "line of evidence": EVIDENCE[cell.evidence][0] + (f", ch. {chapter}" if chapter else ""),
                     "verdict": cell.category, "the rule's word": cell.word,
                     "kind": "none" if cell.anisotropy == "not anisotropy" else cell.anisotropy, "rule": cell.rule,
                     "qualifier": cell.qualifier})
        seen.add(cell.property)
    table = pd.DataFrame(rows, columns=["property", "line of evidence", "verdict", "the rule's word", "kind",
                                        "rule", "qualifier"])
    table.attrs["links"] = {
        "property": [f"#sec-end-{p}" if name else "" for p, name in zip(tested["property"], table["property"])],
        "line of evidence": [cell_href(c, lab, suffix) for c, lab in zip(tested["chapter"], tested["label"])]}
    return table


def survival_table(grid) -> pd.DataFrame:
    """The rivals column of :func:`verdict_grid`: for each property whose verdicts chapter 13 re-reads
    (not the row of the rival accounts, which sums these up), ``what is re-read`` and ``against the rivals`` (a word of :data:`~tanbias.lab.analysis.verdicts.SURVIVAL_WORDS`, or ``interim`` /
    ``not yet tested`` while the rivals experiment is interim). Those words judge verdicts, not the
    property, so they stand apart from the closing table's verdicts.

    >>> import pandas as pd
    >>> g = pd.DataFrame([{"property": "balancing", "evidence": "rivals", "word": "partly survives"},
    ...                   {"property": "early", "evidence": "rivals", "word": "not tested"}])
    >>> t = survival_table(g).iloc[0]
    >>> t["property"], t["against the rivals"]
    ('weaker under balancing', 'partly survives')
    """
    import pandas as pd

    cells = grid[(grid["evidence"] == "rivals") & (grid["word"] != "not tested") & grid["property"].isin(list(_RE_READ))]
    earlier = grid.attrs.get("survival_earlier", {})
    undecided = grid.attrs.get("survival_undecided", {})
    return pd.DataFrame([{"property": PROPERTIES[p], "what is re-read": _RE_READ[p], "against the rivals": w,
                          "re-readings that cannot decide": undecided.get(p, 0),
                          "by the earlier rule": earlier.get(p, "–")}
                         for p, w in zip(cells["property"], cells["word"])],
                        columns=["property", "what is re-read", "against the rivals", "re-readings that cannot decide",
                                 "by the earlier rule"])


#: the cells each headline word of :func:`headline_words` reads (the premise: every decoder's reading, the lab's
#: and the released ones): the closing page's figure of the headline effects draws their deciding effects
HEADLINE_CELLS = {"premise": (("premise", "lab"), ("premise", "released")), "alignment": (("mechanisms", "lab"),),
                  "causal_decoder": (("mechanisms", "causal_decoder"),),
                  "causal_encoder": (("mechanisms", "causal_encoder"),), "early": (("early", "lab"),),
                  "reinforcing": (("reinforcing", "derivation"),), "balancing": (("balancing", "knobs"),),
                  "adaptive": (("adaptive", "knobs"),)}


def headline_words(grid) -> dict:
    """The single words the closing page and the introduction glue, from :func:`verdict_grid`:
    ``premise`` (every decoder's reading, the lab's and the released ones, by :func:`~tanbias.lab.analysis.verdicts.property_word`),
    ``alignment`` (the lab's), ``causal_decoder`` and ``causal_encoder`` (the surgery's),
    ``early`` (the lab's), ``reinforcing`` (the derivation's),
    ``balancing`` (the frequency knobs') and ``adaptive`` (the frequency knobs'). Whether the
    verdicts survive the rival accounts is the grid's ``("rivals", "rivals")`` cell, two words."""
    g = grid.set_index(["property", "evidence"])["word"]
    out = {key: g[cells[0]] for key, cells in HEADLINE_CELLS.items()}
    out["premise"] = property_word(grid.attrs["premise_readings"])
    for key, word in out.items():
        if len(word.split()) != 1:
            raise ValueError(f"headline word {key}={word!r} is not one word: glue single words only "
                             "(DESIGN.md, 'Chapters'); state it in the Markdown beside a check instead.")
    return out


#: the introduction's table: the cells of :data:`HEADLINE_CELLS` (the released premise and the derivations
#: apart: their lines quote no interval), with the early window's causal share beside the lab's peak
HEADLINE_ROWS = (("premise", "lab"), ("mechanisms", "lab"), ("mechanisms", "causal_decoder"),
                 ("mechanisms", "causal_encoder"), ("early", "lab"), ("early", "causal_decoder"),
                 ("balancing", "knobs"), ("adaptive", "knobs"))


def headline_table(records) -> pd.DataFrame:
    """The introduction's verdicts with the effect that decides each: the rows :data:`HEADLINE_ROWS` of
    :func:`verdict_records`, as the closing page's CSV file gives them. Columns ``property``, ``line of
    evidence``, ``verdict`` (the top-level word), ``the rule's word``, ``deciding effect`` (with its
    interval) and ``measure``.

    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_tuples([*HEADLINE_ROWS, ("rivals", "rivals")])
    >>> cols = ["property", "line of evidence", "verdict", "the rule's word", "deciding effect", "measure"]
    >>> rec = pd.DataFrame([[str(i)] * 6 for i in range(len(idx))], index=idx, columns=cols)
    >>> t = headline_table(rec)
    >>> len(t), list(t.columns) == cols, t.iloc[-1]["verdict"]
    (8, True, '7')
    """
    missing = [cell for cell in HEADLINE_ROWS if cell not in records.index]
    if missing:
        raise KeyError(f"verdict_records has no row for {missing}: HEADLINE_ROWS names cells it does not give")
    def three(match):                   # the book's tables show 3 significant digits at most
        sign, digits = match.group(1), match.group(2)
        return sign + format_number(float(digits), 3)

    cols = ["property", "line of evidence", "verdict", "the rule's word", "deciding effect", "measure"]
    out = records.loc[list(HEADLINE_ROWS), cols].reset_index(drop=True)
    out["deciding effect"] = [re.sub(rf"([+{MINUS}-]?)(\d+\.\d+)", three, str(e)) for e in out["deciding effect"]]
    return out


# --------------------------------------------------------------------------- every verdict with its deciding effect
def chapter_numbers(a: dict) -> dict:
    """Every number the closing page glues from the experiments' reports, under its chapter's prefix: each
    report of :data:`REPORTS` as ``ch<chapter>_<key>`` (its ``numbers``), chapter 9's measurements of the
    released models as ``ch9_<key>``. The same numbers, under the same keys, as each chapter glues them.

    >>> n = chapter_numbers(analyses())                                           # doctest: +SKIP
    >>> n["ch12_decoder_proxy_control"] < 1                                       # doctest: +SKIP
    True
    """
    out = {f"ch{EXPERIMENTS[name].chapter}_{k}": v for name, report in REPORTS.items()
           for k, v in report.numbers(a[name]).items()}
    out.update({f"ch9_{k}": v for k, v in pretrained_report.numbers(a["pretrained"]).items()})
    return out


#: the value each scale's rule compares an interval with: no change, or the rule's threshold (a peak within
#: the first 30 % of training, rule.early's "most": half the whole-run effect)
_REFERENCE = {"ratio": 1.0, "difference": 0.0, "rho": 0.0, "percent": 100 * EARLY_FRAC, "share": EARLY_THRESHOLD}


class Effect(NamedTuple):
    """One reading a verdict's rule reads, as its chapter glues it: ``key`` (the glue key of the estimate,
    with the chapter's prefix; ``lo_key`` and ``hi_key`` those of its interval, ``None`` where it has
    none), ``spec`` (the format spec the chapters quote it with), ``scale`` (one of ``ratio``,
    ``difference``, ``rho``, ``percent``, ``share``), ``measure`` and ``label`` (what it reads, in words),
    ``level`` (of the interval) and the numbers themselves: ``estimate``, ``lo``, ``hi`` (NaN without
    an interval); ``reference``, the value its rule compares the interval with (no change: ×1 for a
    ratio, 0 for a difference or a correlation; a rule's threshold: the first 30 % of training for a
    peak, half the effect for a share)."""
    label: str
    measure: str
    scale: str
    key: str
    lo_key: str | None
    hi_key: str | None
    spec: str
    level: float
    estimate: float
    lo: float
    hi: float
    reference: float = np.nan

    @classmethod
    def from_record(cls, r) -> "Effect":
        """The deciding effect of a row ``r`` of :func:`verdict_records`."""
        return cls(r["reading"], r["measure"], r["scale"], r["glue key"], r["low key"] or None, r["high key"] or None,
                   r["glue spec"], float(r["interval level"]) if np.isfinite(r["interval level"]) else 0.95,
                   float(r["estimate"]), float(r["low"]), float(r["high"]), float(r["compared with"]))

    def reference_text(self) -> str:
        """The reference value as the figure labels it: ``×1``, ``0``, ``30 %``, ``50%``.

        >>> Effect("", "", "ratio", "k", None, None, ".2f", 0.95, 1.0, np.nan, np.nan, 1.0).reference_text()
        '×1'
        """
        return {"ratio": f"×{self.reference:g}", "percent": f"{self.reference:g} %",
                "share": format_spec(self.reference, ".0%")}.get(self.scale, format_spec(self.reference, "g"))

    def text(self, label: bool = True) -> str:
        """The effect as a reader quotes it: ``×0.78 [0.73, 0.84]`` for a ratio, ``−0.019 [−0.036, −0.002]``
        for a difference, a level other than 95 % named, the minus sign U+2212
        (:func:`tanbias.numerals.format_spec`); ``label`` puts what it reads in front.

        >>> e = Effect("decoder", "mean cosine, proxy / control", "ratio", "k", "k_lo", "k_hi", ".2f", 0.95,
        ...            0.7821, 0.7256, 0.8430)
        >>> e.text(), e._replace(scale="difference", spec="+.3f", estimate=-0.0192, lo=-0.0364, hi=-0.0019,
        ...                      level=0.975).text(label=False)
        ('decoder: ×0.78 [0.73, 0.84]', '−0.019 [−0.036, −0.002] (97.5 % interval)')
        """
        def f(v):
            return format_spec(v, self.spec)

        head = {"ratio": "×", "rho": "ρ = "}.get(self.scale, "")
        unit, tail = (" %", " of training") if self.scale == "percent" else ("", "")
        if np.isfinite(self.lo) and np.isfinite(self.hi):
            body = f"{head}{f(self.estimate)}{unit} [{f(self.lo)}{unit}, {f(self.hi)}{unit}]{tail}"
            if abs(self.level - 0.95) > 1e-9:
                body += f" ({format_spec(100 * self.level, 'g')} % interval)"
        else:
            body = f"{head}{f(self.estimate)}{unit}{tail} (no interval)"
        return f"{self.label}: {body}" if label and self.label else body


def _effect(n: dict, label: str, measure: str, scale: str, key: str, spec: str, level: float = 0.95,
            lo: str | None = "", hi: str | None = "") -> Effect:
    """An :class:`Effect` read from the glued numbers ``n`` (:func:`chapter_numbers`): the interval's keys are
    ``<key>_lo`` and ``<key>_hi`` unless given (``None``: the reading has no interval)."""
    lo = f"{key}_lo" if lo == "" else lo
    hi = f"{key}_hi" if hi == "" else hi
    return Effect(label, measure, scale, key, lo, hi, spec, level, float(n[key]),
                  float(n[lo]) if lo else np.nan, float(n[hi]) if hi else np.nan, _REFERENCE[scale])


_COSINE = "mean cosine, proxy / control"


def _deciding_effects(prop: str, evidence: str, n: dict, a: dict) -> list[Effect]:
    """The readings the rule of the cell ``(prop, evidence)`` reads, the one that decides its word first
    (every chapter's rule: the chapters, and the glossary's verdict words); ``[]`` where no measured
    effect decides it (a derivation, or a survival word gathered from many re-readings)."""
    cell = (prop, evidence)
    if cell == ("premise", "lab"):
        return [_effect(n, "the lab's decoder", "Spearman ρ(log frequency, t) at the last layer", "rho",
                        "ch8_rho_decoder_natural", "+.2f")]
    if cell == ("premise", "released"):
        # one reversed reading makes the premise contradicted: the reversed decoder first
        pv = pretrained_report.premise_verdicts(a["pretrained"])["premise, last layer"]
        models = sorted((("smollm2-135m", "smollm2", "SmolLM2-135M"), ("gemma3-270m", "gemma3", "Gemma 3 270M")),
                        key=lambda m: pv[(m[0], "English")] != "reversed")
        return [_effect(n, f"{name}, English text", "Spearman ρ(log frequency, t) at the last layer", "rho",
                        f"ch9_{short}_en_t_corpus_rho", "+.2f", lo=f"ch9_{short}_en_t_corpus_lo",
                        hi=f"ch9_{short}_en_t_corpus_hi") for _, short, name in models]
    if cell == ("mechanisms", "lab"):
        # supported only when every cell is: the weakest cell (lowest lower bound) first
        cells = [_effect(n, f"{kind}, {regime} data", "late enrichment of the gradients in the tangent proxy "
                         "(×1: a random subspace)", "ratio", f"ch8_{kind}_{regime}_late", ".2f")
                 for kind in ("decoder", "encoder") for regime in ("natural", "balanced")]
        return sorted(cells, key=lambda e: e.lo)
    if cell == ("mechanisms", "released"):
        return [_effect(n, f"{name} (a random copy: ×{format_spec(n[f'ch9_{short}_enrich_null_median'], '.2f')})",
                        "median enrichment over the inner layers (×1: a random subspace)", "ratio",
                        f"ch9_{short}_enrich_trained_median", ".2f", lo=None, hi=None)
                for short, name in (("smollm2", "SmolLM2-135M"), ("gemma3", "Gemma 3 270M"))]
    if evidence.startswith("causal_"):
        kind = evidence.removeprefix("causal_")
        ca = a["causal"]
        lowers = ca.words[kind] in ("supported", "not specific")
        whole = _effect(n, f"{kind}, whole-run surgery", _COSINE, "ratio", f"ch12_{kind}_proxy_control", ".2f")
        if prop == "mechanisms":
            return [whole._replace(label=kind)]
        if prop == "reinforcing":
            end = _effect(n, f"{kind}, at the window's end", "mean cosine, early arm / control", "ratio",
                          f"ch12_{kind}_gap_end", ".2f", level=causal_report.LEVELS["reinforcing"])
            change = _effect(n, f"{kind}, after the window", "change of the early arm's gap after its window",
                             "ratio", f"ch12_{kind}_gap_d", ".2f", level=causal_report.LEVELS["reinforcing"])
            # the rule reads a gap at the window's end first: where there is none, that decides the word
            return [end, change] if ca.reinforcing[kind]["word"] == "not assessable" else [change, end]
        if prop == "early":
            share = _effect(n, kind, "the early arm's share of the whole-run surgery's effect on the mean cosine",
                            "share", f"ch12_{kind}_early_share", ".0%", level=causal_report.LEVELS["early"])
            # where the whole-run surgery does not lower the mean cosine there is no effect to share
            return [share] if lowers else [whole]
        if prop == "adaptive":
            cost = _effect(n, kind, "held-out loss, proxy − control [nats]", "difference", f"ch12_{kind}_cost",
                           "+.3f", level=causal_report.LEVELS["cost"])
            return [cost] if lowers else [whole]
        if cell == ("rivals", "causal_decoder"):
            return [_effect(n, "decoder, tied embeddings", "mean cosine, tied / control", "ratio",
                            "ch12_decoder_tied_control", ".2f")]
    if evidence == "horizon":
        # the long part at 1,280 steps: the statement's account reads the surgery under either head, the
        # unigram-first account the head (each ratio's interval is 95 %, unadjusted)
        def long(contrast, label, measure):
            return _effect(n, label, measure, "ratio", f"ch14_{contrast}_decoder_1280", ".2f")

        if prop == "mechanisms":
            return [long("surgery_standard", "decoder, standard head", _COSINE),
                    long("surgery_unigram", "decoder, unigram head", _COSINE),
                    _effect(n, "decoder, standard head, no surgery", "variance null: chapter 7's enrichment over "
                            "what the activations' variance gives (×1: variance alone)", "ratio",
                            "ch14_variance_null_decoder", ".2f")]
        return [long("head_final", "decoder, no surgery", "mean cosine, unigram head / standard head"),
                _effect(n, "decoder, no surgery", "the mean's share of the squared norm, unigram head / standard head",
                        "ratio", "ch14_head_final_mean_share_decoder", ".2f")]
    if cell == ("early", "lab"):
        return [_effect(n, "every lab run", "where the enrichment peaks, in % of training (the rule: its upper "
                        "bound within the first 30 %)", "percent", "ch8_peak_frac", ".0f"),
                _effect(n, "every lab run", "enrichment at the last step / at its peak", "ratio",
                        "ch8_log_late_over_peak", ".2f")]
    if cell == ("balancing", "lab"):
        return [_effect(n, kind, "late enrichment, balanced / natural data", "ratio",
                        f"ch8_eff_balancing_{kind}_late", ".2f") for kind in ("decoder", "encoder")]
    if cell == ("balancing", "knobs"):
        return [_effect(n, "decoder, at matched training progress", "IsoScore*, change from no aliasing to the "
                        "most (lower: more anisotropic)", "difference", "ch11_alias_iso_decoder_progress", "+.3f")]
    if cell == ("adaptive", "knobs"):
        return [_effect(n, "every run-step independent (the registered rule)", "held-out loss [nats] per "
                        "within-cell SD more of the participation ratio", "difference", "ch10_adapt_loss_within",
                        "+.4f", lo="ch10_adapt_loss_naive_lo", hi="ch10_adapt_loss_naive_hi")]
    return []


def _seeds(prop: str, evidence: str, a: dict) -> dict:
    """``{kind: seeds}`` that read the cell: the complete seeds of the experiment behind it, for the
    architectures it reads; ``{}`` for a derivation or the released models."""
    if evidence in ("derivation", "released"):
        return {}
    if evidence.startswith("causal_"):
        kind = evidence.removeprefix("causal_")
        return {kind: len(a["causal"].seeds[kind])}
    if evidence == "lab":
        runs = a["sweep"].runs.values()
        kinds = ("decoder",) if prop == "premise" else KINDS
        return {k: len({r.config.seed for r in runs if r.config.kind == k}) for k in kinds}
    if evidence == "knobs" and prop == "adaptive":
        t = a["dose"].table
        return {k: int(t.loc[t["kind"] == k, "seed"].nunique()) for k in KINDS}
    if evidence == "knobs":
        return {k: len(a["alias"].seeds[k]) for k in KINDS}
    if evidence == "horizon":
        return {"decoder": horizon_report.long_seeds(a["horizon"], "decoder")}
    return {k: len(a["rivals"].analysis.seeds[k]) for k in KINDS}


#: the experiment whose runs read each line of evidence (its registered training steps are the horizon)
_EXPERIMENT_OF = {"lab": "sweep", "causal_decoder": "causal", "causal_encoder": "causal", "rivals": "rivals",
                  "horizon": "horizon"}


def _horizon(prop: str, evidence: str) -> int | None:
    """The training steps at which the cell is read: those of the runs of the experiment behind it
    (its Design's config), ``None`` for a derivation or a released model's final checkpoint."""
    name = _EXPERIMENT_OF.get(evidence) or ({"adaptive": "dose"}.get(prop, "alias") if evidence == "knobs" else None)
    if name is None:
        return None
    d = EXPERIMENTS[name]
    kind = "decoder"
    return int(d.config(kind, d.levels[kind][0], d.seeds[kind][0]).steps)


def verdict_records(a: dict, grid, horizons: dict | None = None, suffix: str = ".html") -> pd.DataFrame:
    """Every verdict the closing page shows, one record each, with the effect that decides it: the rows of
    :func:`closing_table` (one per tested cell of :func:`verdict_grid`, the rivals column apart), then the
    rows of :func:`survival_table` (one per framed cell of the rivals column). The closing page writes it
    as the verdicts' CSV file, and the introduction's verdict lines read their numbers from it.

    Parameters
    ----------
    a : dict
        :func:`analyses`.
    grid : pandas.DataFrame
        :func:`verdict_grid` of ``a``.
    horizons : dict, optional
        ``{(property, evidence): steps}``: a cell read at another number of training steps than its
        experiment's runs (by default every lab cell is read at its runs' last step, 320 today).
    suffix : str
        What turns a chapter's file stem into its page (the ``link`` column, as the closing table's).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(property key, evidence key)`` (the keys of :data:`~tanbias.lab.analysis.verdicts.PROPERTIES` and :data:`~tanbias.lab.analysis.verdicts.EVIDENCE`),
        in the page's order. The page's words, as its two tables give them: ``property`` (on every row),
        ``line of evidence``, ``verdict`` (the word of :data:`~tanbias.lab.analysis.verdicts.CATEGORIES`; a survival row: its word of
        :data:`~tanbias.lab.analysis.verdicts.SURVIVAL_WORDS`), ``the rule's word``, ``kind`` (of anisotropy), ``rule`` (:data:`~tanbias.lab.analysis.verdicts.RULES`:
        registered, added after the data, ...), ``qualifier``; a survival row's ``what is re-read``,
        ``re-readings that cannot decide`` and ``by the earlier rule`` (``""`` and NA on other rows).
        The deciding effect, the first reading its rule reads (``_deciding_effects``): ``deciding
        effect`` (as a reader quotes it, e.g. ``decoder: ×0.78 [0.73, 0.84]``; where no measured effect
        decides the word, why: a derivation, or many re-readings), ``reading`` (what it reads: ``decoder``),
        ``measure``, ``scale`` (:class:`Effect`'s), ``estimate``, ``low``, ``high`` and ``interval level``
        (0.95; NaN without an interval), ``compared with`` (the value its rule compares it with: 1 for a
        ratio, 0 for a difference, or a threshold), ``other
        readings`` (the others the rule reads, quoted the same way), ``glue key`` and ``glue spec``
        (the estimate's key among the page's glued numbers, :func:`chapter_numbers`, and the format
        its chapter quotes it with: ``{eval}`glued["<key>:<spec>"]```; its interval's keys are
        ``<key>_lo`` and ``<key>_hi`` except where ``low key`` and ``high key`` say otherwise);
        ``seeds`` (per architecture, in words), ``seeds, decoder`` and ``seeds, encoder`` (NA where
        none), ``horizon`` (training steps at which it is read; NA for a derivation or a released
        model), ``chapter`` (``chapter 12``) and ``link`` (its section, relative to a page of
        ``chapters/``).
    """
    import pandas as pd

    n = chapter_numbers(a)
    horizons = dict(horizons or {})
    table, survival = closing_table(grid, suffix), survival_table(grid)
    tested = grid[(grid["word"] != "not tested") & (grid["evidence"] != "rivals")]
    framed = grid[(grid["evidence"] == "rivals") & (grid["word"] != "not tested") & grid["property"].isin(list(_RE_READ))]
    rows, keys = [], []
    for (_, cell), page in zip(tested.iterrows(), table.to_dict("records")):
        rows.append({**page, "property": PROPERTIES[cell["property"]], "what is re-read": "",
                     "re-readings that cannot decide": pd.NA, "by the earlier rule": ""})
        keys.append(cell)
    for (_, cell), page in zip(framed.iterrows(), survival.to_dict("records")):
        rows.append({"property": page["property"], "line of evidence": f"{EVIDENCE['rivals'][0]}, ch. 13",
                     "verdict": page["against the rivals"], "the rule's word": cell["word"],
                     "kind": "none" if cell["anisotropy"] == "not anisotropy" else cell["anisotropy"],
                     "rule": cell["rule"], "qualifier": cell["qualifier"], **{c: page[c] for c in (
                         "what is re-read", "re-readings that cannot decide", "by the earlier rule")}})
        keys.append(cell)
    for row, cell in zip(rows, keys):
        prop, evidence = cell["property"], cell["evidence"]
        effects = _deciding_effects(prop, evidence, n, a)
        first = effects[0] if effects else None
        seeds = _seeds(prop, evidence, a)
        steps = horizons.get((prop, evidence), _horizon(prop, evidence))
        number = int(cell["chapter"][:2]) if cell["chapter"][:2].isdigit() else None
        why = ("none: a derivation, checked in its chapter" if cell["rule"] == "derivation" else
               "none: each re-reading is decided by its own interval (chapter 13's survival table)")
        row.update({
            "deciding effect": first.text() if first else why, "reading": first.label if first else "",
            "measure": first.measure if first else "", "scale": first.scale if first else "",
            "estimate": first.estimate if first else np.nan, "low": first.lo if first else np.nan,
            "high": first.hi if first else np.nan,
            "interval level": first.level if first and np.isfinite(first.lo) else np.nan,
            "compared with": first.reference if first else np.nan,
            "other readings": "; ".join(f"{e.text()} ({e.measure})" if e.measure != first.measure else e.text()
                                        for e in effects[1:]),
            "glue key": first.key if first else "", "glue spec": first.spec if first else "",
            "low key": (first.lo_key or "") if first else "", "high key": (first.hi_key or "") if first else "",
            "seeds": ", ".join(f"{k} {v}" for k, v in seeds.items()) or "none (no training run)",
            "seeds, decoder": seeds.get("decoder", pd.NA), "seeds, encoder": seeds.get("encoder", pd.NA),
            "horizon": pd.NA if steps is None else int(steps),
            "chapter": f"chapter {number}" if number else "", "link": cell_href(cell["chapter"], cell["label"], suffix)})
    out = pd.DataFrame(rows, columns=RECORD_COLUMNS)
    for column in ("re-readings that cannot decide", "seeds, decoder", "seeds, encoder", "horizon"):
        out[column] = out[column].astype("Int64")
    out.index = pd.MultiIndex.from_tuples([(c["property"], c["evidence"]) for c in keys],
                                          names=["property key", "evidence key"])
    return out


#: the columns of :func:`verdict_records`, in order (the CSV file's)
RECORD_COLUMNS = ["property", "line of evidence", "verdict", "the rule's word", "kind", "rule", "qualifier",
                  "what is re-read", "re-readings that cannot decide", "by the earlier rule", "deciding effect",
                  "reading", "measure", "scale", "estimate", "low", "high", "interval level", "compared with",
                  "other readings", "seeds", "seeds, decoder",
                  "seeds, encoder", "horizon", "chapter", "link", "glue key", "glue spec", "low key", "high key"]


def verdicts_csv(records, base: str = "") -> str:
    """:func:`verdict_records` as the CSV file the closing page offers: one row per record, every column
    but the glue keys (``glue spec`` and the keys are for the book's own pages), the links made absolute
    with ``base`` (the book's address, ending with ``/``), numbers as a program reads them (full
    precision, hyphen-minus), words as the page shows them (the deciding effect with U+2212).

    >>> import pandas as pd
    >>> r = pd.DataFrame([{c: "" for c in RECORD_COLUMNS} | {"estimate": -0.5, "link": "x.html#s"}])
    >>> verdicts_csv(r, "https://b/").splitlines()[1].count(",-0.5,"), "https://b/chapters/x.html#s" in verdicts_csv(r, "https://b/")
    (1, True)
    """
    shown = records.reset_index(drop=True).drop(columns=["glue key", "glue spec", "low key", "high key"])
    shown = shown.rename(columns={"horizon": "horizon (training steps)"})
    shown["link"] = [f"{base}chapters/{h}" if h else "" for h in shown["link"]]
    return shown.to_csv(index=False, lineterminator="\n")
