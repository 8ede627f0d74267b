"""What a measurement reads, checked before any model is loaded (tanbias.lab.analysis.measure_inputs):
its settings and its text. The refusals a measurement makes of them are measured end to end in
test_measure.py."""
from __future__ import annotations

import pytest

from tanbias.errors import ParameterError
from tanbias.lab.analysis import measure_inputs as inputs
from tanbias.lab.analysis.pretrained import MeasureSettings


def test_read_documents_splits_on_blank_lines(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("a b\nc\n\n \n\nd\r\n\r\ne\n", encoding="utf-8")
    assert inputs.read_documents(f) == ["a b\nc", "d", "e"]


def test_the_settings_follow_the_options_and_a_zoo_models_own():
    s = inputs.measure_settings("a/folder", n_tokens=4096)
    assert (s.n_tokens, s.probe_tokens, s.languages) == (4096, 512, ("en",))
    assert inputs.measure_settings("smollm2-135m").languages == ("en", "de")
    assert inputs.measure_settings("a/folder", text=True).languages == (inputs.TEXT_LANGUAGE,)
    with pytest.raises(ParameterError, match="one language"):
        inputs.measure_settings("a/folder", text=True, languages=["en", "de"])
    with pytest.raises(ParameterError, match=r"tokens=100 is out of range"):
        inputs.measure_settings("a/folder", n_tokens=100)
    assert inputs.probe_tokens(MeasureSettings.n_tokens) == MeasureSettings.probe_tokens


def test_a_text_is_fitted_to_what_it_holds():
    from tanbias.lab.corpus import split
    from tanbias.lab.tokenizer import load_tokenizer

    tok = load_tokenizer()
    _, valid = split(["en"])
    docs = valid["en"][:60]
    s, notes = inputs.fit_text(MeasureSettings(n_tokens=1_000_000, languages=["en"]), docs, "t.txt", tok, 128)
    assert s.n_tokens < 1_000_000 and s.n_tokens % 128 == 0 and any("the text holds" in n for n in notes)
    with pytest.raises(ParameterError, match="too short for the bootstrap"):
        inputs.fit_text(MeasureSettings(languages=["en"]), docs[:2], "t.txt", tok, 128)
