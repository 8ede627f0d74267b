"""The numbers, tables and words the rivals chapter (chapter 13) and the closing page quote.

The experiment's face (registered in :mod:`tanbias.lab.analysis.findings`): :func:`analyse` reads
:func:`tanbias.lab.analysis.rivals.analyse_rivals`, the readings added after the data
(:func:`tanbias.lab.analysis.rivals_posthoc.analyse_posthoc`), the encoder at initialisation
(:func:`tanbias.lab.analysis.rivals.initialisation_anisotropy`) and the causal test's committed control
runs (the transient before the rivals runs), once; :func:`numbers` and :func:`words` are what the
chapter and the closing page glue and state.
"""
from __future__ import annotations

from typing import NamedTuple, TYPE_CHECKING

import numpy as np

from tanbias.lab import runs
from tanbias.lab.analysis import causal, registered, rivals, rivals_posthoc
from tanbias.lab.analysis.verdicts import PROPERTIES, cell
from tanbias.lab.config import KINDS
from tanbias.lab.experiments import CAUSAL, RIVALS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["cells", "survival_word", "survival_readings", "SURVIVAL_ROWS", "ACCOUNT_NAMES", "RivalsReport",
           "analyse", "numbers", "words", "initialisation", "init_numbers", "transient_numbers", "run_numbers",
           "head_table", "head_numbers", "long_numbers", "progress_table", "progress_numbers", "shares_table",
           "shares_numbers", "TOP_SHARE_EVEN", "accounts_table", "contrast_table", "contrast_numbers",
           "VERDICT_KEYS", "words_of", "survival_table", "twin_table", "registration", "predictions_outcome_table",
           "predictions_table", "accounts_summary_table", "power_table", "kinds_table", "SURVIVAL_HEADERS",
           "secondary_power_table", "peak_table", "posthoc_survival_table", "earlier_word",
           "difference_survival_table", "difference_numbers", "null_table", "posthoc_numbers", "posthoc_words",
           "QUOTED_CONTRASTS", "QUOTED_NULLS"]

#: the accounts in the order the chapter reads them, with their names in words
ACCOUNT_NAMES = {"tangent_bias": "tangent bias (the statement)", "unigram_first": "unigram first",
                 "rogue_dimensions": "rogue dimensions", "common_drift": "common drift",
                 "output_bottleneck": "output bottleneck", "measurement": "measurement"}
#: the encoder seeds whose initialisation the chapter reads (the causal test's and the rivals' seeds 0-4)
INIT_SEEDS = (0, 1, 2, 3, 4)


def initialisation(seeds=INIT_SEEDS) -> pd.DataFrame:
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


def run_numbers(analysis) -> dict:
    """The experiment's numbers the chapter glues while its runs land: its status (``runs_committed``,
    ``runs_total``; whether it is interim is :func:`words_of`'s ``status``), the complete seeds
    (``complete_seeds_<kind>``), the proxy arms' median sharpness (``sharpness``: sigma_8 / sigma_9 of
    the inputs each proxy is fitted on) and the twins' counts (``twins``, ``twins_identical``,
    ``twins_within``, ``twins_different``), and for the twins that are not identical the latest step
    at which one first departs from its twin (``twins_first_step``; the median over them,
    ``twins_first_step_median``) and the largest departure there,
    in float32 steps of the loss (``twins_first_ulps``). The verdicts themselves are the chapter's tables."""
    s = analysis.status
    out = {"runs_committed": int(s["committed"].sum()), "runs_total": int(len(s))}
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
    out["twins_first_step_median"] = float(apart["first_step"].median())
    out["twins_first_ulps"] = float(apart["first_ulps"].max())
    return out


class RivalsReport(NamedTuple):
    """What the rivals chapter reads, computed once (:func:`analyse`)."""
    analysis: rivals.RivalsAnalysis
    posthoc: rivals_posthoc.PosthocAnalysis
    init: pd.DataFrame                  # initialisation()
    transient: pd.DataFrame             # the causal test's trajectory table (its control runs' transient)


def analyse(init_seeds=INIT_SEEDS) -> RivalsReport:
    """The committed rivals runs' analysis, its readings added after the data, the encoder at
    initialisation at ``init_seeds`` and the causal test's trajectory (each memoised)."""
    return RivalsReport(rivals.analyse_rivals(), rivals_posthoc.analyse_posthoc(), initialisation(init_seeds),
                        causal.analyse_causal().trajectory)


def numbers(r: RivalsReport) -> dict:
    """Every number chapter 13 and the closing page glue from the experiment, in one dict (keys without
    the ``ch13_`` prefix): :func:`run_numbers`, :func:`head_numbers`, :func:`progress_numbers`,
    :func:`shares_numbers`, :func:`init_numbers`, :func:`contrast_numbers`, :func:`long_numbers`,
    :func:`transient_numbers`, :func:`posthoc_numbers` and :func:`difference_numbers`."""
    a = r.analysis
    return {**run_numbers(a), **head_numbers(a), **progress_numbers(a.progress), **shares_numbers(a.shares),
            **init_numbers(r.init), **contrast_numbers(a.contrasts), **long_numbers(a.trajectory),
            **transient_numbers(r.transient), **posthoc_numbers(a, r.posthoc),
            **(difference_numbers(r.posthoc) if r.posthoc.tested is not None else {})}


