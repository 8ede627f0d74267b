"""The report `make bench` prints (tanbias.book.bench): its summary line and what counts as over a
target, from a report written by hand (no timing is run; the lab's benchmarks: test_lab_bench.py).
And the rule that makes the bench the only place of timings: no test compares a measured duration with
a bound (durationguard.py reads every file of tests/; a planted one is caught, legitimate ones are not)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from durationguard import duration_asserts, is_duration_name

from tanbias.book.bench import format_report, over_targets

REPORT = {
    "book_build_s": 80.0, "book_build_ok": True, "ok": True, "path": "bench.json",
    "chapters": [{"doc": "chapters/01", "exec_s": 4.0, "page_bytes": 300_000,
                  "interactives": [{"name": "ch1-a", "median_ms": 5.0, "p95_ms": 9.0}]}],
    "lab": {"size": "small", "kind": "decoder", "flop_per_token": 9.4e6, "load_average": 0.96,
            "tokens_per_s": 2000.0, "per_step_inline_ratio": 1.0, "per_step_separate_ratio": 2.0,
            "run_overhead_inline": 1.0, "run_overhead_separate": 1.05, "speedup": 1.6,
            "precisions": {"fp32": {"tokens_per_s": 2000.0, "peak_fraction": 0.6, "gemm_gflops": 78.0,
                                    "run_overhead_inline": 1.0},
                           "bf16": {"tokens_per_s": 3200.0, "peak_fraction": 0.5, "gemm_gflops": 0.0,
                                    "run_overhead_inline": 1.0}}},
    "surgery": {"kind": "decoder", "size": "small", "t_plain": 2.0, "t_surgery": 2.1, "ratio": 1.05},
    "measure": {"model": "smollm2-135m", "tokens": 16384, "threads": 1, "tokens_per_s": 150.0, "forward_s": 40.0,
                "body_forward_s": 35.0, "suite_s": 110.0, "ratio": 2.75, "suite_alignment_s": 200.0,
                "ratio_alignment": 5.0, "probe_tokens": 2048, "peak_rss_gb": 3.0,
                "setup_s": 20.0, "ratio_after_setup": 2.25,
                "targets": {"ratio": 3.0, "ratio_after_setup": 3.0, "ratio_alignment": 6.0}},
    "pretrained": {"models": {"m": {"total_s": 100.0, "probe_s": 10.0, "measure_s": 90.0, "forward_s": 50.0,
                                    "tokens": 1000, "tokens_per_s": 20.0, "gemm_gflops": 100.0,
                                    "gemm_fraction": 0.5, "peak_gb": 1.0}},
                   "all_s": 100.0, "targets": {"m": 120.0, "all": 1500.0}},
    "causal": {"runs_finished": 3, "sittings": 1, "wall_seconds": 3600.0, "budget_seconds": 7200.0,
               "run_seconds": 7000.0},
    "alias": {"runs_finished": 2, "sittings": 2, "wall_seconds": 1800.0, "budget_seconds": 14400.0,
              "run_seconds": 3400.0},
}


def test_each_part_says_when_it_starts_and_ends_with_its_time(monkeypatch):
    """make bench shows its progress: each part of the lab's and the command's timings as it starts
    and as it ends, with its time (a planted clock: no timing is run); a part that fails says so and
    the next one runs."""
    import itertools

    from tanbias.book import bench
    from tanbias.lab import bench as lab_bench

    monkeypatch.setattr(lab_bench, "bench_lab", lambda **k: {"tokens_per_s": 1.0})
    monkeypatch.setattr(lab_bench, "bench_surgery", lambda **k: 1 / 0)
    monkeypatch.setattr(lab_bench, "bench_ddp", lambda **k: {"speedup": 1.0})
    monkeypatch.setattr(lab_bench, "bench_measure", lambda **k: {"ratio": 2.0})
    lines, clock = [], itertools.count(0.0, 1.5)
    progress = bench.Progress(write=lines.append, clock=lambda: next(clock))
    report = {}
    bench._bench_lab_and_measure(report, True, progress)
    assert lines == ["bench: the lab's training and probe ...", "bench: the lab's training and probe done in 1.5 s",
                     "bench: the gradient surgery ...", "bench: the gradient surgery FAILED after 1.5 s",
                     "bench: one process against torchrun ...", "bench: one process against torchrun done in 1.5 s",
                     "bench: the measurement command ...", "bench: the measurement command done in 1.5 s"]
    assert report["measure"] == {"ratio": 2.0} and "ZeroDivisionError" in report["surgery"]["error"]
    assert set(progress.seconds) == {"the lab's training and probe", "the gradient surgery",
                                     "one process against torchrun", "the measurement command"}
    assert progress.total().startswith("bench: every part done in ")


def test_a_report_within_every_target_says_so():
    assert over_targets(REPORT) == []
    assert format_report(REPORT).splitlines()[-1].startswith("all targets met: yes")


def test_a_committed_record_over_its_target_is_named_in_the_summary():
    r = copy.deepcopy(REPORT)
    r["pretrained"]["models"]["m"]["measure_s"] = 130.0
    r["causal"]["wall_seconds"] = 9000.0
    r["alias"]["wall_seconds"] = 15000.0
    r["lab"]["speedup"] = 0.1
    # the experiments in the registry's order (tanbias.lab.experiments.EXPERIMENTS)
    assert over_targets(r) == ["bf16 / fp32 speed-up", "m measurements", "alias wall time", "causal wall time"]
    text = format_report(r)
    assert "the aliasing knob (committed, data/runs/alias.json): 2 runs finished in 2 sitting(s)" in text
    assert "4.17 h wall time so far, OVER its 4 h budget" in text
    assert "1.00 h wall time so far, within its 2 h budget" in format_report(REPORT)
    last = text.splitlines()[-1]
    assert "all targets met" not in last
    assert last.startswith("this run's measured targets met: yes; over their target: bf16 / fp32 speed-up, "
                           "m measurements, alias wall time, causal wall time")


def test_a_matmul_rate_that_rounds_to_zero_is_not_divided_by():
    text = format_report(REPORT)
    assert "% of 0 GFLOP/s" not in text and "bf16 matmul rate rounds to 0 GFLOP/s" in text
    assert "60 % of 78 GFLOP/s (fp32 matmul" in text


def test_the_measure_command_over_its_target_is_named():
    r = copy.deepcopy(REPORT)
    assert "the whole command without the alignment test 110 s = 2.75 ok x (target <= 3)" in format_report(r)
    assert "after its setup (loading, the corpus counts: 20 s) 2.25 ok x" in format_report(r)
    r["measure"]["ratio_after_setup"] = 3.5
    assert over_targets(r) == ["measure command ratio_after_setup"]
    r["measure"]["ratio_after_setup"] = 2.25
    r["measure"]["ratio_alignment"] = 6.5
    assert over_targets(r) == ["measure command ratio_alignment"]
    del r["measure"]["ratio_alignment"]                    # --quick: no alignment test
    assert over_targets(r) == [] and "with it" not in format_report(r)


def _quoted_row(doc: str, name: str, stage: str | None = None, stages=()) -> str:
    """The table row of ``doc`` that quotes ``make <name>``: the row that names ``stage`` (a stage's
    title), or, without it, the one that names none of the design's ``stages``."""
    from tanbias.lab.runs import ROOT

    rows = [line for line in (ROOT / doc).read_text(encoding="utf8").splitlines()
            if line.startswith("|") and f"`make {name}`" in line
            and (stage in line if stage else not any(st in line for st in stages))]
    assert len(rows) == 1, f"{doc} has {len(rows)} table rows for make {name}" + (f", {stage}" if stage else "")
    return rows[0]


