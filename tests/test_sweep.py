"""The 2x2 sweep of chapter 8: aggregation on smoke-size runs, the mechanism, exercise 4."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from tanbias.errors import CorruptFileError, ParameterError
import tanbias.figures.sweep as sweep_figures
from tanbias.lab import runs as runs_mod
from tanbias.lab.analysis import sweep
from tanbias.lab.analysis.radii import measure_radii
from tanbias.lab.config import KINDS, REGIMES, parse_run_name
from tanbias.lab.pipeline import run_sweep

SEEDS = (0, 1)


def _cfg(kind, regime, seed):
    # de (439k words) and pt (92k): an imbalanced pair, so the two regimes differ
    return {"name": f"{kind}-{regime}-s{seed}", "kind": kind, "regime": regime, "seed": seed,
            "size": "smoke", "steps": 6, "languages": ["de", "pt"], "checkpoint_every": 6,
            "eval_batches": 1,
            "probe": {"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}


@pytest.fixture(scope="module")
def smoke_sweep(tmp_path_factory):
    from tanbias.lab.pipeline import train_and_analyse

    d = tmp_path_factory.mktemp("sweep")
    for kind in KINDS:
        for regime in REGIMES:
            for seed in SEEDS:
                c = _cfg(kind, regime, seed)
                train_and_analyse(c, out_dir=d / c["name"], fresh=True, progress=False)
    return d


@pytest.fixture(scope="module")
def loaded(smoke_sweep):
    return sweep.load_sweep(runs_dir=smoke_sweep)


def test_load_sweep_finds_all_cells_and_checks_them(smoke_sweep, loaded):
    assert len(loaded) == 8
    names = [str(smoke_sweep / n) for n in loaded if not n.startswith("encoder-balanced")]
    with pytest.raises(ParameterError, match=r"cells=.*encoder.*balanced"):
        sweep.load_sweep(names)
    names = [str(smoke_sweep / n) for n in loaded if n != "decoder-natural-s1"]
    with pytest.raises(ParameterError, match=r"seeds of .*differ"):
        sweep.load_sweep(names)
    with pytest.raises(ParameterError, match="not a sweep run"):
        parse_run_name("decoder-natural-seed0")


def test_load_sweep_refuses_runs_with_different_budgets(smoke_sweep, tmp_path):
    from tanbias.lab.train import train

    c = _cfg("decoder", "natural", 5)
    c["steps"] = 5
    d = tmp_path / c["name"]
    train(c, out_dir=d, fresh=True, progress=False)
    for n in ("alignment.csv", "radius.csv", "radius_corr.csv"):   # borrow tables to make it loadable
        shutil.copy(smoke_sweep / "decoder-natural-s0" / n, d / n)
    runs_mod.write_manifest(d, json.loads((d / "config.json").read_text()))
    with pytest.raises(ParameterError, match=r"differs from .* in \['steps'\]"):
        sweep.load_sweep([str(smoke_sweep / "decoder-natural-s0"), str(tmp_path / c["name"])],
                         complete=False)


def test_run_metrics_phases_and_layer_mean(loaded):
    m = sweep.run_metrics(loaded)
    assert set(m["phase"]) == {"init", "early", "late"}
    one = m[(m["run"] == "decoder-natural-s0") & (m["bucket"] == "all") & (m["proxy"] == "frozen")
            & (m["phase"] == "late")]
    layers = one[one["layer"] != "mean"]
    assert np.isclose(one[one["layer"] == "mean"]["log_enrichment"].iloc[0], layers["log_enrichment"].mean())
    # independent path: straight from the run's table
    a = loaded["decoder-natural-s0"].alignment
    a = a[(a["bucket"] == "all") & (a["proxy"] == "frozen") & (a["step"] == a["step"].max())]
    assert np.isclose(layers["log_enrichment"].mean(), np.log(a["enrichment"]).mean())


def test_effects_are_seed_paired_and_interaction_is_the_difference(loaded):
    m = sweep.run_metrics(loaded)
    e = sweep.effects(m)
    sel = e[(e["layer"] == "mean") & (e["bucket"] == "all") & (e["proxy"] == "frozen")
            & (e["phase"] == "late") & (e["metric"] == "log_enrichment")].set_index("contrast")
    x = m[(m["layer"] == "mean") & (m["bucket"] == "all") & (m["proxy"] == "frozen") & (m["phase"] == "late")]
    w = x.pivot_table(index="seed", columns=["kind", "regime"], values="log_enrichment")
    bal_dec = (w[("decoder", "balanced")] - w[("decoder", "natural")]).to_numpy()
    assert np.allclose(sel.loc["balancing | decoder", "per_seed"], bal_dec, atol=1e-6)
    assert np.isclose(sel.loc["interaction", "mean"],
                      sel.loc["balancing | decoder", "mean"] - sel.loc["balancing | encoder", "mean"])
    assert np.isclose(sel.loc["interaction", "mean"],
                      sel.loc["architecture | balanced", "mean"] - sel.loc["architecture | natural", "mean"])
    assert (sel["n"] == len(SEEDS)).all()


def test_t_interval_matches_scipy():
    from scipy import stats

    x = np.array([0.3, 1.1, 0.7, 0.2])
    m, lo, hi, n = sweep.t_interval(x)
    ref = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert n == 4 and np.isclose(lo, ref[0]) and np.isclose(hi, ref[1])
    assert np.isnan(sweep.t_interval([2.0])[1])


def test_balancing_verdict_reads_intervals():
    cells = pd.DataFrame([{"kind": k, "regime": "balanced", "layer": "mean", "bucket": "all",
                           "proxy": "frozen", "phase": "late", "metric": "log_enrichment",
                           "lo": lo, "hi": lo + 1} for k, lo in (("encoder", 0.5), ("decoder", -0.2))])
    eff = pd.DataFrame([{"layer": "mean", "bucket": "all", "proxy": "frozen", "phase": "late",
                         "metric": "log_enrichment", "contrast": f"balancing | {k}", "lo": lo, "hi": hi}
                        for k, lo, hi in (("encoder", -0.5, -0.1), ("decoder", -0.5, -0.1))])
    v = sweep.balancing_verdict(cells, eff)
    assert v == {"encoder": "attenuated, not removed", "decoder": "removed"}
    eff["lo"], eff["hi"] = -0.1, 0.2
    assert set(sweep.balancing_verdict(cells, eff).values()) == {"no detectable effect of balancing"}


def test_measure_radii_uses_one_common_text_per_kind(loaded):
    tok = {n: r.tokens for n, r in loaded.items()}
    assert all(t is not None and len(t) for t in tok.values())
    for name, t in tok.items():
        assert (t["layer"] >= 1).all() and (t["t"] > 0).all()
        counts = loaded[name].token_counts
        assert (t["train_count"].to_numpy() == counts[t["token_id"].to_numpy()]).all()
    # the same held-out text whatever the regime: identical occurrence counts per token
    for kind in KINDS:
        a = tok[f"{kind}-natural-s0"].query("layer == 1").set_index("token_id")["count_text"]
        b = tok[f"{kind}-balanced-s1"].query("layer == 1").set_index("token_id")["count_text"]
        assert a.equals(b)


def test_eta_is_the_weighted_mean_square_radius(loaded):
    eta = sweep.eta_by_bucket(loaded)
    t = loaded["encoder-natural-s1"].tokens.query("layer == 2")
    row = eta[(eta["run"] == "encoder-natural-s1") & (eta["layer"] == 2) & (eta["bucket"] == "all")].iloc[0]
    w = t["count_text"].to_numpy(float)
    assert np.isclose(row["eta"], np.sum(w * t["t"] ** 2) / w.sum())
    assert 0 <= row["small_t_share"] <= 1
    # bucket labels match the alignment table's, so the two can be joined
    align_buckets = set(loaded["encoder-natural-s1"].alignment["bucket"])
    assert set(eta["bucket"]) <= align_buckets


def test_mechanism_refuses_a_missing_checkpoint(smoke_sweep, tmp_path):
    d = tmp_path / "decoder-natural-s0"
    shutil.copytree(smoke_sweep / "decoder-natural-s0", d, ignore=shutil.ignore_patterns("work"))
    with pytest.raises(CorruptFileError, match=r"ckpt\.pt.*python -m tanbias\.lab train"):
        measure_radii(d)


def test_frequency_profile_sees_the_balanced_mixture(loaded):
    f = sweep.frequency_profile(loaded).set_index("run")
    assert (f["types_seen"] > 0).all()
    # both kinds read the same streams for a (regime, seed)
    assert f.loc["encoder-balanced-s0", "effective_vocab"] == f.loc["decoder-balanced-s0", "effective_vocab"]


@pytest.mark.parametrize("make", [sweep_figures.trajectory_interactive, sweep_figures.cells_interactive,
                                  sweep_figures.eta_interactive, sweep_figures.radius_cdf_interactive])
def test_interactives_render_every_frame(loaded, make):
    it = make(loaded)
    d = it.static_dict()
    assert d["data"] and d.get("frames")


def test_effects_figure_has_a_row_per_contrast(loaded):
    m = sweep.run_metrics(loaded)
    fig = sweep_figures.effects_figure(sweep.effects(m), sweep.timing(loaded))
    assert len(fig.data) == 3
    assert list(fig.layout.yaxis.ticktext)[-1].startswith("last step / peak")
    assert len(fig.data[1].x) == len(sweep.CONTRASTS)


def test_exercise_4_checker_on_smoke_sweep(loaded):
    from tanbias.exercises import check_exercise_4, reference_balancing_effect

    m = sweep.run_metrics(loaded)
    check_exercise_4(reference_balancing_effect, metrics=m)
    with pytest.raises(AssertionError, match="Sign flipped"):
        check_exercise_4(lambda mm, k: -reference_balancing_effect(mm, k), metrics=m)
    with pytest.raises(AssertionError, match="early probe steps"):
        check_exercise_4(lambda mm, k: reference_balancing_effect(mm, k, phase="early"), metrics=m)
    with pytest.raises(AssertionError, match="should return a float"):
        check_exercise_4(lambda mm, k: "x", metrics=m)


def test_exercise_4_checker_against_the_committed_sweep(capsys):
    from tanbias.exercises import check_exercise_4, reference_balancing_effect

    try:
        loaded = sweep.load_sweep()
    except ParameterError as exc:
        pytest.fail(f"the committed sweep is incomplete: {exc}")
    m = sweep.run_metrics(loaded)
    truth = {k: int(np.sign(reference_balancing_effect(m, k))) for k in KINDS}
    check_exercise_4(reference_balancing_effect, prediction=truth, metrics=m)
    assert "Exercise 4 passed" in capsys.readouterr().out
    wrong = {k: -v for k, v in truth.items()}
    with pytest.raises(AssertionError, match="does not match the sweep"):
        check_exercise_4(reference_balancing_effect, prediction=wrong, metrics=m)
    with pytest.raises(AssertionError, match="should be a dict"):
        check_exercise_4(reference_balancing_effect, prediction={"encoder": 2}, metrics=m)


def test_run_sweep_trains_in_parallel_and_skips_complete_runs(tmp_path):
    cdir = tmp_path / "configs"
    cdir.mkdir()
    for kind in KINDS:
        c = _cfg(kind, "natural", 0)
        c["steps"] = 3
        (cdir / f"{c['name']}.json").write_text(json.dumps(c))
    (cdir / "not-a-sweep-run.json").write_text("{}")
    res = run_sweep(jobs=2, configs_dir=cdir, out_root=tmp_path / "runs")
    assert set(res["runs"]) == {"encoder-natural-s0", "decoder-natural-s0"}
    assert all(r["exit"] == 0 for r in res["runs"].values()), res
    assert all((tmp_path / "runs" / n / "tokens.csv").exists() for n in res["runs"])
    again = run_sweep(jobs=2, configs_dir=cdir, out_root=tmp_path / "runs")
    assert again["runs"] == {}
    with pytest.raises(ParameterError, match="jobs=0"):
        run_sweep(jobs=0, configs_dir=cdir)


# --------------------------------------------------------------------------- report and verdicts
def test_layer_average_is_the_geometric_mean():
    a = pd.DataFrame({"step": [0, 0], "layer": [0, 1], "enrichment": [2.0, 0.5],
                      "d_iso_proxy": [0.0, 0.0], "d_iso_control_mean": [0.0, 0.0]})
    m = sweep.mean_over_layers(sweep.add_log_enrichment(a), ["step"])
    assert np.isclose(np.exp(m["log_enrichment"].iloc[0]), 1.0)    # x2 and x0.5: no effect


def test_run_summary_uses_the_layer_average_of_run_metrics(loaded):
    two = {n: loaded[n] for n in ("encoder-natural-s0", "decoder-natural-s0")}
    s = sweep.run_summary(two).set_index(["run", "proxy"])
    m = sweep.run_metrics(two)
    row = m[(m["run"] == "decoder-natural-s0") & (m["layer"] == "mean") & (m["bucket"] == "all")
            & (m["proxy"] == "frozen") & (m["phase"] == "late")].iloc[0]
    assert np.isclose(s.loc[("decoder-natural-s0", "frozen"), "enrichment_late"],
                      np.exp(row["log_enrichment"]))


def test_property_verdicts_read_intervals():
    early = pd.DataFrame({"peak_frac": [0.1, 0.12, 0.11], "log_late_over_peak": [-0.3, -0.25, -0.35]})
    assert sweep.imprinted_early_property(early) == "supported"
    late = early.assign(peak_frac=[0.9, 0.95, 0.99])
    assert sweep.imprinted_early_property(late) == "partly supported"
    assert sweep.imprinted_early_property(late.assign(log_late_over_peak=[0.0, 0.0, 0.0])) == "not supported"
    assert sweep.balancing_property({"encoder": "attenuated, not removed",
                                     "decoder": "attenuated, not removed"}) == "supported"
    assert sweep.balancing_property({"encoder": "attenuated, not removed",
                                     "decoder": "removed"}) == "partly supported"
    assert sweep.balancing_property({"encoder": "strengthened",
                                     "decoder": "no detectable effect of balancing"}) == "contradicted"
    assert sweep.balancing_property({k: "no detectable effect of balancing" for k in KINDS}).startswith(
        "not detected")


def test_report_words():
    from tanbias.lab.analysis import report

    assert repr(report.Word("supported")) == "supported" and report.Word("a") == "a"
    assert report.direction_word(0.1, 0.3) == "larger"
    assert report.direction_word(-0.3, -0.1) == "smaller"
    assert report.direction_word(-0.1, 0.1) == "not detectably different"
    assert report.correlation_word(0.1, 0.4) == "positive"
    assert report.correlation_word(-0.4, 0.1) == "indistinguishable"
    assert report.decline_word([0.97, 0.99]) == "stays" and report.decline_word([0.7, 0.99]) == "falls"


def test_chapter8_and_closing_reports_on_smoke_sweep(loaded):
    from tanbias.lab.analysis import report

    sw = report.analyse_sweep(loaded, controls=())
    r8 = report.chapter8_report(sw)
    assert r8["n_runs"] == 8 and r8["n_seeds"] == len(SEEDS) and r8["L"] == 2
    for key in ("gap_min", "vocab_change_pct", "decoder_q1_eta_d", "rho_decoder_natural",
                "decoder_natural_late", "eff_interaction_late_hi", "peak_frac", "eta_rho_encoder"):
        assert np.isfinite(r8[key]), key
    assert r8["verdict_encoder_late"] in {"attenuated, not removed", "removed", "strengthened",
                                          "no detectable effect of balancing"}
    assert isinstance(r8["rho_word"], report.Word) and " " not in r8["rho_word"]
    assert not any(k.startswith("ctl_") for k in r8)          # no controls given
    # every glued value is a number or a single word/phrase, never a sentence
    assert all(isinstance(v, (int, float)) or len(str(v).split()) <= 5 for v in r8.values())
    # the cell ratios are the exponential of the layer-averaged log enrichment
    c = sw.cells
    row = c[(c["kind"] == "decoder") & (c["regime"] == "natural") & (c["layer"] == "mean")
            & (c["bucket"] == "all") & (c["proxy"] == "frozen") & (c["phase"] == "late")
            & (c["metric"] == "log_enrichment")].iloc[0]
    assert np.isclose(r8["decoder_natural_late"], np.exp(row["mean"]))
    checks = report.chapter8_checks(sw)
    assert set(checks) == {"learns", "flatter", "iso", "architecture_natural", "architecture_balanced"}
    end = report.conclusions_report(sw)
    assert end["early_verdict"] in {"supported", "partly supported", "not supported"}
    assert end["bal_verdict"] == sweep.balancing_property(
        {"encoder": end["bal_encoder"], "decoder": end["bal_decoder"]})
    assert end["imbalance"] > 1 and end["params_m"] > 0
    assert not report.mechanism_table(sw).empty and not report.cells_table(sw).empty
    assert len(report.contrast_table(sw)) == len(sweep.CONTRASTS)


def test_load_trained_refuses_an_unfinished_checkpoint(smoke_sweep):
    from tanbias.lab.models import load_trained

    model, tok, cfg = load_trained(smoke_sweep / "decoder-natural-s0")
    assert not model.training and cfg["name"] == "decoder-natural-s0"
    with pytest.raises(CorruptFileError, match="checkpoint is at step 6"):
        load_trained(smoke_sweep / "decoder-natural-s0", step=3)
