"""Training under torchrun (DistributedDataParallel, gloo on the CPU), checked against one process.

Tolerances: every logged step's loss within 1e-4 nats of the single-process run
with the same global batch (:data:`~tanbias.lab.config.REPRODUCE_TOLERANCE`;
measured differences are about 1e-6, the order of float32 sums taken in another
order), and every value of the alignment tables within 1e-3 relative or 1e-4
absolute (the captures differ by float16 rounding of those 1e-6 differences).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from tanbias.errors import ParameterError
from tanbias.lab import distributed, runs
from tanbias.lab.config import REPRODUCE_TOLERANCE
from tanbias.lab.pipeline import train_and_analyse

SMOKE = {"size": "smoke", "steps": 8, "languages": ["en"], "checkpoint_every": 4, "eval_batches": 1,
         "probe": {"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}


def _torchrun(cfg_path, out, env=None):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "tanbias.lab", "train", str(cfg_path), "--out", str(out), "--no-progress", "--device", "cpu"]
    clean = {k: v for k, v in os.environ.items() if k not in distributed.TORCHRUN_VARS}
    return subprocess.run(cmd, capture_output=True, text=True, env={**clean, "OMP_NUM_THREADS": "1", **(env or {})})


def _steps(path):
    return [(r["step"], r["loss"]) for r in runs.read_jsonl(path / "metrics.jsonl") if r["type"] == "step"]


def _same_tables(a_dir, b_dir):
    a, b = pd.read_csv(a_dir / "alignment.csv"), pd.read_csv(b_dir / "alignment.csv")
    assert a.shape == b.shape
    num = a.select_dtypes("number").columns
    assert np.allclose(a[num].to_numpy(float), b[num].to_numpy(float), rtol=1e-3, atol=1e-4, equal_nan=True)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_two_processes_train_as_one_and_a_killed_rank_resumes(tmp_path):
    """Two ranks train the run one process trains (the encoder, the harder case: ranks mask
    different numbers of tokens): rank 1 is SIGKILLed after step 6 (checkpoint at 4), torchrun
    stops the run, and the run resumed under torchrun logs every step once, each loss within
    the reproduce tolerance of the single process's, and the same alignment tables."""
    cfg = {**SMOKE, "name": "ddp-encoder", "kind": "encoder"}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    first = _torchrun(path, tmp_path / "two", env={"TANBIAS_KILL_AFTER_STEP": "6", "TANBIAS_KILL_RANK": "1"})
    assert first.returncode != 0
    assert not (tmp_path / "two" / "summary.json").exists()
    second = _torchrun(path, tmp_path / "two")
    assert second.returncode == 0, second.stderr[-2000:]
    train_and_analyse(cfg, out_dir=tmp_path / "one", fresh=True, progress=False, device="cpu")
    one, two = _steps(tmp_path / "one"), _steps(tmp_path / "two")
    assert [s for s, _ in two] == list(range(cfg["steps"]))              # logged once, by rank 0: nothing lost
    assert np.allclose([x for _, x in one], [x for _, x in two], rtol=0, atol=REPRODUCE_TOLERANCE["loss_atol"])
    _same_tables(tmp_path / "one", tmp_path / "two")
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert summary["processes"] == 2 and summary["resume_mismatches"] == 0


def test_half_set_torchrun_variables_are_a_clear_error(tmp_path, monkeypatch, capsys):
    with pytest.raises(ParameterError, match="torchrun variables are half set: RANK, WORLD_SIZE are set but "
                                             "LOCAL_RANK, MASTER_ADDR, MASTER_PORT are not"):
        distributed.context(torch.device("cpu"), environ={"RANK": "0", "WORLD_SIZE": "2"})
    with pytest.raises(ParameterError, match="0 <= RANK < WORLD_SIZE"):
        distributed.context(torch.device("cpu"), environ={"RANK": "3", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                                                          "MASTER_ADDR": "localhost", "MASTER_PORT": "1"})
    # the command line: status 2 and the message, before the run's folder is touched (in this process:
    # `python -m tanbias.lab` is sys.exit(main()), which the tests that start it check)
    from tanbias.lab.__main__ import main

    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({**SMOKE, "name": "x", "kind": "decoder"}))
    for var in distributed.TORCHRUN_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RANK", "0")
    capsys.readouterr()
    assert main(["train", str(path), "--out", str(tmp_path / "x")]) == 2
    assert "torchrun variables are half set" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_shard_takes_every_world_th_row_and_refuses_uneven_batches():
    batch = {"input_ids": torch.arange(12).reshape(4, 3), "labels": torch.arange(12).reshape(4, 3)}
    ctx = distributed.Context(rank=1, world=2)
    assert distributed.shard(batch, ctx)["input_ids"][:, 0].tolist() == [3, 9]
    with pytest.raises(ParameterError, match="batch_size=4 is out of range for 3 processes"):
        distributed.shard(batch, distributed.Context(rank=0, world=3))


