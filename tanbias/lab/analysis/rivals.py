"""The rival accounts, head to head: the runs measured and the registered rules applied (chapter 13).

The experiment (:data:`tanbias.lab.experiments.RIVALS`) crosses the standard output head
with the unigram head and four arms; ``data/preregistration/rivals.toml`` fixed, before
its first run, what every account predicts and the rules that read its words. Here:

* :func:`run_table` and :func:`trajectory_table`: every registered outcome per run (layer
  means over the blocks, content positions), and the outcomes at every probe step;
* :func:`contrast_rows`: the registered contrasts (seed-blocked OLS over the eight cells,
  :data:`CONTRASTS`), Holm within the primary and the secondary family
  (:func:`tanbias.lab.analysis.registered.holm`, a missing p kept at 1);
* :func:`matched_progress`: the registered matched-progress reading;
* :func:`share_rows`: how much of the raw reading centring and standardising leave, and the
  enrichment outside the output matrix's top subspace;
* :func:`account_words`: each account's word per architecture, by its rule;
* :func:`survival_rows`: the earlier chapters' anisotropy verdicts recomputed under each
  rival's correction; :func:`twin_rows`: the standard-head runs against their committed twins;
* :func:`analyse_rivals`: all of it, memoised for the chapter.

Besides the registered statistics:

* :func:`initialisation_anisotropy`: where the encoder's mean cosine at step 0 comes
  from, before any update. The encoder and the decoder of one seed start from
  identical weights (:func:`tanbias.lab.models.make_model`), so running both on the
  encoder's own first batch separates what bidirectional attention does from what
  the weights do. At initialisation the attention logits are near 0, so attention is
  close to uniform: a bidirectional layer adds nearly the *same* vector (the mean of its
  values over the row) to every position of a row, a causal layer a running mean that
  differs from position to position. Read by position kind (content, ``<mask>``, the
  other special tokens) and within against across rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from pathlib import Path

import numpy as np

from tanbias._checks import check_choice
from tanbias.lab import runs
from tanbias.lab.analysis import registered
from tanbias.lab.config import KINDS, MASK_ID, N_SPECIAL, REPRODUCE_TOLERANCE, RunConfig
from tanbias.lab.experiments import ALIAS, CAUSAL, RIVALS, RIVALS_ARMS, RIVALS_HEADS
from tanbias.lab.probe import residual_modules
from tanbias.lab.tokenizer import load_tokenizer
from tanbias.stats import interval_word
from tanbias.theory.anisotropy import mean_cosine

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["POSITION_KINDS", "initialisation_anisotropy", "ALPHA", "EARLY_FRAC_PEAK", "OUTCOMES", "LOG_OUTCOMES", "CELLS",
           "PRIMARY", "SECONDARY", "CONTRASTS", "CONTRAST_NAMES", "SHARE_THRESHOLD", "FALL", "run_table", "trajectory_table",
           "complete_seeds", "ContrastFits", "fit_contrast", "peak_rows", "contrast_rows", "PROGRESS_PAIRS", "matched_progress", "first_departure", "share_rows", "account_words",
           "CORRECTIONS", "corrections_kept", "ENRICHMENT_VERDICT", "survival_table", "CORRECTION_READINGS", "survival_rows", "twin_rows", "RivalsAnalysis", "analyse_rivals"]

ALPHA = registered.ALPHA
#: the peak is read over the probe steps in this first share of training (steps 0..95 of 320)
EARLY_FRAC_PEAK = 0.3
#: a share below it means the correction removes most of the raw reading (rule.shares)
SHARE_THRESHOLD = 0.5
#: the fall the unigram-first account's "against" excludes: a change by x1.25 (the design's target)
FALL = registered.TARGET_LOG
#: the registered outcomes (outcomes of rivals.toml): column -> what it is
OUTCOMES = {
    "raw": "ln mean cosine (layer mean, last probe step)",
    "peak": "ln of the largest layer-mean mean cosine in the first 30 % of training",
    "centred": "centred mean cosine (layer mean, last probe step)",
    "centred_at_peak": "centred mean cosine at the raw peak's step",
    "standardised": "standardised mean cosine (layer mean, last probe step)",
    "type_balanced": "type-balanced mean cosine (layer mean, last probe step)",
    "mean_share": "the mean's share of the squared norm (layer mean, last probe step)",
    "top_share": "the top-3 coordinates' variance share (layer mean, last probe step)",
    "isoscore": "IsoScore* (layer mean, last probe step)",
    "log_mean_share": "ln the mean's share of the squared norm (layer mean, last probe step; added after the data)",
    "participation": "ln participation ratio of the centred cloud (layer mean, last probe step; added after the data)",
    "enrichment": "ln enrichment of the frozen proxy (geometric mean over layers, last probe step)",
    "enrichment_outside": "ln enrichment of the frozen proxy outside the output matrix's top-8 subspace",
    "heldout_loss": "held-out loss on the common text [nats]",
    "gain": "gain over unigram, final evaluation [nats]",
}
#: the outcomes that are logarithms: a contrast on one of them is a ratio, exp(estimate)
LOG_OUTCOMES = frozenset(k for k, v in OUTCOMES.items() if v.startswith("ln "))
#: the eight cells of an architecture's model, standard-control first (the reference)
CELLS = tuple(f"{h}-{a}" for h in RIVALS_HEADS for a in RIVALS_ARMS)


def _c(*terms) -> dict:
    """A contrast's weights on the cells: ``_c(("unigram-control", 1), ("standard-control", -1))``."""
    return dict(terms)


