"""Fast checks of the lab's data and model foundation: corpus, tokenizer, models."""
from __future__ import annotations

import itertools
import math
import shutil

import numpy as np
import pytest

from tanbias.lab import corpus as lc
from tanbias.lab.corpus import (CorruptFileError, language_counts, load_corpus, mixture,
                                mixture_probabilities, split_corpus, verify_corpus)

REBUILD = "python data/corpus/make_corpus.py"


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def tokenizer():
    from tanbias.lab.tokenizer import load_tokenizer
    return load_tokenizer()


# --------------------------------------------------------------------------- corpus
def test_manifest_checksums_verify():
    manifest = lc.read_manifest()
    verified = verify_corpus()
    assert set(verified) == {e["language"] for e in manifest["files"].values()}
    for name, entry in manifest["files"].items():
        assert verified[entry["language"]] == entry["sha256"]


def _copy_corpus(tmp_path):
    for path in lc.CORPUS_DIR.iterdir():
        if path.name == "manifest.json" or path.name.endswith(".txt.gz"):
            shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_corrupted_copy_is_refused(tmp_path):
    d = _copy_corpus(tmp_path)
    target = d / "es.txt.gz"
    blob = bytearray(target.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    target.write_bytes(bytes(blob))
    load_corpus(["en"], corpus_dir=d)            # an intact file still loads
    with pytest.raises(CorruptFileError) as info:
        load_corpus(corpus_dir=d)
    msg = str(info.value)
    assert "es.txt.gz" in msg and REBUILD in msg and "SHA-256" in msg
    assert isinstance(info.value, ValueError)


def test_missing_file_and_manifest_are_refused(tmp_path):
    d = _copy_corpus(tmp_path)
    (d / "pt.txt.gz").unlink()
    with pytest.raises(CorruptFileError, match=r"pt\.txt\.gz.*missing.*make_corpus\.py"):
        load_corpus(corpus_dir=d)
    (d / "manifest.json").unlink()
    with pytest.raises(CorruptFileError, match=r"manifest\.json.*make_corpus\.py"):
        language_counts(corpus_dir=d)


def test_unknown_language_is_a_parameter_error():
    with pytest.raises(ValueError, match="languages="):
        load_corpus(["xx"])


def test_language_counts_and_files_agree(corpus):
    counts = language_counts()
    assert len(counts) >= 4
    assert sum(c["words"] for c in counts.values()) >= 2_000_000
    for lang, docs in corpus.items():
        assert counts[lang]["documents"] == len(docs)
        assert counts[lang]["words"] == sum(len(d.split()) for d in docs)
        assert all(d and "\n" not in d and d == d.strip() for d in docs[:2000])
    # natural imbalance left in: the largest language has several times the smallest
    words = [c["words"] for c in counts.values()]
    assert max(words) > 3 * min(words)


def test_no_duplicates_across_corpus(corpus):
    all_docs = [d for docs in corpus.values() for d in docs]
    assert len(set(all_docs)) == len(all_docs)


def _tv_to_uniform(freq: dict[str, float]) -> float:
    k = len(freq)
    return 0.5 * sum(abs(v - 1 / k) for v in freq.values())


def _chi2_critical(df: int, z: float = 3.09) -> float:
    """Upper 0.1 % point of chi-square(df), Wilson-Hilferty approximation."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + z * math.sqrt(a)) ** 3


def test_balanced_mixture_is_closer_to_uniform_than_natural(corpus):
    n = 20_000
    shares = {}
    for regime in ("natural", "balanced"):
        stream = list(itertools.islice(mixture(corpus, regime, seed=123), n))
        again = list(itertools.islice(mixture(corpus, regime, seed=123), 50))
        assert again == stream[:50]                      # same seed, same stream
        words = dict.fromkeys(corpus, 0)
        draws = dict.fromkeys(corpus, 0)
        for lang, doc in stream:
            words[lang] += len(doc.split())
            draws[lang] += 1
        # the draws follow the stated probabilities (chi-square test at 0.1 %)
        p = mixture_probabilities(corpus, regime)["draws"]
        chi2 = sum((draws[lang] - n * p[lang]) ** 2 / (n * p[lang]) for lang in p)
        assert chi2 < _chi2_critical(len(p) - 1), (regime, chi2)
        total = sum(words.values())
        shares[regime] = {lang: w / total for lang, w in words.items()}
    tv_nat, tv_bal = _tv_to_uniform(shares["natural"]), _tv_to_uniform(shares["balanced"])
    assert tv_bal < 0.6 * tv_nat, (tv_bal, tv_nat)
    # the uniform limit T -> inf gives equal word shares
    probs = mixture_probabilities(corpus, "balanced", math.inf)["words"]
    assert max(probs.values()) - min(probs.values()) < 1e-12


def test_mixture_rejects_bad_parameters(corpus):
    with pytest.raises(ValueError, match="regime="):
        next(mixture(corpus, "uniform"))
    with pytest.raises(ValueError, match="temperature="):
        next(mixture(corpus, "balanced", temperature=0.5))


def test_split_is_deterministic_and_disjoint(corpus):
    small = {lang: docs[:500] for lang, docs in corpus.items()}
    tr1, va1 = split_corpus(small)
    tr2, va2 = split_corpus({lang: docs[::-1] for lang, docs in small.items()})
    for lang in small:
        assert set(va1[lang]) == set(va2[lang])
        assert not set(va1[lang]) & set(tr1[lang])
        assert len(va1[lang]) + len(tr1[lang]) == len(small[lang])


# --------------------------------------------------------------------------- tokenizer
def test_tokenizer_special_tokens(tokenizer):
    assert len(tokenizer) == 8192
    assert [tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id,
            tokenizer.unk_token_id, tokenizer.mask_token_id] == [0, 1, 2, 3, 4]
    ids = tokenizer("Hallo Welt")["input_ids"]
    assert ids[0] == tokenizer.bos_token_id and ids[-1] == tokenizer.eos_token_id


def test_tokenizer_round_trips_every_language(corpus, tokenizer):
    rng = np.random.default_rng(0)
    for lang, docs in corpus.items():
        sample = [docs[i] for i in rng.choice(len(docs), 25, replace=False)]
        enc = tokenizer(sample, add_special_tokens=True)["input_ids"]
        for text, ids in zip(sample, enc):
            assert tokenizer.unk_token_id not in ids
            assert tokenizer.decode(ids, skip_special_tokens=True) == text, lang
    odd = "naïve café – Zażółć gęślą jaźń, Съешь же ещё 😀\ttab  two spaces"
    assert tokenizer.decode(tokenizer(odd)["input_ids"], skip_special_tokens=True) == odd


def test_tokenizer_training_is_deterministic():
    from tanbias.lab.tokenizer import balanced_sample, train_tokenizer
    texts = balanced_sample({"a": ["the cat sat on the mat"] * 50 + ["a dog"] * 30,
                             "b": ["der Hund bellt laut"] * 60}, chars_per_language=800, seed=3)
    one = train_tokenizer(texts, vocab_size=300).to_str()
    two = train_tokenizer(texts, vocab_size=300).to_str()
    assert one == two


# --------------------------------------------------------------------------- models
def test_models_build_at_smoke_size_and_backprop(corpus, tokenizer):
    import torch
    from tanbias.lab.data import lm_batches
    from tanbias.lab.models import make_model

    small = {lang: docs[:200] for lang, docs in corpus.items()}
    enc = make_model("encoder", "smoke", vocab_size=len(tokenizer), seed=0)
    dec = make_model("decoder", "smoke", vocab_size=len(tokenizer), seed=0)
    assert type(enc).__name__ == "EuroBertForMaskedLM"
    assert type(dec).__name__ == "LlamaForCausalLM"
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "vocab_size", "tie_word_embeddings"):
        assert getattr(enc.config, key) == getattr(dec.config, key), key
    pe, pd = dict(enc.named_parameters()), dict(dec.named_parameters())
    assert {k: v.shape for k, v in pe.items()} == {k: v.shape for k, v in pd.items()}
    for kind, model in (("encoder", enc), ("decoder", dec)):
        batch = next(lm_batches(kind, mixture(small, seed=0), tokenizer, batch_size=4, seq_len=32))
        if kind == "encoder":
            assert (batch["labels"] != -100).any() and (batch["input_ids"] == 4).any()
        out = model(**batch)
        assert torch.isfinite(out.loss)
        assert 0.5 * math.log(len(tokenizer)) < out.loss.item() < 2 * math.log(len(tokenizer))
        out.loss.backward()
        grads = [p.grad for p in model.parameters()]
        assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_encoder_is_bidirectional_decoder_is_causal():
    import torch
    from tanbias.lab.models import make_model

    x = torch.randint(5, 100, (1, 12), generator=torch.Generator().manual_seed(0))
    y = x.clone()
    y[0, -1] = 5 if x[0, -1] != 5 else 6
    for kind, changes in (("encoder", True), ("decoder", False)):
        m = make_model(kind, "smoke", vocab_size=100).eval()
        with torch.no_grad():
            delta = (m(input_ids=x).logits[0, 0] - m(input_ids=y).logits[0, 0]).abs().max().item()
        assert (delta > 1e-6) == changes, kind


def test_unigram_baseline_closed_form():
    from tanbias.lab.data import token_counts
    from tanbias.lab.models import unigram_baseline

    counts = token_counts([[5, 5, 5, 6]], vocab_size=7)
    res = unigram_baseline(counts, [5, 6], alpha=1e-12)
    assert res["loss"] == pytest.approx(-(math.log(0.75) + math.log(0.25)) / 2, rel=1e-9)
    assert res["accuracy"] == 0.5


# --------------------------------------------------------------------------- corpus builder
def _make_corpus_module():
    import importlib.util

    path = lc.CORPUS_DIR / "make_corpus.py"
    spec = importlib.util.spec_from_file_location("make_corpus", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_make_corpus_cleaning_steps():
    mc = _make_corpus_module()
    raw = b"first one\n  -- A\n%\nsecond\tline\n%\n\n%\n_\x08b_\x08o_\x08l_\x08d word here\n"
    docs = [mc.normalise(mc.decode(d, "en")[0]) for d in mc.split_fortunes(raw) if d.strip()]
    assert docs == ["first one -- A", "second line", "bold word here"]
    assert mc.decode("Zażółć".encode("iso-8859-2"), "pl") == ("Zażółć", "iso-8859-2")
    assert mc.wrong_language("The cat is on the mat and it was not happy with you.", "de") == "en"
    assert mc.wrong_language("Der Hund ist nicht auf dem Dach, und er war nie da.", "de") is None
    assert mc.wrong_language("Привет, как дела?", "en") == "Cyrillic"
    assert mc.dedup_key("Hello,  World!") == mc.dedup_key("hello world")
