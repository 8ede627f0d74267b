"""Tiny local checkpoints for the tests: a mirror ``path/<revision>/`` of a random tiny model.

The families of the paper's reference checkpoints (EuroBERT, GPT-NeoX for
Pythia, Llama for SmolLM2) at toy size, written with
:func:`tanbias.lab.checkpoints.save_revision`, so that the checkpoint probe, the
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

#: Architectures of the ``tiny`` fixture: the families of the reference models.
TINY_ARCHS = ("eurobert", "gpt_neox", "llama")
#: Every architecture :func:`tiny_model` builds: the families above and the others the
#: measurement command supports (``tanbias.lab.loading.ARCHITECTURES``, by model type).
ALL_ARCHS = ("llama", "mistral", "qwen2", "qwen3", "gemma3_text", "gemma2", "phi3", "olmo2", "gpt2", "gpt_neox",
             "opt", "falcon", "bert", "roberta", "xlm-roberta", "distilbert", "electra", "eurobert", "modernbert")
#: The encoders among them (masked LMs: their head is the masked-LM head).
ENCODERS = ("bert", "roberta", "xlm-roberta", "distilbert", "electra", "eurobert", "modernbert")


def tiny_model(arch: str, vocab_size: int, seed: int, head: bool = True):
    """A tiny random ``transformers`` model of ``arch`` (a model type of :data:`ALL_ARCHS`):
    hidden 32, 2 layers, 2 heads, MLP 64, 256 positions (300 where positions are offset),
    the lab tokenizer's special ids; its causal or masked LM, or (``head=False``) its base model."""
    import torch
    import transformers as T

    V = int(vocab_size)
    ids = dict(pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID)
    common = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=256, initializer_range=0.02,
                  tie_word_embeddings=False, **ids)
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    gqa = dict(common, num_key_value_heads=2, head_dim=16)
    builders = {
        "llama": (T.LlamaConfig, dict(gqa, hidden_act="silu", rope_parameters=rope), T.LlamaForCausalLM),
        "mistral": (T.MistralConfig, gqa, T.MistralForCausalLM),
        "qwen2": (T.Qwen2Config, gqa, T.Qwen2ForCausalLM),
        "qwen3": (T.Qwen3Config, gqa, T.Qwen3ForCausalLM),
        "gemma3_text": (T.Gemma3TextConfig, dict(gqa, sliding_window=64), T.Gemma3ForCausalLM),
        "gemma2": (T.Gemma2Config, dict(gqa, sliding_window=64), T.Gemma2ForCausalLM),
        "phi3": (T.Phi3Config, gqa, T.Phi3ForCausalLM),
        "olmo2": (T.Olmo2Config, gqa, T.Olmo2ForCausalLM),
        # Pythia's rotary_pct = 0.25: a rotary dimension of 4 of the 16 per head
        "gpt_neox": (T.GPTNeoXConfig, dict(common, hidden_act="gelu", use_parallel_residual=True,
                                           rope_parameters={**rope, "partial_rotary_factor": 0.25}),
                     T.GPTNeoXForCausalLM),
        "gpt2": (T.GPT2Config, dict(vocab_size=V, n_embd=32, n_layer=2, n_head=2, n_inner=64, n_positions=256,
                                    bos_token_id=BOS_ID, eos_token_id=EOS_ID), T.GPT2LMHeadModel),
        "opt": (T.OPTConfig, dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  ffn_dim=64, max_position_embeddings=256, word_embed_proj_dim=32, **ids),
                T.OPTForCausalLM),
        "falcon": (T.FalconConfig, dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                        max_position_embeddings=256, bos_token_id=BOS_ID, eos_token_id=EOS_ID),
                   T.FalconForCausalLM),
        "bert": (T.BertConfig, common, T.BertForMaskedLM),
        "roberta": (T.RobertaConfig, dict(common, max_position_embeddings=300), T.RobertaForMaskedLM),
        "xlm-roberta": (T.XLMRobertaConfig, dict(common, max_position_embeddings=300), T.XLMRobertaForMaskedLM),
        "electra": (T.ElectraConfig, dict(common, embedding_size=32), T.ElectraForMaskedLM),
        "distilbert": (T.DistilBertConfig, dict(vocab_size=V, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                                max_position_embeddings=256, pad_token_id=PAD_ID),
                       T.DistilBertForMaskedLM),
        "eurobert": (T.EuroBertConfig, dict(gqa, hidden_act="silu", rope_parameters=rope, mask_token_id=MASK_ID),
                     T.EuroBertForMaskedLM),
        "modernbert": (T.ModernBertConfig, dict(common, cls_token_id=BOS_ID, sep_token_id=EOS_ID,
                                                global_attn_every_n_layers=1, local_attention=64),
                       T.ModernBertForMaskedLM),
    }
    check_choice("arch", arch, tuple(builders))
    config_cls, kwargs, cls = builders[arch]
    config = config_cls(**kwargs)
    torch.manual_seed(int(seed))
    return cls(config) if head else T.AutoModel.from_config(config)


def make_tiny_checkpoint(arch: str, path, revisions: Sequence[str] = ("step0", "step1"),
                         seed: int = 0, head: bool = True) -> Path:
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
    arch : str
        One of :data:`ALL_ARCHS` (the reference families are :data:`TINY_ARCHS`).
    path : path-like
        Folder to write (created; existing revision folders are overwritten).
    revisions : sequence of str
        Names of the revision subfolders, in training order.
    seed : int
    head : bool
        The language model (True) or its base model alone (one revision only: there is no
        loss to take a step on).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import torch

    from tanbias.lab.tokenizer import load_tokenizer

    check_choice("arch", arch, ALL_ARCHS)
    seed = check_int("seed", seed, lo=0)
    revisions = [revisions] if isinstance(revisions, str) else list(revisions)
    if not revisions or any(check_revision(r) is None for r in revisions) \
            or len(set(revisions)) < len(revisions):
        raise ParameterError(f"revisions={revisions!r} is not allowed: valid range is one or more "
                             "distinct folder names such as ('step0', 'step1').")
    tok = load_tokenizer()
    model = tiny_model(arch, len(tok), seed, head=head)
    kind = "encoder" if arch in ENCODERS else "decoder"
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
