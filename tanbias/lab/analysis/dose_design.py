"""The dose experiment's design, fixed before its runs: predictions, levels, power (chapter 10).

Chapter 8's balancing barely moved token frequencies (+1.8 % effective
vocabulary), so its null result could not test the statement's scaling claim.
Chapter 10 turns two knobs, each at four levels, over a strongly skewed
language mixture (:data:`tanbias.lab.experiments.SKEWED_WEIGHTS`):

* the *language* knob: the mixture's temperature, natural (T = 1) to uniform —
  what EuroBERT-style balancing does;
* the *token* knob: subsampling occurrences of frequent types
  (:func:`tanbias.lab.data.keep_probabilities`), which moves the variable the
  mechanism names.

This module holds what was fixed *before* the runs: :data:`PREDICTIONS` (sign
and shape of each link, as the hypothesis states them) and the decision rule,
both read from ``data/preregistration/dose.toml`` (:data:`REGISTRATION`, pinned
by its sha256: :func:`tanbias.lab.analysis.registered.registration`),
:func:`expected_concentration` (each level's frequency concentration from the
corpus alone) and :func:`power_analysis` (the smallest end-to-end effect the
design detects, from the seed-to-seed variation of chapter 8's committed 2x2,
with :func:`tanbias.lab.analysis.registered.detectable_ratio`).
The levels, seeds and run names are :data:`tanbias.lab.experiments.DOSE`; the
statistics of the runs :mod:`tanbias.lab.analysis.dose`; the numbers the
chapter quotes :mod:`tanbias.lab.analysis.dose_report`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias._checks import check_int
from tanbias.lab.analysis import sweep
from tanbias.lab.analysis.registered import TARGET_RATIO, detectable_ratio, power_at, registration, seed_blocked_sd
from tanbias.lab.analysis.tables import run_metrics
from tanbias.lab.config import KINDS, N_SPECIAL
from tanbias.lab.experiments import DOSE, DOSE_LEVELS, DOSE_SEEDS, SKEWED_WEIGHTS, dose_config
from tanbias.lab.tokenizer import load_tokenizer
from tanbias.theory.frequency import concentration

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["REGISTRATION", "PREDICTIONS", "LINKS", "predicted_sign", "level_positions", "expected_concentration",
           "residual_sd", "power_analysis", "predictions_table", "design_numbers"]

#: the predictions and the decision rule of the dose experiment, as committed before its runs
#: (``data/preregistration/dose.toml``, pinned by :data:`~tanbias.lab.experiments.DOSE`; its header
#: gives what the git history shows)
REGISTRATION: dict = registration(DOSE)
#: What the tangent-bias hypothesis predicts along each knob, written down before any dose run
#: existed: ``{link: {"link": ..., "token": {"sign", "shape"}, "language": {...}}}``, read from
#: :data:`REGISTRATION`. "falls" = concentration of frequencies, x, goes from the skewed start
#: (x = 0) to the flattest level (x = 1).
PREDICTIONS: dict[str, dict] = REGISTRATION["predictions"]


#: The chain's measured links: run_table's column -> (PREDICTIONS key, label). Log scale for
#: ratios (collision, eta_g, enrichment); mean cosine and IsoScore* as they are.
LINKS: dict[str, tuple[str, str]] = {
    "log_collision": ("concentration", "ln collision probability of the training stream"),
    "log_eta_q1": ("eta_frequent", "ln η_g of the frequent bucket (last layer, common text)"),
    "log_enrichment_late": ("enrichment", "ln late enrichment (frozen proxy, mean over layers)"),
    "log_enrichment_early": ("enrichment", "ln early enrichment (frozen proxy, mean over layers)"),
    "mean_cosine_late": ("anisotropy", "mean cosine of the activations (last step, mean over layers)"),
    "isoscore_late": ("anisotropy", "IsoScore* of the activations (last step, mean over layers)"),
}


#: metrics that move against the link's named quantity (IsoScore* rises when anisotropy falls)
_OPPOSITE = frozenset(REGISTRATION["rule"]["opposite"])


def predicted_sign(metric: str, knob: str) -> str:
    """The sign :data:`PREDICTIONS` gives a metric's change as the knob flattens frequencies.

    >>> predicted_sign("log_enrichment_late", "token"), predicted_sign("isoscore_late", "token")
    ('-', '+')
    """
    key = LINKS[metric][0] if metric in LINKS else metric
    sign = PREDICTIONS[key][knob]["sign"] if key in PREDICTIONS else "?"
    return {"+": "-", "-": "+"}.get(sign, sign) if metric in _OPPOSITE else sign


def level_positions(knob: str) -> dict[str, float]:
    """Each level of a knob at its design position ``x`` in [0, 1] (0 = skewed start, 1 = flattest).

    The token knob's levels are equally spaced on the log collision probability by
    construction; the language knob's are placed by their order.

    >>> level_positions("token")
    {'skewed': 0.0, 'b16': 0.3333333333333333, 'b37': 0.6666666666666666, 'b100': 1.0}
    """
    levels = {lv: v["order"] for lv, v in DOSE_LEVELS.items() if knob in v["knobs"]}
    top = max(levels.values())
    return {lv: o / top for lv, o in sorted(levels.items(), key=lambda kv: kv[1])}


def expected_concentration(kind: str = "decoder") -> pd.DataFrame:
    """Each level's expected frequency concentration, from the corpus alone (before any run).

    The training stream's expected type frequencies (:attr:`tanbias.lab.data.Stream.frequencies`)
    times the token knob's keep probabilities, then :func:`tanbias.theory.frequency.concentration`.
    One row per level: ``level, knobs, x_token, x_language, collision, effective_types,
    top_share, kept`` (the share of occurrences the token knob keeps) and
    ``ratio`` (collision of the skewed start over the level's).
    """
    import pandas as pd

    from tanbias.lab.data import Stream, keep_probabilities

    tok = load_tokenizer()
    rows = []
    for level, spec in DOSE_LEVELS.items():
        cfg = dose_config(kind, level, 0)
        stream = Stream.from_config(cfg, tok)
        f = stream.frequencies
        kept = f * stream.keep if stream.keep is not None else f
        c = concentration(kept[N_SPECIAL:])
        rows.append({"level": level, "knobs": "+".join(spec["knobs"]),
                     "x_token": level_positions("token").get(level, np.nan),
                     "x_language": level_positions("language").get(level, np.nan),
                     "collision": c["collision"], "effective_types": c["effective_types"],
                     "top_share": c["top_share"], "kept": float(kept.sum() / f.sum())})
    df = pd.DataFrame(rows)
    df["ratio"] = df.loc[df["level"] == "skewed", "collision"].iloc[0] / df["collision"]
    return df


def residual_sd(kind: str, phase: str = "late", loaded=None) -> dict:
    """Seed-to-seed noise of the log enrichment in chapter 8's 2x2, paired by seed.

    The residual standard deviation of the additive model ``seed + regime`` on the
    layer-averaged log enrichment (frozen proxy, all tokens) of one architecture:
    the noise a seed-paired dose-response regression has to see through.

    Returns
    -------
    dict
        ``sd``, ``df`` (its degrees of freedom), ``n_seeds``.
    """
    check_int("kind", KINDS.index(kind) if kind in KINDS else -1, lo=0,
              hint=f"kind must be one of {KINDS}.")
    loaded = sweep.load_sweep() if loaded is None else loaded
    m = run_metrics(loaded)
    m = m[(m["layer"] == "mean") & (m["bucket"] == "all") & (m["proxy"] == "frozen")
          & (m["phase"] == phase) & (m["kind"] == kind)]
    y = m.pivot_table(index="seed", columns="regime", values="log_enrichment").to_numpy(float)
    return {k: v for k, v in seed_blocked_sd(y).items() if k != "n_levels"}


def power_analysis(seeds=(2, 3, 4, 5), loaded=None, phase: str = "late") -> pd.DataFrame:
    """The design's power: detectable end-to-end ratio per architecture and number of seeds.

    Returns a DataFrame with columns ``kind, residual_sd, sd_df, seeds, detectable_ratio``
    (80 % power, two-sided α = 0.05, four levels at x = 0, 1/3, 2/3, 1) and
    ``chosen`` (the design's :data:`~tanbias.lab.experiments.DOSE_SEEDS`).
    """
    import pandas as pd

    loaded = sweep.load_sweep() if loaded is None else loaded
    x = list(level_positions("token").values())
    rows = []
    for kind in KINDS:
        r = residual_sd(kind, phase, loaded)
        for n in seeds:
            rows.append({"kind": kind, "residual_sd": r["sd"], "sd_df": r["df"], "seeds": int(n),
                         "detectable_ratio": detectable_ratio(r["sd"], n, x),
                         "chosen": int(n) == len(DOSE_SEEDS)})
    return pd.DataFrame(rows)


def predictions_table() -> pd.DataFrame:
    """:data:`PREDICTIONS` as a table: one row per link and knob (sign and shape)."""
    import pandas as pd

    return pd.DataFrame([{"link": p["link"], "knob": knob, "predicted sign": p[knob]["sign"],
                          "predicted shape": p[knob]["shape"]}
                         for p in PREDICTIONS.values() for knob in ("token", "language")])


def design_numbers(expected=None, power=None) -> dict:
    """The numbers chapter 10's design section quotes, from :func:`expected_concentration` and :func:`power_analysis`
    (each computed when not given; ``power_planned_<kind>``: the planned power for the ×1.25 target,
    :func:`~tanbias.lab.analysis.registered.power_at`)."""
    expected = expected_concentration() if expected is None else expected
    power = power_analysis() if power is None else power
    w = np.array(list(SKEWED_WEIGHTS.values()))
    share = w / w.sum()
    e = expected.set_index("level")
    chosen = power[power["chosen"]].set_index("kind")
    two = power[power["seeds"] == 2].set_index("kind")
    return {"share_en": float(share[0]), "share_pt": float(share[-1]), "share_span": float(share[0] / share[-1]),
            "token_span": float(e.loc["b100", "ratio"]), "language_span": float(e.loc["uniform", "ratio"]),
            "kept_flattest": float(e.loc["b100", "kept"]),
            "sd_decoder": float(chosen.loc["decoder", "residual_sd"]),
            "sd_encoder": float(chosen.loc["encoder", "residual_sd"]), "sd_df": int(chosen["sd_df"].iloc[0]),
            "detectable_decoder": float(chosen.loc["decoder", "detectable_ratio"]),
            "detectable_encoder": float(chosen.loc["encoder", "detectable_ratio"]),
            "detectable_decoder_2": float(two.loc["decoder", "detectable_ratio"]),
            **{f"power_planned_{kind}": power_at(TARGET_RATIO, float(chosen.loc[kind, "residual_sd"]), len(DOSE_SEEDS),
                                                 list(level_positions("token").values())) for kind in KINDS},
            "n_seeds": len(DOSE_SEEDS), "n_runs": len(DOSE.names())}
