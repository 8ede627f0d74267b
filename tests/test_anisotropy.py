"""The readings of anisotropy (tanbias.theory.anisotropy) on clouds whose answer is known."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.theory import anisotropy as an
from tanbias.theory import token_clouds


def brute_mean_cosine(X, w=None):
    X = np.asarray(X, float)
    w = np.ones(len(X)) if w is None else np.asarray(w, float)
    num = den = 0.0
    for i, j in itertools.permutations(range(len(X)), 2):
        c = X[i] @ X[j] / np.linalg.norm(X[i]) / np.linalg.norm(X[j])
        num += w[i] * w[j] * c
        den += w[i] * w[j]
    return num / den


def test_exact_mean_cosine_equals_the_sum_over_pairs():
    X = np.random.default_rng(0).normal(size=(9, 4)) + 0.5
    assert an.mean_cosine(X) == pytest.approx(brute_mean_cosine(X), abs=1e-12)
    w = np.arange(1, 10) / 3
    assert an.mean_cosine(X, w) == pytest.approx(brute_mean_cosine(X, w), abs=1e-12)


def test_exact_mean_cosine_agrees_with_the_sampled_one_within_its_error():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 24)) + 0.4
    exact = an.mean_cosine(X)
    sampled = token_clouds.anisotropy(X, n_pairs=20000, rng=0)["mean_cosine"]
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    sd = np.std((U[:500] @ U[500:1000].T).ravel())           # SD of one pair's cosine
    assert abs(exact - sampled) < 4 * sd / np.sqrt(20000)


def test_the_sampled_pairs_are_those_every_committed_run_drew():
    # the committed runs' anisotropy.csv came from this sampling, inline in token_clouds until it
    # moved here: the same seed must give the same pairs and the same parts, bit for bit
    X = np.random.default_rng(3).normal(size=(700, 12)) + 0.2
    norms = np.linalg.norm(X, axis=1)
    rng = np.random.default_rng(5)
    i = rng.integers(0, 700, size=9000)
    j = (i + rng.integers(1, 700, size=9000)) % 700
    old = np.zeros(12)
    for s in range(0, 9000, 4096):
        a, b = i[s:s + 4096], j[s:s + 4096]
        old += np.einsum("ij,ij->j", X[a] / norms[a, None], X[b] / norms[b, None])
    old /= 9000
    assert np.array_equal(an.pair_contributions(X, norms, 9000, np.random.default_rng(5)), old)
    assert token_clouds.anisotropy(X, n_pairs=9000, rng=5)["mean_cosine"] == float(old.sum())


def test_a_planted_rogue_coordinate_is_raw_near_one_and_standardised_near_zero():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4000, 32))
    X[:, 7] = 40.0 + 5.0 * rng.normal(size=4000)              # one coordinate dominates every vector
    r = an.readings(X)
    assert r["raw"] > 0.95
    assert abs(r["standardised"]) < 0.01
    assert r["top_share"] == pytest.approx((25 + 2) / (25 + 31), abs=0.02)   # its variance and two others


def test_a_planted_mean_shift_is_centered_near_zero():
    rng = np.random.default_rng(3)
    shift = rng.normal(size=32) * 6.0
    X = rng.normal(size=(4000, 32)) + shift
    r = an.readings(X)
    assert r["raw"] > 0.9
    assert abs(r["centered"]) < 0.01
    assert r["mean_share"] == pytest.approx(shift @ shift / (shift @ shift + 32), abs=0.02)
    assert r["top_share"] == pytest.approx(3 / 32, abs=0.02)  # an isotropic spread: 3 of 32


def test_type_balanced_reading_by_hand():
    # type a: two rows along e1; type b: one row along e2; type c: one row along e1 + e2
    X = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    ids = np.array([5, 5, 9, 11])
    # weights 1/2, 1/2, 1, 1; pair cosines: aa 1, ab 0, ac 1/sqrt2, bc 1/sqrt2
    s = 1 / np.sqrt(2)
    num = 2 * (0.25 * 1 + 2 * 0.5 * 0 + 2 * 0.5 * s + 1 * s)
    den = 2 * (0.25 + 2 * 0.5 + 2 * 0.5 + 1)
    r = an.readings(X, type_ids=ids, top=1)
    assert r["type_balanced"] == pytest.approx(num / den, abs=1e-12)
    assert r["types"] == 3
    # the plain reading counts type a twice
    assert r["raw"] == pytest.approx(brute_mean_cosine(X), abs=1e-12)


def test_type_balancing_undoes_a_frequent_type():
    rng = np.random.default_rng(4)
    frequent = np.tile([10.0, 0.0, 0.0, 0.0], (900, 1)) + 0.1 * rng.normal(size=(900, 4))
    rare = rng.normal(size=(100, 4))
    X, ids = np.vstack([frequent, rare]), np.r_[np.zeros(900), np.arange(1, 101)]
    r = an.readings(X, type_ids=ids)
    assert r["raw"] > 0.6 and abs(r["type_balanced"]) < 0.1


def test_isotropic_cloud_reads_zero_everywhere():
    X = np.random.default_rng(5).normal(size=(5000, 16))
    r = an.readings(X, type_ids=np.arange(5000) % 50)
    for k in ("raw", "centered", "standardised", "type_balanced"):
        assert abs(r[k]) < 0.01, k
    assert r["mean_share"] < 0.01


@pytest.mark.parametrize("X, kw, word", [
    (np.ones((1, 4)), {}, "valid range is [2, inf)"),
    (np.ones((5, 1)), {}, "D=1"),
    (np.random.default_rng(0).normal(size=(5, 4)), {"top": 4}, "top"),
    (np.random.default_rng(0).normal(size=(5, 4)), {"type_ids": [1, 2]}, "type_ids"),
])
def test_bad_input_names_the_parameter(X, kw, word):
    with pytest.raises(ParameterError, match=word.replace("[", r"\[").replace(")", r"\)")):
        an.readings(X, **kw)


def test_negative_weights_are_refused():
    with pytest.raises(ParameterError, match="weights"):
        an.mean_cosine(np.eye(3), weights=[1, -1, 1])


def test_rows_without_a_direction_are_left_out():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    assert an.mean_cosine(X) == 1.0
    assert np.isnan(an.mean_cosine(np.array([[0.0, 0.0], [1.0, 0.0]])))


# ------------------------------------------------------------------ the measurement command's readings
def test_the_cosine_parts_are_exact_and_sum_to_the_mean_cosine():
    X = np.random.default_rng(1).normal(size=(9, 5)) + [2.0, 0, 0, 0.5, 0]
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    brute = np.zeros(5)
    for i, j in itertools.permutations(range(len(X)), 2):
        brute += U[i] * U[j]
    c = an.cosine_contributions(X)
    assert np.allclose(c, brute / (9 * 8), atol=1e-12)
    assert c.sum() == pytest.approx(an.mean_cosine(X), abs=1e-12)


def test_the_cosine_top_share_finds_a_rogue_coordinate_and_not_a_spread_shift():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 24))
    rogue = X + 6.0 * (np.arange(24) == 7)
    spread = X + 1.2
    assert an.cosine_top_share(rogue, top=1) > 0.95
    assert an.cosine_top_share(spread, top=3) == pytest.approx(3 / 24, abs=0.05)
    with pytest.raises(ParameterError, match="top=30"):
        an.cosine_top_share(X, top=30)


def test_the_measure_readings_leave_out_the_centred_cosine_and_keep_the_labs_readings():
    """The command's readings drop 'centered' and add the cosine top share; readings(), which every
    lab run's rivals.csv holds, is unchanged (the same keys, the same values)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 8)) + 2.0
    ids = rng.integers(0, 30, 400)
    lab = an.readings(X, ids)
    assert list(lab) == [*an.READINGS, "n", "types"]
    ours = an.measure_readings(X, ids)
    assert tuple(ours) == an.MEASURE_READINGS and "centered" not in ours
    assert all(ours[k] == lab[k] for k in an.MEASURE_READINGS if k in lab)
    assert set(an.MEASURE_READINGS) | set(an.READINGS) <= set(an.LABELS)


