"""``python -m tanbias measure``: chapter 9's measurements on any checkpoint, end to end.

Every architecture of :data:`tanbias.lab.loading.ARCHITECTURES` is measured on a
tiny random model saved in a temporary folder (``tiny_checkpoints.tiny_model``), at the
smallest size the measurement accepts; the bad inputs get their errors and leave nothing
under ``--out``. That the command reproduces chapter 9's tables of a zoo model is tested
in ``test_pretrained.py`` (it loads a real model).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import loading
from tanbias.lab.analysis import measure as ms
from tanbias.lab.analysis import measure_folder as mf
from tanbias.lab.analysis import measure_inputs as inputs
from measurehelpers import SMALL
from tiny_checkpoints import ALL_ARCHS, ENCODERS, make_tiny_checkpoint


@pytest.fixture(autouse=True)
def _no_gemm_peak(monkeypatch):
    """The manifest's matrix-multiply rate takes a second of two shared cores: not measured here."""
    import tanbias.lab.models

    monkeypatch.setattr(tanbias.lab.models, "gemm_peak", lambda **kwargs: 1e10)


def _leftovers(folder) -> list[str]:
    """Names in ``folder`` that a measurement must never leave: its staged copies."""
    return sorted(p.name for p in folder.iterdir() if ".partial-" in p.name or ".old-" in p.name)


#: the architecture make unit measures end to end (a decoder, about 2 s); make test measures all
UNIT_ARCHS = ("llama",)


@pytest.mark.parametrize("arch", [a if a in UNIT_ARCHS else pytest.param(a, marks=pytest.mark.slow)
                                  for a in ALL_ARCHS])
def test_every_architecture_end_to_end(arch, tmp_path):
    path = make_tiny_checkpoint(arch, tmp_path / "model", revisions=("step0",)) / "step0"
    man = ms.measure_model(path, tmp_path / "out", progress=False, **SMALL)
    assert man["kind"] == loading.ARCHITECTURES[arch] and man["model_type"] == arch and man["head"]
    tables = mf.load_measurement(tmp_path / "out")
    assert set(tables) == {"manifest", "types", "premise", "anisotropy", "curvature", "alignment", "spectrum", "results"}
    an = tables["anisotropy"]
    assert sorted(an["layer"]) == [0, 1, 2] and set(an["language"]) == {"en"}
    assert set(ms.rival_anisotropy.MEASURE_READINGS) <= set(an) and "centered" not in an
    assert set(tables["spectrum"]["dims"]) == {32} and np.isclose(tables["spectrum"]["cumulative"].iloc[-1], 1)
    assert an.loc[an["layer"] > 0, "mean_cosine"].between(-1, 1).all()
    assert an.loc[an["layer"] > 0, "isoscore_star"].between(0, 1).all()
    # a decoder's first position is its sink; an encoder's rows start with a special token
    assert np.isfinite(an["sink_norm_ratio"]).all() == (loading.ARCHITECTURES[arch] == "decoder")
    types = tables["types"]
    assert (types["count"] >= 8).all() and types.groupby("layer").size().min() >= inputs.MIN_TYPES
    top = tables["premise"]
    top = top[(top["layer"] == 2) & (top["estimator"] == "matched") & (top["source"] == "corpus")]
    assert len(top) == 3 and np.isfinite(top[["rho", "lo", "hi"]]).all().all()
    al = tables["alignment"]
    assert set(al["model"]) == {"trained", "random-init"} and (al["enrichment"] > 0).all()
    assert man["weight_sha256"] == loading.weights_sha256(path)[""]
    assert man["tokens_measured"]["en"] > 0 and man["peak_rss_gb"] > 0 and man["versions"]["tanbias"]
    assert set(man["seconds"]) >= {"load", "forward", "analysis", "probe", "total"}
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_bare_encoder_is_measured_without_the_alignment_test(tmp_path):
    path = make_tiny_checkpoint("bert", tmp_path / "model", revisions=("step0",), head=False) / "step0"
    man = ms.measure_model(path, tmp_path / "out", progress=False, **SMALL)
    assert man["arch"] == "BertModel" and not man["head"] and "alignment" not in man["tables"]
    assert any("no language-model head" in n for n in man["notes"])