_HEAD = _c(("unigram-control", 1), ("standard-control", -1))
_SURGERY_U = _c(("unigram-proxy", 1), ("unigram-control", -1))
#: the primary family (rule.primary): name -> (outcome, weights on the cells), per architecture
PRIMARY = {"head_final": ("raw", _HEAD), "surgery_unigram": ("raw", _SURGERY_U)}
#: the secondary family (rule.secondary), per architecture
SECONDARY = {
    "head_peak": ("peak", _HEAD),
    "head_final_centred": ("centred", _HEAD),
    "head_peak_centred": ("centred_at_peak", _HEAD),
    "head_final_isoscore": ("isoscore", _HEAD),
    "surgery_unigram_random": ("raw", _c(("unigram-proxy", 1), ("unigram-random", -1))),
    "surgery_interaction": ("raw", _c(("unigram-proxy", 1), ("unigram-control", -1), ("standard-proxy", -1),
                                      ("standard-control", 1))),
    "surgery_standard": ("raw", _c(("standard-proxy", 1), ("standard-control", -1))),
    "surgery_standard_random": ("raw", _c(("standard-proxy", 1), ("standard-random", -1))),
    "head_final_type_balanced": ("type_balanced", _HEAD),
    "surgery_unigram_type_balanced": ("type_balanced", _SURGERY_U),
    "surgery_unigram_centred": ("centred", _SURGERY_U),
    "surgery_unigram_standardised": ("standardised", _SURGERY_U),
    "head_final_standardised": ("standardised", _HEAD),
    "alias_unigram": ("raw", _c(("unigram-k3", 1), ("unigram-control", -1))),
    "alias_standard": ("raw", _c(("standard-k3", 1), ("standard-control", -1))),
    "alias_interaction": ("raw", _c(("unigram-k3", 1), ("unigram-control", -1), ("standard-k3", -1),
                                    ("standard-control", 1))),
    "head_enrichment": ("enrichment", _HEAD),
    "head_enrichment_outside": ("enrichment_outside", _HEAD),
}
CONTRASTS = {**PRIMARY, **SECONDARY}
#: each contrast in words, for figures and tables (the names above are the registration's)
CONTRAST_NAMES = {
    "head_final": "unigram head − standard", "surgery_unigram": "proxy surgery, unigram head",
    "head_peak": "unigram head − standard, at the peak", "head_final_centred": "unigram head − standard, centred",
    "head_peak_centred": "unigram head − standard, centred, at the peak",
    "head_final_isoscore": "unigram head − standard, IsoScore*",
    "surgery_unigram_random": "proxy − random surgery, unigram head",
    "surgery_interaction": "proxy surgery: unigram head − standard",
    "surgery_standard": "proxy surgery, standard head",
    "surgery_standard_random": "proxy − random surgery, standard head",
    "head_final_type_balanced": "unigram head − standard, type-balanced",
    "surgery_unigram_type_balanced": "proxy surgery, unigram head, type-balanced",
    "surgery_unigram_centred": "proxy surgery, unigram head, centred",
    "surgery_unigram_standardised": "proxy surgery, unigram head, standardised",
    "head_final_standardised": "unigram head − standard, standardised",
    "alias_unigram": "aliasing, unigram head", "alias_standard": "aliasing, standard head",
    "alias_interaction": "aliasing: unigram head − standard",
    "head_enrichment": "unigram head − standard, enrichment",
    "head_enrichment_outside": "unigram head − standard, enrichment outside W_U",
}

#: the positions :func:`initialisation_anisotropy` reads apart (position 0 of every row is left out)
POSITION_KINDS = ("content", "mask", "special")


def _residual_states(model, input_ids) -> list[np.ndarray]:
    """The residual stream after the embedding and after every block (layer 0 .. L), (B*T, D) each."""
    import torch

    out, hooks = [], []
    for m in residual_modules(model):
        hooks.append(m.register_forward_hook(
            lambda mod, args, o: out.append((o[0] if isinstance(o, tuple) else o).detach())))
    try:
        with torch.no_grad():
            model.model(input_ids=input_ids)
    finally:
        for h in hooks:
            h.remove()
    return [h.reshape(-1, h.shape[-1]).double().numpy() for h in out]


