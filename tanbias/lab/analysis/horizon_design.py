"""The horizon experiment's design, fixed before its runs: registration and power (chapter 14).

The experiment (:data:`tanbias.lab.experiments.HORIZON`) reads chapter 13's primary contrasts again
at four times the steps, and runs the encoder's collapse as a 2 x 2 of input corruption and
attention. This module holds what was fixed *before* its first run:

* the registration, ``data/preregistration/horizon.toml`` (:func:`registration`, pinned by
  :data:`REGISTRATION_SHA256`);
* :func:`realised_sd`, the residual SD of the primary outcome as chapter 13's runs realised it,
  and :func:`power_analysis`, the power of a number of seeds per long cell to detect a x1.25
  change at Holm's first threshold over the primary family, with the smallest change each
  detects with 80 % power.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab.analysis import registered, rivals_posthoc
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import HORIZON, HORIZON_LONG, HORIZON_SEEDS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["REGISTRATION_SHA256", "registration", "TARGET_RATIO", "TARGET_POWER", "PRIMARY_FAMILY", "ALPHA",
           "realised_sd", "detectable_ratio", "power_analysis", "design_numbers"]

#: the sha256 of ``data/preregistration/horizon.toml``: the code refuses a registration that changed
REGISTRATION_SHA256 = HORIZON.registration_sha256
#: the change the design is powered for, and the power
TARGET_RATIO, TARGET_POWER = registered.TARGET_RATIO, registered.TARGET_POWER
#: the primary family: three long contrasts per architecture and the collapse part's two main effects
PRIMARY_FAMILY = 3 * len(KINDS) + 2
ALPHA = registered.ALPHA


def registration() -> dict:
    """``data/preregistration/horizon.toml``, parsed, its sha256 checked against :data:`REGISTRATION_SHA256`."""
    return registered.registration(HORIZON)


def realised_sd(power=None) -> dict:
    """``{kind: sd}``: the residual SD of ln(layer-mean mean cosine at the last step) in chapter 13's
    primary fits (the largest of its primary contrasts', per architecture).

    ``power`` is :func:`tanbias.lab.analysis.rivals_posthoc.realised_power`'s table; default the
    memoised analysis of the committed runs.
    """
    if power is None:
        power = rivals_posthoc.analyse_posthoc().power
    return {k: float(power.loc[power["kind"] == k, "sd"].max()) for k in KINDS}


def detectable_ratio(sd: float, n_seeds: int, n_cells: int, alpha: float, power: float = TARGET_POWER) -> float:
    """The smallest ratio a seed-blocked contrast of two of ``n_cells`` cells detects with ``power``
    by a two-sided t test at ``alpha`` (SE ``sd sqrt(2 / n)``, ``(n - 1)(cells - 1)`` df).

    >>> round(detectable_ratio(0.078353, 5, 4, 0.05 / 8), 2)
    1.23
    """
    se = float(sd) * np.sqrt(2.0 / int(n_seeds))
    df = (int(n_seeds) - 1) * (int(n_cells) - 1)
    return float(np.exp(registered.detectable_effect(se, df, alpha, power)))


def power_analysis(seeds=range(3, 11), sd: dict | None = None) -> pd.DataFrame:
    """Power per architecture and number of seeds in a long cell.

    Columns: ``kind``, ``sd`` (:func:`realised_sd`), ``seeds``, ``power`` (x1.25 at alpha / 8),
    ``detectable`` (:func:`detectable_ratio` at alpha / 8), ``chosen`` (the registered seeds,
    :data:`~tanbias.lab.experiments.HORIZON_SEEDS`).
    """
    import pandas as pd

    sd = realised_sd() if sd is None else sd
    cells, alpha = len(HORIZON_LONG), ALPHA / PRIMARY_FAMILY
    rows = []
    for kind in KINDS:
        for n in seeds:
            rows.append({"kind": kind, "sd": sd[kind], "seeds": int(n),
                         "power": registered.contrast_power(TARGET_RATIO, sd[kind], int(n), cells, alpha),
                         "detectable": detectable_ratio(sd[kind], int(n), cells, alpha),
                         "chosen": int(n) == len(HORIZON_SEEDS[kind]["long"])})
    return pd.DataFrame(rows)


def design_numbers(power=None) -> dict:
    """The numbers the horizon chapter's design section quotes, from :func:`power_analysis` (default:
    of the committed runs): per architecture ``sd_<kind>`` (chapter 13's realised residual SD),
    ``seeds_<kind>`` (the registered seeds of a long cell), ``power_<kind>`` (for x1.25 at Holm's first
    threshold) and ``detectable_<kind>`` (the smallest ratio detected with 80 % power); ``family`` and
    ``target_ratio``."""
    power = power_analysis() if power is None else power
    out = {"family": PRIMARY_FAMILY, "target_ratio": TARGET_RATIO}
    for kind in KINDS:
        p = power[(power["kind"] == kind) & power["chosen"]].iloc[0]
        out.update({f"sd_{kind}": float(p["sd"]), f"seeds_{kind}": int(p["seeds"]),
                    f"power_{kind}": float(p["power"]), f"detectable_{kind}": float(p["detectable"])})
    return out
