"""The dose experiment's statistics (tanbias.lab.analysis.dose) on a smoke-size dose sweep.

Every level for the decoder, two seeds, and the token knob's extremes for the
encoder run end to end in-process; the statistics are recomputed with scipy.
"""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tanbias.alignment import frequency_buckets
from tanbias.lab.analysis import dose, dose_design
from tanbias.lab.config import KINDS, N_SPECIAL
from tanbias.lab.data import stream_frequencies
from tanbias.lab.experiments import DOSE_LEVELS, dose_config
from tanbias.lab.pipeline import train_and_analyse

SMOKE = dict(steps=6, size="smoke", languages=["en", "de"], checkpoint_every=3, eval_batches=1,
             probe={"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4})


# --------------------------------------------------------------------------- a smoke dose sweep
@pytest.fixture(scope="module")
def dose_sweep(tmp_path_factory, tokenizer):
    root = tmp_path_factory.mktemp("dose")
    # a smoke probe batch has 128 tokens: with the real threshold no type would repeat in it
    # at the flattest level, so the smoke knob flattens only the types above 0.3 %; five random
    # controls instead of twenty (the statistics below read enrichments, not p-values)
    sm = {**SMOKE, "flatten_f0": 3e-3, "probe_eval_batches": 1, "probe": {**SMOKE["probe"], "n_controls": 5}}
    cfgs = [dose_config("decoder", lv, s, **sm) for s in (0, 1) for lv in DOSE_LEVELS]
    cfgs += [dose_config("encoder", lv, s, **sm) for s in (0, 1) for lv in ("skewed", "b100")]
    for cfg in cfgs:
        train_and_analyse(cfg, out_dir=root / cfg.name, fresh=True, progress=False)
    loaded = dose.load_dose([c.name for c in cfgs], runs_dir=root)
    f = stream_frequencies(cfgs[0], tokenizer)
    table = dose.run_table(loaded, buckets=frequency_buckets(f * 1e9, 3, n_special=N_SPECIAL))
    return root, loaded, table


def test_smoke_sweep_has_every_link(dose_sweep):
    _, loaded, table = dose_sweep
    assert len(loaded) == 18 and len(table) == 18
    for col in ["log_collision", "log_eta_q1", "log_enrichment_early", "log_enrichment_late",
                "mean_cosine_late", "isoscore_late", "participation_late", "eval_loss"]:
        assert table[col].notna().all(), col
    dec = table[table["kind"] == "decoder"].groupby("level")["log_collision"].mean()
    assert dec["b100"] < dec["b37"] < dec["b16"] < dec["skewed"]       # the knob moved the stream


def test_dose_response_agrees_with_scipy(dose_sweep):
    _, _, table = dose_sweep
    r = dose.dose_response(table, "log_enrichment_late", "token", "decoder")
    g = dose.knob_runs(table, "token", "decoder")
    # the seed-paired slope is the within-seed regression slope
    xc = g["log_collision"] - g.groupby("seed")["log_collision"].transform("mean")
    yc = g["log_enrichment_late"] - g.groupby("seed")["log_enrichment_late"].transform("mean")
    assert r["slope"] == pytest.approx(stats.linregress(xc, yc).slope, rel=1e-9)
    assert r["lo"] < r["slope"] < r["hi"] and r["df"] == len(g) - 2 - 1
    # Page's L by hand: levels in knob order, ranks within each seed
    wide = g.assign(pos=g["level"].map(dose_design.level_positions("token"))).pivot_table(
        index="seed", columns="pos", values="log_enrichment_late").to_numpy()
    wide = wide if r["page_direction"] == "+" else -wide
    ranks = np.apply_along_axis(stats.rankdata, 1, wide)
    assert r["page_L"] == pytest.approx(float((ranks.sum(0) * np.arange(1, 5)).sum()))
    # flattest vs start, paired by seed: scipy's paired t interval
    p = g.pivot_table(index="seed", columns="level", values="log_enrichment_late")
    ci = stats.ttest_rel(p["b100"], p["skewed"]).confidence_interval()
    assert (r["change_lo"], r["change_hi"]) == pytest.approx((ci.low, ci.high))
    assert r["observed"] in "+-0" and r["predicted"] == "-"


def test_a_seed_with_only_the_start_level_is_left_out(dose_sweep):
    """The skewed start is shared by both knobs: a seed that has only the start of a knob
    (while its other levels are still training, say) says nothing about a slope and must
    not count as one."""
    _, _, table = dose_sweep
    r = dose.dose_response(table, "log_enrichment_late", "language", "decoder")
    extra = table[(table["kind"] == "decoder") & (table["level"] == "skewed") & (table["seed"] == 0)].assign(
        seed=7, log_enrichment_late=lambda t: t["log_enrichment_late"] + 5.0)
    r2 = dose.dose_response(pd.concat([table, extra]), "log_enrichment_late", "language", "decoder")
    assert r2["n_seeds"] == r["n_seeds"] == 2 and r2["n_runs"] == r["n_runs"]
    assert r2["slope"] == pytest.approx(r["slope"]) and r2["change_lo"] == pytest.approx(r["change_lo"])


def test_interaction_and_adaptive_statistics(dose_sweep):
    _, loaded, table = dose_sweep
    inter = dose.architecture_interaction(table)
    assert np.isfinite(inter["diff"]) and inter["lo"] < inter["diff"] < inter["hi"]
    frame = dose.adaptive_frame(loaded)
    assert set(frame["run"]) == set(loaded) and (frame["step"] > 0).all()
    assert np.allclose(frame["gap"], frame["heldout_loss"] - frame["train_loss"])
    res = dose.adaptive_association(frame)
    assert res["n"] == len(frame) and res["lo"] <= res["within"] <= res["hi"]
    allr = dose.all_responses(table)
    assert len(allr) == len(dose_design.LINKS) * 2 * len(KINDS)


def test_no_run_committed_is_a_clear_error():
    with pytest.raises(ValueError, match="make dose"):
        dose.run_table({})
