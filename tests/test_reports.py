"""The report functions: each returns exactly the numbers its chapters quote, and only numbers and words.

A report is glued by one or more chapters under a prefix (``ch8_`` ...); a key is
*quoted* when the chapter's prose reads it (``{eval}`glued["ch8_key..."]```) or its
code reads it from the report's dict by name (``numbers["key"]``). Every key a report
returns is quoted by a chapter that glues it, and every key a chapter quotes under a
prefix comes from a report it glues: no dead number, no missing one.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tanbias.lab import zoo
from tanbias.lab.analysis import (alias, alias_design, alias_report, causal, causal_design, causal_report, dose,
                                  dose_design, dose_report, findings, pretrained_report, registered, rivals,
                                  rivals_design, rivals_report, sweep, sweep_report)
from tanbias.lab.analysis.pretrained import load_pretrained
from tanbias.lab.experiments import DOSE, EXPERIMENTS

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
CODE = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)


def _quoted(chapter: str, prefix: str, names=("numbers",), prose: bool = True) -> set[str]:
    """Keys ``prefix + k`` the chapter's prose quotes (``prose``), and keys its code reads from the
    dicts ``names``."""
    text = (CHAPTERS / f"{chapter}.md").read_text()
    code = "\n".join(CODE.findall(text))
    keys = {k for k in re.findall(r'glued\["([A-Za-z0-9_]+)', CODE.sub("", text)) if k.startswith(prefix)} \
        if prose else set()
    for name in names:
        keys |= {prefix + k for k in re.findall(rf'\b{name}\["([A-Za-z0-9_]+)"\]', code)}
    return keys


def _glued_in_code(chapter: str) -> set[str]:
    """Keys a chapter's code glues by name itself (``glue("key", ...)``)."""
    return set(re.findall(r'\bglue\("([A-Za-z0-9_]+)"', "\n".join(CODE.findall((CHAPTERS / f"{chapter}.md").read_text()))))


@pytest.fixture(scope="module")
def committed():
    sw = sweep_report.analyse_sweep()
    dose_runs = registered.load(DOSE)          # read once: the dose report and chapter 12's power read them
    # chapters 10 and 11 read the dose analysis at its joint Holm family, with the aliasing knob's rows
    da_alone = dose.analyse_dose(dose_runs)
    aa, da = alias.analyse_alias(dose_analysis=da_alone)
    tables = {name: load_pretrained(name) for name in zoo.ZOO}
    expected, power = dose_design.expected_concentration(), dose_design.power_analysis()
    # one line per report; a registered experiment's two (``<name>_design``, ``<name>``) are glued under
    # its chapter's prefix (GLUED_BY)
    numbers = {
        "run_pair": {"ch7_" + k: v for k, v in sweep_report.run_pair_numbers(sweep.load_runs()).items()},
        "sweep": {"ch8_" + k: v for k, v in sweep_report.sweep_numbers(sw).items()},
        "claims": {"end_" + k: v for k, v in sweep_report.claim_numbers(sw).items()},
        "pretrained": pretrained_report.pretrained_numbers(tables),
        "dose_design": dose_design.design_numbers(expected, power),
        "dose": dose_report.dose_numbers(da),
        "alias_design": alias_design.design_numbers(alias_design.expected_concentration(),
                                                    alias_design.power_analysis(da_alone.responses)),
        "alias": alias_report.alias_numbers(aa),
        "causal_design": causal_design.design_numbers(causal_design.power_analysis(table=da_alone.table)),
        "causal": causal_report.causal_numbers(causal.analyse_causal()),
        "rivals_design": rivals_design.design_numbers(rivals_design.power_analysis()),
        "rivals": {**rivals_report.numbers(rivals.analyse_rivals()),
                   **rivals_report.init_numbers(rivals_report.initialisation()),
                   **rivals_report.transient_numbers(causal.analyse_causal().trajectory)},
        "findings": {"verdict_" + k: v for k, v in findings.headline_words(findings.verdict_grid(
            sw, tables, da, aa, causal.analyse_causal(), rivals.analyse_rivals())).items()},
    }
    prefix = {r: GLUED_BY[r][0][1] for r in _REGISTERED_REPORTS}
    return {"analysis": da, **{r: {prefix.get(r, "") + k: v for k, v in n.items()} for r, n in numbers.items()}}


def _chapter(number: int) -> str:
    (path,) = CHAPTERS.glob(f"{number:02d}_*.md")
    return path.stem


