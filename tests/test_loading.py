"""Loading the models the measurement command reads (tanbias.lab.loading): its architectures, each
with a tiny model (the tiny models are measured end to end in test_measure.py), its parameter types,
the weights' digests, the revisions of a folder or a zoo model."""
from __future__ import annotations

from pathlib import Path

import pytest

from tanbias.errors import ParameterError
from tanbias.lab import loading
from tiny_checkpoints import ALL_ARCHS, ENCODERS, make_tiny_checkpoint


def test_every_supported_architecture_has_a_tiny_model():
    assert set(loading.ARCHITECTURES) == set(ALL_ARCHS)
    assert {a for a, k in loading.ARCHITECTURES.items() if k == "encoder"} == set(ENCODERS)


def test_the_weights_digest_is_the_files_own_or_one_of_their_digests(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(b"a")
    one = loading.weights_sha256(tmp_path)
    assert set(one) == {"a.safetensors", ""} and one[""] == one["a.safetensors"]
    (tmp_path / "b.bin").write_bytes(b"b")
    (tmp_path / "training_args.bin").write_bytes(b"x")               # not weights
    two = loading.weights_sha256(tmp_path)
    assert set(two) == {"a.safetensors", "b.bin", ""} and two[""] not in (two["a.safetensors"], two["b.bin"])


def test_the_revisions_of_a_folder_and_of_a_zoo_model(tmp_path):
    root = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0", "step10"))
    assert loading.model_revisions(root) == ["step0", "step10"]
    assert loading.model_revisions(root / "step0") == [None]
    assert loading.model_revisions("minilm-l6") == [None]
    with pytest.raises(ParameterError, match="zoo model"):
        loading.model_revisions("minilm-l6", ["step1"])
    with pytest.raises(ParameterError, match="holds neither"):
        (tmp_path / "empty").mkdir()
        loading.model_revisions(tmp_path / "empty")


def test_a_dtype_outside_the_list_or_the_device_is_named():
    assert loading.check_dtype("float32", "cpu") == "float32"
    with pytest.raises(ParameterError, match="dtype='float16'"):
        loading.check_dtype("float16", "cpu")


def test_the_architecture_table_lists_every_architecture_once():
    t = loading.architecture_table()
    listed = [m for cell in t["model types"] for m in cell.split(", ")]
    assert sorted(listed) == sorted(loading.ARCHITECTURES) and list(t["kind"]) == ["decoder", "encoder"]
