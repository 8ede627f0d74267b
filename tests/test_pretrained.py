"""Real pretrained models on real text (chapter 9): the measurement pipeline at smoke size.

The measurements themselves (``tanbias.theory.token_clouds``) are tested on synthetic
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

SMOKE = dict(n_tokens=512, seq_len=64, frequency_docs=100, n_boot=20, draws=4, m=2, robust_m=(2, 3), probe_tokens=128,
             probe={"layers": [0, 15, 30], "n_controls": 4}, languages=("en",))


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
    for key in pt.TABLES:
        assert set(tables[key]["language"]) == {"en"}, key        # one language, named in every row
    types = tables["types"]
    assert set(types["layer"]) == set(range(31)), "every layer of SmolLM2 is measured"
    assert (types["count"] >= SMOKE["m"]).all()
    for col in ("radius_t", "centroid_distance", "radius_t_plain"):
        assert np.isfinite(types[col]).all() and (types[col] >= 0).all(), col
    assert types["self_similarity"].between(-1, 1).all()
    premise = tables["premise"]
    assert set(premise["reading"]) == set(pt.RADIUS_READINGS)
    assert {"corpus", "wordfreq"} <= set(premise["source"]) and set(premise["estimator"]) == {"matched", "plain"}
    matched = premise[(premise["estimator"] == "matched") & (premise["m"] == SMOKE["m"]) & (premise["layer"] > 0)
                      & (premise["source"] == "corpus")]
    assert set(matched["interval"]) == {"documents"}
    assert np.isfinite(matched[["rho", "lo", "hi", "band_lo", "band_hi"]]).all().all()
    assert (matched["band_lo"] <= matched["lo"] + 1e-12).all() and (matched["band_hi"] >= matched["hi"] - 1e-12).all()
    # the matched point estimate is the correlation of the types table's own readings
    from scipy.stats import spearmanr

    last = types[(types["layer"] == 30) & (types["corpus_count"] > 0)]
    row = matched[(matched["layer"] == 30) & (matched["reading"] == "radius_t")].iloc[0]
    assert np.isclose(row["rho"], spearmanr(np.log(last["corpus_count"]), last["radius_t"]).statistic, atol=1e-3)
    assert {2, 3} <= set(premise["m"])                               # robustness over m
    an = tables["anisotropy"]
    assert len(an) == 31 and an["isoscore_star"].between(0, 1).all()
    assert an["mean_cosine"].between(-1, 1).all()
    # the first position of a decoder's row is its attention sink: its norm stands out in the middle layers
    assert an.loc[an["layer"].between(5, 25), "sink_norm_ratio"].max() > 10
    curv = tables["curvature"]
    assert list(curv.columns)[:5] == ["language", "layer", "slope", "lo", "hi"]
    al = tables["alignment"]   # held-out proxy, trained against random-init
    assert set(al["model"]) == {"trained", "random-init"} and set(al["layer"]) == {0, 15, 30}
    assert np.isfinite(al["enrichment"]).all() and (al["enrichment"] > 0).all() and (al["p_energy"] > 0).all()
    assert (al["n_fit"] > 0).all() and (al["n_test"] > 0).all() and al["energy_proxy"].between(0, 1).all()


@pytest.mark.zoo
def test_manifest_records_provenance_and_speed(smoke):
    _, manifest = smoke
    from tanbias.lab.zoo import zoo_entry

    entry = zoo_entry("smollm2-135m")
    assert manifest["weight_sha256"] == entry.sha256
    assert manifest["settings"]["seed"] == 0 and manifest["n_tokens"] > 0
    assert manifest["languages"] == ["en"] and 0 < manifest["tokens_measured"]["en"] < manifest["n_tokens"]
    assert np.isfinite(manifest["gemm_fraction"]) and manifest["gemm_fraction"] > 0   # a speed: make bench's
    assert manifest["tokens_per_s"] > 0 and manifest["flops_per_token"] > 1e8
    assert "commit" in manifest["git"]
    import tanbias

    assert manifest["package_version"] == tanbias.__version__


def test_languages_default_to_the_model_kind():
    assert pt.model_languages("smollm2-135m") == pt.DECODER_LANGUAGES
    assert pt.MeasureSettings.for_zoo("minilm-l6").languages == ("en",)
    assert pt.MeasureSettings.for_zoo("me5-small").languages == pt.MODEL_SETTINGS["me5-small"]["languages"]
    assert pt.MeasureSettings.for_zoo("gemma3-270m", languages=["de"]).languages == ("de",)


@pytest.mark.parametrize("folder", sorted(p.parent.name for p in pt.PRETRAINED_DIR.glob("*/manifest.json")))
def test_the_committed_settings_are_written_back_byte_for_byte(folder):
    """Every committed manifest's ``settings`` round-trip through MeasureSettings as the same JSON,
    and are the zoo model's settings (:meth:`MeasureSettings.for_zoo`), so ``make pretrained`` finds
    them measured already."""
    import json

    text = (pt.PRETRAINED_DIR / folder / "manifest.json").read_text()
    committed = json.loads(text)["settings"]
    settings = pt.MeasureSettings.from_dict(committed)
    assert json.dumps({"settings": settings.to_dict()}, indent=1)[2:-2] in text
    assert pt.MeasureSettings.for_zoo(folder) == settings


@pytest.mark.parametrize("field, value, match", [
    ("n_tokens", 0, r"n_tokens=0 is out of range: valid range is \[1, inf\)"),
    ("m", 1, r"m=1 is out of range: valid range is \[2, inf\)"),
    ("seq_len", 2.5, r"seq_len=2.5 is not an integer: valid range is \[3, inf\)"),
    ("robust_m", (4, 1), r"robust_m=1 is out of range: valid range is \[2, inf\)"),
    ("robust_m", 4, r"robust_m=4 is not allowed: valid range is a list of integers"),
    ("probe", {"n_control": 4}, r"n_control=4 is not allowed: valid range is the config keys"),
    ("probe", 3, r"probe=3 is not allowed: valid range is None or a dict"),
    ("frequency_docs", -1, r"frequency_docs=-1 is out of range: valid range is \[1, inf\)"),
    ("languages", "en", r"languages='en' is out of range: valid values are lists of language codes"),
])
def test_bad_settings_name_the_field_the_value_and_the_range(field, value, match):
    with pytest.raises(ParameterError, match=match):
        pt.MeasureSettings(**{field: value})


def test_settings_are_frozen_and_replaced_whole():
    import dataclasses

    s = pt.MeasureSettings(languages=["en"], probe={"n_controls": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.m = 4
    with pytest.raises(TypeError):
        s.probe["n_controls"] = 3                       # the probe's dict is read-only too
    assert s.replace(m=4).m == 4 and s.m == 8
    with pytest.raises(ParameterError, match=r"settings \['mm'\] are not known"):
        s.replace(mm=4)


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
        f.write("en,0,corpus,radius_t,matched,2,0,0,0,0,0,0,1,documents\n")
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


@pytest.mark.zoo
@pytest.mark.parametrize("name, languages", [("smollm2-135m", ("en",)), ("minilm-l6", ("en",))])
def test_the_measure_command_gives_chapter_9s_tables(name, languages, tmp_path):
    """``python -m tanbias measure MODEL`` on a zoo model writes the tables ``make pretrained``
    writes for the same text and tokens, byte for byte (smoke size: the committed tables took
    minutes; the same code path, measure_language, computes both)."""
    from tanbias.lab.analysis import measure as ms
    from tanbias.lab.analysis.measure_inputs import MIN_TOKENS
    from tanbias.theory.anisotropy import MEASURE_READINGS

    if not _zoo_ready(name):
        pytest.skip(f"{name} not installed: make zoo")
    small = dict(n_tokens=MIN_TOKENS, frequency_docs=300, n_boot=20, draws=4, robust_m=(4, 8), probe_tokens=256,
                 probe={"layers": [0, 1, 15], "n_controls": 4}, languages=languages)
    import pandas as pd

    chapter = pt.measure(name, out_dir=tmp_path / "chapter", progress=False, **small)
    command = ms.measure_model(name, tmp_path / "command", progress=False, **small)
    # the output matrix's spectrum, where the model has one (MiniLM is a bare encoder)
    assert sorted(command["tables"]) == sorted([*chapter["tables"], *(["spectrum"] if command["head"] else [])])
    for key in chapter["tables"]:          # as written: every digit the CSV holds
        ours = pd.read_csv(tmp_path / "command" / f"{key}.csv", dtype=str, keep_default_na=False)
        theirs = pd.read_csv(tmp_path / "chapter" / f"{key}.csv", dtype=str, keep_default_na=False)
        extra = set(ours.columns) - set(theirs.columns)
        assert extra <= set(MEASURE_READINGS), (key, extra)       # the command's readings
        pd.testing.assert_frame_equal(ours[list(theirs.columns)], theirs, obj=f"{key}.csv")
    assert command["weight_sha256"] == chapter["weight_sha256"]
    assert command["tokens_measured"] == chapter["tokens_measured"]
