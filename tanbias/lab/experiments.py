"""The lab's experiments as data: their designs, run names and configs (chapters 7, 8, 10).

An experiment's design is data, read by the runner (:mod:`tanbias.lab.pipeline`),
the analyses and the chapters from here:

* **the 2x2 sweep** of chapter 8: architecture (:data:`~tanbias.lab.config.KINDS`)
  x language mixture (:data:`~tanbias.lab.config.REGIMES`) x :data:`SWEEP_SEEDS`,
  runs ``<kind>-<regime>-s<seed>`` (:func:`sweep_config`, :func:`parse_sweep_name`),
  and the constant-learning-rate controls of the seed-0 natural runs
  (:data:`CONTROL_RUNS`, :func:`control_config`);
* **the dose-response experiment** of chapter 10: two knobs over a strongly
  skewed language mixture (:data:`SKEWED_WEIGHTS`), each at four levels
  (:data:`DOSE_LEVELS`), both architectures, :data:`DOSE_SEEDS`; runs
  ``dose-<kind>-<level>-s<seed>`` (:func:`dose_config`, :func:`dose_names`,
  :func:`parse_dose_name`).

* **the aliasing knob** of chapter 10 (issue 21): input aliasing at four levels
  (:data:`ALIAS_LEVELS`) on the same skewed start, both architectures,
  :data:`ALIAS_SEEDS`; runs ``alias-<kind>-k<level>-s<seed>`` (:func:`alias_config`,
  :func:`alias_names`, :func:`parse_alias_name`), the level without aliases shared with
  the causal test's control arm where that exists (:func:`alias_run`);
* **the causal test** of chapter 11: gradient surgery against matched controls
  on the dose experiment's skewed start, arms :data:`CAUSAL_ARMS`, seeds
  :data:`CAUSAL_SEEDS` per architecture; runs ``causal-<kind>-<arm>-s<seed>``
  (:func:`causal_config`, :func:`causal_names`, :func:`parse_causal_name`);
* **the rival accounts** of the rivals chapter: the standard output head against the unigram
  head, crossed with the causal test's control, proxy and random arms and the aliasing knob's
  top level, :data:`RIVALS_SEEDS`, and long control runs; runs
  ``rivals-<kind>-<head>-<arm>-s<seed>`` (:func:`rivals_config`, :func:`rivals_names`,
  :func:`parse_rivals_name`).

Every design function returns a full, checked :class:`~tanbias.lab.config.RunConfig`;
the committed files under ``data/runs/configs/`` are their ``to_json()``.
"""
from __future__ import annotations

import re

from tanbias._checks import check_choice
from tanbias.errors import ParameterError
from tanbias.lab.config import EARLY_FRAC, KINDS, REGIMES, RunConfig, check_kind

__all__ = ["RUN_STEPS", "SWEEP_SEEDS", "SWEEP_NAME_RE", "CONTROL_RUNS", "parse_sweep_name", "sweep_config",
           "control_config", "sweep_names", "SKEWED_WEIGHTS", "FLATTEN_F0", "DOSE_LEVELS", "DOSE_KNOBS",
           "DOSE_SEEDS", "DOSE_NAME_RE", "parse_dose_name", "dose_config", "dose_names", "design_config",
           "CAUSAL_ARMS", "CAUSAL_SURGERY", "CAUSAL_PRECISION", "CAUSAL_SEEDS", "CAUSAL_NAME_RE", "causal_arms",
           "parse_causal_name", "causal_config", "causal_names", "ALIAS_F0", "ALIAS_LEVELS", "ALIAS_SEEDS",
           "ALIAS_NAME_RE", "parse_alias_name", "alias_config", "alias_run", "alias_names", "alias_runs",
           "RIVALS_HEADS", "RIVALS_ARMS", "RIVALS_SEEDS", "RIVALS_LONG_SEEDS", "RIVALS_LONG_STEPS",
           "RIVALS_LONG_PROBE_STEPS", "RIVALS_NAME_RE", "parse_rivals_name", "rivals_config", "rivals_names"]

