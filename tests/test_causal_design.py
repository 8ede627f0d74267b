"""The causal test's design (chapter 12): the registration as committed, and the power analysis
that chose the seeds, recomputed from chapter 10's committed runs."""
from __future__ import annotations

import hashlib

import pytest

from tanbias.errors import CorruptFileError
from tanbias.lab.analysis import causal_design as cd
from tanbias.lab.analysis.registered import REGISTRATION_DIR, contrast_power, load_registration, seeds_needed
from tanbias.lab.experiments import CAUSAL, CAUSAL_SEEDS, causal_arms, causal_config

#: the sha256 of data/preregistration/causal.toml, committed before the first causal run
CAUSAL_REGISTRATION_SHA256 = "2d7a55d85a14d4e185913621b0afd50e5c29a85026b0fdacabd12fffa4a8802c"
#: the sha256 of data/preregistration/causal-posthoc.toml, the reading added after 86 runs were seen
CAUSAL_POSTHOC_SHA256 = "a57806285d45b86a2ffbb7244a5f041e1e0b17e4d5007b38dcc5bf7ae23b1d43"


def test_the_registration_is_the_committed_one_and_holds_every_rule():
    raw = (REGISTRATION_DIR / "causal.toml").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == CAUSAL_REGISTRATION_SHA256
    assert CAUSAL.registration_sha256 == CAUSAL_REGISTRATION_SHA256
    reg = cd.registration()
    assert {"causal", "early", "reinforcing", "rivals", "cost"} <= set(reg["rule"])
    assert reg["rule"]["early"]["threshold"] == 0.5 and reg["rule"]["alpha"] == cd.ALPHA


def test_the_post_hoc_reading_is_pinned_dated_and_names_what_it_was_written_after():
    raw = (REGISTRATION_DIR / "causal-posthoc.toml").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == CAUSAL_POSTHOC_SHA256 == CAUSAL.posthoc_sha256
    ph = cd.posthoc()
    assert ph["meta"]["date"] == "2026-12-03" and "86 committed causal runs" in ph["meta"]["written_after"]
    assert {"progress", "level", "value", "interval", "words"} <= set(ph["matched_progress"])
    assert "NOT pre-registered" in raw.decode()


def test_an_altered_registration_is_refused(tmp_path):
    (tmp_path / "causal.toml").write_bytes((REGISTRATION_DIR / "causal.toml").read_bytes() + b"\n")
    with pytest.raises(CorruptFileError, match="sha256"):
        load_registration("causal", CAUSAL.registration_sha256, directory=tmp_path)


@pytest.mark.slow
@pytest.mark.committed
def test_the_seeds_are_what_the_power_analysis_on_chapter_10s_runs_asks_for():
    p = cd.power_analysis(seeds=range(4, 14))
    chosen = p[p["chosen"]].set_index("kind")
    for kind in ("encoder", "decoder"):
        assert chosen.loc[kind, "needed"] == len(CAUSAL_SEEDS[kind]), kind
        assert chosen.loc[kind, "power"] >= cd.TARGET_POWER
        fewer = p[(p["kind"] == kind) & (p["seeds"] == len(CAUSAL_SEEDS[kind]) - 1)]
        assert len(CAUSAL_SEEDS[kind]) == 5 or float(fewer["power"].iloc[0]) < cd.TARGET_POWER
    # the registration quotes the same SDs
    assert 0.14 < chosen.loc["encoder", "sd"] < 0.15 and 0.09 < chosen.loc["decoder", "sd"] < 0.095


@pytest.mark.slow
@pytest.mark.committed
def test_power_is_read_at_holms_first_threshold_over_the_family():
    alpha = cd.ALPHA / cd.FAMILY
    p = cd.power_analysis(seeds=(5,))
    for kind, row in p.set_index("kind").iterrows():
        assert row["power"] == contrast_power(cd.TARGET_RATIO, row["sd"], 5, row["arms"], alpha)
        assert row["needed"] == seeds_needed(row["sd"], row["arms"], cd.TARGET_RATIO, cd.TARGET_POWER, alpha)


def test_every_arm_of_a_seed_shares_the_base_config_and_differs_only_by_its_intervention():
    base = causal_config("decoder", "control", 3)
    for arm in causal_arms("decoder"):
        c = causal_config("decoder", arm, 3)
        assert CAUSAL.parse(c.name) == ("decoder", arm, 3)
        diff = {k for k, v in c.to_dict().items() if base.to_dict()[k] != v}
        assert diff <= {"name", "surgery", "tie_embeddings"}, (arm, diff)
        assert (c.surgery is None) == (arm in ("control", "tied"))
        assert c.tie_embeddings == (arm == "tied")
    assert "tied" not in causal_arms("encoder")
    names = CAUSAL.names()
    assert len(names) == len(set(names)) == 5 * 7 + 12 * 6


def test_the_config_files_of_a_smoke_causal_test_are_written_in_design_order(tmp_path):
    from tanbias.lab.config import load_config
    from tanbias.lab.pipeline import experiment_configs

    paths = experiment_configs(CAUSAL, tmp_path, seeds=(0, 1), kinds=("decoder",), steps=8, size="smoke",
                               languages=["en"])
    assert [p.stem for p in paths] == CAUSAL.names(seeds=(0, 1), kinds=("decoder",))
    cfg = load_config(paths[1])
    assert cfg.name == "causal-decoder-proxy-s0" and cfg.surgery.arm == "proxy" and cfg.steps == 8
    assert cfg.surgery.rank == 8 and cfg.size.name == "smoke"
