"""Where a saved checkpoint comes from and how it is loaded: hub ids, local folders, the zoo (ch 8, 9).

The checkpoint probe (:mod:`tanbias.lab.analysis.checkpoint_probe`) runs on *saved*
checkpoints: a Hugging Face model id at a list of revisions (the paper's
:data:`REFERENCE_MODELS`: EuroBERT-210m, Pythia-160m at its ``stepN`` revisions,
SmolLM2-360M), a local folder, or a zoo decoder (:mod:`tanbias.lab.zoo`). This
module resolves such a name to what ``from_pretrained`` reads
(:func:`resolve_checkpoint`, :func:`local_revisions`, :func:`revision_steps`)
and loads it for the probe (:func:`load_checkpoint`), with errors that say what
to do: :class:`CheckpointUnavailable` for a hub id that cannot be reached, a
:class:`~tanbias.errors.ParameterError` for a bad path, revision or kind, a
:class:`~tanbias.errors.CorruptFileError` for a folder that cannot be loaded.

Offline use: no hub access is needed for local folders. A local mirror of a hub
repository's branches is a folder with one subfolder per revision
(``DIR/step1000/config.json`` ...), made with
``hf download ID --revision REV --local-dir DIR/REV`` (the former
``huggingface-cli download``), or written from a model of one's own with
:func:`save_revision` (for instance from a lab run, to probe it after training).
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from tanbias._checks import check_choice
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import zoo
from tanbias.lab.config import KINDS

__all__ = ["REFERENCE_MODELS", "CheckpointUnavailable", "local_revisions", "check_revision", "revision_steps",
           "resolve_checkpoint", "load_checkpoint", "checkpoint_config", "save_revision"]

_PYTHIA_STEPS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 4000, 8000, 16000, 32000,
                 64000, 143000)

#: The paper's three reference checkpoints. ``revisions`` are the hub revisions
#: probed by default (``None`` is the default branch). Intermediate checkpoints of
#: EuroBERT are not assumed to be published: only the final model is probed.
#: Pythia-160m publishes 154 ``stepN`` branches; a log-spaced subset is used.
REFERENCE_MODELS: dict[str, dict] = {
    "EuroBERT/EuroBERT-210m": {
        "kind": "encoder", "revisions": [None],
        "note": "final checkpoint only: intermediate checkpoints are not assumed to be released"},
    "EleutherAI/pythia-160m": {
        "kind": "decoder", "revisions": [f"step{s}" for s in _PYTHIA_STEPS],
        "note": "log-spaced subset of the published stepN branches (step0 ... step143000)"},
    "HuggingFaceTB/SmolLM2-360M": {
        "kind": "decoder", "revisions": [None], "note": "final checkpoint"},
}

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?")
_STEP = re.compile(r"step(\d+)")


def _download_hint(model_id: str, revision: str | None, target: str = "DIR/{rev}") -> str:
    rev = revision if revision is not None else "main"
    return f"hf download {model_id} --revision {rev} --local-dir {target.format(rev=rev)}"


class CheckpointUnavailable(RuntimeError):
    """A checkpoint is neither a local folder nor reachable on the Hugging Face hub.

    Attributes
    ----------
    model_id : str
    revision : str or None
    """

    def __init__(self, model_id: str, revision: str | None, detail: str = "") -> None:
        self.model_id, self.revision = model_id, revision
        rev = revision if revision is not None else "main"
        msg = (f"checkpoint {model_id!r} at revision {revision!r} is neither a local folder nor "
               f"reachable on the Hugging Face hub. Released checkpoints need network access "
               f"{'(HF_HUB_OFFLINE is set: unset it) ' if _offline() else ''}to be downloaded once "
               f"(then they are cached), or a local mirror made with "
               f"`{_download_hint(model_id, revision)}` (formerly `huggingface-cli download`); "
               f"then pass DIR as the model and {rev!r} as the revision.")
        if detail:
            msg += f" Cause: {detail}"
        super().__init__(msg)


# ---------------------------------------------------------------------------
# locating and loading checkpoints
# ---------------------------------------------------------------------------
def _step_key(name: str) -> tuple:
    m = _STEP.fullmatch(name)
    return (0, int(m.group(1)), name) if m else (1, 0, name)


def local_revisions(path) -> list[str]:
    """Revisions of a local mirror: the subfolders of ``path`` that hold a ``config.json``.

    ``stepN`` folders come first, by step, then the others by name.

    Example
    -------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     for r in ("step10", "step2", "main"):
    ...         (Path(tmp) / r).mkdir()
    ...         _ = (Path(tmp) / r / "config.json").write_text("{}")
    ...     local_revisions(tmp)
    ['step2', 'step10', 'main']
    """
    p = Path(path)
    if not p.is_dir():
        return []
    return sorted((c.name for c in p.iterdir() if (c / "config.json").is_file()), key=_step_key)


def check_revision(revision) -> str | None:
    if revision is None:
        return None
    if not isinstance(revision, str) or not revision or revision in (".", "..") or "\\" in revision:
        raise ParameterError(f"revision={revision!r} is not allowed: valid range is None or a "
                             "branch, tag or commit name such as 'step1000'.")
    return revision


def resolve_checkpoint(model_id_or_path, revision: str | None = None) -> tuple[str, dict]:
    """Where to load a checkpoint from: a local folder, or a hub id with its revision.

    Parameters
    ----------
    model_id_or_path : str or path-like
        A local folder (a saved model, or a mirror of a hub repository's branches
        with one subfolder per revision), or a hub id such as ``"EleutherAI/pythia-160m"``.
    revision : str, optional
        For a local folder: the subfolder ``<folder>/<revision>``. For a hub id:
        the branch, tag or commit, passed on as ``from_pretrained(..., revision=revision)``.

    Returns
    -------
    (str, dict)
        The path or id for ``from_pretrained`` and its extra keyword arguments
        (``{}`` for a local folder, ``{"revision": revision}`` for a hub id).

    Raises
    ------
    ParameterError
        A local folder lacks the revision's subfolder (the message lists the
        available ones), a folder without ``config.json`` is given no revision,
        or the argument is neither an existing folder nor a valid hub id.

    Example
    -------
    >>> resolve_checkpoint("EleutherAI/pythia-160m", "step1000")
    ('EleutherAI/pythia-160m', {'revision': 'step1000'})
    """
    revision = check_revision(revision)
    text = os.fspath(model_id_or_path)
    p = Path(text).expanduser()
    if p.is_dir():
        avail = local_revisions(p)
        if revision is None:
            if not (p / "config.json").is_file():
                if avail:
                    raise ParameterError(
                        f"revision=None is not allowed for {str(p)!r}: valid range is the revisions "
                        f"available as subfolders {avail}. Pass one of them (the folder itself has "
                        "no config.json).")
                raise ParameterError(
                    f"model_id_or_path={text!r} is not allowed: valid range is a folder holding "
                    "config.json (save_pretrained) or revision subfolders that do. Save a model "
                    "there first.")
            return str(p), {}
        sub = p / revision
        if not (sub / "config.json").is_file():
            raise ParameterError(
                f"revision={revision!r} is out of range for {str(p)!r}: valid range is the revisions "
                f"available as subfolders {avail}. Mirror it with "
                f"`{_download_hint('ID', revision, str(p / revision))}`.")
        return str(sub), {}
    if p.exists() or not _HUB_ID.fullmatch(text):
        raise ParameterError(
            f"model_id_or_path={text!r} is not allowed: valid range is an existing local folder or "
            "a hub id such as 'EleutherAI/pythia-160m'. Check the path.")
    return text, {"revision": revision}


def _offline() -> bool:
    truthy = {"1", "ON", "YES", "TRUE"}
    if any(os.environ.get(v, "").upper() in truthy for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants
        return bool(constants.HF_HUB_OFFLINE)
    except Exception:
        return False


def _kind_from_config(config) -> str | None:
    for arch in getattr(config, "architectures", None) or ():
        if arch.endswith("ForMaskedLM"):
            return "encoder"
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return "decoder"
    return None


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _network_errors() -> tuple:
    errs: list = [OSError, ConnectionError, TimeoutError]
    try:
        from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
        errs += [HfHubHTTPError, OfflineModeIsEnabled]
    except ImportError:
        pass
    try:
        import httpx
        errs.append(httpx.HTTPError)
    except ImportError:
        pass
    return tuple(errs)


def _damaged_file_errors() -> tuple:
    """What reading a damaged weight file raises: safetensors' own error, a broken pickle or
    zip archive (``.bin``), an archive that ends too soon."""
    import pickle

    errs: list = [pickle.UnpicklingError, EOFError]
    try:
        from safetensors import SafetensorError
        errs.append(SafetensorError)
    except ImportError:
        pass
    return tuple(errs)


def load_checkpoint(model_id_or_path, revision: str | None = None, kind: str | None = None,
                    progress: bool = False, headless: bool = False):
    """Load a checkpoint and its tokenizer for the probe (float32, eval mode).

    Parameters
    ----------
    model_id_or_path : str or path-like
        See :func:`resolve_checkpoint`; or the name of a zoo decoder
        (:data:`tanbias.lab.zoo.ZOO`), loaded with :func:`tanbias.lab.zoo.load_zoo`.
    revision : str, optional
        ``None`` (or ``"main"``) for a zoo model: it has only its final checkpoint.
    kind : {"encoder", "decoder"}, optional
        Default: from the config's architecture (``*ForMaskedLM`` is an encoder,
        ``*ForCausalLM`` a decoder).
    progress : bool
        Show transformers' download and loading bars.
    headless : bool
        Accept a checkpoint whose architecture names no language-model head (a sentence
        encoder saved as ``BertModel``): it loads as its base model (``AutoModel``), of the
        ``kind`` given. Without it such a checkpoint needs ``kind`` and gets a head.

    Returns
    -------
    (model, tokenizer, kind)
        ``AutoModelForMaskedLM`` or ``AutoModelForCausalLM`` in eval mode (no
        dropout; gradients still flow), or (``headless``) ``AutoModel``; ``AutoTokenizer``.

    Raises
    ------
    CheckpointUnavailable
        A hub id that is not in the local cache and cannot be downloaded
        (offline: ``HF_HUB_OFFLINE=1`` is honoured and fails at once).
    ParameterError
        A bad path or revision (:func:`resolve_checkpoint`), a hub repository or
        revision that does not exist, or a ``kind`` that contradicts the
        architecture (or cannot be inferred).
    CorruptFileError
        A local folder whose files cannot be loaded (a truncated or damaged weight
        file), or a zoo model's weight file that is truncated or fails its sha256.
    tanbias.lab.zoo.ZooUnavailable
        A zoo model whose package is not installed (names the install command).
    """
    import torch
    import transformers

    if kind is not None:
        check_choice("kind", kind, KINDS)
    if isinstance(model_id_or_path, str) and model_id_or_path in zoo.ZOO:
        return _load_zoo_checkpoint(model_id_or_path, revision, kind, progress)
    path, kwargs = resolve_checkpoint(model_id_or_path, revision)
    hub = "revision" in kwargs
    if hub and _offline():
        kwargs["local_files_only"] = True
    name = os.fspath(model_id_or_path)
    try:
        with zoo.transformers_bars(progress):
            config = transformers.AutoConfig.from_pretrained(path, **kwargs)
            inferred = _kind_from_config(config)
            if kind is None and inferred is None:
                raise ParameterError(
                    f"kind=None is not allowed for {name!r}: valid range is {{'encoder', 'decoder'}}; the "
                    f"architecture {getattr(config, 'architectures', None)} names neither a masked nor a "
                    "causal LM. Pass kind explicitly.")
            if kind is not None and inferred is not None and kind != inferred:
                raise ParameterError(
                    f"kind={kind!r} is out of range for {name!r} ({config.architectures[0]}): valid range "
                    f"is {{{inferred!r}}}. Omit kind to infer it.")
            kind = kind or inferred
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kwargs)
            except (OSError, ValueError, TypeError) as exc:
                if hub and isinstance(exc, _network_errors()):
                    raise
                raise ParameterError(
                    f"model_id_or_path={name!r} is not allowed: valid range is a checkpoint saved with its "
                    f"tokenizer; transformers cannot load one from {path!r} ({str(exc).splitlines()[0][:200]}). "
                    "Save the model's own tokenizer beside it (tokenizer.save_pretrained(folder)).") from None
            if headless and inferred is None:
                cls = transformers.AutoModel
            else:
                cls = (transformers.AutoModelForMaskedLM if kind == "encoder"
                       else transformers.AutoModelForCausalLM)
            model = cls.from_pretrained(path, config=config, dtype=torch.float32, **kwargs)
    except ParameterError:
        raise
    except _damaged_file_errors() as exc:
        if hub:
            raise
        raise CorruptFileError(path, "save the checkpoint again (save_pretrained), or download it again",
                               f"holds a weight file that cannot be read: {str(exc).splitlines()[0][:300]}") from None
    except _network_errors() as exc:
        raise _load_error(exc, name, path, revision, hub) from None
    model.eval()
    return model, tokenizer, kind


def _load_error(exc: BaseException, name: str, path: str, revision, hub: bool) -> Exception:
    """What a failed load of a checkpoint means, as the error to raise."""
    causes = {type(e).__name__ for e in _chain(exc)}
    if not hub:
        return CorruptFileError(path, _download_hint("ID", revision, path), f"cannot load the checkpoint: {exc}")
    if "RevisionNotFoundError" in causes:
        return ParameterError(f"revision={revision!r} is out of range for {name!r}: valid range is "
                              "the repository's branches, tags and commits (see its "
                              "'Files and versions' page).")
    if causes & {"RepositoryNotFoundError", "GatedRepoError"}:
        return ParameterError(f"model_id_or_path={name!r} is not allowed: valid range is an existing "
                              "local folder or an accessible hub repository. Check the id.")
    return CheckpointUnavailable(name, revision, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def checkpoint_config(model_id_or_path, revision: str | None = None) -> dict:
    """The ``config.json`` of a checkpoint, read before anything else of it (a dict).

    Its ``model_type`` and ``architectures`` say what the checkpoint is before its weights
    are loaded. A local folder's file is read as JSON; a hub id's is downloaded (or read from
    the cache) alone.

    Raises
    ------
    ParameterError, CheckpointUnavailable
        As :func:`load_checkpoint`.
    CorruptFileError
        A local ``config.json`` that is not JSON.

    Example
    -------
    >>> import json, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "config.json").write_text(json.dumps({"model_type": "llama"}))
    ...     checkpoint_config(tmp)["model_type"]
    'llama'
    """
    import json

    path, kwargs = resolve_checkpoint(model_id_or_path, revision)
    name = os.fspath(model_id_or_path)
    if "revision" not in kwargs:
        f = Path(path) / "config.json"
        try:
            config = json.loads(f.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptFileError(f, "save the checkpoint again (save_pretrained)", f"is not valid JSON ({exc})") \
                from None
    else:
        try:
            from huggingface_hub import hf_hub_download

            f = hf_hub_download(path, "config.json", revision=revision, local_files_only=_offline())
            config = json.loads(Path(f).read_text(encoding="utf-8"))
        except _network_errors() as exc:
            raise _load_error(exc, name, path, revision, True) from None
    if not isinstance(config, dict):
        raise CorruptFileError(Path(path) / "config.json", "save the checkpoint again (save_pretrained)",
                               "is not a JSON object")
    return config


def _load_zoo_checkpoint(name: str, revision, kind, progress: bool):
    """A zoo decoder for the probe: checked before anything is loaded, then ``load_zoo``."""
    entry = zoo.ZOO[name]
    probeable = [n for n, m in zoo.ZOO.items() if m.lm_head]
    if not entry.lm_head:
        raise ParameterError(
            f"model_id_or_path={name!r} is not allowed: valid range is a model with a language-model "
            f"head, among the zoo {probeable}. {name} ({entry.upstream}) is a contrastively "
            "fine-tuned sentence encoder shipped without its MLM head: there is no language-model "
            "loss whose gradient the probe could capture.")
    if check_revision(revision) not in (None, "main"):
        raise ParameterError(f"revision={revision!r} is out of range for the zoo model {name!r}: "
                             "valid range is None (the zoo ships the final checkpoint only).")
    if kind is not None and kind != entry.kind:
        raise ParameterError(f"kind={kind!r} is out of range for the zoo model {name!r} "
                             f"({entry.arch}): valid range is {{{entry.kind!r}}}. Omit kind.")
    model, tokenizer = zoo.load_zoo(name, progress=progress)
    return model, tokenizer, entry.kind


def revision_steps(revisions: Sequence) -> list[int]:
    """The step of each revision: ``N`` of ``stepN`` names (all distinct), else its index in the list.

    >>> revision_steps(["step0", "step1000"]), revision_steps([None, "main"])
    ([0, 1000], [0, 1])
    """
    matches = [_STEP.fullmatch(r) if isinstance(r, str) else None for r in revisions]
    if all(matches):
        steps = [int(m.group(1)) for m in matches]
        if len(set(steps)) < len(steps):
            raise ParameterError(f"revisions={list(revisions)!r} is not allowed: valid range is "
                                 "distinct training steps. Remove the duplicates.")
        return steps
    return list(range(len(revisions)))


def save_revision(model, tokenizer, root, revision: str) -> Path:
    """Save ``model`` and ``tokenizer`` as the revision ``revision`` of a local mirror ``root``.

    Writes ``root/<revision>/`` with ``save_pretrained`` (``config.json``, weights,
    tokenizer files): the layout :func:`resolve_checkpoint` reads, so the checkpoint
    probe runs on the model offline (``probe_checkpoints(root, [revision, ...])``).
    Revisions named ``stepN`` are ordered by their step.

    Returns
    -------
    pathlib.Path
        The revision's folder.

    Raises
    ------
    ParameterError
        A revision that is not a plain folder name.
    """
    revision = check_revision(revision)
    if revision is None or "/" in revision:
        raise ParameterError(f"revision={revision!r} is not allowed: valid range is a folder name such as "
                             "'step1000'.")
    d = Path(root) / revision
    d.mkdir(parents=True, exist_ok=True)
    with zoo.transformers_bars(False):
        model.save_pretrained(d)
        tokenizer.save_pretrained(d)
    return d
