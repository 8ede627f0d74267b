"""The lab's constants and run configs: defaults, validation, sizes, special tokens (no torch).

The bottom layer of :mod:`tanbias.lab`: every other lab module reads its
constants from here, and nothing here imports another lab module. One
definition each:

* :data:`KINDS` (encoder = EuroBERT, masked LM; decoder = Llama, causal LM),
  :data:`REGIMES` (natural or temperature-balanced language mixture);
* :data:`SIZES` (model and batch shapes), :data:`MLM_PROBABILITY`;
* the tokenizer's special tokens :data:`SPECIAL_TOKENS`, their ids
  (``PAD_ID`` ... ``MASK_ID``) and :data:`N_SPECIAL` (ids below it are special);
* :data:`DEFAULT_CONFIG` of a training run, :func:`validate_config`,
  :func:`load_config`, :data:`REPRODUCE_TOLERANCE`;
* the sweep's run names (:data:`SWEEP_NAME_RE`, :func:`parse_run_name`),
  :data:`EARLY_FRAC` and :data:`MECH_SEED`;
* the dose-response experiment (chapter 10): :data:`SKEWED_WEIGHTS` (its
  natural, strongly skewed language mixture), :data:`DOSE_LEVELS` (the two
  knobs' levels), :data:`DOSE_SEEDS`, :data:`DOSE_NAME_RE`,
  :func:`parse_dose_name`, :func:`dose_config`.
"""
from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

from tanbias._checks import check_choice, check_int, check_real
from tanbias.errors import ParameterError

__all__ = ["KINDS", "REGIMES", "SIZES", "ARCH_KEYS", "MLM_PROBABILITY", "SPECIAL_TOKENS", "N_SPECIAL",
           "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID", "MASK_ID", "DEFAULT_CONFIG", "REPRODUCE_TOLERANCE",
           "EARLY_FRAC", "MECH_SEED", "SWEEP_NAME_RE", "SCHEDULES", "DEFAULT_TEMPERATURE",
           "SKEWED_WEIGHTS", "FLATTEN_F0", "DOSE_LEVELS", "DOSE_KNOBS", "DOSE_SEEDS", "DOSE_NAME_RE",
           "parse_dose_name", "dose_config", "dose_names", "check_temperature", "DEVICES", "PRECISIONS", "merge_config", "check_kind",
           "check_run_name", "parse_run_name", "validate_probe_settings", "validate_config",
           "load_config"]

KINDS = ("encoder", "decoder")
REGIMES = ("natural", "balanced")
SCHEDULES = ("cosine", "constant")
#: where a run computes (``auto``: CUDA when a GPU is visible, else the CPU) and in what precision
#: (``bf16``: bfloat16 autocast with float32 master weights and optimizer state)
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16")
MLM_PROBABILITY = 0.3
#: temperature of the "balanced" regime when a config does not set one (XLM-R's and mT5's 10/3)
DEFAULT_TEMPERATURE = 10.0 / 3.0
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>", "<mask>")
N_SPECIAL = len(SPECIAL_TOKENS)          # ids 0 .. N_SPECIAL - 1 are the special tokens
PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = range(N_SPECIAL)

# Shape of the models and of their training batches. "small" is the lab's
# workhorse (measured in :mod:`tanbias.lab.models`' docstring); "smoke" does a
# forward/backward in milliseconds, for tests.
SIZES: dict[str, dict] = {
    "small": dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=4,
                  intermediate_size=768, seq_len=128, batch_size=32, lr=2e-3),
    "smoke": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, seq_len=32, batch_size=4, lr=3e-3),
    # for a GPU (scripts/gpu_check.sh): the same family, about 38 M and 120 M parameters outside
    # the input embedding (output layer included); seconds per step measured in data/runs/sizes.json
    "base": dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8,
                 intermediate_size=2048, seq_len=256, batch_size=32, lr=1e-3),
    "large": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                  intermediate_size=3072, seq_len=512, batch_size=32, lr=6e-4),
}
ARCH_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")

