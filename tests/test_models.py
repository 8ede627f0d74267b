"""The lab's models (tanbias.lab.models): matched EuroBERT and Llama, the scored loss, devices, precision."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tanbias.errors import CorruptFileError, ParameterError
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


# ----------------------------------------------------------------------------- the unigram head
@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_the_unigram_head_starts_at_the_smoothed_unigram_of_its_own_targets(kind):
    import numpy as np
    import torch

    from tanbias.lab.config import RunConfig
    from tanbias.lab.data import batch_targets
    from tanbias.lab.models import log_unigram
    from tanbias.lab.train import setup_training

    cfg = RunConfig(name=f"uni-{kind}", kind=kind, size="smoke", steps=6, output_bias="unigram")
    stream, model, _, _ = setup_training(cfg)
    counts = stream.target_counts(cfg.steps)
    it = stream.training()
    batches = [next(it) for _ in range(cfg.steps)]
    assert counts.sum() == sum(len(batch_targets(kind, b)) for b in batches)
    smoothed = (counts + 1) / (counts + 1).sum()
    soft = torch.softmax(model.lm_head.bias.detach().double(), 0).numpy()
    assert np.allclose(soft, smoothed, rtol=1e-5, atol=0)
    # the model's mean log-probability per type sits within its logit spread of the log-unigram:
    # log softmax(b + z) - log softmax(b) = z - (lse(b + z) - lse(b)) is at most 2 max|z| in size
    with torch.no_grad():
        h = model.model(input_ids=batches[0]["input_ids"]).last_hidden_state
        z = h.reshape(-1, model.config.hidden_size) @ model.lm_head.weight.T
        logp = torch.log_softmax(z + model.lm_head.bias, -1).double().mean(0).numpy()
    spread = 2 * float(z.abs().max())
    assert np.abs(logp - log_unigram(counts)).max() <= spread + 1e-6
    assert spread < 0.5 * np.ptp(log_unigram(counts))          # so that a missing bias would fail it


def test_the_unigram_head_draws_every_weight_as_the_standard_head_does():
    import torch

    from tanbias.lab.models import make_model

    a = make_model("decoder", "smoke", vocab_size=100, seed=3)
    b = make_model("decoder", "smoke", vocab_size=100, seed=3, output_bias=torch.linspace(-5, 0, 100))
    sa, sb = a.state_dict(), b.state_dict()
    assert set(sb) - set(sa) == {"lm_head.bias"}
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    with pytest.raises(Exception, match="output_bias has shape"):
        make_model("decoder", "smoke", vocab_size=100, output_bias=[0.0] * 7)
    with pytest.raises(Exception, match="tie_embeddings"):
        make_model("decoder", "smoke", vocab_size=100, tie_embeddings=True, output_bias=[0.0] * 100)


def test_log_unigram_refuses_counts_that_are_not_counts():
    from tanbias.errors import ParameterError
    from tanbias.lab.models import log_unigram

    for bad in ([1.0], [1.0, -2.0], [[1.0, 2.0]], [1.0, float("nan")]):
        with pytest.raises(ParameterError, match="counts"):
            log_unigram(bad)


# ----------------------------------------------------------------------------- the attention option
def test_a_causal_encoder_reads_only_the_past_and_keeps_the_same_weights():
    from tanbias.lab.models import make_model

    native = make_model("encoder", "smoke", vocab_size=100, seed=3).eval()
    causal = make_model("encoder", "smoke", vocab_size=100, seed=3, attention="causal").eval()
    assert causal.tanbias_attention == "causal" and native.tanbias_attention == "native"
    for (n, a), (_, b) in zip(native.state_dict().items(), causal.state_dict().items()):
        assert torch.equal(a, b), n                              # nothing drawn: the same seed's weights
    x = torch.randint(5, 100, (2, 12), generator=torch.Generator().manual_seed(0))
    y = x.clone()
    y[:, 8:] = (y[:, 8:] + 7) % 95 + 5                           # change only the last positions
    with torch.no_grad():
        hc, hc2 = causal.model(input_ids=x).last_hidden_state, causal.model(input_ids=y).last_hidden_state
        hn, hn2 = native.model(input_ids=x).last_hidden_state, native.model(input_ids=y).last_hidden_state
    assert torch.allclose(hc[:, :8], hc2[:, :8], atol=1e-6)      # the causal encoder's past ignores them
    assert not torch.allclose(hn[:, :8], hn2[:, :8], atol=1e-4)  # the bidirectional one does not
    with pytest.raises(ParameterError, match="attention"):
        make_model("decoder", "smoke", vocab_size=100, attention="causal")


def test_model_from_config_builds_what_the_config_says():
    from tanbias.lab.config import RunConfig
    from tanbias.lab.data import Stream
    from tanbias.lab.models import model_from_config

    cfg = RunConfig.from_dict({"name": "x", "kind": "encoder", "size": "smoke", "steps": 4, "languages": ["pt"],
                               "attention": "causal", "output_bias": "unigram"})
    stream = Stream.from_config(cfg)
    m = model_from_config(cfg, stream)
    assert m.tanbias_attention == "causal" and m.lm_head.bias is not None
    counts = stream.target_counts(cfg.steps)
    assert float(m.lm_head.bias.detach()[counts.argmax()]) == pytest.approx(float(np.log((counts.max() + 1)
                                                                                          / (counts + 1).sum())), rel=1e-5)
    loaded = model_from_config(cfg, n_inputs=stream.n_inputs)   # a checkpoint's shape: the bias a placeholder
    assert loaded.tanbias_attention == "causal" and float(loaded.lm_head.bias.detach().abs().sum()) == 0.0
