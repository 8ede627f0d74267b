"""The lab's benchmarks (tanbias.lab.bench), each at the smallest size and number of steps that reaches
every line. No test asserts a timing, a share of a peak or the sign of a timing difference: timings are
`make bench`'s, and a test must pass on a busy machine. (The report `make bench` prints:
test_book_bench.py.)
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from tanbias.errors import CorruptFileError
from tanbias.lab.bench import bench_ddp, bench_lab, bench_measure, flop_per_token, gpu_check, measure_sizes, record_sizes
from tanbias.lab.probe import probe_steps


def _finite(d: dict, keys) -> bool:
    return all(np.isfinite(d[k]) for k in keys)


@pytest.mark.slow
def test_bench_lab_reports_every_figure_for_every_precision():
    b = bench_lab(size="smoke", reps=1, run_steps=4, n_probe_steps=2, gemm_n=64)
    keys = ("tokens_per_s", "t_plain", "t_inline", "t_separate", "per_step_inline_ratio", "per_step_separate_ratio",
            "run_overhead_inline", "run_overhead_separate", "gemm_gflops", "peak_fraction")
    assert set(b["precisions"]) == {"fp32", "bf16"} and all(_finite(v, keys) for v in b["precisions"].values())
    assert {k: b[k] for k in keys} == {k: b["precisions"]["fp32"][k] for k in keys}   # the first at the top
    assert b["run_steps"] == 4 and b["probe_steps"] == len(probe_steps(4, 2)) and b["size"] == "smoke"
    assert b["speedup"] == pytest.approx(b["precisions"]["bf16"]["tokens_per_s"] / b["tokens_per_s"])
    assert b["flop_per_token"] > 0 and 0 <= b["load_average"]


def test_a_token_s_flop_count_includes_the_output_layer_tied_or_not():
    from tanbias.lab.config import RunConfig
    from tanbias.lab.models import model_from_config

    m = model_from_config(RunConfig(name="x", kind="decoder", size="smoke"))
    blocks = sum(p.numel() for n, p in m.named_parameters() if "embed_tokens" not in n and "lm_head" not in n)
    out = m.get_output_embeddings().weight.numel()
    assert flop_per_token(m) == 6.0 * (blocks + out) and out > 0
    tied = model_from_config(RunConfig(name="x", kind="decoder", size="smoke", tie_embeddings=True))
    assert tied.get_output_embeddings().weight is tied.get_input_embeddings().weight
    assert flop_per_token(tied) == flop_per_token(m)


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


@pytest.mark.slow
def test_gpu_check_reports_what_the_script_prints_on_the_cpu(tmp_path):
    r = gpu_check("smoke", steps=2, precision="fp32", device="cpu", out_dir=tmp_path / "run", gemm_n=64)
    assert r["device"] == "cpu" and r["peak_memory_gb"] is None and r["steps"] == 2
    assert _finite(r, ("tokens_per_s", "gemm_tflops", "peak_fraction", "probe_overhead", "loss_first", "loss_last"))
    assert (tmp_path / "run" / "summary.json").exists()


@pytest.mark.slow
def test_gpu_check_script_exits_cleanly_without_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU: the script would train")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(["bash", str(root / "scripts" / "gpu_check.sh")], capture_output=True, text=True)
    assert out.returncode == 0 and "no CUDA GPU" in out.stdout


@pytest.mark.slow
@pytest.mark.multiprocess
def test_bench_ddp_reports_both_throughputs():
    r = bench_ddp("smoke", steps=2, nproc=1)           # every line, with one rank fewer to start
    assert _finite(r, ("tokens_per_s_one", "tokens_per_s_ddp"))
    assert r["speedup"] == pytest.approx(r["tokens_per_s_ddp"] / r["tokens_per_s_one"])


@pytest.mark.slow
def test_bench_surgery_reports_a_plain_and_a_surgical_step():
    from tanbias.lab.bench import bench_surgery

    r = bench_surgery(size="smoke", reps=3)
    assert set(r) >= {"t_plain", "t_surgery", "ratio", "size", "kind", "device"}
    assert all(np.isfinite(r[k]) for k in ("t_plain", "t_surgery", "ratio"))     # timings, not their sign


@pytest.mark.slow
def test_bench_measure_reaches_every_line(tmp_path):
    from measurehelpers import SMALL
    from tanbias.lab.analysis.measure_inputs import MIN_TOKENS
    from tiny_checkpoints import make_tiny_checkpoint

    path = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0",)) / "step0"
    res = bench_measure(str(path), n_tokens=MIN_TOKENS, **{k: v for k, v in SMALL.items() if k != "n_tokens"})
    assert res["forward_s"] > 0 and res["ratio"] > 0 and res["ratio_alignment"] > 0
    assert {"setup_s", "ratio_after_setup"} <= set(res)     # the setup (loading, the corpus counts) apart
    assert res["tokens"] >= MIN_TOKENS and res["tokens_per_s"] > 0
    assert set(res["seconds"]) == {"suite", "suite_alignment"} and res["seconds"]["suite"]["probe"] == 0
