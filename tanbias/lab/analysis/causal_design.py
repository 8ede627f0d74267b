"""The causal test's design, fixed before its runs: registration and power (chapter 12).

Chapter 12 intervenes on the gradient side's chain with the surgery of
:mod:`tanbias.lab.surgery` against matched controls (the arms of
:data:`tanbias.lab.experiments.CAUSAL_ARMS`). This module holds what was fixed
*before* the first run:

* the registration, ``data/preregistration/causal.toml`` (predictions, primary
  outcome, decision rules; :func:`registration`), and, apart from it,
  ``data/preregistration/causal-posthoc.toml``, a reading written after 86 runs were
  seen (:func:`posthoc`), both pinned by :data:`tanbias.lab.experiments.CAUSAL`;
* :func:`primary_sd`, the realised seed-to-seed noise of the primary outcome in
  chapter 10's committed runs, and :func:`power_analysis`, the number of seeds
  that detects a ×1.25 change of it with 80 % power after Holm across the primary
  family (:data:`FAMILY`; :func:`tanbias.lab.analysis.registered.contrast_power`).

The statistics of the runs are :mod:`tanbias.lab.analysis.causal`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias._checks import check_int
from tanbias.lab.analysis import dose, registered
from tanbias.lab.analysis.registered import contrast_power, seed_blocked_sd, seeds_needed
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import CAUSAL, CAUSAL_SEEDS, causal_arms

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["registration", "posthoc", "TARGET_RATIO", "TARGET_POWER", "FAMILY", "ALPHA", "primary_sd",
           "power_analysis", "design_numbers"]

#: the change of the primary outcome the design is powered for, and the power
TARGET_RATIO, TARGET_POWER = registered.TARGET_RATIO, registered.TARGET_POWER
#: the primary family: per architecture, proxy against control, random and uniform
FAMILY = 2 * 3
ALPHA = registered.ALPHA


def registration() -> dict:
    """``data/preregistration/causal.toml``, parsed, its sha256 checked against the pin of
    :data:`~tanbias.lab.experiments.CAUSAL` (:func:`tanbias.lab.analysis.registered.registration`)."""
    return registered.registration(CAUSAL)


def posthoc() -> dict:
    """``data/preregistration/causal-posthoc.toml``, parsed, its sha256 checked against the pin of
    :data:`~tanbias.lab.experiments.CAUSAL`: the matched-training-progress reading that chapter 12
    shows beside the registered words (written after the data on 2026-12-03; it changes none of them)."""
    return registered.registration(CAUSAL, posthoc=True)


def primary_sd(kind: str, loaded=None, table=None) -> dict:
    """Seed-to-seed noise of the primary outcome in chapter 10's committed dose runs, paired by seed.

    The primary outcome is the ln of the layer mean (layers 1..L) of the activations' mean
    cosine at the last probe step. In the dose runs (three seeds, seven levels) its residual
    standard deviation under the additive model ``seed + level`` is the noise that a
    seed-paired comparison of two arms sees: one arm's value is ``seed + arm + e``.

    ``table`` is chapter 10's run table (:func:`tanbias.lab.analysis.dose.run_table`) when
    the caller has it; else it is computed from ``loaded`` (the committed runs by default).

    Returns
    -------
    dict
        ``sd``, ``df`` (its degrees of freedom), ``n_seeds``, ``n_levels``.
    """
    check_int("kind", KINDS.index(kind) if kind in KINDS else -1, lo=0, hint=f"kind must be one of {KINDS}.")
    # the committed runs' table comes from the memoised analysis of chapter 10
    if table is None:
        table = dose.analyse_dose().table if loaded is None else dose.run_table(loaded)
    t = table[table["kind"] == kind]
    return seed_blocked_sd(np.log(t.pivot_table(index="seed", columns="level", values="mean_cosine_late")
                                  .to_numpy(float)))


def power_analysis(seeds=range(3, 16), loaded=None, table=None) -> pd.DataFrame:
    """The design's power per architecture and number of seeds (the numbers chapter 12 quotes).

    Columns: ``kind``, ``sd`` and ``sd_df`` (:func:`primary_sd`), ``arms``, ``seeds``,
    ``power`` (×1.25 at α = 0.05 / 6), ``needed``
    (:func:`~tanbias.lab.analysis.registered.seeds_needed`) and ``chosen``
    (the design's :data:`~tanbias.lab.experiments.CAUSAL_SEEDS`). ``loaded`` and ``table`` as
    in :func:`primary_sd`.
    """
    import pandas as pd

    # one run table for both architectures: the memoised analysis', or one computed from ``loaded``
    if table is None:
        table = dose.analyse_dose().table if loaded is None else dose.run_table(loaded)
    rows = []
    for kind in KINDS:
        s = primary_sd(kind, table=table)
        arms = len(causal_arms(kind))
        need = seeds_needed(s["sd"], arms, TARGET_RATIO, TARGET_POWER, ALPHA / FAMILY)
        for n in seeds:
            rows.append({"kind": kind, "sd": s["sd"], "sd_df": s["df"], "arms": arms, "seeds": int(n),
                         "power": contrast_power(TARGET_RATIO, s["sd"], int(n), arms, ALPHA / FAMILY),
                         "needed": need,
                         "chosen": int(n) == len(CAUSAL_SEEDS[kind])})
    return pd.DataFrame(rows)


def design_numbers(power=None) -> dict:
    """The numbers chapter 12's design section quotes, from :func:`power_analysis` (computed when not
    given): per architecture
    ``sd_<kind>`` (its df ``sd_df``), ``seeds_<kind>`` (chosen), ``power_<kind>`` (at the chosen
    seeds) and ``power_fewer_<kind>`` (at one seed fewer); ``family`` and ``target_ratio``."""
    power = power_analysis() if power is None else power
    out = {"family": FAMILY, "target_ratio": TARGET_RATIO, "sd_df": int(power["sd_df"].iloc[0])}
    for kind in KINDS:
        p = power[power["kind"] == kind].set_index("seeds")
        n = len(CAUSAL_SEEDS[kind])
        out[f"sd_{kind}"] = float(p["sd"].iloc[0])
        out[f"seeds_{kind}"] = n
        out[f"power_{kind}"] = float(p.loc[n, "power"])
        out[f"power_fewer_{kind}"] = float(p.loc[n - 1, "power"])
    return out
