"""Where checkpoints come from (tanbias.lab.checkpoints): local mirrors, hub ids, the paper's revisions."""
from __future__ import annotations

import pytest

from tanbias.errors import ParameterError
from tanbias.lab import checkpoints as ck
from tanbias.lab.analysis import checkpoint_probe as ph


@pytest.mark.slow
def test_missing_local_revision_names_the_available_ones(tiny):
    with pytest.raises(ParameterError, match=r"revision='step7'.*\['step0', 'step1'\]"):
        ck.resolve_checkpoint(tiny["llama"], "step7")
    with pytest.raises(ParameterError, match=r"revision=None.*\['step0', 'step1'\]"):
        ck.load_checkpoint(tiny["llama"])
    with pytest.raises(ParameterError, match="revision='step7'"):
        ph.probe_checkpoints(tiny["llama"], ["step0", "step7"], n_tokens=128, progress=False)
    assert ck.resolve_checkpoint(tiny["llama"], "step1") == (str(tiny["llama"] / "step1"), {})
    assert ck.local_revisions(tiny["llama"]) == ["step0", "step1"]
    with pytest.raises(ParameterError, match="model_id_or_path="):
        ck.resolve_checkpoint(tiny["llama"] / "nothing" / "here")


@pytest.mark.slow
def test_hub_revision_is_passed_to_from_pretrained(tiny, monkeypatch):
    import transformers

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(ck, "_offline", lambda: False)
    calls = []
    local = str(tiny["gpt_neox"] / "step1")
    for cls in (transformers.AutoConfig, transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        original = cls.from_pretrained

        def fake(path, *args, _original=original, _name=cls.__name__, **kwargs):
            calls.append((_name, path, kwargs.pop("revision", "MISSING")))
            return _original(local, *args, **kwargs)       # no network: the tiny local model
        monkeypatch.setattr(cls, "from_pretrained", fake)
    model, tok, kind = ck.load_checkpoint("EleutherAI/pythia-160m", "step1000")
    assert kind == "decoder" and type(model).__name__ == "GPTNeoXForCausalLM"
    ours = [c for c in calls if c[1] == "EleutherAI/pythia-160m"]   # (transformers' own calls: local)
    assert [c[0] for c in ours] == ["AutoConfig", "AutoTokenizer", "AutoModelForCausalLM"]   # tokenizer first: it fails fast
    assert all(c[2] == "step1000" for c in ours)
    assert ck.resolve_checkpoint("EleutherAI/pythia-160m", "step1000") == (
        "EleutherAI/pythia-160m", {"revision": "step1000"})


def test_offline_hub_id_fails_fast_with_a_clear_error(monkeypatch):
    """Offline, a hub id is looked up in the local cache only: nothing is downloaded (or waited
    for), and the error says how to get the checkpoint."""
    import transformers

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    asked = []
    original = transformers.AutoConfig.from_pretrained

    def spy(path, *args, **kwargs):
        asked.append(kwargs.get("local_files_only"))
        return original(path, *args, **kwargs)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", spy)
    with pytest.raises(ck.CheckpointUnavailable) as info:
        ck.load_checkpoint("EleutherAI/pythia-160m", "step1000")
    assert asked == [True]                               # the cache only, no network
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "'EleutherAI/pythia-160m'" in msg and "'step1000'" in msg and "network access" in msg
    assert "hf download EleutherAI/pythia-160m --revision step1000 --local-dir DIR/step1000" in msg
    assert info.value.model_id == "EleutherAI/pythia-160m" and info.value.revision == "step1000"


def test_revision_steps_and_reference_models():
    assert ck.revision_steps(["step0", "step1000", "step143000"]) == [0, 1000, 143000]
    assert ck.revision_steps([None]) == [0]
    assert ck.revision_steps(["step1", "main"]) == [0, 1]
    with pytest.raises(ParameterError, match="revisions="):
        ck.revision_steps(["step1", "step01"])
    ref = ck.REFERENCE_MODELS
    assert {k: v["kind"] for k, v in ref.items()} == {
        "EuroBERT/EuroBERT-210m": "encoder", "EleutherAI/pythia-160m": "decoder",
        "HuggingFaceTB/SmolLM2-360M": "decoder"}
    pythia = ref["EleutherAI/pythia-160m"]["revisions"]
    assert pythia[0] == "step0" and pythia[-1] == "step143000" and len(pythia) == 19
    assert ref["EuroBERT/EuroBERT-210m"]["revisions"] == [None]