def words(r: RivalsReport) -> dict:
    """Every word chapter 13 and the closing page state about the experiment, by name, for
    :func:`tanbias.stats.check_words`: :func:`words_of` the analysis and :func:`posthoc_words`."""
    return {**words_of(r.analysis), **posthoc_words(r.posthoc)}


def head_table(analysis) -> pd.DataFrame:
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


def long_numbers(trajectory) -> dict:
    """What follows the transient: per architecture and head, the long runs' (arm ``long``) layer-mean
    mean cosine at their last probe step, averaged over their seeds (``long_end_<head>_<kind>``), the
    same for the 320-step control runs of those seeds (``short_end_<head>_<kind>``), the unigram
    head's over the standard head's at each length (``long_ratio_<kind>``, ``short_ratio_<kind>``),
    and how many long runs are committed (``long_runs``). NaN where a cell has no long run.

    Example
    -------
    >>> import pandas as pd
    >>> rows = [dict(kind="decoder", head="standard", arm=arm, seed=0, layer="mean", step=s, mean_cosine=v)
    ...         for arm, steps, vs in (("long", (0, 1279), (0.1, 0.05)), ("control", (0, 319), (0.1, 0.2)))
    ...         for s, v in zip(steps, vs)]
    >>> n = long_numbers(pd.DataFrame(rows))
    >>> n["long_end_standard_decoder"], n["short_end_standard_decoder"], n["long_runs"]
    (0.05, 0.2, 1)
    >>> bool(np.isnan(n["long_end_unigram_encoder"])), bool(np.isnan(n["long_ratio_decoder"]))
    (True, True)
    """
    t = trajectory[trajectory["layer"].astype(str) == "mean"].sort_values("step")
    ends = t.groupby(["kind", "head", "arm", "seed"])["mean_cosine"].last()
    out = {"long_runs": int((ends.index.get_level_values("arm") == "long").sum())}
    for kind in KINDS:
        for head in ("standard", "unigram"):
            try:
                long = ends.loc[(kind, head, "long")]
            except KeyError:
                long = ends.iloc[:0]
            short = ends.reindex([(kind, head, "control", s) for s in long.index]).dropna()
            out[f"long_end_{head}_{kind}"] = float(long.mean()) if len(long) else float("nan")
            out[f"short_end_{head}_{kind}"] = float(short.mean()) if len(short) else float("nan")
        for when in ("long", "short"):
            out[f"{when}_ratio_{kind}"] = out[f"{when}_end_unigram_{kind}"] / out[f"{when}_end_standard_{kind}"]
    return out


def contrast_name(code: str) -> str:
    """A registered contrast as a table names it, in words (:data:`~tanbias.lab.analysis.rivals.CONTRAST_NAMES`);
    a contrast without a name keeps its own (a test keeps every registered one named).

    >>> contrast_name("head_final"), contrast_name("surgery_unigram_random")
    ('unigram head − standard', 'proxy − random surgery, unigram head')
    """
    return rivals.CONTRAST_NAMES.get(code, code)


#: each registered reading (an outcome of rivals.toml) as a table names it, in words; a logarithm says so
#: (its contrast is a difference of logarithms)
READING_WORDS = {o: ("ln " if o in rivals.LOG_OUTCOMES else "") + w for o, w in {
    "raw": "mean cosine", "peak": "peak mean cosine", "centred": "centred mean cosine",
    "centred_at_peak": "centred mean cosine at the peak", "standardised": "z-scored mean cosine",
    "type_balanced": "mean cosine, types equal", "mean_share": "mean's share of the norm",
    "top_share": "top-3 coordinates' share", "isoscore": "IsoScore*", "log_mean_share": "mean's share of the norm",
    "participation": "participation ratio", "enrichment": "enrichment", "enrichment_outside": "enrichment outside W_U",
    "heldout_loss": "held-out loss [nats]", "gain": "gain over unigram [nats]"}.items()}


def progress_table(progress) -> pd.DataFrame:
    """The registered matched-progress reading (:func:`~tanbias.lab.analysis.rivals.matched_progress`)
    as a reader's table (:func:`tanbias.lab.analysis.registered.progress_table`, as chapter 12's), each
    contrast in words."""
    return registered.progress_table(progress.assign(contrast=progress["contrast"].map(contrast_name)))


def progress_numbers(progress) -> dict:
    """The unigram head's effect at matched progress, per architecture, for the chapter's prose: how
    much lower its held-out loss ends (``head_loss_lead_<kind>``, nats: standard minus unigram head)
    and the ratio at matched loss (``head_matched_<kind>``); the chapter checks the reading's word
    itself (:func:`words_of`, ``matched, <kind>, head_final``)."""
    p = progress.set_index(["contrast", "kind"])
    out = {}
    for kind in KINDS:
        r = p.loc[("head_final", kind)]
        out.update({f"head_loss_lead_{kind}": -float(r["loss_gap"]), f"head_matched_{kind}": float(np.exp(r["estimate"]))})
    return out


#: the top-3 coordinates' variance share of a cloud whose variance is spread evenly over the
#: width of the rivals runs (the rogue-dimension account predicts well above it)
TOP_SHARE_EVEN = rivals_posthoc.TOP_SHARE_EVEN


