"""The multilingual corpus (tanbias.lab.corpus): checksums, language mixtures, the split, its builder."""
from __future__ import annotations

import itertools
import math
import shutil

import pytest

from tanbias.lab import corpus as lc
from tanbias.lab.corpus import (CorruptFileError, language_counts, load_corpus, mixture,
                                mixture_probabilities, split_corpus, verify_corpus)

REBUILD = "python data/corpus/make_corpus.py"


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


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_mixture_weights_and_temperature():
    c = {"a": ["x y"] * 10, "b": ["x y"] * 10, "c": ["x y"] * 10}
    w = {"a": 4.0, "b": 2.0, "c": 1.0}
    nat = mixture_probabilities(c, "balanced", 1.0, w)["words"]
    assert nat == pytest.approx({"a": 4 / 7, "b": 2 / 7, "c": 1 / 7})
    t2 = mixture_probabilities(c, "balanced", 2.0, w)["words"]
    assert t2["a"] / t2["c"] == pytest.approx(2.0)
    uni = mixture_probabilities(c, "balanced", "inf", w)["words"]
    assert uni == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


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