DEFAULT_CONFIG: dict = {
    "name": None, "kind": "encoder", "size": "small", "regime": "natural", "languages": None, "seed": 0,
    # the mixture's natural word shares per language (None: the corpus' own sizes); the
    # "balanced" regime's temperature (None: DEFAULT_TEMPERATURE; "inf": uniform)
    "language_weights": None, "temperature": None,
    # the direct knob on token frequencies: an occurrence of a type with stream frequency f
    # is kept with probability min(1, (f / flatten_f0) ** -flatten); 0 keeps everything
    "flatten": 0.0, "flatten_f0": 1e-4,
    # held-out batches evaluated at every probe step (0: only the final evaluation)
    "probe_eval_batches": 0,
    # arithmetic of the forward and backward passes (PRECISIONS); the probe always captures float32
    "precision": "fp32",
    "steps": 240, "lr": None, "warmup": None, "schedule": "cosine", "weight_decay": 0.01,
    "checkpoint_every": 20, "eval_batches": 8, "threads": 1,
    "probe": {"enabled": True, "n_steps": 14, "tokens": 4096, "rank": 8, "local_rank": 4,
              "fit_fraction": 0.3, "n_controls": 20, "n_buckets": 3, "min_count": 8,
              "zeta": 0.1, "layers": None},
}

#: ``reproduce`` passes if every logged step's loss agrees within this absolute
#: tolerance (nats) and every alignment-table metric within ALIGN_RTOL relative.
REPRODUCE_TOLERANCE = {"loss_atol": 1e-4, "align_rtol": 1e-3, "align_atol": 1e-6}

#: probe steps with 0 < step/steps <= EARLY_FRAC are "early" (the frozen proxy's fitting window)
EARLY_FRAC = 0.3
#: seed of the common held-out text on which every run's radii are measured
MECH_SEED = 424_242
#: names of the 2x2 sweep's runs: ``<kind>-<regime>-s<seed>``
SWEEP_NAME_RE = re.compile(rf"^({'|'.join(KINDS)})-({'|'.join(REGIMES)})-s(\d+)$")

# ---------------------------------------------------------------- the dose-response experiment
#: The dose experiment's natural mixture: word shares halving from one language to the next
#: (English 50 %, German 25 %, ... Portuguese 0.4 %: 128x between the largest and the
#: smallest), one dominant language and a long tail as in web data.
SKEWED_WEIGHTS = {lang: 2.0 ** -i for i, lang in enumerate(("en", "de", "ru", "es", "it", "pl", "cs", "pt"))}
#: the direct knob's threshold frequency: types rarer than this are never subsampled
FLATTEN_F0 = 1e-4
#: The two knobs' levels. ``skewed`` (T = 1, nothing subsampled) is the common start of both;
#: the language knob raises the mixture's temperature to uniform, the token knob subsamples
#: frequent types with exponents chosen so that the stream's collision probability falls in
#: three equal steps on the log scale (measured: 0.0034, 0.0014, 0.00054, 0.00022).
DOSE_LEVELS: dict[str, dict] = {
    "skewed": {"knobs": ("language", "token"), "order": 0, "temperature": 1.0, "flatten": 0.0},
    "T2": {"knobs": ("language",), "order": 1, "temperature": 2.0, "flatten": 0.0},
    "T4": {"knobs": ("language",), "order": 2, "temperature": 4.0, "flatten": 0.0},
    "uniform": {"knobs": ("language",), "order": 3, "temperature": "inf", "flatten": 0.0},
    "b16": {"knobs": ("token",), "order": 1, "temperature": 1.0, "flatten": 0.16},
    "b37": {"knobs": ("token",), "order": 2, "temperature": 1.0, "flatten": 0.37},
    "b100": {"knobs": ("token",), "order": 3, "temperature": 1.0, "flatten": 1.0},
}
DOSE_KNOBS = ("language", "token")
#: seeds per cell, from the power analysis of chapter 10 (3 seeds: a 1.25x end-to-end change
#: in the decoder's late enrichment is detected with 80 % power)
DOSE_SEEDS = (0, 1, 2)
#: names of the dose runs: ``dose-<kind>-<level>-s<seed>``
DOSE_NAME_RE = re.compile(rf"^dose-({'|'.join(KINDS)})-({'|'.join(DOSE_LEVELS)})-s(\d+)$")


