"""Chapter 9's measurements on any model: what ``python -m tanbias measure MODEL`` runs.

:func:`measure_model` runs on one checkpoint (or a series of them) what chapter 9
runs on the zoo (:mod:`tanbias.lab.analysis.pretrained`, whose functions it calls:
one source for each measurement), with chapter 9's settings
(:class:`~tanbias.lab.analysis.pretrained.MeasureSettings`, :func:`measure_settings`):

* the premise under its three count-matched readings, with the bootstrap over
  documents (``premise.csv``, ``types.csv``);
* anisotropy with and without the first position (``anisotropy.csv``), and beside
  it the rival accounts' six readings (:func:`anisotropy_readings`: centred,
  standardised, type-balanced, mean share, top-coordinate share, and the exact raw
  mean cosine);
* the checkpoint alignment test with its random-initialisation null
  (``alignment.csv``: models with a language-model head);
* curvature visibility (``curvature.csv``).

Every metric that needs activations only reads one forward pass per language
(:func:`tanbias.lab.analysis.pretrained.hidden_states`); the alignment test runs
its own forward and backward passes on two shorter texts. A measurement is two steps:
:func:`measure_revision` measures one checkpoint into a :class:`Measurement`, and
:func:`write_measurement` writes its tables, its report and its manifest.

``MODEL`` is a zoo name (:data:`tanbias.lab.zoo.ZOO`: measured with chapter 9's
settings, so its tables are those of ``data/pretrained/<name>/`` for the same text
and tokens), a local folder that ``transformers`` loads (a causal LM, a masked LM
or a bare encoder of an architecture in :data:`ARCHITECTURES`), a hub id where
the network allows, or a folder of checkpoint folders (``step0/``, ``step1000/``
...): a series of revisions gives trajectories over training (``trajectory.csv``).

Writes, atomically (a staged folder beside ``out``, renamed once complete: an
error or an interruption leaves nothing half-written under ``out``), the tables
in the form of ``data/pretrained/`` (a ``revision`` and a ``step`` column first
for a series), ``report.html`` when a report builder is given, and
``manifest.json`` last: the weights' sha256, the settings, the tokens read, the
seconds of each stage, the peak memory and the package's version. The command line
itself is :mod:`tanbias.lab.measure_command`.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile
import time
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from huggingface_hub import snapshot_download

import tanbias
from tanbias._checks import check_choice, check_int
from tanbias.errors import ParameterError
from tanbias.lab import zoo
from tanbias.lab.analysis import pretrained as pt
from tanbias.lab.analysis.pretrained import MeasureSettings
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES, SHORT, SINK_RATIO, pretrained_table, report_ci
from tanbias.lab.analysis.tables import add_log_enrichment, mean_over_layers
from tanbias.lab.checkpoints import (check_revision, checkpoint_config, load_checkpoint, local_revisions,
                                     resolve_checkpoint, revision_steps)
from tanbias.lab.devices import resolve_device
from tanbias.lab.runs import ROOT, atomic_write_text, git_commit, load_run, run_dir, sha256
from tanbias.theory import anisotropy as rival_anisotropy

__all__ = ["COMMAND", "MEASURED_DIR", "ARCHITECTURES", "anisotropy_readings", "ANISOTROPY_METRICS", "MIN_TOKENS",
           "MIN_DOCUMENTS", "MIN_TYPES", "TEXT_LANGUAGE", "read_documents", "model_revisions", "check_out",
           "staged_folder", "weights_sha256", "load_model", "measure_settings", "probe_tokens", "architecture_table", "Measurement",
           "measure_model", "measure_revision", "write_measurement", "trajectory_table", "split_revisions",
           "findings", "load_measurement", "BENCH_TARGETS", "bench_measure", "DTYPES", "check_dtype",
           "output_spectrum", "REFERENCE_RUNS", "ZOO_MEASURED_DIR", "reference_columns", "reference_readings", "installation",
           "zoo_costs", "cost_rule", "ZOO_SHAPES", "rule_over_zoo", "TOKENS_DIR", "token_widths", "premise_width",
           "COST_COLUMNS", "ESTIMATE_COLUMNS", "WIDTH_COLUMNS", "cost_table", "estimate_table", "widths_table",
           "findings_table", "TRAJECTORY_RUN", "lab_trajectory"]

#: The command that writes a measurement folder (named by the errors that find one damaged).
COMMAND = "python -m tanbias measure"
#: Measurements the command made that the book reads (``data/measure/<name>/``: the tables and the
#: manifest, whose ``command_line`` is the command that wrote them; ``data/measure/README.md``).
MEASURED_DIR = pt.PRETRAINED_DIR.parent / "measure"

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

# ------------------------------------------------------------------------------------------
# THE RIVAL ANISOTROPY METRICS PLUG IN HERE.
def anisotropy_readings(Y, type_ids, spectrum=None) -> dict:
    """More readings of one layer's anisotropy, beside chapter 9's: the command's.

    :func:`tanbias.theory.anisotropy.measure_readings` of the layer's rows without the first
    position (``Y``, ``(n, D)``) and their types, one column per record of
    :data:`tanbias.theory.anisotropy.METRICS` that the command computes: ``raw`` (the exact mean
    cosine over all pairs, where chapter 9's ``mean_cosine`` samples 20,000), ``mean_share`` (the
    mean vector's share of the squared norm: what the raw mean cosine mostly measures),
    ``cosine_top_share`` (the top three coordinates' share of the mean cosine itself),
    ``top_share`` (their share of the variance), ``standardised``, ``type_balanced`` and
    ``participation_ratio`` (read off ``spectrum``, the eigenvalues of the rows' scatter matrix
    that chapter 9's anisotropy computed, when given). Each account of anisotropy without a
    tangent bias names the correction that should remove it if it is right (the rivals
    chapter). Rows of norm 0 are left out. The columns of ``anisotropy.csv`` that
    :data:`ANISOTROPY_METRICS` adds; chapter 9's own tables never carry them. The lab's runs read
    :func:`tanbias.theory.anisotropy.readings` instead (``rivals.csv``).

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> r = anisotropy_readings(rng.normal(size=(500, 8)) + 5.0, rng.integers(0, 20, 500))
    >>> list(r) == list(rival_anisotropy.MEASURE_READINGS), round(r["mean_share"], 1)
    (True, 1.0)
    """
    Y = np.asarray(Y, np.float64)
    live = np.linalg.norm(Y, axis=1) > 0
    if not live.all():
        Y, type_ids, spectrum = Y[live], np.asarray(type_ids)[live], None
    return rival_anisotropy.measure_readings(Y, type_ids=np.asarray(type_ids), spectrum=spectrum)


#: The anisotropy readings the command adds to chapter 9's, per layer: ``metrics(Y, type_ids)``
#: of :func:`tanbias.lab.analysis.pretrained.layer_tables` (None: chapter 9's alone).
ANISOTROPY_METRICS = anisotropy_readings
# ------------------------------------------------------------------------------------------

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


def output_spectrum(net):
    """The singular spectrum of a model's output matrix (its unembedding), or None without one.

    Returns
    -------
    pandas.DataFrame or None
        One row per singular value, largest first: ``rank`` (1, 2, ...), ``dims`` (the matrix's
        smaller side, D), ``singular_value``, ``share`` (its square's share of the sum of
        squares) and ``cumulative`` (the shares summed so far): an isotropic matrix has
        ``cumulative`` = ``rank / dims``
        (:func:`tanbias.theory.anisotropy.singular_spectrum`).
    """
    import pandas as pd

    out = net.get_output_embeddings()
    if out is None or getattr(out, "weight", None) is None:
        return None
    sv = rival_anisotropy.singular_spectrum(out.weight.detach().float().cpu().numpy())
    share = sv ** 2 / float((sv ** 2).sum())
    return pd.DataFrame({"rank": np.arange(1, len(sv) + 1), "dims": len(sv), "singular_value": sv,
                         "share": share, "cumulative": np.cumsum(share)})


#: The fewest tokens per language a measurement reads (``--tokens``): below it too few types
#: occur ``m`` times for the premise's correlations.
MIN_TOKENS = 1024
#: The fewest documents a text may hold: the premise's intervals resample documents.
MIN_DOCUMENTS = 10
#: The fewest token types that must reach ``m`` occurrences (a correlation over types, a
#: slope fitted over types).
MIN_TYPES = 10
#: The language of a text of one's own when none is named (its types' frequencies are
#: counted in the corpus of that language).
TEXT_LANGUAGE = "en"


def _rebuild(folder) -> str:
    return f"{COMMAND} MODEL --out {folder}"


# ---------------------------------------------------------------------------------- inputs
def read_documents(path) -> list[str]:
    """The documents of a text file: paragraphs separated by blank lines, whitespace trimmed.

    Raises
    ------
    ParameterError
        The file does not exist, is not UTF-8 text, or holds no text.

    Example
    -------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("One document,\\nstill the first.\\n\\n\\nThe second.\\n")
    >>> read_documents(f.name)
    ['One document,\\nstill the first.', 'The second.']
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ParameterError(f"text={str(path)!r} is not allowed: valid range is an existing text file. "
                             "Check the path.")
    try:
        raw = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ParameterError(f"text={str(path)!r} is not allowed: valid range is a UTF-8 text file ({exc}). "
                             "Convert it to UTF-8.") from None
    docs = [d.strip() for d in re.split(r"\n[ \t]*\n", raw.replace("\r\n", "\n"))]
    docs = [d for d in docs if d]
    if not docs:
        raise ParameterError(f"text={str(path)!r} is not allowed: valid range is a file holding text; it is "
                             "empty. Pass a text of documents separated by blank lines.")
    return docs


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


def check_out(out) -> Path:
    """``out`` if a measurement may be written there: a folder that does not exist yet, an empty
    one, or one this command wrote before (it holds a ``manifest.json`` naming the command).

    Raises
    ------
    ParameterError
        ``out`` is a file, or a folder holding anything else (it is never overwritten).
    """
    out = Path(out).expanduser()
    if out.is_file():
        raise ParameterError(f"out={str(out)!r} is not allowed: valid range is a folder; it is a file. "
                             "Pass another --out.")
    if out.is_dir() and any(out.iterdir()):
        try:
            ours = json.loads((out / "manifest.json").read_text()).get("command") == COMMAND
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise ParameterError(f"out={str(out)!r} is not allowed: valid range is a new or empty folder, or one "
                                 f"this command wrote before (it is replaced). It holds other files. Pass another "
                                 "--out.")
    return out


@contextlib.contextmanager
def staged_folder(out):
    """A folder beside ``out`` to write into; renamed to ``out`` when the block completes.

    On an error (or an interruption) the staged folder is removed and ``out`` is left as it
    was. A measurement ``out`` held before is replaced only once the new one is complete.

    Example
    -------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> try:
    ...     with staged_folder(root / "m") as tmp:
    ...         _ = (tmp / "a.csv").write_text("x")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> sorted(p.name for p in root.iterdir())
    []
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    try:
        yield tmp
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------------------------- loading
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


def _check_tokenizer(loaded: dict, name: str, alignment: bool) -> None:
    """The special tokens the measurement needs: an encoder's start and end tokens (its rows are
    framed as it was trained), a masked LM's mask token (the alignment test masks tokens)."""
    tok, kind = loaded["tokenizer"], loaded["kind"]
    start, end = pt.frame_tokens(tok)
    if kind == "encoder" and (start is None or end is None):
        missing = " and no ".join(w for w, i in (("start token ([CLS] or <s>)", start),
                                                 ("end token ([SEP] or </s>)", end)) if i is None)
        raise ParameterError(f"model={name!r} is not allowed: its tokenizer ({type(tok).__name__}) has no "
                             f"{missing}: valid range is an encoder whose tokenizer frames its rows as it "
                             "was trained. Save the model's own tokenizer beside it.")
    if kind == "encoder" and loaded["head"] and alignment and tok.mask_token_id is None:
        raise ParameterError(f"model={name!r} is not allowed with the alignment test: its tokenizer has no mask "
                             "token, and the test masks tokens for the masked-LM loss. Save the model's own "
                             "tokenizer beside it, or pass --no-alignment.")


# ---------------------------------------------------------------------------------- settings
def measure_settings(model, settings: MeasureSettings | None = None, *, text: bool = False,
                     **overrides) -> MeasureSettings:
    """The settings of a measurement of ``model``, checked before anything is loaded.

    ``settings`` (default: chapter 9's, with a zoo model's own departures,
    :data:`tanbias.lab.analysis.pretrained.MODEL_SETTINGS`) with ``overrides`` (fields of
    :class:`~tanbias.lab.analysis.pretrained.MeasureSettings`; ``languages`` may be one code).
    Unless set, the alignment test's ``probe_tokens`` follow ``n_tokens`` (:func:`probe_tokens`)
    and the languages are a zoo model's own, else :data:`TEXT_LANGUAGE`; with a ``text`` of
    one's own, one language (the text's).

    Raises
    ------
    ParameterError
        An unknown setting, a value out of its range, fewer than :data:`MIN_TOKENS` tokens,
        several languages for a text of one's own, a language the corpus lacks.

    Example
    -------
    >>> s = measure_settings("a/folder", n_tokens=4096)
    >>> s.n_tokens, s.probe_tokens, s.languages
    (4096, 512, ('en',))
    """
    from tanbias.lab.data import check_languages      # here: it loads torch

    zoo_name = model if isinstance(model, str) and model in zoo.ZOO else None
    if isinstance(overrides.get("languages"), str):
        overrides["languages"] = [overrides["languages"]]
    base = settings.to_dict() if settings is not None else pt.MODEL_SETTINGS.get(zoo_name, {})
    named = overrides.get("languages", settings.languages if settings is not None else None)
    s = MeasureSettings.from_dict({**base, **overrides})
    check_int("tokens", s.n_tokens, lo=MIN_TOKENS, hint="Too few tokens leave too few types with m occurrences "
                                                         "for the premise's correlations. Pass more tokens.")
    if "probe_tokens" not in overrides and settings is None:       # --tokens bounds the alignment test too
        s = s.replace(probe_tokens=probe_tokens(s.n_tokens, s.probe_tokens, s.seq_len))
    if text and named is not None and len(named) != 1:
        raise ParameterError(f"languages={list(named)!r} is out of range with a text of one's own: valid range "
                             "is one language, the text's (its types' frequencies are counted in it).")
    if text and named is None:
        s = s.replace(languages=[TEXT_LANGUAGE])
    elif s.languages is None:
        s = s.replace(languages=pt.model_languages(zoo_name) if zoo_name else [TEXT_LANGUAGE])
    check_languages(s.languages)
    return s


def probe_tokens(n_tokens: int, default: int = MeasureSettings.probe_tokens,
                 seq_len: int = MeasureSettings.seq_len) -> int:
    """The tokens of each text of the alignment test for ``n_tokens`` of measured text: an eighth
    of them in whole rows (at least one), at most ``default``; chapter 9's 16,384 give its 2,048.

    Example
    -------
    >>> probe_tokens(16_384), probe_tokens(4096), probe_tokens(1024), probe_tokens(100_000)
    (2048, 512, 256, 2048)
    """
    return int(min(default, max(seq_len, n_tokens // 8 // seq_len * seq_len)))


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


def _text_checks(text: dict, tok, s: MeasureSettings, lang: str, source: str | None) -> None:
    """Refuse a text too short for the bootstrap: too few documents, too few types reaching m."""
    ids = text["input_ids"]
    keep = ~np.isin(ids, np.asarray(tok.all_special_ids, np.int64)) & ~text["sink"]
    docs = len(np.unique(text["document"][keep]))
    what = f"text={source!r}" if source is not None else f"the held-out text ({lang})"
    if docs < MIN_DOCUMENTS:
        raise ParameterError(f"{what} is too short for the bootstrap in {lang!r}: the {int(keep.sum())} tokens read "
                             f"span {docs} document{'s' if docs != 1 else ''}, and the premise's intervals resample "
                             f"documents: valid range is at least {MIN_DOCUMENTS} documents. Pass a longer text "
                             "(documents separated by blank lines) or more --tokens.")
    counts = np.bincount(ids[keep])
    n_types = int((counts >= s.m).sum())
    if n_types < MIN_TYPES:
        raise ParameterError(f"{what} is too short for the bootstrap in {lang!r}: {n_types} token types "
                             f"occur at least m = {s.m} times: valid range is at least {MIN_TYPES} types. Pass "
                             "a longer text or more --tokens.")


def _fit_text(run: "Measurement", tok, seq_len: int) -> None:
    """``n_tokens`` and ``probe_tokens`` no larger than a text of one's own holds (whole rows): the
    run's settings shrunk, and a note saying so."""
    from tanbias.lab.data import encode_documents      # here: it loads torch

    s, docs, source = run.settings, run.docs, run.text
    held = sum(len(x) for x in encode_documents(tok, docs, special_tokens=False))
    need = -(-s.n_tokens // seq_len) * seq_len
    if held < need:
        rows = held // seq_len
        if rows * seq_len < MIN_TOKENS:
            raise ParameterError(f"text={source!r} is too short for the bootstrap: it holds {held} tokens under the "
                                 f"model's tokenizer, {rows * seq_len} in whole rows of {seq_len}: valid range is at "
                                 f"least {MIN_TOKENS}. Pass a longer text.")
        run.notes.append(f"the text holds {held} tokens: {rows * seq_len} read (whole rows of {seq_len}), not "
                         f"{s.n_tokens}")
        s = s.replace(n_tokens=rows * seq_len)
    halves = [sum(len(x) for x in encode_documents(tok, docs[h::2])) for h in (0, 1)]
    probe_rows = min(halves) // seq_len
    if probe_rows * seq_len < s.probe_tokens:
        s = s.replace(probe_tokens=probe_rows * seq_len)
        run.notes.append(f"the alignment test reads {probe_rows * seq_len} tokens of each half of the documents "
                         "(the text holds no more)")
    run.settings = s


# ---------------------------------------------------------------------------------- measuring
@dataclass
class Measurement:
    """One measurement under way: what :func:`measure_revision` adds to, checkpoint after checkpoint,
    and :func:`write_measurement` writes.

    ``model``, ``settings``, ``device``, the ``revisions`` and their ``steps`` (``series``: they
    are labelled in the tables), the ``text`` of one's own (its path) and its ``docs``, whether
    to run the alignment test and show ``progress``; then what the checkpoints add: the tables'
    ``frames``, the ``seconds`` of each stage, ``notes``, each language's text and frequencies
    (read once, from the first checkpoint), the ``first`` checkpoint's description, the
    documents and tokens read per language.
    """
    model: object
    settings: MeasureSettings
    device: object
    revisions: list
    steps: list
    series: bool = False
    text: str | None = None
    docs: list | None = None
    alignment: bool = True
    progress: bool = True
    argv: list | None = None
    dtype: str = "float32"
    started: float = field(default_factory=time.perf_counter)
    frames: dict = field(default_factory=lambda: {k: [] for k in (*pt.TABLES, "alignment", "spectrum")})
    seconds: dict = field(default_factory=lambda: dict.fromkeys(
        ("load", "frequencies", "forward", "analysis", "probe", "report"), 0.0))
    notes: list = field(default_factory=list)
    texts: dict = field(default_factory=dict)
    frequencies: dict = field(default_factory=dict)
    first: dict | None = None
    documents: dict = field(default_factory=dict)
    measured: dict = field(default_factory=dict)
    n_read: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The model as named (a zoo name, a folder, a hub id)."""
        return os.fspath(self.model)

    @property
    def documents_of(self) -> dict | None:
        """A text of one's own as ``{language: documents}`` (None: the corpus' held-out documents)."""
        return None if self.docs is None else {self.settings.languages[0]: self.docs}


def _peak_gb(device) -> dict:
    import torch

    out = {"peak_rss_gb": pt.peak_rss_gb()}
    if device.type == "cuda":
        out["peak_device_gb"] = torch.cuda.max_memory_allocated(device) / 2 ** 30
    return out


def measure_model(model, out=None, settings: MeasureSettings | None = None, *, text=None, revisions=None,
                  alignment: bool = True, device="cpu", progress: bool = True, report=None, argv=None,
                  dtype: str = "float32", **overrides) -> dict:
    """Measure a model (or a series of its checkpoints) and write its folder (the module docstring).

    ``model`` is a zoo name, a local folder (a checkpoint, or a folder of checkpoint
    folders: all of them, or ``revisions``) or a hub id (with ``revisions``); ``out`` the
    folder to write (:func:`check_out`; default ``measure-<name>``). ``settings`` and
    ``overrides`` as :func:`measure_settings` takes them (``n_tokens`` bounds the time and the
    memory: the hidden states kept are ``(L + 1) x n_tokens x D`` float32); ``text`` a UTF-8
    file of one's own (:func:`read_documents`); ``alignment``: run the alignment test (a model
    with a language-model head); ``device``: :data:`tanbias.lab.devices.DEVICES`; ``dtype``: the
    parameters' type in the forward passes (:data:`DTYPES`, checked on ``device`` first);
    ``report(tables) -> str``: the HTML written as ``report.html`` (``tables`` as
    :func:`load_measurement` returns them, the manifest without its final timings); ``argv``:
    the command line that asked for it, recorded in the manifest.

    Returns
    -------
    dict
        The manifest, with ``out`` (the folder written).

    Raises
    ------
    ParameterError, CorruptFileError, tanbias.lab.checkpoints.CheckpointUnavailable, tanbias.lab.zoo.ZooUnavailable
        Before anything is written when the arguments are wrong; nothing is left under ``out``
        when the measurement fails.
    """
    started = time.perf_counter()
    dev = resolve_device(device)
    check_dtype(dtype, dev)
    docs = read_documents(text) if text is not None else None
    s = measure_settings(model, settings, text=docs is not None, **overrides)
    revs = model_revisions(model, revisions)
    series = revisions is not None or len(revs) > 1
    slug = Path(os.fspath(model).rstrip("/\\")).name or "model"
    out = check_out(Path(out) if out is not None else Path(f"measure-{slug}"))
    run = Measurement(model, s, dev, revs, revision_steps(revs) if series else [0], series,
                      text=os.fspath(text) if text is not None else None, docs=docs, alignment=alignment,
                      progress=progress, argv=argv, started=started, dtype=dtype)
    _reset_peak(dev)
    with staged_folder(out) as tmp, warnings.catch_warnings():
        # the embeddings' readings do not vary (every occurrence of a type is one vector): their
        # correlations are NaN by design, and numpy says so at every layer 0
        warnings.filterwarnings("ignore", "Mean of empty slice|Degrees of freedom <= 0", RuntimeWarning)
        for i, (rev, step) in enumerate(_progress_bar(list(zip(run.revisions, run.steps)), progress)):
            if i:
                gc.collect()            # the last checkpoint's model, before the next one loads
            measure_revision(run, rev, step)
        manifest = write_measurement(run, tmp, report)
    return {**manifest, "out": str(out)}


def _reset_peak(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _progress_bar(items: list, progress: bool):
    if not progress or len(items) < 2:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc="revisions", unit="checkpoint")


def measure_revision(run: Measurement, revision, step: int) -> None:
    """Measure one checkpoint of ``run`` (``revision``, None for a folder's own, at ``step``) and
    add its rows to ``run``: every table in each language, then the alignment test.

    The first checkpoint fixes what every later one must share: each language's text (a
    checkpoint that reads it differently is refused) and its token frequencies, and the
    alignment test's random-init null (measured once, beside it).
    """
    first = run.first is None
    t0 = time.perf_counter()
    loaded = load_model(run.model, revision, run.device, run.progress, run.dtype)
    run.seconds["load"] += time.perf_counter() - t0
    net, tok, kind = loaded["model"], loaded["tokenizer"], loaded["kind"]
    _check_tokenizer(loaded, run.name, run.alignment)
    seq_len = min(run.settings.seq_len,
                  int(getattr(net.config, "max_position_embeddings", None) or run.settings.seq_len))
    if first:
        run.first = {**{k: v for k, v in loaded.items() if k not in ("model", "tokenizer")},
                     "seq_len": seq_len, "flops_per_token": pt.flops_per_token(net, seq_len)}
        if run.docs is not None:
            _fit_text(run, tok, seq_len)
    for lang in run.settings.languages:
        _measure_language(run, net, tok, kind, lang, seq_len, revision, step)
    t0 = time.perf_counter()
    spectrum = output_spectrum(net)
    if spectrum is not None:
        run.frames["spectrum"].append(_label(spectrum, revision, step, run.series))
    run.seconds["analysis"] += time.perf_counter() - t0
    if run.alignment and loaded["head"]:
        _alignment_test(run, net, tok, kind, seq_len, revision, step, null=first)
    elif first:
        run.notes.append("alignment test not run: " + ("--no-alignment" if not run.alignment else
                                                       f"{loaded['arch']} has no language-model head"))
    del net, tok, loaded


def _measure_language(run: Measurement, net, tok, kind: str, lang: str, seq_len: int, revision, step: int) -> None:
    s = run.settings
    t = pt.language_text(tok, kind, lang, s, seq_len, run.documents_of)
    if lang not in run.texts:
        _text_checks(t, tok, s, lang, run.text)
        run.texts[lang] = t
        t0 = time.perf_counter()
        vocab = int(max(len(tok), net.get_input_embeddings().weight.shape[0]))
        run.frequencies[lang] = pt.corpus_frequencies(tok, [lang], vocab, s.frequency_docs)
        run.seconds["frequencies"] += time.perf_counter() - t0
    elif not np.array_equal(t["input_ids"], run.texts[lang]["input_ids"]):
        raise ParameterError(f"revisions={run.revisions!r} is not allowed for {run.name!r}: valid range is revisions "
                             f"that share one tokenizer ({revision!r} reads the text differently from "
                             f"{run.revisions[0]!r}). Measure them apart.")
    res = pt.measure_language(net, tok, kind, lang, s, seq_len, run.progress, run.documents_of, ANISOTROPY_METRICS,
                              text=t, frequency=run.frequencies[lang])
    for key, frame in res["tables"].items():
        run.frames[key].append(_label(frame, revision, step, run.series))
    for key in ("forward", "analysis"):
        run.seconds[key] += res["seconds"][key]
    run.notes += [n for n in res["notes"] if n not in run.notes]
    run.documents[lang], run.measured[lang], run.n_read[lang] = res["documents"], res["measured"], res["n_tokens"]


def _alignment_test(run: Measurement, net, tok, kind: str, seq_len: int, revision, step: int, null: bool) -> None:
    from tanbias.lab.analysis.checkpoint_probe import heldout_alignment      # here: it loads torch

    s = run.settings
    t0 = time.perf_counter()
    lang = "en" if "en" in s.languages else s.languages[0]
    a = heldout_alignment(net, tok, kind, n_tokens=s.probe_tokens, seq_len=seq_len, seed=s.seed, probe=s.probe,
                          language=lang, null=null, progress=run.progress, documents=run.documents_of)
    run.frames["alignment"].append(_label(a, revision, step, run.series))
    run.seconds["probe"] += time.perf_counter() - t0


def write_measurement(run: Measurement, folder, report=None) -> dict:
    """Write what ``run`` measured into ``folder``: its tables (and, for a series, the trajectory),
    the report (``report(tables) -> str``, when given) and the manifest, last.

    A report that cannot be drawn leaves a note in the manifest: the tables stand without it.

    Returns
    -------
    dict
        The manifest as written.
    """
    import pandas as pd

    folder = Path(folder)
    tables = {k: pd.concat(v, ignore_index=True) for k, v in run.frames.items() if v}
    if run.series:
        tables["trajectory"] = trajectory_table(tables)
    for key, frame in tables.items():
        atomic_write_text(folder / f"{key}.csv", frame.to_csv(index=False, float_format=pt.CSV_FLOAT))
    manifest = _manifest(run, folder, tables)
    if report is not None:
        _write_report(run, folder, {"manifest": manifest, **tables}, report)
    run.seconds["total"] = time.perf_counter() - run.started
    manifest.update({"seconds": run.seconds, "git": git_commit(), **_peak_gb(run.device)})
    # the manifest last: a folder without one is an unfinished measurement
    atomic_write_text(folder / "manifest.json", json.dumps(manifest, indent=1, default=_json_default) + "\n")
    return manifest


def _manifest(run: Measurement, folder: Path, tables: dict) -> dict:
    import torch
    import transformers

    s, first = run.settings, run.first
    n_total = sum(run.n_read.values()) * len(run.revisions)
    manifest = {
        "command": COMMAND, **({"command_line": shlex.join(run.argv)} if run.argv is not None else {}),
        "model": run.name, "revisions": [r if r is not None else "main" for r in run.revisions],
        "steps": run.steps if run.series else None, **{k: v for k, v in first.items() if k != "seq_len"},
        "settings": s.to_dict(), "languages": list(s.languages), "text": _text_record(run.text),
        "documents": run.documents, "n_tokens": n_total, "tokens_measured": run.measured, "seq_len": first["seq_len"],
        "device": str(run.device), "dtype": run.dtype, "versions": {"tanbias": tanbias.__version__, "torch": torch.__version__,
                                                "transformers": transformers.__version__},
        "notes": run.notes, "tables": {k: sha256(folder / f"{k}.csv") for k in tables},
    }
    forward = max(run.seconds["forward"], 1e-9)
    peak = _gemm_rate(str(run.device))
    manifest.update({"tokens_per_s": n_total / forward, "gemm_flops": peak,
                     "gemm_fraction": first["flops_per_token"] * n_total / forward / peak})
    return manifest


@functools.lru_cache(maxsize=4)
def _gemm_rate(device: str) -> float:
    """The device's matrix-multiply rate (:func:`tanbias.lab.models.gemm_peak` of 1,024 x 1,024 float32
    matrices), measured once per process: the reference of the manifest's ``gemm_fraction``."""
    from tanbias.lab.models import gemm_peak      # here: it loads torch

    return gemm_peak(1024, device=device)


def _write_report(run: Measurement, folder: Path, tables: dict, report) -> None:
    t0 = time.perf_counter()
    run.seconds["total"] = t0 - run.started            # so far: the manifest's last word comes after
    manifest = tables["manifest"]
    try:
        html = report({**tables, "manifest": {**manifest, "seconds": dict(run.seconds)}})
    except Exception as exc:  # noqa: BLE001 - the tables stand without their report
        run.notes.append(f"the report could not be drawn ({type(exc).__name__}: {exc}); the tables are complete")
        warnings.warn(run.notes[-1], stacklevel=3)
    else:
        atomic_write_text(folder / "report.html", html)
        manifest["report"] = "report.html"
    run.seconds["report"] = time.perf_counter() - t0


def _json_default(obj):
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    if isinstance(obj, (tuple, set)):
        return list(obj)
    return str(obj)


def _text_record(text) -> dict:
    if text is None:
        return {"source": "corpus", "split": "validation (held-out documents, tanbias.lab.corpus)"}
    p = Path(text).expanduser()
    return {"source": "file", "path": str(p.resolve()), "sha256": sha256(p)}


def _label(frame, rev, step, series: bool):
    if not series:
        return frame
    frame = frame.copy()
    frame.insert(0, "step", int(step))
    frame.insert(0, "revision", rev if rev is not None else "main")
    return frame


def trajectory_table(tables: dict):
    """One row per revision and language: chapter 9's headline readings, to follow over training.

    ``rho_<reading>``, ``lo_<reading>``, ``hi_<reading>``: the matched ρ of log corpus
    frequency with each reading at the last layer, with its interval over documents;
    ``mean_cosine_max``, ``isoscore_min``, ``top1_share_max`` over the blocks (without the
    first position); ``curvature_median`` (the median normal-share slope over the blocks);
    with the alignment test, ``enrichment_gmean`` (the geometric mean of the enrichment over
    the layers, chapter 8's layer average) and ``enrichment_median`` (the median over the
    inner layers, chapter 9's), each for the checkpoint; the random-init copy's once, as
    ``null_enrichment_gmean`` and ``null_enrichment_median``.
    """
    import pandas as pd

    premise, an, curv = tables["premise"], tables["anisotropy"], tables["curvature"]
    L = int(an["layer"].max())
    m = int(premise.loc[premise["estimator"] == "matched", "m"].mode().iloc[0])
    rows = []
    null = {}
    al = tables.get("alignment")
    if al is not None:
        g = al[al["model"] == "random-init"]
        if len(g):
            null = {"null_enrichment_gmean": float(np.exp(np.log(g["enrichment"]).mean())),
                    "null_enrichment_median": float(g.loc[g["layer"].between(1, L - 1), "enrichment"].median())}
    for (rev, step, lang), a in an.groupby(["revision", "step", "language"], sort=False):
        row = {"revision": rev, "step": int(step), "language": lang}
        p = premise[(premise["revision"] == rev) & (premise["language"] == lang) & (premise["estimator"] == "matched")
                    & (premise["m"] == m) & (premise["source"] == "corpus") & (premise["layer"] == L)]
        for _, r in p.iterrows():
            row.update({f"rho_{r['reading']}": r["rho"], f"lo_{r['reading']}": r["lo"],
                        f"hi_{r['reading']}": r["hi"]})
        body = a[a["layer"] >= 1]
        row.update({"mean_cosine_max": float(body["mean_cosine"].max()),
                    "isoscore_min": float(body["isoscore_star"].min()),
                    "top1_share_max": float(body["top1_share"].max())})
        c = curv[(curv["revision"] == rev) & (curv["language"] == lang) & (curv["layer"] >= 1)]
        row["curvature_median"] = float(c["slope"].median()) if len(c) else float("nan")
        if al is not None:
            g = al[(al["revision"] == rev) & (al["model"] == "trained")]
            if len(g):
                gm = mean_over_layers(add_log_enrichment(g), ["revision"], ["log_enrichment"])
                row["enrichment_gmean"] = float(np.exp(gm["log_enrichment"].iloc[0]))
                row["enrichment_median"] = float(g.loc[g["layer"].between(1, L - 1), "enrichment"].median())
                row.update(null)
        rows.append(row)
    return pd.DataFrame(rows)


#: The lab's runs a measurement is drawn beside (:func:`reference_readings`): the rivals experiment's
#: long control runs, one per architecture, at their last step (the lab's longest-trained models
#: that carry every reading of ``rivals.csv``)
REFERENCE_RUNS = {"rivals-decoder-standard-long-s0": "lab decoder", "rivals-encoder-standard-long-s0": "lab encoder"}
#: The zoo measured by the command itself, every reading (``data/measure/zoo/<name>/``, in English: their
#: command lines are in ``data/measure/README.md``): the zoo's lines behind a measured model
ZOO_MEASURED_DIR = MEASURED_DIR / "zoo"


def reference_columns() -> dict:
    """``{reading: lab column}``: the readings :func:`reference_readings` returns (the records of
    :data:`tanbias.theory.anisotropy.METRICS` the command reads) and the column of a lab run's
    tables each is read from (the record's ``reference``; None: no lab run holds it). The zoo's
    measurements carry each reading under its own name.

    Example
    -------
    >>> reference_columns()["raw"], reference_columns()["cosine_top_share"]
    ('raw', None)
    """
    return {m.name: m.reference for m in rival_anisotropy.METRICS if m.command}


def reference_readings(zoo_names=None, runs=None, language: str = "en"):
    """The book's own per-layer readings, to draw a measurement beside: the zoo's and the lab's.

    The zoo measured by the command (:data:`ZOO_MEASURED_DIR`, in ``language``: every reading the
    command reads, by the same functions as the measured model's) and the lab's
    :data:`REFERENCE_RUNS` at their last step (``rivals.csv``; IsoScore* and the participation
    ratio from ``anisotropy.csv``'s content positions), every table read with its checksums. A
    source whose files are absent (an installed package without the book's ``data/``) is left
    out. Read once per process (the committed files do not change under it); each call returns
    a copy.

    Returns
    -------
    pandas.DataFrame
        ``source``, ``group`` (``"zoo"`` or ``"lab"``), ``reading`` (a key of
        :func:`reference_columns`), ``layer``, ``depth`` (layer over the last layer) and
        ``value``; one row per source, reading and layer.
    """
    names = tuple(zoo.ZOO if zoo_names is None else zoo_names)
    runs = tuple((REFERENCE_RUNS if runs is None else runs).items())
    return _reference_readings(names, runs, language, tuple(reference_columns().items())).copy()


@functools.lru_cache(maxsize=4)
def _reference_readings(zoo_names: tuple, runs: tuple, language: str, columns: tuple):
    import pandas as pd

    rows = []

    def add(source, group, frame, col, reading):
        L = max(int(frame["layer"].max()), 1)
        rows.extend({"source": source, "group": group, "reading": reading, "layer": int(r.layer),
                     "depth": r.layer / L, "value": float(getattr(r, col))} for r in frame.itertuples())

    for name in zoo_names:
        folder = ZOO_MEASURED_DIR / name
        if not (folder / "manifest.json").is_file():
            continue
        a = load_measurement(folder)["anisotropy"]
        a = a[a["language"] == language]
        for reading, _ in columns:
            if reading in a and len(a):
                add(name, "zoo", a, reading, reading)
    for run, label in runs:
        if not (run_dir(run) / "manifest.json").is_file():
            continue
        data = load_run(run)
        last = data.rivals[data.rivals["step"] == data.rivals["step"].max()]
        an = data.anisotropy
        an = an[(an["step"] == an["step"].max()) & (an["positions"] == "content")]
        for reading, col in columns:
            if col is not None:
                add(label, "lab", last if col in last else an, col, reading)
    return pd.DataFrame(rows, columns=["source", "group", "reading", "layer", "depth", "value"])


def split_revisions(tables: dict) -> dict:
    """``{label: tables}``: one entry per checkpoint, in the form the chapter's figures read.

    One model gives ``{its name: tables}``; a series (tables with a ``revision`` column)
    gives one entry per revision, each with the random-init null of the alignment test
    (measured once) beside its own rows.
    """
    man = tables["manifest"]
    name = Path(str(man["model"]).rstrip("/\\")).name or str(man["model"])
    keys = [k for k in tables if k not in ("manifest", "trajectory")]
    if "revision" not in tables["anisotropy"]:
        return {name: tables}
    out = {}
    for rev in dict.fromkeys(tables["anisotropy"]["revision"]):
        part = {"manifest": man}
        for key in keys:
            t = tables[key]
            keep = t["revision"] == rev
            if key == "alignment":
                keep |= t["model"] == "random-init"
            part[key] = t[keep].drop(columns=["revision", "step"]).reset_index(drop=True)
        out[str(rev)] = part
    return out


def findings(tables: dict) -> list[tuple[str, str]]:
    """What the measurements say, in sentences, each with the key of the section that explains it.

    Read from :func:`tanbias.lab.analysis.pretrained_report.pretrained_table` (chapter 9's
    numbers and its words: an interval's word, the band's word over the blocks), at the last
    checkpoint of a series.

    Returns
    -------
    list of (section, sentence)
        ``section``: ``"premise"``, ``"anisotropy"``, ``"alignment"``, ``"curvature"`` or
        ``"trajectory"``, the reading the sentence is about.
    """
    parts = split_revisions(tables)
    label = list(parts)[-1]
    tab = parts[label]
    rep = pretrained_table({label: tab})
    k = f"ch9_{SHORT.get(label, label)}"
    where = "" if len(parts) == 1 else f" (checkpoint {label})"
    out = []
    for lang in dict.fromkeys(tab["anisotropy"]["language"]):
        out += _language_findings(rep, f"{k}_{lang}", LANGUAGE_NAMES.get(lang, lang), where)
    if f"{k}_enrich_trained_median" in rep:
        out.append(("alignment", f"The gradients' median enrichment in the activations' top principal directions "
                    f"over the inner layers is {rep[f'{k}_enrich_trained_median']:.2f}{where}, against "
                    f"{rep[f'{k}_enrich_null_median']:.2f} for a randomly initialised copy (1 = a random "
                    "subspace)."))
    traj = tables.get("trajectory")
    if traj is not None and "enrichment_gmean" in traj and traj["enrichment_gmean"].notna().any():
        curve = traj.drop_duplicates("revision").set_index("revision")["enrichment_gmean"]
        peak = curve.idxmax()
        at = list(curve.index).index(peak) + 1
        out.append(("trajectory", f"Over the {len(curve)} checkpoints the enrichment (geometric mean over the "
                    f"layers) peaks at {peak} ({at} of {len(curve)}: ×{curve.max():.2f}); the last holds "
                    f"×{curve.iloc[-1] / curve.max():.2f} of that peak. 'Imprinted early' means a peak early in "
                    "training that later training does not raise."))
    return out


def _language_findings(rep: dict, kl: str, name: str, where: str) -> list[tuple[str, str]]:
    """:func:`findings`' sentences of one language (``kl``: its keys' prefix in ``rep``)."""
    t, d = f"{kl}_t_corpus", f"{kl}_dist_corpus"
    out = [("premise", f"{name}{where}: at the last layer, ρ(log frequency, radius t) = "
                       f"{report_ci(rep, t)}, {rep[f'{t}_sign']}; over the blocks "
                       f"the band is {rep[f'{t}_band']}. The premise predicts negative."),
           ("premise", f"{name}: the distance of a type's centroid to the layer mean gives "
                       f"{report_ci(rep, d)} at the last layer, "
                       f"{rep[f'{d}_sign']}; self-similarity {rep[f'{kl}_self_corpus_rho']:+.2f}, "
                       f"{rep[f'{kl}_self_corpus_sign']}."),
           ("anisotropy", f"{name}: the mean cosine of random pairs peaks at {rep[f'{kl}_cos_max']:.2f} "
                          f"(block {rep[f'{kl}_cos_max_layer']}, first position left out; "
                          f"{rep[f'{kl}_cos_max_with_sink']:.2f} with it); IsoScore* reaches at most "
                          f"{rep[f'{kl}_iso_max']:.2f}; outlier dimensions: {rep[f'{kl}_outliers']}.")]
    if f"{kl}_sink_ratio_max" in rep:
        ratio = rep[f"{kl}_sink_ratio_max"]
        out.append(("anisotropy", f"{name}: the first position's norm is up to {ratio:.1f} times the median "
                    f"elsewhere (block {rep[f'{kl}_sink_ratio_layer']}): "
                    f"{'a sink' if ratio > SINK_RATIO else 'no sink'} by chapter 9's rule (above "
                    f"{SINK_RATIO:.0f} times)."))
    out.append(("curvature", f"{name}: the normal share's slope against t has median "
                f"{rep[f'{kl}_curv_median']:+.2f} over the blocks (from {rep[f'{kl}_curv_min']:+.2f} to "
                f"{rep[f'{kl}_curv_max']:+.2f}); a curved manifold gives 2, a flat cloud 0."))
    return out


def load_measurement(folder) -> dict:
    """A measurement folder's tables (pandas frames) and its manifest, checksums verified.

    Raises
    ------
    CorruptFileError
        The manifest or a table is missing or altered (names the command that writes it).
    """
    return pt.load_tables(folder, _rebuild(folder))


# ---------------------------------------------------------------------------------- what it costs
def installation(root=None) -> dict:
    """What the command needs installed, read from the project's own files: ``python`` (the
    ``requires-python`` of ``pyproject.toml``), and the versions ``requirements.txt`` pins of
    ``torch`` and ``transformers`` (the tested ones: ``make install`` installs them).

    Example
    -------
    >>> sorted(installation())
    ['python', 'torch', 'transformers']
    """
    root = Path(root or ROOT)
    python = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf8"))["project"]["requires-python"]
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s#]+)", (root / "requirements.txt").read_text(encoding="utf8"),
                           flags=re.M))
    return {"python": python, "torch": pins["torch"], "transformers": pins["transformers"]}


def zoo_costs(names=None):
    """What the command costs at its default tokens, per zoo model: chapter 9's committed measurements.

    ``python -m tanbias measure NAME`` with no option measures a zoo model as chapter 9 did
    (its languages, 16,384 tokens each, the alignment test where there is a language-model
    head), through the same functions; the manifests of ``data/pretrained/`` hold what that
    took on the project's two-core CPU machine, one torch thread.

    Returns
    -------
    pandas.DataFrame
        One row per model: ``model``, ``kind``, ``languages``, ``tokens`` (all languages),
        ``layers`` (the hidden states read, embeddings included), ``gflops_per_token``,
        ``probe_tokens`` (of each of the alignment test's texts; 0 without it), ``seconds`` (total), ``forward``, ``analysis``, ``probe`` (the alignment test),
        ``peak_gb`` (the process's peak resident memory).
    """
    import pandas as pd

    rows = []
    for name in zoo.ZOO if names is None else names:
        tab = pt.load_pretrained(name)
        man, an = tab["manifest"], tab["anisotropy"]
        sec = man["seconds"]
        rows.append({"model": name, "kind": man["kind"], "languages": len(man["languages"]),
                     "tokens": int(sum(man["tokens_measured"].values())), "layers": int(an["layer"].max()) + 1,
                     "gflops_per_token": man["flops_per_token"] / 1e9,
                     "probe_tokens": man["settings"]["probe_tokens"] if sec["probe"] > 1 else 0, "seconds": sec["total"],
                     "forward": sec["forward"], "analysis": sec["analysis"],
                     "probe": sec["probe"] if sec["probe"] > 1 else 0.0,
                     "peak_gb": man["peak_rss_gb"]})
    return pd.DataFrame(rows)


def cost_rule(params: float, layers: int, d_model: int, vocab: int = 128_256, n_tokens: int = MeasureSettings.n_tokens,
              languages: int = 1, alignment: bool = True, dtype: str = "float32", costs=None) -> dict:
    """A rule of thumb for the command's time and memory on a model the zoo does not hold.

    ``params`` counts the parameters of the blocks, the embedding and the output matrix left out
    (the forward pass runs the blocks alone); ``vocab`` and ``d_model`` give the embedding's.
    Time: the forward pass at the zoo's rate of floating-point operations (``2 params`` per
    token), the readings at the zoo's seconds per token and layer, and the alignment test at
    the zoo's seconds per token of its texts and operation (:func:`probe_tokens` of ``n_tokens``;
    each rate fitted by least squares through 0 to ``costs``, :func:`zoo_costs`). Memory: the
    weights (``params + vocab d_model``, tied: 4 bytes each in float32, 2 in bfloat16), the hidden states kept (``(layers +
    1) n_tokens d_model`` float32), with the alignment test a batch's logits and their gradients
    (``3 batch_size seq_len vocab`` float32), and 1 GB for the rest. A rough guide, within a
    factor of 2 of the zoo's own (:func:`rule_over_zoo`, checked on the page that quotes it); the
    zoo's models span 23 M to 270 M parameters.

    Returns
    -------
    dict
        ``seconds``, ``forward``, ``analysis``, ``probe`` and ``peak_gb``, and the ``rates`` used.

    Example
    -------
    >>> r = cost_rule(0.97e9, 16, 2048)            # Llama 3.2 1B: 1.24 B parameters, 0.97 B in its blocks
    >>> 300 < r["seconds"] < 5000, 5 < r["peak_gb"] < 15
    (True, True)
    """
    check_choice("dtype", dtype, DTYPES)
    for name, v in (("layers", layers), ("d_model", d_model), ("vocab", vocab), ("n_tokens", n_tokens),
                    ("languages", languages)):
        check_int(name, v, lo=1)
    if not params > 0:
        raise ParameterError(f"params={params!r} is out of range: valid range is (0, inf). Pass e.g. 1e9.")
    z = zoo_costs() if costs is None else costs
    fwd_rate = float((z["tokens"] * z["gflops_per_token"] * 1e9) @ z["forward"] / (z["forward"] @ z["forward"]))
    x = z["tokens"] * z["layers"]
    per_layer = float(x @ z["analysis"] / (x @ x))
    head = z[z["probe_tokens"] > 0]
    work = head["probe_tokens"] * head["gflops_per_token"] * 1e9
    probe_rate = float(work @ head["probe"] / (work @ work)) if len(head) else 0.0
    tokens = n_tokens * languages
    forward = tokens * 2 * params / fwd_rate
    analysis = tokens * (layers + 1) * per_layer
    probe = probe_tokens(n_tokens) * 2 * params * probe_rate if alignment else 0.0
    weights = (params + vocab * d_model) * (4 if dtype == "float32" else 2) / 2 ** 30
    hidden = (layers + 1) * n_tokens * d_model * 4 / 2 ** 30
    s = MeasureSettings
    logits = 3 * s.batch_size * s.seq_len * vocab * 4 / 2 ** 30 if alignment else 0.0
    return {"seconds": forward + analysis + probe, "forward": forward, "analysis": analysis, "probe": probe,
            "peak_gb": weights + hidden + logits + 1.0,
            "rates": {"forward_flops_per_s": fwd_rate, "analysis_s_per_token_layer": per_layer,
                      "probe_s_per_flop": probe_rate}}


#: Each zoo model's shape, from its config: the parameters of its blocks (embedding and output matrix left
#: out), its layers, width and vocabulary (:func:`cost_rule`'s arguments)
ZOO_SHAPES = {"smollm2-135m": (106.7e6, 30, 576, 49_152), "gemma3-270m": (100.2e6, 18, 640, 262_144),
              "minilm-l6": (11.0e6, 6, 384, 30_522), "me5-small": (22.0e6, 12, 384, 250_037)}


def rule_over_zoo(costs=None):
    """:func:`cost_rule` over what chapter 9's measurement of each zoo model took (:data:`ZOO_SHAPES`,
    :func:`zoo_costs`): one row per model, ``seconds`` and ``peak_gb`` as the rule's over the
    measured (1 = the rule is exact)."""
    import pandas as pd

    costs = zoo_costs() if costs is None else costs
    rows = []
    for row in costs.itertuples():
        params, layers, d_model, vocab = ZOO_SHAPES[row.model]
        rule = cost_rule(params, layers, d_model, vocab, n_tokens=row.tokens // row.languages,
                         languages=row.languages, alignment=row.probe_tokens > 0, costs=costs)
        rows.append({"model": row.model, "seconds": rule["seconds"] / row.seconds,
                     "peak_gb": rule["peak_gb"] / row.peak_gb})
    return pd.DataFrame(rows)


#: SmolLM2 measured at more tokens than the page's example (``data/measure/tokens/``), for
#: :func:`token_widths`
TOKENS_DIR = MEASURED_DIR / "tokens"


def token_widths(folders=None, chapter: str | None = "smollm2-135m", reading: str = "radius_t"):
    """How the premise's interval narrows with ``--tokens``: one row per measurement.

    ``folders`` (default: ``data/measure/smollm2-135m`` and those under :data:`TOKENS_DIR`),
    each read with its checksums, and chapter 9's committed measurement of ``chapter`` (None:
    none), which ``python -m tanbias measure NAME`` would write again: its first language, at
    chapter 9's tokens. The width is that of the 95 % interval over documents of the matched ρ
    of log corpus frequency with ``reading``, in the first language measured, at the last layer
    and as the median over the blocks (layers 1 to L).

    Returns
    -------
    pandas.DataFrame
        ``source`` (``"command"``, ``"chapter 9"``), ``tokens`` (asked), ``measured`` (read),
        ``types`` (types that reach ``m`` at the last layer), ``rho``, ``lo``, ``hi``, ``width``,
        ``median_width``, ``seconds`` (chapter 9's: loading, and that language's share of the
        counts, the forward pass and the readings; the alignment test left out), ``peak_gb``;
        sorted by ``tokens``.
    """
    import pandas as pd

    if folders is None:
        folders = [MEASURED_DIR / "smollm2-135m", *sorted(p.parent for p in TOKENS_DIR.glob("*/manifest.json"))]
    rows = []
    for folder in folders:
        tab = load_measurement(folder)
        man = tab["manifest"]
        lang = man["languages"][0]
        rows.append({"source": "command", "tokens": man["settings"]["n_tokens"],
                     "measured": man["tokens_measured"][lang], **premise_width(tab, lang, reading),
                     "seconds": man["seconds"]["total"], "peak_gb": man["peak_rss_gb"]})
    if chapter is not None:
        tab = pt.load_pretrained(chapter)
        man = tab["manifest"]
        lang, sec, k = man["languages"][0], man["seconds"], len(man["languages"])
        rows.append({"source": "chapter 9", "tokens": man["settings"]["n_tokens"],
                     "measured": man["tokens_measured"][lang], **premise_width(tab, lang, reading),
                     "seconds": sec["load"] + (sec["frequencies"] + sec["forward"] + sec["analysis"]) / k,
                     "peak_gb": man["peak_rss_gb"]})
    return pd.DataFrame(rows).sort_values("tokens", ignore_index=True)


def premise_width(tables: dict, language: str = "en", reading: str = "radius_t") -> dict:
    """The premise's interval in one measurement (the command's, or chapter 9's
    :func:`tanbias.lab.analysis.pretrained.load_pretrained`): the matched ρ of log corpus frequency
    with ``reading`` at the measurement's ``m``, in ``language``.

    Returns
    -------
    dict
        ``types`` (types read at the last layer), ``rho``, ``lo``, ``hi`` and ``width`` at the last
        layer; ``median_width``, the median width over the blocks (layers 1 to L).
    """
    pr = tables["premise"]
    m = tables["manifest"]["settings"]["m"]
    g = pr[(pr["language"] == language) & (pr["estimator"] == "matched") & (pr["source"] == "corpus")
           & (pr["reading"] == reading) & (pr["m"] == m)].sort_values("layer")
    if g.empty:
        raise ParameterError(f"language={language!r}, reading={reading!r} is out of range for this measurement: "
                             f"valid range is its languages {sorted(set(pr['language']))} and the readings "
                             f"{sorted(set(pr['reading']))}.")
    last = g.iloc[-1]
    body = g[g["layer"] >= 1]
    return {"types": int(last["n"]), "rho": float(last["rho"]), "lo": float(last["lo"]), "hi": float(last["hi"]),
            "width": float(last["hi"] - last["lo"]), "median_width": float((body["hi"] - body["lo"]).median())}


#: The page's tables: each column's header, a word with its unit
COST_COLUMNS = {"model": "model", "kind": "kind", "languages": "languages", "tokens": "tokens read, all languages",
                "seconds": "total time (s)", "forward": "forward pass (s)", "analysis": "readings (s)",
                "probe": "alignment test (s)", "peak_gb": "peak memory (GB)"}
ESTIMATE_COLUMNS = {"seconds": "total time (min)", "forward": "forward pass (min)", "analysis": "readings (min)",
                    "probe": "alignment test (min)", "peak_gb": "peak memory (GB)"}
WIDTH_COLUMNS = {"source": "measured by", "tokens": "tokens asked (--tokens)", "types": "types read",
                 "rho": "ρ, last layer", "lo": "95 % interval, low", "hi": "95 % interval, high",
                 "width": "interval width, last layer", "median_width": "median interval width over the blocks",
                 "seconds": "time (s)"}


def cost_table(costs=None):
    """:func:`zoo_costs` as the page shows it: one row per zoo model, every header a word with its unit."""
    costs = zoo_costs() if costs is None else costs
    return costs[list(COST_COLUMNS)].rename(columns=COST_COLUMNS)


def estimate_table(params: float, layers: int, d_model: int, **kwargs):
    """:func:`cost_rule` for one model, as the page shows it: one row per way of running the command (with
    and without the alignment test, in float32; with it in bfloat16), times in minutes.

    Example
    -------
    >>> t = estimate_table(0.97e9, 16, 2048)
    >>> list(t.columns)[:2], len(t)
    (['run', 'total time (min)'], 3)
    """
    import pandas as pd

    rows = []
    for label, over in (("float32, with the alignment test", {}), ("float32, without it", {"alignment": False}),
                        ("bfloat16, with the alignment test", {"dtype": "bfloat16"})):
        r = cost_rule(params, layers, d_model, **{**kwargs, **over})
        rows.append({"run": label, **{ESTIMATE_COLUMNS[k]: r[k] / (60 if k != "peak_gb" else 1)
                                      for k in ESTIMATE_COLUMNS}})
    return pd.DataFrame(rows)


def widths_table(widths):
    """:func:`token_widths` as the page shows it, every header a word (with its unit)."""
    return widths[list(WIDTH_COLUMNS)].rename(columns=WIDTH_COLUMNS)


def findings_table(tables):
    """:func:`findings` as a table: what each sentence is about, and the sentence."""
    import pandas as pd

    return pd.DataFrame(findings(tables), columns=["about", "what the measurement says"])


#: The lab run whose trajectory the page shows beside the worked one: the rivals experiment's long
#: decoder control, probed at 19 steps over 1,280 (its enrichment peaks early and falls)
TRAJECTORY_RUN = "rivals-decoder-standard-long-s0"


def lab_trajectory(run: str = TRAJECTORY_RUN, proxy: str = "refit"):
    """A lab run's enrichment over training, in the form of :func:`trajectory_table`: what a real
    trajectory looks like.

    The run's own alignment test at every probe step (``alignment.csv``, all tokens), with a proxy
    refitted at each step (``proxy="refit"``: as the command fits one per checkpoint), as the
    geometric mean over the layers (``enrichment_gmean``, the command's reading). The run reads
    its training batches' gradients, where the command reads held-out text: the same quantity,
    measured in training.

    Returns
    -------
    pandas.DataFrame
        ``revision`` (``step<N>``), ``step``, ``language`` (``"en"``), ``enrichment_gmean``; one row
        per probe step.
    """
    import pandas as pd

    a = load_run(run).alignment
    g = a[(a["bucket"] == "all") & (a["proxy"] == proxy)]
    gm = mean_over_layers(add_log_enrichment(g), ["step"], ["log_enrichment"]).sort_values("step")
    return pd.DataFrame({"revision": [f"step{int(s)}" for s in gm["step"]], "step": gm["step"].astype(int),
                         "language": "en", "enrichment_gmean": np.exp(gm["log_enrichment"].to_numpy())})


# ---------------------------------------------------------------------------------- speed
#: make bench's targets for the command: its wall time over one plain forward pass of the model over
#: the same tokens, without the alignment test and with it
BENCH_TARGETS = {"ratio": 3.0, "ratio_alignment": 6.0}


def bench_measure(model: str = "smollm2-135m", n_tokens: int = 16_384, language: str = "en",
                  repeats: int = 1, out=None, alignment: bool = True, **overrides) -> dict:
    """The command's speed against one plain forward pass over the same tokens, in one process.

    Loads ``model`` once, times a plain forward pass of the whole model (its language-model
    head included, no hidden states kept) and of its blocks alone over the same rows as the
    measurement, then :func:`measure_model` into a temporary folder: without the alignment
    test and (with ``alignment``) with it (no report, no progress bars). The wall time is the
    command's whole: loading, the corpus counts, the forward pass, the readings.

    Returns
    -------
    dict
        ``tokens`` (per measurement), ``forward_s`` (the plain pass, best of ``repeats``),
        ``body_forward_s`` (the blocks alone, as the measurement runs them), ``suite_s`` and
        ``suite_alignment_s`` (the command's wall time, loading included), ``ratio`` and
        ``ratio_alignment`` (each over ``forward_s``), ``tokens_per_s`` (the command without
        the alignment test), and each run's ``seconds`` by stage.
    """
    import torch

    s = measure_settings(model, n_tokens=n_tokens, languages=[language], **overrides)
    forward, body, tokens = _plain_forward(model, s, language, repeats)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, align in (("suite", False), ("suite_alignment", True))[:2 if alignment else 1]:
            runs[label] = measure_model(model, Path(out or tmp) / label, s, alignment=align, progress=False)
    suite = runs["suite"]["seconds"]["total"]
    res = {"model": model, "tokens": tokens, "tokens_measured": runs["suite"]["n_tokens"],
           "forward_s": forward, "body_forward_s": body, "threads": torch.get_num_threads(),
           "suite_s": suite, "ratio": suite / forward, "tokens_per_s": tokens / suite,
           "seconds": {k: v["seconds"] for k, v in runs.items()},
           "peak_rss_gb": max(v["peak_rss_gb"] for v in runs.values()), "targets": BENCH_TARGETS}
    if alignment:
        res["suite_alignment_s"] = runs["suite_alignment"]["seconds"]["total"]
        res["ratio_alignment"] = res["suite_alignment_s"] / forward
        res["probe_tokens"] = runs["suite_alignment"]["settings"]["probe_tokens"]
    return res


def _plain_forward(model, s: MeasureSettings, language: str, repeats: int) -> tuple[float, float, int]:
    """The best of ``repeats`` plain forward passes over the measurement's rows: the whole model, its
    blocks alone, and the tokens read."""
    import torch

    loaded = load_model(model)
    net, tok = loaded["model"], loaded["tokenizer"]
    seq_len = min(s.seq_len, int(getattr(net.config, "max_position_embeddings", None) or s.seq_len))
    ids = pt.language_text(tok, loaded["kind"], language, s, seq_len)["input_ids"]

    def plain(f) -> float:
        best = float("inf")
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            with torch.inference_mode():
                for i in range(0, len(ids), s.batch_size):
                    x = torch.as_tensor(ids[i:i + s.batch_size])
                    f(input_ids=x, attention_mask=torch.ones_like(x))
            best = min(best, time.perf_counter() - t0)
        return best

    times = plain(net), plain(net.base_model)
    del net, loaded
    gc.collect()
    return times[0], times[1], int(ids.size)
