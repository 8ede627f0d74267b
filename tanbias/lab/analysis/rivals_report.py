"""The numbers, tables and words the rivals chapter (chapter 13) and the closing page quote.

Everything here reads :func:`tanbias.lab.analysis.rivals.analyse_rivals`, the causal test's
committed control runs (the transient before the rivals runs) and
:func:`tanbias.lab.analysis.rivals.initialisation_anisotropy`; nothing is computed twice.
"""
from __future__ import annotations

import numpy as np

from tanbias.lab import runs
from tanbias.lab.analysis import registered, rivals
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import CAUSAL, RIVALS, rivals_config
from tanbias.theory.anisotropy import TOP_COORDINATES

__all__ = ["ACCOUNT_NAMES", "INIT_SEEDS", "initialisation", "init_numbers", "transient_numbers", "numbers", "head_table",
           "head_numbers", "progress_table", "progress_numbers",
           "shares_table", "shares_numbers", "TOP_SHARE_EVEN",
           "accounts_table", "contrast_table", "survival_table", "twin_table", "registration"]

#: the accounts in the order the chapter reads them, with their names in words
ACCOUNT_NAMES = {"tangent_bias": "tangent bias (the statement)", "unigram_first": "unigram first",
                 "rogue_dimensions": "rogue dimensions", "common_drift": "common drift",
                 "output_bottleneck": "output bottleneck", "measurement": "measurement"}
#: the encoder seeds whose initialisation the chapter reads (the causal test's and the rivals' seeds 0-4)
INIT_SEEDS = (0, 1, 2, 3, 4)


def initialisation(seeds=INIT_SEEDS) -> "object":
    """:func:`~tanbias.lab.analysis.rivals.initialisation_anisotropy` of the encoder's control config at
    each seed, stacked (column ``seed``); memoised (:func:`tanbias.lab.runs.memoised`)."""
    import pandas as pd

    def compute():
        return pd.concat([rivals.initialisation_anisotropy(CAUSAL.config("encoder", "control", s)).assign(seed=s)
                          for s in seeds], ignore_index=True)
    return runs.memoised(f"rivals_initialisation-{'-'.join(map(str, seeds))}", compute)


def init_numbers(init) -> dict:
    """The layer-mean (blocks) content mean cosine at initialisation, mean over the seeds, per attention and
    input (``init_<bidirectional|causal>_<masked|unmasked>``), the within-row reading of the unmasked
    encoder (``init_within_unmasked``), the share of positions that show ``<mask>``
    (``init_mask_share``) and the number of seeds (``init_seeds``)."""
    t = init[(init["positions"] == "content") & (init["layer"] >= 1)]
    out = {"init_seeds": int(t["seed"].nunique())}
    for (attention, shown), g in t.groupby(["attention", "input"]):
        out[f"init_{attention}_{shown}"] = float(g.groupby("seed")["mean_cosine"].mean().mean())
    u = t[(t["attention"] == "bidirectional") & (t["input"] == "unmasked")]
    out["init_within_unmasked"] = float(u.groupby("seed")["within"].mean().mean())
    # the share of the batch's positions that show <mask> (position 0 of every row aside)
    e = init[(init["attention"] == "bidirectional") & (init["input"] == "masked") & (init["layer"] == 0)]
    n = e.pivot_table(index="seed", columns="positions", values="n", aggfunc="first").fillna(0)
    out["init_mask_share"] = float((n["mask"] / n.sum(axis=1)).mean())
    return out


def transient_numbers(causal_trajectory) -> dict:
    """The transient in the causal test's committed control runs (the layer-mean mean cosine): per
    architecture the mean at step 0, the largest value and the range of steps where each seed peaks,
    and the mean and range at the last step (``transient_<kind>_<start|peak|peak_first|peak_last|end|
    end_lo|end_hi>``)."""
    t = causal_trajectory[(causal_trajectory["arm"] == "control") & (causal_trajectory["layer"] == "mean")]
    out = {}
    for kind in KINDS:
        g = t[t["kind"] == kind].assign(mc=lambda d: np.exp(d["log_mean_cosine"]))
        by = g.groupby("seed")
        start = by.apply(lambda d: float(d.loc[d["step"].idxmin(), "mc"]), include_groups=False)
        peak = by.apply(lambda d: float(d["mc"].max()), include_groups=False)
        peak_step = by.apply(lambda d: int(d.loc[d["mc"].idxmax(), "step"]), include_groups=False)
        end = by.apply(lambda d: float(d.loc[d["step"].idxmax(), "mc"]), include_groups=False)
        out.update({f"transient_{kind}_start": float(start.mean()), f"transient_{kind}_peak": float(peak.mean()),
                    f"transient_{kind}_peak_first": int(peak_step.min()),
                    f"transient_{kind}_peak_last": int(peak_step.max()),
                    f"transient_{kind}_end": float(end.mean()), f"transient_{kind}_end_lo": float(end.min()),
                    f"transient_{kind}_end_hi": float(end.max()), f"transient_{kind}_seeds": int(len(end))})
    return out