def merge_config(base: dict, over: dict) -> dict:
    """``base`` updated with ``over`` recursively; a key that ``base`` lacks is a ParameterError.

    >>> merge_config({"a": 1, "p": {"b": 2, "c": 3}}, {"p": {"c": 4}})
    {'a': 1, 'p': {'b': 2, 'c': 4}}
    """
    out = copy.deepcopy(base)
    for k, v in over.items():
        if k not in base:
            raise ParameterError(f"{k}={v!r} is not allowed: valid range is the config keys "
                                 f"{sorted(base)}. Check the spelling.")
        out[k] = merge_config(base[k], v) if isinstance(base[k], dict) and isinstance(v, dict) else v
    return out


def check_kind(kind: str) -> str:
    """``kind`` if it is one of :data:`KINDS`, else a ParameterError."""
    if kind not in KINDS:
        raise ParameterError(f"kind={kind!r} is out of range: valid values are {KINDS}. "
                             "'encoder' is EuroBERT (MLM), 'decoder' is Llama (causal LM).")
    return kind


def check_run_name(name: str) -> str:
    """A run name must be a plain folder name."""
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ParameterError(f"name={name!r} is not allowed: valid range is a folder name such as "
                             "'encoder-natural-s0'. Use kind-regime-sSEED.")
    return name


def parse_run_name(name: str) -> tuple[str, str, int]:
    """``(kind, regime, seed)`` of a sweep run's name ``<kind>-<regime>-s<seed>``.

    >>> parse_run_name("decoder-balanced-s2")
    ('decoder', 'balanced', 2)
    """
    m = SWEEP_NAME_RE.match(name)
    if m is None:
        raise ParameterError(f"run={name!r} is not a sweep run: valid range is names "
                             "'<encoder|decoder>-<natural|balanced>-s<seed>'.")
    return m.group(1), m.group(2), int(m.group(3))


def parse_dose_name(name: str) -> tuple[str, str, int]:
    """``(kind, level, seed)`` of a dose run's name ``dose-<kind>-<level>-s<seed>``.

    >>> parse_dose_name("dose-decoder-b37-s2")
    ('decoder', 'b37', 2)
    """
    m = DOSE_NAME_RE.match(name)
    if m is None:
        raise ParameterError(f"run={name!r} is not a dose run: valid range is names "
                             f"'dose-<encoder|decoder>-<{'|'.join(DOSE_LEVELS)}>-s<seed>'.")
    return m.group(1), m.group(2), int(m.group(3))


def dose_config(kind: str, level: str, seed: int, steps: int = 320, size: str = "small",
                languages=None, **overrides) -> dict:
    """The config of one dose run: chapter 8's schedule on the skewed mixture at ``level``.

    ``languages`` (a subset, for smoke runs) keeps those languages' skewed weights;
    ``overrides`` are further config keys (e.g. ``probe``, ``eval_batches``).

    >>> c = dose_config("decoder", "b37", 1)
    >>> c["name"], c["flatten"], c["temperature"], c["steps"]
    ('dose-decoder-b37-s1', 0.37, 1.0, 320)
    """
    check_kind(kind)
    check_choice("level", level, tuple(DOSE_LEVELS))
    lv = DOSE_LEVELS[level]
    weights = dict(SKEWED_WEIGHTS) if languages is None else {k: SKEWED_WEIGHTS[k] for k in languages}
    cfg = {"name": f"dose-{kind}-{level}-s{int(seed)}", "kind": kind, "size": size, "regime": "balanced",
           "language_weights": weights, "temperature": lv["temperature"],
           "flatten": lv["flatten"], "flatten_f0": FLATTEN_F0, "probe_eval_batches": 2,
           "seed": int(seed), "steps": int(steps), "checkpoint_every": 40, "threads": 1}
    if languages is not None:
        cfg["languages"] = list(languages)
    return merge_config(merge_config(DEFAULT_CONFIG, cfg), overrides) if overrides else cfg


