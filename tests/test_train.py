"""Training runs (tanbias.lab.train): end to end at smoke size, resume after interruption and kill, integrity."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import tanbias
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import runs
from tanbias.lab.__main__ import main as lab_main
from tanbias.lab.analysis.tables import analyse_run
from tanbias.lab.pipeline import train_and_analyse as train
from tanbias.lab.train import Interrupted
from tanbias.lab.train import train as train_only

ROOT = runs.ROOT

SMOKE = {"name": "smoke-test", "kind": "encoder", "size": "smoke", "steps": 12, "checkpoint_every": 4,
         "eval_batches": 2,
         "probe": {"n_steps": 5, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}


def _losses(d):
    return [r["loss"] for r in runs.read_jsonl(d / "metrics.jsonl") if r["type"] == "step"]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs") / "smoke-test"
    summary = train(SMOKE, out_dir=d, fresh=True, progress=False)
    return d, summary


@pytest.mark.slow
def test_smoke_train_and_probe_end_to_end(smoke_run):
    d, summary = smoke_run
    data = runs.load_run(d)               # verifies every checksum of the manifest
    assert len(data.metrics) == 12 and np.isfinite(data.metrics["loss"]).all()
    assert data.evaluation["unigram_loss"] > 0 and "accuracy" in data.evaluation
    assert summary["probe_steps"][0] == 0 and summary["probe_steps"][-1] == 11
    a = data.alignment
    assert set(a["proxy"]) == {"frozen", "refit", "local"}
    assert set(a["step"]) == set(summary["probe_steps"])
    assert set(a["layer"]) == {0, 1, 2}          # embedding + 2 blocks
    assert "all" in set(a["bucket"]) and any(b.startswith("q1") for b in a["bucket"])
    assert a["p_energy"].between(1 / 21 - 1e-6, 1).all()   # CSV keeps 6 digits
    assert np.isfinite(a["enrichment"]).all()
    assert len(data.radius_corr) == 5 * 3
    m = data.manifest
    assert m["seed"] == 0 and m["package_version"] == tanbias.__version__ and "git" in m
    assert set(m["files"]) >= {"alignment.csv", "metrics.jsonl", "config.json"}
    assert not (d / "work" / "probe").exists() or len(list((d / "work" / "probe").glob("*.npz"))) == 5


@pytest.mark.slow
def test_resume_after_interruption_gives_identical_metrics(smoke_run, tmp_path):
    ref, _ = smoke_run
    d = tmp_path / "smoke-test"
    with pytest.raises(Interrupted):
        train_only(SMOKE, out_dir=d, fresh=True, progress=False, stop_after=7)
    assert len(_losses(d)) == 7              # steps 4-6 are logged but after the checkpoint at 4
    summary = train(SMOKE, out_dir=d, progress=False)
    assert summary["resume_mismatches"] == 0
    assert _losses(d) == _losses(ref)        # nothing lost, nothing duplicated, bit-identical
    a, b = pd.read_csv(ref / "alignment.csv"), pd.read_csv(d / "alignment.csv")
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.slow
def test_resume_after_sigkill(smoke_run, tmp_path):
    ref, _ = smoke_run
    d = tmp_path / "smoke-test"
    cfg = tmp_path / "smoke.json"
    cfg.write_text(json.dumps(SMOKE))
    cmd = [sys.executable, "-m", "tanbias.lab", "train", str(cfg), "--out", str(d), "--no-progress"]
    env = dict(os.environ, TANBIAS_KILL_AFTER_STEP="6")
    killed = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert len(_losses(d)) == 6 and not (d / "manifest.json").exists()
    # the same command resumes it, in this process: what it reads is on disk (the killed process
    # left nothing else), and a second process would only import torch again
    assert lab_main(cmd[3:]) == 0
    assert _losses(d) == _losses(ref)
    pd.testing.assert_frame_equal(pd.read_csv(ref / "alignment.csv"), pd.read_csv(d / "alignment.csv"))


@pytest.mark.slow
def test_a_unigram_head_run_killed_mid_way_resumes_with_identical_losses(tmp_path):
    """A real SIGKILL between checkpoints, the unigram head included: the resumed run's losses are
    those of an uninterrupted one, bit for bit (the bias is in the checkpoint, not rebuilt)."""
    cfg = {**SMOKE, "name": "smoke-unigram-kill", "kind": "decoder", "output_bias": "unigram", "steps": 8}
    path = tmp_path / "smoke.json"
    path.write_text(json.dumps(cfg))
    ref = tmp_path / "ref"
    train_only(cfg, out_dir=ref, fresh=True, progress=False)
    d = tmp_path / "killed"
    cmd = [sys.executable, "-m", "tanbias.lab", "train", str(path), "--out", str(d), "--no-progress"]
    killed = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, TANBIAS_KILL_AFTER_STEP="6"), capture_output=True,
                            text=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert len(_losses(d)) == 6
    assert lab_main(cmd[3:]) == 0                        # resumed by the same command, in this process
    assert _losses(d) == _losses(ref) and len(_losses(ref)) == 8


def test_corrupt_or_missing_files_are_refused_with_the_regenerate_command(smoke_run, tmp_path):
    ref, _ = smoke_run
    d = tmp_path / "smoke-test"
    shutil.copytree(ref, d)
    with open(d / "alignment.csv", "a") as f:
        f.write("garbage\n")
    with pytest.raises(CorruptFileError) as err:
        runs.load_run(d)
    assert "alignment.csv" in str(err.value) and "sha256" in str(err.value)
    assert "python -m tanbias.lab train" in err.value.regenerate
    (d / "summary.json").unlink()
    shutil.copy(ref / "alignment.csv", d / "alignment.csv")
    with pytest.raises(CorruptFileError, match="summary.json.*missing"):
        runs.load_run(d)
    cap = sorted((d / "work" / "probe").glob("*.npz"))[1]
    cap.write_bytes(cap.read_bytes()[:100])   # truncated capture
    with pytest.raises(CorruptFileError) as err:
        analyse_run(d, progress=False)
    assert cap.name in str(err.value) and "--fresh" in err.value.regenerate


def test_constant_schedule_keeps_the_learning_rate_after_warmup():
    from tanbias.lab.train import lr_schedule

    cos, const = lr_schedule(100, 5), lr_schedule(100, 5, "constant")
    assert cos(2) == const(2) == 3 / 5
    assert const(99) == 1.0 and abs(cos(99) - 0.1) < 1e-3


@pytest.mark.slow
def test_train_revisions_saves_a_mirror_of_the_runs_steps(smoke_run, tmp_path):
    """The checkpoint probe's input for a lab model: the same steps as train()."""
    import torch

    from tanbias.lab.checkpoints import load_checkpoint, local_revisions
    from tanbias.lab.models import load_trained
    from tanbias.lab.train import train_revisions

    ref, _ = smoke_run
    root = train_revisions(SMOKE, tmp_path / "mirror", at=(0, 4, SMOKE["steps"]))
    assert local_revisions(root) == ["step0", "step4", "step12"]
    mirrored, _, kind = load_checkpoint(root, "step12")
    trained, _, _ = load_trained(ref)
    assert kind == "encoder"
    for (name, a), b in zip(trained.state_dict().items(), mirrored.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), name
    with pytest.raises(ParameterError, match="at=13 is out of range"):
        train_revisions(SMOKE, tmp_path / "bad", at=(13,))


