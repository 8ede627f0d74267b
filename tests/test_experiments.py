"""The experiments' designs (tanbias.lab.experiments): names, configs, queues, the registry, and what is committed."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab.config import KINDS, RunConfig
from tanbias.lab.experiments import (ALIAS, CAUSAL, CONTROL_RUNS, DOSE, DOSE_LEVELS, EXPERIMENTS, SWEEP, design_config,
                                     design_of, dose_config, sweep_config)
from tanbias.lab.pipeline import experiment_configs

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("design", EXPERIMENTS.values(), ids=list(EXPERIMENTS))
def test_every_cell_has_a_name_that_parses_back_to_it(design):
    cells = design.cells()
    assert len(cells) == sum(len(design.levels_of(k, s)) for k in KINDS for s in design.seeds[k])
    for kind, level, seed, run in cells:
        name = design.run_name(kind, level, seed)
        assert design.parse(name) == (kind, level, seed) and design_of(name) is design
        assert design.config(kind, level, seed).name == name           # the config names its run
        assert run == name or run in EXPERIMENTS[run.split("-")[0]].names()   # or another design trains it
    names = design.names()
    assert len(names) == len(set(names)) and set(names) <= {run for *_, run in cells}


def test_a_name_of_no_design_is_refused_naming_the_forms():
    with pytest.raises(ParameterError, match="not a run of the 2x2 sweep"):
        SWEEP.parse("decoder-natural-seed0")
    with pytest.raises(ParameterError, match="not a run of the dose experiment"):
        DOSE.parse("dose-decoder-b50-s0")
    with pytest.raises(ParameterError, match="encoder: control"):      # the rival arm is the decoder's
        CAUSAL.parse("causal-encoder-tied-s0")
    with pytest.raises(ParameterError, match="not a run of the lab's experiments"):
        design_config("my-run")
    with pytest.raises(ParameterError, match="level"):
        ALIAS.run_name("decoder", "k9", 0)


def test_every_design_function_returns_a_full_config():
    for cfg in (sweep_config("encoder", "natural", 0), dose_config("decoder", "uniform", 2),
                design_config(CONTROL_RUNS[0])):
        assert isinstance(cfg, RunConfig) and cfg.steps == 320 and cfg.size.name == "small"
    assert dose_config("decoder", "uniform", 2).temperature == float("inf")
    assert design_config(CONTROL_RUNS[1]).schedule == "constant"
    smoke = DOSE.config("decoder", "b37", 0, steps=6, size="smoke", languages=["en", "de"])
    assert smoke.languages == ("en", "de") and set(smoke.language_weights) == {"en", "de"}
    assert SWEEP.config("decoder", "natural", 1, steps=6).steps == 6


def test_the_queues_train_in_their_stated_order():
    names = DOSE.names()
    assert len(names) == len(DOSE.seeds["decoder"]) * len(KINDS) * len(DOSE_LEVELS)
    assert names[:4] == [f"dose-decoder-{lv}-s0" for lv in ("skewed", "b16", "b37", "b100")]
    token = [n for n in names if "token" in DOSE_LEVELS[n.split("-")[2]]["knobs"]]
    assert names[:len(token)] == token                   # the token knob first, every seed
    assert [int(n.split("-s")[-1]) for n in token] == sorted(int(n.split("-s")[-1]) for n in token)
    assert SWEEP.names(seeds=(0,)) == ["decoder-balanced-s0", "decoder-natural-s0", "encoder-balanced-s0",
                                       "encoder-natural-s0"]
    causal = CAUSAL.names()
    assert causal[:7] == [f"causal-decoder-{a}-s0" for a in CAUSAL.levels["decoder"]]
    assert all(n.startswith("causal-decoder") for n in causal[:35])        # the decoder's seeds first
    # the aliasing knob's k0 cells that the causal test has are its control runs, never trained again
    assert ALIAS.names(seeds=(0,)) == [f"alias-{k}-k{i}-s0" for k in ("decoder", "encoder") for i in (1, 2, 3)]
    assert ALIAS.run("decoder", "k0", 6) == "alias-decoder-k0-s6" and ALIAS.run("decoder", "k0", 4).startswith("causal")


@pytest.mark.slow
def test_the_committed_config_files_are_what_the_designs_write():
    committed = sorted(p.stem for p in (runs.RUNS_DIR / "configs").glob("*.json"))
    designed = sorted([*CONTROL_RUNS, *(n for d in EXPERIMENTS.values() for n in d.names())])
    assert committed == designed
    for design in EXPERIMENTS.values():
        for path in experiment_configs(design, write=False):
            assert path.read_text() == design_config(path.stem).to_json(), path


def test_every_committed_run_was_trained_with_its_design():
    names = runs.list_runs()
    assert len(names) >= 56
    for name in names:
        assert runs.read_config(name) == design_config(name), name


def test_every_experiment_is_a_command_and_a_make_target():
    """A new experiment is one registry entry: the command line reads the registry, and the Makefile's
    list of experiment targets is the registry's."""
    from tanbias.lab.__main__ import parser

    commands = next(a for a in parser()._actions if a.dest == "command").choices
    assert set(EXPERIMENTS) <= set(commands)
    # the Makefile reads its targets from the registry's line (a Design's variable is its name in capitals)
    listed = subprocess.run(["make", "-s", "--no-print-directory", "list-experiments"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    assert listed == list(EXPERIMENTS)
    dry = subprocess.run(["make", "-n", listed[-1]], cwd=ROOT, capture_output=True, text=True)
    assert f"-m tanbias.lab {listed[-1]} --jobs 2 --commit" in dry.stdout, dry.stderr