def shares_table(shares) -> pd.DataFrame:
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


def accounts_table(accounts) -> pd.DataFrame:
    """The accounts' words, one row per account, one column per architecture."""
    t = accounts.pivot(index="account", columns="kind", values="word").reindex(list(ACCOUNT_NAMES))[list(KINDS)]
    t.index = [ACCOUNT_NAMES[a] for a in t.index]
    return t.rename_axis("account").reset_index()


def contrast_table(contrasts, family: str) -> pd.DataFrame:
    """One family's contrasts for the chapter's dropdown: contrast, architecture, reading, estimate with
    its 95 % interval (``lo``, ``hi``), raw and Holm-adjusted p, the interval's word."""
    t = contrasts[contrasts["family"] == family]
    t = t.assign(contrast=t["contrast"].map(contrast_name),
                 outcome=t["outcome"].map(lambda o: READING_WORDS.get(o, o)))
    return t[["contrast", "kind", "outcome", "estimate", "lo", "hi", "p", "p_holm", "word"]].rename(
        columns={"kind": "architecture", "outcome": "reading", "p_holm": "Holm p", "word": "interval's word"})


def contrast_numbers(contrasts) -> dict:
    """The primary family's contrasts as the prose quotes them: ``<contrast>_<kind>`` is the ratio
    exp(estimate) for an outcome that is a logarithm (:data:`~tanbias.lab.analysis.rivals.LOG_OUTCOMES`)
    and the difference otherwise, with its 95 % interval (``_lo``, ``_hi``) on the same scale. The
    secondary contrasts are the chapter's tables; every contrast's word is :func:`words_of`'s.

    Example
    -------
    >>> import pandas as pd
    >>> c = pd.DataFrame([dict(family="primary", contrast="head_final", kind="decoder", outcome="raw",
    ...                        estimate=np.log(0.5), lo=np.log(0.4), hi=np.log(0.6)),
    ...                   dict(family="secondary", contrast="head_final_centred", kind="decoder", outcome="centred",
    ...                        estimate=-0.01, lo=-0.02, hi=0.0)])
    >>> n = contrast_numbers(c)
    >>> round(n["head_final_decoder"], 3), round(n["head_final_decoder_hi"], 3), sorted(n)[0]
    (0.5, 0.6, 'head_final_decoder')
    >>> len(n)
    3
    """
    out = {}
    for _, r in contrasts[contrasts["family"] == "primary"].iterrows():
        scale = np.exp if r["outcome"] in rivals.LOG_OUTCOMES else float
        key = f"{r['contrast']}_{r['kind']}"
        out.update({key: float(scale(r["estimate"])), f"{key}_lo": float(scale(r["lo"])),
                    f"{key}_hi": float(scale(r["hi"]))})
    return out


#: a short name for each earlier verdict the survival table re-reads (the start of its ``verdict``)
VERDICT_KEYS = {"surgery": "surgery", "aliasing": "aliasing", "the proxy is enriched": "enrichment"}


def words_of(analysis) -> dict:
    """Every word chapter 13 and the closing page state about the experiment, by name, for
    :func:`words`: ``status`` (``interim`` or ``final``); ``<account>, <kind>`` (the account's
    word by its registered rule); ``contrast, <kind>, <contrast>`` (the interval word of each
    registered contrast); ``holm, <kind>, <contrast>`` (``significant`` or ``not significant`` by
    Holm over the primary family, at its α); ``matched, <kind>, <contrast>`` (its registered reading at matched
    progress); ``<verdict>, <kind>, <column>`` (each cell of the survival table, the
    verdict by its :data:`VERDICT_KEYS` name: ``surgery``, ``aliasing``, ``enrichment``); and
    ``kept, <verdict>, <kind>``: ``every rival`` when every correction that applies keeps the
    standard reading's word, ``no rival`` when none does, ``some rivals`` otherwise.

    Example
    -------
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> survival = pd.DataFrame([dict(verdict="surgery lowers", kind="decoder", standard="negative",
    ...     **{"unigram head": "negative", "centred": "indistinguishable", "standardised": "negative",
    ...        "type-balanced": "negative", "outside W_U": "n/a"})])
    >>> a = SimpleNamespace(interim=False, survival=survival, progress=pd.DataFrame(columns=["kind", "contrast", "word"]),
    ...                     contrasts=pd.DataFrame(columns=["kind", "contrast", "word", "family", "p_holm"]),
    ...                     accounts=pd.DataFrame([dict(account="common_drift", kind="decoder", word="supported")]))
    >>> w = words_of(a)
    >>> w["status"], w["common_drift, decoder"], w["surgery, decoder, centred"], w["kept, surgery, decoder"]
    ('final', 'supported', 'indistinguishable', 'some rivals')
    """
    out = {"status": "interim" if analysis.interim else "final"}
    out.update({f"{r['account']}, {r['kind']}": r["word"] for _, r in analysis.accounts.iterrows()})
    out.update({f"contrast, {r['kind']}, {r['contrast']}": r["word"] for _, r in analysis.contrasts.iterrows()})
    out.update({f"holm, {r['kind']}, {r['contrast']}": "significant" if r["p_holm"] < rivals.ALPHA else "not significant"
                for _, r in analysis.contrasts.iterrows() if r["family"] == "primary"})
    out.update({f"matched, {r['kind']}, {r['contrast']}": r["word"] for _, r in analysis.progress.iterrows()})
    for _, r in analysis.survival.iterrows():
        key = next(v for k, v in VERDICT_KEYS.items() if r["verdict"].startswith(k))
        for column in ("standard", *rivals.CORRECTIONS):
            out[f"{key}, {r['kind']}, {column}"] = r[column]
        kept = rivals.corrections_kept(r)
        out[f"kept, {key}, {r['kind']}"] = "every rival" if all(kept) else "no rival" if not any(kept) else "some rivals"
    return out


