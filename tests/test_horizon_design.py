"""The horizon experiment's design (tanbias.lab.analysis.horizon_design, tanbias.lab.experiments.HORIZON)."""
from __future__ import annotations

import hashlib
import re
import pytest

from tanbias.lab import runs
from tanbias.lab.analysis import horizon_design as hd
from tanbias.lab.experiments import (HORIZON, HORIZON_COLLAPSE, HORIZON_LONG, HORIZON_SEEDS, HORIZON_STEPS, RUN_STEPS,
                                     rivals_config)

REGISTRATION = runs.ROOT / "data" / "preregistration" / "horizon.toml"
POSTHOC = runs.ROOT / "data" / "preregistration" / "horizon-posthoc.toml"
LONG_STAGE = runs.ROOT / "data" / "preregistration" / "horizon-long.toml"
#: the pin of the long part's second design (horizon-long.toml), kept here as well as in the stage
LONG_STAGE_SHA256 = "c1ac5e210243b8485ab0c1aa066a6864eb7810b74e43dedfabdbbe7599407874"
#: the pin of what was decided after the data (horizon-posthoc.toml), kept here as well as in the design
POSTHOC_SHA256 = "4ba4d69bfec5009348a26d85c90a40eac9f9805196d091d4599924abd4390a17"
#: chapter 13's realised residual SDs, as its committed runs give them (rivals_posthoc.realised_power)
SD = {"decoder": 0.078353, "encoder": 0.244841}


def test_the_registration_is_pinned_and_names_every_account_and_contrast():
    assert hashlib.sha256(REGISTRATION.read_bytes()).hexdigest() == hd.REGISTRATION_SHA256
    reg = hd.registration()
    assert reg["meta"]["date"] == "2026-12-05"
    assert set(reg["accounts"]) - {"word"} == {"tangent_bias", "unigram_first", "mask_token", "self_attention",
                                               "mask_mixing"}
    primary = reg["rule"]["primary"]["contrasts"]
    per_kind = sum(2 if "(encoder, decoder)" in c else 1 for c in primary)
    assert per_kind == hd.PRIMARY_FAMILY == 8
    assert f"{hd.PRIMARY_FAMILY} contrasts" in reg["rule"]["primary"]["family"]


def test_what_was_decided_after_the_data_is_pinned_dated_and_changes_no_registered_word():
    from tanbias.lab.analysis import registered

    assert hashlib.sha256(POSTHOC.read_bytes()).hexdigest() == POSTHOC_SHA256 == HORIZON.posthoc_sha256
    post = registered.registration(HORIZON, posthoc=True)
    assert post["meta"]["date"] > hd.registration()["meta"]["date"]
    assert {"accounts", "check", "budget"} <= set(post)


def test_the_long_stage_is_pinned_dated_and_trains_every_decoder_seed_before_any_encoder_run():
    """horizon-long.toml amends the long part only: its own budget and record, the decoders first, a seed
    at a time (every cell of a seed before the next), fp32 as registered."""
    from tanbias.lab.analysis import registered
    from tanbias.lab.experiments import HORIZON_LONG_STAGE as st

    assert hashlib.sha256(LONG_STAGE.read_bytes()).hexdigest() == LONG_STAGE_SHA256 == st.registration_sha256
    reg = registered.load_registration(st.registration, st.registration_sha256)
    assert reg["meta"]["date"] > hd.registration()["meta"]["date"]
    assert f"{st.budget_hours:g} h" in reg["queue"]["budget"] and st.budget_hours == 16
    assert reg["precision"]["choice"].startswith("float32")
    names = HORIZON.names(stage="long")
    assert len(names) == 4 * (len(HORIZON_SEEDS["decoder"]["long"]) + len(HORIZON_SEEDS["encoder"]["long"]))
    kinds = [n.split("-")[1] for n in names]
    assert kinds == sorted(kinds, key=lambda k: k != "decoder")
    seeds = [int(n.rsplit("-s", 1)[1]) for n in names if "-decoder-" in n]
    assert seeds == sorted(seeds) and names[:4] == [HORIZON.run_name("decoder", c, 0) for c in HORIZON_LONG]
    # the design's own queue keeps the collapse part only, which was trained under horizon.toml
    assert all(any(c in n for c in HORIZON_COLLAPSE) for n in HORIZON.names(stage=""))


@pytest.mark.slow
def test_the_registered_power_is_what_the_realised_sds_give():
    """The numbers [power].result states, recomputed from the SDs (a changed design or SD fails here)."""
    p = hd.power_analysis(sd=SD).set_index(["kind", "seeds"])
    result = hd.registration()["power"]["result"]
    dec, enc = p.loc[("decoder", 5)], p.loc[("encoder", 4)]
    assert bool(dec["chosen"]) and bool(enc["chosen"])
    assert f"power {dec['power']:.2f}" in result and f"x{dec['detectable']:.2f}" in result
    assert f"power {enc['power']:.2f}" in result and f"x{enc['detectable']:.2f}" in result
    needed = min(n for n in range(4, 60) if hd.power_analysis(seeds=[n], sd=SD).iloc[0]["power"] >= 0.8)
    assert f"{needed} seeds" in result
    assert p.loc[("decoder", 4), "power"] < 0.8 <= dec["power"]


def test_the_grid_and_the_queue_are_the_registered_ones():
    reg = hd.registration()["design"]
    names = HORIZON.names()
    counts = {k: len(HORIZON_SEEDS[k]["long"]) for k in HORIZON_SEEDS}
    assert len(names) == 4 * counts["decoder"] + 4 * counts["encoder"] + 4 * len(HORIZON_SEEDS["encoder"]["collapse"])
    assert f"0..{counts['decoder'] - 1} in each long cell ({counts['decoder']})" in reg["seeds"]["decoder"]
    # the collapse cells first (amended before any outcome), then the long runs
    first_long = min(i for i, n in enumerate(names) if re.search(r"-(standard|unigram)-", n))
    assert first_long == 4 * len(HORIZON_SEEDS["encoder"]["collapse"])
    assert all(re.search(r"-(standard|unigram)-", n) for n in names[first_long:])
    assert "collapse cells first" in reg["order"]
    assert not any("decoder" in n and any(c in n for c in HORIZON_COLLAPSE) for n in names)


def test_a_long_cell_is_the_rivals_cell_at_four_times_the_steps_and_a_collapse_cell_its_encoder_control():
    for kind in ("encoder", "decoder"):
        for cell in HORIZON_LONG:
            c = HORIZON.config(kind, cell, 1)
            twin = rivals_config(kind, cell, 1, steps=HORIZON_STEPS)
            assert c.steps == HORIZON_STEPS and RUN_STEPS - 1 in c.probe.grid(c.steps)
            assert c.replace(name=twin.name, probe={"n_steps": twin.probe.n_steps, "extra_steps": ()}) == twin
    base = rivals_config("encoder", "standard-control", 2)
    for cell in HORIZON_COLLAPSE:
        c = HORIZON.config("encoder", cell, 2)
        corruption, attention = cell.split("-")
        assert (c.corruption, c.attention, c.steps) == (corruption, attention, RUN_STEPS)
        assert c.replace(name=base.name, corruption="mask", attention="native") == base
