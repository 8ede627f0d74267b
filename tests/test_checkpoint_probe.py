"""Post-hoc probe of saved checkpoints, offline, on tiny EuroBERT / GPT-NeoX / Llama mirrors."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from tanbias.lab.analysis import checkpoint_probe as ph
from tanbias.lab.checkpoints import load_checkpoint
from tanbias.lab.data import heldout_batches
from tanbias.lab.config import N_SPECIAL
from tanbias.lab.probe import ResidualProbe
from tiny_checkpoints import TINY_ARCHS

KIND = {"eurobert": "encoder", "gpt_neox": "decoder", "llama": "decoder"}


@pytest.mark.parametrize("arch", TINY_ARCHS)
@pytest.mark.slow
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


@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_residual_probe_and_capture_on_each_architecture(tiny, arch):
    model, tok, kind = load_checkpoint(tiny[arch], "step1")
    assert kind == KIND[arch] and not model.training
    L, D = model.config.num_hidden_layers, model.config.hidden_size
    batches = heldout_batches(tok, kind, n_tokens=256, seq_len=64, seed=3, batch_size=2)
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
    # activations only (the text a proxy is fitted on): the same activations, no gradient
    acts = ph.capture_checkpoint(model, batches, kind, gradients=False)
    assert np.array_equal(acts["acts"], full["acts"]) and np.array_equal(acts["act_scale"], full["act_scale"])
    assert not acts["grads"].any() and np.array_equal(acts["token_ids"], full["token_ids"])
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.slow
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