@pytest.mark.slow
def test_probe_steps_score_the_probe_eval_batches(tmp_path, tokenizer):
    """Every probe step scores the stream's probe-eval batches: distinct batches, whose masked positions
    (an encoder's) add up to the logged count; the batch scored twice would count its own twice."""
    from tanbias.lab.data import Stream, batch_targets
    from tanbias.lab.experiments import dose_config

    cfg = dose_config("encoder", "skewed", 1, steps=2, size="smoke", languages=["en", "de"], checkpoint_every=2,
                      eval_batches=1, probe_eval_batches=2,
                      probe={"n_steps": 2, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4})
    d = tmp_path / cfg.name
    train_only(cfg, out_dir=d, fresh=True, progress=False)
    logged = [r for r in runs.read_jsonl(d / "metrics.jsonl") if r["type"] == "probe_eval"]
    scored = [int(batch_targets("encoder", b).numel()) for b in Stream.from_config(cfg, tokenizer).probe_eval(2)]
    assert [r["step"] for r in logged] == [0, 1, 2]        # the probe steps, and the trained model
    assert all(r["tokens"] == sum(scored) for r in logged)
    assert scored[0] != scored[1]              # the masks differ: two batches, not one twice


@pytest.mark.slow
def test_a_run_derives_its_stream_once(tmp_path, monkeypatch):
    """One Stream per run: an aliased unigram-head run that scores probe-eval batches builds its
    stream once and its expected frequencies (the alias map's input) once, though its model (the
    alias rows, the output bias from its training targets), training batches, validation batches,
    probe-eval text and convergence text all read them."""
    from tanbias.lab import data
    from tanbias.lab.experiments import rivals_config

    built, counted = [], []
    from_config, language_counts = data.Stream.from_config.__func__, data._language_counts
    monkeypatch.setattr(data.Stream, "from_config",
                        classmethod(lambda cls, cfg, tok=None: built.append(cfg.name) or from_config(cls, cfg, tok)))
    monkeypatch.setattr(data, "_language_counts", lambda *a: counted.append(a) or language_counts(*a))
    cfg = rivals_config("decoder", "unigram-k3", 0, steps=3, size="smoke", languages=["pt"], checkpoint_every=3,
                        eval_batches=1, probe={"n_steps": 2, "tokens": 64, "rank": 4, "local_rank": 2, "min_count": 4})
    assert cfg.alias > 0 and cfg.output_bias == "unigram" and cfg.probe_eval_batches > 0
    train_only(cfg, out_dir=tmp_path / cfg.name, progress=False)
    log = runs.read_jsonl(tmp_path / cfg.name / "metrics.jsonl")
    assert {"probe_eval", "alias", "eval"} <= {r["type"] for r in log}      # every reader ran
    assert built == [cfg.name] and len(counted) == 1


@pytest.mark.slow
def test_a_unigram_head_run_resumed_after_interruption_gives_identical_losses(tmp_path):
    cfg = {**SMOKE, "name": "smoke-unigram", "kind": "decoder", "output_bias": "unigram", "steps": 8}
    ref, d = tmp_path / "ref", tmp_path / "resumed"
    train_only(cfg, out_dir=ref, fresh=True, progress=False)
    with pytest.raises(Interrupted):
        train_only(cfg, out_dir=d, fresh=True, progress=False, stop_after=6)
    summary = train_only(cfg, out_dir=d, progress=False)
    assert summary["resume_mismatches"] == 0
    assert _losses(d) == _losses(ref) and len(_losses(ref)) == 8
    assert json.loads((d / "config.json").read_text())["output_bias"] == "unigram"
    # the standard head of the same seed starts from a different loss: the bias is in the step
    train_only({**cfg, "output_bias": "none"}, out_dir=tmp_path / "std", fresh=True, progress=False)
    assert _losses(tmp_path / "std")[0] != _losses(ref)[0]
