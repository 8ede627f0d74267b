"""The horizon experiment's face: every number and word it names, from the committed runs and from none."""
from __future__ import annotations

import numpy as np

from tanbias.lab.analysis import horizon, horizon_report
from tanbias.stats import check_words


def test_the_face_names_every_primary_contrast_and_collapse_cell():
    a = horizon_report.analyse()
    n, w = horizon_report.numbers(a), horizon_report.words(a)
    assert n["runs_registered"] == 52 and 0 <= n["runs_done"] <= 52
    assert n["collapse_registered"] == 16 and n["collapse_done"] == len(a.table[a.table["part"] == "collapse"])
    for name, (_, _, _, _, kinds) in horizon.PRIMARY.items():
        for kind in kinds:
            assert f"{name}_{kind}" in n and f"primary, {name}, {kind}" in w
            if np.isfinite(n[f"{name}_{kind}"]):
                assert n[f"{name}_{kind}_lo"] <= n[f"{name}_{kind}"] <= n[f"{name}_{kind}_hi"]
    assert w["interim, collapse"] in ("interim", "complete") and w["interim, long"] == "interim"
    for cell in ("mask-native", "random-native", "mask-causal", "random-causal"):
        assert w[f"collapse, {cell}"] in ("kept", "removed", "mixed", "–")
    # the words are read by the one checker: a sentence that names a word the data do not give fails
    word = w["primary, head_final, decoder"]
    assert check_words(w, {"primary, head_final, decoder": word})[0].passed
    assert not check_words(w, {"primary, head_final, decoder": "reverses"})[0].passed


def test_the_face_of_no_runs_is_all_undecided():
    a = horizon.analyse_horizon(loaded={})
    n, w = horizon_report.numbers(a), horizon_report.words(a)
    assert np.isnan(n["corruption_peak_encoder"]) and n["corruption_peak_encoder_seeds"] == 0
    assert {w[k] for k in w if k.startswith("primary, ")} == {"undecided"}
    assert {w[k] for k in w if k.startswith("collapse, ")} == {"–"}
