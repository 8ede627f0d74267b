"""The lab's experiments as data: one :class:`Design` each, and their registry (chapters 7, 8, 10-13).

An experiment is a grid of runs: for each architecture (:data:`~tanbias.lab.config.KINDS`),
the levels of its one factor and its seeds. A :class:`Design` holds that grid, the form of
its run names, the config of one run, the order its queue trains them in and the pinned
registration its predictions and rules were committed in; the run names and their parser,
the configs, the queue (:mod:`tanbias.lab.pipeline`), the run status, the loading of the
committed runs and the complete seeds (:mod:`tanbias.lab.analysis.registered`) all derive
from it. :data:`EXPERIMENTS` registers them, in the order they were designed:

* :data:`SWEEP`, **the 2x2 sweep** of chapter 8: architecture x language mixture
  (:data:`~tanbias.lab.config.REGIMES`) x :data:`SWEEP_SEEDS`, runs ``<kind>-<regime>-s<seed>``
  (:func:`sweep_config`); beside it chapter 8's constant-learning-rate controls of the
  seed-0 natural runs (:data:`CONTROL_RUNS`, :func:`control_config`);
* :data:`DOSE`, **the dose-response experiment** of chapter 10: two knobs over a strongly
  skewed language mixture (:data:`SKEWED_WEIGHTS`), each at four levels (:data:`DOSE_LEVELS`),
  :data:`DOSE_SEEDS`; runs ``dose-<kind>-<level>-s<seed>`` (:func:`dose_config`);
* :data:`ALIAS`, **the aliasing knob** of chapter 11: input aliasing at four levels
  (:data:`ALIAS_LEVELS`) on the same skewed start, :data:`ALIAS_SEEDS`; runs
  ``alias-<kind>-k<level>-s<seed>`` (:func:`alias_config`); a cell without aliases (``k0``)
  is the causal test's control run where that run exists (the design borrows it);
* :data:`CAUSAL`, **the causal test** of chapter 12: gradient surgery against matched
  controls on the dose experiment's skewed start, arms :data:`CAUSAL_ARMS`, seeds
  :data:`CAUSAL_SEEDS` per architecture; runs ``causal-<kind>-<arm>-s<seed>`` (:func:`causal_config`);
* :data:`RIVALS`, **the rival accounts**: the standard output head against the unigram head
  (:data:`RIVALS_HEADS`), crossed with the causal test's control, proxy and random arms and the
  aliasing knob's top level (:data:`RIVALS_ARMS`), :data:`RIVALS_SEEDS` per cell, and long
  control runs; its factor is the cell ``<head>-<arm>``, runs ``rivals-<kind>-<head>-<arm>-s<seed>``
  (:func:`rivals_config`);
* :data:`HORIZON`, **past the transient**: chapter 13's heads crossed with its control and proxy
  arms at four times the steps, and the encoder's collapse as a 2 x 2 of input corruption and
  attention (:data:`HORIZON_LONG`, :data:`HORIZON_COLLAPSE`, :data:`HORIZON_SEEDS`); runs
  ``horizon-<kind>-<cell>-s<seed>`` (:func:`horizon_config`).

Chapter 7 reads two runs of the sweep. Every config function returns a full, checked
:class:`~tanbias.lab.config.RunConfig`; the committed files under ``data/runs/configs/`` are
their ``to_json()`` (:func:`design_config` finds the design of any run name).

A new experiment is its own files (its config function here, its ``analysis/<name>_design``,
``analysis/<name>`` and ``analysis/<name>_report`` modules) and one entry of :data:`EXPERIMENTS`:
``python -m tanbias.lab <name>``, ``make <name>``, the queue's record ``data/runs/<name>.json``
and the layer test's chain read the registry.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from tanbias._checks import check_choice
from tanbias.errors import ParameterError
from tanbias.lab.config import EARLY_FRAC, KINDS, REGIMES, RunConfig, check_kind

__all__ = ["Stage", "Design", "RUN_STEPS", "SWEEP_SEEDS", "CONTROL_RUNS", "sweep_config", "control_config", "SWEEP",
           "SKEWED_WEIGHTS", "FLATTEN_F0", "DOSE_LEVELS", "DOSE_KNOBS", "DOSE_SEEDS", "dose_config", "DOSE",
           "CAUSAL_ARMS", "CAUSAL_SURGERY", "CAUSAL_PRECISION", "CAUSAL_SEEDS", "causal_arms", "causal_config",
           "CAUSAL", "ALIAS_F0", "ALIAS_LEVELS", "ALIAS_SEEDS", "alias_config", "ALIAS", "RIVALS_HEADS",
           "RIVALS_ARMS", "RIVALS_SEEDS", "RIVALS_LONG_SEEDS", "RIVALS_LONG_STEPS", "RIVALS_LONG_PROBE_STEPS",
           "rivals_config", "RIVALS", "HORIZON_STEPS", "HORIZON_LONG", "HORIZON_COLLAPSE", "HORIZON_SEEDS",
           "horizon_config", "HORIZON_LONG_STAGE", "HORIZON", "EXPERIMENTS", "LAB_FIRST_CHAPTER", "lab_chapters", "design_of", "design_config"]

@dataclass(frozen=True, eq=False)
class Stage:
    """A later part of an experiment, registered in a dated file of its own before its first run.

    A stage takes some of its design's cells out of the design's own queue: they train under the
    stage's order, into the stage's record, within the stage's budget (the queue starts no run once
    the record's wall time reaches it), after every cell the design trains by itself. Its file
    amends the design's registration (which is never edited) for those cells only.

    Parameters
    ----------
    name : str
        What it is called on the command line (``python -m tanbias.lab horizon`` trains it) and
        in its record's name, ``data/runs/<design>-<name>.json``.
    title : str
        What it is, in words.
    registration : str
        The stem of its file, ``data/preregistration/<registration>.toml``.
    registration_sha256 : str
        That file's pinned sha256.
    has : callable
        ``has(kind, level, seed)``: whether a cell of the design belongs to the stage.
    order : callable
        ``order(kind, level, seed)``: the sort key of its queue.
    budget_hours : float
        Its queue's wall time, all sittings together, on 2 cores.

    Example
    -------
    >>> HORIZON.stage_of("decoder", "unigram-proxy", 3).name, HORIZON.stage_of("encoder", "mask-causal", 0)
    ('long', None)
    """
    name: str
    title: str
    registration: str
    registration_sha256: str
    has: Callable[[str, str, int], bool]
    order: Callable[[str, str, int], tuple]
    budget_hours: float


#: the token budget of every sweep and dose run: 320 steps of the "small" size (1.31 M tokens)
RUN_STEPS = 320
#: the settings every committed run shares beyond the defaults: a checkpoint every 40 steps, one
#: thread (two runs train side by side on two cores)
_RUN_COMMON = {"size": "small", "steps": RUN_STEPS, "checkpoint_every": 40, "threads": 1}


@dataclass(frozen=True, eq=False)
class Design:
    """One experiment of the lab as data: its grid of runs, their names and configs, its queue.

    Parameters
    ----------
    name : str
        The experiment's name: its command (``python -m tanbias.lab <name>``), its ``make``
        target and its queue's record ``data/runs/<name>.json``.
    title : str
        What it is, in words (``"the dose experiment"``).
    chapter : int or None
        The chapter that reads it (None while no chapter does).
    factor : str
        The name of its one factor, the column of its run tables (``"level"``, ``"arm"``).
    levels : dict
        ``{kind: (level, ...)}``: the factor's levels per architecture, in the design's order.
    seeds : dict
        ``{kind: (seed, ...)}``: the registered seeds per architecture.
    prefix : str
        Run names are ``<prefix><kind>-<level>-s<seed>``.
    build : callable
        ``build(kind, level, seed, **overrides)``: the :class:`~tanbias.lab.config.RunConfig`
        of one run (``overrides``: its ``steps``, ``size``, ``languages`` or further fields,
        for smoke-size runs).
    order : callable, optional
        ``order(kind, level, seed)``: the sort key of the queue; ties go by name. Default: seed
        by seed (each finished seed is a complete replicate), decoders before encoders (slower,
        so two parallel workers stay balanced), levels in the design's order.
    registration : str, optional
        The stem of its pinned registration, ``data/preregistration/<registration>.toml``
        (predictions and rules committed before its first run), with ``registration_sha256``;
        ``posthoc_sha256`` pins ``<registration>-posthoc.toml``, the rules written after its runs.
    borrow : callable, optional
        ``borrow(kind, level, seed)``: the run of another design that is this cell (same
        config), or None: such a cell is loaded from that run and never trained again.
    sittings : bool
        Its record ``data/runs/<name>.json`` keeps every sitting of the queue (False: the last one).
    keep : callable, optional
        ``keep(kind, level, seed)``: whether the grid has that cell (a design whose levels have
        different seeds); default every level at every seed of :attr:`seeds`.
    budget_hours : float, optional
        The wall time its queue was given, all sittings together on 2 cores (``make bench``
        reads its record against it).
    stages : tuple of Stage
        Later parts registered in files of their own (:class:`Stage`): their cells leave this
        design's queue for theirs, which trains after it.

    Example
    -------
    >>> DOSE.run_name("decoder", "b37", 2), DOSE.parse("dose-decoder-b37-s2")
    ('dose-decoder-b37-s2', ('decoder', 'b37', 2))
    >>> len(CAUSAL.cells()), len(CAUSAL.names(seeds=(0,), kinds=("decoder",)))
    (107, 7)
    """
    name: str
    title: str
    chapter: int | None
    factor: str
    levels: dict
    seeds: dict
    prefix: str
    build: Callable[..., RunConfig]
    order: Callable[[str, str, int], tuple] | None = None
    registration: str | None = None
    registration_sha256: str | None = None
    posthoc_sha256: str | None = None
    borrow: Callable[[str, str, int], str | None] | None = None
    sittings: bool = True
    keep: Callable[[str, str, int], bool] | None = None
    budget_hours: float | None = None
    stages: tuple[Stage, ...] = ()
    pattern: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        every = sorted({lv for levels in self.levels.values() for lv in levels}, key=len, reverse=True)
        object.__setattr__(self, "pattern", re.compile(
            rf"^{re.escape(self.prefix)}({'|'.join(KINDS)})-({'|'.join(map(re.escape, every))})-s(\d+)$"))

    @property
    def where(self) -> str:
        """Its title and chapter, for help texts: ``'the dose experiment (chapter 10)'``."""
        return self.title + ("" if self.chapter is None else f" (chapter {self.chapter})")

    @property
    def form(self) -> str:
        """The form of a run name, for messages: ``'dose-<encoder|decoder>-<skewed|...>-s<seed>'``."""
        every = dict.fromkeys(lv for levels in self.levels.values() for lv in levels)
        return f"'{self.prefix}<{'|'.join(KINDS)}>-<{'|'.join(every)}>-s<seed>'"

    def check_level(self, kind: str, level: str) -> str:
        """``level`` if it is a level of ``kind`` in this design, else a ParameterError."""
        return check_choice(self.factor, level, self.levels[check_kind(kind)])

    def run_name(self, kind: str, level: str, seed: int) -> str:
        """The name of the run this design trains for the cell ``(kind, level, seed)``."""
        self.check_level(kind, level)
        return f"{self.prefix}{kind}-{level}-s{int(seed)}"

    def run(self, kind: str, level: str, seed: int) -> str:
        """The run folder that holds the cell: a borrowed run of another design, or :meth:`run_name`.

        >>> ALIAS.run("encoder", "k0", 3), ALIAS.run("decoder", "k0", 6), ALIAS.run("decoder", "k1", 0)
        ('causal-encoder-control-s3', 'alias-decoder-k0-s6', 'alias-decoder-k1-s0')
        """
        own = self.run_name(kind, level, seed)
        borrowed = self.borrow(kind, level, int(seed)) if self.borrow is not None else None
        return borrowed or own

    def matches(self, name: str) -> bool:
        """Whether ``name`` is a run name of this design."""
        m = self.pattern.match(name)
        return m is not None and m.group(2) in self.levels[m.group(1)]

    def parse(self, name: str) -> tuple[str, str, int]:
        """``(kind, level, seed)`` of one of this design's run names, else a ParameterError.

        >>> CAUSAL.parse("causal-decoder-proxy-early-s3")
        ('decoder', 'proxy-early', 3)
        """
        if not self.matches(name):
            per_kind = ("" if len(set(self.levels.values())) == 1 else
                        " (" + "; ".join(f"{k}: {'|'.join(v)}" for k, v in self.levels.items()) + ")")
            raise ParameterError(f"run={name!r} is not a run of {self.title}: valid range is names {self.form}"
                                 f"{per_kind}.")
        m = self.pattern.match(name)
        return m.group(1), m.group(2), int(m.group(3))

    def config(self, kind: str, level: str, seed: int, **overrides) -> RunConfig:
        """The config of the run of cell ``(kind, level, seed)`` (``overrides``: see ``build``)."""
        self.check_level(kind, level)
        return self.build(kind, level, int(seed), **overrides)

    def config_of(self, name: str, **overrides) -> RunConfig:
        """The config of the run ``name``."""
        return self.config(*self.parse(name), **overrides)

    def cells(self, seeds=None, kinds=KINDS) -> list[tuple[str, str, int, str]]:
        """Every cell ``(kind, level, seed, run folder)`` in queue order, borrowed ones included.
        ``seeds`` (one tuple for every architecture) replaces the registered :attr:`seeds`."""
        keyed = []
        for kind in kinds:
            for seed in (self.seeds[check_kind(kind)] if seeds is None else tuple(seeds)):
                for level in self.levels_of(kind, seed):
                    key = (self.order(kind, level, int(seed)) if self.order is not None
                           else (int(seed), kind != "decoder", self.levels[kind].index(level)))
                    keyed.append((key, self.run_name(kind, level, seed),
                                  (kind, level, int(seed), self.run(kind, level, seed))))
        return [cell for _, _, cell in sorted(keyed, key=lambda k: k[:2])]

    def levels_of(self, kind: str, seed: int) -> tuple[str, ...]:
        """The levels the grid has at ``(kind, seed)``: every level of ``kind`` that :attr:`keep` keeps.

        >>> RIVALS.levels_of("encoder", 6)
        ('standard-control', 'standard-proxy', 'unigram-control', 'unigram-proxy')
        """
        return tuple(lv for lv in self.levels[check_kind(kind)]
                     if self.keep is None or self.keep(kind, lv, int(seed)))

    def names(self, seeds=None, kinds=KINDS, stage: str | None = None) -> list[str]:
        """The runs a queue trains, in order: :meth:`cells` less the borrowed ones; with ``stage``
        (a :class:`Stage`'s name, or ``""`` for the design's own queue), only that queue's runs, in
        its order.

        >>> HORIZON.names(seeds=(0,), stage="long")[:3]
        ['horizon-decoder-standard-control-s0', 'horizon-decoder-standard-proxy-s0', 'horizon-decoder-unigram-control-s0']
        >>> HORIZON.names(seeds=(0,), stage="")[:2]
        ['horizon-encoder-mask-native-s0', 'horizon-encoder-random-native-s0']
        """
        own = [(kind, level, seed, run) for kind, level, seed, run in self.cells(seeds, kinds)
               if run == self.run_name(kind, level, seed)]
        if stage is None:
            return [run for *_, run in own]
        if stage == "":
            return [run for kind, level, seed, run in own if self.stage_of(kind, level, seed) is None]
        st = self.stage(stage)
        mine = [(st.order(kind, level, seed), run) for kind, level, seed, run in own if st.has(kind, level, seed)]
        return [run for _, run in sorted(mine)]

    def stage(self, name: str) -> Stage:
        """Its :class:`Stage` called ``name``, else a ParameterError naming the stages it has."""
        for st in self.stages:
            if st.name == name:
                return st
        raise ParameterError(f"stage={name!r} is not a stage of {self.title}: valid range is "
                             f"{[st.name for st in self.stages]}.")

    def stage_of(self, kind: str, level: str, seed: int) -> Stage | None:
        """The :class:`Stage` a cell belongs to, or None (the design's own queue trains it)."""
        return next((st for st in self.stages if st.has(kind, level, int(seed))), None)

    def describe_seeds(self) -> str:
        """The registered seeds in words: ``'0-2'``, or per architecture.

        >>> CAUSAL.describe_seeds()
        'encoder 0-11, decoder 0-4'
        """
        def span(s):
            consecutive = len(s) > 1 and tuple(s) == tuple(range(s[0], s[-1] + 1))
            return f"{s[0]}-{s[-1]}" if consecutive else " ".join(map(str, s))

        spans = {k: span(self.seeds[k]) for k in KINDS}
        return spans[KINDS[0]] if len(set(spans.values())) == 1 else ", ".join(f"{k} {s}" for k, s in spans.items())


# ---------------------------------------------------------------- the 2x2 sweep (chapter 8)
SWEEP_SEEDS = (0, 1, 2)
#: the constant-learning-rate controls of the seed-0 natural runs (chapter 8)
CONTROL_RUNS = ("encoder-natural-s0-constant-lr", "decoder-natural-s0-constant-lr")


def sweep_config(kind: str, regime: str, seed: int, **overrides) -> RunConfig:
    """The config of one run of the 2x2 sweep: chapter 8's schedule on the corpus' own mixture
    (``natural``) or the temperature-balanced one; ``overrides`` are further
    :class:`~tanbias.lab.config.RunConfig` fields (smoke runs).

    >>> c = sweep_config("decoder", "balanced", 1)
    >>> c.name, c.steps, c.size.name, c.schedule
    ('decoder-balanced-s1', 320, 'small', 'cosine')
    """
    check_kind(kind)
    check_choice("regime", regime, REGIMES)
    return RunConfig.from_dict({"name": f"{kind}-{regime}-s{int(seed)}", "kind": kind, "regime": regime,
                                "seed": int(seed), **_RUN_COMMON, **overrides})


def control_config(kind: str) -> RunConfig:
    """The constant-learning-rate control of the seed-0 natural run of ``kind`` (:data:`CONTROL_RUNS`)."""
    return sweep_config(kind, "natural", 0).replace(name=f"{kind}-natural-s0-constant-lr", schedule="constant")


#: the 2x2 sweep: its queue trains seed by seed, decoders first, the balanced regime first; its record
#: ``data/runs/sweep.json`` is the last sitting (the controls are trained on their own with
#: ``python -m tanbias.lab train data/runs/configs/<name>.json``)
SWEEP = Design(name="sweep", title="the 2x2 sweep", chapter=8, factor="regime",
               levels={k: REGIMES for k in KINDS}, seeds={k: SWEEP_SEEDS for k in KINDS}, prefix="",
               build=sweep_config, order=lambda kind, regime, seed: (seed, kind != "decoder", regime != "balanced"),
               sittings=False)


# ---------------------------------------------------------------- the dose-response experiment (chapter 10)
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


#: the dose experiment. Its queue trains the token knob's runs (every seed) before the language
#: knob's: the token knob is the one that moves frequency concentration, so a budget cut short
#: spends its time where the mechanism's test needs it; within a knob seed by seed, decoders first.
DOSE = Design(name="dose", title="the dose experiment", chapter=10, factor="level",
              levels={k: tuple(DOSE_LEVELS) for k in KINDS}, seeds={k: DOSE_SEEDS for k in KINDS}, prefix="dose-",
              build=dose_config,
              order=lambda kind, level, seed: ("token" not in DOSE_LEVELS[level]["knobs"], seed, kind != "decoder",
                                               DOSE_LEVELS[level]["order"]),
              registration="dose",
              registration_sha256="08c39fd658800c0a853fd46ca45acc2fc5dde9e8ba8eed956f6122dd4082dddc",
              budget_hours=5,
              posthoc_sha256="9ed954d29018675a719442e5c7cf0879e5d2a00b1b6968a41682a3442c2ecc48")


# ---------------------------------------------------------------- the causal test (chapter 12)
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
#: seeds per architecture, from the power analysis of chapter 12 on chapter 10's realised seed-to-seed
#: SD of the primary outcome (tanbias.lab.analysis.causal_design.power_analysis)
CAUSAL_SEEDS = {"decoder": (0, 1, 2, 3, 4), "encoder": tuple(range(12))}


def causal_arms(kind: str) -> tuple[str, ...]:
    """The arms of ``kind`` (the ``tied`` rival is the decoder's: the lab's encoder has no tied variant
    in the statement's comparison).

    >>> causal_arms("encoder")
    ('control', 'proxy', 'random', 'uniform', 'proxy-early', 'uniform-early')
    """
    check_kind(kind)
    return CAUSAL_ARMS if kind == "decoder" else tuple(a for a in CAUSAL_ARMS if a != "tied")


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


#: the causal test. Its queue trains the decoder's seeds, then the encoder's, seed by seed (each
#: finished seed is a complete replicate of every arm), arms in :data:`CAUSAL_ARMS` order: the
#: decoder reaches its registered power with 5 seeds, the encoder needs 12, so a budget cut short
#: leaves one architecture complete rather than two half done.
CAUSAL = Design(name="causal", title="the causal test", chapter=12, factor="arm",
                levels={k: causal_arms(k) for k in KINDS}, seeds=CAUSAL_SEEDS, prefix="causal-", build=causal_config,
                order=lambda kind, arm, seed: (kind != "decoder", seed, CAUSAL_ARMS.index(arm)),
                registration="causal",
                registration_sha256="2d7a55d85a14d4e185913621b0afd50e5c29a85026b0fdacabd12fffa4a8802c", budget_hours=6,
                posthoc_sha256="a57806285d45b86a2ffbb7244a5f041e1e0b17e4d5007b38dcc5bf7ae23b1d43")


# ---------------------------------------------------------------- the aliasing knob (chapter 11)
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


def _causal_control(kind: str, level: str, seed: int) -> str | None:
    """The causal test's control run that is the aliasing cell ``(kind, k0, seed)``, where that seed exists.

    The level without aliases has the config of the causal test's ``control`` arm (the skewed start
    in float32, no surgery, untied; trained after the fix that scores the probe's held-out batches
    with the run's own seed): where that arm has the seed, its run is the cell.
    """
    return CAUSAL.run_name(kind, "control", seed) if level == "k0" and seed in CAUSAL.seeds[kind] else None


#: the aliasing knob: its queue trains seed by seed, decoders first, levels in order; the ``k0``
#: cells it shares with the causal test's control arm are not trained again
ALIAS = Design(name="alias", title="the aliasing knob", chapter=11, factor="level",
               levels={k: tuple(ALIAS_LEVELS) for k in KINDS}, seeds={k: ALIAS_SEEDS for k in KINDS}, prefix="alias-",
               build=alias_config, registration="alias",
               registration_sha256="7d3e6a5f68c2e1cb94295431c6b1e9e5b9ae8c994d33f42e58a0545ec75a0dc0",
               borrow=_causal_control, budget_hours=4)


# ---------------------------------------------------------------- the rival accounts (chapter 13)
#: the output heads: the lab's standard head (no output bias) and the unigram head (a learnable
#: output bias initialised to the log of the add-one-smoothed unigram of the run's own targets)
RIVALS_HEADS = {"standard": "none", "unigram": "unigram"}
#: the arms crossed with the heads: the causal test's control, proxy and random arms and the
#: aliasing knob's top level; "long" is the control arm at four times the steps
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


def rivals_config(kind: str, cell: str, seed: int, steps: int = RUN_STEPS, size: str = "small",
                  languages=None, **overrides) -> RunConfig:
    """The config of one rivals run, cell ``"<head>-<arm>"``: the causal test's base with the head's
    output bias and the arm's surgery or aliasing; arm ``long`` is the control arm at
    :data:`RIVALS_LONG_STEPS` with :data:`RIVALS_LONG_PROBE_STEPS` probe steps.

    A standard-head control, proxy or random run has exactly the config of the causal run of
    that arm and seed but for its name; a standard-head ``k3`` run that of the aliasing run.

    >>> c = rivals_config("decoder", "unigram-proxy", 2)
    >>> c.name, c.output_bias, c.surgery.arm, c.precision
    ('rivals-decoder-unigram-proxy-s2', 'unigram', 'proxy', 'fp32')
    >>> rivals_config("encoder", "standard-random", 3) == causal_config("encoder", "random", 3).replace(
    ...     name="rivals-encoder-standard-random-s3")
    True
    >>> rivals_config("encoder", "standard-k3", 1) == alias_config("encoder", "k3", 1).replace(
    ...     name="rivals-encoder-standard-k3-s1")
    True
    >>> rivals_config("encoder", "standard-long", 0).steps
    1280
    """
    check_kind(kind)
    head, _, arm = cell.partition("-")
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
    return cfg.replace(name=f"rivals-{kind}-{cell}-s{int(seed)}", output_bias=RIVALS_HEADS[head])


def _rivals_has(kind: str, cell: str, seed: int) -> bool:
    """Whether the rivals grid has the cell: an arm at its registered seeds, a long run at seeds 0 and 1."""
    arm = cell.partition("-")[2]
    return seed in (RIVALS_LONG_SEEDS if arm == "long" else RIVALS_SEEDS[kind][arm])


def _rivals_order(kind: str, cell: str, seed: int) -> tuple:
    """The queue: seeds 0..4 of every cell first, a seed at a time (decoders first, heads, then arms),
    then the encoder's further seeds of the primary cells, then the long runs."""
    head, _, arm = cell.partition("-")
    long = arm == "long"
    return (long, seed >= 5, seed, kind != "decoder", list(RIVALS_HEADS).index(head),
            (*RIVALS_ARMS, "long").index(arm))


#: the rival accounts: the standard output head against the unigram head, crossed with the causal
#: test's control, proxy and random arms and the aliasing knob's top level, and long control runs
RIVALS = Design(name="rivals", title="the rival accounts", chapter=13, factor="cell",
                levels={k: tuple(f"{h}-{a}" for h in RIVALS_HEADS for a in (*RIVALS_ARMS, "long")) for k in KINDS},
                seeds={k: tuple(range(8 if k == "encoder" else 5)) for k in KINDS}, prefix="rivals-",
                build=rivals_config, order=_rivals_order, keep=_rivals_has, registration="rivals",
                registration_sha256="f616a6163c36be9bc5223fc484a850a912259c4f72eca8efbc9d10751ed5952c",
                budget_hours=9,
                posthoc_sha256="c58a4a9a9e4c52d18563ccfda96ce54ef24a46ff09852bbcbad976ec5b5b7054")


# ---------------------------------------------------------------- past the transient (chapter 14)
#: the horizon experiment's long runs: chapter 13's base at 4 x the steps (the cosine schedule
#: stretched, as chapter 13's long runs), both heads crossed with the control and proxy arms
HORIZON_STEPS = 4 * RUN_STEPS
HORIZON_LONG = tuple(f"{h}-{a}" for h in RIVALS_HEADS for a in ("control", "proxy"))
#: the encoder's collapse, a 2 x 2 at 320 steps on the standard head's control arm: what an
#: encoder's corrupted positions show (tanbias.lab.config.CORRUPTIONS) x its attention
#: (tanbias.lab.config.ATTENTIONS: "native" is the encoder's own, bidirectional)
HORIZON_COLLAPSE = ("mask-native", "random-native", "mask-causal", "random-causal")
#: seeds per architecture and part, from the power analysis on chapter 13's realised residual SDs
#: within the 10 h budget (data/preregistration/horizon.toml, tanbias.lab.analysis.horizon_design)
HORIZON_SEEDS = {"decoder": {"long": tuple(range(5))},
                 "encoder": {"long": tuple(range(4)), "collapse": tuple(range(4))}}


def _horizon_part(cell: str) -> str:
    return "collapse" if cell in HORIZON_COLLAPSE else "long"


def horizon_config(kind: str, cell: str, seed: int, steps: int | None = None, size: str = "small",
                   languages=None, **overrides) -> RunConfig:
    """The config of one run of the horizon experiment.

    A long cell ``"<head>-<arm>"`` is the rivals run of that cell at :data:`HORIZON_STEPS`, with
    chapter 13's long runs' 20 log-spaced probe steps and step 319 (the 320-step runs' last)
    beside them. A collapse cell ``"<corruption>-<attention>"`` (the encoder's) is the rivals
    encoder's standard-head control run with those options.

    >>> c = horizon_config("decoder", "unigram-proxy", 1)
    >>> c.name, c.steps, c.output_bias, c.surgery.arm, c.probe.grid(c.steps)[-3:]
    ('horizon-decoder-unigram-proxy-s1', 1280, 'unigram', 'proxy', [578, 860, 1279])
    >>> 319 in c.probe.grid(c.steps)
    True
    >>> c = horizon_config("encoder", "random-causal", 2)
    >>> c.steps, c.corruption, c.attention
    (320, 'random', 'causal')
    >>> horizon_config("encoder", "mask-native", 0) == rivals_config("encoder", "standard-control", 0).replace(
    ...     name="horizon-encoder-mask-native-s0")
    True
    """
    check_kind(kind)
    check_choice("cell", cell, HORIZON.levels[kind])
    name = f"horizon-{kind}-{cell}-s{int(seed)}"
    if _horizon_part(cell) == "collapse":
        corruption, _, attention = cell.partition("-")
        cfg = rivals_config(kind, "standard-control", seed, steps=RUN_STEPS if steps is None else steps, size=size,
                            languages=languages, **overrides)
        return cfg.replace(name=name, corruption=corruption, attention=attention)
    n = HORIZON_STEPS if steps is None else int(steps)
    cfg = rivals_config(kind, cell, seed, steps=n, size=size, languages=languages, **overrides)
    extra = [RUN_STEPS - 1] if n > RUN_STEPS else []
    return cfg.replace(name=name, probe={"n_steps": min(RIVALS_LONG_PROBE_STEPS, n), "extra_steps": extra})


def _horizon_has(kind: str, cell: str, seed: int) -> bool:
    return seed in HORIZON_SEEDS[kind][_horizon_part(cell)]


def _horizon_order(kind: str, cell: str, seed: int) -> tuple:
    """The queue: the encoder's collapse 2 x 2 first, a seed at a time (the one part whose registered
    power the budget buys on a slow machine), then the long runs, a seed at a time (decoders first:
    slower, so two workers stay balanced)."""
    part = _horizon_part(cell)
    return (part == "long", seed, kind != "decoder", HORIZON.levels[kind].index(cell))


def _horizon_long_order(kind: str, cell: str, seed: int) -> tuple:
    """The long stage's queue (data/preregistration/horizon-long.toml [queue]): every decoder run
    first, a seed at a time, every cell of a seed before the next; then the encoder's, likewise."""
    return (kind != "decoder", seed, HORIZON_LONG.index(cell))


#: the long part, registered again for the machine that trains it (horizon-long.toml): decoders first,
#: its own 16 h budget and record (the collapse part used horizon.toml's 10 h)
HORIZON_LONG_STAGE = Stage(name="long", title="the long part", registration="horizon-long",
                           registration_sha256="c1ac5e210243b8485ab0c1aa066a6864eb7810b74e43dedfabdbbe7599407874", has=lambda kind, cell, seed: cell in HORIZON_LONG,
                           order=_horizon_long_order, budget_hours=16)


#: past the transient: chapter 13's primary cells at 4 x the steps, and the encoder's collapse
HORIZON = Design(name="horizon", title="the horizon experiment", chapter=14, factor="cell",
                 levels={"decoder": HORIZON_LONG, "encoder": (*HORIZON_LONG, *HORIZON_COLLAPSE)},
                 seeds={k: tuple(sorted({s for part in HORIZON_SEEDS[k].values() for s in part})) for k in KINDS},
                 prefix="horizon-", build=horizon_config, order=_horizon_order, keep=_horizon_has,
                 registration="horizon",
                 registration_sha256="339000e7a22152d46612c671fb0b1b3127766a989e559948c0f37abdd4ccb30b", budget_hours=10,
                 posthoc_sha256="4ba4d69bfec5009348a26d85c90a40eac9f9805196d091d4599924abd4390a17",
                 stages=(HORIZON_LONG_STAGE,))


# ---------------------------------------------------------------- the registry
#: every experiment of the lab, by name, in the order they were designed: an experiment's analysis
#: may read the experiments registered before it (the layer test's chain follows this order)
EXPERIMENTS: dict[str, Design] = {d.name: d for d in (SWEEP, DOSE, ALIAS, CAUSAL, RIVALS, HORIZON)}


#: the first chapter of the training lab: chapter 7 reads two runs of the sweep before its chapter
LAB_FIRST_CHAPTER = 7


def lab_chapters() -> tuple[int, ...]:
    """The training lab's chapters, first to last: from :data:`LAB_FIRST_CHAPTER` to the last chapter a
    design of :data:`EXPERIMENTS` names (a new experiment's chapter extends it).

    >>> lab_chapters()[0], lab_chapters()[-1] == max(d.chapter for d in EXPERIMENTS.values() if d.chapter)
    (7, True)
    """
    last = max(d.chapter for d in EXPERIMENTS.values() if d.chapter is not None)
    return tuple(range(LAB_FIRST_CHAPTER, last + 1))


def design_of(name: str) -> Design:
    """The design that names the run ``name``, else a ParameterError listing every form.

    >>> design_of("alias-encoder-k2-s7").title
    'the aliasing knob'
    """
    for design in EXPERIMENTS.values():
        if design.matches(name):
            return design
    forms = "; ".join(f"{d.title}: {d.form}" for d in EXPERIMENTS.values())
    raise ParameterError(f"run={name!r} is not a run of the lab's experiments: valid range is their names "
                         f"({forms}) and the controls {list(CONTROL_RUNS)}.")


def design_config(name: str) -> RunConfig:
    """The config the experiments' designs give the run ``name`` (any design's run, or a control).

    >>> design_config("dose-encoder-uniform-s0").temperature
    inf
    """
    if name in CONTROL_RUNS:
        return control_config(name.split("-")[0])
    return design_of(name).config_of(name)
