"""Tiny local checkpoints for the tests: a mirror ``path/<revision>/`` of a random tiny model.

The families of the paper's reference checkpoints (EuroBERT, GPT-NeoX for
Pythia, Llama for SmolLM2) at toy size, written with
:func:`tanbias.lab.checkpoints.save_revision`, so that the post-hoc probe, the
loaders and their errors are tested offline on real ``transformers`` models.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tanbias._checks import check_choice, check_int
from tanbias.errors import ParameterError
from tanbias.lab.checkpoints import check_revision, save_revision
from tanbias.lab.config import BOS_ID, EOS_ID, MASK_ID, PAD_ID
from tanbias.lab.data import heldout_batches

#: Architectures of :func:`make_tiny_checkpoint`: the families of the reference models.
TINY_ARCHS = ("eurobert", "gpt_neox", "llama")


def tiny_model(arch: str, vocab_size: int, seed: int):
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
    if not revisions or any(check_revision(r) is None for r in revisions) \
            or len(set(revisions)) < len(revisions):
        raise ParameterError(f"revisions={revisions!r} is not allowed: valid range is one or more "
                             "distinct folder names such as ('step0', 'step1').")
    tok = load_tokenizer()
    model = tiny_model(arch, len(tok), seed)
    kind = "encoder" if arch == "eurobert" else "decoder"
    root = Path(path)
    batch = None
    for i, rev in enumerate(revisions):
        if i > 0:
            if batch is None:
                batch = heldout_batches(tok, kind, n_tokens=256, seq_len=64, seed=seed + 1)[0]
            model.train(False)
            out = model(input_ids=batch["input_ids"], labels=batch["labels"])
            model.zero_grad(set_to_none=True)
            out.loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-1.0)
            model.zero_grad(set_to_none=True)
        save_revision(model, tok, root, rev)
    return root
