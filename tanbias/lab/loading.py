"""The models the measurement command reads, loaded (``python -m tanbias measure``).

A model is a zoo name (:data:`tanbias.lab.zoo.ZOO`), a local folder that ``transformers`` loads,
a folder of checkpoint folders (``step0/``, ``step1000/`` ...: :func:`model_revisions`) or a
hub id with revisions (:mod:`tanbias.lab.checkpoints` resolves and mirrors them). This module
says which architectures are measured (:data:`ARCHITECTURES`), in which parameter types
(:data:`DTYPES`, :func:`check_dtype`), loads a checkpoint with its tokenizer and what the
manifest records of it (:func:`load_model`), and digests its weights (:func:`weights_sha256`).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from huggingface_hub import snapshot_download

from tanbias._checks import check_choice
from tanbias.errors import ParameterError
from tanbias.lab import zoo
from tanbias.lab.checkpoints import (check_revision, checkpoint_config, load_checkpoint, local_revisions,
                                     resolve_checkpoint)
from tanbias.lab.devices import resolve_device
from tanbias.lab.runs import sha256

__all__ = ["ARCHITECTURES", "DTYPES", "check_dtype", "weights_sha256", "load_model", "model_revisions",
           "architecture_table"]

#: The architectures (``config.model_type``) the command measures, each with its kind: a
#: decoder reads left to right (its first position is an attention sink, left out), an
#: encoder reads both ways (its rows are framed by its start and end tokens). Each one is
#: measured end to end on a tiny random model in ``tests/test_measure.py``.
ARCHITECTURES = {
    "llama": "decoder", "mistral": "decoder", "qwen2": "decoder", "qwen3": "decoder",
    "gemma3_text": "decoder", "gemma2": "decoder", "phi3": "decoder", "olmo2": "decoder",
    "gpt2": "decoder", "gpt_neox": "decoder", "opt": "decoder", "falcon": "decoder",
    "bert": "encoder", "roberta": "encoder", "xlm-roberta": "encoder", "distilbert": "encoder",
    "electra": "encoder", "eurobert": "encoder", "modernbert": "encoder",
}


#: The parameter types the forward passes may run in (``--dtype``): every reading is computed in
#: float64 from the hidden states' float32 copies, whatever the model's type
DTYPES = ("float32", "bfloat16")


def check_dtype(dtype: str, device) -> str:
    """``dtype`` if the forward passes can run in it on ``device`` (a small product there is tried).

    Raises
    ------
    ParameterError
        A type outside :data:`DTYPES`, or one the device cannot compute in.

    Example
    -------
    >>> check_dtype("bfloat16", "cpu")
    'bfloat16'
    """
    import torch

    check_choice("dtype", dtype, DTYPES, hint="bfloat16 halves the weights' memory where the device has it.")
    dev = resolve_device(device)
    try:
        x = torch.ones(2, 2, dtype=getattr(torch, dtype), device=dev)
        (x @ x).sum().item()
    except (RuntimeError, TypeError) as exc:
        raise ParameterError(f"dtype={dtype!r} is not allowed on device {str(dev)!r}: valid range is a type the "
                             f"device computes in ({exc}). Pass --dtype float32.") from None
    return dtype


def _unsupported(name: str, model_type, architectures) -> ParameterError:
    kinds = {k: sorted(t for t, v in ARCHITECTURES.items() if v == k) for k in ("decoder", "encoder")}
    return ParameterError(
        f"model={name!r} is not allowed: its architecture {model_type!r} ({', '.join(architectures or []) or 'no class'})"
        f" is not one the measurement supports. Valid range: decoders {', '.join(kinds['decoder'])}; encoders "
        f"{', '.join(kinds['encoder'])}.")


def weights_sha256(folder) -> dict:
    """``{file: sha256}`` of a checkpoint folder's weight files (``*.safetensors``, ``*.bin``,
    ``*.pt``, ``*.gguf``), and under ``""`` one digest for them all: the file's own when there
    is one, else the sha256 of the sorted ``"<file> <sha256>"`` lines.

    Example
    -------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "model.safetensors").write_bytes(b"w")
    ...     d = weights_sha256(tmp)
    >>> d[""] == d["model.safetensors"]
    True
    """
    folder = Path(folder)
    files = sorted(f for f in folder.iterdir() if f.is_file() and f.suffix in (".safetensors", ".bin", ".pt", ".gguf")
                   and not f.name.startswith("training_args"))
    out = {f.name: sha256(f) for f in files}
    if len(out) == 1:
        out[""] = next(iter(out.values()))
    elif out:
        out[""] = hashlib.sha256("".join(f"{k} {v}\n" for k, v in out.items()).encode()).hexdigest()
    return out


def _hub_folder(model_id: str, revision) -> Path | None:
    """The cached snapshot of a hub checkpoint that ``from_pretrained`` downloaded."""
    try:
        return Path(snapshot_download(model_id, revision=revision, local_files_only=True))
    except Exception:  # noqa: BLE001 - provenance only: the manifest then says it is unknown
        return None


def load_model(model, revision=None, device="cpu", progress: bool = False, dtype: str = "float32") -> dict:
    """A checkpoint, its tokenizer and what the measurement needs to know of it.

    Parameters
    ----------
    model : str or path-like
        A zoo name, a local folder (a mirror with ``revision``) or a hub id.
    revision : str, optional
    device : str or torch.device
    progress : bool
        transformers' loading bars.
    dtype : str
        Of the parameters on ``device``, one of :data:`DTYPES` (:func:`check_dtype`).

    Returns
    -------
    dict
        ``model`` (eval mode, in ``dtype``, on ``device``), ``tokenizer``, ``kind``, ``head`` (it
        has a language-model head: the alignment test can run), ``arch`` (its class),
        ``model_type``, ``source`` (``"zoo"``, ``"folder"``, ``"hub"``), ``path``,
        ``weights`` (:func:`weights_sha256`, ``{}`` when unknown) and ``weight_sha256``;
        for a zoo model its entry's provenance (``upstream``, ``licence``, ``caveats``...).

    Raises
    ------
    ParameterError
        A missing folder, an architecture outside :data:`ARCHITECTURES` (the message lists
        them), a tokenizer that does not fit the model.
    CorruptFileError
        A weight file that cannot be read.
    tanbias.lab.checkpoints.CheckpointUnavailable, tanbias.lab.zoo.ZooUnavailable
        A hub id out of reach, a zoo package not installed.
    """
    device = resolve_device(device)
    name = os.fspath(model)
    if isinstance(model, str) and model in zoo.ZOO:
        net, tok = zoo.load_zoo(model, progress=progress)
        info = _zoo_info(model)
    else:
        net, tok, info = _load_checkpoint(model, revision, progress)
    info["model_type"] = net.config.model_type
    emb = net.get_input_embeddings().num_embeddings
    if len(tok) > emb:
        raise ParameterError(f"model={name!r} is not allowed: its tokenizer has {len(tok)} tokens, its embedding "
                             f"{emb} rows: valid range is a tokenizer of at most as many tokens as the model "
                             "embeds. Save the model's own tokenizer beside it.")
    import torch

    net.to(device=device, dtype=getattr(torch, check_dtype(dtype, device)))
    net.eval()
    return {"model": net, "tokenizer": tok, **info}


def _zoo_info(name: str) -> dict:
    """What the manifest records of a zoo model: its entry's provenance."""
    entry = zoo.zoo_entry(name)
    return {"source": "zoo", "path": None, "kind": entry.kind, "head": entry.lm_head, "arch": entry.arch,
            "weights": {entry.weight: entry.sha256, "": entry.sha256}, "weight_sha256": entry.sha256,
            "weight_file": entry.weight, "upstream": entry.upstream, "licence": entry.licence,
            "caveats": list(entry.caveats), "packages": [f"{d}=={v}" for d, v, _ in entry.packages],
            "install": entry.install}


