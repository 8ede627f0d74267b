"""The points of the training loop where an experiment adds its work: :class:`Hook`.

The loop of :func:`tanbias.lab.train.train` names no experiment. What an
experiment adds to a run is a hook, a subclass of :class:`Hook` registered in
:data:`tanbias.lab.train.HOOKS`: the held-out score at the probe steps
(:class:`tanbias.lab.probe.ProbeEval`), the aliasing knob's input counts and
convergence (:class:`tanbias.lab.aliasing.AliasingHook`), the gradient surgery
(:class:`tanbias.lab.surgery.Surgery`). Each registered class's :meth:`Hook.for_run`
gives a run its hook, or None when the run does not use it, and the loop calls the
run's hooks in the registry's order at these fixed points:

========================  ========================================================================
point                     when, where
========================  ========================================================================
``check``                 before the run's folder is touched: refuse a config the hook cannot run
``for_run``               once the model, the stream and the log are set up, before the resume
``load_state_dict``       a resumed run: the state :meth:`Hook.state_dict` saved in the checkpoint
``at_probe_step``         rank 0, before the training step of every probe step, and once after
                          the last step (``step = steps``): measure the model as it is
``before_step``           every rank, once the step's whole batch is drawn, before the step
``before_forward``        inside :func:`~tanbias.lab.train.train_step`, before the forward pass
                          (the batch: this rank's rows, on the device)
``after_optimizer_step``  inside :func:`~tanbias.lab.train.train_step`, after the optimizer's
                          step and before the schedule's
``step_record``           fields the hook adds to the step's record in ``metrics.jsonl``
``state_dict``            at every checkpoint: saved under :attr:`Hook.checkpoint_key`
``close``                 after the last step, before the final measurements
``write``                 rank 0, after the final evaluation: the hook's files in the run
                          folder; returns fields of ``summary.json``
========================  ========================================================================

The loop-level points receive the run (:class:`tanbias.lab.train.TrainingRun`:
its config, stream, model, device, log); the two points inside a step receive what
:func:`~tanbias.lab.train.train_step` has (the step and its batch), so a hook works
in any caller of the step function (the benchmarks, the tests).

This module imports nothing: it sits below every module that defines a hook.
"""
from __future__ import annotations

__all__ = ["Hook"]


class Hook:
    """Work an experiment adds to the training loop, at the fixed points of the module's table.

    Every method here does nothing; a hook overrides the points it uses.

    Example
    -------
    >>> class CountSteps(Hook):
    ...     checkpoint_key = "steps_seen"
    ...     def __init__(self):
    ...         self.seen = 0
    ...     def before_step(self, run, step, batch):
    ...         self.seen += 1
    ...     def state_dict(self):
    ...         return self.seen
    >>> h = CountSteps()
    >>> h.before_step(None, 0, {}); h.step_record(0), h.state_dict()
    ({}, 1)
    """

    #: the key of the hook's state in the run's checkpoint (``None``: the hook keeps no state)
    checkpoint_key: str | None = None

    @classmethod
    def check(cls, cfg, ctx) -> None:
        """Raise a ParameterError if the run config ``cfg`` cannot run with this hook in the
        processes of ``ctx`` (:class:`tanbias.lab.distributed.Context`)."""

    @classmethod
    def for_run(cls, run) -> Hook | None:
        """This hook for ``run`` (:class:`tanbias.lab.train.TrainingRun`), or None if the run
        does not use it."""
        return None

    def at_probe_step(self, run, step: int) -> None:
        """Rank 0, before the training step ``step`` of a probe step, and with ``step = steps``
        after the last step."""

    def before_step(self, run, step: int, batch: dict) -> None:
        """Every rank: the whole ``batch`` of step ``step`` (on the CPU), before the step."""

    def before_forward(self, step: int, batch: dict) -> None:
        """Inside the step function, before the forward pass of step ``step`` on ``batch``."""

    def after_optimizer_step(self, step: int) -> None:
        """Inside the step function, after the optimizer's step ``step``, before the schedule's."""

    def step_record(self, step: int) -> dict:
        """Fields this hook adds to the record of step ``step`` (after the step)."""
        return {}

    def state_dict(self):
        """What the checkpoint keeps of this hook (under :attr:`checkpoint_key`)."""
        return None

    def load_state_dict(self, state) -> None:
        """Restore :meth:`state_dict`'s value (a resumed run)."""

    def close(self) -> None:
        """After the last step: release what the hook holds on the model (its torch hooks)."""

    def write(self, run) -> dict:
        """Rank 0, after the final evaluation: write the hook's files; the fields it adds to the summary."""
        return {}
