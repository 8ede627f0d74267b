"""The lab's benchmarks (tanbias.lab.bench), each at the smallest size and number of steps that reaches
every line. No test asserts a timing, a share of a peak or the sign of a timing difference: timings are
`make bench`'s, and a test must pass on a busy machine. Also the report `make bench` prints
(tanbias.book.bench.format_report), from a report written by hand.
"""
from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from tanbias.book.bench import format_report, over_targets
from tanbias.errors import CorruptFileError
from tanbias.lab.bench import bench_ddp, bench_lab, gpu_check, measure_sizes, record_sizes
from tanbias.lab.probe import probe_steps


def _finite(d: dict, keys) -> bool:
    return all(np.isfinite(d[k]) for k in keys)


def test_bench_lab_reports_every_figure_for_every_precision():
    b = bench_lab(size="smoke", reps=1, run_steps=4, n_probe_steps=2, gemm_n=64)
    keys = ("tokens_per_s", "t_plain", "t_inline", "t_posthoc", "per_step_inline_ratio", "per_step_posthoc_ratio",
            "run_overhead_inline", "run_overhead_posthoc", "gemm_gflops", "peak_fraction")
    assert set(b["precisions"]) == {"fp32", "bf16"} and all(_finite(v, keys) for v in b["precisions"].values())
    assert {k: b[k] for k in keys} == {k: b["precisions"]["fp32"][k] for k in keys}   # the first at the top
    assert b["run_steps"] == 4 and b["probe_steps"] == len(probe_steps(4, 2)) and b["size"] == "smoke"
    assert b["speedup"] == pytest.approx(b["precisions"]["bf16"]["tokens_per_s"] / b["tokens_per_s"])


def test_measure_sizes_gives_a_row_per_size_and_precision():
    rows = measure_sizes(("smoke",), steps=1, precisions=("fp32",))
    assert [(r["size"], r["precision"]) for r in rows] == [("smoke", "fp32")]
    assert rows[0]["tokens_per_step"] == 128 and rows[0]["parameters"] > 0 and _finite(rows[0], ["seconds_per_step"])


def test_record_sizes_replaces_a_measured_row_and_keeps_the_others(tmp_path):
    import json

    path = tmp_path / "sizes.json"
    old = [{"size": "small", "precision": "fp32", "device": "cpu", "seconds_per_step": 1.0},
           {"size": "base", "precision": "bf16", "device": "cuda", "seconds_per_step": 0.1}]
    path.write_text(json.dumps(old))
    new = {"size": "small", "precision": "fp32", "device": "cpu", "seconds_per_step": 2.0}
    assert record_sizes([new], path) == path
    assert json.loads(path.read_text()) == [old[1], new]
    assert record_sizes([new], tmp_path / "fresh.json").exists()            # no file yet: written
    path.write_text("{not json")
    with pytest.raises(CorruptFileError, match="sizes.json"):
        record_sizes([new], path)


def test_gpu_check_reports_what_the_script_prints_on_the_cpu(tmp_path):
    r = gpu_check("smoke", steps=2, precision="fp32", device="cpu", out_dir=tmp_path / "run", gemm_n=64)
    assert r["device"] == "cpu" and r["peak_memory_gb"] is None and r["steps"] == 2
    assert _finite(r, ("tokens_per_s", "gemm_tflops", "peak_fraction", "probe_overhead", "loss_first", "loss_last"))
    assert (tmp_path / "run" / "summary.json").exists()


def test_gpu_check_script_exits_cleanly_without_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU: the script would train")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(["bash", str(root / "scripts" / "gpu_check.sh")], capture_output=True, text=True)
    assert out.returncode == 0 and "no CUDA GPU" in out.stdout


@pytest.mark.slow
def test_bench_ddp_reports_both_throughputs():
    r = bench_ddp("smoke", steps=2, nproc=1)           # every line, with one rank fewer to start
    assert _finite(r, ("tokens_per_s_one", "tokens_per_s_ddp"))
    assert r["speedup"] == pytest.approx(r["tokens_per_s_ddp"] / r["tokens_per_s_one"])


def test_bench_surgery_reports_a_plain_and_a_surgical_step():
    from tanbias.lab.bench import bench_surgery

    r = bench_surgery(size="smoke", reps=3)
    assert set(r) >= {"t_plain", "t_surgery", "ratio", "size", "kind", "device"}
    assert all(np.isfinite(r[k]) for k in ("t_plain", "t_surgery", "ratio"))     # timings, not their sign


# ---------------------------------------------------------------------------
# tanbias.book.bench's report: its summary line and what counts as over a target (no timing is run)
# ---------------------------------------------------------------------------
REPORT = {
    "book_build_s": 80.0, "book_build_ok": True, "ok": True, "path": "bench.json",
    "chapters": [{"doc": "chapters/01", "exec_s": 4.0, "page_bytes": 300_000,
                  "interactives": [{"name": "ch1-a", "median_ms": 5.0, "p95_ms": 9.0}]}],
    "lab": {"tokens_per_s": 2000.0, "per_step_inline_ratio": 1.0, "per_step_posthoc_ratio": 2.0,
            "run_overhead_inline": 1.0, "run_overhead_posthoc": 1.05, "speedup": 1.6,
            "precisions": {"fp32": {"tokens_per_s": 2000.0, "peak_fraction": 0.6, "gemm_gflops": 78.0,
                                    "run_overhead_inline": 1.0},
                           "bf16": {"tokens_per_s": 3200.0, "peak_fraction": 0.5, "gemm_gflops": 0.0,
                                    "run_overhead_inline": 1.0}}},
    "surgery": {"kind": "decoder", "size": "small", "t_plain": 2.0, "t_surgery": 2.1, "ratio": 1.05},
    "pretrained": {"models": {"m": {"total_s": 100.0, "probe_s": 10.0, "measure_s": 90.0, "forward_s": 50.0,
                                    "tokens": 1000, "tokens_per_s": 20.0, "gemm_gflops": 100.0,
                                    "gemm_fraction": 0.5, "peak_gb": 1.0}},
                   "all_s": 100.0, "targets": {"m": 120.0, "all": 1500.0}},
    "causal": {"runs_finished": 3, "sittings": 1, "wall_seconds": 3600.0, "budget_seconds": 7200.0,
               "run_seconds": 7000.0},
    "alias": {"runs_finished": 2, "sittings": 2, "wall_seconds": 1800.0, "budget_seconds": 14400.0,
              "run_seconds": 3400.0},
}


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