#: the token budget of every sweep and dose run: 320 steps of the "small" size (1.31 M tokens)
RUN_STEPS = 320
#: the settings every committed run shares beyond the defaults: a checkpoint every 40 steps, one
#: thread (two runs train side by side on two cores)
_RUN_COMMON = {"size": "small", "steps": RUN_STEPS, "checkpoint_every": 40, "threads": 1}

# ---------------------------------------------------------------- the 2x2 sweep (chapter 8)
SWEEP_SEEDS = (0, 1, 2)
#: names of the 2x2 sweep's runs: ``<kind>-<regime>-s<seed>``
SWEEP_NAME_RE = re.compile(rf"^({'|'.join(KINDS)})-({'|'.join(REGIMES)})-s(\d+)$")
#: the constant-learning-rate controls of the seed-0 natural runs (chapter 8)
CONTROL_RUNS = ("encoder-natural-s0-constant-lr", "decoder-natural-s0-constant-lr")


def _parse_name(pattern, name: str, what: str, form: str, valid=lambda kind, level: True) -> tuple[str, str, int]:
    """``(kind, level or arm, seed)`` of a run name matched by ``pattern``, whose three groups are
    those; else a :class:`ParameterError` naming ``what`` run it is not and the ``form`` of one."""
    m = pattern.match(name)
    if m is None or not valid(m.group(1), m.group(2)):
        raise ParameterError(f"run={name!r} is not {what}: valid range is names {form}.")
    return m.group(1), m.group(2), int(m.group(3))


def parse_sweep_name(name: str) -> tuple[str, str, int]:
    """``(kind, regime, seed)`` of a sweep run's name ``<kind>-<regime>-s<seed>``.

    >>> parse_sweep_name("decoder-balanced-s2")
    ('decoder', 'balanced', 2)
    """
    return _parse_name(SWEEP_NAME_RE, name, "a sweep run", "'<encoder|decoder>-<natural|balanced>-s<seed>'")


def sweep_config(kind: str, regime: str, seed: int) -> RunConfig:
    """The config of one run of the 2x2 sweep: chapter 8's schedule on the corpus' own mixture
    (``natural``) or the temperature-balanced one.

    >>> c = sweep_config("decoder", "balanced", 1)
    >>> c.name, c.steps, c.size.name, c.schedule
    ('decoder-balanced-s1', 320, 'small', 'cosine')
    """
    check_kind(kind)
    check_choice("regime", regime, REGIMES)
    return RunConfig.from_dict({"name": f"{kind}-{regime}-s{int(seed)}", "kind": kind, "regime": regime,
                                "seed": int(seed), **_RUN_COMMON})


def control_config(kind: str) -> RunConfig:
    """The constant-learning-rate control of the seed-0 natural run of ``kind`` (:data:`CONTROL_RUNS`)."""
    return sweep_config(kind, "natural", 0).replace(name=f"{kind}-natural-s0-constant-lr", schedule="constant")


def sweep_names(seeds=SWEEP_SEEDS) -> list[str]:
    """The sweep's run names in the order ``make sweep`` trains them: seed by seed, decoders first
    (slower, so two parallel workers stay balanced).

    >>> sweep_names(seeds=(0,))
    ['decoder-balanced-s0', 'decoder-natural-s0', 'encoder-balanced-s0', 'encoder-natural-s0']
    """
    return [f"{k}-{r}-s{int(s)}" for s in seeds for k in ("decoder", "encoder") for r in REGIMES[::-1]]


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


def parse_dose_name(name: str) -> tuple[str, str, int]:
    """``(kind, level, seed)`` of a dose run's name ``dose-<kind>-<level>-s<seed>``.

    >>> parse_dose_name("dose-decoder-b37-s2")
    ('decoder', 'b37', 2)
    """
    return _parse_name(DOSE_NAME_RE, name, "a dose run",
                       f"'dose-<encoder|decoder>-<{'|'.join(DOSE_LEVELS)}>-s<seed>'")