def survival_table(survival) -> pd.DataFrame:
    """The earlier verdicts under each correction, as :func:`~tanbias.lab.analysis.rivals.survival_rows` (each
    cell the interval's word of that reading), its columns named as the chapter's survival table names them
    (:data:`SURVIVAL_HEADERS`)."""
    return survival.rename(columns={"kind": "architecture", **SURVIVAL_HEADERS})


def twin_table(twins) -> pd.DataFrame:
    """The standard-head runs against their committed twins."""
    return twins[["run", "twin", "losses", "tables", "first_step", "max_loss_diff", "max_table_diff"]].rename(
        columns={"first_step": "first step apart", "max_loss_diff": "largest loss difference",
                 "max_table_diff": "largest table difference"})


def registration() -> dict:
    """The rivals experiment's registration (:func:`tanbias.lab.analysis.registered.registration`)."""
    return registered.registration(RIVALS)


# --------------------------------------------------------------------------- the readings added after the data
def predictions_outcome_table(predictions) -> pd.DataFrame:
    """Every registered prediction, account by account, with its outcome in each architecture
    (``met``, ``failed``, ``undecided``; rivals-posthoc.toml, [predictions])."""
    t = predictions.pivot_table(index=["account", "key", "prediction"], columns="kind", values="outcome",
                                aggfunc="first", sort=False).reset_index()
    t["account"] = t["account"].map(ACCOUNT_NAMES)
    return t[["account", "prediction", *KINDS]]


def predictions_table(predictions, kind: str) -> pd.DataFrame:
    """One architecture's registered predictions, account by account, each with its reading and outcome
    (``rivals-posthoc.toml``, [predictions]): account, prediction, reading (its 95 % interval), outcome."""
    t = predictions[predictions["kind"] == kind]
    return t.assign(account=t["account"].map(ACCOUNT_NAMES))[["account", "prediction", "reading", "outcome"]]


def accounts_summary_table(summary) -> pd.DataFrame:
    """Each account's registered word beside its predictions' outcomes and its word by all of them, one row
    per account, the two architectures side by side (``registered``, ``failed / all``, ``all predictions``)."""
    import pandas as pd

    rows = []
    for account, name in ACCOUNT_NAMES.items():
        row = {"account": name}
        for kind in KINDS:
            r = summary[(summary["account"] == account) & (summary["kind"] == kind)].iloc[0]
            row[f"{kind}: registered word"] = r["registered"]
            row[f"{kind}: failed"] = f"{int(r['failed'])} of {int(r['predictions'])}"
            row[f"{kind}: by all predictions"] = r["all_predictions"]
        rows.append(row)
    return pd.DataFrame(rows)


def power_table(power) -> pd.DataFrame:
    """The primary family's realised power ([power]): contrast, architecture, seeds, planned and realised
    residual SD, power for a x1.25 change at Holm's first threshold, and the smallest change detectable
    with 80 % power there."""
    return power[["contrast", "kind", "n_seeds", "planned_sd", "sd", "power_first", "detectable"]].rename(columns={
        "kind": "architecture", "n_seeds": "seeds", "planned_sd": "planned SD", "sd": "realised SD",
        "power_first": "power for ×1.25", "detectable": "detectable ratio (80 %)"}).assign(
        contrast=lambda t: t["contrast"].map(contrast_name))


def secondary_power_table(power) -> pd.DataFrame:
    """The secondary contrasts' realised power (:func:`~tanbias.lab.analysis.rivals_posthoc.secondary_power`)."""
    return power[["contrast", "kind", "n_seeds", "power_first", "power_alpha", "detectable"]].rename(columns={
        "kind": "architecture", "n_seeds": "seeds", "power_first": "power for ×1.25 (Holm's first threshold)",
        "power_alpha": "power at α", "detectable": "detectable ratio (80 %)"}).assign(
        contrast=lambda t: t["contrast"].map(contrast_name))


def peak_table(peaks) -> pd.DataFrame:
    """The registered contrasts on the final mean cosine read again at the peak, as ratios with their 95 %
    intervals, beside the final reading: shown, without a verdict (rivals.toml, ``phases``)."""
    import pandas as pd

    return pd.DataFrame({"contrast": peaks["contrast"].map(contrast_name), "architecture": peaks["kind"],
                         "at the peak": np.exp(peaks["estimate"]), "lo": np.exp(peaks["lo"]),
                         "hi": np.exp(peaks["hi"]), "at the last step": np.exp(peaks["final"])})