def _within_across(U: np.ndarray, rows: np.ndarray) -> tuple[float, float]:
    """Exact mean cosine of unit rows ``U`` over pairs in the same row of the batch, and across rows."""
    total = U.sum(0)
    n = len(U)
    within_sum, within_pairs = 0.0, 0
    for r in np.unique(rows):
        s = U[rows == r].sum(0)
        k = int((rows == r).sum())
        within_sum += float(s @ s) - k
        within_pairs += k * (k - 1)
    all_sum = float(total @ total) - n
    across_pairs = n * (n - 1) - within_pairs
    nan = float("nan")
    return (within_sum / within_pairs if within_pairs else nan,
            (all_sum - within_sum) / across_pairs if across_pairs else nan)


def initialisation_anisotropy(config: RunConfig) -> pd.DataFrame:
    """Mean cosine at initialisation by layer, position kind and attention, on the run's first batch.

    Parameters
    ----------
    config : RunConfig
        An encoder run (the rivals' or the causal test's control): its seed, size and first
        training batch, masked as step 0 of the run sees it.

    Returns
    -------
    pandas.DataFrame
        One row per ``attention`` (``"bidirectional"``: the encoder as built; ``"causal"``: the
        decoder of the same seed, identical weights), ``input`` (``"masked"``: the batch as step
        0 sees it; ``"unmasked"``: the same text with every token in place), ``layer`` (0: the
        embedding) and ``positions`` (:data:`POSITION_KINDS`, by the masked batch's ids):
        ``n``, ``mean_cosine`` (exact, all pairs), ``within`` (pairs in one row of the batch)
        and ``across`` (pairs from different rows).

    Raises
    ------
    ParameterError
        ``config`` is not an encoder's.
    """
    import pandas as pd

    from tanbias.lab.data import Stream
    from tanbias.lab.models import model_from_config

    check_choice("config.kind", config.kind, ("encoder",))
    from tanbias.lab.data import original_ids

    tok = load_tokenizer()
    batch = next(Stream.from_config(config, tok).training())
    ids = batch["input_ids"]
    flat = ids.reshape(-1).numpy()
    rows = np.repeat(np.arange(ids.shape[0]), ids.shape[1])
    first = np.tile(np.arange(ids.shape[1]), ids.shape[0]) == 0
    kinds = {"content": (flat >= N_SPECIAL) & ~first, "mask": (flat == MASK_ID) & ~first,
             "special": (flat < N_SPECIAL) & (flat != MASK_ID) & ~first}
    inputs = {"masked": ids, "unmasked": original_ids(batch)}
    out = []
    for attention, kind in (("bidirectional", "encoder"), ("causal", "decoder")):
        model = model_from_config(config.replace(kind=kind, name=f"{config.name}-as-{kind}")).eval()
        for shown, x in inputs.items():
            for layer, H in enumerate(_residual_states(model, x)):
                norms = np.linalg.norm(H, axis=1)
                for positions, keep in kinds.items():
                    keep = keep & (norms > 0)
                    if keep.sum() < 2:
                        continue
                    U = H[keep] / norms[keep, None]
                    within, across = _within_across(U, rows[keep])
                    out.append({"attention": attention, "input": shown, "layer": layer, "positions": positions,
                                "n": int(keep.sum()), "mean_cosine": mean_cosine(H[keep]),
                                "within": within, "across": across})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- the runs
def _layer_means(table, column: str, layers) -> pd.Series:
    """Per probe step, the mean over ``layers`` of ``column``."""
    return table[table["layer"].isin(layers)].groupby("step")[column].mean()


def _cell(name: str) -> tuple[str, str, int]:
    kind, cell, seed = RIVALS.parse(name)
    return kind, cell, seed


def run_table(loaded: dict) -> pd.DataFrame:
    """One row per rivals run of 320 steps (the long runs are :func:`trajectory_table`'s only):
    ``run, kind, cell, head, arm, seed``, every :data:`OUTCOMES` column, ``peak_step``,
    ``sharpness`` (the proxy arms' median sigma_r / sigma_(r+1) over the steps), ``diverged``.

    With no run committed yet the table is empty (with its columns): the chapter then reports the
    experiment's status alone.
    """
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        kind, cell, seed = _cell(name)
        head, _, arm = cell.partition("-")
        if arm == "long":
            continue
        an = r.anisotropy[r.anisotropy["positions"] == "content"]
        blocks = sorted(x for x in an["layer"].unique() if x >= 1)
        raw = _layer_means(an, "mean_cosine", blocks)
        iso = _layer_means(an, "isoscore_star", blocks)
        pr = _layer_means(an, "participation_ratio", blocks)
        rv = r.rivals
        last = int(raw.index.max())
        early = raw[raw.index <= EARLY_FRAC_PEAK * r.config.steps]
        peak_step = int(early.idxmax())
        per = {c: _layer_means(rv, c, blocks) for c in ("centered", "standardised", "type_balanced",
                                                         "mean_share", "top_share")}
        enr = rv.assign(le=np.log(rv["enrichment"]), leo=np.log(rv["enrichment_outside"])).groupby("step")[
            ["le", "leo"]].mean()
        pe = r.probe_evals
        final = pe[pe["step"] == r.config.steps]["loss"] if pe is not None else []
        m = r.metrics
        rows.append({"run": name, "kind": kind, "cell": cell, "head": head, "arm": arm, "seed": seed,
                     "raw": float(np.log(raw.loc[last])), "peak": float(np.log(early.max())),
                     "peak_step": peak_step,
                     "centred": float(per["centered"].loc[last]),
                     "centred_at_peak": float(per["centered"].loc[peak_step]),
                     "standardised": float(per["standardised"].loc[last]),
                     "type_balanced": float(per["type_balanced"].loc[last]),
                     "mean_share": float(per["mean_share"].loc[last]),
                     "top_share": float(per["top_share"].loc[last]),
                     "isoscore": float(iso.loc[last]),
                     "log_mean_share": float(np.log(per["mean_share"].loc[last])),
                     "participation": float(np.log(pr.loc[last])),
                     "enrichment": float(enr.loc[last, "le"]), "enrichment_outside": float(enr.loc[last, "leo"]),
                     "heldout_loss": float(final.iloc[-1]) if len(final) else np.nan,
                     "gain": registered.learning(r.evaluation)["gain"],
                     "sharpness": float(m["surgery_sharpness"].median()) if "surgery_sharpness" in m else np.nan,
                     "diverged": bool(not np.isfinite(m["loss"].to_numpy(float)).all())})
    cols = ["run", "kind", "cell", "head", "arm", "seed", *OUTCOMES, "peak_step", "sharpness", "diverged"]
    return pd.DataFrame(rows, columns=cols)