def test_the_singular_spectrum_is_numpys_in_any_chunking():
    W = np.random.default_rng(4).normal(size=(50, 7)) * np.arange(1, 8)
    want = np.linalg.svd(W, compute_uv=False)
    for chunk in (1, 9, 1000):
        assert np.allclose(an.singular_spectrum(W, chunk=chunk), want, rtol=1e-9)
    assert np.allclose(an.singular_spectrum(W.T), want, rtol=1e-9)
    with pytest.raises(ParameterError, match="chunk"):
        an.singular_spectrum(W, chunk=0)


def test_every_table_of_readings_derives_from_the_records():
    """READINGS, MEASURE_READINGS and LABELS are the records' (no list of their own); the lab's columns keep
    the order every committed rivals.csv has, and every record is computed once per cloud."""
    assert an.READINGS == ("raw", "centered", "standardised", "type_balanced", "mean_share", "top_share")
    assert an.MEASURE_READINGS == tuple(m.name for m in an.METRICS if m.command == "readings")
    assert set(an.LABELS) == {m.name for m in an.METRICS} and len(an.METRICS) == len(an.LABELS)
    assert sorted(m.lab for m in an.METRICS if m.lab is not None) == list(range(len(an.READINGS)))
    assert all(m.command in (None, "readings", "chapter 9") for m in an.METRICS)


