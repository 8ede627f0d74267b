"""The training loop's hooks (tanbias.lab.hooks): the loop calls a run's hooks at the fixed points
the module states, in order, keeps their state across a resume and refuses what a hook refuses
before the run's folder is touched."""
from __future__ import annotations

import pytest

from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab import train as train_module
from tanbias.lab.hooks import Hook
from tanbias.lab.probe import probe_steps

CFG = {"name": "hooked", "kind": "decoder", "size": "smoke", "steps": 6, "languages": ["en"], "checkpoint_every": 2,
       "eval_batches": 1, "probe": {"n_steps": 3, "tokens": 64, "rank": 4, "local_rank": 2, "min_count": 4}}


class Recorder(Hook):
    """Records every point the loop calls, and counts the steps it saw as its checkpointed state."""
    checkpoint_key = "recorder"
    calls: list = []

    def __init__(self):
        self.seen = 0

    @classmethod
    def check(cls, cfg, ctx):
        if cfg.name == "refused":
            raise ParameterError("name='refused' is not allowed: valid range is any other name.")

    @classmethod
    def for_run(cls, run):
        cls.calls.append(("for_run", run.cfg.name))
        return cls()

    def at_probe_step(self, run, step):
        self.calls.append(("probe", step))

    def before_step(self, run, step, batch):
        self.seen += 1
        self.calls.append(("step", step))

    def before_forward(self, step, batch):
        self.calls.append(("forward", step))

    def after_optimizer_step(self, step):
        self.calls.append(("optimizer", step))

    def step_record(self, step):
        return {"seen": self.seen}

    def state_dict(self):
        return self.seen

    def load_state_dict(self, state):
        self.calls.append(("load", state))
        self.seen = state

    def close(self):
        self.calls.append(("close",))

    def write(self, run):
        self.calls.append(("write",))
        return {"seen": self.seen}


@pytest.fixture
def recorder(monkeypatch):
    Recorder.calls = []
    monkeypatch.setattr(train_module, "HOOKS", (*train_module.HOOKS, Recorder))
    return Recorder


def _points(steps, pset, start=0):
    out = []
    for s in range(start, steps):
        out += [("probe", s)] * (s in pset) + [("step", s), ("forward", s), ("optimizer", s)]
    return out


@pytest.mark.slow
def test_the_loop_calls_a_hook_at_its_points_in_order(recorder, tmp_path):
    summary = train_module.train(CFG, out_dir=tmp_path / "run", progress=False)
    pset = set(probe_steps(6, 3))
    assert recorder.calls == [("for_run", "hooked"), *_points(6, pset), ("close",), ("probe", 6), ("write",)]
    steps = [r for r in runs.read_jsonl(tmp_path / "run" / "metrics.jsonl") if r["type"] == "step"]
    assert [r["seen"] for r in steps] == [1, 2, 3, 4, 5, 6]          # step_record, after the step
    assert summary["seen"] == 6                                          # write's summary fields


@pytest.mark.slow
def test_a_resumed_run_gives_a_hook_its_checkpointed_state(recorder, tmp_path):
    with pytest.raises(train_module.Interrupted):
        train_module.train(CFG, out_dir=tmp_path / "run", progress=False, stop_after=3)
    recorder.calls = []
    summary = train_module.train(CFG, out_dir=tmp_path / "run", progress=False)
    # the checkpoint is at step 2: the hook gets the state it had there, and the steps from 2 on
    pset = set(probe_steps(6, 3))
    assert recorder.calls == [("for_run", "hooked"), ("load", 2), *_points(6, pset, start=2), ("close",),
                              ("probe", 6), ("write",)]
    assert summary["seen"] == 6 and summary["resume_mismatches"] == 0


def test_a_hook_refuses_a_config_before_the_folder_is_touched(recorder, tmp_path):
    with pytest.raises(ParameterError, match="name='refused'"):
        train_module.train({**CFG, "name": "refused"}, out_dir=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists() and recorder.calls == []


def test_the_base_hook_does_nothing():
    h = Hook()
    assert Hook.for_run(None) is None and Hook.check(None, None) is None
    assert h.step_record(0) == {} and h.state_dict() is None and h.write(None) == {}
    assert h.checkpoint_key is None