def trajectory_table(loaded: dict) -> pd.DataFrame:
    """Every run's readings at every probe step: one row per (run, step, layer), ``layer`` an int
    (1..L) or ``"mean"`` (the layer mean), columns ``run, kind, cell, head, arm, seed, step, frac,
    layer, raw`` (ln mean cosine; of the layer mean for ``"mean"``), ``mean_cosine``, ``centred``,
    ``mean_share``, ``heldout_loss`` (the held-out loss at that probe step, NaN where none was logged).
    The long runs are included (``arm == "long"``)."""
    import pandas as pd

    rows = []
    for name, r in loaded.items():
        kind, cell, seed = _cell(name)
        head, _, arm = cell.partition("-")
        an = r.anisotropy[(r.anisotropy["positions"] == "content") & (r.anisotropy["layer"] >= 1)]
        rv = r.rivals[r.rivals["layer"] >= 1]
        pe = r.probe_evals
        loss = pe.set_index("step")["loss"] if pe is not None else pd.Series(dtype=float)
        merged = an[["step", "layer", "mean_cosine"]].merge(rv[["step", "layer", "centered", "mean_share"]],
                                                             on=["step", "layer"], how="left")
        mean = merged.groupby("step")[["mean_cosine", "centered", "mean_share"]].mean().reset_index()
        mean["layer"] = "mean"
        both = pd.concat([merged.assign(layer=merged["layer"].astype(object)), mean], ignore_index=True)
        both["raw"] = np.log(both["mean_cosine"])
        both["heldout_loss"] = both["step"].map(loss).astype(float)
        both = both.rename(columns={"centered": "centred"})
        both = both.assign(run=name, kind=kind, cell=cell, head=head, arm=arm, seed=seed,
                           frac=both["step"] / max(r.config.steps - 1, 1))
        rows.append(both)
    cols = ["run", "kind", "cell", "head", "arm", "seed", "step", "frac", "layer", "raw", "mean_cosine", "centred",
            "mean_share", "heldout_loss"]
    return pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols)


def complete_seeds(table, kind: str) -> list[int]:
    """The seeds of ``kind`` whose every cell of the grid (long runs aside) is in ``table`` and none
    diverged (:func:`tanbias.lab.analysis.registered.complete_seeds`)."""
    return registered.complete_seeds(RIVALS, table, kind, skip=lambda cell: cell.endswith("-long"))


# --------------------------------------------------------------------------- the registered contrasts
class ContrastFits(registered.CellContrasts):
    """:func:`fit_contrast` over one run table, each architecture's model of an outcome fitted once
    (a table read for many contrasts, as the readings added after the data are, fits each model once):
    :class:`~tanbias.lab.analysis.registered.CellContrasts` over the rivals grid's cells (the long
    runs aside) and its complete seeds.

    >>> import pandas as pd
    >>> rows = [dict(kind="decoder", cell=c, seed=s, raw=0.1 * i + 0.01 * s + 0.001 * (i * s % 3), diverged=False)
    ...         for i, c in enumerate(CELLS) for s in range(3)]
    >>> fits = ContrastFits(pd.DataFrame(rows))
    >>> round(fits("decoder", "raw", {"unigram-control": 1, "standard-control": -1})["estimate"], 3)
    0.4
    """

    def __init__(self, table):
        super().__init__(table, cells=lambda kind: CELLS, seeds=lambda kind: complete_seeds(table, kind))


