"""The aliasing knob's design (chapter 11): the registration as committed before the first
run, the levels recomputed from the corpus, the seeds from the power analysis, the shared k0 cells."""
from __future__ import annotations

import hashlib

import pytest

from tanbias.errors import CorruptFileError
from tanbias.lab.analysis import alias_design as ad
from tanbias.lab.analysis.registered import REGISTRATION_DIR, load_registration
from tanbias.lab.experiments import (ALIAS, ALIAS_LEVELS, ALIAS_SEEDS, CAUSAL_SEEDS, alias_config, causal_config,
                                     design_config)

#: the sha256 of data/preregistration/alias.toml, committed before the first aliasing run
ALIAS_REGISTRATION_SHA256 = "7d3e6a5f68c2e1cb94295431c6b1e9e5b9ae8c994d33f42e58a0545ec75a0dc0"


def test_the_registration_is_the_committed_one_and_holds_every_rule():
    raw = (REGISTRATION_DIR / "alias.toml").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == ALIAS_REGISTRATION_SHA256 == ALIAS.registration_sha256
    reg = ad.registration()
    assert {"learning", "balancing", "convergence"} <= set(reg["rule"])
    assert reg["rule"]["alpha"] == 0.05
    assert {p["alias"]["sign"] for p in reg["predictions"].values()} >= {"+", "-", "0", "less", "?"}
    assert len(reg["rule"]["readings"]) == len(ad.ALIAS_READINGS)


def test_an_altered_registration_is_refused(tmp_path):
    (tmp_path / "alias.toml").write_bytes((REGISTRATION_DIR / "alias.toml").read_bytes().replace(b"0.68", b"0.70"))
    with pytest.raises(CorruptFileError, match="sha256"):
        load_registration("alias", ALIAS.registration_sha256, directory=tmp_path)


def test_the_levels_are_the_registered_calculation_and_match_the_direct_knob():
    e = ad.expected_concentration().set_index("level")
    reg = ad.registration()["design"]["levels"]
    for level, gamma in ALIAS_LEVELS.items():
        assert reg[level]["gamma"] == gamma
        assert e.loc[level, "collision"] == pytest.approx(reg[level]["collision"], rel=2e-3)
        assert e.loc[level, "ratio"] == pytest.approx(reg[level]["ratio"], abs=6e-3)
        assert (e.loc[level, "extra_rows"], e.loc[level, "k_max"]) == (reg[level]["extra_rows"], reg[level]["k_max"])
    assert e.loc["k3", "ratio"] >= 10                                   # the registration's "at least 10x"
    # three roughly equal steps on the log scale, each within 10 % of the direct knob's level
    assert ((e["ratio"] / e["token_ratio"]).between(0.9, 1.1)).all()


@pytest.mark.slow
@pytest.mark.committed
def test_the_seeds_are_what_the_power_analysis_on_chapter_10s_runs_asks_for():
    p = ad.power_analysis(seeds=range(4, 11))
    late = p[p["metric"] == ad.POWER_READING]
    worst = late[late["residual_sd"] == late["residual_sd"].max()].set_index("seeds")
    n = len(ALIAS_SEEDS)
    assert worst.loc[n, "power"] >= ad.TARGET_POWER > worst.loc[n - 1, "power"]
    assert 0.145 < worst["residual_sd"].iloc[0] < 0.155                  # the registration's 0.151
    assert (p["power_holm"] <= p["power"]).all()


def test_k0_cells_are_the_causal_control_runs_where_they_exist_and_differ_only_by_name():
    for kind in ("encoder", "decoder"):
        for seed in ALIAS_SEEDS:
            run = ALIAS.run(kind, "k0", seed)
            if seed in CAUSAL_SEEDS[kind]:
                assert run == f"causal-{kind}-control-s{seed}"
                a, b = alias_config(kind, "k0", seed).to_dict(), causal_config(kind, "control", seed).to_dict()
                assert {k for k in a if a[k] != b[k]} == {"name"}
            else:
                assert run == f"alias-{kind}-k0-s{seed}" and run in ALIAS.names()
    assert len(ALIAS.cells()) == len(ALIAS_SEEDS) * len(ALIAS_LEVELS) * 2
    names = ALIAS.names()
    assert len(names) == len(set(names)) == len(ALIAS.cells()) - sum(s in CAUSAL_SEEDS[k] for k in ("encoder", "decoder")
                                                                     for s in ALIAS_SEEDS)
    for name in names:
        assert design_config(name).name == name


def test_every_level_of_a_seed_differs_only_by_the_alias_exponent():
    base = alias_config("encoder", "k0", 2).to_dict()
    for level in ALIAS_LEVELS:
        c = alias_config("encoder", level, 2).to_dict()
        assert {k for k in c if c[k] != base[k]} <= {"name", "alias"}
