"""Training on several processes with PyTorch's DistributedDataParallel (``torchrun``).

``torchrun --nproc_per_node=N -m tanbias.lab train CONFIG --out DIR`` starts N
copies of the command; :func:`tanbias.lab.train.train` sees the variables
torchrun sets and trains with :class:`torch.nn.parallel.DistributedDataParallel`
(gloo on the CPU, nccl on CUDA). What this module provides:

* :func:`context` — rank, world size and device from the torchrun variables (a
  clear error when they are half set), the process group started;
* :func:`shard` — each rank's share of a global batch: rows ``rank, rank + N, ...``
  of the batch a single process would train on. Every rank regenerates the same
  seeded data stream and keeps its rows, so a run's data do not depend on the
  number of processes (tokenising is repeated on every rank: cheap next to a step);
* :class:`LossModule` — the model with the lab's scored loss as its ``forward``,
  what DDP wraps (DDP synchronises gradients through its wrapper's forward);
* :func:`all_sum` and :func:`gather_rows` — the global token count, loss and
  accuracy, and the probe's captures gathered on rank 0 in the single-process
  row order.

The loss of each rank is its summed loss times N over the *global* number of
scored tokens, so DDP's average of the gradients is exactly the gradient of the
global mean loss (an encoder's ranks mask different numbers of tokens).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from tanbias.errors import ParameterError
from tanbias.lab.models import loss_and_correct

__all__ = ["TORCHRUN_VARS", "Context", "context", "shard", "LossModule", "all_sum", "gather_rows", "finish"]

#: what torchrun sets in every process (all of them, or none for a single process)
TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass
class Context:
    """Where this process stands: ``rank`` of ``world`` processes, its ``device``."""
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def main(self) -> bool:
        """Rank 0 writes the log, the checkpoints, the captures and the summary."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def barrier(self) -> None:
        if self.distributed:
            torch.distributed.barrier()


def context(device, environ=None) -> Context:
    """The process's :class:`Context` from the torchrun variables; starts the process group if N > 1.

    Parameters
    ----------
    device : torch.device
        From :func:`tanbias.lab.devices.resolve_device`; on CUDA each rank takes
        ``cuda:LOCAL_RANK``.
    environ : mapping, optional
        Default ``os.environ``.

    Raises
    ------
    ParameterError
        Some torchrun variables set and others not, or values that are not
        integers with ``0 <= RANK < WORLD_SIZE``.

    Examples
    --------
    >>> context(torch.device("cpu"), environ={})
    Context(rank=0, world=1, local_rank=0, device=device(type='cpu'))
    >>> context(torch.device("cpu"), environ={"RANK": "0"})
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: torchrun variables are half set: RANK is set but WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT are not; valid range is all five (torchrun sets them) or none. Start with torchrun --nproc_per_node=N -m tanbias.lab train ..., or unset RANK.
    """
    env = os.environ if environ is None else environ
    present = [k for k in TORCHRUN_VARS if k in env]
    if not present:
        return Context(device=torch.device(device))
    missing = [k for k in TORCHRUN_VARS if k not in env]
    if missing:
        raise ParameterError(
            f"torchrun variables are half set: {', '.join(present)} {'is' if len(present) == 1 else 'are'} set "
            f"but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not; valid range is all five "
            f"(torchrun sets them) or none. Start with torchrun --nproc_per_node=N -m tanbias.lab train ..., "
            f"or unset {', '.join(present)}.")
    try:
        rank, world, local = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["LOCAL_RANK"])
    except ValueError:
        raise ParameterError(f"RANK={env['RANK']!r}, WORLD_SIZE={env['WORLD_SIZE']!r}, LOCAL_RANK="
                             f"{env['LOCAL_RANK']!r}: valid range is integers with 0 <= RANK < WORLD_SIZE.") from None
    if not (0 <= rank < world and 0 <= local):
        raise ParameterError(f"RANK={rank}, WORLD_SIZE={world}: valid range is 0 <= RANK < WORLD_SIZE.")
    dev = torch.device(device)
    if dev.type == "cuda":
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    return Context(rank=rank, world=world, local_rank=local, device=dev)


def shard(batch: dict, ctx: Context) -> dict:
    """Rows ``rank::world`` of every tensor of a global batch (the whole batch for one process)."""
    if not ctx.distributed:
        return batch
    rows = batch["input_ids"].shape[0]
    if rows % ctx.world:
        raise ParameterError(f"batch_size={rows} is out of range for {ctx.world} processes: valid range is "
                             f"multiples of {ctx.world}, so that every rank trains on as many rows.")
    return {k: v[ctx.rank::ctx.world] if torch.is_tensor(v) else v for k, v in batch.items()}


class LossModule(torch.nn.Module):
    """``forward(input_ids, labels) -> (summed loss, scored tokens, correct)``: what DDP wraps."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    def forward(self, input_ids, labels):
        loss_sum, n, correct = loss_and_correct(self.inner, {"input_ids": input_ids, "labels": labels})
        return loss_sum, torch.tensor([n, correct], dtype=torch.float64)


def all_sum(x: torch.Tensor, ctx: Context) -> torch.Tensor:
    """``x`` summed over ranks (a copy; ``x`` itself for one process)."""
    if not ctx.distributed:
        return x
    y = x.detach().clone().to(ctx.device)
    torch.distributed.all_reduce(y)
    return y.to(x.device)


def gather_rows(local: list, ctx: Context, rows_local: int) -> list | None:
    """Rank 0 gets each tensor of ``local`` from every rank, rows re-interleaved as one process had them.

    ``local[i]`` holds this rank's positions ``(rows_local * seq, ...)`` in row-major
    order (rows ``rank, rank + N, ...`` of the global batch); the result holds the
    global batch's positions in its own row order. Other ranks get None.
    """
    if not ctx.distributed:
        return local
    out = []
    for t in local:
        parts = [torch.empty_like(t) for _ in range(ctx.world)] if ctx.main else None
        if ctx.device.type == "cuda":            # nccl gathers on the device
            t_dev = t.to(ctx.device)
            parts_dev = [torch.empty_like(t_dev) for _ in range(ctx.world)] if ctx.main else None
            torch.distributed.gather(t_dev, parts_dev, dst=0)
            parts = [p.cpu() for p in parts_dev] if ctx.main else None
        else:
            torch.distributed.gather(t, parts, dst=0)
        if ctx.main:
            per_row = [p.reshape(rows_local, -1, *p.shape[1:]) for p in parts]     # (rows_local, seq, ...)
            full = torch.stack(per_row, dim=1)                                       # (rows_local, world, seq, ...)
            out.append(full.reshape(-1, *t.shape[1:]))
    return out if ctx.main else None


def finish(ctx: Context, wait: bool = True) -> None:
    """Wait for every rank (unless ``wait=False``: after an error), then end the process group."""
    if ctx.distributed and torch.distributed.is_initialized():
        if wait:
            torch.distributed.barrier()
        torch.distributed.destroy_process_group()