def fit_contrast(table, kind: str, outcome: str, weights: dict, confidence: float = 1 - ALPHA) -> dict:
    """One registered contrast of one architecture: OLS ``outcome ~ C(seed) + C(cell)`` over the complete
    seeds and every cell (statsmodels), the contrast ``sum_c w_c beta_c`` with its t interval and
    two-sided p on the residual df. NaN where fewer than two complete seeds are there.
    (:class:`ContrastFits` reads many contrasts of one table, fitting each model once.)

    Returns
    -------
    dict
        ``estimate, se, df, lo, hi, p, n_seeds``.
    """
    return ContrastFits(table)(kind, outcome, weights, confidence)


def contrast_rows(table) -> pd.DataFrame:
    """Every registered contrast of both architectures: ``family`` (primary, secondary), ``contrast``,
    ``kind``, ``outcome``, the :func:`fit_contrast` columns, ``p_holm`` (Holm within the family,
    a missing p kept at 1), ``significant`` (``p_holm < 0.05``) and ``word`` (the 95 % interval's,
    :func:`tanbias.stats.interval_word`)."""
    import pandas as pd

    rows = []
    for family, contrasts in (("primary", PRIMARY), ("secondary", SECONDARY)):
        block = []
        for name, (outcome, weights) in contrasts.items():
            for kind in KINDS:
                block.append({"family": family, "contrast": name, "kind": kind, "outcome": outcome,
                              **fit_contrast(table, kind, outcome, weights)})
        adj = registered.holm([r["p"] for r in block], family=len(contrasts) * len(KINDS))
        for r, a in zip(block, adj):
            r.update(p_holm=float(a), significant=bool(a < ALPHA), word=interval_word(r["lo"], r["hi"]))
        rows += block
    return pd.DataFrame(rows)


def peak_rows(table) -> pd.DataFrame:
    """rivals.toml's ``phases``: every registered contrast on the final mean cosine (``raw``) read again
    at the peak (``peak``), shown beside it, labelled, without a verdict. Per contrast and architecture:
    ``estimate``, ``lo``, ``hi`` (ln units, 95 % t interval, unadjusted) and ``final`` (the registered
    contrast's estimate)."""
    import pandas as pd

    fits = ContrastFits(table)
    out = []
    for name, (outcome, weights) in CONTRASTS.items():
        if outcome != "raw":
            continue
        for kind in KINDS:
            r, f = fits(kind, "peak", weights), fits(kind, "raw", weights)
            out.append({"contrast": name, "kind": kind, "estimate": r["estimate"], "lo": r["lo"], "hi": r["hi"],
                        "final": f["estimate"]})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- matched training progress
#: the pairs the registration reads at matched progress (rule.matched_progress)
PROGRESS_PAIRS = {"alias_unigram": ("unigram-k3", "unigram-control"),
                  "alias_standard": ("standard-k3", "standard-control"),
                  "surgery_unigram": ("unigram-proxy", "unigram-control"),
                  "surgery_standard": ("standard-proxy", "standard-control"),
                  "head_final": ("unigram-control", "standard-control")}


def matched_progress(traj, table, contrasts) -> pd.DataFrame:
    """The registered matched-progress reading: per architecture, seed and pair of
    :data:`PROGRESS_PAIRS`, ``L*`` = the larger of the two runs' final held-out losses, each run's
    raw reading at ``L*`` (:func:`~tanbias.lab.analysis.registered.value_at_progress`), and the
    per-seed differences' 95 % seed t interval; ``word`` by
    :func:`~tanbias.lab.analysis.registered.progress_word` against the registered contrast, ``n/a``
    where that contrast is not significant."""
    import pandas as pd

    reg = contrasts.set_index(["contrast", "kind"])
    out = []
    for kind in KINDS:
        seeds = complete_seeds(table, kind)
        t = traj[(traj["kind"] == kind) & (traj["layer"] == "mean") & traj["seed"].isin(seeds)]
        for name, (a, b) in PROGRESS_PAIRS.items():
            diffs, gaps = [], []
            for seed in seeds:
                ra = t[(t["cell"] == a) & (t["seed"] == seed)].sort_values("step")
                rb = t[(t["cell"] == b) & (t["seed"] == seed)].sort_values("step")
                if ra.empty or rb.empty:
                    continue
                la, lb = float(ra["heldout_loss"].iloc[-1]), float(rb["heldout_loss"].iloc[-1])
                level = max(la, lb)
                va = registered.value_at_progress(ra["step"], ra["heldout_loss"], ra["raw"], level, last=la >= lb)
                vb = registered.value_at_progress(rb["step"], rb["heldout_loss"], rb["raw"], level, last=lb > la)
                diffs.append(va - vb)
                gaps.append(la - lb)
            est, lo, hi, n = registered.t_interval(diffs, 1 - ALPHA)
            r = reg.loc[(name, kind)]
            word = "n/a"
            if bool(r["significant"]):
                matched = registered.progress_word(float(r["estimate"]), lo, hi)
                word = "n/a" if matched == "undecided" else matched
            out.append({"contrast": name, "kind": kind, "estimate": est, "lo": lo, "hi": hi, "n_seeds": n,
                        "loss_gap": float(np.mean(gaps)) if gaps else np.nan,
                        "registered": float(r["estimate"]), "word": word})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- shares and enrichment