def numbers(analysis) -> dict:
    """The experiment's numbers the chapter glues while its runs land: its status (``runs_committed``,
    ``runs_total``, ``interim``: ``"interim"`` or ``"final"``), the complete seeds
    (``complete_seeds_<kind>``), the proxy arms' median sharpness (``sharpness``: sigma_8 / sigma_9 of
    the inputs each proxy is fitted on) and the twins' counts (``twins``, ``twins_identical``,
    ``twins_within``, ``twins_different``), and for the twins that are not identical the latest step
    at which one first departs from its twin (``twins_first_step``) and the largest departure there,
    in float32 steps of the loss (``twins_first_ulps``). The verdicts themselves are the chapter's tables."""
    s = analysis.status
    out = {"runs_committed": int(s["committed"].sum()), "runs_total": int(len(s)),
           "interim": "interim" if analysis.interim else "final"}
    for kind in KINDS:
        out[f"complete_seeds_{kind}"] = len(analysis.seeds[kind])
    sharp = analysis.table.loc[analysis.table["arm"] == "proxy", "sharpness"]
    out["sharpness"] = float(sharp.median()) if sharp.notna().any() else float("nan")
    tw = analysis.twins
    out["twins"] = int(len(tw))
    for word, key in (("identical", "twins_identical"), ("within tolerance", "twins_within"),
                      ("different", "twins_different")):
        out[key] = int((tw["losses"] == word).sum()) if len(tw) else 0
    # where the twins that are not identical first part: the latest such step, the largest gap there
    apart = tw[tw["losses"] != "identical"]                # none: the maxima are NaN
    out["twins_first_step"] = float(apart["first_step"].max())
    out["twins_first_ulps"] = float(apart["first_ulps"].max())
    return out


def head_table(analysis) -> "object":
    """The transient under each output head while the runs land: per architecture, over the seeds whose
    control runs are committed under both heads, the mean of each head's largest layer-mean mean cosine
    and of its value at the last step. A description, not a registered contrast; an architecture
    without such a seed has ``seeds`` 0 and no values.

    Example
    -------
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> rows = [dict(kind="decoder", head=h, arm="control", seed=0, layer="mean", step=s, mean_cosine=v)
    ...         for h, vs in (("standard", (0.1, 0.9, 0.2)), ("unigram", (0.1, 0.4, 0.1)))
    ...         for s, v in zip((0, 10, 319), vs)]
    >>> t = head_table(SimpleNamespace(trajectory=pd.DataFrame(rows)))
    >>> t.set_index("architecture").loc["decoder"].tolist()
    [1.0, 0.9, 0.4, 0.2, 0.1]
    >>> int(t.set_index("architecture").loc["encoder", "seeds"])
    0
    """
    import pandas as pd

    t = analysis.trajectory
    t = t[(t["layer"].astype(str) == "mean") & (t["arm"] == "control")].sort_values("step")
    columns = pd.MultiIndex.from_product([("peak", "end"), ("standard", "unigram")])
    rows = []
    for kind in KINDS:
        per = t[t["kind"] == kind].groupby(["seed", "head"])["mean_cosine"].agg(peak="max", end="last")
        # one row per seed, both heads' columns; a seed missing either head drops out
        paired = per.unstack("head").reindex(columns=columns).dropna()
        m = paired.mean()
        rows.append({"architecture": kind, "seeds": len(paired),
                     "peak, standard head": float(m["peak", "standard"]),
                     "peak, unigram head": float(m["peak", "unigram"]),
                     "last step, standard head": float(m["end", "standard"]),
                     "last step, unigram head": float(m["end", "unigram"])})
    return pd.DataFrame(rows)


def head_numbers(analysis) -> dict:
    """:func:`head_table`'s peaks for the chapter's findings: ``head_peak_<head>_<kind>`` for the
    standard and the unigram head, over the seeds with both heads' control runs (NaN without one)."""
    t = head_table(analysis).set_index("architecture")
    return {f"head_peak_{head}_{kind}": float(t.loc[kind, f"peak, {head} head"])
            for kind in KINDS for head in ("standard", "unigram")}


def progress_table(progress) -> "object":
    """The registered matched-progress reading (:func:`~tanbias.lab.analysis.rivals.matched_progress`)
    as a reader's table: architecture, contrast, how much more held-out loss the first cell's runs end
    with (nats), the ratio at the last step (the registered contrast), the ratio at matched held-out
    loss with its 95 % interval (``lo``, ``hi``, ratios), the word, and the seeds it reads.

    Example
    -------
    >>> import pandas as pd
    >>> p = pd.DataFrame([dict(contrast="head_final", kind="decoder", estimate=np.log(0.5), lo=np.log(0.4),
    ...                        hi=np.log(0.6), n_seeds=2, loss_gap=-0.4, registered=np.log(0.45), word="survives")])
    >>> row = progress_table(p).iloc[0]
    >>> [round(float(row[c]), 2) for c in ("loss gap at end [nats]", "ratio, last step", "ratio, matched loss", "lo", "hi")]
    [-0.4, 0.45, 0.5, 0.4, 0.6]
    """
    import pandas as pd

    return pd.DataFrame({"architecture": progress["kind"], "contrast": progress["contrast"],
                         "loss gap at end [nats]": progress["loss_gap"],
                         "ratio, last step": np.exp(progress["registered"]),
                         "ratio, matched loss": np.exp(progress["estimate"]),
                         "lo": np.exp(progress["lo"]), "hi": np.exp(progress["hi"]),
                         "reading": progress["word"], "seeds": progress["n_seeds"].astype(int)}).reset_index(drop=True)