def dose_config(kind: str, level: str, seed: int, steps: int = RUN_STEPS, size: str = "small",
                languages=None, **overrides) -> RunConfig:
    """The config of one dose run: chapter 8's schedule on the skewed mixture at ``level``.

    ``languages`` (a subset, for smoke runs) keeps those languages' skewed weights;
    ``overrides`` are further :class:`~tanbias.lab.config.RunConfig` fields (e.g.
    ``probe`` as a dict, ``eval_batches``).

    >>> c = dose_config("decoder", "b37", 1)
    >>> c.name, c.flatten, c.temperature, c.steps, c.probe_eval_batches
    ('dose-decoder-b37-s1', 0.37, 1.0, 320, 2)
    """
    check_kind(kind)
    check_choice("level", level, tuple(DOSE_LEVELS))
    lv = DOSE_LEVELS[level]
    weights = dict(SKEWED_WEIGHTS) if languages is None else {k: SKEWED_WEIGHTS[k] for k in languages}
    d = {**_RUN_COMMON, "name": f"dose-{kind}-{level}-s{int(seed)}", "kind": kind, "size": size,
         "regime": "balanced", "language_weights": weights, "temperature": lv["temperature"],
         "flatten": lv["flatten"], "flatten_f0": FLATTEN_F0, "probe_eval_batches": 2,
         "seed": int(seed), "steps": int(steps), **({"languages": list(languages)} if languages else {}),
         **overrides}
    return RunConfig.from_dict(d)


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


# ---------------------------------------------------------------- the causal test (chapter 11)
#: the arms of the causal test: no surgery (``control``); the update's component in the layer
#: inputs' top-r principal subspace removed (``proxy``) or in a random one (``random``); the whole
#: update shrunk by the energy the proxy arm would remove (``uniform``); the proxy and uniform
#: surgeries in the first EARLY_FRAC of the steps only (``-early``); and a rival account, the
#: decoder with tied input and output embeddings (``tied``, no surgery)
CAUSAL_ARMS = ("control", "proxy", "random", "uniform", "proxy-early", "uniform-early", "tied")
#: the surgery every surgical arm uses (alpha = 0 removes the component; r = 8 is chapter 7's proxy
#: rank; P re-estimated from every step's batch, since that costs about 1 % of a step: make bench)
CAUSAL_SURGERY = {"alpha": 0.0, "rank": 8, "every": 1}
#: every arm of the causal test computes in float32, as chapter 10's runs (bfloat16 is 1.6x faster on a
#: CPU with bfloat16 instructions, data/runs/sizes.json, but about 20x slower where it is emulated)
CAUSAL_PRECISION = "fp32"
#: seeds per architecture, from the power analysis of chapter 11 on chapter 10's realised seed-to-seed
#: SD of the primary outcome (tanbias.lab.analysis.causal_design.power_analysis)
CAUSAL_SEEDS = {"decoder": (0, 1, 2, 3, 4), "encoder": tuple(range(12))}
#: names of the causal runs: ``causal-<kind>-<arm>-s<seed>``
CAUSAL_NAME_RE = re.compile(rf"^causal-({'|'.join(KINDS)})-({'|'.join(CAUSAL_ARMS)})-s(\d+)$")


def causal_arms(kind: str) -> tuple[str, ...]:
    """The arms of ``kind`` (the ``tied`` rival is the decoder's: the lab's encoder has no tied variant
    in the statement's comparison).

    >>> causal_arms("encoder")
    ('control', 'proxy', 'random', 'uniform', 'proxy-early', 'uniform-early')
    """
    check_kind(kind)
    return CAUSAL_ARMS if kind == "decoder" else tuple(a for a in CAUSAL_ARMS if a != "tied")


