"""Real pretrained models on real text (chapter 9): the measurement pipeline at smoke size.

The measurements themselves (``tanbias.token_clouds``) are tested on synthetic
clouds in ``test_token_clouds.py``; here SmolLM2 is loaded from its pinned
package (``make zoo``) and measured on a few hundred held-out tokens, and the
committed tables are checked and drawn.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.analysis import pretrained as pt

SMOKE = dict(n_tokens=512, frequency_docs=100, n_boot=50, probe_tokens=256,
             probe={"layers": [0, 15, 30], "n_controls": 4}, robust_fractions=(0.5, 1.0),
             robust_min_counts=(2, 4), min_count=2)


def _zoo_ready(name: str) -> bool:
    from tanbias.lab import zoo

    try:
        zoo.weight_path(name)
    except Exception as exc:   # noqa: BLE001 - any reason the package is not usable
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed on CI ({exc}); `make zoo` installs it")
        return False
    return True


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    if not _zoo_ready("smollm2-135m"):
        pytest.skip("smollm2-135m not installed: make zoo")
    root = tmp_path_factory.mktemp("pretrained")
    manifest = pt.measure("smollm2-135m", out_dir=root / "smollm2-135m", progress=False, **SMOKE)
    return root, manifest


@pytest.mark.zoo
def test_every_table_is_produced_and_finite(smoke):
    root, manifest = smoke
    tables = pt.load_pretrained("smollm2-135m", root=root)
    assert set(tables) == {"manifest", *pt.TABLES, "alignment"}
    types = tables["types"]
    assert set(types["layer"]) == set(range(31)), "every layer of SmolLM2 is measured"
    assert (types["count"] >= SMOKE["min_count"]).all()
    for col in ("radius_t", "centroid_distance"):
        assert np.isfinite(types[col]).all() and (types[col] >= 0).all(), col
    assert types["self_similarity"].between(-1, 1).all()
    premise = tables["premise"]
    assert set(premise["reading"]) == set(pt.READINGS)
    assert {"corpus", "wordfreq"} <= set(premise["source"])
    body = premise[premise["layer"] > 0]          # the embedding layer's radii are all 0
    assert np.isfinite(body[["rho", "lo", "hi"]]).all().all()
    assert (body["lo"] <= body["rho"] + 1e-12).all() and (body["rho"] <= body["hi"] + 1e-12).all()
    an = tables["anisotropy"]
    assert len(an) == 31 and an["isoscore_star"].between(0, 1).all()
    assert an["mean_cosine"].between(-1, 1).all()
    curv = tables["curvature"]       # empty at smoke size: too few types per layer to fit
    assert list(curv.columns)[:4] == ["layer", "slope", "lo", "hi"]
    assert np.isfinite(curv["slope"].astype(float)).all()
    al = tables["alignment"]     # the post-hoc probe of the zoo's decoder (probe_checkpoints("smollm2-135m"))
    assert np.isfinite(al["enrichment"]).all() and (al["enrichment"] > 0).all() and (al["p_energy"] > 0).all()
    assert set(al["layer"]) == {0, 15, 30} and set(al["revision"]) == {"main"}
    assert set(al["kind"]) == {"decoder"} and set(al["run"]) == {"smollm2-135m"}
    assert {"frozen", "refit"} <= set(al["proxy"]) and al["energy_proxy"].between(0, 1).all()


@pytest.mark.zoo
def test_manifest_records_provenance_and_speed(smoke):
    _, manifest = smoke
    from tanbias.lab.zoo import zoo_entry

    entry = zoo_entry("smollm2-135m")
    assert manifest["weight_sha256"] == entry.sha256
    assert manifest["settings"]["seed"] == 0 and manifest["n_tokens"] > 0
    assert manifest["languages"] == sorted(manifest["languages"]) and len(manifest["languages"]) == 8
    assert 0 < manifest["gemm_fraction"] < 1.5
    assert manifest["tokens_per_s"] > 0 and manifest["flops_per_token"] > 1e8
    assert "commit" in manifest["git"]


@pytest.mark.zoo
def test_measure_all_skips_a_model_already_measured(smoke):
    root, manifest = smoke
    out = pt.measure_all("smollm2-135m", root=root, progress=False, **SMOKE)
    assert out["smollm2-135m"].get("skipped") is True


@pytest.mark.zoo
def test_a_tampered_or_missing_table_names_itself_and_the_command(smoke, tmp_path):
    root, _ = smoke
    import shutil

    copy = tmp_path / "smollm2-135m"
    shutil.copytree(root / "smollm2-135m", copy)
    with open(copy / "premise.csv", "a") as f:
        f.write("0,corpus,radius_t,0,0,0,1,1,1\n")
    with pytest.raises(CorruptFileError, match=r"premise\.csv.*python -m tanbias\.lab pretrained"):
        pt.load_pretrained("smollm2-135m", root=tmp_path)
    (copy / "manifest.json").unlink()
    with pytest.raises(CorruptFileError, match=r"manifest\.json"):
        pt.load_pretrained("smollm2-135m", root=tmp_path)


def test_bad_settings_are_refused_before_any_work():
    with pytest.raises(ParameterError, match="n_tokenz"):
        pt.measure("smollm2-135m", n_tokenz=10)
    with pytest.raises(ParameterError, match="gpt-5"):
        pt.measure_all("gpt-5")


def test_word_marker_and_whole_words_on_the_lab_tokenizer():
    from tanbias.lab.tokenizer import load_tokenizer

    tok = load_tokenizer()
    assert pt.word_marker(tok) == "Ġ"
    ids = tok.convert_tokens_to_ids(["Ġthe", "Ġand", "ing"])
    z = pt.wordfreq_frequencies(tok, np.array(ids), ["en"] * 3)
    assert (z[:2] > 6).all(), "'the' and 'and' are among the commonest English words"
    assert np.isnan(z[2]), "a piece that continues a word is not a whole word"


@pytest.mark.zoo
def test_chapter_figures_draw_from_the_tables(smoke):
    root, _ = smoke
    from tanbias.figures import pretrained as fp

    one = pt.load_pretrained("smollm2-135m", root=root)
    tables = {"smollm2-135m": one, "smollm2-again": one}   # a slider needs two models
    for make in (fp.premise_interactive, fp.types_interactive, fp.anisotropy_interactive,
                 fp.alignment_interactive, fp.curvature_interactive):
        view = make(tables)
        fig = view.make_figure()
        assert fig.layout.title.text and fig.data, make.__name__
        html = view.to_html()           # every frame of the static figure draws
        assert "Plotly.newPlot" in html and len(html) < 1_000_000, make.__name__
