"""Post-hoc probe of saved checkpoints, offline, on tiny EuroBERT / GPT-NeoX / Llama mirrors."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import torch

from tanbias.errors import ParameterError
from tanbias.lab.analysis import posthoc as ph
from tanbias.lab.config import N_SPECIAL
from tanbias.lab.probe import ResidualProbe

KIND = {"eurobert": "encoder", "gpt_neox": "decoder", "llama": "decoder"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """``{arch: folder}``: one local mirror with revisions step0, step1 per architecture."""
    root = tmp_path_factory.mktemp("tiny")
    return {arch: ph.make_tiny_checkpoint(arch, root / arch) for arch in ph.TINY_ARCHS}


@pytest.mark.parametrize("arch", ph.TINY_ARCHS)
def test_probe_checkpoints_end_to_end(tiny, arch):
    tables = ph.probe_checkpoints(tiny[arch], revisions=["step0", "step1"], n_tokens=1024,
                                  progress=False)
    a = tables["alignment"]
    assert set(a["revision"]) == {"step0", "step1"} and set(a["step"]) == {0, 1}
    assert set(a["layer"]) == {0, 1, 2}                      # embedding + 2 blocks
    assert {"frozen", "refit"} <= set(a["proxy"])
    assert set(a["kind"]) == {KIND[arch]} and set(a["regime"]) == {"released"}
    assert set(a["run"]) == {str(tiny[arch])}
    assert np.isfinite(a["enrichment"]).all() and (a["enrichment"] > 0).all()
    assert a["energy_proxy"].between(0, 1).all() and a["energy_control_mean"].between(0, 1).all()
    # step 0 is the only revision in the first 30 %: its frozen proxy is its refit
    s0 = a[(a["step"] == 0) & (a["bucket"] == "all")].set_index(["layer", "proxy"])["energy_proxy"]
    assert np.allclose(s0.xs("frozen", level="proxy"), s0.xs("refit", level="proxy"))
    # the revisions differ (one SGD step apart)
    e = a[a["proxy"] == "refit"].pivot_table(index=["layer", "bucket"], columns="revision",
                                             values="energy_proxy")
    assert not np.allclose(e["step0"], e["step1"])
    r = tables["radius"]
    assert len(r) and set(r["revision"]) <= {"step0", "step1"} and (r["token_id"] >= N_SPECIAL).all()
    assert set(tables["radius_corr"]["revision"]) == {"step0", "step1"}


@pytest.mark.parametrize("arch", ph.TINY_ARCHS)
def test_residual_probe_and_capture_on_each_architecture(tiny, arch):
    model, tok, kind = ph.load_checkpoint(tiny[arch], "step1")
    assert kind == KIND[arch] and not model.training
    L, D = model.config.num_hidden_layers, model.config.hidden_size
    batches = ph.text_batches(tok, kind, n_tokens=256, seq_len=64, seed=3, batch_size=2)
    # the training-style probe: full backward of the model's own loss
    probe = ResidualProbe(model, tokens=128)
    probe.arm()
    model(input_ids=batches[0]["input_ids"], labels=batches[0]["labels"]).loss.backward()
    cap = probe.collect(batches[0])
    probe.remove()
    assert cap["acts"].shape == (L + 1, 128, D) == cap["grads"].shape
    assert all(np.abs(cap["grads"][layer]).max() > 0 for layer in range(L + 1))
    assert (cap["grad_scale"] > 0).all()
    model.zero_grad(set_to_none=True)
    # post hoc on the same batch: the same ∂L/∂h, without the parameters' gradients
    post = ph.capture_checkpoint(model, batches[:1], kind)
    assert set(post) == set(cap) and post["acts"].shape == cap["acts"].shape
    assert np.array_equal(post["token_ids"], cap["token_ids"])
    assert all(p.grad is None for p in model.parameters())
    assert all(p.requires_grad for p in model.parameters())
    for layer in range(L + 1):
        ref = cap["grads"][layer].astype(np.float64) * cap["grad_scale"][layer]
        got = post["grads"][layer].astype(np.float64) * post["grad_scale"][layer]
        assert np.allclose(got, ref, atol=2e-3 * np.abs(ref).max())
    # several batches are one loss: the capture of all of them
    full = ph.capture_checkpoint(model, batches, kind)
    assert full["acts"].shape == (L + 1, 256, D)
    assert full["grads"].dtype == np.float16 and full["input_ids"].dtype == np.int32


def test_missing_local_revision_names_the_available_ones(tiny):
    with pytest.raises(ParameterError, match=r"revision='step7'.*\['step0', 'step1'\]"):
        ph.resolve_checkpoint(tiny["llama"], "step7")
    with pytest.raises(ParameterError, match=r"revision=None.*\['step0', 'step1'\]"):
        ph.load_checkpoint(tiny["llama"])
    with pytest.raises(ParameterError, match="revision='step7'"):
        ph.probe_checkpoints(tiny["llama"], ["step0", "step7"], n_tokens=128, progress=False)
    assert ph.resolve_checkpoint(tiny["llama"], "step1") == (str(tiny["llama"] / "step1"), {})
    assert ph.local_revisions(tiny["llama"]) == ["step0", "step1"]
    with pytest.raises(ParameterError, match="model_id_or_path="):
        ph.resolve_checkpoint(tiny["llama"] / "nothing" / "here")


def test_hub_revision_is_passed_to_from_pretrained(tiny, monkeypatch):
    import transformers

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(ph, "_offline", lambda: False)
    calls = []
    local = str(tiny["gpt_neox"] / "step1")
    for cls in (transformers.AutoConfig, transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        original = cls.from_pretrained

        def fake(path, *args, _original=original, _name=cls.__name__, **kwargs):
            calls.append((_name, path, kwargs.pop("revision", "MISSING")))
            return _original(local, *args, **kwargs)       # no network: the tiny local model
        monkeypatch.setattr(cls, "from_pretrained", fake)
    model, tok, kind = ph.load_checkpoint("EleutherAI/pythia-160m", "step1000")
    assert kind == "decoder" and type(model).__name__ == "GPTNeoXForCausalLM"
    ours = [c for c in calls if c[1] == "EleutherAI/pythia-160m"]   # (transformers' own calls: local)
    assert [c[0] for c in ours] == ["AutoConfig", "AutoModelForCausalLM", "AutoTokenizer"]
    assert all(c[2] == "step1000" for c in ours)
    assert ph.resolve_checkpoint("EleutherAI/pythia-160m", "step1000") == (
        "EleutherAI/pythia-160m", {"revision": "step1000"})


def test_offline_hub_id_fails_fast_with_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(ph.CheckpointUnavailable) as info:
        ph.load_checkpoint("EleutherAI/pythia-160m", "step1000")
    assert time.perf_counter() - t0 < 10
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "'EleutherAI/pythia-160m'" in msg and "'step1000'" in msg and "network access" in msg
    assert "hf download EleutherAI/pythia-160m --revision step1000 --local-dir DIR/step1000" in msg
    assert info.value.model_id == "EleutherAI/pythia-160m" and info.value.revision == "step1000"


def test_text_batches_are_deterministic_masked_and_need_no_pad_token():
    from transformers import PreTrainedTokenizerFast

    from tanbias.lab.tokenizer import TOKENIZER_PATH

    tok = PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_PATH), bos_token="<s>", eos_token="</s>")
    assert tok.pad_token_id is None and tok.mask_token_id is None
    a = ph.text_batches(tok, "decoder", n_tokens=300, seq_len=50, seed=1, batch_size=4)
    b = ph.text_batches(tok, "decoder", n_tokens=300, seq_len=50, seed=1, batch_size=4)
    c = ph.text_batches(tok, "decoder", n_tokens=300, seq_len=50, seed=2, batch_size=4)
    assert [x["input_ids"].shape for x in a] == [(4, 50), (2, 50)]       # 300 tokens = 6 rows
    assert all(torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(a, b))
    assert not torch.equal(a[0]["input_ids"], c[0]["input_ids"])
    assert torch.equal(a[0]["labels"], a[0]["input_ids"])
    with pytest.raises(ParameterError, match="kind='encoder'"):
        ph.text_batches(tok, "encoder", n_tokens=100)
    from tanbias.lab.tokenizer import load_tokenizer

    enc = ph.text_batches(load_tokenizer(), "encoder", n_tokens=4096, seq_len=128, seed=0)
    x = torch.cat([e["input_ids"] for e in enc])
    y = torch.cat([e["labels"] for e in enc])
    scored = y != -100
    assert 0.25 < scored.float().mean() < 0.35 and (y[scored] >= N_SPECIAL).all()
    assert 0.7 < (x[scored] == 4).float().mean() < 0.9 and (x[~scored] != 4).all()
    counts = ph.text_counts(enc, 8192)
    assert counts.sum() == 4096 and counts[4] == 0           # counts of the uncorrupted text


def test_revision_steps_and_reference_models():
    assert ph._revision_steps(["step0", "step1000", "step143000"]) == [0, 1000, 143000]
    assert ph._revision_steps([None]) == [0]
    assert ph._revision_steps(["step1", "main"]) == [0, 1]
    with pytest.raises(ParameterError, match="revisions="):
        ph._revision_steps(["step1", "step01"])
    ref = ph.REFERENCE_MODELS
    assert {k: v["kind"] for k, v in ref.items()} == {
        "EuroBERT/EuroBERT-210m": "encoder", "EleutherAI/pythia-160m": "decoder",
        "HuggingFaceTB/SmolLM2-360M": "decoder"}
    pythia = ref["EleutherAI/pythia-160m"]["revisions"]
    assert pythia[0] == "step0" and pythia[-1] == "step143000" and len(pythia) == 19
    assert ref["EuroBERT/EuroBERT-210m"]["revisions"] == [None]


def test_checkpoints_command_writes_the_three_tables(tiny, tmp_path, capsys, monkeypatch):
    from tanbias.lab.__main__ import main

    out = tmp_path / "out"
    code = main(["checkpoints", str(tiny["llama"]), "--revisions", "step0", "step1",
                 "--tokens", "512", "--out", str(out), "--no-progress"])
    assert code == 0
    for name in ("alignment", "radius", "radius_corr"):
        df = pd.read_csv(out / f"{name}.csv")
        assert len(df) and set(df["revision"]) == {"step0", "step1"}
    assert "enrichment" in capsys.readouterr().out
    # errors: exit 2 with "error: ..."
    assert main(["checkpoints", str(tiny["llama"]), "--revisions", "step9", "--out", str(out)]) == 2
    assert "error: revision='step9'" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["checkpoints", "EleutherAI/pythia-160m", "--revisions", "step0", "--out", str(out)]) == 2
    assert "network access" in capsys.readouterr().err