def parse_causal_name(name: str) -> tuple[str, str, int]:
    """``(kind, arm, seed)`` of a causal run's name ``causal-<kind>-<arm>-s<seed>``.

    >>> parse_causal_name("causal-decoder-proxy-early-s3")
    ('decoder', 'proxy-early', 3)
    """
    return _parse_name(CAUSAL_NAME_RE, name, "a causal run",
                       f"'causal-<encoder|decoder>-<{'|'.join(CAUSAL_ARMS)}>-s<seed>' (tied: decoder only)",
                       valid=lambda kind, arm: arm in causal_arms(kind))


def causal_config(kind: str, arm: str, seed: int, steps: int = RUN_STEPS, size: str = "small",
                  languages=None, **overrides) -> RunConfig:
    """The config of one causal run: the dose experiment's skewed start (chapter 10's size,
    schedule, mixture and precision), with ``arm``'s surgery or tying.

    Arms of one seed share the initialisation, the data stream and the masking, so they
    differ only by the intervention.

    >>> c = causal_config("decoder", "proxy-early", 2)
    >>> c.name, c.surgery.arm, c.surgery.until, c.precision, c.temperature
    ('causal-decoder-proxy-early-s2', 'proxy', 0.3, 'fp32', 1.0)
    >>> causal_config("decoder", "tied", 0).tie_embeddings
    True
    """
    check_kind(kind)
    check_choice("arm", arm, causal_arms(kind))
    surgery = None
    if arm not in ("control", "tied"):
        base = arm.removesuffix("-early")
        surgery = {"arm": base, **CAUSAL_SURGERY, "until": EARLY_FRAC if arm.endswith("-early") else 1.0}
    cfg = dose_config(kind, "skewed", seed, steps=steps, size=size, languages=languages,
                      precision=CAUSAL_PRECISION, surgery=surgery, tie_embeddings=arm == "tied", **overrides)
    return cfg.replace(name=f"causal-{kind}-{arm}-s{int(seed)}")


def causal_names(seeds=None, kinds=KINDS) -> list[str]:
    """The causal runs' names in the order ``make causal`` trains them: the decoder's seeds, then
    the encoder's, seed by seed (each finished seed is a complete replicate of every arm), arms
    in :data:`CAUSAL_ARMS` order. The decoder reaches its registered power with 5 seeds, the
    encoder needs 12: a budget cut short leaves one architecture complete rather than two
    half done. ``seeds`` (one tuple for both architectures) replaces :data:`CAUSAL_SEEDS`.

    >>> causal_names(seeds=(0, 1))[:2], causal_names(seeds=(0, 1))[7]
    (['causal-decoder-control-s0', 'causal-decoder-proxy-s0'], 'causal-decoder-control-s1')
    """
    per_kind = {k: (CAUSAL_SEEDS[check_kind(k)] if seeds is None else tuple(seeds)) for k in kinds}
    order = sorted((k != "decoder", int(s), CAUSAL_ARMS.index(a), f"causal-{k}-{a}-s{int(s)}")
                   for k in kinds for s in per_kind[k] for a in causal_arms(k))
    return [o[-1] for o in order]


# ---------------------------------------------------------------- the aliasing knob (chapter 10)
#: the aliasing knob's threshold frequency: types at or below it keep one id (the direct knob's f0)
ALIAS_F0 = FLATTEN_F0
#: The aliasing knob's levels: the exponent of k_w = round((f_w / ALIAS_F0) ** exponent)
#: (tanbias.lab.aliasing.alias_counts), chosen before the runs so that the input stream's
#: expected collision probability falls by the direct knob's factors (x2.5, x6.3, x15.4 below
#: the start; data/preregistration/alias.toml gives the calculation)
ALIAS_LEVELS: dict[str, float] = {"k0": 0.0, "k1": 0.21, "k2": 0.42, "k3": 0.68}
#: seeds per level and architecture, from the power analysis on chapter 10's realised SDs
#: (tanbias.lab.analysis.alias_design.power_analysis: 8 seeds detect a x1.25 end-to-end change of
#: the late enrichment at its larger realised SD, 0.151, with 80 % power at alpha = 0.05)
ALIAS_SEEDS = tuple(range(8))
#: names of the aliasing runs: ``alias-<kind>-k<level>-s<seed>``
ALIAS_NAME_RE = re.compile(rf"^alias-({'|'.join(KINDS)})-({'|'.join(ALIAS_LEVELS)})-s(\d+)$")


