"""The numbers, tables and words chapter 12 and the closing page quote from the causal test.

The experiment's face (registered in :mod:`tanbias.lab.analysis.findings`): :func:`analyse`,
:func:`numbers` and :func:`words`. :func:`numbers` returns the numbers the chapter glues (keys
without its ``ch12_`` prefix):
the progress of ``make causal``, and for every architecture with at least two
complete seeds the registered contrasts as ratios of the primary outcome with
their intervals, the surgery's energy shares, the early share, the gap
after the window, the rival and the cost. :func:`verdict_table` is the
chapter's table of verdicts; :func:`closing_words` the closing page's.
No torch; the statistics are :mod:`tanbias.lab.analysis.causal`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tanbias.lab.analysis import registered
from tanbias.lab.analysis.causal import (ALPHA, OUTCOMES, PRIMARY, CausalAnalysis, analyse_causal, fit_contrasts,
                                        trajectory_contrast)
from tanbias.lab.config import KINDS, SIZES
from tanbias.lab.experiments import CAUSAL_SEEDS, CAUSAL_SURGERY
from tanbias.lab.analysis.verdicts import cell
from tanbias.stats import interval_word

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LEVELS", "analyse", "cells", "analysed_kinds", "numbers", "verdict_table", "closing_words",
           "contrast_table", "progress_words", "progress_table", "words", "secondary_table", "descriptive_table"]


def analyse() -> CausalAnalysis:
    """The causal test's analysis of the committed runs (:func:`~tanbias.lab.analysis.causal.analyse_causal`,
    memoised)."""
    return analyse_causal()


def analysed_kinds(ca: CausalAnalysis) -> list[str]:
    """The architectures with at least two complete seeds (a contrast has residual degrees of freedom)."""
    return [k for k in KINDS if len(ca.seeds[k]) >= 2]


def _key(contrast: str) -> str:
    return contrast.replace(" - ", "_").replace("-", "_")


def numbers(ca: CausalAnalysis) -> dict:
    """The numbers chapter 12 quotes (without its ``ch12_`` prefix).

    Always: ``n_runs`` (registered), ``runs_done`` and ``complete_<kind>`` (seeds whose every
    arm is committed; the registered numbers are in :func:`~tanbias.lab.analysis.causal_design.design_numbers`).
    Once a run is committed: ``minutes_per_run`` (mean training minutes of the committed runs) and
    ``hours_estimate`` (the whole experiment at that pace, two runs at a time). Once a proxy run is committed: ``proxy_share`` (the mean share of the maps' update energy in
    the proxy subspace, over the surgery's steps of every committed proxy and proxy-early run),
    ``proxy_share_runs`` and ``random_share_expected`` (``r / D``). For each architecture of :func:`analysed_kinds`:
    ``<kind>_<a>_<b>`` (ratio ``exp`` of the contrast of the primary outcome), ``_lo``, ``_hi``
    (95 %), ``_p`` (Holm-adjusted); ``<kind>_share_proxy``, ``<kind>_share_random`` (mean share of
    the maps' update energy in P); ``<kind>_early_share`` with ``_lo``, ``_hi``;
    ``<kind>_gap_end``, ``<kind>_gap_d`` with their intervals (as ratios); ``<kind>_cost`` with
    ``_lo``, ``_hi`` (nats); ``<kind>_minutes`` (mean training minutes of a run); for the decoder
    ``decoder_tied_control`` with ``_lo``, ``_hi``. Beside the registered words: ``<kind>_uniform_cost``
    with ``_lo``, ``_hi`` (held-out loss, uniform − control, nats, 95 %), ``<kind>_iso_proxy_control`` with
    ``_lo``, ``_hi`` (IsoScore*, proxy − control, 95 %, the secondary measure shown beside the mean cosine);
    from the trajectories (:func:`~tanbias.lab.analysis.causal.trajectory_contrast`, descriptive):
    ``<kind>_traj_max`` with ``_lo``, ``_hi`` and ``_step`` (the largest seed-mean ratio proxy / control of
    the layer-mean cosine over the probe steps, its 95 % seed interval and step), ``<kind>_traj_min`` and
    ``_step`` (the smallest before that step), ``<kind>_above_last`` (the last probe step at which the
    ratio's seed mean is above 1). The post-hoc reading at matched training
    progress (:func:`~tanbias.lab.analysis.causal.matched_progress`), for proxy − control:
    ``<kind>_matched`` (ratio) with ``_lo``, ``_hi``, and ``<kind>_loss_gap`` (nats of held-out loss
    at the end, proxy − control: how much less the proxy arm learned); its words are
    :func:`progress_words`. From the control arm's trajectory (mean over the complete seeds of the
    layer-mean cosine): ``<kind>_peak_cosine``, ``<kind>_peak_step`` and ``<kind>_end_cosine``.
    """
    st = ca.status
    out = {"n_runs": int(len(st)), "runs_done": int(st["committed"].sum())}
    for kind in KINDS:
        out[f"complete_{kind}"] = len(ca.seeds[kind])
    if out["runs_done"]:
        # the committed runs' own training minutes, and the whole experiment at that pace, two at a time
        out["minutes_per_run"] = float(st["minutes"].mean())
        out["hours_estimate"] = out["minutes_per_run"] * out["n_runs"] / 2 / 60
    # what every committed proxy run measures, complete seed or not: the share of the reading maps'
    # update energy in the proxy subspace, beside a random subspace's expected r / D
    proxy = ca.table[ca.table["arm"].isin(["proxy", "proxy-early"])] if len(ca.table) else ca.table
    if len(proxy):
        out["proxy_share"] = float(proxy["share"].mean())
        out["proxy_share_runs"] = int(len(proxy))
        out["random_share_expected"] = CAUSAL_SURGERY["rank"] / SIZES["small"].hidden_size
    for kind in analysed_kinds(ca):
        rows = ca.causal[ca.causal["kind"] == kind]
        for _, r in rows.iterrows():
            k = f"{kind}_{_key(r['contrast'])}"
            out[k], out[f"{k}_lo"], out[f"{k}_hi"] = (float(np.exp(r[c])) for c in ("estimate", "lo", "hi"))
            out[f"{k}_p"] = float(r["p_holm"])
        t = ca.table[(ca.table["kind"] == kind) & ca.table["seed"].isin(ca.seeds[kind])]
        out[f"{kind}_share_proxy"] = float(t.loc[t["arm"] == "proxy", "share"].mean())
        out[f"{kind}_share_random"] = float(t.loc[t["arm"] == "random", "share"].mean())
        e = ca.early[kind]
        out[f"{kind}_early_share"], out[f"{kind}_early_share_lo"], out[f"{kind}_early_share_hi"] = (
            float(e[c]) for c in ("share", "lo", "hi"))
        g = ca.reinforcing[kind]
        for name, col in (("gap_end", "gap_end"), ("gap_d", "d")):
            for suffix in ("", "_lo", "_hi"):
                out[f"{kind}_{name}{suffix}"] = float(np.exp(g[f"{col}{suffix}"]))
        c = ca.cost[ca.cost["kind"] == kind].iloc[0]
        out[f"{kind}_cost"], out[f"{kind}_cost_lo"], out[f"{kind}_cost_hi"] = (
            float(c[x]) for x in ("estimate", "lo", "hi"))
        u = fit_contrasts(ca.table, "heldout_loss", kind, (("uniform", "control"),)).iloc[0]
        out[f"{kind}_uniform_cost"], out[f"{kind}_uniform_cost_lo"], out[f"{kind}_uniform_cost_hi"] = (
            float(u[x]) for x in ("estimate", "lo", "hi"))
        i = ca.secondary("isoscore").set_index(["kind", "contrast"]).loc[(kind, "proxy - control")]
        out[f"{kind}_iso_proxy_control"], out[f"{kind}_iso_proxy_control_lo"], out[f"{kind}_iso_proxy_control_hi"] = (
            float(i[x]) for x in ("estimate", "lo", "hi"))
        tc = trajectory_contrast(ca.trajectory, ca.table, kind)
        if len(tc):
            top = tc.loc[tc["estimate"].idxmax()]
            out[f"{kind}_traj_max"], out[f"{kind}_traj_max_lo"], out[f"{kind}_traj_max_hi"] = (
                float(np.exp(top[x])) for x in ("estimate", "lo", "hi"))
            out[f"{kind}_traj_max_step"] = int(top["step"])
            before = tc[tc["step"] < top["step"]]
            low = before.loc[before["estimate"].idxmin()] if len(before) else top
            out[f"{kind}_traj_min"], out[f"{kind}_traj_min_step"] = float(np.exp(low["estimate"])), int(low["step"])
            out[f"{kind}_above_last"] = int(tc.loc[tc["estimate"] > 0, "step"].max())
        out[f"{kind}_minutes"] = float(ca.status.loc[ca.status["kind"] == kind, "minutes"].mean())
        # the control arm's mean cosine rises, peaks and falls: its peak, where, and its end
        t = ca.trajectory
        t = t[(t["kind"] == kind) & (t["arm"] == "control") & (t["layer"] == "mean") & t["seed"].isin(ca.seeds[kind])]
        if len(t):
            curve = np.exp(t["log_mean_cosine"].astype(float)).groupby(t["step"]).mean()
            out[f"{kind}_peak_cosine"], out[f"{kind}_peak_step"] = float(curve.max()), int(curve.idxmax())
            out[f"{kind}_end_cosine"] = float(curve.iloc[-1])
        if ca.progress is not None:          # the post-hoc reading of proxy - control (the table has the rest)
            r = ca.progress.set_index(["kind", "contrast"]).loc[(kind, "proxy - control")]
            out[f"{kind}_matched"], out[f"{kind}_matched_lo"], out[f"{kind}_matched_hi"] = (
                float(np.exp(r[c])) for c in ("estimate", "lo", "hi"))
            out[f"{kind}_loss_gap"] = float(r["loss_gap"])
    if "decoder" in analysed_kinds(ca):
        r = ca.tied.set_index("contrast").loc["tied - control"]
        out["decoder_tied_control"], out["decoder_tied_control_lo"], out["decoder_tied_control_hi"] = (
            float(r[c]) for c in ("ratio", "ratio_lo", "ratio_hi"))
    return out


def _pair(lo, hi):
    """An interval as the ``(lo, hi)`` pair :func:`tanbias.book.tables.format_table` prints as ``[lo, hi]``
    (NaN where it cannot be computed). The tables return numbers; how many digits they show is the
    presentation layer's decision."""
    return (float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else np.nan


def contrast_table(ca: CausalAnalysis) -> pd.DataFrame:
    """Prediction 1's six contrasts as a reader's table: architecture, contrast, ratio of the
    primary outcome with its 95 % interval, Holm-adjusted p, the learning check, seeds."""
    import pandas as pd

    rows = []
    for _, r in ca.causal.iterrows():
        ratio, lo, hi = np.exp([r["estimate"], r["lo"], r["hi"]])
        rows.append({"architecture": r["kind"], "contrast": r["contrast"], "mean cosine ratio": ratio,
                     "ratio's 95 % CI": _pair(lo, hi), "p (Holm)": r["p_holm"],
                     "held-out loss difference [nats]": r["loss_estimate"],
                     "difference's 95 % CI": _pair(r["loss_lo"], r["loss_hi"]),
                     "learning differs": "yes" if r["learning_differs"] else "no",
                     "seeds": int(r["n_seeds"])})
    return pd.DataFrame(rows)


def progress_words(ca: CausalAnalysis) -> dict:
    """``{(kind, contrast): word}`` of the post-hoc reading at matched training progress, for the
    architectures of :func:`analysed_kinds` (``survives``, ``reverses``, ``not told apart from
    progress`` or ``n/a``)."""
    if ca.progress is None:
        return {}
    p = ca.progress[ca.progress["kind"].isin(analysed_kinds(ca))]
    return {(k, c): w for k, c, w in zip(p["kind"], p["contrast"], p["word"])}


def progress_table(ca: CausalAnalysis) -> pd.DataFrame:
    """The contrasts at matched training progress (post hoc, causal-posthoc.toml) beside the registered
    ones, as a reader's table (:func:`tanbias.lab.analysis.registered.progress_table`, as chapter
    13's: the ratio at matched held-out loss with its 95 % interval in ``lo`` and ``hi``). Empty before
    an architecture has two complete seeds."""
    import pandas as pd

    if ca.progress is None:
        return pd.DataFrame()
    return registered.progress_table(ca.progress[ca.progress["kind"].isin(analysed_kinds(ca))])


#: the level of each rule's interval: rule.early and rule.reinforcing read theirs at 1 − α/2 (two
#: architectures), rule.causal, the secondary outcomes and rule.cost at 1 − α
LEVELS = {"causal": 1 - ALPHA, "early": 1 - ALPHA / 2, "reinforcing": 1 - ALPHA / 2, "cost": 1 - ALPHA}


def _level(level: float) -> str:
    """``0.975`` -> ``"97.5 %"``."""
    return f"{100 * level:g} %"


def _anisotropy_word(lo, hi) -> str:
    """What a secondary IsoScore* interval says of anisotropy (lower IsoScore* = more anisotropic)."""
    return {"negative": "more anisotropic", "positive": "less anisotropic",
            "indistinguishable": "no change detected"}.get(interval_word(lo, hi), "too few seeds")


def verdict_table(ca: CausalAnalysis) -> pd.DataFrame:
    """One row per prediction and architecture: the rule's measure, its estimate, its interval at the level
    the rule registers (``level``: 95 % or 97.5 %) and the word. Beside prediction 1's mean cosine, the same
    contrast on IsoScore* (a secondary outcome: its row reads what the interval says of anisotropy, no
    verdict)."""
    import pandas as pd

    rows = []
    for kind in KINDS:
        n = len(ca.seeds[kind])
        tag = f"{n} of {len(CAUSAL_SEEDS[kind])}"
        c = ca.causal[(ca.causal["kind"] == kind) & (ca.causal["contrast"] == "proxy - control")].iloc[0]
        rows.append({"prediction": "1. causal", "architecture": kind, "measure": "mean cosine, proxy / control",
                     "estimate": float(np.exp(c["estimate"])), "interval": _pair(*np.exp([c["lo"], c["hi"]])),
                     "level": _level(LEVELS["causal"]), "verdict": ca.words[kind], "seeds": tag})
        i = ca.secondary("isoscore").set_index(["kind", "contrast"]).loc[(kind, "proxy - control")]
        rows.append({"prediction": "1. beside it (secondary)", "architecture": kind,
                     "measure": "IsoScore*, proxy − control", "estimate": float(i["estimate"]),
                     "interval": _pair(i["lo"], i["hi"]), "level": _level(LEVELS["causal"]),
                     "verdict": _anisotropy_word(i["lo"], i["hi"]), "seeds": tag})
        e = ca.early[kind]
        rows.append({"prediction": "2. imprinted early", "architecture": kind,
                     "measure": "early arm's share of the effect", "estimate": e["share"],
                     "interval": _pair(e["lo"], e["hi"]), "level": _level(LEVELS["early"]), "verdict": e["word"],
                     "seeds": tag})
        g = ca.reinforcing[kind]
        rows.append({"prediction": "3. self-reinforcing", "architecture": kind,
                     "measure": "gap's change after the window (ratio)",
                     "estimate": float(np.exp(g.get("d", np.nan))),
                     "interval": _pair(*np.exp([g.get("d_lo", np.nan), g.get("d_hi", np.nan)])),
                     "level": _level(LEVELS["reinforcing"]), "verdict": g["word"], "seeds": tag})
        k = ca.cost[ca.cost["kind"] == kind].iloc[0]
        rows.append({"prediction": "5. cost (measured)", "architecture": kind,
                     "measure": "held-out loss, proxy − control [nats]",
                     "estimate": k["estimate"], "interval": _pair(k["lo"], k["hi"]), "level": _level(LEVELS["cost"]),
                     "verdict": k["word"] if n >= 2 else "too few seeds", "seeds": tag})
    return pd.DataFrame(rows)


def closing_words(ca: CausalAnalysis) -> dict:
    """The closing page's causal words: ``gradient side``, by rule.causal's ``closing_page`` clause
    ("supported only if supported in both architectures"): ``supported`` or ``not supported``, and
    ``incomplete`` while an architecture has too few seeds or a registered seed is missing (every
    verdict before that is interim); per architecture its rule.causal word, and the words of
    ``imprinted early`` and ``self-reinforcing``."""
    w = ca.words
    if any(v == "too few seeds" for v in w.values()) or ca.interim:
        gradient = "incomplete"
    elif all(v == "supported" for v in w.values()):
        gradient = "supported"
    else:
        gradient = "not supported"
    return {"gradient side": gradient,
            **{f"gradient side, {k}": w[k] for k in KINDS},
            **{f"imprinted early, {k}": ca.early[k]["word"] for k in KINDS},
            **{f"self-reinforcing, {k}": ca.reinforcing[k]["word"] for k in KINDS}}


def words(ca: CausalAnalysis) -> dict:
    """Every word chapter 12 and the closing page state about the runs, by name, for
    :func:`tanbias.stats.check_words`: :func:`closing_words`; per architecture of :func:`analysed_kinds`
    ``causal, <kind>``, ``early, <kind>``, ``reinforcing, <kind>``, ``cost, <kind>``, ``matched,
    <kind>, <contrast>`` (:func:`progress_words`), ``learning differs, <kind>, <contrast>`` (``yes`` or
    ``no``), ``secondary, <kind>, <outcome>`` (the interval word of proxy − control on a secondary
    outcome), ``loss, <kind>, <contrast>`` (the interval word of a contrast of held-out loss: proxy,
    proxy-early and uniform against control) and ``every seed complete`` (``yes`` or ``no``)."""
    out = {**closing_words(ca), "every seed complete": "no" if ca.interim else "yes"}
    out.update({f"matched, {k}, {c}": w for (k, c), w in progress_words(ca).items()})
    for kind in analysed_kinds(ca):
        out[f"causal, {kind}"] = ca.words[kind]
        out[f"early, {kind}"] = ca.early[kind]["word"]
        out[f"reinforcing, {kind}"] = ca.reinforcing[kind]["word"]
        out[f"cost, {kind}"] = str(ca.cost.set_index("kind").loc[kind, "word"])
        for _, r in ca.causal[ca.causal["kind"] == kind].iterrows():
            out[f"learning differs, {kind}, {r['contrast']}"] = "yes" if r["learning_differs"] else "no"
        for o in OUTCOMES:
            if o not in (PRIMARY, "heldout_loss"):
                r = ca.secondary(o).set_index(["kind", "contrast"]).loc[(kind, "proxy - control")]
                out[f"secondary, {kind}, {o}"] = interval_word(r["lo"], r["hi"])
        pairs = (("proxy", "control"), ("proxy-early", "control"), ("uniform", "control"))
        for _, r in fit_contrasts(ca.table, "heldout_loss", kind, pairs).iterrows():
            out[f"loss, {kind}, {r['contrast']}"] = interval_word(r["lo"], r["hi"])
    return out



def secondary_table(ca: CausalAnalysis) -> pd.DataFrame:
    """The secondary outcomes' contrasts (95 % t intervals, no multiplicity correction): one row per
    outcome, architecture and contrast, the difference in the outcome's own units (ln units for the
    ln outcomes, nats for the losses, ρ for the premise)."""
    import pandas as pd

    frames = [ca.secondary(o).assign(outcome=OUTCOMES[o]) for o in OUTCOMES if o != PRIMARY]
    c = pd.concat(frames, ignore_index=True)
    return pd.DataFrame({"outcome": c["outcome"], "architecture": c["kind"], "contrast": c["contrast"],
                         "difference": c["estimate"],
                         "its 95 % CI": [_pair(lo, hi) for lo, hi in zip(c["lo"], c["hi"])],
                         "seeds": c["n_seeds"].astype(int)})


def descriptive_table(ca: CausalAnalysis) -> pd.DataFrame:
    """Every committed run beside its seed's control, complete seed or not (descriptive, no interval):
    the ratio of the primary outcome to the control's, the held-out loss difference and, for the
    surgical arms, the share of the update energy in P. Empty until a control and another arm of one
    seed are committed."""
    import pandas as pd

    t = ca.table
    rows = []
    for (kind, seed), g in t.groupby(["kind", "seed"], sort=False) if len(t) else []:
        ctrl = g[g["arm"] == "control"]
        if ctrl.empty:
            continue
        c = ctrl.iloc[0]
        for _, r in g[g["arm"] != "control"].iterrows():
            rows.append({"architecture": kind, "seed": int(seed), "arm": r["arm"],
                         "mean cosine / control's": float(np.exp(r["log_mean_cosine"] - c["log_mean_cosine"])),
                         "held-out loss − control's [nats]": float(r["heldout_loss"] - c["heldout_loss"]),
                         "update energy in P [share]": float(r["share"])})
    return pd.DataFrame(rows, columns=["architecture", "seed", "arm", "mean cosine / control's",
                                       "held-out loss − control's [nats]", "update energy in P [share]"])


def adaptive_word(ca: CausalAnalysis, kind: str) -> str:
    """The causal test's cost clause on "possibly adaptive" (``rule.cost``, ``adaptive``): it applies where
    the surgery lowers anisotropy and raises held-out loss (then ``supported``: anisotropy looks useful);
    ``no cost`` where the surgery lowers anisotropy without raising the loss; ``not assessable`` where
    the surgery does not lower anisotropy."""
    if ca.words[kind] not in ("supported", "not specific"):
        return "not assessable"
    cost = str(ca.cost.set_index("kind").loc[kind, "word"])
    return "supported" if cost == "positive" else "no cost"


def cells(ca: CausalAnalysis) -> list[dict]:
    """The causal test's cells of the closing table (:func:`tanbias.lab.analysis.verdicts.cell`), per
    architecture: the two mechanisms (the surgery), self-reinforcing, imprinted early and possibly
    adaptive; and weight tying, the one rival it reports. A qualifier is written only where the
    reading it names holds (each condition is read here), so it cannot outlive the data."""
    cw = words(ca)
    shared_only = {k: cw[f"secondary, {k}, isoscore"] == "indistinguishable" for k in KINDS}
    slower = cw["matched, encoder, proxy - control"] == "not told apart from progress"
    mechanisms = {
        "decoder": ("the shared mean only: no change of IsoScore* is detected" if shared_only["decoder"] else ""),
        "encoder": ("its mean cosine's rise is not told apart from slower learning (a reading added after the "
                    "data); no rule reads IsoScore* at matched progress" if slower else "")}
    dec, enc = ca.reinforcing["decoder"], ca.reinforcing["encoder"]
    # the gap rule reads the window's end and the change after it; what it was not written to read is said
    reinforcing = {
        "decoder": ("the early arm falls below the control only after its window, which the rule does not read"
                    if dec["word"] == "not assessable" and dec["gap_last_hi"] < 0 else ""),
        "encoder": ("the gap at the window's end has the wrong sign (the early arm is more anisotropic), and it "
                    "shrinks" if enc["word"] == "decays" and enc["gap_end_lo"] > 0 else "")}
    # the cost clause (causal.toml, rule.cost) reads only a rise of the loss
    loss = ca.cost.set_index("kind")["word"]
    falls = adaptive_word(ca, "decoder") == "no cost" and loss["decoder"] == "negative"
    out = []
    for kind in KINDS:
        ev = f"causal_{kind}"
        out.append(cell("mechanisms", ev, ca.words[kind], qualifier=mechanisms[kind], rule="registered",
                        anisotropy="shared mean" if shared_only[kind] else "both"))
        out.append(cell("reinforcing", ev, ca.reinforcing[kind]["word"], qualifier=reinforcing[kind],
                        rule="registered", anisotropy="shared mean"))
        early_shared = kind == "encoder" or shared_only["decoder"]
        out.append(cell("early", ev, ca.early[kind]["word"],
                        qualifier="a shift of the shared mean" if kind == "decoder" and shared_only["decoder"] else "",
                        rule="registered", anisotropy="shared mean" if early_shared else "both"))
        cost_falls = kind == "decoder" and falls
        out.append(cell("adaptive", ev, adaptive_word(ca, kind),
                        qualifier="the held-out loss falls; the registered clause reads only a rise" if cost_falls else "",
                        rule="added after the data" if cost_falls else "registered", anisotropy="shared mean"))
    # causal.toml's rule.rivals reports weight tying beside the surgery with no verdict: the word is its interval's
    tied = ca.tied.set_index("contrast").loc["tied - control"]
    out.append(cell("rivals", "causal_decoder", interval_word(np.log(tied["ratio_lo"]), np.log(tied["ratio_hi"])),
                    qualifier="one rival, weight tying; the registration reads no verdict from it",
                    rule="not registered", anisotropy="shared mean"))
    return out