#: a direction of anisotropy (or chapter 7's enrichment) as a table cell says it, in few letters
SHORT_WORDS = {"more anisotropic": "higher", "less anisotropic": "lower", "not detected": "none",
               "enriched": "enriched", "depleted": "depleted", "n/a": "n/a", "undecided": "undecided"}
#: the verdicts' short names in the tables
_SHORT_VERDICTS = {"surgery lowers it: proxy - control": "surgery: proxy − control",
                   "surgery lowers it: proxy - random": "surgery: proxy − random",
                   "aliasing raises it": "aliasing", "the proxy is enriched late": "enrichment (ch. 7)",
                   "surgery, proxy - control": "surgery: proxy − control",
                   "surgery, proxy - random": "surgery: proxy − random",
                   "aliasing, k3 - control": "aliasing", "output bias, unigram - standard head": "output bias"}


def _short_verdict(verdict: str) -> str:
    """A verdict's short name (:data:`_SHORT_VERDICTS`, by prefix).

    >>> _short_verdict("aliasing raises it (chapter 11)"), _short_verdict("surgery, proxy - random")
    ('aliasing', 'surgery: proxy − random')
    """
    return next(v for k, v in _SHORT_VERDICTS.items() if verdict.startswith(k))


def kinds_table(kinds) -> pd.DataFrame:
    """Each earlier anisotropy verdict on both kinds of anisotropy ([two_kinds]): one row per verdict,
    head and architecture, each reading's direction (anisotropy ``higher``, ``lower``, ``none``
    detected), and whether the two kinds agree."""
    import pandas as pd

    head = kinds["head"].map({"standard": "standard head, ", "unigram": "unigram head, ", "both": ""})
    out = pd.DataFrame({"verdict": [f"{_short_verdict(v)}, {h}{k}" for v, h, k in
                                    zip(kinds["verdict"], head, kinds["kind"])]})
    for reading, name in rivals_posthoc.READING_NAMES.items():
        out[name] = kinds[f"{reading}_word"].map(SHORT_WORDS).to_numpy()
    out["agree"] = kinds["agree"].map({True: "yes", False: "no"}).to_numpy()
    return out


#: the survival table's columns as the chapter names them (short, so that the table fits the page)
SURVIVAL_HEADERS = {"standard": "uncorrected", "standardised": "z-scored", "type-balanced": "types equal"}


def posthoc_survival_table(survival) -> pd.DataFrame:
    """The earlier verdicts under each rival's correction ([two_kinds].survival): one row per verdict and
    architecture, each cell anisotropy ``higher``, ``lower`` or ``none`` detected on that column's reading
    (``enriched`` for chapter 7's enrichment; ``n/a`` where a correction does not apply), and how many of
    the corrections that apply keep the standard reading's word."""
    import pandas as pd

    out = pd.DataFrame({"verdict (corrections that keep its word)": [
        f"{_short_verdict(v)}, {k} ({n} of {a})" for v, k, n, a in
        zip(survival["verdict"], survival["kind"], survival["kept"], survival["applies"])]})
    for column in ("standard", *rivals_posthoc.SURVIVAL_CORRECTIONS):
        out[SURVIVAL_HEADERS.get(column, column)] = survival[column].map(SHORT_WORDS).to_numpy()
    return out


def earlier_word(kept: int, applies: int) -> str:
    """One row's word by the earlier survival rule (``rivals-posthoc.toml`` [words], as
    :func:`survival_word` reads it): ``survives`` where every correction that
    applies keeps the standard word, ``does not survive`` where none does, ``partly survives`` otherwise.

    >>> earlier_word(3, 3), earlier_word(0, 2), earlier_word(1, 3), earlier_word(0, 0)
    ('survives', 'does not survive', 'partly survives', 'not tested')
    """
    if not applies:
        return "not tested"
    return "survives" if kept == applies else "does not survive" if not kept else "partly survives"


def difference_survival_table(posthoc) -> pd.DataFrame:
    """The survival table by a test of the difference (``book-posthoc.toml`` [survival],
    :func:`~tanbias.lab.analysis.rivals_posthoc.survival_tested`): one row per verdict and architecture, each
    correction's cell ``kept``, ``lost``, ``not decided``, ``no test`` or ``n/a``; the row's word by that
    rule (:func:`~tanbias.lab.analysis.rivals_posthoc.survival_tested_word`); and beside it the row's word
    by the earlier rule (:func:`earlier_word` of :func:`posthoc_survival_table`'s counts), which counted a
    correction as lost wherever its reading was not significant."""
    import pandas as pd

    tested, earlier = posthoc.tested.reset_index(drop=True), posthoc.survival.reset_index(drop=True)
    if list(zip(tested["verdict"], tested["kind"])) != list(zip(earlier["verdict"], earlier["kind"])):
        raise ValueError("the two survival tables do not read the same verdicts in the same order")
    out = pd.DataFrame({"verdict, architecture": [f"{_short_verdict(v)}, {k}"
                                                  for v, k in zip(tested["verdict"], tested["kind"])]})
    for column in rivals_posthoc.SURVIVAL_CORRECTIONS:
        out[SURVIVAL_HEADERS.get(column, column)] = tested[column].to_numpy()
    out["by a test of the difference"] = [rivals_posthoc.survival_tested_word(tested.iloc[[i]])
                                          for i in range(len(tested))]
    out["by the earlier rule"] = [earlier_word(int(k), int(a)) for k, a in zip(earlier["kept"], earlier["applies"])]
    return out


