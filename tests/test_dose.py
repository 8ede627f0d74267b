"""The dose experiment's statistics (tanbias.lab.analysis.dose) on a smoke-size dose sweep.

Every level for the decoder, two seeds, and the token knob's extremes for the
encoder run end to end in-process; the statistics are recomputed with scipy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tanbias.theory.alignment import frequency_buckets
from tanbias.lab.analysis import dose, dose_design, registered
from tanbias.lab.config import KINDS, N_SPECIAL
from tanbias.lab.data import Stream
from tanbias.lab.experiments import DOSE, DOSE_LEVELS, dose_config
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
    loaded = registered.load(DOSE, runs_dir=root, names=[c.name for c in cfgs])
    f = Stream.from_config(cfgs[0], tokenizer).frequencies
    table = dose.run_table(loaded, buckets=frequency_buckets(f * 1e9, 3, n_special=N_SPECIAL))
    return root, loaded, table


@pytest.mark.slow
def test_smoke_sweep_has_every_link(dose_sweep):
    _, loaded, table = dose_sweep
    assert len(loaded) == 18 and len(table) == 18
    for col in ["log_collision", "log_eta_q1", "log_enrichment_early", "log_enrichment_late",
                "mean_cosine_late", "isoscore_late", "participation_late", "eval_loss"]:
        assert table[col].notna().all(), col
    dec = table[table["kind"] == "decoder"].groupby("level")["log_collision"].mean()
    assert dec["b100"] < dec["b37"] < dec["b16"] < dec["skewed"]       # the knob moved the stream


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------- synthetic runs, known answers
#: ln collision of each level (the token knob spans 2.7 nats, the language knob 0.09)
LOG_COLLISION = {"skewed": 0.0, "b16": -0.9, "b37": -1.8, "b100": -2.7, "T2": -0.03, "T4": -0.06, "uniform": -0.09}


def synthetic_table(rng, *, n_seeds=6, metric=lambda run: 0.0, noise=0.05, seed_sd=0.0, kinds=("decoder",),
                    gain=lambda run: 1.0 + 0.1 * run["log_collision"]):
    """A run table with every level of both knobs: ``metric(run)`` + seed offset + noise in column ``y``."""
    rows = []
    for kind in kinds:
        for seed in range(n_seeds):
            offset = rng.normal(0, seed_sd) if seed_sd else 0.0
            for level, spec in DOSE_LEVELS.items():
                run = {"run": f"dose-{kind}-{level}-s{seed}", "kind": kind, "level": level, "seed": seed,
                       "on_token": "token" in spec["knobs"], "on_language": "language" in spec["knobs"],
                       "x_token": dose_design.level_positions("token").get(level, np.nan),
                       "x_language": dose_design.level_positions("language").get(level, np.nan),
                       "log_collision": LOG_COLLISION[level] + rng.normal(0, 0.005)}
                run["gain"] = gain(run) + rng.normal(0, 0.02)
                run["y"] = metric(run) + offset + rng.normal(0, noise)
                rows.append(run)
    return pd.DataFrame(rows)


def _with_metric(table, name="log_enrichment_late"):
    return table.rename(columns={"y": name})


@pytest.mark.slow
def test_holm_reads_the_verdict_table_at_adjusted_p():
    from statsmodels.stats.multitest import multipletests

    p = np.array([0.001, 0.015, 0.02, 0.3, 0.04])
    r = pd.DataFrame({"p": p, "end_to_end": [-1.0, 1.0, -0.5, 0.1, 0.3], "predicted": ["-", "+", "-", "0", "0"],
                      "verdict": "x", "observed": "x"})
    out = dose.apply_multiplicity(r)
    assert np.allclose(out["p_holm"], multipletests(p, method="holm")[1])
    # by hand: sorted p times (m - rank), running maximum
    order = np.argsort(p)
    by_hand = np.maximum.accumulate(np.minimum(1, p[order] * (len(p) - np.arange(len(p)))))
    assert np.allclose(out["p_holm"].to_numpy()[order], by_hand)
    assert out["verdict"].tolist() == ["as predicted", "not detected", "not detected",
                                       "no detectable trend, as predicted", "no detectable trend, as predicted"]
    assert out["verdict_unadjusted"].tolist() == ["x"] * 5          # the registered reading is kept beside it
    nan = dose.apply_multiplicity(r.assign(p=[np.nan, 0.001, 0.5, 0.5, 0.5]))
    # a row without p stays in its family at p = 1: the others are adjusted over five rows, not four
    assert nan["observed"].iloc[0] == "n/a" and nan["verdict"].iloc[0] == "not decided"
    assert np.isnan(nan["p_holm"].iloc[0]) and np.isclose(nan["p_holm"].iloc[1], 0.005)


@pytest.mark.slow
def test_lack_of_fit_is_the_F_test_of_the_level_means_against_the_line():
    rng = np.random.default_rng(1)
    bump = {"b37": -0.4}                                   # a dip at one level: not a line
    curved = _with_metric(synthetic_table(rng, metric=lambda run: 0.1 * run["log_collision"]
                                          + bump.get(run["level"], 0.0)))
    r = dose.dose_response(curved, "log_enrichment_late", "token", "decoder")
    g = dose.knob_runs(curved, "token", "decoder")
    # by hand: residual sums of squares of the line (level-mean x) and of the level means, seed intercepts in both
    y = g["log_enrichment_late"].to_numpy()
    xl = g.groupby("level")["log_collision"].transform("mean").to_numpy()
    S = pd.get_dummies(g["seed"]).to_numpy(float)
    L = pd.get_dummies(g["level"]).to_numpy(float)
    rss = lambda X: float(np.sum((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2))
    rss_line, rss_means = rss(np.column_stack([S, xl])), rss(np.column_stack([S, L[:, 1:]]))
    df_means = len(y) - S.shape[1] - L.shape[1] + 1
    F = ((rss_line - rss_means) / (L.shape[1] - 2)) / (rss_means / df_means)
    assert r["lof_F"] == pytest.approx(F, rel=1e-8)
    assert r["lof_p"] == pytest.approx(stats.f.sf(F, L.shape[1] - 2, df_means), rel=1e-8) and r["lof_p"] < 1e-3
    straight = _with_metric(synthetic_table(rng, metric=lambda run: 0.1 * run["log_collision"]))
    ps = [dose.dose_response(_with_metric(synthetic_table(np.random.default_rng(s),
                                                          metric=lambda run: 0.1 * run["log_collision"])),
                             "log_enrichment_late", "token", "decoder")["lof_p"] for s in range(30)]
    assert 0.2 < np.mean(ps) < 0.8                          # a line: lack-of-fit p about uniform
    assert dose.dose_response(straight, "log_enrichment_late", "token", "decoder")["lof_p"] > 1e-3


def test_seed_intercepts_and_the_realised_residual_sd():
    rng = np.random.default_rng(2)
    big = _with_metric(synthetic_table(rng, n_seeds=8, metric=lambda run: 0.2 * run["log_collision"], noise=0.1,
                                       seed_sd=1.0))
    none = _with_metric(synthetic_table(rng, n_seeds=8, metric=lambda run: 0.2 * run["log_collision"], noise=0.1))
    rb = dose.dose_response(big, "log_enrichment_late", "token", "decoder")
    rn = dose.dose_response(none, "log_enrichment_late", "token", "decoder")
    assert rb["seed_p"] < 1e-6 and rn["seed_p"] > 0.01
    assert 0.07 < rb["resid_sd"] < 0.14 and 0.07 < rn["resid_sd"] < 0.14     # the noise, seed offsets removed


@pytest.mark.slow
def test_training_progress_ancova_tells_the_knob_from_the_gain():
    """A reading that follows the gain alone loses its knob effect at matched gain; one that
    follows the knob keeps it."""
    rng = np.random.default_rng(3)

    def gain(run):                         # the knob lowers the gain, but not in lockstep
        return 1.0 + 0.15 * run["log_collision"] + rng.normal(0, 0.1)

    via_gain = _with_metric(synthetic_table(rng, n_seeds=8, gain=gain, noise=0.02,
                                            metric=lambda run: 2.0 * run["gain"]))
    r = dose.apply_multiplicity(pd.DataFrame([dose.dose_response(via_gain, "log_enrichment_late", "token",
                                                                 "decoder")]))
    r = r.iloc[0]
    assert r["observed"] == "-"                                   # the raw slope sees the gain's trend
    assert r["progress_lo"] < 0 < r["progress_hi"] and r["progress_survives"] is not None
    assert not r["progress_survives"]
    direct = _with_metric(synthetic_table(rng, n_seeds=8, gain=gain, noise=0.02,
                                          metric=lambda run: 0.3 * run["log_collision"]))
    r = dose.apply_multiplicity(pd.DataFrame([dose.dose_response(direct, "log_enrichment_late", "token",
                                                                 "decoder")])).iloc[0]
    assert r["observed"] == "-" and r["progress_survives"] is not None and r["progress_survives"]
    assert r["progress_end_to_end"] == pytest.approx(0.3 * -2.7, abs=0.1)


def test_knob_comparison_recovers_the_excess_of_the_language_knob():
    rng = np.random.default_rng(4)

    def metric(slope_lang):
        return lambda run: (0.2 * run["log_collision"] if run["on_token"] else slope_lang * run["log_collision"])

    same = _with_metric(synthetic_table(rng, n_seeds=10, metric=metric(0.2), noise=0.02))
    more = _with_metric(synthetic_table(rng, n_seeds=10, metric=metric(3.0), noise=0.02))
    a, b = dose.knob_comparison(same), dose.knob_comparison(more)
    assert a["excess_lo"] < 0 < a["excess_hi"]
    dx = LOG_COLLISION["uniform"]
    assert b["excess"] == pytest.approx((3.0 - 0.2) * dx, abs=0.05) and b["excess_hi"] < 0 and b["p"] < 1e-3
    assert b["from_token"] == pytest.approx(0.2 * dx, abs=0.01) and b["language"] == pytest.approx(3.0 * dx, abs=0.05)


def _adaptive_frame(rng, slope, n_seeds=4, steps=(1, 2, 4, 8, 16, 32), persist=True):
    """Run-steps of two levels: participation = cell mean + a run's own offset (+ noise); the
    held-out loss = cell mean + slope * participation deviation + a run's own offset (+ noise)."""
    rows = []
    for level in ("skewed", "b100"):
        for seed in range(n_seeds):
            ux, uy = rng.normal(0, 1.0), rng.normal(0, 0.5)
            for step in steps:
                dx = (ux if persist else 0.0) + rng.normal(0, 0.3)
                rows.append({"run": f"dose-decoder-{level}-s{seed}", "kind": "decoder", "level": level,
                             "seed": seed, "step": step, "frac": step / 40, "participation": 10 + step + dx,
                             "heldout_loss": 5 - 0.01 * step + slope * dx + (uy if persist else 0.0)
                             + rng.normal(0, 0.05)})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_adaptive_association_has_the_run_as_its_unit():
    rng = np.random.default_rng(5)
    f = _adaptive_frame(rng, slope=0.0, n_seeds=6)
    res = dose.adaptive_association(f)
    sd_w = dose.within_cell_sd(f)
    dev = f["participation"] - f.groupby(list(dose.ADAPTIVE_CELL))["participation"].transform("mean")
    assert sd_w == pytest.approx(np.sqrt((dev ** 2).sum() / (len(f) - f.groupby(["level", "step"]).ngroups)))
    # persistent run offsets in both: run-steps are not independent, the clustered interval is wider
    assert (res["hi"] - res["lo"]) > 1.5 * (res["naive_hi"] - res["naive_lo"]) and res["lag1"] > 0.5
    assert res["n_runs"] == 12 and res["sd_within"] == pytest.approx(sd_w)
    # a known slope per unit of participation reads as slope x within-cell SD
    g = _adaptive_frame(np.random.default_rng(6), slope=0.2, n_seeds=40, persist=False)
    r = dose.adaptive_association(g)
    assert r["within"] == pytest.approx(0.2 * r["sd_within"], rel=0.1) and r["lo"] > 0
    assert r["per_run"] == pytest.approx(0.2 * r["sd_within"], rel=0.35)
    # phases split at early_frac, each in its own within-cell SD
    early, late = (dose.adaptive_association(g, phase=ph, early_frac=0.3) for ph in ("early", "late"))
    assert early["n"] == (g["frac"] <= 0.3).sum() and late["n"] == (g["frac"] > 0.3).sum()
    with pytest.raises(ValueError, match="phase"):
        dose.adaptive_association(g, phase="middle")


def test_learning_table_reads_the_gain_over_unigram():
    rng = np.random.default_rng(7)
    t = synthetic_table(rng, n_seeds=3, kinds=("encoder", "decoder"))
    t = t.assign(eval_loss=5.0, unigram_loss=5.0 + t["gain"], accuracy=0.1, unigram_accuracy=0.05)
    lt = dose.learning_table(t)
    assert len(lt) == 2 * len(DOSE_LEVELS) and (lt["runs"] == 3).all()
    row = lt[(lt["kind"] == "decoder") & (lt["level"] == "b100")].iloc[0]
    want = t[(t["kind"] == "decoder") & (t["level"] == "b100")]["gain"]
    assert row["gain"] == pytest.approx(want.mean()) and row["gain_sd"] == pytest.approx(want.std())
    assert lt["level"].tolist()[:len(DOSE_LEVELS)] == list(DOSE_LEVELS)
