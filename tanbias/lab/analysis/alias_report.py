"""The numbers, tables and words chapter 11 (the aliasing knob) and the closing page quote.

The experiment's face (registered in :mod:`tanbias.lab.analysis.findings`): :func:`analyse`,
:func:`numbers` and :func:`words`. :func:`numbers` returns the numbers the chapter glues (keys
without its ``ch11_`` prefix, the aliasing ones prefixed ``alias_``): the progress of ``make alias``, each reading's
end-to-end change along the knob with its interval and raw and Holm-adjusted p
(over the joint family of chapters 10 and 11), the text's own collision change (a check of the
design), the learning comparison with the direct knob, and the convergence of the
aliases. :func:`verdict_rows` is the aliasing rows of the verdict table;
:func:`balancing_words` and :func:`closing_verdict` the closing page's "weaker
under balancing" by the registration's ``[rule.balancing]``; :func:`words` every
word the chapter states, by name, for :func:`tanbias.stats.check_words`. No torch; the
statistics are :mod:`tanbias.lab.analysis.alias`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab.analysis.alias import AliasAnalysis, joint_analyses
from tanbias.lab.analysis.alias_design import ALIAS_READINGS
from tanbias.lab.analysis.dose import POSTHOC, verdict_table
from tanbias.lab.analysis.dose_report import balancing_components
from tanbias.lab.analysis.registered import t_interval
from tanbias.lab.analysis.sweep import balancing_property
from tanbias.lab.analysis.verdicts import cell
from tanbias.lab.config import KINDS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SHORT", "analyse", "numbers", "cells", "verdict_rows", "learning_table", "convergence_summary", "status_table",
           "balancing_words", "closing_verdict", "knob_properties", "words"]

#: the short names of the readings in the glued keys (``alias_<short>_<kind>``)
SHORT = {"log_collision": "col", "log_eta_q1": "eta", "log_eta_q1_type": "etatype",
         "log_enrichment_late": "enr", "log_enrichment_early": "enrearly", "mean_cosine_late": "cos",
         "isoscore_late": "iso"}
#: readings quoted as ratios (ln readings: exp of the change), the others as differences
_RATIO = {"log_collision", "log_eta_q1", "log_eta_q1_type", "log_enrichment_late", "log_enrichment_early"}
#: the readings the balancing words read (dose-posthoc.toml [balancing]): quoted at matched progress too
_BALANCING = {*POSTHOC["balancing"]["alignment"], *POSTHOC["balancing"]["anisotropy"]}


def analyse() -> AliasAnalysis:
    """The aliasing knob's analysis of the committed runs (:func:`~tanbias.lab.analysis.alias.joint_analyses`,
    memoised)."""
    return joint_analyses().alias


def numbers(aa: AliasAnalysis) -> dict:
    """The numbers chapter 11 quotes from the aliasing knob (without the ``ch11_`` prefix).

    ``alias_done`` (committed cells), ``alias_complete_<kind>`` (complete seeds). For each reading
    and architecture (``alias_<short>_<kind>``, :data:`SHORT`): the end-to-end change from k0 to k3
    (a ratio for ln readings, a difference otherwise) with ``_lo``, ``_hi`` (95 %), ``_p`` and
    ``_p_holm`` (the joint family of 38 rows: chapter 10's 24 and these 14), and the same change at matched training
    progress, ``_progress`` with ``_progress_lo``, ``_progress_hi``, for the readings the balancing
    words read (late enrichment, mean cosine, IsoScore*);
    ``alias_xgain_<kind>``: the correlation of the knob with the gain over unigram across the runs
    (how much the matched reading has to separate). ``alias_typecol_<kind>`` (with ``_lo``,
    ``_hi``): the change of the text's own collision probability, a ratio (1 by design).
    ``alias_gain_<kind>`` and ``alias_tokengain_<kind>``: the end-to-end change of the gain over
    unigram along this knob and the direct one; ``alias_gaindiff_<kind>`` with ``_lo``, ``_hi``,
    ``_p_holm``. ``alias_gain_start_<kind>``, ``alias_gain_flat_<kind>``: mean gains at k0 and k3.
    ``alias_conv_<kind>`` with ``_lo``, ``_hi`` and ``alias_conv_init_<kind>``: the aliases'
    centroid spread over the type's radius at k3 after training and at initialisation.
    NaN where too few seeds are complete.
    """
    out = {"alias_done": int(aa.status["committed"].sum()), "alias_cells": int(len(aa.status))}
    for kind in KINDS:
        out[f"alias_complete_{kind}"] = len(aa.seeds[kind])
    r = aa.responses.set_index(["metric", "kind"])
    for metric, short in SHORT.items():
        for kind in KINDS:
            row = r.loc[(metric, kind)]
            f = np.exp if metric in _RATIO else (lambda v: v)
            k = f"alias_{short}_{kind}"
            out[k], out[f"{k}_lo"], out[f"{k}_hi"] = (float(f(row[c])) for c in
                                                      ("end_to_end", "end_to_end_lo", "end_to_end_hi"))
            out[f"{k}_p"], out[f"{k}_p_holm"] = float(row["p"]), float(row["p_holm"])
            if metric in _BALANCING:
                out[f"{k}_progress"], out[f"{k}_progress_lo"], out[f"{k}_progress_hi"] = (
                    float(f(row[c])) for c in ("progress_end_to_end", "progress_lo", "progress_hi"))
    t = aa.table
    for kind in KINDS:
        out[f"alias_xgain_{kind}"] = float(r.loc[("log_enrichment_late", kind), "x_gain_corr"])
        g = t[(t["kind"] == kind) & t["seed"].isin(aa.seeds[kind])] if len(t) else t
        typecol = np.nan, np.nan, np.nan
        if len(g) and {"k0", "k3"} <= set(g["level"]) and len(aa.seeds[kind]) >= 2:
            w = g.pivot_table(index="seed", columns="level", values="log_type_collision")
            m, lo, hi, _ = t_interval((w["k3"] - w["k0"]).to_numpy())
            typecol = np.exp(m), np.exp(lo), np.exp(hi)
        out[f"alias_typecol_{kind}"], out[f"alias_typecol_{kind}_lo"], out[f"alias_typecol_{kind}_hi"] = typecol
        for level, name in (("k0", "start"), ("k3", "flat")):
            out[f"alias_gain_{name}_{kind}"] = float(g.loc[g["level"] == level, "gain"].mean()) if len(g) else np.nan
        lr = aa.learning.set_index("kind").loc[kind] if len(aa.learning) else None
        for name, col in ((f"alias_gain_{kind}", "alias_change"), (f"alias_tokengain_{kind}", "token_change"),
                          (f"alias_gaindiff_{kind}", "difference"), (f"alias_gaindiff_{kind}_lo", "lo"),
                          (f"alias_gaindiff_{kind}_hi", "hi"), (f"alias_gaindiff_{kind}_p_holm", "p_holm")):
            out[name] = float(lr[col]) if lr is not None else np.nan
        c = aa.clouds.set_index(["kind", "level"]) if len(aa.clouds) else None
        row = c.loc[(kind, "k3")] if c is not None else None
        for key, col in (("", "ratio"), ("_lo", "lo"), ("_hi", "hi")):
            out[f"alias_conv_{kind}{key}"] = float(row[col]) if row is not None else np.nan
        out[f"alias_conv_init_{kind}"] = float(row["init"]) if row is not None else np.nan
    return out


def verdict_rows(aa: AliasAnalysis) -> pd.DataFrame:
    """The aliasing knob's rows of the joint verdict table, in its columns (read at the joint family)."""
    return verdict_table(aa.responses)


def learning_table(aa: AliasAnalysis) -> pd.DataFrame:
    """How much the runs of each (architecture, level) learned: mean and SD over the complete seeds of the
    gain over unigram, and the held-out and unigram losses (nats per scored token)."""
    t = aa.table
    if not len(t):
        import pandas as pd

        return pd.DataFrame(columns=["kind", "level", "runs", "gain", "gain_sd", "eval_loss", "unigram_loss"])
    g = t.groupby(["kind", "level"], sort=False).agg(runs=("run", "count"), gain=("gain", "mean"),
                                                     gain_sd=("gain", "std"), eval_loss=("eval_loss", "mean"),
                                                     unigram_loss=("unigram_loss", "mean"))
    return g.reset_index()


def convergence_summary(aa: AliasAnalysis) -> pd.DataFrame:
    """``[rule.convergence]``'s table: per architecture and aliased level, the aliases' centroid spread
    over the type's radius after training (ratio and 95 % interval over seeds), at initialisation, and
    the word; the word next to the level, where a narrow page still shows it."""
    c = aa.clouds
    first = ["kind", "level", "word"]
    return c[first + [col for col in c.columns if col not in first]]


def status_table(aa: AliasAnalysis) -> pd.DataFrame:
    """Committed cells per (architecture, level), and how many of them are shared with the causal test."""
    s = aa.status
    return (s.groupby(["kind", "level"], sort=False)
            .agg(registered=("run", "size"), shared=("shared", "sum"), committed=("committed", "sum")).reset_index())


def balancing_words(aa: AliasAnalysis) -> dict:
    """``[rule.balancing]``: the aliasing knob's four words (alignment and anisotropy of each
    architecture) by the rule added after the dose runs (``dose-posthoc.toml`` ``[balancing]``,
    :func:`tanbias.lab.analysis.dose_report.balancing_components` with ``knob="alias"``); ``undecided``
    while the design is interim."""
    words = balancing_components(aa.responses, knob="alias")
    return {k: "undecided" for k in words} if aa.interim else words


def closing_verdict(aa: AliasAnalysis) -> str:
    """The closing page's "weaker under balancing" (``[rule.balancing] closing``): the aliasing knob's
    property (:func:`tanbias.lab.analysis.sweep.balancing_property` of :func:`balancing_words`),
    ``undecided (interim)`` while a registered seed is incomplete."""
    return "undecided (interim)" if aa.interim else balancing_property(balancing_words(aa))


def knob_properties(aa: AliasAnalysis, da) -> dict:
    """The property by the same rule along each of the three knobs of chapters 10 and 11: ``alias``, ``token`` (the
    direct knob) and ``language`` (the realistic one), ``da`` read with the joint family."""
    return {"alias": closing_verdict(aa),
            **{knob: balancing_property(balancing_components(da.responses, knob=knob))
               for knob in ("token", "language")}}


def words(aa: AliasAnalysis) -> dict:
    """Every word chapter 11 and the closing page state about the runs, by name,
    for :func:`tanbias.stats.check_words`:

    * ``every seed complete`` (``yes`` or ``no``) and ``closing`` (:func:`closing_verdict`);
    * ``balancing, <kind> alignment`` and ``balancing, <kind> anisotropy`` (:func:`balancing_words`);
    * per architecture and reading (a ``metric`` of :data:`SHORT`): ``verdict, <kind>, <metric>`` (the
      row's word at the joint Holm family) and ``progress, <kind>, <metric>`` (``survives``, ``does not
      survive`` or ``n/a``: whether the row's observed sign survives matched training progress);
    * ``learning, <kind>`` (``less``, ``more``, ``not told apart`` or ``undecided``);
    * ``clouds, <kind>, <level>`` (``[rule.convergence]``'s word, levels k1..k3) and ``clouds at
      initialisation, <kind>, <level>`` (the same rule at step 0).
    """
    out = {"every seed complete": "no" if aa.interim else "yes", "closing": closing_verdict(aa)}
    out.update({f"balancing, {k}": w for k, w in balancing_words(aa).items()})
    for _, r in aa.responses.iterrows():
        out[f"verdict, {r['kind']}, {r['metric']}"] = str(r["verdict"])
        survives = r.get("progress_survives")
        out[f"progress, {r['kind']}, {r['metric']}"] = ("n/a" if survives is None or survives != survives
                                                      else "survives" if survives else "does not survive")
    for _, r in aa.learning.iterrows():
        out[f"learning, {r['kind']}"] = str(r["word"])
    for _, r in aa.clouds.iterrows():
        out[f"clouds, {r['kind']}, {r['level']}"] = str(r["word"])
        out[f"clouds at initialisation, {r['kind']}, {r['level']}"] = str(r["init_word"])
    return out



def cells(aa: AliasAnalysis) -> list[dict]:
    """The aliasing knob's cell of the closing table (:func:`tanbias.lab.analysis.verdicts.cell`): weaker
    under balancing, by its registered rule; on IsoScore* alone where the mean cosine's rise does not
    survive matched progress."""
    w = words(aa)
    iso_only = (w["progress, decoder, isoscore_late"] == "survives"
                and w["progress, decoder, mean_cosine_late"] != "survives")
    return [cell("balancing", "knobs", closing_verdict(aa).split(" (")[0], "11_input_aliasing", "sec-ch11-balancing",
                 qualifier="on IsoScore* alone: the mean cosine's rise does not survive matched progress"
                 if iso_only else "", rule="registered", anisotropy="shape" if iso_only else "both")]
