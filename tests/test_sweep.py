"""The statistics of the 2x2 sweep (tanbias.lab.analysis.sweep) on smoke-size runs."""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from conftest import SWEEP_SEEDS, sweep_smoke_config
from tanbias.errors import ParameterError
from tanbias.lab import runs as runs_mod
from tanbias.lab.analysis import sweep, tables
from tanbias.lab.config import KINDS

def test_load_sweep_finds_all_cells_and_checks_them(smoke_sweep, loaded):
    assert len(loaded) == 8
    names = [str(smoke_sweep / n) for n in loaded if not n.startswith("encoder-balanced")]
    with pytest.raises(ParameterError, match=r"cells=.*encoder.*balanced"):
        sweep.load_sweep(names)
    names = [str(smoke_sweep / n) for n in loaded if n != "decoder-natural-s1"]
    with pytest.raises(ParameterError, match=r"seeds of .*differ"):
        sweep.load_sweep(names)


def test_load_sweep_refuses_runs_with_different_budgets(smoke_sweep, tmp_path):
    from tanbias.lab.train import train

    c = sweep_smoke_config("decoder", "natural", 5, steps=5)
    d = tmp_path / c.name
    train(c, out_dir=d, fresh=True, progress=False)
    for n in ("alignment.csv", "radius.csv", "radius_corr.csv"):   # borrow tables to make it loadable
        shutil.copy(smoke_sweep / "decoder-natural-s0" / n, d / n)
    runs_mod.write_manifest(d, runs_mod.read_config(d))
    with pytest.raises(ParameterError, match=r"differs from .* in \['steps'\]"):
        sweep.load_sweep([str(smoke_sweep / "decoder-natural-s0"), str(tmp_path / c.name)],
                         complete=False)


def test_run_metrics_phases_and_layer_mean(loaded):
    m = tables.run_metrics(loaded)
    assert set(m["phase"]) == {"init", "early", "late"}
    one = m[(m["run"] == "decoder-natural-s0") & (m["bucket"] == "all") & (m["proxy"] == "frozen")
            & (m["phase"] == "late")]
    layers = one[one["layer"] != "mean"]
    assert np.isclose(one[one["layer"] == "mean"]["log_enrichment"].iloc[0], layers["log_enrichment"].mean())
    # independent path: straight from the run's table
    a = loaded["decoder-natural-s0"].alignment
    a = a[(a["bucket"] == "all") & (a["proxy"] == "frozen") & (a["step"] == a["step"].max())]
    assert np.isclose(layers["log_enrichment"].mean(), np.log(a["enrichment"]).mean())


@pytest.mark.slow
def test_effects_are_seed_paired_and_interaction_is_the_difference(loaded):
    m = tables.run_metrics(loaded)
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
    assert (sel["n"] == len(SWEEP_SEEDS)).all()


def test_balancing_verdict_reads_intervals():
    cells = pd.DataFrame([{"kind": k, "regime": "balanced", "layer": "mean", "bucket": "all",
                           "proxy": "frozen", "phase": "late", "metric": "log_enrichment",
                           "lo": lo, "hi": lo + 1} for k, lo in (("encoder", 0.5), ("decoder", -0.2))])
    eff = pd.DataFrame([{"layer": "mean", "bucket": "all", "proxy": "frozen", "phase": "late",
                         "metric": "log_enrichment", "contrast": f"balancing | {k}", "lo": lo, "hi": hi}
                        for k, lo, hi in (("encoder", -0.5, -0.1), ("decoder", -0.5, -0.1))])
    v = sweep.balancing_verdict(cells, eff)
    assert v == {"encoder": "attenuated", "decoder": "removed"}
    eff["lo"], eff["hi"] = -0.1, 0.2
    assert set(sweep.balancing_verdict(cells, eff).values()) == {"indistinguishable"}
    eff["lo"], eff["hi"] = 0.1, 0.2
    assert set(sweep.balancing_verdict(cells, eff).values()) == {"strengthened"}
    assert set(sweep.balancing_verdict(cells.iloc[:0], eff).values()) == {"undecided"}
    assert set(v.values()) <= set(sweep.BALANCING_WORDS)


def test_eta_is_the_weighted_mean_square_radius(loaded):
    eta = sweep.eta_by_bucket(loaded)
    t = loaded["encoder-natural-s1"].tokens.query("layer == 2")
    row = eta[(eta["run"] == "encoder-natural-s1") & (eta["layer"] == 2) & (eta["bucket"] == "all")].iloc[0]
    w = t["count_text"].to_numpy(float)
    # each type's t² freed of its count bias, c/(c−1) (tokens_table)
    assert np.isclose(row["eta"], np.sum(w * t["t"] ** 2 * w / (w - 1)) / w.sum())
    assert 0 <= row["small_t_share"] <= 1
    # bucket labels match the alignment table's, so the two can be joined
    align_buckets = set(loaded["encoder-natural-s1"].alignment["bucket"])
    assert set(eta["bucket"]) <= align_buckets


def test_frequency_profile_sees_the_balanced_mixture(loaded):
    f = sweep.frequency_profile(loaded).set_index("run")
    assert (f["types_seen"] > 0).all()
    # both kinds read the same streams for a (regime, seed)
    assert f.loc["encoder-balanced-s0", "effective_vocab"] == f.loc["decoder-balanced-s0", "effective_vocab"]


# --------------------------------------------------------------------------- report and verdicts
def test_layer_average_is_the_geometric_mean():
    a = pd.DataFrame({"step": [0, 0], "layer": [0, 1], "enrichment": [2.0, 0.5],
                      "d_iso_proxy": [0.0, 0.0], "d_iso_control_mean": [0.0, 0.0]})
    m = tables.mean_over_layers(tables.add_log_enrichment(a), ["step"])
    assert np.isclose(np.exp(m["log_enrichment"].iloc[0]), 1.0)    # x2 and x0.5: no effect


def test_run_summary_uses_the_layer_average_of_run_metrics(loaded):
    two = {n: loaded[n] for n in ("encoder-natural-s0", "decoder-natural-s0")}
    s = sweep.run_summary(two).set_index(["run", "proxy"])
    m = tables.run_metrics(two)
    row = m[(m["run"] == "decoder-natural-s0") & (m["layer"] == "mean") & (m["bucket"] == "all")
            & (m["proxy"] == "frozen") & (m["phase"] == "late")].iloc[0]
    assert np.isclose(s.loc[("decoder-natural-s0", "frozen"), "enrichment_late"],
                      np.exp(row["log_enrichment"]))


def test_property_verdicts_read_intervals():
    early = pd.DataFrame({"peak_frac": [0.1, 0.12, 0.11], "log_late_over_peak": [-0.3, -0.25, -0.35]})
    assert sweep.imprinted_early_property(early) == "supported"
    late = early.assign(peak_frac=[0.9, 0.95, 0.99])
    assert sweep.imprinted_early_property(late) == "partly"
    assert sweep.imprinted_early_property(late.assign(log_late_over_peak=[0.0, 0.0, 0.0])) == "undetected"
    prop = sweep.balancing_property
    assert prop({"encoder": "attenuated", "decoder": "attenuated"}) == "supported"
    assert prop({"encoder": "attenuated", "decoder": "indistinguishable"}) == "partly"
    assert prop({"encoder": "attenuated", "decoder": "removed"}) == "contradicted"
    assert prop({"encoder": "strengthened", "decoder": "indistinguishable"}) == "contradicted"
    assert prop({k: "indistinguishable" for k in KINDS}) == "undetected"
    assert prop({"encoder": "attenuated", "decoder": "undecided"}) == prop({}) == "undecided"
