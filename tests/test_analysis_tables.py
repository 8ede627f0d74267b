"""What the lab makes of a run's captures (tanbias.lab.analysis.tables): the alignment tables on
synthetic captures with a planted tangent space, the frozen proxy and the buckets' names. (On real
runs: test_train.py and test_pipeline.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.lab.analysis.tables import analyse_captures, bucket_label, frozen_proxies
from tanbias.lab.config import ProbeSettings
from tanbias.theory import alignment as al


@pytest.mark.slow
def test_analysis_finds_a_planted_tangent_space():
    # synthetic captures: 2 layers, 3 steps; gradients enriched along the activations' PCA space
    rng = np.random.default_rng(0)
    D, n = 24, 600
    captures = {}
    for step in (0, 3, 9):
        acts, grads = [], []
        for layer in range(2):
            p = al.planted_tangent_data(n=n, D=D, d=3, rng=rng.integers(1 << 30) if step == 0 else 7 + layer)
            acts.append(p.X.astype(np.float16))
            grads.append((p.G / np.abs(p.G).max()).astype(np.float16))
        ids = rng.integers(5, 40, n)
        captures[step] = {"acts": np.stack(acts), "grads": np.stack(grads),
                          "grad_scale": np.ones(2, np.float32), "token_ids": ids}
    probe = ProbeSettings(rank=3, local_rank=2, n_controls=20, n_buckets=2, min_count=6, zeta=0.1,
                          fit_fraction=0.3)
    source = {"run": "synthetic", "kind": "decoder", "regime": "natural", "seed": 0}
    counts = np.bincount(rng.zipf(1.5, 5000).clip(5, 39), minlength=40)
    align, radius, corr = analyse_captures(captures, probe, 10, counts, source)
    rows = [r for r in align if r["proxy"] == "refit" and r["bucket"] == "all"]
    assert len(rows) == 6
    assert all(r["enrichment"] > 3 and r["p_energy"] < 0.05 for r in rows)
    assert {r["proxy"] for r in align} == {"frozen", "refit", "local"}
    assert len(corr) == 6 and all("spearman" in c for c in corr)


@pytest.mark.parametrize("b, n, label", [(0, 3, "q1 (most frequent)"), (1, 3, "q2"), (2, 3, "q3 (rarest)"),
                                         (0, 2, "q1 (most frequent)"), (1, 2, "q2 (rarest)")])
def test_buckets_are_named_from_the_most_frequent(b, n, label):
    assert bucket_label(b, n) == label


def _captures(steps, D=12, n=50, rng=0):
    g = np.random.default_rng(rng)
    return {s: {"acts": g.normal(size=(2, n, D)).astype(np.float16), "token_ids": g.integers(5, 30, n)}
            for s in steps}


def test_the_frozen_proxy_is_fitted_on_the_early_steps_only():
    caps = _captures((0, 2, 5, 9))
    frozen = frozen_proxies(caps, [0, 1], rank=3, fit_fraction=0.3, total_steps=10)
    assert set(frozen) == {0, 1}
    for layer, basis in frozen.items():
        assert basis.shape == (12, 3) and np.allclose(basis.T @ basis, np.eye(3), atol=1e-10)
    # the late steps are not read: changing them leaves the proxy as it was
    late = {**caps, 9: _captures((9,), rng=5)[9], 5: _captures((5,), rng=6)[5]}
    assert all(np.array_equal(frozen[k], frozen_proxies(late, [0, 1], 3, 0.3, 10)[k]) for k in (0, 1))
    # with no step early enough, the first step alone
    only_first = frozen_proxies(caps, [0], 3, 0.0, 10)[0]
    assert np.array_equal(only_first, frozen_proxies({0: caps[0]}, [0], 3, 0.0, 10)[0])



def test_rival_rows_accept_an_output_spectrum_stored_in_float32():
    """A capture keeps W_U's right singular vectors in float32, orthonormal only to about 1e-6 on the
    lab's models; the rival readings take their span, orthonormalised, instead of refusing the basis
    (a committed run once failed its analysis there)."""
    from tanbias.lab.analysis.tables import reading_rows
    from tanbias.lab.experiments import rivals_config

    cfg = rivals_config("decoder", "standard-control", 0, steps=10, size="smoke",
                        probe={"rank": 3, "local_rank": 2, "n_controls": 4, "min_count": 3})
    rng = np.random.default_rng(0)
    D, n = 24, 400
    vt = np.linalg.qr(rng.normal(size=(D, D)))[0].T
    vt[0] += 3e-6 * vt[1]                              # 3e-6 away from orthonormal, as float32 can leave them
    captures = {}
    for step in (0, 3, 9):
        p = al.planted_tangent_data(n=n, D=D, d=3, rng=step + 1)
        captures[step] = {"acts": p.X[None].astype(np.float16), "grads": (p.G / np.abs(p.G).max())[None].astype(np.float16),
                          "grad_scale": np.ones(1, np.float32), "token_ids": rng.integers(5, 40, n),
                          "wu_vt": vt.astype(np.float32), "wu_s": np.linspace(2, 1, D).astype(np.float32)}
    v32 = vt[:3].astype(np.float32).astype(np.float64)
    assert not np.allclose(v32 @ v32.T, np.eye(3), atol=1e-6)
    rows = reading_rows(captures, cfg)
    assert len(rows) == 3 and all(np.isfinite(r["enrichment_outside"]) for r in rows)
    assert all(0 <= r["wu_overlap"] <= 1 for r in rows)


def test_intact_positions_leave_out_every_corrupted_position_whatever_it_shows():
    """The encoder's collapse 2 x 2 reads one position set in all its cells: positions that show the
    text's own token; a <mask> input and a random replacement at the same position both drop out."""
    from tanbias.lab.analysis.tables import anisotropy_rows
    from tanbias.lab.experiments import horizon_config

    cfg = horizon_config("encoder", "random-native", 0, steps=10, size="smoke")
    rng = np.random.default_rng(1)
    n, D = 256, 16
    text = rng.integers(5, 60, n)
    shown = text.copy()
    corrupted = rng.random(n) < 0.3
    shown[corrupted] = rng.integers(5, 60, int(corrupted.sum()))
    shown[corrupted & (shown == text)] += 1                 # every corrupted position shows another token
    acts = rng.normal(size=(2, n, D))
    acts[:, corrupted] += 50.0                            # a shared direction at the corrupted positions only
    cap = {"acts": acts.astype(np.float16), "token_ids": text, "input_ids": shown}
    rows = {(r["layer"], r["positions"]): r for r in anisotropy_rows({0: cap}, cfg)}
    seq = cfg.size.seq_len
    expected = int(((np.arange(n) % seq != 0) & ~corrupted).sum())
    assert rows[(0, "intact")]["n_tokens"] == expected
    assert rows[(0, "content")]["mean_cosine"] > 0.05 > abs(rows[(0, "intact")]["mean_cosine"])


def test_extra_probe_steps_join_the_grid_and_stay_out_of_configs_without_them():
    p = ProbeSettings(n_steps=6, extra_steps=(50, 50, 7))
    assert p.extra_steps == (7, 50) and p.grid(100) == [0, 1, 3, 7, 10, 31, 50, 99]
    assert "extra_steps" not in ProbeSettings(n_steps=6).to_dict()
    assert ProbeSettings.from_dict(p.to_dict()) == p
    from tanbias.errors import ParameterError

    with pytest.raises(ParameterError, match="probe.extra_steps"):
        ProbeSettings(n_steps=6, extra_steps=(100,)).resolved(steps=100, tokens_per_step=256)
