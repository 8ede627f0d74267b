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
