"""``--device`` (tanbias.lab.devices): one set of values for the lab's commands and for ``python -m
tanbias measure``, a clear error for a value outside it or a device this machine lacks."""
from __future__ import annotations

import pytest
import torch

from tanbias.errors import ParameterError
from tanbias.lab.devices import DEVICE_HELP, DEVICES, resolve_device


@pytest.mark.parametrize("bad", ["tpu", "gpu", "cuda:x", "cpu:3", ""])
def test_a_value_outside_the_set_names_the_option_and_the_values(bad):
    with pytest.raises(ParameterError, match=rf"device={bad!r} is out of range: valid values are auto, cpu, cuda, "
                                             r"cuda:N, mps\."):
        resolve_device(bad)


def test_the_cpu_and_auto_resolve_and_a_device_passes_through():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
@pytest.mark.parametrize("value", ["cuda", "cuda:1"])
def test_a_gpu_where_there_is_none_is_a_clear_error(value):
    with pytest.raises(ParameterError, match=rf"device='{value}' is out of range on this machine: valid values "
                                             r"here are auto, cpu .*no CUDA GPU.*--device cpu"):
        resolve_device(value)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="this machine has no CUDA GPU")
def test_a_gpu_index_beyond_the_last_is_named():
    n = torch.cuda.device_count()
    assert resolve_device(f"cuda:{n - 1}").index == n - 1
    with pytest.raises(ParameterError, match=rf"device='cuda:{n}' is out of range: valid values here are cuda:0"):
        resolve_device(f"cuda:{n}")


def test_the_help_line_names_every_value():
    assert all(value in DEVICE_HELP for value in DEVICES)


@pytest.mark.slow
def test_the_lab_and_the_measurement_share_it():
    """Both command lines offer the same values, and one function reads them: no second reader
    with other values."""
    import ast

    from tanbias.lab.measure_command import parser
    from tanbias.lab.runs import ROOT

    assert " ".join(DEVICE_HELP.split()) in " ".join(parser().format_help().split())
    lab = (ROOT / "tanbias" / "lab" / "__main__.py").read_text(encoding="utf8")
    assert "from tanbias.lab.devices import DEVICE_HELP" in lab and "DEVICE_HELP =" not in lab
    defining = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tanbias").rglob("*.py"))
                if any(isinstance(n, ast.FunctionDef) and n.name == "resolve_device"
                       for n in ast.walk(ast.parse(p.read_text(encoding="utf8"))))]
    assert defining == ["tanbias/lab/devices.py"]
