"""The shared byte-level BPE tokenizer (tanbias.lab.tokenizer)."""
from __future__ import annotations

import numpy as np



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
