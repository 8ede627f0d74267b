"""The horizon experiment's face: every number and word it names, from the committed runs and from none."""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.lab.analysis import horizon, horizon_report
from tanbias.stats import check_words


@pytest.mark.slow
@pytest.mark.committed
def test_the_face_names_every_primary_contrast_and_collapse_cell():
    a = horizon_report.analyse()
    n, w = horizon_report.numbers(a), horizon_report.words(a)
    assert n["runs_registered"] == 52 and 0 <= n["runs_done"] <= 52
    assert n["collapse_registered"] == 16 and n["collapse_done"] == len(a.table[a.table["part"] == "collapse"])
    assert n["long_registered"] == 36 and n["collapse_done"] + n["long_done"] == n["runs_done"]
    for name, (part, _, _, _, kinds) in horizon.PRIMARY.items():
        for kind in kinds:
            assert f"primary, {name}, {kind}" in w
            if part == "collapse" and np.isfinite(n[f"{name}_{kind}"]):
                assert n[f"{name}_{kind}_lo"] <= n[f"{name}_{kind}"] <= n[f"{name}_{kind}_hi"]
                assert n["peak_detectable"] > 1
    assert w["interim, collapse"] in ("interim", "complete") and w["interim, long"] in ("interim", "complete")
    for cell in ("mask-native", "random-native", "mask-causal", "random-causal"):
        assert w[f"collapse, {cell}"] in ("kept", "removed", "mixed", "–")
    for account in horizon.ACCOUNTS:
        assert w[f"account, {account}"] in ("supported", "against", "mixed", "not distinguished")
    assert w["unigram check"] in ("passes", "fails", "–")
    ln = horizon_report.long_numbers(a, "decoder")
    for c in ("head_final", "surgery_standard", "surgery_unigram"):
        for r in ("isoscore", "participation", "mean_share"):
            key = f"{c}_{r}_decoder_1280"
            if np.isfinite(ln[key]):
                assert ln[f"{key}_lo"] <= ln[key] <= ln[f"{key}_hi"]
                assert (ln[key] > 0) if r != "isoscore" else (-1 < ln[key] < 1)   # a ratio; a difference of scores
    ps = [ln[f"{c}_decoder_p_holm"] for c in ("head_final", "surgery_standard", "surgery_unigram")]
    assert ln["p_holm_max_decoder"] == max(ps) or not np.isfinite(ln["p_holm_max_decoder"])
    # the words are read by the one checker: a sentence that names a word the data do not give fails
    word = w["primary, head_final, decoder"]
    assert check_words(w, {"primary, head_final, decoder": word})[0].passed
    assert not check_words(w, {"primary, head_final, decoder": "reverses"})[0].passed


@pytest.mark.slow
@pytest.mark.committed
def test_the_face_of_no_runs_is_all_undecided():
    a = horizon.analyse_horizon(loaded={}, stand_ins={})
    n, w = horizon_report.numbers(a), horizon_report.words(a)
    assert np.isnan(n["corruption_peak_encoder"]) and n["long_seeds"] == 0 and n["collapse_runs_collapsed"] == 0
    assert {w[k] for k in w if k.startswith("primary, ")} == {"undecided"}
    assert {w[k] for k in w if k.startswith("collapse, ")} == {"–"}
    assert {w[k] for k in w if k.startswith("account, ")} == {"not distinguished"}
    assert w["unigram check"] == "–"


@pytest.mark.slow
@pytest.mark.committed
def test_the_tables_a_reader_sees_name_things_in_words():
    a = horizon_report.analyse()
    assert not horizon_report.collapse_table(a)["cell"].str.contains("-native|-causal").any()
    assert set(horizon_report.horizons_table(a)["1280 steps"]) <= {"negative", "positive", "indistinguishable",
                                                                    "not reached"}
    assert len(horizon_report.contrasts_table(a)) == 2 + 11          # the collapse part's primary and secondary rows
    assert set(horizon_report.accounts_table(a)["account"]) == set(horizon_report.ACCOUNT_NAMES.values())
    assert len(horizon_report.untrained_runs()) == 52 - horizon_report.numbers(a)["runs_done"]


def test_long_seeds_reads_the_most_complete_seeds_of_the_long_part_only():
    import pandas as pd
    from types import SimpleNamespace
    contrasts = pd.DataFrame({"part": ["collapse", "long", "long", "long"],
                              "kind": ["encoder", "decoder", "decoder", "encoder"],
                              "n_seeds": [9, 3, 4, 2]})
    a = SimpleNamespace(contrasts=contrasts)
    assert horizon_report.long_seeds(a) == 4                   # the collapse part's 9 seeds are not the long part's
    assert horizon_report.long_seeds(a, "decoder") == 4
    assert horizon_report.long_seeds(a, "encoder") == 2
    assert horizon_report.long_seeds(SimpleNamespace(contrasts=contrasts.iloc[:1])) == 0
