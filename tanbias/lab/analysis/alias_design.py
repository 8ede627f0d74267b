"""The aliasing knob's design, fixed before its runs: registration, levels, power (chapter 11).

Chapter 10's direct knob subsamples frequent types and so changes the text the
models read; its realistic knob hardly moves frequencies. The aliasing knob
(:mod:`tanbias.lab.aliasing`) shows each occurrence of a frequent type as one of
``k`` alias ids, so the frequency of what the model is *shown* falls while the
text, the targets and the loss stay. This module holds what was fixed before the
first aliasing run:

* the registration ``data/preregistration/alias.toml`` (design, predictions, rules;
  :func:`registration`, pinned by :data:`tanbias.lab.experiments.ALIAS`);
* :func:`expected_concentration`: each level's expected input collision probability
  from the corpus alone, beside the direct knob's levels it was matched to;
* :func:`power_analysis`: the power of the registered test at chapter 10's realised
  residual SDs, and the seeds it asks for.

The levels, seeds and run names are :data:`tanbias.lab.experiments.ALIAS`; the statistics of
the runs :mod:`tanbias.lab.analysis.alias`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab.aliasing import alias_counts, input_collision
from tanbias.lab.analysis import dose, dose_design, registered
from tanbias.lab.analysis.registered import power_at
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import ALIAS, ALIAS_F0, ALIAS_LEVELS, ALIAS_SEEDS, alias_config
from tanbias.lab.tokenizer import load_tokenizer

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["registration", "TARGET_RATIO", "TARGET_POWER", "POWER_READING", "FAMILY_ROWS",
           "ALIAS_READINGS", "positions", "expected_concentration", "power_analysis", "design_numbers"]

#: the end-to-end change the design is powered for, its power, and the reading it is read on
TARGET_RATIO, TARGET_POWER = registered.TARGET_RATIO, registered.TARGET_POWER
POWER_READING = "log_enrichment_late"
#: the aliasing knob's verdict readings (run-table columns) and what each is
ALIAS_READINGS = {
    "log_collision": "ln collision probability of the shown training stream (per input id)",
    "log_eta_q1": "ln η_g of the frequent bucket, per input id (last layer, common text)",
    "log_eta_q1_type": "ln η_g of the frequent bucket, per merged type (last layer, common text)",
    "log_enrichment_late": "ln late enrichment (frozen proxy, mean over layers)",
    "log_enrichment_early": "ln early enrichment (frozen proxy, mean over layers)",
    "mean_cosine_late": "mean cosine of the activations (last step, mean over layers)",
    "isoscore_late": "IsoScore* of the activations (last step, mean over layers)",
}
#: Holm's family once the aliasing rows (chapter 11) join the dose experiment's verdict table (chapter 10): 24 + 7 x 2
FAMILY_ROWS = 24 + len(ALIAS_READINGS) * len(KINDS)


def registration() -> dict:
    """``data/preregistration/alias.toml``, parsed, its sha256 checked against the pin of
    :data:`~tanbias.lab.experiments.ALIAS` (:func:`tanbias.lab.analysis.registered.registration`)."""
    return registered.registration(ALIAS)


def positions() -> dict[str, float]:
    """Each level at its design position ``x`` in [0, 1] (k0 = 0, k3 = 1), equally spaced by construction.

    >>> positions()
    {'k0': 0.0, 'k1': 0.3333333333333333, 'k2': 0.6666666666666666, 'k3': 1.0}
    """
    n = len(ALIAS_LEVELS) - 1
    return {lv: i / n for i, lv in enumerate(ALIAS_LEVELS)}


def expected_concentration(kind: str = "decoder") -> pd.DataFrame:
    """Each aliasing level's expected concentration, from the corpus alone (before any run).

    The skewed start's expected type frequencies (:attr:`tanbias.lab.data.Stream.frequencies`),
    each level's alias counts (:func:`tanbias.lab.aliasing.alias_counts`) and the input
    stream's collision probability ``Σ p_w² / k_w`` (:func:`tanbias.lab.aliasing.input_collision`).
    One row per level: ``level, exponent, collision, ratio`` (the start's over the level's),
    ``extra_rows`` (new input rows), ``aliased_types``, ``k_max``, and ``token_level``,
    ``token_ratio``: the direct knob's level of the same order and its ratio
    (:func:`tanbias.lab.analysis.dose_design.expected_concentration`), which the levels were matched to.
    """
    import pandas as pd

    from tanbias.lab.data import Stream

    tok = load_tokenizer()
    f = Stream.from_config(alias_config(kind, "k0", 0), tok).frequencies
    c0 = input_collision(f, np.ones(f.size, np.int64))
    token = dose_design.expected_concentration(kind).set_index("level")["ratio"]
    token_levels = list(dose_design.level_positions("token"))
    rows = []
    for i, (level, exponent) in enumerate(ALIAS_LEVELS.items()):
        k = alias_counts(f, exponent, ALIAS_F0)
        c = input_collision(f, k)
        rows.append({"level": level, "exponent": exponent, "collision": c, "ratio": c0 / c,
                     "extra_rows": int((k - 1).sum()), "aliased_types": int((k > 1).sum()), "k_max": int(k.max()),
                     "token_level": token_levels[i], "token_ratio": float(token[token_levels[i]])})
    return pd.DataFrame(rows)


def power_analysis(responses=None, seeds=range(3, 11)) -> pd.DataFrame:
    """The registered test's power for a ×:data:`TARGET_RATIO` end-to-end change, per reading and
    architecture, at chapter 10's realised residual SD along the direct knob.

    ``responses``: chapter 10's verdict table rows (:func:`tanbias.lab.analysis.dose.analyse_dose`'s
    ``responses``; default computed). Returns one row per (kind, metric, seeds): ``kind, metric,
    residual_sd, seeds, power`` (two-sided α = 0.05, four levels at x = 0, 1/3, 2/3, 1),
    ``power_holm`` (at Holm's first threshold, 0.05 / :data:`FAMILY_ROWS`) and ``chosen``
    (:data:`~tanbias.lab.experiments.ALIAS_SEEDS`). The ratio is read on ln readings; for the mean
    cosine and IsoScore* (not logs) the SD is a raw one and the row says what a ×1.25 ratio of a
    ln reading would be at that SD: read only the ln rows as the design's target.
    """
    import pandas as pd

    if responses is None:
        responses = dose.analyse_dose().responses
    r = responses[responses["knob"] == "token"]
    x = list(positions().values())
    rows = []
    for _, row in r.iterrows():
        if row["metric"] == "log_collision" or not np.isfinite(row["resid_sd"]):
            continue
        for n in seeds:
            rows.append({"kind": row["kind"], "metric": row["metric"], "residual_sd": float(row["resid_sd"]),
                         "seeds": int(n), "power": power_at(TARGET_RATIO, row["resid_sd"], int(n), x),
                         "power_holm": power_at(TARGET_RATIO, row["resid_sd"], int(n), x, alpha=0.05 / FAMILY_ROWS),
                         "chosen": int(n) == len(ALIAS_SEEDS)})
    return pd.DataFrame(rows)


def design_numbers(expected=None, power=None) -> dict:
    """The numbers chapter 11 quotes from :func:`expected_concentration` and
    :func:`power_analysis` (each computed when not given): the levels' exponents and ratios, the power
    behind the seeds."""
    expected = expected_concentration() if expected is None else expected
    power = power_analysis() if power is None else power
    e = expected.set_index("level")
    p = power[(power["metric"] == POWER_READING)]
    sd = p.groupby("kind")["residual_sd"].first()
    worst = sd.idxmax()
    pw = p[p["kind"] == worst].set_index("seeds")
    n = len(ALIAS_SEEDS)
    shared = sum(1 for kind, level, seed, run in ALIAS.cells() if run != ALIAS.run_name(kind, level, seed))
    return {"alias_span": float(e.loc["k3", "ratio"]), "alias_rows_k3": int(e.loc["k3", "extra_rows"]),
            "alias_types_k3": int(e.loc["k3", "aliased_types"]), "alias_kmax": int(e.loc["k3", "k_max"]),
            "alias_sd": float(sd.max()), "alias_seeds": n, "alias_power": float(pw.loc[n, "power"]),
            "alias_power_fewer": float(pw.loc[n - 1, "power"]), "alias_power_holm": float(pw.loc[n, "power_holm"]),
            "alias_family": FAMILY_ROWS, "alias_cells": n * len(ALIAS_LEVELS) * len(KINDS),
            "alias_trained": len(ALIAS.names()), "alias_shared": shared}
