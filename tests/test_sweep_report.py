"""The numbers chapters 7, 8 and the closing page quote (tanbias.lab.analysis.sweep_report): on the
smoke 2x2 sweep of tests/conftest.py and on the committed runs. (That the chapters quote exactly
these numbers is test_reports.py's.)"""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.lab.analysis import sweep, sweep_report


@pytest.mark.slow
def test_sweep_numbers_on_the_smoke_sweep(loaded):
    sw = sweep_report.analyse(loaded, controls=())
    r8 = sweep_report.numbers(sw)
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
    words = sweep_report.words(sw)
    assert set(words) == {f"balancing, {k}, {p}" for k in ("encoder", "decoder") for p in ("late", "early")}
    assert set(words.values()) <= set(sweep.BALANCING_WORDS)
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
