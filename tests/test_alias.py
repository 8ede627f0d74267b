"""The aliasing knob's statistics (tanbias.lab.analysis.alias): the registered rules on tables with
planted effects (tests/plantedtables.py), and the run table of real smoke runs, read as far as its
report (the report on planted tables: test_alias_report.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tanbias.lab.analysis import alias, alias_report
from tanbias.lab.analysis.alias_design import FAMILY_ROWS, ALIAS_READINGS
from tanbias.lab.analysis.registered import complete_seeds
from tanbias.lab.experiments import ALIAS, ALIAS_LEVELS, alias_config
from plantedtables import alias_table


@pytest.mark.slow
def test_a_planted_response_reads_as_predicted_and_a_flat_one_not_detected():
    t = alias_table({"log_enrichment_late": -0.5, "mean_cosine_late": 0.3})
    r = alias.responses(t).set_index(["metric", "kind"])
    assert r.loc[("log_collision", "decoder"), "verdict"] == "as predicted"
    assert r.loc[("log_enrichment_late", "encoder"), "verdict"] == "as predicted"
    assert r.loc[("log_enrichment_late", "encoder"), "end_to_end"] == pytest.approx(-0.5, abs=0.05)
    assert r.loc[("mean_cosine_late", "decoder"), "verdict"] == "against the prediction"
    assert r.loc[("log_eta_q1", "decoder"), "verdict"] == "not detected"
    assert set(r["knob"]) == {"alias"} and len(r) == len(ALIAS_READINGS) * 2


@pytest.mark.slow
def test_the_joint_family_is_the_registered_38_with_missing_rows_at_p_1():
    dose_rows = pd.DataFrame({"p": np.linspace(1e-4, 0.2, 24), "end_to_end": -1.0, "predicted": "-",
                              "metric": "m", "knob": "token", "kind": "decoder"})
    empty = alias.responses(alias_table().iloc[:0].assign(on_alias=pd.Series(dtype=bool)))
    d, a = alias.joint_multiplicity(dose_rows, empty)
    assert len(d) + len(a) == FAMILY_ROWS == 38
    assert d["p_holm"].iloc[0] == pytest.approx(1e-4 * 38)             # the smallest p, times the family
    assert a["p_holm"].isna().all() and set(a["verdict"]) == {"not decided"}
    full = alias.responses(alias_table({"log_enrichment_late": -0.5}))
    d2, a2 = alias.joint_multiplicity(dose_rows, full)
    assert (d2["p_holm"] <= d["p_holm"] + 1e-12).all()                  # tiny alias p values only lower the rest


@pytest.mark.slow
def test_learning_contrast_reads_less_when_aliasing_keeps_the_gain():
    alias_t = alias_table(gain={"encoder": -0.05, "decoder": -0.05})
    dose_t = alias_table(gain={"encoder": -0.8, "decoder": -0.8}).assign(on_token=True)
    dose_t["level"] = dose_t["level"].map(dict(zip(ALIAS_LEVELS, ("skewed", "b16", "b37", "b100"))))
    out = alias.learning_contrast(alias_t, dose_t).set_index("kind")
    assert set(out["word"]) == {"less"}
    assert out.loc["encoder", "difference"] == pytest.approx(0.75, abs=0.1)
    assert (out["lo"] < out["difference"]).all() and (out["difference"] < out["hi"]).all()


def test_convergence_words_follow_the_registered_thresholds():
    c = alias.convergence_words(alias_table()).set_index(["kind", "level"])
    assert set(c["word"]) == {"one cloud"}                              # planted 0.3 < 0.5
    assert c.loc[("decoder", "k3"), "init"] == pytest.approx(2.0, rel=0.1)
    assert set(c["init_word"]) == {"separate clouds"}                   # planted 2.0 > 1 at step 0
    far = alias_table().assign(log_convergence=np.log(3.0))
    assert set(alias.convergence_words(far)["word"]) == {"separate clouds"}
    assert set(alias.convergence_words(alias_table(seeds=[0]))["word"]) == {"undecided"}


def test_incomplete_or_diverged_seeds_are_left_out():
    t = alias_table()
    t = t[~((t["seed"] == 1) & (t["level"] == "k2") & (t["kind"] == "encoder"))]
    t.loc[(t["seed"] == 2) & (t["kind"] == "encoder") & (t["level"] == "k1"), "diverged"] = True
    assert complete_seeds(ALIAS, t, "encoder") == [0, 3] and complete_seeds(ALIAS, t, "decoder") == [0, 1, 2, 3]


@pytest.fixture(scope="module")
def smoke_cells(tmp_path_factory):
    """Two seeds x four levels of the decoder at smoke size, trained and analysed."""
    from tanbias.lab.pipeline import train_and_analyse

    root = tmp_path_factory.mktemp("alias-runs")
    cells = []
    for seed in (0, 1):
        for level in ALIAS_LEVELS:
            cfg = alias_config("decoder", level, seed, steps=8, size="smoke", languages=["en"], checkpoint_every=8,
                               eval_batches=1, probe_eval_batches=1,
                               probe={"n_steps": 3, "rank": 4, "local_rank": 2, "min_count": 3})
            train_and_analyse(cfg, out_dir=root / cfg.name, fresh=True, progress=False)
            cells.append(("decoder", level, seed, cfg.name))
    return root, cells


@pytest.mark.slow
def test_the_run_table_of_real_smoke_runs(smoke_cells):
    root, cells = smoke_cells
    loaded = alias.load_alias(runs_dir=root, cells=cells)
    assert len(loaded) == 8
    t = alias.run_table(loaded)
    assert len(t) == 8 and set(t["level"]) == set(ALIAS_LEVELS)
    w = t.pivot_table(index="seed", columns="level", values="log_collision")
    assert (w["k0"] > w["k1"]).all() and (w["k1"] > w["k2"]).all() and (w["k2"] > w["k3"]).all()
    # the same text at every level of a seed: the types' counts are identical, so is their collision
    wt = t.pivot_table(index="seed", columns="level", values="log_type_collision")
    assert np.allclose(wt.to_numpy(), wt["k0"].to_numpy()[:, None])
    for s in (0, 1):
        a, b = loaded[("decoder", "k0", s)], loaded[("decoder", "k3", s)]
        assert np.array_equal(a.token_counts, b.token_counts)
        assert b.input_counts.sum() == a.token_counts.sum() and a.input_counts is None
    assert t.loc[t["level"] == "k0", "extra_rows"].eq(0).all() and t.loc[t["level"] == "k3", "extra_rows"].gt(0).all()
    assert t[["log_enrichment_late", "mean_cosine_late", "isoscore_late", "gain"]].notna().all().all()
    assert t.loc[t["level"] == "k0", "log_convergence"].isna().all()
    conv = alias.convergence_table(loaded)
    assert set(conv["level"]) <= {"k1", "k2", "k3"} and (conv["ratio"] > 0).all()


@pytest.mark.slow
@pytest.mark.committed
def test_the_report_quotes_every_reading_and_reads_interim(smoke_cells):
    root, cells = smoke_cells
    da, aa = alias.analyse_alias(loaded=alias.load_alias(runs_dir=root, cells=cells))
    n = alias_report.numbers(aa)
    for short in alias_report.SHORT.values():
        for kind in ("encoder", "decoder"):
            assert {f"alias_{short}_{kind}", f"alias_{short}_{kind}_lo", f"alias_{short}_{kind}_p_holm"} <= set(n)
    assert n["alias_complete_decoder"] == 2 and n["alias_complete_encoder"] == 0
    assert n["alias_typecol_decoder"] == pytest.approx(1.0)
    assert np.isfinite(n["alias_col_decoder"]) and n["alias_col_decoder"] < 1
    assert aa.interim and alias_report.closing_verdict(aa) == "undecided (interim)"
    assert len(alias_report.verdict_rows(aa)) == len(ALIAS_READINGS) * 2
    assert len(da.responses) == 24 and da.responses["p_holm"].notna().all()