def dose_names(seeds=DOSE_SEEDS, kinds=KINDS, levels=None) -> list[str]:
    """The dose runs' names in the order ``make dose`` trains them.

    The token knob's runs (every seed) before the language knob's: the token knob is
    the one that moves frequency concentration, so a budget cut short spends its time
    where the mechanism's test needs it. Within a knob seed by seed (each finished
    seed is a complete replicate), decoders before encoders (slower, so two
    parallel workers stay balanced).

    >>> dose_names(seeds=(0,), kinds=("decoder",))[:4]
    ['dose-decoder-skewed-s0', 'dose-decoder-b16-s0', 'dose-decoder-b37-s0', 'dose-decoder-b100-s0']
    """
    levels = list(DOSE_LEVELS) if levels is None else [check_choice("level", lv, tuple(DOSE_LEVELS)) for lv in levels]
    order = sorted(("token" not in DOSE_LEVELS[lv]["knobs"], int(seed), k != "decoder", DOSE_LEVELS[lv]["order"],
                    f"dose-{check_kind(k)}-{lv}-s{int(seed)}") for seed in seeds for k in kinds for lv in levels)
    return [o[-1] for o in order]


def check_temperature(temperature) -> float:
    """A mixture temperature in ``[1, inf]`` (the string ``"inf"`` allowed, as JSON has no infinity)."""
    t = float("inf") if temperature == "inf" else temperature
    try:
        ok = float(t) >= 1.0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ParameterError(f"temperature={temperature!r} is out of range: valid range is [1, inf] "
                             "(a number, or 'inf' for the uniform mixture). 1 is the natural mixture.")
    return float(t)


