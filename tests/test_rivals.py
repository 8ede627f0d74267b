"""The rivals chapter's measurements (tanbias.lab.analysis.rivals)."""
from __future__ import annotations

import numpy as np
import pytest

from tanbias.errors import ParameterError
from tanbias.lab.analysis import rivals
from tanbias.lab.config import RunConfig


@pytest.fixture(scope="module")
def init_table():
    cfg = RunConfig(name="init-encoder", kind="encoder", size="smoke", steps=4)
    return rivals.initialisation_anisotropy(cfg)


def test_initialisation_reads_both_attentions_both_inputs_every_layer(init_table):
    t = init_table
    assert set(t["attention"]) == {"bidirectional", "causal"} and set(t["input"]) == {"masked", "unmasked"}
    assert set(t["positions"]) <= set(rivals.POSITION_KINDS) and "content" in set(t["positions"])
    assert sorted(set(t["layer"])) == [0, 1, 2]                      # the embedding and the 2 blocks
    assert t["mean_cosine"].between(-1, 1).all()


def test_at_the_embedding_attention_has_not_acted_and_every_mask_is_one_row(init_table):
    t = init_table.set_index(["attention", "input", "layer", "positions"])
    emb = t.xs(0, level="layer")
    # the same weights: before any block, both attentions give the same states
    assert emb.loc[("bidirectional", "masked"), "mean_cosine"].values == pytest.approx(
        emb.loc[("causal", "masked"), "mean_cosine"].values)
    assert emb.loc[("bidirectional", "masked", "mask"), "mean_cosine"] == pytest.approx(1.0)


def test_the_within_and_across_readings_split_the_pairs(init_table):
    t = init_table
    # the all-pairs mean lies between the within-row and across-row means (a weighted average)
    lo, hi = np.minimum(t["within"], t["across"]), np.maximum(t["within"], t["across"])
    ok = t["within"].notna() & t["across"].notna()
    assert ((t["mean_cosine"][ok] >= lo[ok] - 1e-9) & (t["mean_cosine"][ok] <= hi[ok] + 1e-9)).all()


def test_initialisation_of_a_decoder_config_is_refused():
    with pytest.raises(ParameterError, match="config.kind"):
        rivals.initialisation_anisotropy(RunConfig(name="d", kind="decoder", size="smoke", steps=4))


# ----------------------------------------------------------------------------- the registered rules, on planted tables
def planted_table(effects=None, seeds=range(6), noise=0.01, rng=0, **columns):
    """A run table of every cell of both architectures whose outcomes are seed + planted cell effect + noise."""
    import pandas as pd

    rng = np.random.default_rng(rng)
    effects = effects or {}
    rows = []
    for kind in ("encoder", "decoder"):
        for seed in seeds:
            base = rng.normal(0, 0.3)
            for cell in rivals.CELLS:
                head, _, arm = cell.partition("-")
                row = {"run": f"rivals-{kind}-{cell}-s{seed}", "kind": kind, "cell": cell, "head": head, "arm": arm,
                       "seed": seed, "diverged": False, "peak_step": 11}
                for outcome in rivals.OUTCOMES:
                    row[outcome] = base + effects.get((kind, cell, outcome), 0.0) + rng.normal(0, noise)
                for k, v in columns.items():
                    row[k] = v(kind, cell) if callable(v) else v
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_the_contrasts_recover_planted_effects_and_holm_reads_each_family_whole():
    t = planted_table({("decoder", "unigram-control", "raw"): -0.4, ("decoder", "unigram-proxy", "raw"): -0.6})
    c = rivals.contrast_rows(t)
    assert c.groupby("family").size().to_dict() == {"primary": 4, "secondary": 36}
    head = c[(c.contrast == "head_final") & (c.kind == "decoder")].iloc[0]
    assert head["estimate"] == pytest.approx(-0.4, abs=0.03) and head["significant"] and head["word"] == "negative"
    surg = c[(c.contrast == "surgery_unigram") & (c.kind == "decoder")].iloc[0]
    assert surg["estimate"] == pytest.approx(-0.2, abs=0.03)
    enc = c[(c.contrast == "head_final") & (c.kind == "encoder")].iloc[0]
    assert not enc["significant"] and enc["word"] == "indistinguishable"
    inter = c[(c.contrast == "surgery_interaction") & (c.kind == "decoder")].iloc[0]
    assert inter["estimate"] == pytest.approx(-0.2, abs=0.03)        # (-0.6 + 0.4) - (0 - 0)
    assert (c["p_holm"] >= c["p"] - 1e-12).all()