def difference_numbers(posthoc) -> dict:
    """What the chapter counts in :func:`difference_survival_table`: ``tested_rows`` (verdict and architecture),
    ``tested_survives`` (rows that survive by a test of the difference), ``tested_cells`` (cells a
    correction applies to), ``tested_kept``, ``tested_lost``, ``tested_undecided`` and ``tested_no_test``
    (cells of each reading), and ``earlier_partly`` (rows the earlier rule read as partly surviving)."""
    t = difference_survival_table(posthoc)
    cells = [v for c in rivals_posthoc.SURVIVAL_CORRECTIONS for v in posthoc.tested[c]]
    return {"tested_rows": len(t), "tested_survives": int((t["by a test of the difference"] == "survives").sum()),
            "tested_cells": sum(v != "n/a" for v in cells), "tested_kept": cells.count("kept"),
            "tested_lost": cells.count("lost"), "tested_undecided": cells.count("not decided"),
            "tested_no_test": cells.count("no test"),
            "earlier_partly": int((t["by the earlier rule"] == "partly survives").sum())}


def null_table(nulls) -> pd.DataFrame:
    """Every correction that leaves an effect undetected, relative to the control's level, beside the
    uncorrected change ([null_shares]), as percentages: one row per verdict, architecture, head and
    correction; ``lo`` / ``hi`` the corrected change's 95 % interval."""
    import pandas as pd

    return pd.DataFrame({
        "verdict": [f"{_short_verdict(v)}, {k}, {h} head" for v, k, h in zip(nulls["verdict"], nulls["kind"], nulls["head"])],
        "correction": nulls["correction"].to_numpy(), "uncorrected (%)": 100 * nulls["raw"].to_numpy(),
        "corrected (%)": 100 * nulls["estimate"].to_numpy(), "lo": 100 * nulls["lo"].to_numpy(),
        "hi": 100 * nulls["hi"].to_numpy(),
        "excludes the uncorrected": nulls["excludes_raw"].map({True: "yes", False: "no"}).to_numpy()})


#: the secondary contrasts the pages quote as ratios, per architecture (``_holm``: with the Holm-adjusted p)
QUOTED_CONTRASTS = {"encoder": {"head_peak": "", "surgery_standard": "_holm", "surgery_interaction": "",
                                 "surgery_standard_random": "", "head_enrichment": None, "head_enrichment_outside": ""},
                     "decoder": {"alias_standard": None, "alias_unigram": None, "alias_interaction": "_holm",
                                 "head_enrichment": None, "head_peak": ""}}
#: the nulls the pages quote: (head, correction, verdict, architecture, with the uncorrected change)
QUOTED_NULLS = (("unigram", "centred", "surgery", "decoder", True), ("standard", "centred", "surgery", "encoder", True),
                 ("standard", "IsoScore*", "surgery", "decoder", False))


