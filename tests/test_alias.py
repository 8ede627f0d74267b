"""The aliasing knob's statistics (tanbias.lab.analysis.alias, alias_report): the registered rules on
tables with planted effects, and the run table of real smoke runs."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from tanbias.lab.analysis import alias, alias_report
from tanbias.lab.analysis.alias_design import FAMILY_ROWS, READINGS, positions
from tanbias.lab.analysis.registered import complete_seeds
from tanbias.lab.experiments import ALIAS, ALIAS_LEVELS, alias_config


def _table(slopes=None, seeds=range(4), noise=0.02, gain=None, rng=0):
    """A run table along the knob: every reading ``= seed + slope * x + noise``, x the design position,
    ``log_collision`` falling by ln 15 end to end."""
    g = np.random.default_rng(rng)
    slopes, gain = slopes or {}, gain or {}
    rows = []
    for kind in ("encoder", "decoder"):
        for s in seeds:
            base = g.normal(0, 0.3)
            for level, x in positions().items():
                r = {"run": f"alias-{kind}-{level}-s{s}", "kind": kind, "level": level, "seed": s, "on_alias": True,
                     "x_alias": x, "diverged": False, "log_type_collision": -5.7 + g.normal(0, 1e-3),
                     "gain": 1.5 + gain.get(kind, 0.0) * x + g.normal(0, noise),
                     "log_convergence": np.nan if level == "k0" else np.log(0.3) + g.normal(0, 0.05),
                     "log_convergence_init": np.nan if level == "k0" else np.log(2.0) + g.normal(0, 0.05)}
                for m in READINGS:
                    r[m] = base + slopes.get(m, 0.0) * x + g.normal(0, noise)
                r["log_collision"] = -5.7 - np.log(15) * x + g.normal(0, 1e-3)
                rows.append(r)
    return pd.DataFrame(rows)


def test_a_planted_response_reads_as_predicted_and_a_flat_one_not_detected():
    t = _table({"log_enrichment_late": -0.5, "mean_cosine_late": 0.3})
    r = alias.responses(t).set_index(["metric", "kind"])
    assert r.loc[("log_collision", "decoder"), "verdict"] == "as predicted"
    assert r.loc[("log_enrichment_late", "encoder"), "verdict"] == "as predicted"
    assert r.loc[("log_enrichment_late", "encoder"), "end_to_end"] == pytest.approx(-0.5, abs=0.05)
    assert r.loc[("mean_cosine_late", "decoder"), "verdict"] == "against the prediction"
    assert r.loc[("log_eta_q1", "decoder"), "verdict"] == "not detected"
    assert set(r["knob"]) == {"alias"} and len(r) == len(READINGS) * 2


def test_the_joint_family_is_the_registered_38_with_missing_rows_at_p_1():
    dose_rows = pd.DataFrame({"p": np.linspace(1e-4, 0.2, 24), "end_to_end": -1.0, "predicted": "-",
                              "metric": "m", "knob": "token", "kind": "decoder"})
    empty = alias.responses(_table().iloc[:0].assign(on_alias=pd.Series(dtype=bool)))
    d, a = alias.joint_multiplicity(dose_rows, empty)
    assert len(d) + len(a) == FAMILY_ROWS == 38
    assert d["p_holm"].iloc[0] == pytest.approx(1e-4 * 38)             # the smallest p, times the family
    assert a["p_holm"].isna().all() and set(a["verdict"]) == {"not decided"}
    full = alias.responses(_table({"log_enrichment_late": -0.5}))
    d2, a2 = alias.joint_multiplicity(dose_rows, full)
    assert (d2["p_holm"] <= d["p_holm"] + 1e-12).all()                  # tiny alias p values only lower the rest


def test_learning_contrast_reads_less_when_aliasing_keeps_the_gain():
    alias_t = _table(gain={"encoder": -0.05, "decoder": -0.05})
    dose_t = _table(gain={"encoder": -0.8, "decoder": -0.8}).assign(on_token=True)
    dose_t["level"] = dose_t["level"].map(dict(zip(ALIAS_LEVELS, ("skewed", "b16", "b37", "b100"))))
    out = alias.learning_contrast(alias_t, dose_t).set_index("kind")
    assert set(out["word"]) == {"less"}
    assert out.loc["encoder", "difference"] == pytest.approx(0.75, abs=0.1)
    assert (out["lo"] < out["difference"]).all() and (out["difference"] < out["hi"]).all()


def test_convergence_words_follow_the_registered_thresholds():
    c = alias.convergence_words(_table()).set_index(["kind", "level"])
    assert set(c["word"]) == {"one cloud"}                              # planted 0.3 < 0.5
    assert c.loc[("decoder", "k3"), "init"] == pytest.approx(2.0, rel=0.1)
    assert set(c["init_word"]) == {"separate clouds"}                   # planted 2.0 > 1 at step 0
    far = _table().assign(log_convergence=np.log(3.0))
    assert set(alias.convergence_words(far)["word"]) == {"separate clouds"}
    assert set(alias.convergence_words(_table(seeds=[0]))["word"]) == {"undecided"}


def test_incomplete_or_diverged_seeds_are_left_out():
    t = _table()
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


def test_the_report_quotes_every_reading_and_reads_interim(smoke_cells):
    root, cells = smoke_cells
    aa, da = alias.analyse_alias(loaded=alias.load_alias(runs_dir=root, cells=cells))
    n = alias_report.alias_numbers(aa)
    for short in alias_report.SHORT.values():
        for kind in ("encoder", "decoder"):
            assert {f"alias_{short}_{kind}", f"alias_{short}_{kind}_lo", f"alias_{short}_{kind}_p_holm"} <= set(n)
    assert n["alias_complete_decoder"] == 2 and n["alias_complete_encoder"] == 0
    assert n["alias_typecol_decoder"] == pytest.approx(1.0)
    assert np.isfinite(n["alias_col_decoder"]) and n["alias_col_decoder"] < 1
    assert aa.interim and alias_report.closing_verdict(aa) == "undecided (interim)"
    assert len(alias_report.verdict_rows(aa)) == len(READINGS) * 2
    assert len(da.responses) == 24 and da.responses["p_holm"].notna().all()


def _planted_analysis(interim, **slopes):
    t = _table(slopes)
    dose_t = _table({}, gain={"encoder": -0.8, "decoder": -0.8}).assign(on_token=True)
    dose_t["level"] = dose_t["level"].map(dict(zip(ALIAS_LEVELS, ("skewed", "b16", "b37", "b100"))))
    return alias.AliasAnalysis(status=pd.DataFrame({"run": t["run"], "committed": True}), table=t,
                               responses=alias.responses(t), learning=alias.learning_contrast(t, dose_t),
                               convergence=pd.DataFrame(), clouds=alias.convergence_words(t),
                               seeds={k: complete_seeds(ALIAS, t, k) for k in ("encoder", "decoder")}, interim=interim)


def test_the_words_the_chapter_states_are_computed_once_by_name():
    aa = _planted_analysis(False, log_enrichment_late=-0.5, mean_cosine_late=0.3)
    w = alias_report.words_of(aa)
    assert w["every seed complete"] == "yes" and w["closing"] == alias_report.closing_verdict(aa)
    assert w["verdict, encoder, log_enrichment_late"] == "as predicted"
    assert w["verdict, decoder, mean_cosine_late"] == "against the prediction"
    assert w["verdict, decoder, log_eta_q1"] == "not detected" and w["progress, decoder, log_eta_q1"] == "n/a"
    assert w["learning, encoder"] == "less" and w["clouds, decoder, k3"] == "one cloud"
    assert w["clouds at initialisation, decoder, k3"] == "separate clouds"
    assert {f"balancing, {k} {p}" for k in ("encoder", "decoder") for p in ("alignment", "anisotropy")} <= set(w)
    checks = alias_report.word_checks(aa, {"learning, decoder": "less", "clouds, encoder, k1": "separate clouds"})
    assert [c.passed for c in checks] == [True, False]
    with pytest.raises(KeyError, match="no such word.*known names"):
        alias_report.word_checks(aa, {"learning, nobody": "less"})
    interim = alias_report.words_of(_planted_analysis(True, log_enrichment_late=-0.5))
    assert interim["every seed complete"] == "no" and interim["closing"] == "undecided (interim)"
    assert {interim[f"balancing, {k} alignment"] for k in ("encoder", "decoder")} == {"undecided"}


def test_the_matched_progress_change_is_quoted_beside_each_row():
    # a reading planted along the knob alone, the gain unrelated to the knob: the change at matched
    # gain is the planted one; with the gain tied to the knob, the correlation says so
    aa = _planted_analysis(False, log_enrichment_late=-0.5)
    n = alias_report.alias_numbers(dataclasses.replace(aa, responses=aa.responses.assign(p_holm=aa.responses["p"])))
    assert n["alias_enr_encoder_progress"] == pytest.approx(np.exp(-0.5), rel=0.1)
    assert n["alias_enr_encoder_progress_lo"] < n["alias_enr_encoder_progress"] < n["alias_enr_encoder_progress_hi"]
    assert abs(n["alias_xgain_encoder"]) < 0.5
    assert "alias_col_decoder_progress" not in n and "alias_iso_decoder_progress" in n   # the balancing readings
    t = _table({"log_enrichment_late": -0.5}, gain={"encoder": -0.8, "decoder": -0.8})
    assert alias.responses(t).set_index(["metric", "kind"]).loc[("log_enrichment_late", "encoder"),
                                                                "x_gain_corr"] > 0.9