def progress_numbers(progress) -> dict:
    """The decoder's unigram-head effect at matched progress, for the chapter's prose: how much lower
    its held-out loss ends (``head_loss_lead_decoder``, nats: standard minus unigram head), the ratio at
    matched loss (``head_matched_decoder``); the chapter checks the reading's word itself."""
    r = progress.set_index(["contrast", "kind"]).loc[("head_final", "decoder")]
    return {"head_loss_lead_decoder": -float(r["loss_gap"]), "head_matched_decoder": float(np.exp(r["estimate"]))}


#: the top-3 coordinates' variance share of a cloud whose variance is spread evenly over the
#: width of the rivals runs (the rogue-dimension account predicts well above it)
TOP_SHARE_EVEN = TOP_COORDINATES / rivals_config("decoder", "standard-control", 0).size.hidden_size


def shares_table(shares) -> "object":
    """The readings the account rules read (rule.shares, :func:`~tanbias.lab.analysis.rivals.share_rows`),
    per architecture and head, in the control runs: how much of the raw mean cosine centring and
    standardising leave (ratios), chapter 7's enrichment with and without the output matrix's top
    subspace (ln), each with its 95 % interval as ``<column> lo`` / ``<column> hi``, the mean's share
    of the energy and the top-3 coordinates' variance share.

    Example
    -------
    >>> import pandas as pd
    >>> row = dict(kind="decoder", head="standard", n_seeds=2, mean_share=0.2, top_share=0.04,
    ...            **{f"{k}{e}": v for k in ("q_c", "q_s", "enrichment", "enrichment_outside")
    ...               for e, v in (("", 0.1), ("_lo", 0.0), ("_hi", 0.2))})
    >>> t = shares_table(pd.DataFrame([row]))
    >>> list(t.columns)[:4], float(t.loc[0, "centred / raw hi"])
    (['architecture', 'head', 'seeds', 'centred / raw'], 0.2)
    """
    import pandas as pd

    out = pd.DataFrame({"architecture": shares["kind"], "head": shares["head"],
                        "seeds": shares["n_seeds"].astype(int)})
    for key, name in (("q_c", "centred / raw"), ("q_s", "standardised / raw"), ("enrichment", "enrichment (ln)"),
                      ("enrichment_outside", "outside W_U (ln)")):
        out[name], out[f"{name} lo"], out[f"{name} hi"] = shares[key], shares[f"{key}_lo"], shares[f"{key}_hi"]
    out["mean's share"], out["top-3 share"] = shares["mean_share"], shares["top_share"]
    return out.reset_index(drop=True)


def shares_numbers(shares) -> dict:
    """The top-3 coordinates' variance share of the standard head's control runs per architecture
    (``top_share_<kind>``) and of an even spread (``top_share_even``), for the chapter's prose."""
    s = shares.set_index(["kind", "head"])
    return {"top_share_even": TOP_SHARE_EVEN,
            **{f"top_share_{kind}": float(s.loc[(kind, "standard"), "top_share"]) for kind in KINDS}}


def accounts_table(accounts) -> "object":
    """The accounts' words, one row per account, one column per architecture."""
    t = accounts.pivot(index="account", columns="kind", values="word").reindex(list(ACCOUNT_NAMES))[list(KINDS)]
    t.index = [ACCOUNT_NAMES[a] for a in t.index]
    return t.rename_axis("account").reset_index()


def contrast_table(contrasts, family: str) -> "object":
    """One family's contrasts for the chapter's dropdown: contrast, architecture, reading, estimate with
    its 95 % interval (``lo``, ``hi``), raw and Holm-adjusted p, the interval's word."""
    t = contrasts[contrasts["family"] == family]
    return t[["contrast", "kind", "outcome", "estimate", "lo", "hi", "p", "p_holm", "word"]].rename(
        columns={"kind": "architecture", "outcome": "reading", "p_holm": "Holm p"})


def survival_table(survival) -> "object":
    """The earlier verdicts under each correction, as :func:`~tanbias.lab.analysis.rivals.survival_rows`."""
    return survival.rename(columns={"kind": "architecture"})


def twin_table(twins) -> "object":
    """The standard-head runs against their committed twins."""
    return twins[["run", "twin", "losses", "tables", "first_step", "max_loss_diff", "max_table_diff"]].rename(
        columns={"first_step": "first step apart", "max_loss_diff": "largest loss difference",
                 "max_table_diff": "largest table difference"})


def registration() -> dict:
    """The rivals experiment's registration (:func:`tanbias.lab.analysis.registered.registration`)."""
    return registered.registration(RIVALS)
