"""The numbers behind chapters 5-6's trained views (tanbias.lab.analysis.views): read back from the
committed runs with their checksums, and computed again from a smoke run's checkpoint and captures
(the smoke 2x2 sweep of tests/conftest.py) to the same numbers."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tanbias.errors import CorruptFileError
from tanbias.lab import runs
from tanbias.lab.analysis.views import compute_views, load_views
from tanbias.lab.probe import probe_steps
from tanbias.theory.attention import KEY_TERMS

COMMITTED = ("decoder-natural-s0", "encoder-balanced-s0")


def _shape_ok(views: dict, config) -> None:
    """What the figures read: a row per block for attention, three probe steps for depth."""
    pc = config.probe
    steps = probe_steps(config.steps, pc.n_steps)
    assert [a["layer"] for a in views["attention"]] == list(range(1, config.size.num_hidden_layers + 1))
    for a in views["attention"]:
        assert set(a["rms"]) == set(KEY_TERMS) and all(v >= 0 for v in a["rms"].values())
        assert 0 <= a["tv_tangent"] <= 1 and 0 <= a["tv_normal"] <= 1 and a["n_types"] >= 1
    # the first block reads the embeddings, one point per type (radius 0, nothing to remove); later
    # blocks read a context-dependent cloud around each type
    first, *later = views["attention"]
    assert first["t"] == 0 and first["tv_tangent"] == first["tv_normal"] == 0
    assert all(a["t"] > 0 for a in later)
    picked = [d["step"] for d in views["depth"]]
    assert picked == sorted(set(picked)) and picked[0] == steps[0] and picked[-1] == steps[-1]
    assert views["attention_step"] == steps[-1] and (views["rank"], views["local_rank"]) == (pc.rank, pc.local_rank)
    for d in views["depth"]:
        assert len(d["tangent"]) == len(d["normal"]) == len(d["normal_share"]) == config.size.num_hidden_layers + 1
        assert all(0 <= s <= 1 for s in d["normal_share"])
        assert all(len(t) == len(n) for t, n in zip(d["tangent"], d["normal"]))


@pytest.mark.parametrize("run", COMMITTED)
def test_the_committed_views_are_read_with_their_checksums(run):
    views = load_views(run)
    assert views["run"] == run
    _shape_ok(views, runs.read_config(run))


def test_a_run_without_views_or_with_a_changed_file_is_refused(tmp_path):
    d = tmp_path / COMMITTED[0]
    shutil.copytree(runs.run_dir(COMMITTED[0]), d)
    views = json.loads((d / "views.json").read_text())
    views["rank"] += 1
    (d / "views.json").write_text(json.dumps(views) + "\n")
    with pytest.raises(CorruptFileError, match="views.json"):
        load_views(d)
    (d / "views.json").unlink()
    man = json.loads((d / "manifest.json").read_text())
    man["files"].pop("views.json", None)
    (d / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(CorruptFileError) as err:
        load_views(d)
    assert "views file is missing" in str(err.value) and err.value.regenerate == f"python -m tanbias.lab probe {d.name}"


def test_views_computed_again_from_the_run_are_the_ones_written(smoke_sweep):
    d = smoke_sweep / "decoder-natural-s0"
    written = json.loads((d / "views.json").read_text())
    _shape_ok(written, runs.read_config(d))
    again = compute_views(d)
    assert again == written == json.loads((d / "views.json").read_text())
    fewer = compute_views(d, n_tokens=3)
    assert all(len(t) <= 3 for dd in fewer["depth"] for t in dd["tangent"])
    assert [dd["normal_share"] for dd in fewer["depth"]] == [dd["normal_share"] for dd in written["depth"]]
    assert np.allclose([a["tv_normal"] for a in fewer["attention"]], [a["tv_normal"] for a in written["attention"]])
    compute_views(d)                          # leave the shared sweep as it was
