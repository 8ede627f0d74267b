"""Per-token radii on a common held-out text (tanbias.lab.analysis.radii), on the smoke sweep."""
from __future__ import annotations

import shutil

import pytest

from tanbias.errors import CorruptFileError
from tanbias.lab.analysis.radii import measure_radii
from tanbias.lab.config import KINDS


def test_measure_radii_uses_one_common_text_per_kind(loaded):
    tok = {n: r.tokens for n, r in loaded.items()}
    assert all(t is not None and len(t) for t in tok.values())
    for name, t in tok.items():
        assert (t["layer"] >= 1).all() and (t["t"] > 0).all()
        counts = loaded[name].token_counts
        assert (t["train_count"].to_numpy() == counts[t["token_id"].to_numpy()]).all()
    # the same held-out text whatever the regime: identical occurrence counts per token
    for kind in KINDS:
        a = tok[f"{kind}-natural-s0"].query("layer == 1").set_index("token_id")["count_text"]
        b = tok[f"{kind}-balanced-s1"].query("layer == 1").set_index("token_id")["count_text"]
        assert a.equals(b)


def test_mechanism_refuses_a_missing_checkpoint(smoke_sweep, tmp_path):
    d = tmp_path / "decoder-natural-s0"
    shutil.copytree(smoke_sweep / "decoder-natural-s0", d, ignore=shutil.ignore_patterns("work"))
    with pytest.raises(CorruptFileError, match=r"ckpt\.pt.*python -m tanbias\.lab train"):
        measure_radii(d)
