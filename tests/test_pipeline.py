"""What happens after a run (tanbias.lab.pipeline): the analysis, reproduce, the queues and their commits."""
from __future__ import annotations

import json
import subprocess
import time

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab.config import KINDS, RunConfig, load_config
from tanbias.lab.experiments import SWEEP, dose_config
from tanbias.lab.pipeline import (_git_commit_run, experiment_configs, reproduce, run_experiment, run_queue,
                                  smoke_pipeline, write_configs)
from tanbias.lab.train import train

SMOKE = dict(steps=6, size="smoke", languages=["en", "de"], checkpoint_every=3, eval_batches=1,
             probe={"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4})


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return smoke_pipeline("decoder", out_dir=tmp_path_factory.mktemp("smoke"))


@pytest.mark.slow
def test_smoke_pipeline_trains_probes_and_analyses(smoke):
    assert smoke["summary"]["probe_steps"] == [0, 1, 3, 7] and smoke["seconds"] > 0
    assert {"frozen", "refit", "local"} <= set(smoke["alignment"]["proxy"])
    man = json.loads((smoke["path"] / "manifest.json").read_text())
    assert {"tokens.csv", "views.json", "anisotropy.csv"} <= set(man["files"])
    assert man["config"] == runs.read_config(smoke["path"]).to_dict()


@pytest.mark.slow
def test_reproduce_prefix_matches_and_detects_a_mismatch(smoke, monkeypatch):
    ref = smoke["path"]
    res = reproduce(ref, steps=3, progress=False)
    assert res["ok"], res["failures"]
    assert res["compared"]["steps"] == 3 and res["max_loss_diff"] <= 1e-4
    import tanbias.lab.config as lab_config
    monkeypatch.setitem(lab_config.REPRODUCE_TOLERANCE, "loss_atol", -1.0)   # nothing can pass
    assert not reproduce(ref, steps=2, progress=False)["ok"]


def test_an_experiment_writes_its_configs_in_queue_order(tmp_path):
    paths = experiment_configs(SWEEP, tmp_path, seeds=(4,), kinds=("decoder",), steps=6, size="smoke")
    assert [p.stem for p in paths] == ["decoder-balanced-s4", "decoder-natural-s4"]
    assert [load_config(p).steps for p in paths] == [6, 6]
    assert experiment_configs(SWEEP, tmp_path / "none", write=False)[0].parent == tmp_path / "none"
    assert not (tmp_path / "none").exists()


@pytest.mark.slow
@pytest.mark.multiprocess
def test_an_experiment_trains_in_parallel_and_skips_complete_runs(tmp_path):
    paths = write_configs([RunConfig.from_dict({"name": f"{kind}-natural-s0", "kind": kind, "size": "smoke",
                                                "steps": 3, "languages": ["de", "pt"], "eval_batches": 1,
                                                "probe": {"n_steps": 3, "rank": 4, "local_rank": 2,
                                                          "min_count": 4}})
                           for kind in KINDS], tmp_path / "configs")
    res = run_experiment(SWEEP, jobs=2, paths=paths, out_root=tmp_path / "runs")
    assert set(res["runs"]) == {"encoder-natural-s0", "decoder-natural-s0"}
    assert all(r["exit"] == 0 for r in res["runs"].values()), res
    assert all((tmp_path / "runs" / n / "tokens.csv").exists() for n in res["runs"])
    assert json.loads((tmp_path / "runs" / "sweep.json").read_text())["how"] == "python -m tanbias.lab sweep --jobs 2"
    again = run_experiment(SWEEP, jobs=2, paths=paths, out_root=tmp_path / "runs")
    assert again["runs"] == {}
    assert "sittings" not in json.loads((tmp_path / "runs" / "sweep.json").read_text())   # the last sitting
    with pytest.raises(ParameterError, match="jobs=0"):
        run_experiment(SWEEP, jobs=0, paths=paths)


# --------------------------------------------------------------------------- the queue
@pytest.mark.slow
@pytest.mark.multiprocess
def test_killed_queue_resumes_and_loses_nothing(tmp_path, monkeypatch):
    cfg = dose_config("decoder", "b37", 0, **SMOKE)
    path, = write_configs([cfg], tmp_path / "configs")
    monkeypatch.setenv("TANBIAS_KILL_AFTER_STEP", "4")       # a real SIGKILL after step 4
    first = run_queue([path], jobs=1, out_root=tmp_path / "runs", report_name="dose.json")
    assert first["runs"][cfg.name]["exit"] != 0
    monkeypatch.delenv("TANBIAS_KILL_AFTER_STEP")
    second = run_queue([path], jobs=1, out_root=tmp_path / "runs", report_name="dose.json")
    assert second["runs"][cfg.name]["exit"] == 0
    third = run_queue([path], jobs=1, out_root=tmp_path / "runs", report_name="dose.json")
    assert third["runs"] == {}                                  # complete: skipped
    report = json.loads((tmp_path / "runs" / "dose.json").read_text())
    assert len(report["sittings"]) == 2                         # both sittings kept
    resumed = runs.read_jsonl(tmp_path / "runs" / cfg.name / "metrics.jsonl")
    train(cfg, out_dir=tmp_path / "straight", fresh=True, progress=False)
    straight = runs.read_jsonl(tmp_path / "straight" / "metrics.jsonl")
    steps = lambda recs, t: [(r["step"], r["loss"]) for r in recs if r["type"] == t]   # noqa: E731
    assert [s for s, _ in steps(resumed, "step")] == list(range(cfg.steps))          # each step once
    assert np.allclose([x for _, x in steps(resumed, "step")], [x for _, x in steps(straight, "step")], atol=1e-4)
    ev_r, ev_s = steps(resumed, "probe_eval"), steps(straight, "probe_eval")
    assert [s for s, _ in ev_r] == [s for s, _ in ev_s] and np.allclose([x for _, x in ev_r], [x for _, x in ev_s])


def test_a_sitting_writes_its_record_while_its_runs_train(tmp_path, monkeypatch):
    """A sitting killed with its session, no run finished, still leaves its wall time: the queue
    rewrites its record every RECORD_EVERY_S while runs train."""
    import tanbias.lab.pipeline as pipeline

    monkeypatch.setattr(pipeline, "RECORD_EVERY_S", 0.05)
    record = tmp_path / "runs" / "dose.json"
    seen = []

    def training(cmd, **kwargs):                    # stands for a run that is still training
        time.sleep(0.5)
        seen.append(json.loads(record.read_text())["sittings"][-1])
        return 1

    monkeypatch.setattr(subprocess, "call", training)
    run_queue([tmp_path / "configs" / "a-run.json"], jobs=1, out_root=tmp_path / "runs", report_name="dose.json")
    (during,) = seen
    assert during["wall_seconds"] > 0 and during["runs"] == {} and during["finished"] is None


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


def test_a_queue_record_counts_unrecorded_seconds_and_names_itself_when_corrupt(tmp_path):
    import json

    from tanbias.errors import CorruptFileError
    from tanbias.lab.runs import queue_record

    path = tmp_path / "x.json"
    assert queue_record(path) is None
    run = {"exit": 0, "seconds": 10.0}
    path.write_text(json.dumps({"sittings": [
        {"wall_seconds": 100.0, "runs": {"a": run}},
        {"wall_seconds": 50.0, "unrecorded_seconds": 25.0, "unrecorded_note": "from the runs' logs", "runs": {}},
        {"wall_seconds": 40.0, "paused_seconds": 15.0, "runs": {"b": {"exit": 1, "seconds": 5.0}}}]}))
    rec = queue_record(path)
    assert rec["wall_seconds"] == 100 + 50 + 25 + 40 - 15 and rec["unrecorded_seconds"] == 25
    assert rec["runs_finished"] == 1 and rec["sittings"] == 3
    path.write_text('{"sittings": [{"runs": {}}]}')
    with pytest.raises(CorruptFileError, match="x.json"):
        queue_record(path)


# --------------------------------------------------------------------------- a stage and its budget
def _toy_design(budget_hours=1.0):
    """A two-level design on one architecture whose level 'b' is a later stage with its own budget."""
    from tanbias.lab.experiments import Design, Stage

    def build(kind, level, seed, **overrides):
        return RunConfig.from_dict({"name": f"toy-{kind}-{level}-s{seed}", "kind": kind, "size": "smoke", "steps": 2,
                                    "languages": ["en"], "checkpoint_every": 2, "eval_batches": 1, "seed": seed,
                                    "probe": {"n_steps": 2, "rank": 4, "local_rank": 2, "min_count": 4}})

    stage = Stage(name="later", title="the later part", registration="toy-later", registration_sha256="0" * 64,
                  has=lambda kind, level, seed: level == "b", order=lambda kind, level, seed: (seed,),
                  budget_hours=budget_hours)
    return Design(name="toy", title="the toy", chapter=None, factor="level", levels={"decoder": ("a", "b"),
                  "encoder": ()}, seeds={"decoder": (0,), "encoder": ()}, prefix="toy-", build=build, stages=(stage,))


def test_a_stage_keeps_its_cells_out_of_the_designs_own_queue():
    d = _toy_design()
    assert d.names() == ["toy-decoder-a-s0", "toy-decoder-b-s0"]
    assert d.names(stage="") == ["toy-decoder-a-s0"] and d.names(stage="later") == ["toy-decoder-b-s0"]
    assert d.stage_of("decoder", "b", 0).name == "later" and d.stage_of("decoder", "a", 0) is None
    with pytest.raises(ParameterError, match="stage='sooner'"):
        d.stage("sooner")


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_stage_trains_after_the_design_into_its_own_record_and_stops_at_its_budget(tmp_path):
    root = tmp_path / "runs"
    res = run_experiment(_toy_design(), jobs=1, configs_dir=tmp_path / "configs", out_root=root)
    assert res["queues"] == ["toy.json", "toy-later.json"]
    own = json.loads((root / "toy.json").read_text())["sittings"][0]["runs"]
    later = json.loads((root / "toy-later.json").read_text())["sittings"][0]["runs"]
    assert set(own) == {"toy-decoder-a-s0"} and set(later) == {"toy-decoder-b-s0"}
    rec = later["toy-decoder-b-s0"]
    assert rec["exit"] == 0 and rec["steps"] == 2 and rec["seconds_per_step"] > 0 and rec["load"] >= 0
    assert rec["resumed_after"] == 0 and rec["median_step_seconds"] > 0   # a fresh run: every step is this sitting's
    # a stage whose record already holds its budget starts nothing, and says so
    (root / "toy-decoder-b-s0" / "manifest.json").unlink()                # the run is no longer complete
    spent = _toy_design(budget_hours=1e-6)
    again = run_experiment(spent, jobs=1, configs_dir=tmp_path / "configs", out_root=root)
    assert again["runs"] == {} or "toy-decoder-b-s0" not in again["runs"]
    last = json.loads((root / "toy-later.json").read_text())["sittings"][-1]
    assert last["not_started"] == ["toy-decoder-b-s0"] and "budget" in last["stopped"]
    with pytest.raises(ParameterError, match="budget_hours"):
        run_queue([], budget_hours=0.0)


def test_a_resumed_runs_pace_counts_the_steps_its_log_did_not_hold(tmp_path):
    """The queue's pace of a resumed run divides by the steps it trained, not by all of them: it reads
    the step records its log already holds (a probe line, a torn line and a foreign record are not steps)."""
    from tanbias.lab.pipeline import _logged_steps

    assert _logged_steps(tmp_path) == []                                      # no log yet
    lines = [json.dumps({"type": "probe_eval", "step": 0, "loss": 7.0}),
             json.dumps({"type": "step", "step": 0, "seconds": 2.0}),
             json.dumps({"type": "step", "step": 1, "seconds": 3.0}),
             '{"type": "step", "step": 2, "seco',                            # torn by a kill
             json.dumps({"type": "step", "step": 2})]                         # no time: not counted
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert _logged_steps(tmp_path) == [2.0, 3.0]
