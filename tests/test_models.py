"""The lab's models (tanbias.lab.models): matched EuroBERT and Llama, the scored loss, devices, precision."""
from __future__ import annotations

import math

import pytest

from tanbias.errors import CorruptFileError
from tanbias.lab.corpus import mixture


# --------------------------------------------------------------------------- models
def test_models_build_at_smoke_size_and_backprop(corpus, tokenizer):
    import torch
    from tanbias.lab.data import lm_batches
    from tanbias.lab.models import make_model

    small = {lang: docs[:200] for lang, docs in corpus.items()}
    enc = make_model("encoder", "smoke", vocab_size=len(tokenizer), seed=0)
    dec = make_model("decoder", "smoke", vocab_size=len(tokenizer), seed=0)
    assert type(enc).__name__ == "EuroBertForMaskedLM"
    assert type(dec).__name__ == "LlamaForCausalLM"
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "vocab_size", "tie_word_embeddings"):
        assert getattr(enc.config, key) == getattr(dec.config, key), key
    pe, pd = dict(enc.named_parameters()), dict(dec.named_parameters())
    assert {k: v.shape for k, v in pe.items()} == {k: v.shape for k, v in pd.items()}
    for kind, model in (("encoder", enc), ("decoder", dec)):
        batch = next(lm_batches(kind, mixture(small, seed=0), tokenizer, batch_size=4, seq_len=32))
        if kind == "encoder":
            assert (batch["labels"] != -100).any() and (batch["input_ids"] == 4).any()
        out = model(**batch)
        assert torch.isfinite(out.loss)
        assert 0.5 * math.log(len(tokenizer)) < out.loss.item() < 2 * math.log(len(tokenizer))
        out.loss.backward()
        grads = [p.grad for p in model.parameters()]
        assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_encoder_is_bidirectional_decoder_is_causal():
    import torch
    from tanbias.lab.models import make_model

    x = torch.randint(5, 100, (1, 12), generator=torch.Generator().manual_seed(0))
    y = x.clone()
    y[0, -1] = 5 if x[0, -1] != 5 else 6
    for kind, changes in (("encoder", True), ("decoder", False)):
        m = make_model(kind, "smoke", vocab_size=100).eval()
        with torch.no_grad():
            delta = (m(input_ids=x).logits[0, 0] - m(input_ids=y).logits[0, 0]).abs().max().item()
        assert (delta > 1e-6) == changes, kind


def test_unigram_baseline_closed_form():
    from tanbias.lab.data import token_counts
    from tanbias.lab.models import unigram_baseline

    counts = token_counts([[5, 5, 5, 6]], vocab_size=7)
    res = unigram_baseline(counts, [5, 6], alpha=1e-12)
    assert res["loss"] == pytest.approx(-(math.log(0.75) + math.log(0.25)) / 2, rel=1e-9)
    assert res["accuracy"] == 0.5


def test_load_trained_refuses_an_unfinished_checkpoint(smoke_sweep):
    from tanbias.lab.models import load_trained

    model, tok, cfg = load_trained(smoke_sweep / "decoder-natural-s0")
    assert not model.training and cfg.name == "decoder-natural-s0"
    with pytest.raises(CorruptFileError, match="checkpoint is at step 6"):
        load_trained(smoke_sweep / "decoder-natural-s0", step=3)
