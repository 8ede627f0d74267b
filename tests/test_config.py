"""The typed run config (tanbias.lab.config): validation, derived defaults, JSON round trips."""
from __future__ import annotations

import dataclasses
import json

import pytest

from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab.config import (LATER_KEYS, SIZES, ModelSize, ProbeSettings, RunConfig, load_config, model_size)

SMOKE = {"name": "smoke-test", "kind": "encoder", "size": "smoke", "steps": 12, "checkpoint_every": 4,
         "eval_batches": 2, "probe": {"n_steps": 5, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}


@pytest.mark.parametrize("override,match", [
    ({"lr": 0}, r"lr=0 is out of range: valid range is \(0, inf\)"),
    ({"lr": -1e-3}, r"lr=-0.001 is out of range"),
    ({"probe": {"rank": 0}}, r"probe.rank=0 is out of range: valid range is \[1, 16\]"),
    ({"probe": {"rank": 32}}, r"probe.rank=32 is out of range: valid range is \[1, 16\]"),
    ({"probe": {"layers": [3]}}, r"probe.layers=3 is out of range: valid range is \[0, 2\]"),
    ({"probe": {"n_steps": 13}}, r"probe.n_steps=13 is out of range: valid range is \[2, 12\]"),
    ({"probe": {"tokens": 129}}, r"probe.tokens=129 is out of range: valid range is \[16, 128\]"),
    ({"probe": {"colour": 1}}, r"colour=1 is not allowed"),
    ({"colour": 1}, r"colour=1 is not allowed: valid range is the config keys"),
    ({"steps": 1}, r"steps=1 is out of range"),
    ({"kind": "seq2seq"}, r"kind"),
    ({"size": "huge"}, r"size='huge'"),
    ({"schedule": "linear"}, r"schedule='linear'"),
    ({"precision": "fp8"}, r"precision='fp8'"),
    ({"temperature": 0.5}, r"temperature=0.5 is out of range: valid range is \[1, inf\]"),
    ({"temperature": "hot"}, r"temperature='hot'.*\[1, inf\]"),
    ({"flatten": 1.5}, r"flatten=1.5 is out of range: valid range is \[0, 1\]"),
    ({"flatten_f0": 0}, r"flatten_f0=0 is out of range: valid range is \(0, 1\)"),
    ({"language_weights": {"en": -1}}, r"language_weights=.*positive weight"),
    ({"languages": "en"}, r"languages='en'"),
    ({"probe_eval_batches": -1}, r"probe_eval_batches=-1"),
    ({"name": "a/b"}, r"name='a/b' is not allowed"),
])
def test_bad_values_name_the_field_the_value_and_the_range(override, match):
    cfg = {**SMOKE, **override}
    if "probe" in override:
        cfg["probe"] = {**SMOKE["probe"], **override["probe"]}
    with pytest.raises(ParameterError, match=match):
        RunConfig.from_dict(cfg)


def test_a_config_is_frozen_and_read_by_attribute():
    cfg = RunConfig.from_dict(SMOKE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.steps = 3
    with pytest.raises(AttributeError):
        cfg.stpes                                        # a typo fails where it is made
    assert cfg.size is SIZES["smoke"] and cfg.size.hidden_size == 32
    assert cfg.tokens_per_step == cfg.size.batch_size * cfg.size.seq_len == 128
    assert cfg.lr == SIZES["smoke"].lr and cfg.warmup_steps == 1


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("steps", [2, 12, 16, 240])
def test_defaults_fit_every_size_and_every_number_of_steps(size, steps):
    """A config that names only a size and a number of steps is valid: the probe's defaults
    are derived from them (no more probe steps than steps, no more tokens than a batch)."""
    cfg = RunConfig.from_dict({"name": "x", "size": size, "steps": steps})
    assert cfg.probe.n_steps == min(14, steps) and cfg.probe.tokens == min(4096, cfg.tokens_per_step)
    assert cfg.probe.rank <= cfg.size.hidden_size // 2
    longer = cfg.replace(steps=steps + 100)              # derived, so derived again
    assert longer.probe.n_steps == min(14, steps + 100)
    fixed = RunConfig.from_dict({"name": "x", "size": size, "steps": 240, "probe": {"n_steps": 5}})
    assert fixed.replace(steps=300).probe.n_steps == 5   # a given value is kept


@pytest.mark.slow
def test_committed_run_configs_round_trip_byte_for_byte():
    paths = sorted(runs.RUNS_DIR.glob("*/config.json"))
    assert len(paths) >= 56
    for path in paths:
        text = path.read_text()
        cfg = RunConfig.from_dict(json.loads(text), stored=True)
        assert cfg.to_json() == text, path
        assert load_config(path) == cfg and runs.read_config(path.parent).to_json() == text


def test_a_run_trained_before_a_key_existed_keeps_its_default_and_its_form():
    d = RunConfig.from_dict(SMOKE).to_dict()
    old = {k: v for k, v in d.items() if k not in LATER_KEYS}
    cfg = RunConfig.from_dict(old, stored=True)
    assert cfg == RunConfig.from_dict(d)                 # the same run
    assert set(cfg.to_dict()) == set(old)                # written back as it was read
    assert set(cfg.replace(precision="bf16").to_dict()) == set(old) | {"precision"}
    assert set(RunConfig.from_dict(old).to_dict()) == set(d)   # a new config is written whole


def test_probe_settings_checked_against_the_model():
    p = ProbeSettings(rank=4, layers=[0, 2])
    assert p.layers == (0, 2) and p.checked(32, 2).layers == (0, 2)
    with pytest.raises(ParameterError, match="probe.min_count=2 is out of range"):
        ProbeSettings(local_rank=4, min_count=2).checked(32, 2)
    with pytest.raises(ParameterError, match="colour"):
        ProbeSettings.from_dict({"colour": 1})


def test_model_sizes():
    assert model_size("small") is SIZES["small"] and model_size(SIZES["base"]) is SIZES["base"]
    assert isinstance(SIZES["large"], ModelSize) and SIZES["large"].tokens_per_step == 16384
    with pytest.raises(ParameterError, match="size='tiny'"):
        model_size("tiny")


def test_load_config_names_a_run_after_its_file(tmp_path):
    path = tmp_path / "my-run.json"
    path.write_text(json.dumps({"kind": "decoder", "size": "smoke", "steps": 4}))
    assert load_config(path).name == "my-run"
    with pytest.raises(ParameterError, match="CONFIG="):
        load_config(tmp_path / "missing.json")


def test_the_output_bias_is_written_only_where_it_is_not_the_standard_head():
    std = RunConfig(name="x", size="smoke", steps=12)
    assert "output_bias" not in std.to_dict() and std.output_bias == "none"
    uni = std.replace(output_bias="unigram")
    assert uni.to_dict()["output_bias"] == "unigram"
    assert RunConfig.from_dict(json.loads(uni.to_json()), stored=True) == uni
    with pytest.raises(ParameterError, match="output_bias='zipf'.*none.*unigram"):
        std.replace(output_bias="zipf")
    with pytest.raises(ParameterError, match="tie_embeddings"):
        std.replace(output_bias="unigram", tie_embeddings=True)


def test_the_corruption_option_is_the_encoders_and_leaves_every_earlier_config_as_it_was():
    from tanbias.lab.config import CORRUPTIONS, RunConfig

    assert CORRUPTIONS == ("mask", "random")
    plain = RunConfig(name="x", kind="encoder", size="smoke", steps=4)
    assert plain.corruption == "mask" and "corruption" not in plain.to_dict()   # byte-identical config.json
    rand = RunConfig.from_dict({**plain.to_dict(), "corruption": "random"})
    assert rand.to_dict()["corruption"] == "random" and RunConfig.from_dict(rand.to_dict()) == rand
    with pytest.raises(ParameterError, match="corruption"):
        RunConfig(name="x", kind="decoder", size="smoke", corruption="random")
    with pytest.raises(ParameterError, match="corruption"):
        RunConfig(name="x", kind="encoder", size="smoke", corruption="noise")
