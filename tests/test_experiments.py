"""The experiments' designs (tanbias.lab.experiments): names, configs, and what is committed."""
from __future__ import annotations

import pytest

from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab.config import KINDS, REGIMES, RunConfig
from tanbias.lab.experiments import (CONTROL_RUNS, alias_names, causal_names, DOSE_LEVELS, DOSE_SEEDS, SWEEP_SEEDS, design_config, dose_config,
                                     dose_names, parse_dose_name, parse_sweep_name, rivals_names, sweep_config, sweep_names)
from tanbias.lab.pipeline import alias_configs, causal_configs, dose_configs, rivals_configs, sweep_configs


def test_names_parse_back():
    for kind in KINDS:
        for regime in REGIMES:
            assert parse_sweep_name(sweep_config(kind, regime, 2).name) == (kind, regime, 2)
        for level in DOSE_LEVELS:
            assert parse_dose_name(dose_config(kind, level, 1).name) == (kind, level, 1)
    with pytest.raises(ParameterError, match="not a sweep run"):
        parse_sweep_name("decoder-natural-seed0")
    with pytest.raises(ParameterError, match="not a dose run"):
        parse_dose_name("dose-decoder-b50-s0")
    with pytest.raises(ParameterError, match="not a run of the lab's experiments"):
        design_config("my-run")


def test_every_design_function_returns_a_full_config():
    for cfg in (sweep_config("encoder", "natural", 0), dose_config("decoder", "uniform", 2),
                design_config(CONTROL_RUNS[0])):
        assert isinstance(cfg, RunConfig) and cfg.steps == 320 and cfg.size.name == "small"
    assert dose_config("decoder", "uniform", 2).temperature == float("inf")
    assert design_config(CONTROL_RUNS[1]).schedule == "constant"
    smoke = dose_config("decoder", "b37", 0, steps=6, size="smoke", languages=["en", "de"])
    assert smoke.languages == ("en", "de") and set(smoke.language_weights) == {"en", "de"}


def test_dose_names_and_order():
    names = dose_names()
    assert len(names) == len(DOSE_SEEDS) * len(KINDS) * len(DOSE_LEVELS)
    assert names[:4] == [f"dose-decoder-{lv}-s0" for lv in ("skewed", "b16", "b37", "b100")]
    token = [n for n in names if "token" in DOSE_LEVELS[n.split("-")[2]]["knobs"]]
    assert names[:len(token)] == token                   # the token knob first, every seed
    assert [int(n.split("-s")[-1]) for n in token] == sorted(int(n.split("-s")[-1]) for n in token)
    assert len(sweep_names()) == len(SWEEP_SEEDS) * len(KINDS) * len(REGIMES)


def test_the_committed_config_files_are_what_the_designs_write():
    committed = sorted(p.stem for p in (runs.RUNS_DIR / "configs").glob("*.json"))
    designed = sorted([*sweep_names(), *CONTROL_RUNS, *dose_names(), *causal_names(), *alias_names(),
                       *rivals_names()])
    assert committed == designed
    for path in [*sweep_configs(write=False), *dose_configs(write=False), *causal_configs(write=False),
                 *alias_configs(write=False), *rivals_configs(write=False)]:
        assert path.read_text() == design_config(path.stem).to_json(), path


def test_every_committed_run_was_trained_with_its_design():
    names = runs.list_runs()
    assert len(names) >= 56
    for name in names:
        assert runs.read_config(name) == design_config(name), name
