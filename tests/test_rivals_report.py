"""The numbers and tables of the rivals chapter (tanbias.lab.analysis.rivals_report), on tables whose
numbers are known. (The measurements: test_rivals.py; that the chapters quote exactly these numbers:
test_reports.py.)"""
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from tanbias.lab.analysis import rivals, rivals_report
from tanbias.lab.config import KINDS
from tanbias.stats import check_words


def _init_rows():
    """Two seeds; content mean cosine 0.1 * (layer) + 0.01 * seed + 0.2 for causal, + 0.4 masked."""
    rows = []
    for seed in (0, 1):
        for attention in ("bidirectional", "causal"):
            for shown in ("masked", "unmasked"):
                for layer in (0, 1, 2):
                    mc = 0.1 * layer + 0.01 * seed + (0.2 if attention == "causal" else 0) + (0.4 if shown == "masked" else 0)
                    rows.append({"seed": seed, "attention": attention, "input": shown, "layer": layer,
                                 "positions": "content", "mean_cosine": mc, "within": mc + 0.05, "n": 90})
                    if shown == "masked":
                        rows.append({"seed": seed, "attention": attention, "input": shown, "layer": layer,
                                     "positions": "mask", "mean_cosine": 1.0, "within": np.nan, "n": 10})
    return pd.DataFrame(rows)


def test_the_initialisation_numbers_are_block_means_over_seeds():
    n = rivals_report.init_numbers(_init_rows())
    assert n["init_seeds"] == 2
    # blocks 1 and 2 (the embedding left out): 0.15 + the seeds' mean 0.005
    assert n["init_bidirectional_unmasked"] == pytest.approx(0.155)
    assert n["init_causal_unmasked"] == pytest.approx(0.355)
    assert n["init_bidirectional_masked"] == pytest.approx(0.555)
    assert n["init_within_unmasked"] == pytest.approx(0.205)
    assert n["init_mask_share"] == pytest.approx(10 / 100)


def test_the_transient_reads_the_control_runs_mean_layer_only():
    rows = []
    for kind in KINDS:
        for seed, peak_at in ((0, 40), (1, 60)):
            for step in (0, 20, 40, 60, 80, 319):
                mc = 0.2 + (0.3 if step == peak_at else 0.1 if 0 < step < 319 else 0.0) + 0.01 * seed
                for arm, layer, shift in (("control", "mean", 0.0), ("proxy", "mean", 0.5), ("control", 1, 0.5)):
                    rows.append({"kind": kind, "seed": seed, "step": step, "arm": arm, "layer": layer,
                                 "log_mean_cosine": np.log(mc + shift)})
    n = rivals_report.transient_numbers(pd.DataFrame(rows))
    for kind in KINDS:
        assert n[f"transient_{kind}_start"] == pytest.approx(0.205)
        assert n[f"transient_{kind}_peak"] == pytest.approx(0.505)
        assert (n[f"transient_{kind}_peak_first"], n[f"transient_{kind}_peak_last"]) == (40, 60)
        assert (n[f"transient_{kind}_end_lo"], n[f"transient_{kind}_end_hi"]) == pytest.approx((0.2, 0.21))
        assert n[f"transient_{kind}_end"] == pytest.approx(0.205) and n[f"transient_{kind}_seeds"] == 2