def test_a_cloud_computes_what_its_readings_share_once(monkeypatch):
    calls = []
    norms = an._norms
    monkeypatch.setattr(an, "_norms", lambda X: calls.append(X.shape) or norms(X))
    X = np.random.default_rng(3).normal(size=(400, 6)) + 1.0
    r = an.measure_readings(X, type_ids=np.arange(400) % 7)
    # the rows' norms once, the centred rows' never (the command leaves the centred cosine out), the
    # standardised rows' once
    assert calls.count((400, 6)) == 2 and len(r) == len(an.MEASURE_READINGS)


def test_a_spectrum_handed_over_gives_the_participation_ratio_of_the_covariance():
    """The command reads the participation ratio off the scatter matrix's eigenvalues that chapter 9's
    anisotropy computed: a multiple of the covariance's, in another order, the same ratio."""
    X = np.random.default_rng(4).normal(size=(600, 10)) * np.linspace(1, 4, 10)
    Xc = X - X.mean(axis=0)
    scatter = np.linalg.eigvalsh(Xc.T @ Xc)[::-1]
    handed = an.Cloud(X, spectrum=scatter).read(["participation_ratio"])["participation_ratio"]
    assert handed == pytest.approx(an.participation_ratio(X), rel=1e-12)


def test_the_participation_ratio_counts_the_directions_of_a_planted_cloud():
    rng = np.random.default_rng(0)
    k = 5
    X = np.zeros((20000, 12))
    X[:, :k] = rng.normal(size=(20000, k))                   # k equal directions, the rest empty
    assert an.participation_ratio(X) == pytest.approx(k, rel=0.02)
    assert an.participation_ratio(X + 50.0) == pytest.approx(k, rel=0.02)   # a shared mean leaves it unmoved


def test_a_planted_metric_is_one_record_and_reaches_the_lab_and_the_command(monkeypatch):
    """A new reading is one record: the lab's readings (every run's rivals.csv), the command's readings
    (its anisotropy.csv, through chapter 9's per-layer tables), the report's figures and the lab's
    reference columns all read it, and no other list names it."""
    import pandas as pd

    from tanbias.figures import measure as fm
    from tanbias.lab.analysis import measure as ms
    from tanbias.lab.analysis import measure_report as mr
    from tanbias.lab.analysis import pretrained as pt
    from tanbias.lab.analysis.tables import reading_rows
    from tanbias.lab.experiments import rivals_config
    from tanbias.theory import alignment as al

    planted = an.Metric("first_coordinate_share", lambda c: float(c.variances[0] / c.variances.sum()),
                        ("share of the first coordinate's variance", "first coordinate's share", "first"),
                        "A planted reading: the first coordinate's share of the variance.", lab=6,
                        command="readings", reference="first_coordinate_share")
    monkeypatch.setattr(an, "METRICS", (*an.METRICS, planted))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 16)) * np.r_[4.0, np.ones(15)]
    expected = float(X.var(axis=0)[0] / X.var(axis=0).sum())
    assert an.readings(X)["first_coordinate_share"] == pytest.approx(expected)
    assert list(an.measure_readings(X))[-1] == "first_coordinate_share"
    # the lab: a run's rivals.csv rows
    cfg = rivals_config("decoder", "standard-control", 0, steps=10, size="smoke",
                        probe={"rank": 3, "local_rank": 2, "n_controls": 4, "min_count": 3})
    D, n = 24, 256
    vt = np.linalg.qr(rng.normal(size=(D, D)))[0].T
    p = al.planted_tangent_data(n=n, D=D, d=3, rng=1)
    cap = {"acts": p.X[None].astype(np.float16), "grads": (p.G / np.abs(p.G).max())[None].astype(np.float16),
           "grad_scale": np.ones(1, np.float32), "token_ids": rng.integers(5, 40, n),
           "wu_vt": vt.astype(np.float32), "wu_s": np.linspace(2, 1, D).astype(np.float32)}
    row = reading_rows({0: cap, 9: cap}, cfg)[0]
    assert list(row)[4:4 + len(an.READINGS) + 1] == [*an.READINGS, "first_coordinate_share"]
    # the command: chapter 9's per-layer anisotropy row, with the command's readings
    ids = rng.integers(0, 30, 500)
    _, aniso, _ = pt.layer_tables(X, np.zeros(500, bool), ids, np.ones(30), np.ones(30), 3, 2, 2, 1,
                                  metrics=ms.anisotropy_readings)
    assert aniso["first_coordinate_share"] == pytest.approx(expected)
    # the report draws it, named and noted by its record, beside the lab's column
    assert "first_coordinate_share" in an.drawn_readings()
    assert mr.reference_columns()["first_coordinate_share"] == "first_coordinate_share"
    fig = fm.reading_figure({"m": {"anisotropy": pd.DataFrame(
        {"language": "en", "layer": [0, 1], "first_coordinate_share": [0.5, 0.6]})}}, "first_coordinate_share")
    assert fig.layout.yaxis.title.text == "first coordinate's share"
