"""The rivals experiment's design (tanbias.lab.analysis.rivals_design, tanbias.lab.experiments)."""
from __future__ import annotations

import hashlib

import pytest

from tanbias.lab import runs
from tanbias.lab.analysis import rivals_design as rd
from tanbias.lab.analysis.rivals import SECONDARY
from tanbias.lab.experiments import RIVALS, RIVALS_ARMS, RIVALS_HEADS, RIVALS_SEEDS, causal_config, rivals_config

REGISTRATION = runs.ROOT / "data" / "preregistration" / "rivals.toml"
POSTHOC = runs.ROOT / "data" / "preregistration" / "rivals-posthoc.toml"
#: the pin of the rules added after the data (rivals-posthoc.toml), kept here as well as in the design
POSTHOC_SHA256 = "c58a4a9a9e4c52d18563ccfda96ce54ef24a46ff09852bbcbad976ec5b5b7054"


@pytest.fixture(scope="module")
def design():
    """The design's numbers from the committed causal runs (a few seconds: read once)."""
    return rd.design_numbers(rd.power_analysis())


def test_the_registration_is_pinned_and_reads():
    assert hashlib.sha256(REGISTRATION.read_bytes()).hexdigest() == rd.REGISTRATION_SHA256
    reg = rd.registration()
    assert set(reg["accounts"]) == {"tangent_bias", "unigram_first", "rogue_dimensions", "common_drift",
                                    "output_bottleneck", "measurement"}
    for account in reg["accounts"].values():
        assert {"predicts", "supported", "against", "otherwise"} <= set(account)
    assert len(reg["rule"]["primary"]["contrasts"]) * 2 == rd.PRIMARY_FAMILY
    assert len(reg["rule"]["secondary"]["contrasts"]) * 2 == 36


def test_the_rules_added_after_the_data_are_pinned_dated_and_name_every_word():
    from tanbias.lab.analysis import registered

    assert hashlib.sha256(POSTHOC.read_bytes()).hexdigest() == POSTHOC_SHA256 == RIVALS.posthoc_sha256
    post = registered.registration(RIVALS, posthoc=True)
    assert post["meta"]["date"] == "2026-12-05"
    assert {"halves", "survives", "partly_survives"} <= set(post["words"])
    assert {"keeps_spreading_out", "settles", "narrows", "ends_above"} <= set(post["long_runs"])


def test_the_design_trains_every_registered_cell_once():
    names = RIVALS.names()
    assert len(names) == len(set(names)) == 100
    cells = [(k, *c.split("-"), s) for k, c, s in map(RIVALS.parse, names)]
    for kind in RIVALS_SEEDS:
        for arm in RIVALS_ARMS:
            for head in RIVALS_HEADS:
                got = sorted(s for k, h, a, s in cells if (k, h, a) == (kind, head, arm))
                assert got == list(RIVALS_SEEDS[kind][arm])
    assert sum(a == "long" for _, _, a, _ in cells) == 8
    # seeds 0..4 of every cell come before the encoder's further seeds and the long runs
    first_late = min(i for i, (_, _, a, s) in enumerate(cells) if s >= 5 or a == "long")
    assert all(s < 5 and a != "long" for _, _, a, s in cells[:first_late])


def test_a_standard_head_cell_is_its_committed_twin_but_for_the_name():
    for arm in ("control", "proxy", "random"):
        twin = runs.read_config(runs.run_dir(f"causal-encoder-{arm}-s2"))
        mine = rivals_config("encoder", f"standard-{arm}", 2)
        assert mine == twin.replace(name=mine.name)
    twin = runs.read_config(runs.run_dir("alias-decoder-k3-s4"))
    mine = rivals_config("decoder", "standard-k3", 4)
    assert mine == twin.replace(name=mine.name)
    assert rivals_config("decoder", "unigram-proxy", 0) == causal_config("decoder", "proxy", 0).replace(
        name="rivals-decoder-unigram-proxy-s0", output_bias="unigram")


@pytest.mark.slow
def test_the_power_of_the_registered_seeds_is_the_registrations(design):
    n = design
    assert n["sd_encoder"] == pytest.approx(0.121, abs=0.0005) and n["sd_df_encoder"] == 55
    assert n["sd_decoder"] == pytest.approx(0.057, abs=0.0005) and n["sd_df_decoder"] == 24
    assert n["seeds_encoder"] == 8 and n["power_encoder"] >= rd.TARGET_POWER > n["power_fewer_encoder"]
    assert n["seeds_decoder"] == 5 and n["power_decoder"] >= rd.TARGET_POWER


def test_the_secondary_power_is_reported_for_the_cells_with_fewer_seeds(design):
    import re
    family = rd.registration()["rule"]["secondary"]["family"]
    assert rd.secondary_family() == int(re.search(r"\((\d+) contrasts\)", family).group(1))
    assert rd.secondary_family() == 2 * len(SECONDARY)         # the analysis reads the same family
    n = design
    assert n["seeds_few"] == 5
    for kind in ("encoder", "decoder"):
        # a stricter threshold loses power; fewer seeds than the primary cells' lose power too
        assert 0 < n[f"power_secondary_{kind}"] < n[f"power_last_{kind}"] <= 1
    assert n["power_secondary_encoder"] < n["power_fewer_encoder"] < n["power_encoder"]
    # the registration's budget line: full power is not bought for the encoder's secondary contrasts
    assert n["power_secondary_encoder"] < rd.TARGET_POWER