def parse_alias_name(name: str) -> tuple[str, str, int]:
    """``(kind, level, seed)`` of an aliasing run's name ``alias-<kind>-k<level>-s<seed>``.

    >>> parse_alias_name("alias-encoder-k2-s7")
    ('encoder', 'k2', 7)
    """
    return _parse_name(ALIAS_NAME_RE, name, "an aliasing run",
                       f"'alias-<encoder|decoder>-<{'|'.join(ALIAS_LEVELS)}>-s<seed>'")


def alias_config(kind: str, level: str, seed: int, steps: int = RUN_STEPS, size: str = "small",
                 languages=None, **overrides) -> RunConfig:
    """The config of one aliasing run: the dose experiment's skewed start (chapter 10's size, schedule,
    mixture, float32) with the inputs aliased at ``level``.

    >>> c = alias_config("decoder", "k3", 5)
    >>> c.name, c.alias, c.alias_f0, c.temperature, c.flatten
    ('alias-decoder-k3-s5', 0.68, 0.0001, 1.0, 0.0)
    """
    check_kind(kind)
    check_choice("level", level, tuple(ALIAS_LEVELS))
    cfg = dose_config(kind, "skewed", seed, steps=steps, size=size, languages=languages,
                      alias=ALIAS_LEVELS[level], alias_f0=ALIAS_F0, **overrides)
    return cfg.replace(name=f"alias-{kind}-{level}-s{int(seed)}")


def alias_run(kind: str, level: str, seed: int) -> str:
    """The run folder that holds the aliasing design's cell ``(kind, level, seed)``.

    The level without aliases (``k0``) has the config of the causal test's ``control`` arm
    (the skewed start in float32, no surgery, untied; trained after issue 14's probe-eval
    fix): where that arm has the seed, its run is the cell (:data:`CAUSAL_SEEDS`), else the
    cell is trained as ``alias-<kind>-k0-s<seed>``.

    >>> alias_run("encoder", "k0", 3), alias_run("decoder", "k0", 6), alias_run("decoder", "k1", 0)
    ('causal-encoder-control-s3', 'alias-decoder-k0-s6', 'alias-decoder-k1-s0')
    """
    check_kind(kind)
    check_choice("level", level, tuple(ALIAS_LEVELS))
    if level == "k0" and int(seed) in CAUSAL_SEEDS[kind]:
        return f"causal-{kind}-control-s{int(seed)}"
    return f"alias-{kind}-{level}-s{int(seed)}"


def alias_runs(seeds=ALIAS_SEEDS, kinds=KINDS) -> list[tuple[str, str, int, str]]:
    """Every cell of the aliasing design: ``(kind, level, seed, run folder)``, in the order
    :func:`alias_names` trains them (shared cells included)."""
    order = sorted((int(s), k != "decoder", lv, k) for s in seeds for k in kinds for lv in ALIAS_LEVELS)
    return [(k, lv, s, alias_run(k, lv, s)) for s, _, lv, k in order]