def share_rows(table) -> pd.DataFrame:
    """Rule.shares, in the control runs of each head and architecture (complete seeds): ``q_c`` (the
    centred reading over the raw one), ``q_s`` (the standardised one), ``enrichment`` and
    ``enrichment_outside`` (ln), ``d_e`` (their difference), each as ``<name>``, ``<name>_lo``,
    ``<name>_hi`` (95 % seed t interval), and ``mean_share``, ``top_share`` (means)."""
    import pandas as pd

    out = []
    for kind in KINDS:
        seeds = complete_seeds(table, kind)
        for head in RIVALS_HEADS:
            g = table[(table["kind"] == kind) & (table["cell"] == f"{head}-control") & table["seed"].isin(seeds)]
            vals = {"q_c": g["centred"] / np.exp(g["raw"]), "q_s": g["standardised"] / np.exp(g["raw"]),
                    "enrichment": g["enrichment"], "enrichment_outside": g["enrichment_outside"],
                    "d_e": g["enrichment_outside"] - g["enrichment"]}
            row = {"kind": kind, "head": head, "n_seeds": len(g)}
            for k, v in vals.items():
                m, lo, hi, _ = registered.t_interval(v.to_numpy(float), 1 - ALPHA)
                row.update({k: m, f"{k}_lo": lo, f"{k}_hi": hi})
            row.update(mean_share=float(g["mean_share"].mean()), top_share=float(g["top_share"].mean()))
            out.append(row)
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- the accounts' words
def account_words(contrasts, shares) -> pd.DataFrame:
    """Each account's word per architecture by its rule (accounts of rivals.toml): ``supported``,
    ``against`` or ``not distinguished``. The numbers the rules read are the contrasts and
    :func:`share_rows`' intervals."""
    import pandas as pd

    c = contrasts.set_index(["contrast", "kind"])
    s = shares.set_index(["kind", "head"])
    rows = []
    for kind in KINDS:
        std = s.loc[(kind, "standard")]
        S1, H1, H2 = c.loc[("surgery_unigram", kind)], c.loc[("head_final", kind)], c.loc[("head_peak", kind)]

        def neg_sig(r):
            return bool(r["significant"]) and r["hi"] < 0

        def pos_sig(r):
            return bool(r["significant"]) and r["lo"] > 0

        words = {}
        eo_lo, eo_hi = std["enrichment_outside_lo"], std["enrichment_outside_hi"]
        if neg_sig(S1) and eo_lo > 0:
            words["tangent_bias"] = "supported"
        elif pos_sig(S1) or eo_hi < 0:
            words["tangent_bias"] = "against"
        else:
            words["tangent_bias"] = "not distinguished"
        if neg_sig(H1) and neg_sig(H2):
            words["unigram_first"] = "supported"
        elif H1["lo"] > -FALL and H2["lo"] > -FALL:
            words["unigram_first"] = "against"
        else:
            words["unigram_first"] = "not distinguished"
        for account, q in (("rogue_dimensions", "q_s"), ("common_drift", "q_c")):
            if std[f"{q}_hi"] < SHARE_THRESHOLD:
                words[account] = "supported"
            elif std[f"{q}_lo"] > SHARE_THRESHOLD:
                words[account] = "against"
            else:
                words[account] = "not distinguished"
        if eo_lo > 0:
            words["output_bottleneck"] = "against"
        elif std["enrichment_lo"] > 0:
            words["output_bottleneck"] = "supported"
        else:
            words["output_bottleneck"] = "not distinguished"
        pairs = [(c.loc[("head_final", kind)], c.loc[("head_final_type_balanced", kind)]),
                 (S1, c.loc[("surgery_unigram_type_balanced", kind)])]
        flips = [{a["word"], b["word"]} == {"positive", "negative"} for a, b in pairs]
        same = [a["word"] == b["word"] != "undecided" for a, b in pairs]      # no interval: nothing to compare
        words["measurement"] = ("supported" if any(flips) else "against" if all(same) else "not distinguished")
        for account, word in words.items():
            rows.append({"account": account, "kind": kind, "word": word})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- earlier verdicts under the rivals
#: the earlier chapters' anisotropy verdicts this experiment re-reads (rivals.toml, [verdicts]):
#: name -> (chapter, contrast on the standard head, its twin on the unigram head)
VERDICTS = {"surgery lowers the mean cosine (chapter 12)": ("surgery_standard", "surgery_unigram"),
            "aliasing raises the mean cosine (chapter 11)": ("alias_standard", "alias_unigram")}


#: the survival table's columns that each hold one rival's correction (:func:`survival_rows`)
CORRECTIONS = ("unigram head", "centred", "standardised", "type-balanced", "outside W_U")


