"""The lab's constants and its typed run config: sizes, probe settings, validation (no torch).

The bottom layer of :mod:`tanbias.lab`: every other lab module reads its
constants from here, and nothing here imports another lab module. One
definition each:

* :data:`KINDS` (encoder = EuroBERT, masked LM; decoder = Llama, causal LM),
  :data:`REGIMES` (natural or temperature-balanced language mixture),
  :data:`SCHEDULES`, :data:`PRECISIONS`, :data:`MLM_PROBABILITY`;
* the tokenizer's special tokens :data:`SPECIAL_TOKENS`, their ids
  (``PAD_ID`` ... ``MASK_ID``) and :data:`N_SPECIAL` (ids below it are special);
* :class:`ModelSize` and :data:`SIZES` (model and batch shapes);
* :class:`ProbeSettings` (what the alignment probe captures and how it is
  analysed), :class:`SurgerySettings` (the gradient surgery of chapter 12) and
  :class:`RunConfig` (one training run), frozen dataclasses
  that validate themselves: a bad value is a :class:`~tanbias.errors.ParameterError`
  naming the field, the value and the valid range; :func:`load_config`;
* :data:`REPRODUCE_TOLERANCE`, :data:`EARLY_FRAC`, :data:`MECH_SEED`.

The experiments' designs (the 2x2 sweep, the dose levels, their run names)
are :mod:`tanbias.lab.experiments`.

Code reads a config's attributes (``cfg.size.batch_size``, ``cfg.probe.rank``,
``cfg.tokens_per_step``), never string keys: a typo is an ``AttributeError``
at the line that made it. JSON is the boundary: :meth:`RunConfig.from_dict`
and :meth:`RunConfig.to_dict` (the run folder's ``config.json``).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from tanbias._checks import check_choice, check_int, check_real
from tanbias.errors import ParameterError

__all__ = ["KINDS", "REGIMES", "SIZES", "ARCH_KEYS", "MLM_PROBABILITY", "SPECIAL_TOKENS", "N_SPECIAL",
           "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID", "MASK_ID", "REPRODUCE_TOLERANCE", "EARLY_FRAC", "MECH_SEED",
           "SCHEDULES", "DEFAULT_TEMPERATURE", "PRECISIONS", "ModelSize", "ProbeSettings",
           "RunConfig", "SurgerySettings", "SURGERY_ARMS", "LATER_KEYS", "DEFAULT_OMITTED", "OUTPUT_BIASES", "CORRUPTIONS", "ATTENTIONS", "PROBE_STEPS", "PROBE_TOKENS", "probe_steps", "model_size", "check_kind", "check_run_name", "check_temperature", "load_config"]

KINDS = ("encoder", "decoder")
REGIMES = ("natural", "balanced")
SCHEDULES = ("cosine", "constant")
#: the precision a run computes in (``bf16``: bfloat16 autocast with float32 master weights and
#: optimizer state); where it computes is :data:`tanbias.lab.devices.DEVICES`
PRECISIONS = ("fp32", "bf16")
MLM_PROBABILITY = 0.3
#: temperature of the "balanced" regime when a config does not set one (XLM-R's and mT5's 10/3)
DEFAULT_TEMPERATURE = 10.0 / 3.0
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>", "<mask>")
N_SPECIAL = len(SPECIAL_TOKENS)          # ids 0 .. N_SPECIAL - 1 are the special tokens
PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = range(N_SPECIAL)

#: the architecture fields of a :class:`ModelSize` (what ``transformers`` configs take)
ARCH_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")

#: ``reproduce`` passes if every logged step's loss agrees within this absolute
#: tolerance (nats) and every alignment-table metric within ALIGN_RTOL relative.
REPRODUCE_TOLERANCE = {"loss_atol": 1e-4, "align_rtol": 1e-3, "align_atol": 1e-6}

#: probe steps with 0 < step/steps <= EARLY_FRAC are "early" (the frozen proxy's fitting window)
EARLY_FRAC = 0.3
#: seed of the common held-out text on which every run's radii are measured
MECH_SEED = 424_242


@dataclass(frozen=True)
class ModelSize:
    """The shape of a lab model and of its training batches.

    Example
    -------
    >>> s = SIZES["small"]
    >>> s.hidden_size, s.tokens_per_step, s.architecture()["num_hidden_layers"]
    (192, 4096, 4)
    """
    name: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    seq_len: int
    batch_size: int
    #: the peak learning rate a run of this size uses unless its config sets one
    lr: float

    @property
    def tokens_per_step(self) -> int:
        """Tokens in one training batch, ``batch_size * seq_len``."""
        return self.batch_size * self.seq_len

    def architecture(self) -> dict:
        """The :data:`ARCH_KEYS` fields as a dict (the keyword arguments of a ``transformers`` config)."""
        return {k: getattr(self, k) for k in ARCH_KEYS}


# "small" is the lab's workhorse (measured in tanbias.lab.models' docstring); "smoke" does a
# forward/backward in milliseconds, for tests; "base" and "large" are for a GPU
# (scripts/gpu_check.sh): the same family, about 38 M and 120 M parameters outside the input
# embedding (output layer included), seconds per step measured in data/runs/sizes.json.
SIZES: dict[str, ModelSize] = {s.name: s for s in (
    ModelSize("small", hidden_size=192, num_hidden_layers=4, num_attention_heads=4, intermediate_size=768,
              seq_len=128, batch_size=32, lr=2e-3),
    ModelSize("smoke", hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              seq_len=32, batch_size=4, lr=3e-3),
    ModelSize("base", hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=2048,
              seq_len=256, batch_size=32, lr=1e-3),
    ModelSize("large", hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
              seq_len=512, batch_size=32, lr=6e-4),
)}


def model_size(size) -> ModelSize:
    """The :class:`ModelSize` named ``size`` (or ``size`` itself), else a ParameterError.

    >>> model_size("smoke").batch_size
    4
    """
    if isinstance(size, ModelSize):
        return size
    check_choice("size", size, tuple(SIZES))
    return SIZES[size]


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


def check_temperature(temperature) -> float:
    """A mixture temperature in ``[1, inf]`` (the string ``"inf"`` allowed, as JSON has no infinity)."""
    t = float("inf") if temperature == "inf" else temperature
    try:
        ok = not isinstance(t, bool) and float(t) >= 1.0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ParameterError(f"temperature={temperature!r} is out of range: valid range is [1, inf] "
                             "(a number, or 'inf' for the uniform mixture). 1 is the natural mixture.")
    return float(t)


def _unknown_keys(given: dict, fields, prefix: str = "") -> None:
    for k, v in given.items():
        if k not in fields:
            raise ParameterError(f"{prefix}{k}={v!r} is not allowed: valid range is the config keys "
                                 f"{sorted(fields)}. Check the spelling.")


def _set(obj, name: str, value) -> None:
    object.__setattr__(obj, name, value)        # a frozen dataclass normalises itself once


#: the probe's defaults that depend on the run: at most this many probe steps (never more
#: than the run's steps) and this many captured tokens per step (never more than a batch)
PROBE_STEPS = 14
PROBE_TOKENS = 4096


def probe_steps(steps: int, n: int = 14) -> list[int]:
    """Log-spaced probe steps (the probe's grid, :class:`ProbeSettings`) in ``[0, steps - 1]``, step 0 and the last step included.

    Example
    -------
    >>> probe_steps(100, 6)
    [0, 1, 3, 10, 31, 99]
    """
    import numpy as np

    steps, n = int(steps), int(n)
    if steps <= 1:
        return [0]
    grid = np.geomspace(1, steps - 1, max(n - 1, 1))
    out = sorted({0, steps - 1, *np.rint(grid).astype(int).tolist()})
    return out


@dataclass(frozen=True)
class ProbeSettings:
    """What the alignment probe captures during a run, and how its captures are analysed.

    ``n_steps`` and ``tokens`` left as None are derived from the run
    (:meth:`resolved`): ``min(14, steps)`` probe steps and ``min(4096, tokens per
    step)`` captured tokens, so a default fits every size and every number of steps.

    Example
    -------
    >>> p = ProbeSettings(rank=4).resolved(steps=12, tokens_per_step=128)
    >>> p.n_steps, p.tokens, p.rank
    (12, 128, 4)
    """
    enabled: bool = True
    #: probe steps (log-spaced over the run, :func:`tanbias.lab.config.probe_steps`)
    n_steps: int | None = None
    #: captured tokens per probe step
    tokens: int | None = None
    #: rank of the activation-PCA proxy of the tangent space
    rank: int = 8
    #: rank of the per-type local PCA (normal shares)
    local_rank: int = 4
    #: share of the run whose captures fit the frozen proxy
    fit_fraction: float = 0.3
    n_controls: int = 20
    n_buckets: int = 3
    min_count: int = 8
    #: IsoScore*'s shrinkage
    zeta: float = 0.1
    #: layers analysed (None: all); 0 is the embedding output
    layers: tuple[int, ...] | None = None
    #: further probe steps beside the log grid (e.g. the last step of a shorter run, to compare
    #: two horizons at one step); left out of a config file when empty, as before the field existed
    extra_steps: tuple[int, ...] = ()
    #: which of ``n_steps``, ``tokens`` :meth:`resolved` derived from the run (not given)
    derived: frozenset = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self):
        _set(self, "derived", frozenset(self.derived))
        if self.layers is not None:
            _set(self, "layers", tuple(self.layers))
        _set(self, "extra_steps", tuple(sorted({check_int("probe.extra_steps", s, lo=0) for s in self.extra_steps})))

    @classmethod
    def from_dict(cls, d: dict | None) -> "ProbeSettings":
        """Settings from a dict of fields (missing ones default); an unknown key is a ParameterError."""
        d = dict(d or {})
        _unknown_keys(d, [f.name for f in dataclasses.fields(cls) if f.name != "derived"])
        return cls(**d)

    def to_dict(self) -> dict:
        """The settings as the ``probe`` entry of a ``config.json``."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "derived"}
        d["layers"] = list(self.layers) if self.layers is not None else None
        if self.extra_steps:
            d["extra_steps"] = list(self.extra_steps)
        else:
            del d["extra_steps"]
        return d

    def grid(self, steps: int) -> list[int]:
        """The probe steps of a run of ``steps`` steps: the log grid of :attr:`n_steps`
        (:func:`tanbias.lab.config.probe_steps`) and :attr:`extra_steps`.

        >>> ProbeSettings(n_steps=6, extra_steps=(50,)).grid(100)
        [0, 1, 3, 10, 31, 50, 99]
        """
        n = min(PROBE_STEPS, int(steps)) if self.n_steps is None else self.n_steps
        return sorted({*probe_steps(steps, n), *(s for s in self.extra_steps if s < int(steps))})

    def resolved(self, steps: int, tokens_per_step: int) -> "ProbeSettings":
        """``n_steps`` and ``tokens`` filled in for a run of ``steps`` steps and batches of
        ``tokens_per_step`` tokens (given values are kept and checked against them)."""
        n = min(PROBE_STEPS, int(steps)) if self.n_steps is None else self.n_steps
        tok = min(PROBE_TOKENS, int(tokens_per_step)) if self.tokens is None else self.tokens
        n = check_int("probe.n_steps", n, lo=2, hi=int(steps))
        tok = check_int("probe.tokens", tok, lo=16, hi=int(tokens_per_step))
        for s in self.extra_steps:
            check_int("probe.extra_steps", s, lo=0, hi=int(steps) - 1)
        derived = self.derived | {k for k in ("n_steps", "tokens") if getattr(self, k) is None}
        return dataclasses.replace(self, n_steps=n, tokens=tok, derived=derived)

    def unresolved(self) -> "ProbeSettings":
        """The settings with the values :meth:`resolved` derived set back to None."""
        return dataclasses.replace(self, **{k: None for k in self.derived}, derived=frozenset())

    def checked(self, D: int, L: int) -> "ProbeSettings":
        """The analysis settings checked for activations of width ``D`` and ``L`` blocks.

        Shared by training runs (:class:`RunConfig`) and released checkpoints
        (:func:`tanbias.lab.analysis.checkpoint_probe.probe_checkpoints`).
        """
        rank = check_int("probe.rank", self.rank, lo=1, hi=D // 2,
                         hint=f"D={D}; the 20 controls must fit orthogonal to the proxy (rank <= D/2 < D).")
        local_rank = check_int("probe.local_rank", self.local_rank, lo=1, hi=D // 2)
        layers = None if self.layers is None else tuple(
            check_int("probe.layers", x, lo=0, hi=L, hint=f"Layer 0 is the embedding output, {L} the last block.")
            for x in self.layers)
        return dataclasses.replace(
            self, rank=rank, local_rank=local_rank,
            fit_fraction=check_real("probe.fit_fraction", self.fit_fraction, 0, 1, hi_open=False),
            n_controls=check_int("probe.n_controls", self.n_controls, lo=2),
            n_buckets=check_int("probe.n_buckets", self.n_buckets, lo=1, hi=10),
            min_count=check_int("probe.min_count", self.min_count, lo=local_rank + 1),
            zeta=check_real("probe.zeta", self.zeta, 0, 1, lo_open=False), layers=layers)


#: the surgery's arms: which rank-r subspace of a layer's input space the update is scaled in
#: (``proxy``: the top principal directions of the layer's inputs; ``random``: a random one),
#: or ``uniform``: the whole update scaled so that it loses the energy the proxy arm would
SURGERY_ARMS = ("proxy", "random", "uniform")


@dataclass(frozen=True)
class SurgerySettings:
    """The gradient surgery of a run (chapter 12, :mod:`tanbias.lab.surgery`).

    After each optimizer step in the surgery window, the update ``ΔW`` of every
    linear map that reads the normalised residual stream (q, k, v, gate, up) becomes
    ``ΔW (α P + I − P)``, ``P`` the projector onto ``arm``'s rank-``rank`` subspace
    of the map's input space, re-estimated every ``every`` steps; ``uniform``
    scales ``ΔW`` by ``√(1 − e)``, ``e`` the energy share the ``proxy`` arm would remove.

    Example
    -------
    >>> s = SurgerySettings(arm="proxy", alpha=0.0, until=0.3)
    >>> s.active(step=95, steps=320), s.active(step=96, steps=320)
    (True, False)
    """
    arm: str = "proxy"
    #: the factor on the update's component in P: 0 removes it, 1 is no surgery
    alpha: float = 0.0
    #: rank r of P (chapter 7's proxy rank)
    rank: int = 8
    #: P is re-estimated from the current batch's inputs every this many steps
    every: int = 1
    #: the share of the run's steps under surgery, from the first (1: all; EARLY_FRAC: the early window)
    until: float = 1.0

    def __post_init__(self):
        check_choice("surgery.arm", self.arm, SURGERY_ARMS)
        _set(self, "alpha", check_real("surgery.alpha", self.alpha, 0, 1, lo_open=False, hi_open=False,
                                       hint="0 removes the update's component in P, 1 is no surgery."))
        _set(self, "rank", check_int("surgery.rank", self.rank, lo=1))
        _set(self, "every", check_int("surgery.every", self.every, lo=1))
        _set(self, "until", check_real("surgery.until", self.until, 0, 1, hi_open=False,
                                       hint="The share of the steps under surgery, counted from the first."))

    @classmethod
    def from_dict(cls, d: dict) -> "SurgerySettings":
        """Settings from a dict of fields; an unknown key is a ParameterError."""
        if not isinstance(d, dict):
            raise ParameterError(f"surgery={d!r} is not allowed: valid range is None or a dict of the "
                                 f"surgery settings {[f.name for f in dataclasses.fields(cls)]}.")
        _unknown_keys(d, [f.name for f in dataclasses.fields(cls)], prefix="surgery.")
        return cls(**d)

    def to_dict(self) -> dict:
        """The settings as the ``surgery`` entry of a ``config.json``."""
        return dataclasses.asdict(self)

    def last_step(self, steps: int) -> int:
        """The number of steps under surgery, ``round(until * steps)`` (steps ``0 .. last_step - 1``)."""
        return int(round(self.until * steps))

    def active(self, step: int, steps: int) -> bool:
        """Whether step ``step`` (from 0) of a run of ``steps`` steps is under surgery."""
        return step < self.last_step(steps)


#: run-config keys that runs trained before they existed do not store; read back from such a
#: run's config.json they keep their defaults, and :meth:`RunConfig.to_dict` leaves them out
#: again, so a committed config.json round-trips byte for byte
LATER_KEYS = ("language_weights", "temperature", "flatten", "flatten_f0", "probe_eval_batches",
              "precision", "schedule", "tie_embeddings", "surgery", "alias", "alias_f0")

#: run-config keys written to a config.json only where they differ from their default: a setting
#: that every config made before it existed (committed runs and the design files of
#: data/runs/configs/ alike) must keep out of its file, byte for byte
DEFAULT_OMITTED = {"output_bias": "none", "corruption": "mask", "attention": "native"}

#: a model's attention (:func:`tanbias.lab.models.make_model`): "native", the architecture's own
#: (bidirectional for the encoder, causal for the decoder; every run before this option); "causal",
#: the encoder with causal attention on its masked objective (the self-attention account of the
#: encoder's collapse, Godey et al. 2024)
ATTENTIONS = ("native", "causal")

#: what an encoder's masked positions show (:func:`tanbias.lab.data.mask_tokens`): "mask", the shared
#: <mask> row (BERT's rule, every run before this option); "random", a token drawn uniformly from the
#: non-special vocabulary, so that no input row is shared by every masked position (the mask-token
#: account of the encoder's collapse, Meng et al. 2024)
CORRUPTIONS = ("mask", "random")

#: the output layer's bias (:func:`tanbias.lab.models.make_model`): "none", the lab's standard head;
#: "unigram", a learnable bias initialised to the log of the add-one-smoothed unigram distribution
#: of the run's own training targets (the unigram-first account of the rivals chapter)
OUTPUT_BIASES = ("none", "unigram")


@dataclass(frozen=True)
class RunConfig:
    """One training run of the lab: which model, which data, how long, what the probe captures.

    Every value is checked when the config is made, and the defaults that depend
    on the size or the number of steps are derived from them (``lr`` from the
    size, the probe's steps and tokens as :class:`ProbeSettings` says), so a
    config that names only a size and a number of steps trains, on every size.

    Example
    -------
    >>> cfg = RunConfig.from_dict({"name": "x", "kind": "decoder", "size": "smoke", "steps": 12})
    >>> cfg.size.hidden_size, cfg.tokens_per_step, cfg.lr, cfg.probe.n_steps, cfg.probe.tokens
    (32, 128, 0.003, 12, 128)
    >>> RunConfig.from_dict({"name": "x", "size": "smoke", "lr": 0})
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: lr=0 is out of range: valid range is (0, inf). ...
    """
    name: str
    kind: str = "encoder"
    size: ModelSize = SIZES["small"]
    regime: str = "natural"
    #: a subset of the corpus' languages (None: all); that the corpus has them is checked where
    #: the corpus is read (:func:`tanbias.lab.data.check_languages`)
    languages: tuple[str, ...] | None = None
    seed: int = 0
    #: the mixture's natural word shares per language (None: the corpus' own sizes)
    language_weights: dict | None = None
    #: the "balanced" regime's temperature (None: DEFAULT_TEMPERATURE; inf: uniform)
    temperature: float | None = None
    #: the direct knob on token frequencies: an occurrence of a type with stream frequency f is
    #: kept with probability min(1, (f / flatten_f0) ** -flatten); 0 keeps everything
    flatten: float = 0.0
    flatten_f0: float = 1e-4
    #: the aliasing knob on input frequencies (chapter 11, :mod:`tanbias.lab.aliasing`): an occurrence
    #: of a type of stream frequency f > alias_f0 is shown as one of round((f / alias_f0) ** alias)
    #: alias ids (new input-embedding rows), drawn per occurrence; targets stay the types; 0: none
    alias: float = 0.0
    alias_f0: float = 1e-4
    #: held-out batches evaluated at every probe step (0: only the final evaluation)
    probe_eval_batches: int = 0
    #: arithmetic of the forward and backward passes (PRECISIONS); the probe captures float32
    precision: str = "fp32"
    #: the output layer shares the input embedding's weights (a rival account of anisotropy, chapter 12)
    tie_embeddings: bool = False
    #: the gradient surgery of chapter 12 (None: none)
    surgery: SurgerySettings | None = None
    #: the output layer's bias (:data:`OUTPUT_BIASES`; left out of config.json when "none")
    output_bias: str = "none"
    #: an encoder's masked positions (:data:`CORRUPTIONS`; left out of config.json when "mask")
    corruption: str = "mask"
    #: the model's attention (:data:`ATTENTIONS`; left out of config.json when "native")
    attention: str = "native"
    steps: int = 240
    #: peak learning rate (None: the size's)
    lr: float | None = None
    #: warm-up steps (None: steps // 20)
    warmup: int | None = None
    schedule: str = "cosine"
    weight_decay: float = 0.01
    checkpoint_every: int = 20
    eval_batches: int = 8
    threads: int = 1
    probe: ProbeSettings = ProbeSettings()
    #: the :data:`LATER_KEYS` the config.json this config was read from lacks (see there)
    omitted_keys: frozenset = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self):
        check_run_name(self.name)
        check_choice("kind", self.kind, KINDS)
        _set(self, "size", model_size(self.size))
        check_choice("regime", self.regime, REGIMES)
        if self.languages is not None:
            if isinstance(self.languages, str) or not all(isinstance(x, str) for x in self.languages):
                raise ParameterError(f"languages={self.languages!r} is out of range: valid values are "
                                     "lists of language codes such as ['en', 'de']. Pass None for all.")
            _set(self, "languages", tuple(self.languages))
        if self.language_weights is not None:
            w = self.language_weights
            if not isinstance(w, dict) or not w or not all(
                    isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                    for k, v in w.items()):
                raise ParameterError(f"language_weights={w!r} is out of range: valid values are a dict "
                                     "{language code: positive weight}, e.g. {'en': 2, 'de': 1}. Pass None "
                                     "for the corpus' own sizes.")
            _set(self, "language_weights", {k: float(v) for k, v in w.items()})
        if self.temperature is not None:
            _set(self, "temperature", check_temperature(self.temperature))
        _set(self, "flatten", check_real("flatten", self.flatten, 0, 1, lo_open=False, hi_open=False,
                                         hint="0 keeps every token; 1 flattens every type above "
                                              "flatten_f0 to it."))
        _set(self, "flatten_f0", check_real("flatten_f0", self.flatten_f0, 0, 1, hi_open=True))
        _set(self, "alias", check_real("alias", self.alias, 0, 2, lo_open=False, hi_open=False,
                                       hint="0 aliases nothing; 1 brings every alias of a type above "
                                            "alias_f0 to about alias_f0."))
        _set(self, "alias_f0", check_real("alias_f0", self.alias_f0, 0, 1, hi_open=True))
        if self.alias > 0 and self.tie_embeddings:
            raise ParameterError(f"alias={self.alias!r} is not allowed with tie_embeddings=True: valid range is "
                                 "alias=0 for a tied model (its output layer would have to grow the alias rows "
                                 "too, and the targets must stay the types). Untie the embeddings.")
        _set(self, "probe_eval_batches", check_int("probe_eval_batches", self.probe_eval_batches, lo=0))
        check_choice("precision", self.precision, PRECISIONS)
        if not isinstance(self.tie_embeddings, bool):
            raise ParameterError(f"tie_embeddings={self.tie_embeddings!r} is out of range: valid values are "
                                 "true and false.")
        check_choice("output_bias", self.output_bias, OUTPUT_BIASES)
        check_choice("corruption", self.corruption, CORRUPTIONS)
        check_choice("attention", self.attention, ATTENTIONS)
        if self.kind == "decoder" and self.attention != "native":
            raise ParameterError(f"attention={self.attention!r} is not allowed for kind='decoder': valid range is "
                                 "attention='native' (a decoder's own attention is causal already).")
        if self.kind == "decoder" and self.corruption != "mask":
            raise ParameterError(f"corruption={self.corruption!r} is not allowed for kind='decoder': valid range "
                                 "is corruption='mask' (a decoder masks nothing; the option is the encoder's).")
        if self.output_bias != "none" and self.tie_embeddings:
            raise ParameterError(f"output_bias={self.output_bias!r} is not allowed with tie_embeddings=True: "
                                 "valid range is output_bias='none' for a tied model (the rivals' unigram "
                                 "head is studied on the untied models). Untie the embeddings.")
        if self.surgery is not None:
            sg = self.surgery if isinstance(self.surgery, SurgerySettings) else SurgerySettings.from_dict(self.surgery)
            check_int("surgery.rank", sg.rank, lo=1, hi=self.size.hidden_size // 2,
                      hint=f"hidden_size={self.size.hidden_size}; P must leave room for its complement.")
            _set(self, "surgery", sg)
        _set(self, "seed", check_int("seed", self.seed, lo=0))
        _set(self, "steps", check_int("steps", self.steps, lo=2, hint="A run needs at least 2 steps."))
        _set(self, "lr", self.size.lr if self.lr is None else check_real(
            "lr", self.lr, lo=0, hint="Pass a positive learning rate such as 2e-3."))
        if self.warmup is not None:
            _set(self, "warmup", check_int("warmup", self.warmup, lo=1, hi=self.steps))
        check_choice("schedule", self.schedule, SCHEDULES)
        _set(self, "weight_decay", check_real("weight_decay", self.weight_decay, 0, lo_open=False))
        _set(self, "checkpoint_every", check_int("checkpoint_every", self.checkpoint_every, lo=1))
        _set(self, "eval_batches", check_int("eval_batches", self.eval_batches, lo=1))
        _set(self, "threads", check_int("threads", self.threads, lo=1, hi=os.cpu_count() or 1))
        probe = self.probe if isinstance(self.probe, ProbeSettings) else ProbeSettings.from_dict(self.probe)
        probe = probe.resolved(self.steps, self.tokens_per_step)
        _set(self, "probe", probe.checked(self.size.hidden_size, self.size.num_hidden_layers))
        _set(self, "omitted_keys", frozenset(self.omitted_keys))

    # ------------------------------------------------------------------ derived
    @property
    def tokens_per_step(self) -> int:
        """Tokens in one training batch (the size's ``batch_size * seq_len``)."""
        return self.size.tokens_per_step

    @property
    def mixture_temperature(self) -> float:
        """The temperature the balanced regime uses (``temperature``, else :data:`DEFAULT_TEMPERATURE`)."""
        return DEFAULT_TEMPERATURE if self.temperature is None else self.temperature

    @property
    def warmup_steps(self) -> int:
        """Warm-up steps of the schedule (``warmup``, else ``steps // 20``, at least 1)."""
        return self.warmup or max(1, self.steps // 20)

    # ------------------------------------------------------------------ JSON
    @classmethod
    def from_dict(cls, d: dict, stored: bool = False) -> "RunConfig":
        """A config from a dict of fields (e.g. a JSON file); missing fields take their defaults.

        Parameters
        ----------
        d : dict
            ``size`` is a name of :data:`SIZES`, ``probe`` a dict of :class:`ProbeSettings` fields.
        stored : bool
            ``d`` is a run folder's ``config.json``: the :data:`LATER_KEYS` it lacks are
            remembered, so that :meth:`to_dict` gives the file back as it is.

        Raises
        ------
        ParameterError
            An unknown key, or a value out of its range (naming the field, the value and the range).
        """
        d = dict(d)
        fields = [f.name for f in dataclasses.fields(cls) if f.name != "omitted_keys"]
        _unknown_keys(d, fields)
        if "probe" in d and not isinstance(d["probe"], ProbeSettings):
            if not isinstance(d["probe"], dict):
                raise ParameterError(f"probe={d['probe']!r} is not allowed: valid range is a dict of the "
                                     f"probe settings {sorted(f.name for f in dataclasses.fields(ProbeSettings))}.")
            d["probe"] = ProbeSettings.from_dict(d["probe"])
        if "name" not in d:
            d["name"] = None
        omitted = frozenset(k for k in LATER_KEYS if k not in d) if stored else frozenset()
        return cls(**d, omitted_keys=omitted)

    def to_dict(self) -> dict:
        """The config as a run folder's ``config.json`` stores it (every field, resolved).

        A config read with ``from_dict(..., stored=True)`` from a run trained before some
        of :data:`LATER_KEYS` existed leaves those out again.

        >>> d = RunConfig(name="x", size="smoke", steps=12).to_dict()
        >>> d["size"], d["lr"], d["probe"]["n_steps"], d["temperature"]
        ('smoke', 0.003, 12, None)
        """
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "omitted_keys"}
        d["size"] = self.size.name
        d["languages"] = list(self.languages) if self.languages is not None else None
        d["language_weights"] = dict(self.language_weights) if self.language_weights is not None else None
        if self.temperature is not None and math.isinf(self.temperature):
            d["temperature"] = "inf"             # JSON has no infinity
        d["probe"] = self.probe.to_dict()
        d["surgery"] = self.surgery.to_dict() if self.surgery is not None else None
        for k in self.omitted_keys:
            del d[k]
        for k, default in DEFAULT_OMITTED.items():
            if d.get(k, default) == default:
                d.pop(k, None)
        return d

    def to_json(self) -> str:
        """:meth:`to_dict` as the text of a ``config.json`` (sorted keys, one space indent)."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

    def replace(self, **changes) -> "RunConfig":
        """A copy with ``changes`` (field names; ``size`` may be a name, ``probe`` a dict of overrides)."""
        probe = self.probe.unresolved() if {"steps", "size"} & set(changes) else self.probe
        if isinstance(changes.get("probe"), dict):
            changes["probe"] = dataclasses.replace(probe, **changes["probe"])
        else:
            changes.setdefault("probe", probe)
        # a field a change sets is written out again, even if the file it was read from lacked it
        return dataclasses.replace(self, **changes, omitted_keys=self.omitted_keys - set(changes))


def load_config(path) -> RunConfig:
    """Read a JSON config file (``name`` defaults to the file's stem, or to the run folder's
    name for a ``config.json``) into a checked :class:`RunConfig`."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError(f"CONFIG={str(path)!r} is not allowed: valid range is an existing JSON "
                             "file. See data/runs/configs/ for examples.")
    d = json.loads(path.read_text(encoding="utf-8"))
    if d.get("name") is None:
        d["name"] = path.parent.name if path.name == "config.json" else path.stem
    return RunConfig.from_dict(d, stored=path.name == "config.json")
