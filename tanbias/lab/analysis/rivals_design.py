"""The rivals experiment's design, fixed before its runs: registration and power (the rivals chapter).

The experiment (:data:`tanbias.lab.experiments.RIVALS_ARMS` under both
:data:`~tanbias.lab.experiments.RIVALS_HEADS`) sets the tangent-bias account
against the simpler ones on the same runs. This module holds what was fixed
*before* the first run:

* the registration, ``data/preregistration/rivals.toml`` (the design, what every account
  predicts contrast by contrast, the rules that read its words; :func:`registration`,
  pinned by :data:`REGISTRATION_SHA256`);
* :func:`primary_sd`, the realised seed-blocked noise of the primary outcome in chapter 12's
  107 committed runs, and :func:`power_analysis`, the power of the registered seeds to
  detect a ×1.25 change of it at Holm's first threshold over the primary family.

The statistics of the runs are :mod:`tanbias.lab.analysis.rivals`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias._checks import check_choice
from tanbias.lab.analysis import causal, registered
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import RIVALS, RIVALS_ARMS, RIVALS_HEADS, RIVALS_SEEDS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["REGISTRATION_SHA256", "registration", "TARGET_RATIO", "TARGET_POWER", "PRIMARY_FAMILY", "ALPHA",
           "CELLS", "secondary_family", "primary_sd", "power_analysis", "design_numbers"]

#: the sha256 of ``data/preregistration/rivals.toml`` (the design's pin): the code refuses a
#: registration that changed
REGISTRATION_SHA256 = RIVALS.registration_sha256
#: the change of the primary outcome the design is powered for, and the power
TARGET_RATIO, TARGET_POWER = registered.TARGET_RATIO, registered.TARGET_POWER
#: the primary family: per architecture, the unigram head's effect and the surgery under it
PRIMARY_FAMILY = 2 * 2
ALPHA = registered.ALPHA
#: cells per architecture: heads x arms
CELLS = len(RIVALS_HEADS) * len(RIVALS_ARMS)


def registration() -> dict:
    """``data/preregistration/rivals.toml``, parsed, its sha256 checked against :data:`REGISTRATION_SHA256`
    (:func:`~tanbias.lab.analysis.registered.registration`)."""
    return registered.registration(RIVALS)


def secondary_family() -> int:
    """The size of the secondary family Holm reads (rule.secondary): each registered secondary
    contrast, in both architectures."""
    return len(KINDS) * len(registration()["rule"]["secondary"]["contrasts"])


def primary_sd(kind: str, table=None) -> dict:
    """The residual SD of the primary outcome under ``seed + arm`` in chapter 12's committed runs.

    The primary outcome (ln of the layer-mean mean cosine at the last probe step, content
    positions) is the causal test's; its noise in a seed-blocked model of the causal runs is the
    noise a seed-paired contrast of two rivals cells sees.

    Parameters
    ----------
    kind : {"encoder", "decoder"}
    table : pandas.DataFrame, optional
        Chapter 12's run table (:func:`tanbias.lab.analysis.causal.run_table`); default the
        memoised analysis of the committed runs.

    Returns
    -------
    dict
        ``sd``, ``df``, ``n_runs``.
    """
    import statsmodels.formula.api as smf

    check_choice("kind", kind, KINDS)
    if table is None:
        table = causal.analyse_causal().table
    t = table[(table["kind"] == kind) & ~table["diverged"].astype(bool)]
    fit = smf.ols("log_mean_cosine ~ C(seed) + C(arm)", t).fit()
    return {"sd": float(np.sqrt(fit.scale)), "df": int(fit.df_resid), "n_runs": int(len(t))}


def power_analysis(seeds=range(3, 13), table=None) -> pd.DataFrame:
    """The registered design's power per architecture and number of seeds in a primary cell.

    Columns: ``kind``, ``sd`` and ``sd_df`` (:func:`primary_sd`), ``seeds``, ``power`` (×1.25 at
    α = 0.05 / 4, :func:`~tanbias.lab.analysis.registered.contrast_power` over :data:`CELLS`
    cells), ``chosen`` (the design's seeds in the primary cells,
    :data:`~tanbias.lab.experiments.RIVALS_SEEDS`).
    """
    import pandas as pd

    rows = []
    for kind in KINDS:
        s = primary_sd(kind, table)
        chosen = len(RIVALS_SEEDS[kind]["control"])
        for n in seeds:
            rows.append({"kind": kind, "sd": s["sd"], "sd_df": s["df"], "seeds": int(n),
                         "power": registered.contrast_power(TARGET_RATIO, s["sd"], int(n), CELLS,
                                                            ALPHA / PRIMARY_FAMILY),
                         "chosen": int(n) == chosen})
    return pd.DataFrame(rows)


def design_numbers(power=None) -> dict:
    """The numbers the rivals chapter's design section quotes, from :func:`power_analysis` (computed when
    not given): per
    architecture ``sd_<kind>`` and ``sd_df_<kind>``, ``seeds_<kind>`` (the primary cells'),
    ``power_<kind>`` and ``power_fewer_<kind>`` (one seed fewer); ``family``, ``target_ratio``.

    The secondary contrasts the registration does not buy full power for: ``seeds_few`` (the
    fewest seeds of any cell, the random and aliasing cells'), and the power a contrast
    with such a cell reaches for the same change, at Holm's first threshold over the secondary
    family (``power_secondary_<kind>``, α / :func:`secondary_family`) and at its last (``power_last_<kind>``,
    α). Both use the fewer seeds for both cells, so they are lower bounds."""
    power = power_analysis() if power is None else power
    out = {"family": PRIMARY_FAMILY, "target_ratio": TARGET_RATIO, "secondary_family": secondary_family(),
           "seeds_few": min(len(seeds) for kind in KINDS for seeds in RIVALS_SEEDS[kind].values())}
    for kind in KINDS:
        p = power[power["kind"] == kind].set_index("seeds")
        n = len(RIVALS_SEEDS[kind]["control"])
        out[f"sd_{kind}"] = float(p["sd"].iloc[0])
        out[f"sd_df_{kind}"] = int(p["sd_df"].iloc[0])
        out[f"seeds_{kind}"] = n
        out[f"power_{kind}"] = float(p.loc[n, "power"])
        out[f"power_fewer_{kind}"] = float(p.loc[n - 1, "power"])
        few = min(len(seeds) for seeds in RIVALS_SEEDS[kind].values())
        for key, alpha in (("secondary", ALPHA / out["secondary_family"]), ("last", ALPHA)):
            out[f"power_{key}_{kind}"] = registered.contrast_power(TARGET_RATIO, out[f"sd_{kind}"], few, CELLS, alpha)
    return out
