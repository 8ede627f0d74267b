"""Chapter 10's dose experiment: the knobs on the corpus, the run queue, the statistics.

The knobs are checked on the corpus itself (fast); a smoke-size dose sweep
(every level for the decoder, two seeds; the token knob's extremes for the
encoder) runs end to end in-process and its statistics are recomputed with
scipy; the queue is killed mid-run and resumed.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tanbias.alignment import frequency_buckets
from tanbias.errors import ParameterError
from tanbias.frequency import concentration
from tanbias.lab import runs
from tanbias.lab.analysis import dose
from tanbias.lab.config import (DOSE_LEVELS, DOSE_SEEDS, KINDS, N_SPECIAL, dose_config, dose_names,
                                validate_config)
from tanbias.lab.corpus import mixture_probabilities, split
from tanbias.lab.data import keep_probabilities, lm_batches, stream_frequencies, training_streams
from tanbias.lab.pipeline import _git_commit_run, dose_configs, run_queue, train_and_analyse
from tanbias.lab.tokenizer import load_tokenizer
from tanbias.lab.train import train

SMOKE = dict(steps=6, size="smoke", languages=["en", "de"], checkpoint_every=3, eval_batches=1,
             probe={"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4})


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


# --------------------------------------------------------------------------- the knobs on the corpus
@pytest.fixture(scope="module")
def expected():
    return dose.expected_concentration().set_index("level")


def test_token_knob_spans_ten_times_in_collision_probability(expected):
    token = [lv for lv in dose.level_positions("token")]
    c = expected.loc[token, "collision"].to_numpy()
    assert np.all(np.diff(c) < 0), c                      # monotone along the knob
    assert c[0] / c[-1] >= 10.0                            # the 10x span
    steps = np.diff(np.log(c))                             # designed as three equal log steps
    assert np.allclose(steps, steps.mean(), rtol=0.15), steps


def test_language_knob_barely_moves_concentration(expected):
    lang = [lv for lv in dose.level_positions("language")]
    c = expected.loc[lang, "collision"].to_numpy()
    assert np.all(np.diff(c) < 0)
    assert 1.0 < c[0] / c[-1] < 1.2                       # the finding chapter 10 states


def test_expected_frequencies_match_a_sampled_stream(tok):
    cfg = validate_config(dose_config("decoder", "skewed", 0, **SMOKE))
    f = stream_frequencies(cfg, tok)
    it, _ = training_streams(cfg, tok)
    counts = np.bincount(np.concatenate([next(it)["input_ids"].ravel().numpy() for _ in range(400)]),
                         minlength=len(tok))
    top = np.argsort(-f)[:20]
    # 51k sampled tokens: the 20 most frequent types' shares agree with the expectation
    assert np.allclose(counts[top] / counts.sum(), f[top], rtol=0.25, atol=2e-3)


def test_subsampling_flattens_the_head_as_designed(tok):
    base = validate_config(dose_config("decoder", "skewed", 0, **SMOKE))
    flat = validate_config(dose_config("decoder", "b100", 0, **SMOKE))
    f = stream_frequencies(base, tok)
    a, _ = training_streams(base, tok)
    b, _ = training_streams(flat, tok)
    ca = np.bincount(np.concatenate([next(a)["input_ids"].ravel().numpy() for _ in range(200)]), minlength=len(tok))
    cb = np.bincount(np.concatenate([next(b)["input_ids"].ravel().numpy() for _ in range(200)]), minlength=len(tok))
    ratio = concentration(ca[N_SPECIAL:])["collision"] / concentration(cb[N_SPECIAL:])["collision"]
    kept = f * keep_probabilities(f, 1.0, flat["flatten_f0"])
    want = concentration(f[N_SPECIAL:])["collision"] / concentration(kept[N_SPECIAL:])["collision"]
    assert ratio > 5 and abs(np.log(ratio / want)) < np.log(1.6), (ratio, want)


def test_flatten_zero_draws_nothing(tok):
    docs = split(["en"])[0]["en"][:200]
    a = lm_batches("decoder", iter(docs), tok, 2, 16, seed=3)
    b = lm_batches("decoder", iter(docs), tok, 2, 16, seed=3, keep=None)
    for _ in range(5):
        assert np.array_equal(next(a)["input_ids"], next(b)["input_ids"])


def test_keep_probabilities_never_drop_specials_or_rare_types(tok):
    docs = split(["en"])[0]["en"][:300]
    keep = np.zeros(len(tok))          # drop every ordinary token...
    keep[1000:] = 1.0                  # ...below id 1000
    ids = next(lm_batches("decoder", iter(docs), tok, 2, 32, keep=keep))["input_ids"].numpy()
    assert np.all((ids < N_SPECIAL) | (ids >= 1000))
    p = keep_probabilities([0.5, 1e-4, 1e-6], 1.0, 1e-4)
    assert p[0] == pytest.approx(2e-4) and p[1] == 1.0 and p[2] == 1.0


def test_mixture_weights_and_temperature():
    c = {"a": ["x y"] * 10, "b": ["x y"] * 10, "c": ["x y"] * 10}
    w = {"a": 4.0, "b": 2.0, "c": 1.0}
    nat = mixture_probabilities(c, "balanced", 1.0, w)["words"]
    assert nat == pytest.approx({"a": 4 / 7, "b": 2 / 7, "c": 1 / 7})
    t2 = mixture_probabilities(c, "balanced", 2.0, w)["words"]
    assert t2["a"] / t2["c"] == pytest.approx(2.0)
    uni = mixture_probabilities(c, "balanced", "inf", w)["words"]
    assert uni == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


@pytest.mark.parametrize("key, value, words", [
    ("temperature", 0.5, "[1, inf]"), ("temperature", "hot", "[1, inf]"), ("flatten", 1.5, "[0, 1]"),
    ("flatten_f0", 0, "(0, 1)"), ("language_weights", {"en": -1}, "positive weight"),
    ("probe_eval_batches", -1, "probe_eval_batches")])
def test_bad_dose_settings_name_themselves(key, value, words):
    cfg = dose_config("decoder", "skewed", 0, **SMOKE)
    cfg[key] = value
    with pytest.raises(ParameterError, match=key) as err:
        validate_config(cfg)
    assert words in str(err.value)


def test_dose_names_and_order():
    names = dose_names()
    assert len(names) == len(DOSE_SEEDS) * len(KINDS) * len(DOSE_LEVELS)
    assert names[:4] == [f"dose-decoder-{lv}-s0" for lv in ("skewed", "b16", "b37", "b100")]
    token = [n for n in names if "token" in DOSE_LEVELS[n.split("-")[2]]["knobs"]]
    assert names[:len(token)] == token                   # the token knob first, every seed
    assert [int(n.split("-s")[-1]) for n in token] == sorted(int(n.split("-s")[-1]) for n in token)
    committed = sorted(p.stem for p in (runs.RUNS_DIR / "configs").glob("dose-*.json"))
    assert committed == sorted(names)
    for p in dose_configs(write=False):       # the committed configs are what the code writes
        kind, level, seed = p.stem.split("-")[1], p.stem.split("-")[2], int(p.stem.split("-s")[-1])
        assert json.loads(p.read_text()) == dose_config(kind, level, seed)


# --------------------------------------------------------------------------- power analysis
def test_power_matches_a_simulation():
    rng = np.random.default_rng(0)
    x = np.array([0, 1 / 3, 2 / 3, 1])
    sd, n = 0.08, 3
    ratio = dose.detectable_ratio(sd, n, x)
    b = np.log(ratio)
    hits = 0
    for _ in range(2000):
        y = b * x[None, :] + rng.normal(0, 0.3, (n, 1)) + rng.normal(0, sd, (n, 4))
        yc = y - y.mean(1, keepdims=True)
        xc = np.broadcast_to(x - x.mean(), y.shape)
        slope = (xc * yc).sum() / (xc ** 2).sum()
        resid = yc - slope * xc
        df = n * 4 - n - 1
        se = np.sqrt((resid ** 2).sum() / df / (xc ** 2).sum())
        hits += abs(slope / se) > stats.t.ppf(0.975, df)
    assert abs(hits / 2000 - 0.8) < 0.03


def test_power_analysis_from_the_committed_sweep():
    p = dose.power_analysis()
    chosen = p[p["chosen"]]
    assert set(chosen["kind"]) == set(KINDS)
    assert (chosen["detectable_ratio"] <= 1.25).all()        # the design's target
    for kind, g in p.groupby("kind"):
        assert np.all(np.diff(g.sort_values("seeds")["detectable_ratio"]) < 0)   # more seeds, smaller


# --------------------------------------------------------------------------- a smoke dose sweep
@pytest.fixture(scope="module")
def smoke_sweep(tmp_path_factory, tok):
    root = tmp_path_factory.mktemp("dose")
    # a smoke probe batch has 128 tokens: with the real threshold no type would repeat in it
    # at the flattest level, so the smoke knob flattens only the types above 0.3 %
    sm = {**SMOKE, "flatten_f0": 3e-3}
    cfgs = [dose_config("decoder", lv, s, **sm) for s in (0, 1) for lv in DOSE_LEVELS]
    cfgs += [dose_config("encoder", lv, s, **sm) for s in (0, 1) for lv in ("skewed", "b100")]
    for cfg in cfgs:
        train_and_analyse(cfg, out_dir=root / cfg["name"], fresh=True, progress=False)
    loaded = dose.load_dose([c["name"] for c in cfgs], runs_dir=root)
    f = stream_frequencies(validate_config(cfgs[0]), tok)
    table = dose.run_table(loaded, buckets=frequency_buckets(f * 1e9, 3, n_special=N_SPECIAL))
    return root, loaded, table


def test_smoke_sweep_has_every_link(smoke_sweep):
    _, loaded, table = smoke_sweep
    assert len(loaded) == 18 and len(table) == 18
    for col in ["log_collision", "log_eta_q1", "log_enrichment_early", "log_enrichment_late",
                "mean_cosine_late", "isoscore_late", "participation_late", "eval_loss"]:
        assert table[col].notna().all(), col
    dec = table[table["kind"] == "decoder"].groupby("level")["log_collision"].mean()
    assert dec["b100"] < dec["b37"] < dec["b16"] < dec["skewed"]       # the knob moved the stream


def test_dose_response_agrees_with_scipy(smoke_sweep):
    _, _, table = smoke_sweep
    r = dose.dose_response(table, "log_enrichment_late", "token", "decoder")
    g = dose.knob_runs(table, "token", "decoder")
    # the seed-paired slope is the within-seed regression slope
    xc = g["log_collision"] - g.groupby("seed")["log_collision"].transform("mean")
    yc = g["log_enrichment_late"] - g.groupby("seed")["log_enrichment_late"].transform("mean")
    assert r["slope"] == pytest.approx(stats.linregress(xc, yc).slope, rel=1e-9)
    assert r["lo"] < r["slope"] < r["hi"] and r["df"] == len(g) - 2 - 1
    # Page's L by hand: levels in knob order, ranks within each seed
    wide = g.assign(pos=g["level"].map(dose.level_positions("token"))).pivot_table(
        index="seed", columns="pos", values="log_enrichment_late").to_numpy()
    wide = wide if r["page_direction"] == "+" else -wide
    ranks = np.apply_along_axis(stats.rankdata, 1, wide)
    assert r["page_L"] == pytest.approx(float((ranks.sum(0) * np.arange(1, 5)).sum()))
    # flattest vs start, paired by seed: scipy's paired t interval
    p = g.pivot_table(index="seed", columns="level", values="log_enrichment_late")
    ci = stats.ttest_rel(p["b100"], p["skewed"]).confidence_interval()
    assert (r["change_lo"], r["change_hi"]) == pytest.approx((ci.low, ci.high))
    assert r["observed"] in "+-0" and r["predicted"] == "-"


def test_a_seed_with_only_the_start_level_is_left_out(smoke_sweep):
    """The skewed start is shared by both knobs: a seed that has only the start of a knob
    (while its other levels are still training, say) says nothing about a slope and must
    not count as one."""
    _, _, table = smoke_sweep
    r = dose.dose_response(table, "log_enrichment_late", "language", "decoder")
    extra = table[(table["kind"] == "decoder") & (table["level"] == "skewed") & (table["seed"] == 0)].assign(
        seed=7, log_enrichment_late=lambda t: t["log_enrichment_late"] + 5.0)
    r2 = dose.dose_response(pd.concat([table, extra]), "log_enrichment_late", "language", "decoder")
    assert r2["n_seeds"] == r["n_seeds"] == 2 and r2["n_runs"] == r["n_runs"]
    assert r2["slope"] == pytest.approx(r["slope"]) and r2["change_lo"] == pytest.approx(r["change_lo"])


def test_interaction_and_adaptive_statistics(smoke_sweep):
    _, loaded, table = smoke_sweep
    inter = dose.architecture_interaction(table)
    assert np.isfinite(inter["diff"]) and inter["lo"] < inter["diff"] < inter["hi"]
    frame = dose.adaptive_frame(loaded)
    assert set(frame["run"]) == set(loaded) and (frame["step"] > 0).all()
    assert np.allclose(frame["gap"], frame["heldout_loss"] - frame["train_loss"])
    res = dose.adaptive_association(frame)
    assert res["n"] == len(frame) and res["lo"] <= res["within"] <= res["hi"]
    allr = dose.all_responses(table)
    assert len(allr) == len(dose.LINKS) * 2 * len(KINDS)


def test_no_run_committed_is_a_clear_error():
    with pytest.raises(ValueError, match="make dose"):
        dose.run_table({})


# --------------------------------------------------------------------------- the queue
def test_killed_queue_resumes_and_loses_nothing(tmp_path, monkeypatch):
    cfg = dose_config("decoder", "b37", 0, **SMOKE)
    cdir = tmp_path / "configs"
    cdir.mkdir()
    path = cdir / f"{cfg['name']}.json"
    path.write_text(json.dumps(cfg))
    monkeypatch.setenv("TANBIAS_KILL_AFTER_STEP", "4")       # a real SIGKILL after step 4
    first = run_queue([path], jobs=1, out_root=tmp_path / "runs", report_name="dose.json")
    assert first["runs"][cfg["name"]]["exit"] != 0
    monkeypatch.delenv("TANBIAS_KILL_AFTER_STEP")
    second = run_queue([path], jobs=1, out_root=tmp_path / "runs", report_name="dose.json")
    assert second["runs"][cfg["name"]]["exit"] == 0
    third = run_queue([path], jobs=1, out_root=tmp_path / "runs", report_name="dose.json")
    assert third["runs"] == {}                                  # complete: skipped
    report = json.loads((tmp_path / "runs" / "dose.json").read_text())
    assert len(report["sittings"]) == 2                         # both sittings kept
    resumed = runs.read_jsonl(tmp_path / "runs" / cfg["name"] / "metrics.jsonl")
    train(cfg, out_dir=tmp_path / "straight", fresh=True, progress=False)
    straight = runs.read_jsonl(tmp_path / "straight" / "metrics.jsonl")
    steps = lambda recs, t: [(r["step"], r["loss"]) for r in recs if r["type"] == t]   # noqa: E731
    assert [s for s, _ in steps(resumed, "step")] == list(range(cfg["steps"]))          # each step once
    assert np.allclose([x for _, x in steps(resumed, "step")], [x for _, x in steps(straight, "step")], atol=1e-4)
    ev_r, ev_s = steps(resumed, "probe_eval"), steps(straight, "probe_eval")
    assert [s for s, _ in ev_r] == [s for s, _ in ev_s] and np.allclose([x for _, x in ev_r], [x for _, x in ev_s])


def test_commit_of_a_finished_run_takes_only_its_files(tmp_path):
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True, text=True)  # noqa: E731
    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    run = tmp_path / "data" / "runs" / "dose-x"
    (run / "work").mkdir(parents=True)
    (run / "alignment.csv").write_text("a\n1\n")
    (run / "work" / "checkpoint.pt").write_text("big")
    (tmp_path / "other.txt").write_text("unrelated")
    git("add", "other.txt")                                    # staged by someone else: left alone
    (run / "manifest.json").write_text(json.dumps({"files": {"alignment.csv": {}}}))
    _git_commit_run(run, "dose: dose-x finished")
    shown = git("show", "--name-only", "--format=", "HEAD").stdout.split()
    assert sorted(shown) == ["data/runs/dose-x/alignment.csv", "data/runs/dose-x/manifest.json"]
    assert "other.txt" in git("diff", "--cached", "--name-only").stdout
