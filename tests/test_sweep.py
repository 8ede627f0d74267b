"""The 2x2 sweep of chapter 8: aggregation on smoke-size runs, the mechanism, exercise 4."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import runs as runs_mod
from tanbias.lab import sweep

SEEDS = (0, 1)


def _cfg(kind, regime, seed):
    # de (439k words) and pt (92k): an imbalanced pair, so the two regimes differ
    return {"name": f"{kind}-{regime}-s{seed}", "kind": kind, "regime": regime, "seed": seed,
            "size": "smoke", "steps": 6, "languages": ["de", "pt"], "checkpoint_every": 6,
            "eval_batches": 1,
            "probe": {"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}


@pytest.fixture(scope="module")
def smoke_sweep(tmp_path_factory):
    from tanbias.lab.train import train

    d = tmp_path_factory.mktemp("sweep")
    for kind in sweep.KINDS:
        for regime in sweep.REGIMES:
            for seed in SEEDS:
                c = _cfg(kind, regime, seed)
                train(c, out_dir=d / c["name"], fresh=True, progress=False)
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
        sweep._cell("decoder-natural-seed0")


def test_load_sweep_refuses_runs_with_different_budgets(smoke_sweep, tmp_path):
    from tanbias.lab.train import train

    c = _cfg("decoder", "natural", 5)
    c["steps"] = 5
    d = tmp_path / c["name"]
    train(c, out_dir=d, fresh=True, progress=False, analyse=False)
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
    for kind in sweep.KINDS:
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
        sweep.measure_radii(d)


def test_frequency_profile_sees_the_balanced_mixture(loaded):
    f = sweep.frequency_profile(loaded).set_index("run")
    assert (f["types_seen"] > 0).all()
    # both kinds read the same streams for a (regime, seed)
    assert f.loc["encoder-balanced-s0", "effective_vocab"] == f.loc["decoder-balanced-s0", "effective_vocab"]


@pytest.mark.parametrize("make", [sweep.trajectory_interactive, sweep.cells_interactive,
                                  sweep.eta_interactive, sweep.radius_cdf_interactive])
def test_interactives_render_every_frame(loaded, make):
    it = make(loaded)
    d = it.static_dict()
    assert d["data"] and d.get("frames")


def test_effects_figure_has_a_row_per_contrast(loaded):
    m = sweep.run_metrics(loaded)
    fig = sweep.effects_figure(sweep.effects(m), sweep.timing(loaded))
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
    truth = {k: int(np.sign(reference_balancing_effect(m, k))) for k in sweep.KINDS}
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
    for kind in sweep.KINDS:
        c = _cfg(kind, "natural", 0)
        c["steps"] = 3
        (cdir / f"{c['name']}.json").write_text(json.dumps(c))
    (cdir / "not-a-sweep-run.json").write_text("{}")
    res = sweep.run_sweep(jobs=2, configs_dir=cdir, out_root=tmp_path / "runs")
    assert set(res["runs"]) == {"encoder-natural-s0", "decoder-natural-s0"}
    assert all(r["exit"] == 0 for r in res["runs"].values()), res
    assert all((tmp_path / "runs" / n / "tokens.csv").exists() for n in res["runs"])
    again = sweep.run_sweep(jobs=2, configs_dir=cdir, out_root=tmp_path / "runs")
    assert again["runs"] == {}
    with pytest.raises(ParameterError, match="jobs=0"):
        sweep.run_sweep(jobs=0, configs_dir=cdir)