@pytest.mark.slow
def test_a_missing_seed_leaves_the_architecture_out_of_the_model_and_p_at_one_in_holm():
    t = planted_table(seeds=range(3))
    t = t[~((t.kind == "encoder") & (t.seed > 0))]                 # one complete encoder seed: no df
    c = rivals.contrast_rows(t)
    enc = c[c.kind == "encoder"]
    assert enc["p"].isna().all() and enc["p_holm"].isna().all()
    assert c[c.kind == "decoder"]["p"].notna().all()
    assert rivals.complete_seeds(t, "encoder") == [0] and rivals.complete_seeds(t, "decoder") == [0, 1, 2]


@pytest.mark.slow
def test_the_accounts_read_their_rules():
    # planted: the unigram head lowers the peak and the final reading in the decoder; centring and
    # standardising leave a tenth of the raw reading; the proxy's enrichment vanishes outside W_U
    eff = {("decoder", "unigram-control", "raw"): -0.5, ("decoder", "unigram-control", "peak"): -0.5,
           ("decoder", "unigram-proxy", "raw"): -0.5, ("decoder", "unigram-proxy", "peak"): -0.5}
    t = planted_table(eff, noise=0.02)
    t["centred"] = 0.1 * np.exp(t["raw"])
    t["standardised"] = 0.9 * np.exp(t["raw"])
    t["enrichment"] = 2.0 + 0.05 * np.random.default_rng(1).normal(size=len(t))
    t["enrichment_outside"] = 0.05 * np.random.default_rng(2).normal(size=len(t))
    c = rivals.contrast_rows(t)
    s = rivals.share_rows(t)
    w = rivals.account_words(c, s).set_index(["account", "kind"])["word"]
    assert w[("unigram_first", "decoder")] == "supported"
    assert w[("common_drift", "decoder")] == "supported" and w[("rogue_dimensions", "decoder")] == "against"
    assert w[("output_bottleneck", "decoder")] == "supported"
    assert w[("tangent_bias", "decoder")] == "not distinguished"      # no surgery effect, E_out not above 0
    assert w[("unigram_first", "encoder")] == "against"                # no effect, and the design could see one
    assert set(w) <= {"supported", "against", "not distinguished"}


@pytest.mark.slow
def test_matched_progress_reads_each_pair_at_the_slower_runs_final_loss():
    import pandas as pd

    t = planted_table({("decoder", "unigram-control", "raw"): -0.4}, seeds=range(4))
    rows = []
    for _, r in t.iterrows():
        slow = 0.5 if r["cell"] == "unigram-control" else 0.0
        for step, loss in ((0, 9.0), (10, 7.0 + slow), (20, 6.0 + slow)):
            rows.append({"kind": r["kind"], "cell": r["cell"], "seed": r["seed"], "layer": "mean", "step": step,
                         "heldout_loss": loss, "raw": r["raw"] * step / 20})
    traj = pd.DataFrame(rows)
    c = rivals.contrast_rows(t)
    m = rivals.matched_progress(traj, t, c).set_index(["contrast", "kind"])
    row = m.loc[("head_final", "decoder")]
    assert row["loss_gap"] == pytest.approx(0.5) and row["n_seeds"] == 4
    assert row["word"] in {"survives", "reverses", "not told apart from progress"}
    assert m.loc[("head_final", "encoder"), "word"] == "n/a"          # not significant: nothing to read


def test_the_log_outcomes_are_those_the_registration_reads_as_logarithms():
    """A contrast is shown as a ratio exactly when its outcome is registered as a logarithm (rivals.toml:
    "ln of ...", and enrichment_outside, "the same" as the ln enrichment)."""
    from tanbias.lab.analysis import rivals_report

    registered = rivals_report.registration()["outcomes"]
    ln = {k for k, v in registered.items() if v.startswith("ln ")} | {"enrichment_outside"}
    assert set(rivals.LOG_OUTCOMES) & set(registered) == ln


def test_every_registered_contrast_has_a_name_in_words():
    assert set(rivals.CONTRAST_NAMES) == set(rivals.CONTRASTS)
    assert len(set(rivals.CONTRAST_NAMES.values())) == len(rivals.CONTRAST_NAMES)
    assert not any("_" in name.replace("W_U", "") for name in rivals.CONTRAST_NAMES.values())