@pytest.mark.slow
@pytest.mark.multiprocess
def test_sharded_posthoc_probe_equals_one_process(tmp_path):
    from tiny_checkpoints import make_tiny_checkpoint

    revs = ["step0", "step1", "step2"]
    path = make_tiny_checkpoint("llama", tmp_path / "tiny", revisions=revs)
    args = ["-m", "tanbias.lab", "checkpoints", str(path), "--revisions", *revs, "--tokens", "512", "--no-progress"]
    clean = {k: v for k, v in os.environ.items() if k not in distributed.TORCHRUN_VARS}
    env = {**clean, "OMP_NUM_THREADS": "1"}             # both with one thread: bit-identical captures
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          *args, "--out", str(tmp_path / "two")], capture_output=True, text=True, env=env)
    assert two.returncode == 0, two.stderr[-2000:]
    from tanbias.lab.__main__ import main

    threads = torch.get_num_threads()
    torch.set_num_threads(1)                           # in this process too, as the ranks ran
    try:
        assert main([*args[2:], "--out", str(tmp_path / "one")]) == 0
    finally:
        torch.set_num_threads(threads)
    for name in ("alignment", "radius", "radius_corr"):
        a, b = (tmp_path / "one" / f"{name}.csv").read_text(), (tmp_path / "two" / f"{name}.csv").read_text()
        assert a == b and len(a.splitlines()) > 3, name      # rank 1's revision is in rank 0's tables


@pytest.mark.slow
@pytest.mark.multiprocess
def test_zoo_measurements_share_out_over_ranks_and_merge_in_order(tmp_path, monkeypatch):
    """``pretrained.measure_all`` under torchrun: rank r measures models r, r+2, ...; rank 0
    returns every model's manifest in the zoo's order, as one process does. The script
    replaces ``measure`` by a stand-in that records the rank that called it, so nothing loads:
    what is tested is the sharing out and the merge (the measurement itself is tested in
    test_pretrained.py)."""
    from tanbias.lab import zoo

    names = list(zoo.ZOO)
    assert len(names) >= 3                     # rank 1 gets at least one model
    script = tmp_path / "measure_all.py"
    script.write_text(
        "import json, os, sys\n"
        "from tanbias.lab.analysis import pretrained as pt\n"
        "pt.measure = lambda name, out_dir, progress, **s: {'name': name, 'by': int(os.environ.get('RANK', 0))}\n"
        "out = pt.measure_all('all', root=sys.argv[1], progress=False)\n"
        "if out:\n"
        "    json.dump({'rank': int(os.environ.get('RANK', 0)), 'out': out}, open(sys.argv[2], 'w'))\n")
    clean = {k: v for k, v in os.environ.items() if k not in distributed.TORCHRUN_VARS}
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          str(script), str(tmp_path / "zoo"), str(tmp_path / "two.json")],
                         capture_output=True, text=True, env={**clean, "OMP_NUM_THREADS": "1"})
    assert two.returncode == 0, two.stderr[-2000:]
    from tanbias.lab.analysis import pretrained as pt

    monkeypatch.setattr(pt, "measure", lambda name, out_dir, progress, **s: {"name": name, "by": 0})
    a = {"out": pt.measure_all("all", root=tmp_path / "zoo", progress=False)}    # one process: this one
    b = json.loads((tmp_path / "two.json").read_text())
    assert b["rank"] == 0 and list(b["out"]) == names == list(a["out"])
    assert [b["out"][n]["by"] for n in names] == [i % 2 for i in range(len(names))]   # shared out
    assert [a["out"][n]["by"] for n in names] == [0] * len(names)
    assert [m["name"] for m in b["out"].values()] == names                            # merged in order