@pytest.mark.slow
def test_a_folder_of_checkpoints_gives_trajectories(measured_tiny, tmp_path):
    """A tiny Llama at three checkpoints, measured as measurehelpers.measure_tiny measures it once for
    the suite (the same folder of checkpoints, the same settings), then at two of them."""
    tables = measured_tiny["series"]
    man = tables["manifest"]
    assert man["revisions"] == ["step0", "step1", "step2"] and man["steps"] == [0, 1, 2]
    for key in ("types", "premise", "anisotropy", "curvature", "alignment"):
        assert list(tables[key].columns[:2]) == ["revision", "step"], key
    assert set(tables["anisotropy"]["revision"]) == {"step0", "step1", "step2"}
    al = tables["alignment"]
    nul = al[al["model"] == "random-init"]
    assert set(nul["revision"]) == {"step0"}, "the null is measured once"
    traj = tables["trajectory"]
    assert list(traj["revision"]) == ["step0", "step1", "step2"]
    assert np.isfinite(traj[["rho_radius_t", "mean_cosine_max", "enrichment_gmean"]]).all().all()
    assert traj["null_enrichment_gmean"].nunique() == 1
    # step 0 and step 1 differ by one SGD step: their readings differ
    assert traj["mean_cosine_max"].iloc[0] != traj["mean_cosine_max"].iloc[1]
    # the revisions asked for, only
    root = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0", "step1", "step2"))
    man = ms.measure_model(root, tmp_path / "two", revisions=["step0", "step2"], alignment=False,
                           progress=False, **SMALL)
    assert man["revisions"] == ["step0", "step2"] and man["steps"] == [0, 2]


@pytest.mark.slow
def test_a_text_of_ones_own(tmp_path):
    from tanbias.lab.corpus import split

    _, valid = split(["de"])
    text = tmp_path / "text.txt"
    text.write_text("\n\n".join(valid["de"][:150]), encoding="utf-8")
    path = make_tiny_checkpoint("gpt_neox", tmp_path / "model", revisions=("step0",)) / "step0"
    man = ms.measure_model(path, tmp_path / "out", text=text, languages="de", progress=False,
                           **{**SMALL, "n_tokens": 100_000})
    assert man["text"]["source"] == "file" and man["languages"] == ["de"]
    assert man["settings"]["n_tokens"] < 100_000 and man["settings"]["n_tokens"] % 256 == 0
    assert any("the text holds" in n for n in man["notes"])
    assert set(mf.load_measurement(tmp_path / "out")["premise"]["language"]) == {"de"}


# ------------------------------------------------------------------------------- bad input
def _refused(tmp_path, exc, match, *args, **kwargs):
    """``measure_model`` raises ``exc`` matching ``match``; nothing is written under ``out``."""
    out = tmp_path / "out"
    with pytest.raises(exc, match=match):
        ms.measure_model(*args, out=out, progress=False, **{**SMALL, **kwargs})
    assert not out.exists() and _leftovers(tmp_path) == []


def test_a_missing_folder_is_named(tmp_path):
    _refused(tmp_path, ParameterError, "No such folder|existing local folder", tmp_path / "nowhere")


def test_a_corrupt_weights_file_is_named(tmp_path):
    path = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0",)) / "step0"
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    _refused(tmp_path, CorruptFileError, r"step0.*weight file that cannot be read", path)


def test_a_text_too_short_for_the_bootstrap(tmp_path):
    path = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0",)) / "step0"
    text = tmp_path / "short.txt"
    text.write_text("One document.\n\nAnother one.\n\nA third.\n", encoding="utf-8")
    _refused(tmp_path, ParameterError, "too short for the bootstrap", path, text=text)
    from tanbias.lab.corpus import split

    _, valid = split(["en"])                 # enough tokens, in too few documents
    text.write_text("\n\n".join(" ".join(valid["en"][i * 60:(i + 1) * 60]) for i in range(3)), encoding="utf-8")
    _refused(tmp_path, ParameterError, r"too short for the bootstrap.*span 1 document,.*at least 10", path, text=text)


def test_a_tokenizer_without_the_special_tokens_the_measurement_needs(tmp_path):
    from tanbias.lab.tokenizer import load_tokenizer

    path = make_tiny_checkpoint("bert", tmp_path / "model", revisions=("step0",)) / "step0"
    tok = load_tokenizer()
    tok.bos_token, tok.eos_token = None, None               # no [CLS]/<s>, no [SEP]/</s>
    tok.save_pretrained(path)
    _refused(tmp_path, ParameterError, r"no start token \(\[CLS\] or <s>\) and no end token", path)
    tok = load_tokenizer()
    tok.mask_token = None                                   # a masked LM's test masks tokens
    tok.save_pretrained(path)
    _refused(tmp_path, ParameterError, "no mask token.*--no-alignment", path)


def test_a_hub_id_out_of_reach_says_how_to_mirror_it(tmp_path, monkeypatch):
    from tanbias.lab.checkpoints import CheckpointUnavailable

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _refused(tmp_path, CheckpointUnavailable, r"EleutherAI/pythia-160m.*hf download", "EleutherAI/pythia-160m",
             revisions=["step1000"])


def test_too_few_tokens_are_refused_before_loading(tmp_path):
    _refused(tmp_path, ParameterError, r"tokens=100 is out of range: valid range is \[1024", "no/such-model",
             n_tokens=100)