def test_the_status_numbers_count_runs_seeds_and_twins():
    analysis = types.SimpleNamespace(
        status=pd.DataFrame({"committed": [True, True, False]}), interim=True,
        seeds={"encoder": [0, 1], "decoder": [0]},
        table=pd.DataFrame({"arm": ["proxy", "proxy", "control"], "sharpness": [2.0, 4.0, 100.0]}),
        twins=pd.DataFrame({"losses": ["identical", "within tolerance", "identical", "different"],
                            "first_step": [np.nan, 3.0, np.nan, 6.0], "first_ulps": [np.nan, 2.0, np.nan, 1.0]}))
    n = rivals_report.run_numbers(analysis)
    assert (n["runs_committed"], n["runs_total"]) == (2, 3) and "interim" not in n
    assert (n["complete_seeds_encoder"], n["complete_seeds_decoder"]) == (2, 1)
    assert n["sharpness"] == 3.0                                   # the proxy arms' median only
    assert (n["twins"], n["twins_identical"], n["twins_within"], n["twins_different"]) == (4, 2, 1, 1)
    assert (n["twins_first_step"], n["twins_first_ulps"]) == (6.0, 2.0)    # the twins that part only
    assert n["twins_first_step_median"] == 4.5
    none = rivals_report.run_numbers(types.SimpleNamespace(**{**vars(analysis), "interim": False,
                                                          "twins": pd.DataFrame(columns=["losses", "first_step", "first_ulps"]),
                                                          "table": analysis.table.assign(sharpness=np.nan)}))
    assert none["twins"] == none["twins_identical"] == 0 and np.isnan(none["sharpness"])
    assert np.isnan(none["twins_first_step"]) and np.isnan(none["twins_first_ulps"])
    assert np.isnan(none["twins_first_step_median"])


def test_the_accounts_table_reads_in_the_chapters_order():
    accounts = pd.DataFrame([{"account": a, "kind": k, "word": f"{a}/{k}"}
                             for a in reversed(list(rivals_report.ACCOUNT_NAMES)) for k in KINDS])
    t = rivals_report.accounts_table(accounts)
    assert list(t["account"]) == list(rivals_report.ACCOUNT_NAMES.values())
    assert list(t.columns) == ["account", *KINDS]
    assert t.iloc[0]["decoder"] == "tangent_bias/decoder"


def test_a_contrast_table_shows_one_family():
    contrasts = pd.DataFrame([{"family": f, "contrast": c, "kind": "encoder", "outcome": "log_mean_cosine",
                               "estimate": 0.1, "lo": 0.0, "hi": 0.2, "p": 0.04, "p_holm": 0.08, "word": "positive",
                               "other": 1} for f, c in (("primary", "head_final"), ("secondary", "x"))])
    t = rivals_report.contrast_table(contrasts, "primary")
    assert list(t["contrast"]) == [rivals.CONTRAST_NAMES["head_final"]]        # in words
    assert list(t.columns) == ["contrast", "architecture", "reading", "estimate", "lo", "hi", "p", "Holm p",
                               "interval's word"]


def test_every_registered_contrast_and_reading_has_its_name_in_words():
    """The chapter's folded tables name contrasts and readings in words, never as code (head_final,
    type_balanced): every contrast the registration defines and every outcome it reads has a name, and the
    tables that list contrasts use it."""
    from tanbias.book.tables import CODE_NAME

    contrasts = {c for family in (rivals.PRIMARY, rivals.SECONDARY) for c in family}
    assert contrasts <= set(rivals.CONTRAST_NAMES), sorted(contrasts - set(rivals.CONTRAST_NAMES))
    assert set(rivals.OUTCOMES) <= set(rivals_report.READING_WORDS)
    named = [*rivals.CONTRAST_NAMES.values(), *rivals_report.READING_WORDS.values()]
    assert not [n for n in named if CODE_NAME.search(n)]
    codes = sorted(contrasts)
    power = pd.DataFrame([dict(contrast=c, kind="decoder", n_seeds=5, planned_sd=0.1, sd=0.1, power_first=0.5,
                               power_alpha=0.6, detectable=1.2) for c in codes])
    peaks = pd.DataFrame([dict(contrast=c, kind="decoder", estimate=0.0, lo=-0.1, hi=0.1, final=0.0) for c in codes])
    progress = pd.DataFrame([dict(contrast=c, kind="decoder", estimate=0.0, lo=-0.1, hi=0.1, n_seeds=2, loss_gap=0.1,
                                  registered=0.0, word="n/a") for c in codes])
    for t in (rivals_report.power_table(power), rivals_report.secondary_power_table(power),
              rivals_report.peak_table(peaks), rivals_report.progress_table(progress)):
        assert not [c for c in t["contrast"] if CODE_NAME.search(c)], list(t["contrast"])
    survival = pd.DataFrame([{"verdict": "v", "kind": "decoder", "standard": "negative",
                              **{c: "negative" for c in rivals.CORRECTIONS}}])
    assert not [h for h in rivals_report.survival_table(survival).columns if CODE_NAME.search(h) or h == "type-balanced"]


