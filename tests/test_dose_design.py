"""The dose experiment's design (tanbias.lab.analysis.dose_design): the knobs on the corpus, the power."""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.lab.analysis import dose_design as dose
from tanbias.lab.analysis.registered import REGISTRATION_DIR, load_registration
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import DOSE


# --------------------------------------------------------------------------- the knobs on the corpus
@pytest.fixture(scope="module")
def expected():
    return dose.expected_concentration().set_index("level")


@pytest.mark.slow
def test_token_knob_spans_ten_times_in_collision_probability(expected):
    token = [lv for lv in dose.level_positions("token")]
    c = expected.loc[token, "collision"].to_numpy()
    assert np.all(np.diff(c) < 0), c                      # monotone along the knob
    assert c[0] / c[-1] >= 10.0                            # the design's 10x span
    steps = np.diff(np.log(c))                             # designed as three equal log steps
    assert np.allclose(steps, steps.mean(), rtol=0.15), steps


def test_language_knob_barely_moves_concentration(expected):
    lang = [lv for lv in dose.level_positions("language")]
    c = expected.loc[lang, "collision"].to_numpy()
    assert np.all(np.diff(c) < 0)
    assert 1.0 < c[0] / c[-1] < 1.2                       # the finding chapter 10 states


# --------------------------------------------------------------------------- power analysis
@pytest.mark.slow
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

    raw = (REGISTRATION_DIR / "dose.toml").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == DOSE_REGISTRATION_SHA256
    assert DOSE.registration_sha256 == DOSE_REGISTRATION_SHA256       # and the code checks the same pin


def test_the_code_applies_the_registered_text():
    reg = load_registration("dose", DOSE_REGISTRATION_SHA256)
    assert dose.PREDICTIONS == reg["predictions"]
    assert dose.predicted_sign("log_enrichment_late", "token") == reg["predictions"]["enrichment"]["token"]["sign"]
    flipped = {"+": "-", "-": "+"}[reg["predictions"]["anisotropy"]["token"]["sign"]]
    assert "isoscore_late" in reg["rule"]["opposite"] and dose.predicted_sign("isoscore_late", "token") == flipped
    from tanbias.lab.analysis.dose import verdict_word

    for predicted, row in reg["rule"]["verdict"].items():
        for observed, word in row.items():
            assert verdict_word(predicted, observed) == word
