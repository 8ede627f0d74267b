"""The probe: its schedule, and that it reads the training step's own ∂L/∂h. (What the lab makes of its
captures: test_analysis_tables.py.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tanbias.lab.models import loss_and_correct, make_model
from tanbias.lab.probe import ResidualProbe, probe_steps


def test_probe_steps_are_log_spaced_with_step_zero_and_last():
    s = probe_steps(160, 14)
    assert s[0] == 0 and s[-1] == 159 and s == sorted(set(s))
    gaps = np.diff(s)
    assert gaps[-1] > 5 * gaps[0]              # denser early than late
    assert probe_steps(2, 5) == [0, 1]


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_captured_gradients_are_dL_dh_of_the_training_backward(kind):
    torch.manual_seed(0)
    model = make_model(kind, "smoke", vocab_size=64)
    ids = torch.randint(5, 64, (2, 16))
    labels = ids.clone()
    if kind == "encoder":
        labels[:, ::3] = -100
    batch = {"input_ids": ids, "labels": labels}
    probe = ResidualProbe(model, tokens=32)
    probe.arm()
    loss_sum, n, _ = loss_and_correct(model, batch)
    (loss_sum / n).backward()
    cap = probe.collect(batch)
    probe.remove()
    # independent reference: autograd.grad w.r.t. the hidden states of a second forward
    model.zero_grad()
    hs = []
    hooks = [m.register_forward_hook(lambda mod, i, o: hs.append(o))
             for m in [model.model.embed_tokens, *model.model.layers]]
    loss_sum, n, _ = loss_and_correct(model, batch)
    grads = torch.autograd.grad(loss_sum / n, hs)
    for h in hooks:
        h.remove()
    assert cap["acts"].shape == (3, 32, 32) and cap["grads"].dtype == np.float16
    for layer, g in enumerate(grads):
        ref = g.reshape(-1, g.shape[-1]).numpy()
        got = cap["grads"][layer].astype(np.float64) * cap["grad_scale"][layer]
        assert np.allclose(got, ref, atol=2e-3 * np.abs(ref).max())
        assert np.allclose(cap["acts"][layer], hs[layer].detach().reshape(-1, 32).numpy(), atol=2e-2)


def test_probe_does_not_change_the_training_step():
    def one_step(with_probe):
        model = make_model("decoder", "smoke", vocab_size=64, seed=3)
        ids = torch.randint(5, 64, (2, 16), generator=torch.Generator().manual_seed(1))
        batch = {"input_ids": ids, "labels": ids.clone()}
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        probe = ResidualProbe(model, 32)
        if with_probe:
            probe.arm()
        loss_sum, n, _ = loss_and_correct(model, batch)
        (loss_sum / n).backward()
        if with_probe:
            probe.collect(batch)
        opt.step()
        return torch.cat([p.detach().ravel() for p in model.parameters()])
    assert torch.equal(one_step(True), one_step(False))


def test_capture_writer_writes_what_a_synchronous_save_writes(tmp_path):
    """The background writer stores exactly the synchronous pack + save, and ``wait``
    reports a failed write (here: the folder is a file) instead of losing it."""
    from tanbias.lab import runs
    from tanbias.lab.probe import CaptureWriter, load_capture, pack_capture

    g = torch.Generator().manual_seed(0)
    acts = [torch.randn(16, 8, generator=g) for _ in range(3)]
    grads = [1e-6 * torch.randn(16, 8, generator=g) for _ in range(3)]
    ids, orig = torch.arange(16), torch.arange(16) + 1
    runs.atomic_save_npz(tmp_path / "sync.npz", **pack_capture(acts, grads, ids, orig))
    with CaptureWriter() as w:
        for i in range(3):                                   # several in flight, in order
            w.submit(tmp_path / f"bg{i}.npz", acts, grads, ids, orig)
    want = load_capture(tmp_path / "sync.npz", "x")
    for i in range(3):
        got = load_capture(tmp_path / f"bg{i}.npz", "x")
        assert set(got) == set(want)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
    (tmp_path / "a-file").write_text("")
    w = CaptureWriter()
    w.submit(tmp_path / "a-file" / "step_000001.npz", acts, grads, ids, orig)
    with pytest.raises(OSError):
        w.wait()
    w.close()                                                # nothing pending: no error twice