def test_the_accounts_named_are_the_registered_ones_in_order():
    """The chapter names the accounts the registration lists (data/preregistration/rivals.toml, read
    only at its pinned sha256), in its order."""
    assert list(rivals_report.registration()["accounts"]) == list(rivals_report.ACCOUNT_NAMES)


def test_the_head_table_reads_only_seeds_with_both_heads():
    """The description pairs seeds: a seed whose unigram control is not committed is left out of both
    heads' means, and an architecture with no such pair has no values."""
    def rows(kind, head, seed, peak, end):
        return [dict(kind=kind, head=head, arm="control", seed=seed, layer="mean", step=s, mean_cosine=v)
                for s, v in ((0, 0.05), (20, peak), (319, end))]

    t = pd.DataFrame([*rows("encoder", "standard", 0, 0.99, 0.30), *rows("encoder", "unigram", 0, 0.50, 0.20),
                      *rows("encoder", "standard", 1, 0.97, 0.40), *rows("encoder", "unigram", 1, 0.70, 0.10),
                      *rows("encoder", "standard", 2, 0.10, 0.90),              # no unigram twin: left out
                      *rows("decoder", "standard", 0, 0.90, 0.20)])
    h = rivals_report.head_table(types.SimpleNamespace(trajectory=t)).set_index("architecture")
    assert h.loc["encoder"].tolist() == pytest.approx([2, 0.98, 0.60, 0.35, 0.15])
    assert h.loc["decoder", "seeds"] == 0 and h.loc["decoder"].drop("seeds").isna().all()
    n = rivals_report.head_numbers(types.SimpleNamespace(trajectory=t))
    assert (n["head_peak_standard_encoder"], n["head_peak_unigram_encoder"]) == pytest.approx((0.98, 0.60))
    assert np.isnan(n["head_peak_standard_decoder"]) and np.isnan(n["head_peak_unigram_decoder"])


def test_the_matched_progress_numbers_are_the_head_rows():
    p = pd.DataFrame([dict(contrast=c, kind=k, estimate=np.log(0.5 if k == "decoder" else 2.0), lo=np.nan,
                           hi=np.nan, n_seeds=2, loss_gap=-0.4 if k == "decoder" else 0.1,
                           registered=0.0, word="n/a")
                      for c in ("surgery_unigram", "head_final") for k in KINDS])
    n = rivals_report.progress_numbers(p)
    assert n == pytest.approx({"head_loss_lead_decoder": 0.4, "head_matched_decoder": 0.5,
                               "head_loss_lead_encoder": -0.1, "head_matched_encoder": 2.0})
    w = rivals_report.words_of(types.SimpleNamespace(
        interim=False, progress=p.assign(word=["survives", "n/a", "survives", "reverses"]),
        survival=pd.DataFrame(columns=["verdict"]), contrasts=pd.DataFrame(columns=["kind", "contrast", "word", "family", "p_holm"]),
        accounts=pd.DataFrame(columns=["account", "kind", "word"])))
    assert w["matched, encoder, head_final"] == "survives" and w["matched, decoder, head_final"] == "reverses"
    t = rivals_report.progress_table(p)
    assert list(t["architecture"]) == list(p["kind"]) and t["ratio, last step"].eq(1.0).all()