def posthoc_numbers(analysis, posthoc) -> dict:
    """The numbers the pages quote from the readings added after the data (``rivals-posthoc.toml``):

    * ``failed_unigram_first_decoder``, ``failed_common_drift_<kind>``: how many of those accounts'
      predictions failed;
    * ``realised_power_<kind>``, ``detectable_<kind>``, ``realised_sd_<kind>``: the primary family's
      realised power for x1.25 at Holm's first threshold, the smallest ratio it detects with 80 % power,
      and the residual SD (the unigram head's contrast; the surgery's has the same; the planned SD is
      :func:`~tanbias.lab.analysis.rivals_design.design_numbers`' ``sd_<kind>``);
    * the secondary contrasts of :data:`QUOTED_CONTRASTS` as ratios, ``<contrast>_<kind>``, with
      ``_lo`` / ``_hi`` (and ``_holm``) where the pages quote them;
    * ``head_centred_decoder`` with ``_lo`` / ``_hi``: the unigram head's effect on the centred mean cosine;
    * ``outside_share_<kind>``: the enrichment left outside W_U's top subspace, as a ratio of the enrichment;
    * ``mean_share_<kind>`` with ``_lo`` / ``_hi``: the mean's share of the squared norm;
    * ``alias_standard_matched_decoder`` with ``_lo`` / ``_hi``: aliasing under the standard head at matched
      progress;
    * the nulls of :data:`QUOTED_NULLS`, in percent: ``null_<head>_<correction>_<verdict>_<kind>`` with
      ``_lo``, ``_hi`` (and ``_raw``, the uncorrected change);
    * from :func:`~tanbias.lab.analysis.rivals_posthoc.scatter_numbers`: the encoder's seed scatter of the
      heads' ratio (``short_ratio_lo_<kind>``, ``short_ratio_hi_<kind>``, ``short_ratio_logsd_encoder``),
      the early peaks and collapses the chapter counts, ``peak_step_max`` and ``peak_within``.
    """
    out = {}
    failed = posthoc.summary.set_index(["account", "kind"])["failed"]
    out["failed_unigram_first_decoder"] = int(failed[("unigram_first", "decoder")])
    for kind in KINDS:
        out[f"failed_common_drift_{kind}"] = int(failed[("common_drift", kind)])
    for _, r in posthoc.power[posthoc.power["contrast"] == "head_final"].iterrows():
        k = r["kind"]
        out.update({f"realised_power_{k}": float(r["power_first"]), f"detectable_{k}": float(r["detectable"]),
                    f"realised_sd_{k}": float(r["sd"])})
    c = analysis.contrasts.set_index(["contrast", "kind"])
    for kind, quoted in QUOTED_CONTRASTS.items():
        for name, extra in quoted.items():
            r = c.loc[(name, kind)]
            out[f"{name}_{kind}"] = float(np.exp(r["estimate"]))
            if extra is not None:
                out.update({f"{name}_{kind}_lo": float(np.exp(r["lo"])), f"{name}_{kind}_hi": float(np.exp(r["hi"]))})
            if extra == "_holm":
                out[f"{name}_{kind}_holm"] = float(r["p_holm"])
    r = c.loc[("head_final_centred", "decoder")]
    out.update({"head_centred_decoder": float(r["estimate"]), "head_centred_decoder_lo": float(r["lo"]),
                "head_centred_decoder_hi": float(r["hi"])})
    s = analysis.shares.set_index(["kind", "head"])
    for kind in KINDS:
        out[f"outside_share_{kind}"] = float(np.exp(s.loc[(kind, "standard"), "d_e"]))
        m, lo, hi = rivals_posthoc.share_interval(analysis.table, kind, "mean_share")
        out.update({f"mean_share_{kind}": m, f"mean_share_{kind}_lo": lo, f"mean_share_{kind}_hi": hi})
    p = analysis.progress.set_index(["contrast", "kind"]).loc[("alias_standard", "decoder")]
    out.update({"alias_standard_matched_decoder": float(np.exp(p["estimate"])),
                "alias_standard_matched_decoder_lo": float(np.exp(p["lo"])),
                "alias_standard_matched_decoder_hi": float(np.exp(p["hi"]))})
    nulls = posthoc.nulls
    for head, correction, verdict, kind, with_raw in QUOTED_NULLS:
        r = nulls[(nulls["head"] == head) & (nulls["correction"] == correction) & (nulls["kind"] == kind)
                  & nulls["verdict"].str.contains("proxy - control" if verdict == "surgery" else "aliasing")].iloc[0]
        key = f"null_{head}_{'isoscore' if correction == 'IsoScore*' else correction}_{verdict}_{kind}"
        out.update({key: 100 * float(r["estimate"]), f"{key}_lo": 100 * float(r["lo"]), f"{key}_hi": 100 * float(r["hi"])})
        if with_raw:
            out[f"{key}_raw"] = 100 * float(r["raw"])
    sc = posthoc.scatter
    keys = ["short_ratio_lo_encoder", "short_ratio_hi_encoder", "short_ratio_logsd_encoder", "short_ratio_lo_decoder",
            "short_ratio_hi_decoder", "peak_step_max", "peak_within",
            *(f"{w}_{h}_decoder" for w in ("peak_lo", "peak_hi") for h in ("standard", "unigram")),
            *(f"{w}_{h}_{k}" for w in ("collapsed", "runs") for h in ("standard", "unigram") for k in KINDS)]
    out.update({k: sc[k] for k in keys})
    return out


def posthoc_words(posthoc) -> dict:
    """The words the pages state from the readings added after the data, for :func:`tanbias.stats.check_words`:
    ``prediction, <kind>, <account>, <key>`` (met / failed / undecided); ``all predictions, <account>,
    <kind>``; ``kinds, <kind>, <verdict>, <head>, <shared mean | shape>`` (a direction); ``survival,
    <verdict key>, <kind>, <column>`` and ``kept, <verdict key>, <kind>`` (``k of n``), the verdict keys
    being ``surgery``, ``surgery random``, ``aliasing``, ``enrichment``; ``excludes, <head>, <correction>,
    <verdict key>, <kind>`` (``yes`` / ``no``); by a test of the difference (book-posthoc.toml), ``tested,
    <verdict key>, <kind>, <column>`` (kept / lost / not decided / no test / n/a), ``tested word, <verdict key>,
    <kind>`` (the row's word) and ``tested predictions, <account>, <kind>`` (the account's word over the
    predictions that can fail)."""
    out = {}
    for _, r in posthoc.predictions.iterrows():
        out[f"prediction, {r['kind']}, {r['account']}, {r['key']}"] = r["outcome"]
    for _, r in posthoc.summary.iterrows():
        out[f"all predictions, {r['account']}, {r['kind']}"] = r["all_predictions"]
    for _, r in posthoc.kinds.iterrows():
        for name in rivals_posthoc.READINGS_BY_KIND:
            out[f"kinds, {r['kind']}, {r['verdict']}, {r['head']}, {name}"] = r[name]
    keys = {"surgery lowers it: proxy - control": "surgery", "surgery lowers it: proxy - random": "surgery random",
            "aliasing": "aliasing", "the proxy is enriched": "enrichment"}

    def key_of(verdict):
        return next(v for k, v in keys.items() if verdict.startswith(k))

    for _, r in posthoc.survival.iterrows():
        k = key_of(r["verdict"])
        for column in ("standard", *rivals_posthoc.SURVIVAL_CORRECTIONS):
            out[f"survival, {k}, {r['kind']}, {column}"] = r[column]
        out[f"kept, {k}, {r['kind']}"] = f"{int(r['kept'])} of {int(r['applies'])}"
    if posthoc.tested is not None:
        rows = difference_survival_table(posthoc)
        for (_, r), word in zip(posthoc.tested.iterrows(), rows["by a test of the difference"]):
            k = key_of(r["verdict"])
            for column in rivals_posthoc.SURVIVAL_CORRECTIONS:
                out[f"tested, {k}, {r['kind']}, {column}"] = r[column]
            out[f"tested word, {k}, {r['kind']}"] = word
    for _, r in posthoc.summary.iterrows():
        if "tested" in r:
            out[f"tested predictions, {r['account']}, {r['kind']}"] = r["tested"]
    for _, r in posthoc.nulls.iterrows():
        out[f"excludes, {r['head']}, {r['correction']}, {key_of(r['verdict'])}, {r['kind']}"] = \
            "yes" if r["excludes_raw"] else "no"
    return out