def _load_checkpoint(model, revision, progress: bool) -> tuple:
    """A local folder's or a hub id's model, its tokenizer and what the manifest records of it."""
    name = os.fspath(model)
    config = checkpoint_config(model, revision)
    model_type = config.get("model_type")
    if model_type not in ARCHITECTURES:
        raise _unsupported(name, model_type, config.get("architectures") or [])
    path, kwargs = resolve_checkpoint(model, revision)
    net, tok, kind = load_checkpoint(model, revision, kind=ARCHITECTURES[model_type], progress=progress,
                                     headless=True)
    hub = "revision" in kwargs
    folder = _hub_folder(path, revision) if hub else Path(path)
    weights = weights_sha256(folder) if folder is not None else {}
    info = {"source": "hub" if hub else "folder", "path": path, "kind": kind,
            "head": net.get_output_embeddings() is not None, "arch": type(net).__name__,
            "weights": {k: v for k, v in weights.items() if k}, "weight_sha256": weights.get("")}
    return net, tok, info


def model_revisions(model, revisions=None) -> list:
    """The revisions to measure: ``[None]`` for one checkpoint, else their names in training order.

    A folder of checkpoint folders (``step0/``, ``step1000/`` ..., each with a
    ``config.json``) gives all of them when ``revisions`` is None
    (:func:`tanbias.lab.checkpoints.local_revisions`).

    Raises
    ------
    ParameterError
        A missing folder, a folder holding neither a checkpoint nor checkpoint folders,
        revisions of a zoo model (it ships its final checkpoint only), duplicates.
    """
    if isinstance(revisions, str):
        revisions = [revisions]
    revisions = None if revisions is None else [check_revision(r) for r in revisions]
    name = os.fspath(model)
    if isinstance(model, str) and model in zoo.ZOO:
        if revisions not in (None, [None], ["main"]):
            raise ParameterError(f"revisions={revisions!r} is out of range for the zoo model {model!r}: valid "
                                 "range is none (the zoo ships the final checkpoint only).")
        return [None]
    p = Path(name).expanduser()
    if p.is_dir():
        if revisions:
            return revisions
        if (p / "config.json").is_file():
            return [None]
        found = local_revisions(p)
        if not found:
            raise ParameterError(f"model={name!r} is not allowed: valid range is a folder holding a checkpoint "
                                 "(config.json, weights, tokenizer: save_pretrained) or checkpoint folders that "
                                 "do. It holds neither.")
        return found
    resolve_checkpoint(name)           # a missing folder fails here, a hub id passes
    if revisions and len(set(revisions)) < len(revisions):
        raise ParameterError(f"revisions={revisions!r} is not allowed: valid range is distinct revisions.")
    return revisions or [None]


def architecture_table():
    """The architectures the measurement supports, one row per kind: their model types
    (``config.model_type``) and what the measurement does with their first position."""
    import pandas as pd

    rows = []
    for kind, first in (("decoder", "its attention sink: left out, and measured apart"),
                        ("encoder", "its start token ([CLS] or <s>): special, left out")):
        rows.append({"kind": kind, "model types": ", ".join(sorted(t for t, k in ARCHITECTURES.items() if k == kind)),
                     "first position": first})
    return pd.DataFrame(rows)