#: each registered experiment's reports: ``<name>_design`` (glued by its chapter) and ``<name>`` (by its
#: chapter and the closing page), under its chapter's prefix; read from the registry (an experiment no
#: chapter reads yet, ``chapter=None``, has none)
_REGISTERED_REPORTS = {f"{d.name}{part}": d for d in EXPERIMENTS.values() if d.registration and d.chapter
                       for part in ("_design", "")}
#: report -> the chapters that glue it, with the prefix
GLUED_BY = {"run_pair": [("07_alignment_test", "ch7_")], "sweep": [("08_eurobert_vs_decoder", "ch8_")],
            "claims": [("conclusions", "end_")],
            # the book's verdicts at a glance: the closing page and the introduction (beside chapters/)
            "findings": [("conclusions", "verdict_"), ("../intro", "verdict_")],
            "pretrained": [("09_pretrained_models", "ch9_"), ("conclusions", "ch9_")],
            **{r: [(_chapter(d.chapter), f"ch{d.chapter}_"), *([("conclusions", f"ch{d.chapter}_")]
                                                               if r == d.name else [])]
               for r, d in _REGISTERED_REPORTS.items()}}
#: report -> the chapters that read it by name without gluing it: (chapter, prefix, dict name)
READ_BY = {"sweep": [("09_pretrained_models", "ch8_", "lab")]}


@pytest.mark.parametrize("report", list(GLUED_BY))
def test_a_report_returns_only_numbers_its_chapters_quote(committed, report):
    quoted = set().union(*(_quoted(c, p) for c, p in GLUED_BY[report]),
                         *(_quoted(c, p, names=(n,), prose=False) for c, p, n in READ_BY.get(report, ())))
    extra = set(committed[report]) - quoted
    assert not extra, f"{report} returns numbers no chapter quotes: {sorted(extra)}"


@pytest.mark.parametrize("chapter,prefix", sorted({cp for cps in GLUED_BY.values() for cp in cps}))
def test_every_number_a_chapter_quotes_comes_from_a_report_it_glues(committed, chapter, prefix):
    given = set().union(*(committed[r] for r, cps in GLUED_BY.items() if (chapter, prefix) in cps))
    missing = _quoted(chapter, prefix) - given - _glued_in_code(chapter)
    assert not missing, f"{chapter} quotes numbers no report gives it: {sorted(missing)}"


@pytest.mark.parametrize("report", list(GLUED_BY))
def test_every_value_is_a_number_or_one_word(committed, report):
    for key, value in committed[report].items():
        if isinstance(value, str):
            assert len(value.split()) == 1, (key, value)
        elif isinstance(value, tuple):
            assert all(isinstance(v, (int, float, np.integer, np.floating)) for v in value), (key, value)
        else:
            assert isinstance(value, (int, float, np.integer, np.floating)), (key, type(value))


def test_the_chapters_glue_no_sentence():
    """No chapter glues a value in its own code that is not a number or one word."""
    for path in sorted(CHAPTERS.glob("*.md")):
        assert "Word(" not in path.read_text(), path.name
        assert "display=False" not in path.read_text(), path.name


# --------------------------------------------------------------------------- on the smoke sweep
def test_sweep_numbers_on_the_smoke_sweep(loaded):
    sw = sweep_report.analyse_sweep(loaded, controls=())
    r8 = sweep_report.sweep_numbers(sw)
    assert r8["n_runs"] == 8 and r8["n_seeds"] == 2 and r8["L"] == 2
    for key in ("gap_min", "vocab_change_pct", "decoder_q1_eta_d", "rho_decoder_natural",
                "decoder_natural_late", "eff_interaction_late_hi", "peak_frac", "eta_rho_encoder"):
        assert np.isfinite(r8[key]), key
    assert r8["rho_word"] in ("positive", "negative", "indistinguishable")
    assert isinstance(r8["peak_steps"], tuple) and all(isinstance(s, int) for s in r8["peak_steps"])
    assert not any(k.startswith("ctl_") for k in r8)          # no controls given
    # the cell ratios are the exponential of the layer-averaged log enrichment
    c = sw.cells
    row = c[(c["kind"] == "decoder") & (c["regime"] == "natural") & (c["layer"] == "mean")
            & (c["bucket"] == "all") & (c["proxy"] == "frozen") & (c["phase"] == "late")
            & (c["metric"] == "log_enrichment")].iloc[0]
    assert np.isclose(r8["decoder_natural_late"], np.exp(row["mean"]))
    checks = sweep_report.sweep_checks(sw)
    assert set(checks) == {"learns", "flatter", "iso", "architecture_natural", "architecture_balanced"}
    assert set(sweep_report.balancing_words(sw).values()) <= set(sweep.BALANCING_WORDS)
    end = sweep_report.claim_numbers(sw)
    assert end["imbalance"] > 1 and end["params_m"] > 0 and end["peak_pct"] <= end["peak_pct_hi"]
    assert not sweep_report.mechanism_table(sw).empty and not sweep_report.cells_table(sw).empty
    assert len(sweep_report.contrast_table(sw)) == len(sweep.CONTRASTS)