def alias_names(seeds=ALIAS_SEEDS, kinds=KINDS) -> list[str]:
    """The aliasing runs ``make alias`` trains, in order: seed by seed (each finished seed is a
    complete replicate), decoders before encoders (slower, so two workers stay balanced), levels
    in order; the ``k0`` cells shared with the causal test's control arm are not retrained.

    >>> alias_names(seeds=(0,))
    ['alias-decoder-k1-s0', 'alias-decoder-k2-s0', 'alias-decoder-k3-s0', 'alias-encoder-k1-s0', 'alias-encoder-k2-s0', 'alias-encoder-k3-s0']
    >>> alias_names(seeds=(5,), kinds=("decoder",))[0]
    'alias-decoder-k0-s5'
    """
    return [run for _, _, _, run in alias_runs(seeds, kinds) if run.startswith("alias-")]


# ---------------------------------------------------------------- the rival accounts (the rivals chapter)
#: the output heads: the lab's standard head (no output bias) and the unigram head (a learnable
#: output bias initialised to the log of the add-one-smoothed unigram of the run's own targets)
RIVALS_HEADS = {"standard": "none", "unigram": "unigram"}
#: the arms crossed with the heads: chapter 11's control, proxy and random arms and chapter 10's
#: top aliasing level
RIVALS_ARMS = ("control", "proxy", "random", "k3")
#: seeds per architecture and arm, from the power analysis on the causal runs' realised noise
#: (data/preregistration/rivals.toml): the encoder needs 8 seeds in the primary family's cells
#: (control and proxy), 5 elsewhere; the decoder 5 everywhere (the minimum binds)
RIVALS_SEEDS = {"decoder": {arm: tuple(range(5)) for arm in RIVALS_ARMS},
                "encoder": {"control": tuple(range(8)), "proxy": tuple(range(8)),
                            "random": tuple(range(5)), "k3": tuple(range(5))}}
#: the long runs: the control arm of both heads and architectures, 4 x the steps, more probe steps
RIVALS_LONG_SEEDS = (0, 1)
RIVALS_LONG_STEPS = 4 * RUN_STEPS
RIVALS_LONG_PROBE_STEPS = 20
#: names of the rivals' runs: ``rivals-<kind>-<head>-<arm>-s<seed>``, and ``...-long-s<seed>``
RIVALS_NAME_RE = re.compile(rf"^rivals-({'|'.join(KINDS)})-({'|'.join(RIVALS_HEADS)})-"
                            rf"({'|'.join((*RIVALS_ARMS, 'long'))})-s(\d+)$")


def parse_rivals_name(name: str) -> tuple[str, str, str, int]:
    """``(kind, head, arm, seed)`` of a rivals run's name (``arm`` is ``"long"`` for a long run).

    >>> parse_rivals_name("rivals-encoder-unigram-k3-s4")
    ('encoder', 'unigram', 'k3', 4)
    """
    m = RIVALS_NAME_RE.match(name)
    if m is None:
        raise ParameterError(f"run={name!r} is not a rivals run: valid range is names "
                             f"'rivals-<encoder|decoder>-<{'|'.join(RIVALS_HEADS)}>-"
                             f"<{'|'.join((*RIVALS_ARMS, 'long'))}>-s<seed>'.")
    return m.group(1), m.group(2), m.group(3), int(m.group(4))