def test_the_shares_numbers_read_the_standard_heads_control_runs():
    shares = pd.DataFrame([dict(kind=k, head=h, top_share=0.04 if h == "standard" else 0.5)
                           for k in KINDS for h in ("standard", "unigram")])
    n = rivals_report.shares_numbers(shares)
    assert n["top_share_encoder"] == n["top_share_decoder"] == 0.04
    assert n["top_share_even"] == pytest.approx(3 / 192)


def _survival(words: dict, verdict="surgery lowers the mean cosine (chapter 12)", standard="negative"):
    row = {"verdict": verdict, "kind": "decoder", "standard": standard, "outside W_U": "n/a"}
    row.update({c: words.get(c, standard) for c in ("unigram head", "centred", "standardised", "type-balanced")})
    return pd.DataFrame([row])


def _words(survival, interim=False):
    a = types.SimpleNamespace(interim=interim, survival=survival, progress=pd.DataFrame(columns=["kind", "contrast", "word"]),
                              contrasts=pd.DataFrame([dict(kind="decoder", contrast="head_final", word="negative",
                                                           family="primary", p_holm=0.01)]),
                              accounts=pd.DataFrame([dict(account="measurement", kind="decoder", word="against")]))
    return rivals_report.words_of(a)


@pytest.mark.parametrize("words, kept", [
    ({}, "every rival"),                                               # every correction keeps the word
    ({"centred": "indistinguishable"}, "some rivals"),
    ({c: "positive" for c in ("unigram head", "centred", "standardised", "type-balanced")}, "no rival"),
])
def test_kept_counts_the_corrections_that_keep_the_standard_word(words, kept):
    w = _words(_survival(words))
    assert w["kept, surgery, decoder"] == kept
    assert w["surgery, decoder, outside W_U"] == "n/a"                 # a correction that does not apply
    assert w["status"] == "final" and w["contrast, decoder, head_final"] == "negative"
    assert w["holm, decoder, head_final"] == "significant"
    assert w["measurement, decoder"] == "against"


def test_the_enrichment_row_is_named_by_its_short_key_and_ignores_na():
    s = _survival({}, verdict="the proxy is enriched late (chapter 7)", standard="positive")
    s[["centred", "standardised", "type-balanced"]] = "n/a"
    s["outside W_U"] = "indistinguishable"
    w = _words(s, interim=True)
    assert w["status"] == "interim"
    assert w["kept, enrichment, decoder"] == "some rivals"            # kept under the unigram head, not outside W_U
    with pytest.raises(KeyError, match="no such word"):
        check_words(rivals_report.words_of(types.SimpleNamespace(interim=False, survival=s, progress=pd.DataFrame(
            columns=["kind", "contrast", "word"]), contrasts=pd.DataFrame(
            columns=["kind", "contrast", "word", "family", "p_holm"]), accounts=pd.DataFrame(columns=["account", "kind", "word"]))),
            {"kept, surgery, decoder": "every rival"})


def test_contrast_numbers_exponentiate_only_the_log_outcomes():
    c = pd.DataFrame([dict(family="primary", contrast="head_peak", kind="encoder", outcome="peak", estimate=0.0,
                           lo=-0.1, hi=0.1),
                      dict(family="primary", contrast="head_final_isoscore", kind="encoder", outcome="isoscore",
                           estimate=0.0, lo=-0.1, hi=0.1)])
    n = rivals_report.contrast_numbers(c)
    assert n["head_peak_encoder"] == 1.0 and n["head_peak_encoder_lo"] == pytest.approx(np.exp(-0.1))
    assert n["head_final_isoscore_encoder"] == 0.0 and n["head_final_isoscore_encoder_lo"] == -0.1


