"""The numbers and words of the horizon experiment (``data/preregistration/horizon.toml``).

The experiment's face: :func:`analyse` (the committed runs' analysis, memoised), :func:`numbers` (the
numbers its chapter glues, keys without the chapter's prefix) and :func:`words` (the words it states,
by name, for :func:`tanbias.stats.check_words`). The statistics are :mod:`tanbias.lab.analysis.horizon`.
While a part's registered seeds are not all in, every word of that part is read on the seeds there
and marked interim (``interim, <part>``); a contrast with fewer than two complete seeds reads
``undecided``.
"""
from __future__ import annotations

import numpy as np

from tanbias.lab import runs
from tanbias.lab.analysis.horizon import HorizonAnalysis, analyse_horizon

__all__ = ["analyse", "numbers", "words"]


def analyse() -> HorizonAnalysis:
    """:func:`~tanbias.lab.analysis.horizon.analyse_horizon` of the committed runs, memoised
    (:func:`tanbias.lab.runs.memoised`)."""
    return runs.memoised("analyse_horizon", analyse_horizon)


def _ratio(prefix: str, estimate, lo, hi) -> dict:
    return {prefix: float(np.exp(estimate)), f"{prefix}_lo": float(np.exp(lo)), f"{prefix}_hi": float(np.exp(hi))}


def numbers(a: HorizonAnalysis) -> dict:
    """The numbers the chapter quotes (without its prefix).

    ``runs_registered``, ``runs_done``, ``hours`` (training hours of the committed runs), per part
    ``<part>_done``/``<part>_registered``; per primary contrast and architecture
    ``<contrast>_<kind>`` (the ratio ``exp`` of the contrast), ``_lo``, ``_hi`` (95 %), ``_p`` (Holm)
    and ``_seeds``; per collapse cell ``<cell>_peak_min``/``_peak_max`` (layer-mean mean cosine at the
    early peak over its runs) and ``<cell>_runs``; per architecture ``variance_null_<kind>`` as a
    ratio with its interval, and ``_seeds``.
    """
    st = a.status
    out = {"runs_registered": int(st["registered"].sum()), "runs_done": int(st["committed"].sum()),
           "hours": float(st["hours"].sum())}
    for part, g in st.groupby("part"):
        out[f"{part}_done"], out[f"{part}_registered"] = int(g["committed"].sum()), int(g["registered"].sum())
    for _, r in a.contrasts.iterrows():
        key = f"{r['contrast']}_{r['kind']}"
        out.update(_ratio(key, r["estimate"], r["lo"], r["hi"]))
        out[f"{key}_p"], out[f"{key}_seeds"] = float(r["p_holm"]), int(r["n_seeds"])
    for _, r in a.collapse.iterrows():
        key = r["cell"].replace("-", "_")
        out[f"{key}_peak_min"], out[f"{key}_peak_max"], out[f"{key}_runs"] = (
            float(r["peak_min"]), float(r["peak_max"]), int(r["runs"]))
    for _, r in a.variance_null.iterrows():
        out.update(_ratio(f"variance_null_{r['kind']}", r["estimate"], r["lo"], r["hi"]))
        out[f"variance_null_{r['kind']}_seeds"] = int(r["n_seeds"])
    return out


def words(a: HorizonAnalysis) -> dict:
    """The words the chapter states, by name: ``primary, <contrast>, <kind>`` (the interval's word),
    ``horizon, <contrast>, <kind>`` (holds, changes, reverses or –), ``collapse, <cell>`` (kept,
    removed, mixed or –), ``variance null, <kind>``, ``progress, <contrast>, <kind>`` and
    ``interim, <part>`` (``interim`` or ``complete``)."""
    out = {f"primary, {r['contrast']}, {r['kind']}": r["word"] for _, r in a.contrasts.iterrows()}
    out.update({f"horizon, {r['contrast']}, {r['kind']}": r["horizon"] for _, r in a.horizons.iterrows()})
    out.update({f"collapse, {r['cell']}": r["word"] for _, r in a.collapse.iterrows()})
    out.update({f"variance null, {r['kind']}": r["word"] for _, r in a.variance_null.iterrows()})
    out.update({f"progress, {r['contrast']}, {r['kind']}": r["word"] for _, r in a.progress.iterrows()})
    for part, g in a.contrasts.groupby("part"):
        out[f"interim, {part}"] = "interim" if g["interim"].any() else "complete"
    return out
