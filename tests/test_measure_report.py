"""What the page "Measure your own model" and the command's report read (tanbias.lab.analysis.measure_report):
the findings, the book's models as references, the costs, the token widths, a real trajectory."""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.numerals import format_spec

from tanbias.errors import ParameterError
from tanbias.lab.analysis import measure_report as mr


def test_the_books_models_are_read_as_references():
    """The zoo measured by the command (data/measure/zoo/, every reading) and the lab's final runs (every
    reading a run holds), by relative depth; a source whose files are absent is left out."""
    ref = mr.reference_readings()
    zoo = ref[ref["group"] == "zoo"]
    # the zoo measured by the command: every reading it draws, for every zoo model committed there
    committed = {p.parent.name for p in mr.ZOO_MEASURED_DIR.glob("*/manifest.json")}
    assert committed and set(zoo["source"]) == committed <= set(mr.zoo.ZOO)
    assert set(zoo["reading"]) == set(mr.reference_columns())
    assert zoo.groupby("source")["reading"].nunique().eq(len(mr.reference_columns())).all()
    lab = ref[ref["group"] == "lab"]
    assert set(lab["source"]) == set(mr.REFERENCE_RUNS.values())
    assert set(lab["reading"]) == {r for r, col in mr.reference_columns().items() if col}
    assert "participation_ratio" in set(lab["reading"])          # from anisotropy.csv, as IsoScore*
    assert ref["depth"].between(0, 1).all() and ref.groupby(["source", "reading"])["depth"].max().eq(1).all()
    assert mr.reference_readings(zoo_names=["no-such-model"], runs={"no-such-run": "x"}).empty


def test_the_install_lines_read_the_projects_own_pins():
    import re
    import tomllib

    from tanbias.lab.runs import ROOT

    got = mr.installation()
    assert got["python"] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    req = (ROOT / "requirements.txt").read_text()
    for name in ("torch", "transformers"):
        assert re.search(rf"^{name}=={re.escape(got[name])}\s*$", req, flags=re.M), name


def test_the_zoo_costs_are_chapter_9s_manifests():
    from tanbias.lab.analysis.pretrained import load_pretrained

    costs = mr.zoo_costs()
    assert list(costs["model"]) == list(mr.zoo.ZOO)
    for row in costs.itertuples():
        man = load_pretrained(row.model)["manifest"]
        assert row.seconds == man["seconds"]["total"] and row.peak_gb == man["peak_rss_gb"]
        assert row.tokens == sum(man["tokens_measured"].values())


def test_the_cost_rule_scales_as_it_says():
    costs = mr.zoo_costs()
    one = mr.cost_rule(1e9, 16, 2048, costs=costs)
    two = mr.cost_rule(1e9, 16, 2048, n_tokens=2 * 16_384, costs=costs)
    assert np.isclose(two["forward"], 2 * one["forward"]) and np.isclose(two["analysis"], 2 * one["analysis"])
    assert np.isclose(two["probe"], one["probe"]), "the alignment test reads its own texts"
    assert mr.cost_rule(1e9, 16, 2048, alignment=False, costs=costs)["probe"] == 0
    bf16 = mr.cost_rule(1e9, 16, 2048, dtype="bfloat16", costs=costs)
    assert np.isclose(one["peak_gb"] - bf16["peak_gb"], 2 * (1e9 + 128_256 * 2048) / 2 ** 30)
    with pytest.raises(ParameterError, match="params=0"):
        mr.cost_rule(0, 16, 2048, costs=costs)
    with pytest.raises(ParameterError, match="dtype='int8'"):
        mr.cost_rule(1e9, 16, 2048, dtype="int8", costs=costs)


def test_the_token_counts_are_read_with_their_widths():
    from tanbias.lab.analysis.pretrained import load_pretrained

    w = mr.token_widths()
    assert list(w["tokens"]) == sorted(w["tokens"]) and w["tokens"].iloc[0] == 2048
    assert (w["width"] > 0).all() and np.allclose(w["width"], w["hi"] - w["lo"])
    chapter = mr.premise_width(load_pretrained("smollm2-135m"), "en")
    last = w.iloc[-1]
    assert last["source"] == "chapter 9" and last["tokens"] == 16_384 and last["width"] == chapter["width"]
    assert list(mr.token_widths(chapter=None)["source"].unique()) == ["command"]
    assert 0 < chapter["width"] < 1 and chapter["types"] > 0
    with pytest.raises(ParameterError, match="language='xx'"):
        mr.premise_width(load_pretrained("smollm2-135m"), "xx")


def test_the_cost_rule_is_read_over_each_zoo_model():
    """The rule given each zoo model's shape, over what chapter 9's measurement of it took: one ratio
    of time and one of memory per model (the page checks the times against a factor of 2; a test
    bounds no duration), the memory within a factor of 2 here."""
    ratios = mr.rule_over_zoo()
    assert list(ratios["model"]) == list(mr.zoo.ZOO) and set(mr.ZOO_SHAPES) == set(mr.zoo.ZOO)
    assert ratios["peak_gb"].between(0.5, 2).all(), ratios
    assert np.isfinite(ratios["seconds"]).all()


def test_the_findings_are_read_from_the_results_and_compute_nothing(measured_tiny, monkeypatch):
    """The report's sentences read chapter 9's results as the measurement was read (no statistic is
    computed while they are drawn: not even a rank correlation)."""
    import scipy.stats

    monkeypatch.setattr(scipy.stats, "spearmanr", lambda *a, **k: pytest.fail("a correlation while drawing"))
    said = mr.findings(measured_tiny["series"])
    res = measured_tiny["series"]["results"]
    t = res.premise_row("step2", "en", "radius_t")
    assert any(format_spec(t["rho"], "+.2f") in text and t["word"] in text for key, text in said if key == "premise")
    with pytest.raises(KeyError):
        mr.findings({k: v for k, v in measured_tiny["series"].items() if k != "results"})
    table = mr.findings_table(measured_tiny["series"])
    assert list(table.columns) == ["about", "what the measurement says"] and len(table) == len(said)


def test_a_real_trajectory_peaks_early_and_falls():
    t = mr.lab_trajectory()
    assert list(t.columns) == ["revision", "step", "language", "enrichment_gmean"] and t["step"].is_monotonic_increasing
    peak = int(t["enrichment_gmean"].to_numpy().argmax())
    assert 0 < peak < len(t) - 1 and t["enrichment_gmean"].iloc[-1] < t["enrichment_gmean"].max()


def test_the_pages_tables_have_words_with_units_for_headers():
    for table in (mr.cost_table(), mr.estimate_table(0.97e9, 16, 2048), mr.widths_table(mr.token_widths())):
        assert not [c for c in table.columns if "_" in c], list(table.columns)
    assert all("(" in c for c in mr.estimate_table(0.97e9, 16, 2048).columns[1:])