def _tested_posthoc(cells: list[dict], kept: list[tuple[int, int]]):
    """A post-hoc analysis with only the two survival tables: ``cells`` the rows of survival_tested (its
    corrections, by column), ``kept`` each row's (kept, applies) by the earlier rule."""
    from tanbias.lab.analysis import rivals_posthoc

    verdicts = ("surgery lowers it: proxy - control (chapter 12)", "aliasing raises it (chapter 11)")
    rows = [{"verdict": verdicts[i % 2], "kind": KINDS[i // 2 % 2], **{c: "n/a" for c in rivals_posthoc.SURVIVAL_CORRECTIONS},
             **cell} for i, cell in enumerate(cells)]
    tested = pd.DataFrame(rows, columns=["verdict", "kind", *rivals_posthoc.SURVIVAL_CORRECTIONS])
    survival = tested[["verdict", "kind"]].assign(kept=[k for k, _ in kept], applies=[a for _, a in kept])
    return types.SimpleNamespace(tested=tested, survival=survival)


def test_the_survival_table_by_a_test_of_the_difference_sets_both_rules_side_by_side():
    """Each row's word by book-posthoc.toml's rule comes from its own cells, its earlier word from the earlier
    counts; the retired correction reads 'no test'; the columns are words; the counts add up."""
    from tanbias.book.tables import CODE_NAME

    posthoc = _tested_posthoc([
        {"unigram head": "kept", "IsoScore*": "not decided", "standardised": "no test"},   # survives; earlier partly
        {"unigram head": "lost", "IsoScore*": "kept", "standardised": "no test"},          # partly, both rules
        {"unigram head": "not decided", "standardised": "no test"},                        # not decided
    ], kept=[(1, 3), (1, 3), (0, 2)])
    t = rivals_report.difference_survival_table(posthoc)
    assert list(t["by a test of the difference"]) == ["survives", "partly survives", "not decided"]
    assert list(t["by the earlier rule"]) == ["partly survives", "partly survives", "does not survive"]
    assert set(t["z-scored"]) == {"no test"} and "types equal" in t.columns
    assert not [h for h in t.columns if CODE_NAME.search(h)]
    n = rivals_report.difference_numbers(posthoc)
    assert (n["tested_rows"], n["tested_survives"], n["earlier_partly"]) == (3, 1, 2)
    assert n["tested_kept"] + n["tested_lost"] + n["tested_undecided"] + n["tested_no_test"] == n["tested_cells"] == 8
    swapped = types.SimpleNamespace(tested=posthoc.tested, survival=posthoc.survival.iloc[::-1])
    with pytest.raises(ValueError, match="same order"):
        rivals_report.difference_survival_table(swapped)


def test_the_words_by_a_test_of_the_difference_are_there_for_the_audit_trail():
    from tanbias.lab.analysis import rivals_posthoc

    posthoc = _tested_posthoc([{"unigram head": "kept", "standardised": "no test"},
                               {"unigram head": "lost", "IsoScore*": "kept"}], kept=[(1, 2), (1, 2)])
    posthoc.survival = posthoc.survival.assign(standard="less anisotropic",
                                               **{c: "n/a" for c in rivals_posthoc.SURVIVAL_CORRECTIONS})
    posthoc.predictions = pd.DataFrame(columns=["kind", "account", "key", "outcome"])
    posthoc.summary = pd.DataFrame([{"account": "rogue_dimensions", "kind": "decoder", "all_predictions": "supported",
                                     "tested": "against"}])
    posthoc.kinds = pd.DataFrame(columns=["kind", "verdict", "head", *rivals_posthoc.READINGS_BY_KIND])
    posthoc.nulls = pd.DataFrame(columns=["head", "correction", "verdict", "kind", "excludes_raw"])
    w = rivals_report.posthoc_words(posthoc)
    kind = posthoc.tested["kind"].iloc[0]
    assert w[f"tested, surgery, {kind}, standardised"] == "no test"
    assert w[f"tested word, surgery, {kind}"] == "survives" and w[f"tested word, aliasing, {kind}"] == "partly survives"
    assert w["tested predictions, rogue_dimensions, decoder"] == "against"
