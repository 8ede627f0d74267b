"""The gradient surgery of chapter 12 (tanbias.lab.surgery): the operator on known matrices, the
arms on one real step of a smoke model, and a killed run that resumes with the surgery's state."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from tanbias.errors import ParameterError
from tanbias.lab.config import RunConfig, SurgerySettings
from tanbias.lab.surgery import (READERS, Surgery, random_basis, removed_share, scale_in_subspace,
                                 share_in_subspace, top_basis)


def _orthonormal(D, r, seed=0):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((D, r)))
    return torch.from_numpy(q).float()


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_the_component_in_P_is_scaled_by_alpha_and_the_complement_is_untouched(alpha):
    D, r = 12, 3
    U = _orthonormal(D, r)
    P = U @ U.T
    dW = torch.randn(7, D, generator=torch.Generator().manual_seed(1))
    new = scale_in_subspace(dW, U, alpha)
    torch.testing.assert_close(new @ P, alpha * (dW @ P), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(new @ (torch.eye(D) - P), dW @ (torch.eye(D) - P), atol=1e-5, rtol=1e-5)
    # the energy removed is the one removed_share states
    e = removed_share(dW, U, alpha)
    assert float(new.pow(2).sum()) == pytest.approx((1 - e) * float(dW.pow(2).sum()), rel=1e-5)


def test_the_operator_on_a_hand_made_update():
    # rows of dW along e1 and e2; P = span(e1): alpha = 0 keeps only the e2 part
    dW = torch.tensor([[3.0, 4.0, 0.0]])
    U = torch.tensor([[1.0], [0.0], [0.0]])
    assert scale_in_subspace(dW, U, 0.0).tolist() == [[0.0, 4.0, 0.0]]
    assert share_in_subspace(dW, U) == pytest.approx(9 / 25)
    assert removed_share(dW, U, 0.5) == pytest.approx(0.75 * 9 / 25)


def test_bases_are_orthonormal_seeded_and_the_top_one_finds_a_planted_subspace():
    B = random_basis(16, 4, (0, 5, 2))
    torch.testing.assert_close(B.T @ B, torch.eye(4), atol=1e-5, rtol=0)
    assert torch.equal(B, random_basis(16, 4, (0, 5, 2)))
    assert not torch.equal(B, random_basis(16, 4, (0, 6, 2)))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 16)) * 0.1
    X[:, :2] += rng.standard_normal((2000, 2)) * 3.0
    U = top_basis(torch.from_numpy(np.cov(X, rowvar=False)), 2)
    assert float(U[:2].pow(2).sum()) == pytest.approx(2.0, abs=1e-2)


def test_bad_settings_name_the_field_and_the_range():
    with pytest.raises(ParameterError, match=r"surgery\.alpha=2 .*\[0, 1\]"):
        SurgerySettings(alpha=2)
    with pytest.raises(ParameterError, match=r"surgery\.arm"):
        SurgerySettings(arm="tangent")
    with pytest.raises(ParameterError, match=r"surgery\.rank=17 .*hidden_size=32"):
        RunConfig.from_dict({"name": "x", "size": "smoke", "surgery": {"rank": 17}})
    with pytest.raises(ParameterError, match=r"surgery\.alhpa"):
        RunConfig.from_dict({"name": "x", "size": "smoke", "surgery": {"alhpa": 0}})
    with pytest.raises(ParameterError, match="U.shape"):
        scale_in_subspace(torch.ones(2, 3), torch.ones(4, 1), 0.0)


def _one_step(kind, surgery: SurgerySettings | None, steps=10):
    """One real training step of a smoke model from a fixed state; the weights before and after."""
    from tanbias.lab.train import setup_training, train_step

    cfg = RunConfig.from_dict({"name": "x", "kind": kind, "size": "smoke", "steps": steps, "languages": ["en"],
                               "warmup": 1})
    stream, model, opt, sched = setup_training(cfg)
    batch = next(stream.training())
    before = copy.deepcopy(model.state_dict())
    sg = Surgery(model, surgery, steps, seed=0) if surgery is not None else None
    train_step(model, opt, sched, batch, "fp32", "cpu", hooks=() if sg is None else (sg,), step=0)
    return before, model.state_dict(), sg, model


def _targets(model):
    return {f"model.layers.{i}.{p}.weight": f"{i}.{g}"
            for i in range(len(model.model.layers)) for g, paths in READERS.items() for p in paths}


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_in_a_smoke_step_the_surgery_changes_only_the_intended_components(kind):
    alpha = 0.5
    w0, control, _, model = _one_step(kind, None)
    _, cut, sg, _ = _one_step(kind, SurgerySettings(arm="proxy", alpha=alpha, rank=4))
    targets = _targets(model)
    for name in control:
        if name not in targets:           # embeddings, o/down projections, norms, output layer
            assert torch.equal(control[name], cut[name]), name
            continue
        U = sg.bases[targets[name]]
        P = U @ U.T
        d_c, d_s = control[name] - w0[name], cut[name] - w0[name]
        assert float(d_c.abs().max()) > 0
        torch.testing.assert_close(d_s @ (torch.eye(P.shape[0]) - P), d_c @ (torch.eye(P.shape[0]) - P),
                                   atol=1e-6, rtol=1e-4)
        torch.testing.assert_close(d_s @ P, alpha * (d_c @ P), atol=1e-6, rtol=1e-4)
    assert 0 < sg.last["surgery_removed"] < 1
    assert sg.last["surgery_sharpness"] >= 1               # the re-estimated proxy's sigma_r / sigma_(r+1)


def test_the_uniform_arm_removes_the_energy_share_the_proxy_arm_would():
    w0, control, _, model = _one_step("decoder", None)
    _, proxy, sp, _ = _one_step("decoder", SurgerySettings(arm="proxy", rank=4))
    _, uniform, su, _ = _one_step("decoder", SurgerySettings(arm="uniform", rank=4))
    for name in _targets(model):
        e_c = float((control[name] - w0[name]).double().pow(2).sum())
        e_p = float((proxy[name] - w0[name]).double().pow(2).sum())
        e_u = float((uniform[name] - w0[name]).double().pow(2).sum())
        assert e_u == pytest.approx(e_p, rel=1e-4), name       # the same energy left ...
        assert e_u < e_c                                          # ... less than the unoperated update
    assert su.last == pytest.approx(sp.last)
    # and the uniform update keeps the raw update's direction
    name = next(iter(_targets(model)))
    d_c, d_u = (control[name] - w0[name]).flatten(), (uniform[name] - w0[name]).flatten()
    assert float(torch.nn.functional.cosine_similarity(d_c, d_u, dim=0)) == pytest.approx(1.0, abs=1e-5)


def test_the_random_arm_holds_about_r_over_D_of_the_update_and_the_window_ends():
    _, _, sg, _ = _one_step("decoder", SurgerySettings(arm="random", rank=8))
    assert 0.1 < sg.last["surgery_share"] < 0.4            # r / D = 8 / 32
    assert "surgery_sharpness" not in sg.last                # a random basis is fitted on nothing
    s = SurgerySettings(arm="proxy", until=0.3)
    assert [s.active(k, 10) for k in range(10)] == [True] * 3 + [False] * 7


@pytest.mark.slow
def test_a_killed_surgery_run_resumes_with_identical_losses(tmp_path):
    from tanbias.lab.runs import read_jsonl
    from tanbias.lab.train import Interrupted, train

    cfg = {"name": "cut", "kind": "decoder", "size": "smoke", "steps": 10, "languages": ["en"], "checkpoint_every": 4,
           "eval_batches": 1, "probe": {"enabled": False},
           # P re-estimated every 3 steps: the resumed run at step 4 needs the basis of step 3
           "surgery": {"arm": "proxy", "rank": 4, "every": 3, "until": 0.8}}
    whole = train(cfg, out_dir=tmp_path / "whole", progress=False)
    with pytest.raises(Interrupted):
        train(cfg, out_dir=tmp_path / "killed", stop_after=6, progress=False)
    resumed = train(cfg, out_dir=tmp_path / "killed", progress=False)
    a = [r for r in read_jsonl(tmp_path / "whole" / "metrics.jsonl") if r["type"] == "step"]
    b = [r for r in read_jsonl(tmp_path / "killed" / "metrics.jsonl") if r["type"] == "step"]
    assert [r["loss"] for r in a] == [r["loss"] for r in b]
    assert [r.get("surgery_removed") for r in a] == [r.get("surgery_removed") for r in b]
    assert resumed["resume_mismatches"] == 0 and resumed["eval"] == whole["eval"]
    assert "surgery_removed" in a[7] and "surgery_removed" not in a[8]


def test_the_proxys_sharpness_is_the_ratio_of_the_singular_values_at_its_rank():
    import numpy as np
    import torch

    from tanbias.lab.surgery import top_basis, top_basis_and_sharpness
    from tanbias.theory.alignment import subspace_sharpness

    X = torch.from_numpy(np.random.default_rng(0).normal(size=(4000, 6)) * [6.0, 5.0, 4.0, 1.0, 1.0, 1.0])
    Xc = X - X.mean(0)
    cov = (Xc.T @ Xc / (len(X) - 1)).float()
    basis, sharp = top_basis_and_sharpness(cov, 3)
    assert torch.equal(basis, top_basis(cov, 3))
    assert sharp == pytest.approx(subspace_sharpness(X.numpy(), 3), rel=1e-4)
    assert 3.5 < sharp < 4.5