def test_the_readme_and_the_lab_guide_quote_each_experiments_recorded_wall_time():
    """The wall time each budgeted experiment's row quotes is its record's (what `make bench` reads),
    and the count of committed runs of an experiment still running, or stopped at its budget with
    runs not run, is the count of its complete run folders."""
    import re

    import pytest

    from tanbias.book.bench import experiment_record, budgeted_experiments
    from tanbias.lab import runs
    from tanbias.lab.experiments import EXPERIMENTS

    for key, (record, budget, _title) in budgeted_experiments().items():
        rec = experiment_record(runs.ROOT, record, budget)
        if rec is None:
            continue
        hours = f"{rec['wall_seconds'] / 3600:.1f} h"
        name, _, stage = key.partition("-")          # a stage's record: <design>-<stage>.json
        design = EXPERIMENTS[name]
        names = design.names(stage=stage) if design.stages else design.names()
        titles = [st.title for st in design.stages]
        done = sum(runs.is_complete(runs.run_dir(n)) for n in names)
        for doc in ("README.md", "chapters/lab_guide.md"):
            row = _quoted_row(doc, name, design.stage(stage).title if stage else None, titles)
            assert hours in row, f"{doc}: make {name} should quote the recorded {hours}: {row}"
            if done < len(names):
                quoted = re.search(rf"\b{done} (committed )?in {re.escape(hours)}", row)
                assert quoted and ("running" in row or "not run" in row), \
                    f"{doc}: {done} of make {name}'s runs are in: {row}"
            else:
                assert "running" not in row and "not run" not in row, row
    with pytest.raises(AssertionError):
        _quoted_row("README.md", "no-such-experiment")