def validate_probe_settings(p: dict, D: int, L: int) -> dict:
    """Check the analysis settings of ``config["probe"]`` in place for width ``D`` and ``L`` blocks.

    Shared by training runs (:func:`validate_config`) and released checkpoints
    (:func:`tanbias.lab.analysis.posthoc.probe_checkpoints`).
    """
    p["rank"] = check_int("probe.rank", p["rank"], lo=1, hi=D // 2,
                          hint=f"D={D}; the 20 controls must fit orthogonal to the proxy "
                               f"(rank <= D/2 < D).")
    p["local_rank"] = check_int("probe.local_rank", p["local_rank"], lo=1, hi=D // 2)
    p["fit_fraction"] = check_real("probe.fit_fraction", p["fit_fraction"], 0, 1, hi_open=False)
    p["n_controls"] = check_int("probe.n_controls", p["n_controls"], lo=2)
    p["n_buckets"] = check_int("probe.n_buckets", p["n_buckets"], lo=1, hi=10)
    p["min_count"] = check_int("probe.min_count", p["min_count"], lo=p["local_rank"] + 1)
    p["zeta"] = check_real("probe.zeta", p["zeta"], 0, 1, lo_open=False)
    if p["layers"] is not None:
        p["layers"] = [check_int("probe.layers", x, lo=0, hi=L,
                                 hint=f"Layer 0 is the embedding output, {L} the last block.")
                       for x in p["layers"]]
    return p


def validate_config(config: dict) -> dict:
    """Fill defaults and check every value; return the full config.

    ``languages`` is checked for its form here (a list of language codes or
    None); that the corpus has them is checked where the corpus is read
    (:func:`tanbias.lab.data.check_languages`).

    Raises
    ------
    ParameterError
        Naming the parameter, its value and the valid range (e.g. ``lr <= 0``,
        ``probe.rank`` outside ``[1, D-1]``, a layer outside ``[0, n_layers]``).

    Example
    -------
    >>> validate_config({"name": "x", "kind": "decoder", "size": "smoke", "lr": 0})
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: lr=0 is out of range: valid range is (0, inf). ...
    """
    cfg = merge_config(DEFAULT_CONFIG, dict(config))
    check_run_name(cfg["name"])
    check_choice("kind", cfg["kind"], KINDS)
    check_choice("size", cfg["size"], tuple(SIZES))
    check_choice("regime", cfg["regime"], REGIMES)
    if cfg["languages"] is not None:
        if isinstance(cfg["languages"], str) or not all(isinstance(x, str) for x in cfg["languages"]):
            raise ParameterError(f"languages={cfg['languages']!r} is out of range: valid values are "
                                 "lists of language codes such as ['en', 'de']. Pass None for all.")
        cfg["languages"] = list(cfg["languages"])
    if cfg["language_weights"] is not None:
        w = cfg["language_weights"]
        if not isinstance(w, dict) or not w or not all(
                isinstance(k, str) and isinstance(v, (int, float)) and v > 0 for k, v in w.items()):
            raise ParameterError(f"language_weights={w!r} is out of range: valid values are a dict "
                                 "{language code: positive weight}, e.g. {'en': 2, 'de': 1}. Pass None "
                                 "for the corpus' own sizes.")
        cfg["language_weights"] = {k: float(v) for k, v in w.items()}
    if cfg["temperature"] is not None:
        cfg["temperature"] = check_temperature(cfg["temperature"])
        if cfg["temperature"] == float("inf"):
            cfg["temperature"] = "inf"
    cfg["flatten"] = check_real("flatten", cfg["flatten"], 0, 1, lo_open=False, hi_open=False,
                                hint="0 keeps every token; 1 flattens every type above flatten_f0 to it.")
    cfg["flatten_f0"] = check_real("flatten_f0", cfg["flatten_f0"], 0, 1, hi_open=True)
    cfg["probe_eval_batches"] = check_int("probe_eval_batches", cfg["probe_eval_batches"], lo=0)
    check_choice("precision", cfg["precision"], PRECISIONS)
    size = SIZES[cfg["size"]]
    D, L = size["hidden_size"], size["num_hidden_layers"]
    cfg["seed"] = check_int("seed", cfg["seed"], lo=0)
    cfg["steps"] = check_int("steps", cfg["steps"], lo=2, hint="A run needs at least 2 steps.")
    cfg["lr"] = size["lr"] if cfg["lr"] is None else check_real(
        "lr", cfg["lr"], lo=0, hint="Pass a positive learning rate such as 2e-3.")
    if cfg["warmup"] is not None:
        cfg["warmup"] = check_int("warmup", cfg["warmup"], lo=1, hi=cfg["steps"])
    check_choice("schedule", cfg["schedule"], SCHEDULES)
    cfg["weight_decay"] = check_real("weight_decay", cfg["weight_decay"], 0, lo_open=False)
    cfg["checkpoint_every"] = check_int("checkpoint_every", cfg["checkpoint_every"], lo=1)
    cfg["eval_batches"] = check_int("eval_batches", cfg["eval_batches"], lo=1)
    cfg["threads"] = check_int("threads", cfg["threads"], lo=1, hi=os.cpu_count() or 1)
    p = cfg["probe"]
    p["n_steps"] = check_int("probe.n_steps", p["n_steps"], lo=2, hi=cfg["steps"])
    p["tokens"] = check_int("probe.tokens", p["tokens"], lo=16,
                            hi=size["batch_size"] * size["seq_len"])
    validate_probe_settings(p, D, L)
    return cfg


def load_config(path) -> dict:
    """Read and validate a JSON config file (``name`` defaults to the file's stem)."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"CONFIG={str(path)!r} is not allowed: valid range is an existing JSON "
                             "file. See data/runs/configs/ for examples.")
    cfg = json.loads(path.read_text(encoding="utf-8"))
    if cfg.get("name") is None:
        cfg["name"] = path.parent.name if path.name == "config.json" else path.stem
    return validate_config(cfg)
