"""The dose experiment's design (tanbias.lab.analysis.dose_design): the knobs on the corpus, the power."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tanbias.errors import ParameterError
from tanbias.lab.analysis import dose_design as dose
from tanbias.lab.config import KINDS


# --------------------------------------------------------------------------- the knobs on the corpus
@pytest.fixture(scope="module")
def expected():
    return dose.expected_concentration().set_index("level")


def test_token_knob_spans_ten_times_in_collision_probability(expected):
    token = [lv for lv in dose.level_positions("token")]
    c = expected.loc[token, "collision"].to_numpy()
    assert np.all(np.diff(c) < 0), c                      # monotone along the knob
    assert c[0] / c[-1] >= 10.0                            # the 10x span
    steps = np.diff(np.log(c))                             # designed as three equal log steps
    assert np.allclose(steps, steps.mean(), rtol=0.15), steps


def test_language_knob_barely_moves_concentration(expected):
    lang = [lv for lv in dose.level_positions("language")]
    c = expected.loc[lang, "collision"].to_numpy()
    assert np.all(np.diff(c) < 0)
    assert 1.0 < c[0] / c[-1] < 1.2                       # the finding chapter 10 states


# --------------------------------------------------------------------------- power analysis
def test_power_matches_a_simulation():
    rng = np.random.default_rng(0)
    x = np.array([0, 1 / 3, 2 / 3, 1])
    sd, n = 0.08, 3
    ratio = dose.detectable_ratio(sd, n, x)
    b = np.log(ratio)
    hits = 0
    for _ in range(2000):
        y = b * x[None, :] + rng.normal(0, 0.3, (n, 1)) + rng.normal(0, sd, (n, 4))
        yc = y - y.mean(1, keepdims=True)
        xc = np.broadcast_to(x - x.mean(), y.shape)
        slope = (xc * yc).sum() / (xc ** 2).sum()
        resid = yc - slope * xc
        df = n * 4 - n - 1
        se = np.sqrt((resid ** 2).sum() / df / (xc ** 2).sum())
        hits += abs(slope / se) > stats.t.ppf(0.975, df)
    assert abs(hits / 2000 - 0.8) < 0.03


def test_power_analysis_from_the_committed_sweep():
    p = dose.power_analysis()
    chosen = p[p["chosen"]]
    assert set(chosen["kind"]) == set(KINDS)
    assert (chosen["detectable_ratio"] <= 1.25).all()        # the design's target
    for kind, g in p.groupby("kind"):
        assert np.all(np.diff(g.sort_values("seeds")["detectable_ratio"]) < 0)   # more seeds, smaller


# --------------------------------------------------------------------------- the registration
#: the sha256 of data/preregistration/dose.toml: the predictions and decision rule as committed
#: before (predictions) and during (rule) the dose runs. This pin never changes: a rule added
#: later goes in its own, dated file (dose-posthoc.toml)
DOSE_REGISTRATION_SHA256 = "08c39fd658800c0a853fd46ca45acc2fc5dde9e8ba8eed956f6122dd4082dddc"


def test_the_registration_file_is_the_pinned_one():
    import hashlib

    raw = (dose.REGISTRATION_DIR / "dose.toml").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == DOSE_REGISTRATION_SHA256
    assert dose.REGISTRATION_SHA256 == DOSE_REGISTRATION_SHA256       # and the code checks the same pin


def test_the_code_applies_the_registered_text():
    reg = dose.load_registration("dose")
    assert dose.PREDICTIONS == reg["predictions"]
    assert dose.predicted_sign("log_enrichment_late", "token") == reg["predictions"]["enrichment"]["token"]["sign"]
    flipped = {"+": "-", "-": "+"}[reg["predictions"]["anisotropy"]["token"]["sign"]]
    assert "isoscore_late" in reg["rule"]["opposite"] and dose.predicted_sign("isoscore_late", "token") == flipped
    from tanbias.lab.analysis.dose import verdict_word

    for predicted, row in reg["rule"]["verdict"].items():
        for observed, word in row.items():
            assert verdict_word(predicted, observed) == word


def test_a_changed_or_missing_registration_is_refused(tmp_path):
    from tanbias.errors import CorruptFileError

    (tmp_path / "dose.toml").write_bytes((dose.REGISTRATION_DIR / "dose.toml").read_bytes() + b"\n")
    with pytest.raises(CorruptFileError, match="sha256"):
        dose.load_registration("dose", directory=tmp_path)
    with pytest.raises(CorruptFileError, match="missing"):
        dose.load_registration("nothing", directory=tmp_path)
    (tmp_path / "bad.toml").write_text("[unclosed")
    with pytest.raises(CorruptFileError, match="not TOML"):
        dose.load_registration("bad", sha256=None, directory=tmp_path)


def test_power_at_a_ratio_matches_a_simulation():
    rng = np.random.default_rng(1)
    x = np.array([0, 1 / 3, 2 / 3, 1])
    sd, n, ratio = 0.15, 3, 1.25
    want = dose.power_at(ratio, sd, n, x)
    df = n * 4 - n - 1
    hits = 0
    for _ in range(3000):
        y = np.log(ratio) * x[None, :] + rng.normal(0, 0.3, (n, 1)) + rng.normal(0, sd, (n, 4))
        yc = y - y.mean(1, keepdims=True)
        xc = np.broadcast_to(x - x.mean(), y.shape)
        slope = (xc * yc).sum() / (xc ** 2).sum()
        se = np.sqrt(((yc - slope * xc) ** 2).sum() / df / (xc ** 2).sum())
        hits += abs(slope / se) > stats.t.ppf(0.975, df)
    assert abs(hits / 3000 - want) < 0.03, (hits / 3000, want)
    assert dose.power_at(1 / ratio, sd, n, x) == pytest.approx(want)            # two-sided
    assert dose.power_at(ratio, 2 * sd, n, x) < want < dose.power_at(ratio, sd, 6, x)
    with pytest.raises(ParameterError, match="ratio"):
        dose.power_at(-1.0, sd, n, x)