def corrections_kept(row, corrections=CORRECTIONS) -> list[bool]:
    """For one row of :func:`survival_rows`: whether each correction that applies (not ``n/a``) keeps
    the standard reading's word, in ``corrections``' order (rivals.toml's ``survives`` rule; the
    survival table added after the data, :func:`tanbias.lab.analysis.rivals_posthoc.survival_rows`,
    passes its own columns).

    >>> corrections_kept({"standard": "negative", "unigram head": "negative", "centred": "indistinguishable",
    ...                   "standardised": "n/a", "type-balanced": "negative", "outside W_U": "n/a"})
    [True, False, True]
    """
    return [row[c] == row["standard"] for c in corrections if row[c] != "n/a"]


#: chapter 7's verdict as the survival tables name it: read from the shares, not from a contrast
ENRICHMENT_VERDICT = "the proxy is enriched late (chapter 7)"


def survival_table(fits, shares, verdicts: dict, columns: dict, word, enrichment_word=interval_word) -> pd.DataFrame:
    """The earlier verdicts under each rival's correction: the one builder of the registered survival
    table (:func:`survival_rows`) and of the one added after the data
    (:func:`tanbias.lab.analysis.rivals_posthoc.survival_rows`).

    Parameters
    ----------
    fits : ContrastFits
        The run table's fits.
    shares : pandas.DataFrame
        :func:`share_rows` (chapter 7's enrichment, in and outside W_U's top subspace).
    verdicts : dict
        name -> (the standard-head contrast of :data:`CONTRASTS`, its unigram-head twin).
    columns : dict
        column -> (outcome, ``"standard"`` or ``"unigram"``: which twin is read), in the table's order.
    word : callable
        ``word(lo, hi, outcome)``: a cell's word from the contrast's 95 % interval.
    enrichment_word : callable
        ``enrichment_word(lo, hi)``: a cell of the enrichment's row from its seed t interval.

    Returns
    -------
    pandas.DataFrame
        ``verdict``, ``kind``, the ``columns`` and ``outside W_U`` (``n/a`` but for the enrichment,
        where the columns other than ``standard`` and ``unigram head`` read ``n/a``).
    """
    import pandas as pd

    rows = []
    for kind in KINDS:
        for verdict, twins in verdicts.items():
            row = {"verdict": verdict, "kind": kind}
            for column, (outcome, head) in columns.items():
                r = fits(kind, outcome, CONTRASTS[twins[head == "unigram"]][1])
                row[column] = word(r["lo"], r["hi"], outcome)
            rows.append({**row, "outside W_U": "n/a"})
        s = shares.set_index(["kind", "head"])
        std, uni = s.loc[(kind, "standard")], s.loc[(kind, "unigram")]
        rows.append({"verdict": ENRICHMENT_VERDICT, "kind": kind, **{c: "n/a" for c in columns},
                     "standard": enrichment_word(std["enrichment_lo"], std["enrichment_hi"]),
                     "unigram head": enrichment_word(uni["enrichment_lo"], uni["enrichment_hi"]),
                     "outside W_U": enrichment_word(std["enrichment_outside_lo"], std["enrichment_outside_hi"])})
    return pd.DataFrame(rows)


#: the registered survival table's columns: column -> (outcome, which head's contrast)
CORRECTION_READINGS = {"standard": ("raw", "standard"), "unigram head": ("raw", "unigram"),
                    "centred": ("centred", "standard"), "standardised": ("standardised", "standard"),
                    "type-balanced": ("type_balanced", "standard")}


def survival_rows(table, contrasts, shares) -> pd.DataFrame:
    """The earlier anisotropy verdicts under each rival's correction, per architecture: the 95 %
    interval word of the standard-head contrast, and of the same contrast under the unigram head
    (unigram first), on the centred reading (common drift), the standardised one (rogue
    dimensions) and the type-balanced one (measurement); and chapter 7's late enrichment above
    1, with and without the output matrix's top subspace (output bottleneck) (:func:`survival_table`)."""
    return survival_table(ContrastFits(table), shares, VERDICTS, CORRECTION_READINGS,
                          lambda lo, hi, outcome: interval_word(lo, hi))