#: the verdicts of the survival table (its ``verdict`` column's prefixes) that re-read each property's
#: anisotropy verdicts (``rivals.toml``, ``recomputed``); the other properties' verdicts are not re-read
SURVIVAL_ROWS = {"mechanisms": ("surgery", "the proxy is enriched"), "balancing": ("aliasing",)}


def survival_word(survival, verdicts, interim: bool, corrections=rivals_posthoc.SURVIVAL_CORRECTIONS) -> str:
    """Whether the anisotropy verdicts ``verdicts`` (prefixes of the survival table's ``verdict``
    column) survive the rival accounts, by the rule added after the data (``rivals-posthoc.toml``,
    ``[words].partly_survives``): a verdict survives a rival when that rival's correction gives the
    same word as the standard reading. ``survives`` when every verdict of every architecture
    survives every correction that applies, ``does not survive`` when none survives any,
    ``partly survives`` otherwise; ``not yet tested`` while the rivals experiment is interim (its
    words may still move), whatever the table says.

    ``survival`` is :func:`tanbias.lab.analysis.rivals_posthoc.survival_rows` (a correction that does
    not apply reads ``n/a``); ``corrections`` its columns that hold a correction.

    >>> import pandas as pd
    >>> t = pd.DataFrame([{"verdict": "surgery lowers", "standard": "less anisotropic",
    ...                    "unigram head": "less anisotropic", "IsoScore*": "not detected",
    ...                    "standardised": "n/a", "type-balanced": "less anisotropic", "outside W_U": "n/a"}])
    >>> survival_word(t, ("surgery",), interim=False), survival_word(t, ("surgery",), interim=True)
    ('partly survives', 'not yet tested')
    """
    if interim:
        return "not yet tested"
    rows = survival[survival["verdict"].str.startswith(tuple(verdicts))]
    same = [kept for _, row in rows.iterrows() for kept in rivals.corrections_kept(row, corrections)]
    if not same:
        return "not tested"
    return "survives" if all(same) else "does not survive" if not any(same) else "partly survives"


def survival_readings(r: RivalsReport) -> tuple[dict, dict]:
    """Per property the rivals re-read: the word by ``rivals-posthoc.toml``'s earlier rule
    (:func:`survival_word`, which counted a null as a loss) and how many of its re-readings cannot
    decide whether the word is kept (their intervals overlap the standard reading's)."""
    ra, rp = r.analysis, r.posthoc
    earlier = {"rivals": "interim" if ra.interim else survival_word(rp.survival, ("",), interim=False)}
    undecided = {"rivals": rivals_posthoc.survival_undecided(rp.tested, ("",))}
    for prop, verdicts in SURVIVAL_ROWS.items():
        earlier[prop] = survival_word(rp.survival, verdicts, ra.interim)
        undecided[prop] = rivals_posthoc.survival_undecided(rp.tested, verdicts)
    return earlier, undecided


def cells(r: RivalsReport) -> list[dict]:
    """The rival accounts' column of the closing table (:func:`tanbias.lab.analysis.verdicts.cell`): for
    each property the rivals re-read (:data:`SURVIVAL_ROWS`) and for the rival accounts themselves,
    whether the verdicts keep their word under every correction, by ``book-posthoc.toml``'s test of
    the difference; ``not tested`` for the others; ``interim`` and ``not yet tested`` while the
    experiment is interim."""
    ra, rp = r.analysis, r.posthoc
    _, undecided = survival_readings(r)
    posthoc = {"rule": "added after the data", "anisotropy": "both"}

    def word(verdicts):
        return rivals_posthoc.survival_tested_word(rp.tested, verdicts)

    def qualifier(prop):
        n = undecided.get(prop)
        return (f"{n} of its re-readings cannot decide whether the word is kept: their intervals overlap the "
                "standard reading's") if n else ""

    out = [cell("rivals", "rivals", "interim" if ra.interim else word(("",)), qualifier=qualifier("rivals"),
                **posthoc)]
    for prop in PROPERTIES:
        if prop in ("premise", "rivals"):
            continue
        verdicts = SURVIVAL_ROWS.get(prop)
        w = "not tested" if not verdicts else "not yet tested" if ra.interim else word(verdicts)
        out.append(cell(prop, "rivals", w, qualifier=qualifier(prop), **posthoc))
    return out