def test_decline_word():
    assert sweep_report.decline_word([0.97, 0.99]) == "stays" and sweep_report.decline_word([0.7, 0.99]) == "falls"


def test_run_pair_numbers_of_the_committed_runs():
    runs = sweep.load_runs()
    n = sweep_report.run_pair_numbers(runs)
    assert n["D"] == 192 and n["r"] == 8 and n["r_over_D"] == pytest.approx(8 / 192)
    assert n["weaker"] in ("encoder", "decoder")
    assert all(n[f"{k}_learns"] in ("below", "above") for k in ("encoder", "decoder"))
    s = sweep.run_summary(runs).set_index(["kind", "proxy"])
    assert n["decoder_frozen_enrichment_late"] == s.loc[("decoder", "frozen"), "enrichment_late"]
    # the findings' summaries are read off the per-architecture numbers
    late = [n["encoder_frozen_enrichment_late"], n["decoder_frozen_enrichment_late"]]
    assert n["late_min"] == min(late) and n["weaker"] == ("encoder", "decoder")[int(np.argmin(late))]
    assert n["decoder_over_encoder_late"] == pytest.approx(late[1] / late[0])
    assert n["decoder_over_encoder_early"] == pytest.approx(
        n["decoder_frozen_enrichment_early"] / n["encoder_frozen_enrichment_early"])
    assert n["peak_pct_max"] == max(n["encoder_peak_pct"], n["decoder_peak_pct"])
    assert n["late_over_peak_max"] == max(n["encoder_late_over_peak"], n["decoder_late_over_peak"])
    for kind in ("encoder", "decoder"):
        assert n[f"{kind}_grows_with_depth"] in ("yes", "no")
        if n[f"{kind}_grows_with_depth"] == "yes":
            assert n[f"{kind}_last_layer_late"] > n[f"{kind}_first_layer_late"]


# --------------------------------------------------------------------------- the checks and verdicts
def test_dose_checks_read_the_intervals_they_name(committed):
    from tanbias.stats import interval_word

    da = committed["analysis"]
    r = da.responses.set_index(["metric", "knob", "kind"]).loc[("log_enrichment_late", "token", "encoder")]
    a = da.association["loss"]
    named = {"enr_token_encoder": (r["end_to_end_lo"], r["end_to_end_hi"]),
             "enr_token_encoder_flat": (r["flat_lo"], r["flat_hi"]),
             "enr_token_encoder_change": (r["change_lo"], r["change_hi"]),
             "enr_token_encoder_progress": (r["progress_lo"], r["progress_hi"]),
             "adapt_loss": (a["lo"], a["hi"]), "adapt_loss_naive": (a["naive_lo"], a["naive_hi"]),
             "adapt_loss_per_run": (a["per_run_lo"], a["per_run_hi"])}
    words = {key: interval_word(*iv) for key, iv in named.items()}
    checks = dose_report.dose_checks(da, words)
    assert [c.words for c in checks] == [(w, w) for w in words.values()] and all(c.passed for c in checks)
    assert [(c.lo, c.hi) for c in checks] == [tuple(map(float, iv)) for iv in named.values()]
    wrong = dose_report.dose_checks(da, {"enr_token_encoder": "positive"})[0]
    assert not wrong.passed
    with pytest.raises(AssertionError):
        wrong.require()
    assert dose_report.balancing_verdict(da) in sweep.PROPERTY_WORDS
    assert dose_report.adaptive_verdict(da) in sweep.PROPERTY_WORDS
    assert set(dose_report.balancing_words(da).values()) <= set(sweep.BALANCING_WORDS)


def test_premise_verdicts_read_the_premise_table(committed):
    """The narrow premise table says, per model and language, what the wide one's interval words say."""
    tables = {name: load_pretrained(name) for name in zoo.ZOO}
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