# --------------------------------------------------------------------------- no test asserts a duration
#: checks that bound a measured duration, one a source: each must be found, on its line
PLANTED = {
    "a clock read twice": "import time\nt0 = time.perf_counter()\nrun()\nassert time.perf_counter() - t0 < 5\n",
    "a name given the difference": "from time import monotonic\nstart = monotonic()\nrun()\n"
                                   "elapsed_ = monotonic() - start\nx = 2 * elapsed_\nassert x <= 2.0\n",
    "a recorded field": "def test_f(summary):\n    train(cfg)\n    assert summary['train_seconds'] < 60\n",
    "every figure of a report": "def test_f(figs):\n    x = 1\n    x += 1\n"
                                "    assert all(f['p95_ms'] <= 50 for f in figs)\n",
    "a median of the clock's": "import time, numpy as np\ndef test_f():\n    ts = []\n"
                               "    for _ in range(3):\n        t = time.time(); run(); ts.append(time.time() - t)\n"
                               "    assert np.median(ts) < 0.1\n",
    "the sign of a difference": "def test_f(b):\n    x = 0\n    y = 1\n"
                                "    assert b['inline_s'] - b['plain_s'] > 0\n",
    "a ratio of timings": "def test_f(b):\n    x = 0\n    y = 1\n    assert b['run_overhead_inline'] <= 1.10\n",
    "a throughput over the measured peak": "def test_f(manifest):\n    x = 0\n    y = 1\n"
                                           "    assert 0 < manifest['gemm_fraction'] < 1.5\n",
    "an approximate time": "import time\ndef test_f():\n    t0 = time.time()\n    dt = time.time() - t0\n"
                           "    assert dt == pytest.approx(2.0, abs=0.5)\n",
    "a failure on a slow run": "import time\ndef test_f():\n    t0 = time.time()\n"
                               "    if time.time() - t0 > 30:\n        pytest.fail('too slow')\n",
    "numpy's assertion": "import time\nx = 0\ny = 0\nnp.testing.assert_array_less(durations, 1.0)\n",
    "datetime": "from datetime import datetime, timedelta\nstart = datetime.now()\nrun()\n"
                "assert datetime.now() - start < timedelta(seconds=5)\n",
    "timeit": "import timeit\nx = 1\ny = 2\nassert timeit.timeit(f, number=10) < 1\n",
}