# --------------------------------------------------------------------------- the twins
def twin_rows(loaded: dict, runs_dir=None) -> pd.DataFrame:
    """The standard-head runs against their committed twins (rivals.toml, [design.reuse]): per pair,
    ``twin``, ``losses`` and ``tables``, each ``identical`` (bit for bit), ``within tolerance``
    (:data:`tanbias.lab.config.REPRODUCE_TOLERANCE`) or ``different``, and ``max_loss_diff`` and
    ``max_table_diff`` (the largest absolute difference)."""
    import pandas as pd

    rows = []
    root = runs.RUNS_DIR if runs_dir is None else Path(runs_dir)
    for name, r in loaded.items():
        kind, cell, seed = _cell(name)
        head, _, arm = cell.partition("-")
        if head != "standard" or arm == "long":
            continue
        twin = ALIAS.run_name(kind, "k3", seed) if arm == "k3" else CAUSAL.run_name(kind, arm, seed)
        if not runs.is_complete(root / twin):
            continue
        t = runs.load_run(root / twin)
        la, lb = r.metrics["loss"].to_numpy(float), t.metrics["loss"].to_numpy(float)
        first_step, first_ulps = first_departure(la, lb, r.metrics["step"].to_numpy())
        dl = float(np.max(np.abs(la - lb))) if len(la) == len(lb) else np.inf
        dl = max(dl, abs(r.evaluation.get("loss", np.nan) - t.evaluation.get("loss", np.nan)))
        dt, rel_ok = 0.0, True
        for attr in ("anisotropy", "alignment"):
            a, b = getattr(r, attr), getattr(t, attr)
            cols = [c for c in a.columns if c in b.columns and pd.api.types.is_numeric_dtype(a[c])
                    and pd.api.types.is_numeric_dtype(b[c])]
            keys = [c for c in ("step", "layer", "positions", "bucket", "proxy") if c in a.columns and c in b.columns]
            m = a.merge(b, on=keys, suffixes=("", "_twin"))
            for col in cols:
                if col in keys:
                    continue
                x, y = m[col].to_numpy(float), m[f"{col}_twin"].to_numpy(float)
                ok = np.isfinite(x) & np.isfinite(y)
                if ok.any():
                    d = np.abs(x[ok] - y[ok])
                    dt = max(dt, float(d.max()))
                    rel_ok &= bool(np.all(d <= REPRODUCE_TOLERANCE["align_atol"]
                                          + REPRODUCE_TOLERANCE["align_rtol"] * np.abs(y[ok])))

        def word(d, ok):
            return "identical" if d == 0 else "within tolerance" if ok else "different"

        rows.append({"run": name, "twin": twin, "kind": kind, "arm": arm, "seed": seed,
                     "losses": word(dl, dl <= REPRODUCE_TOLERANCE["loss_atol"]),
                     "tables": word(dt, rel_ok), "max_loss_diff": dl, "max_table_diff": dt,
                     "first_step": first_step, "first_ulps": first_ulps})
    return pd.DataFrame(rows, columns=["run", "twin", "kind", "arm", "seed", "losses", "tables", "max_loss_diff",
                                       "max_table_diff", "first_step", "first_ulps"])


def first_departure(loss, twin_loss, steps) -> tuple[float, float]:
    """Where two logs of float32 training losses first differ: the step, and the difference there in
    units of float32 spacing at the twin's loss (1 = the last bit). NaN for both where the logs are
    identical; ``(nan, inf)`` where their lengths differ.

    >>> first_departure([9.0, 8.5, 8.0], [9.0, 8.5 + 2**-20, 8.1], [0, 1, 2])
    (1.0, 1.0)
    >>> first_departure([9.0, 8.5], [9.0, 8.5], [0, 1])
    (nan, nan)
    """
    a, b = np.asarray(loss, float), np.asarray(twin_loss, float)
    if len(a) != len(b):
        return float("nan"), float("inf")
    differ = np.flatnonzero(a != b)
    if not differ.size:
        return float("nan"), float("nan")
    i = differ[0]
    return float(np.asarray(steps)[i]), float(abs(a[i] - b[i]) / np.spacing(np.float32(b[i])))


# --------------------------------------------------------------------------- everything
@dataclass
class RivalsAnalysis:
    """Everything the rivals chapter shows: the status, the tables and each rule's rows."""
    status: "object"
    table: "object"
    trajectory: "object"
    contrasts: "object"
    progress: "object"
    shares: "object"
    accounts: "object"
    survival: "object"
    twins: "object"
    seeds: dict
    interim: bool


def analyse_rivals(loaded: dict | None = None, runs_dir=None) -> RivalsAnalysis:
    """The registered analysis of the committed rivals runs (``loaded``: ``{run: RunData}``, default
    :func:`~tanbias.lab.analysis.registered.load` of :data:`~tanbias.lab.experiments.RIVALS`; the
    committed runs' analysis is memoised, :func:`tanbias.lab.runs.memoised`). ``interim`` is True
    while a registered seed of a 320-step cell is missing."""
    if loaded is None and runs_dir is None:
        return runs.memoised("analyse_rivals", lambda: analyse_rivals(registered.load(RIVALS)))
    loaded = registered.load(RIVALS, runs_dir) if loaded is None else loaded
    status = registered.run_status(RIVALS, runs_dir)
    table = run_table(loaded)
    traj = trajectory_table(loaded)
    contrasts = contrast_rows(table)
    shares = share_rows(table)
    seeds = {k: complete_seeds(table, k) for k in KINDS}
    short = status[~status["cell"].str.endswith("-long")]
    return RivalsAnalysis(status=status, table=table, trajectory=traj, contrasts=contrasts,
                          progress=matched_progress(traj, table, contrasts), shares=shares,
                          accounts=account_words(contrasts, shares), survival=survival_rows(table, contrasts, shares),
                          twins=twin_rows(loaded, runs_dir), seeds=seeds, interim=not bool(short["committed"].all()))