def rivals_config(kind: str, head: str, arm: str, seed: int, steps: int = RUN_STEPS, size: str = "small",
                  languages=None, **overrides) -> RunConfig:
    """The config of one rivals run: the causal test's base with ``head``'s output bias and
    ``arm``'s surgery or aliasing; ``arm="long"`` is the control arm at
    :data:`RIVALS_LONG_STEPS` with :data:`RIVALS_LONG_PROBE_STEPS` probe steps.

    A standard-head control, proxy or random run has exactly the config of the causal run of
    that arm and seed but for its name; a standard-head ``k3`` run that of the aliasing run.

    >>> c = rivals_config("decoder", "unigram", "proxy", 2)
    >>> c.name, c.output_bias, c.surgery.arm, c.precision
    ('rivals-decoder-unigram-proxy-s2', 'unigram', 'proxy', 'fp32')
    >>> rivals_config("encoder", "standard", "random", 3).to_dict() == causal_config("encoder", "random", 3).replace(
    ...     name="rivals-encoder-standard-random-s3").to_dict()
    True
    >>> rivals_config("encoder", "standard", "long", 0).steps
    1280
    """
    check_kind(kind)
    check_choice("head", head, tuple(RIVALS_HEADS))
    check_choice("arm", arm, (*RIVALS_ARMS, "long"))
    if arm == "k3":
        cfg = alias_config(kind, "k3", seed, steps=steps, size=size, languages=languages, **overrides)
    elif arm == "long":
        cfg = causal_config(kind, "control", seed, steps=RIVALS_LONG_STEPS if steps == RUN_STEPS else steps,
                            size=size, languages=languages, **overrides)
        cfg = cfg.replace(probe={"n_steps": RIVALS_LONG_PROBE_STEPS})
    else:
        cfg = causal_config(kind, arm, seed, steps=steps, size=size, languages=languages, **overrides)
    return cfg.replace(name=f"rivals-{kind}-{head}-{arm}-s{int(seed)}", output_bias=RIVALS_HEADS[head])


def rivals_names(kinds=KINDS, seeds=None, long: bool = True) -> list[str]:
    """The rivals runs in the order ``make rivals`` trains them: seeds 0..4 first, a seed at a
    time (decoders first, heads, then arms in :data:`RIVALS_ARMS` order), then the encoder's
    further seeds of the primary cells, then the long runs. ``seeds`` (one tuple for every cell)
    replaces :data:`RIVALS_SEEDS` (smoke tests).

    >>> n = rivals_names()
    >>> len(n), n[0], n[-1]
    (100, 'rivals-decoder-standard-control-s0', 'rivals-encoder-unigram-long-s1')
    >>> rivals_config("encoder", "standard", "k3", 1).to_dict() == alias_config("encoder", "k3", 1).replace(
    ...     name="rivals-encoder-standard-k3-s1").to_dict()
    True
    """
    cells = []
    for kind in kinds:
        for arm in RIVALS_ARMS:
            for seed in (RIVALS_SEEDS[check_kind(kind)][arm] if seeds is None else tuple(seeds)):
                for head in RIVALS_HEADS:
                    cells.append((int(seed) >= 5, int(seed), kind != "decoder", list(RIVALS_HEADS).index(head),
                                  RIVALS_ARMS.index(arm), f"rivals-{kind}-{head}-{arm}-s{int(seed)}"))
    names = [c[-1] for c in sorted(cells)]
    if long:
        names += [f"rivals-{kind}-{head}-long-s{s}" for s in RIVALS_LONG_SEEDS
                  for kind in sorted(kinds, key=lambda k: k != "decoder") for head in RIVALS_HEADS]
    return names


def design_config(name: str) -> RunConfig:
    """The config the experiments' design gives the run ``name`` (a sweep, control or dose run).

    >>> design_config("dose-encoder-uniform-s0").temperature
    inf
    """
    if name in CONTROL_RUNS:
        return control_config(name.split("-")[0])
    if SWEEP_NAME_RE.match(name):
        return sweep_config(*parse_sweep_name(name))
    if DOSE_NAME_RE.match(name):
        return dose_config(*parse_dose_name(name))
    if CAUSAL_NAME_RE.match(name):
        return causal_config(*parse_causal_name(name))
    if ALIAS_NAME_RE.match(name):
        return alias_config(*parse_alias_name(name))
    if RIVALS_NAME_RE.match(name):
        return rivals_config(*parse_rivals_name(name))
    raise ParameterError(f"run={name!r} is not a run of the lab's experiments: valid range is sweep names "
                         "'<kind>-<regime>-s<seed>', the controls "
                         f"{list(CONTROL_RUNS)}, dose names 'dose-<kind>-<level>-s<seed>', causal names "
                         "'causal-<kind>-<arm>-s<seed>' and aliasing names 'alias-<kind>-k<level>-s<seed>'.")