#: checks that read a clock, a timing's name or a count, and bound no measured duration
LEGITIMATE = {
    "a count of steps": "def test_f(cfg, durations):\n    assert cfg.steps <= 10 and len(durations) == 3\n"
                        "    assert summary['probe_steps'] == [0, 1, 3]\n",
    "a hang guard's timeout argument": "import subprocess\nproc = subprocess.run(cmd, timeout=120)\n"
                                       "assert proc.returncode == 0\nproc.wait(timeout=20)\n",
    "a deadline": "import time\ndeadline = time.monotonic() + 1800\nwhile not done():\n"
                  "    if time.monotonic() > deadline:\n        pytest.fail('the build hung')\n"
                  "    assert time.monotonic() <= deadline\n",
    "a recorded figure": "def test_f(smoke, rows):\n    assert smoke['seconds'] > 0\n"
                         "    assert rows[0]['seconds_per_step'] == 2.0\n    assert 0 < rows[0]['exec_s']\n",
    "a planted clock": "def test_f(monkeypatch):\n    monkeypatch.setattr(mod.time, 'perf_counter', lambda: 0.0)\n"
                       "    assert mod.latency()['p95_ms'] == pytest.approx(8.0)\n",
    "a figure equal to its formula": "def test_f(b):\n"
                                     "    assert b['speedup'] == pytest.approx(b['bf16_per_s'] / b['fp32_per_s'])\n",
    "names that only look like units": "def test_f(f_s, ev_s, second_moment, se):\n"
                                       "    assert abs(np.mean(f_s) - 1) < 4 * se and second_moment > 0.5\n"
                                       "    assert np.allclose(ev_s, 1.0)\n",
}


@pytest.mark.parametrize("what", PLANTED)
def test_a_planted_duration_assert_is_caught(what):
    source = PLANTED[what]
    found = duration_asserts(source)
    assert [f.line for f in found] == [len(source.splitlines()) - (what == "a failure on a slow run")], found


@pytest.mark.parametrize("what", LEGITIMATE)
def test_a_check_that_bounds_no_measured_duration_is_not_flagged(what):
    assert duration_asserts(LEGITIMATE[what]) == []


def test_names_of_timings_and_of_counts():
    assert all(map(is_duration_name, ("wall_seconds", "exec_s", "p95_ms", "tokens_per_s", "runtime", "speedup",
                                      "time [s]", "trainTime", "tokens_per_s_ddp")))
    assert not any(map(is_duration_name, ("steps", "runs", "n_probe_steps", "time", "timeout", "f_s",
                                          "second_moment", "ratio's 95 % CI")))


@pytest.mark.slow
def test_no_test_asserts_a_duration():
    """No file of tests/ compares a measured duration with a bound: timings are make bench's
    (tanbias.book.bench, tanbias.lab.bench), which reports them against their targets; a test must pass
    on a busy machine. (A timeout that only guards against a hang is an argument or a deadline.)"""
    found = {path.name: [str(f) for f in duration_asserts(path.read_text(encoding="utf8"))]
             for path in sorted(Path(__file__).parent.glob("*.py"))}
    found = {name: lines for name, lines in found.items() if lines}
    assert not found, f"tests that assert a duration (move the comparison to make bench): {found}"


def test_the_measure_page_is_reported_against_its_target_and_the_slowest_lab_chapter():
    from tanbias.book.bench import MEASURE_PAGE, measure_page_record

    chapters = [{"doc": "chapters/06_residual_feedback", "exec_s": 29.5},     # not a lab chapter
                {"doc": "chapters/08_eurobert_vs_decoder", "exec_s": 28.0},
                {"doc": "chapters/13_rival_accounts", "exec_s": 24.0},
                {"doc": MEASURE_PAGE, "exec_s": 21.0}]
    r = copy.deepcopy(REPORT)
    r["chapters"] += chapters
    r["measure_page"] = measure_page_record(chapters)
    assert r["measure_page"]["slowest_lab"] == "chapters/08_eurobert_vs_decoder"
    assert r["measure_page"]["ratio"] == 21.0 / 28.0
    text = format_report(r)
    assert (f"{MEASURE_PAGE}: 21.0 s ok (target <= 30 s); over the slowest lab chapter "
            "(chapters/08_eurobert_vs_decoder, 28.0 s): 0.75x ok (target <= 1)") in text
    assert over_targets(r) == []
    r["chapters"][-1]["exec_s"] = 29.0                   # within 30 s, but slower than every lab chapter
    r["measure_page"] = measure_page_record(r["chapters"])
    assert over_targets(r) == ["measure page over the slowest lab chapter"]
    assert measure_page_record(chapters[:3]) is None     # the page not built