def test_an_unsupported_architecture_is_named_with_the_supported_ones(tmp_path):
    import transformers

    path = tmp_path / "t5"
    transformers.T5Config(vocab_size=64, d_model=8, d_ff=16, num_layers=1, num_heads=1).save_pretrained(path)
    _refused(tmp_path, ParameterError, r"architecture 't5'.*decoders .*llama.*encoders .*bert", path)


def test_an_out_folder_holding_other_files_is_never_overwritten(tmp_path):
    keep = tmp_path / "out" / "notes.txt"
    keep.parent.mkdir()
    keep.write_text("mine")
    with pytest.raises(ParameterError, match="holds other files"):
        ms.measure_model("minilm-l6", tmp_path / "out", progress=False, **SMALL)
    assert keep.read_text() == "mine"


@pytest.mark.slow
def test_an_interrupted_measurement_leaves_the_previous_one(tmp_path, monkeypatch):
    path = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0",)) / "step0"
    out = tmp_path / "out"
    ms.measure_model(path, out, alignment=False, progress=False, **SMALL)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ms.pt, "premise_tables", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ms.measure_model(path, out, progress=False, **SMALL)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and _leftovers(tmp_path) == []


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ParameterError, match="settings.*n_boots"):
        ms.measure_model("minilm-l6", tmp_path / "o", n_boots=3)
    with pytest.raises(ParameterError, match="revisions.*zoo model"):
        loading.model_revisions("minilm-l6", ["step1"])
    with pytest.raises(ParameterError, match="one language"):
        ms.measure_model("minilm-l6", tmp_path / "o", text=__file__, languages=["en", "de"])
    with pytest.raises(ParameterError, match="languages"):
        ms.measure_model("minilm-l6", tmp_path / "o", languages=["xx"])
    with pytest.raises(ParameterError, match="device='tpu' is out of range"):
        ms.measure_model("minilm-l6", tmp_path / "o", device="tpu")
    with pytest.raises(ParameterError, match=r"tokens=100 is out of range: valid range is \[1024"):
        inputs.measure_settings("minilm-l6", n_tokens=100)
    with pytest.raises(ParameterError, match=r"m=1 is out of range: valid range is \[2"):
        ms.measure_model("minilm-l6", tmp_path / "o", m=1)
    with pytest.raises(ParameterError, match=r"dtype='float16' is not allowed: valid range is \{'float32', 'bfloat16'\}"):
        ms.measure_model("minilm-l6", tmp_path / "o", dtype="float16")
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_bfloat16_measurement_reads_as_the_float32_one(tmp_path):
    """--dtype bfloat16 runs the forward passes in bfloat16 (the readings in float64 still): on a tiny
    model, every table of the float32 measurement, within bfloat16's rounding, and the output matrix's
    spectrum (read from the weights, rounded to bfloat16)."""
    path = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0",)) / "step0"
    small = {**SMALL, "probe_tokens": 256}
    ms.measure_model(path, tmp_path / "f32", progress=False, alignment=False, **small)
    man = ms.measure_model(path, tmp_path / "bf16", progress=False, alignment=False, dtype="bfloat16", **small)
    assert man["dtype"] == "bfloat16"
    f32, bf16 = mf.load_measurement(tmp_path / "f32"), mf.load_measurement(tmp_path / "bf16")
    for reading in ("raw", "mean_share", "top_share", "mean_cosine"):
        assert np.allclose(f32["anisotropy"][reading], bf16["anisotropy"][reading], atol=0.02), reading
    assert np.allclose(f32["spectrum"]["share"], bf16["spectrum"]["share"], atol=1e-3)


def test_the_output_spectrum_is_the_unembeddings():
    from tiny_checkpoints import tiny_model

    net = tiny_model("llama", 300, seed=0)
    sp = ms.output_spectrum(net)
    W = net.get_output_embeddings().weight.detach().numpy().astype(float)
    assert np.allclose(sp["singular_value"], np.linalg.svd(W, compute_uv=False), rtol=1e-6)
    assert list(sp["rank"]) == list(range(1, 33)) and set(sp["dims"]) == {32}
    assert np.isclose(sp["cumulative"].iloc[-1], 1.0) and np.isclose(sp["share"].sum(), 1.0)
    assert ms.output_spectrum(tiny_model("bert", 300, seed=0, head=False)) is None


def test_no_function_of_the_measurement_is_longer_than_a_screen():
    """measure_model is two steps (measure_revision, write_measurement) over a Measurement, each
    function short enough to read whole: at most 60 lines, docstring included; and each of the
    measurement's modules does one thing, in at most 500 lines."""
    import ast
    import inspect

    from tanbias.lab.analysis import measure_report

    for module in (ms, mf, inputs, measure_report, loading):
        source = inspect.getsource(module)
        tree = ast.parse(source)
        long = {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 60}
        assert not long, (module.__name__, long)
        assert len(source.splitlines()) <= 500, module.__name__
