"""Where the lab computes: the one reader of ``--device``, for training and for measurement.

:func:`resolve_device` turns the value of a ``--device`` option (``python -m tanbias.lab``'s
commands, ``python -m tanbias measure``) into a ``torch.device`` and refuses, before any work, a
device this machine does not have. :data:`DEVICES` are its values, :data:`DEVICE_HELP` says them
in a line of ``--help``. This module loads no torch until a device is resolved, so that a command
line built from it answers ``--help`` at once.
"""
from __future__ import annotations

from tanbias.errors import ParameterError

__all__ = ["DEVICES", "DEVICE_HELP", "resolve_device"]

#: The values of ``--device``: ``auto`` (a CUDA GPU when there is one, else the CPU), the CPU,
#: the first CUDA GPU, the N-th one, Apple's GPU.
DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
#: :data:`DEVICES` in a line of a command's ``--help``.
DEVICE_HELP = "auto (a CUDA GPU when there is one, else the CPU), cpu, cuda, cuda:N or mps"


def resolve_device(device="auto"):
    """The ``torch.device`` of a ``--device`` value (:data:`DEVICES`), or of a ``torch.device``.

    Parameters
    ----------
    device : str or torch.device
        One of :data:`DEVICES` (``cuda:N`` with N a GPU's index), or a device already resolved
        (returned as it is, once checked).

    Returns
    -------
    torch.device

    Raises
    ------
    ParameterError
        A value outside :data:`DEVICES`, or a device this machine does not have (the message
        names the devices it has).

    Example
    -------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: device='tpu' is out of range: valid values are auto, cpu, cuda, cuda:N, mps. ...
    """
    import torch

    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda", "mps") or (dev.type != "cuda" and dev.index not in (None, 0)):
        raise ParameterError(f"device={device!r} is out of range: valid values are {', '.join(DEVICES)}. "
                             "'auto' uses a CUDA GPU when there is one.")
    have = {"cpu": True, "cuda": torch.cuda.is_available(),
            "mps": bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()}
    if not have[dev.type]:
        here = ", ".join(["auto", *(k for k, ok in have.items() if ok)])
        why = "torch sees no CUDA GPU" if dev.type == "cuda" else "torch sees no Apple GPU (MPS)"
        raise ParameterError(f"device={device!r} is out of range on this machine: valid values here are {here} "
                             f"({why}). Pass --device cpu or --device auto.")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ParameterError(f"device={device!r} is out of range: valid values here are cuda:0 to "
                             f"cuda:{torch.cuda.device_count() - 1}. Pass --device cuda or --device auto.")
    return dev
