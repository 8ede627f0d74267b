"""The lab's data (tanbias.lab.data): a run's stream, batches, masking, the knobs on token frequencies,
held-out text."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tanbias.errors import ParameterError
from tanbias.theory.frequency import concentration
from tanbias.lab.config import N_SPECIAL
from tanbias.lab.corpus import split
from tanbias.lab.data import (PROBE_EVAL_SEED, VALIDATION_SEED_OFFSET, Stream, batch_targets, heldout_batches,
                              heldout_text, keep_probabilities, lm_batches, mask_tokens, original_ids, special_ids,
                              token_counts)
from tanbias.lab.experiments import dose_config
from tanbias.lab.tokenizer import load_tokenizer

SMOKE = dict(steps=6, size="smoke", languages=["en", "de"], checkpoint_every=3, eval_batches=1,
             probe={"n_steps": 3, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4})


@pytest.mark.slow
def test_expected_frequencies_match_a_sampled_stream(tokenizer):
    stream = Stream.from_config(dose_config("decoder", "skewed", 0, **SMOKE), tokenizer)
    f = stream.frequencies
    it = stream.training()
    counts = np.bincount(np.concatenate([next(it)["input_ids"].ravel().numpy() for _ in range(400)]),
                         minlength=len(tokenizer))
    top = np.argsort(-f)[:20]
    # 51k sampled tokens: the 20 most frequent types' shares agree with the expectation
    assert np.allclose(counts[top] / counts.sum(), f[top], rtol=0.25, atol=2e-3)


@pytest.mark.slow
def test_a_languages_counts_alone_are_the_committed_ones_of_the_whole_corpus(tokenizer, monkeypatch):
    """A run on some languages reads their counts from data/tokenizer/language_counts.npz, the whole
    corpus's: each language's split and tokens do not depend on the others."""
    from tanbias.lab import data

    stored = data._stored_counts()
    assert stored is not None, f"{data.COUNTS_PATH} is missing or stale: delete it, any run rebuilds it"
    monkeypatch.setattr(data, "_COUNT_CACHE", {})
    read = data._language_counts(["pt", "de"], tokenizer)
    assert list(read) == ["pt", "de"] and all(np.array_equal(read[k][0], stored[k][0]) for k in read)
    monkeypatch.setattr(data, "_COUNT_CACHE", {})
    monkeypatch.setattr(data, "_stored_counts", lambda: None)          # counted from the text itself
    counted = data._language_counts(["pt"], tokenizer)
    assert np.array_equal(counted["pt"][0], read["pt"][0]) and counted["pt"][1] == read["pt"][1]


@pytest.mark.slow
def test_subsampling_flattens_the_head_as_designed(tokenizer):
    base = Stream.from_config(dose_config("decoder", "skewed", 0, **SMOKE), tokenizer)
    flat = Stream.from_config(dose_config("decoder", "b100", 0, **SMOKE), tokenizer)
    f = base.frequencies
    a, b = base.training(), flat.training()
    ca = np.bincount(np.concatenate([next(a)["input_ids"].ravel().numpy() for _ in range(200)]), minlength=len(tokenizer))
    cb = np.bincount(np.concatenate([next(b)["input_ids"].ravel().numpy() for _ in range(200)]), minlength=len(tokenizer))
    ratio = concentration(ca[N_SPECIAL:])["collision"] / concentration(cb[N_SPECIAL:])["collision"]
    assert base.keep is None and np.array_equal(flat.keep, keep_probabilities(f, 1.0, flat.flatten_f0))
    kept = f * flat.keep
    want = concentration(f[N_SPECIAL:])["collision"] / concentration(kept[N_SPECIAL:])["collision"]
    assert ratio > 5 and abs(np.log(ratio / want)) < np.log(1.6), (ratio, want)


def test_flatten_zero_draws_nothing(tokenizer):
    docs = split(["en"])[0]["en"][:200]
    a = lm_batches("decoder", iter(docs), tokenizer, 2, 16, seed=3)
    b = lm_batches("decoder", iter(docs), tokenizer, 2, 16, seed=3, keep=None)
    for _ in range(5):
        assert np.array_equal(next(a)["input_ids"], next(b)["input_ids"])


def test_keep_probabilities_never_drop_specials_or_rare_types(tokenizer):
    docs = split(["en"])[0]["en"][:300]
    keep = np.zeros(len(tokenizer))          # drop every ordinary token...
    keep[1000:] = 1.0                  # ...below id 1000
    ids = next(lm_batches("decoder", iter(docs), tokenizer, 2, 32, keep=keep))["input_ids"].numpy()
    assert np.all((ids < N_SPECIAL) | (ids >= 1000))
    p = keep_probabilities([0.5, 1e-4, 1e-6], 1.0, 1e-4)
    assert p[0] == pytest.approx(2e-4) and p[1] == 1.0 and p[2] == 1.0


def test_heldout_batches_are_deterministic_masked_and_need_no_pad_token():
    from transformers import PreTrainedTokenizerFast

    from tanbias.lab.tokenizer import TOKENIZER_PATH

    tok = PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_PATH), bos_token="<s>", eos_token="</s>")
    assert tok.pad_token_id is None and tok.mask_token_id is None
    a = heldout_batches(tok, "decoder", 300, 50, seed=1, batch_size=4)
    b = heldout_batches(tok, "decoder", 300, 50, seed=1, batch_size=4)
    c = heldout_batches(tok, "decoder", 300, 50, seed=2, batch_size=4)
    assert [x["input_ids"].shape for x in a] == [(4, 50), (2, 50)]       # 300 tokens = 6 rows
    assert all(torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(a, b))
    assert not torch.equal(a[0]["input_ids"], c[0]["input_ids"])
    assert torch.equal(a[0]["labels"], a[0]["input_ids"])
    with pytest.raises(ParameterError, match="kind='encoder'"):
        heldout_batches(tok, "encoder", 100, 50)

    enc = heldout_batches(load_tokenizer(), "encoder", 4096, 128, seed=0)
    x = torch.cat([e["input_ids"] for e in enc])
    y = torch.cat([e["labels"] for e in enc])
    scored = y != -100
    assert 0.25 < scored.float().mean() < 0.35 and (y[scored] >= N_SPECIAL).all()
    assert 0.7 < (x[scored] == 4).float().mean() < 0.9 and (x[~scored] != 4).all()
    counts = token_counts([original_ids(e) for e in enc], 8192)
    assert counts.sum() == 4096 and counts[4] == 0           # counts of the uncorrupted text


def test_one_masking_rule_for_every_tokenizer(tokenizer):
    """mask_tokens with a tokenizer's own special and mask ids is the lab's masking for the lab's."""
    ids = torch.randint(N_SPECIAL, len(tokenizer), (4, 64), generator=torch.Generator().manual_seed(1))
    ids[:, 0] = 1
    a = mask_tokens(ids, len(tokenizer), generator=torch.Generator().manual_seed(2))
    b = mask_tokens(ids, len(tokenizer), generator=torch.Generator().manual_seed(2), special=special_ids(tokenizer),
                    mask_id=tokenizer.mask_token_id)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert (a[1][:, 0] == -100).all()                        # a special token is never selected
    replaced = (a[1] != -100) & (a[0] != tokenizer.mask_token_id) & (a[0] != ids)
    assert (a[0][replaced] >= N_SPECIAL).all()               # random replacements are never special
    with pytest.raises(ParameterError, match="mlm_probability=1"):
        mask_tokens(ids, len(tokenizer), mlm_probability=1)


def test_heldout_text_reads_in_order_and_refuses_more_than_there_is(tokenizer):
    rr = heldout_text(tokenizer, 2000, 100, seed=3, languages=["pt", "de"], order="round_robin", special_tokens=False)
    assert rr["input_ids"].shape == (20, 100) and rr["languages"] == ["pt", "de"]
    assert rr["language"][0, 0] == "pt" and set(np.unique(rr["language"])) == {"pt", "de"}
    assert not np.isin(rr["input_ids"], special_ids(tokenizer)).any()           # the text alone
    mix = heldout_text(tokenizer, 2000, 100, seed=3)
    assert mix["input_ids"][0, 0] == tokenizer.bos_token_id and (mix["input_ids"] == tokenizer.eos_token_id).any()
    with pytest.raises(ParameterError, match=r"n_tokens=10000000 is out of range: the held-out documents"):
        heldout_text(tokenizer, 10_000_000, 128, languages=["pt"], order="round_robin")
    with pytest.raises(ParameterError, match="order='random'"):
        heldout_text(tokenizer, 100, 10, order="random")


def test_the_common_text_is_one_text_per_kind(tokenizer):
    from tanbias.lab.config import RunConfig

    a = RunConfig(name="a", kind="decoder", size="smoke", regime="natural", seed=0)
    b = RunConfig(name="b", kind="decoder", size="smoke", regime="balanced", seed=5)
    x, y = Stream.from_config(a, tokenizer).common(2), Stream.from_config(b, tokenizer).common(2)
    assert all(torch.equal(p["input_ids"], q["input_ids"]) for p, q in zip(x, y))
    assert x[0]["input_ids"].shape == (a.size.batch_size, a.size.seq_len)


@pytest.mark.parametrize("kind", ["decoder", "encoder"])
def test_probe_eval_batches_are_distinct_and_one_text_for_every_seed(tokenizer, kind):
    """The batches scored at a run's probe steps: distinct batches (the committed dose runs scored
    one batch twice), the same text (and masks) for every seed of a design, and text of the run's
    own training distribution (the subsampling knob applies to it)."""
    runs = [Stream.from_config(dose_config(kind, "b37", seed, **SMOKE), tokenizer) for seed in (0, 1, 2)]
    batches = [s.probe_eval(3) for s in runs]
    assert len(batches[0]) == 3
    first = batches[0]
    for i in range(3):
        for j in range(i):
            assert not torch.equal(first[i]["input_ids"], first[j]["input_ids"]), (i, j)
    for other in batches[1:]:
        for a, b in zip(first, other):
            assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["labels"], b["labels"])
    # the run's own data settings still apply: another level, another text
    skewed = Stream.from_config(dose_config(kind, "skewed", 1, **SMOKE), tokenizer).probe_eval(1)
    assert not torch.equal(skewed[0]["input_ids"], first[0]["input_ids"])
    # the training stream stays the run's own: seeds differ there
    a, b = (next(s.training())["input_ids"] for s in runs[:2])
    assert not torch.equal(a, b)


# --------------------------------------------------------------------------- a run's stream
def test_a_stream_is_what_its_config_describes_derived_once(tokenizer):
    from tanbias.lab.experiments import alias_config

    cfg = alias_config("encoder", "k3", 2, **SMOKE)
    s = Stream.from_config(cfg, tokenizer)
    assert (s.kind, s.seed, s.languages, s.batch_size, s.seq_len) == ("encoder", 2, ("en", "de"), 4, 32)
    assert s.mixture == {"regime": cfg.regime, "temperature": cfg.mixture_temperature,
                         "weights": cfg.language_weights}
    # each part is derived once and kept: the same object on every read, and not writable
    assert s.frequencies is s.frequencies and s.aliases is s.aliases and s.documents is s.documents
    with pytest.raises(ValueError, match="read-only"):
        s.frequencies[0] = 1.0
    assert s.n_inputs == s.aliases.n_inputs > len(tokenizer)
    # every batch method starts its stream afresh: two reads give the same batches
    assert torch.equal(next(s.training())["input_ids"], next(s.training())["input_ids"])
    # the validation stream is seeded by the run's seed plus the offset; the probe-eval text by one seed
    v = next(s.validation())["input_ids"]
    assert torch.equal(v, next(s.validation(2 + VALIDATION_SEED_OFFSET))["input_ids"])
    assert torch.equal(s.probe_eval(1)[0]["input_ids"], next(s.validation(PROBE_EVAL_SEED))["input_ids"])


@pytest.mark.parametrize("kind", ["decoder", "encoder"])
def test_target_counts_are_the_scored_ids_of_the_first_steps(tokenizer, kind):
    """What an output bias initialised to the run's own training unigram is built from: the ids
    the loss is scored on in the run's first steps, an aliased run's types included."""
    from tanbias.lab.experiments import alias_config

    s = Stream.from_config(alias_config(kind, "k3", 0, **SMOKE), tokenizer)
    it = s.training()
    want = np.bincount(np.concatenate([batch_targets(kind, next(it)).numpy() for _ in range(3)]),
                       minlength=len(tokenizer))
    got = s.target_counts(3)
    assert got.dtype == np.int64 and np.array_equal(got, want) and got.size == len(tokenizer)
    if kind == "encoder":
        assert got[:N_SPECIAL].sum() == 0                   # a special token is never a masked target
    else:
        assert got.sum() == 3 * s.batch_size * (s.seq_len - 1)  # every position but each row's first
    assert s.target_counts(0).sum() == 0
    with pytest.raises(ParameterError, match="steps=-1"):
        s.target_counts(-1)


# ----------------------------------------------------------------------------- the corruption option
def test_random_corruption_selects_the_same_positions_and_shows_no_mask_row():
    from tanbias.lab.config import MASK_ID, N_SPECIAL
    from tanbias.lab.data import mask_tokens

    ids = torch.arange(N_SPECIAL, N_SPECIAL + 4000).reshape(20, 200) % 3000 + N_SPECIAL
    xm, ym = mask_tokens(ids, 4000, 0.15, torch.Generator().manual_seed(3))
    xr, yr = mask_tokens(ids, 4000, 0.15, torch.Generator().manual_seed(3), corruption="random")
    assert torch.equal(ym, yr)                                   # the same positions, the same targets
    shown = xm == MASK_ID
    assert shown.any() and not (xr == MASK_ID).any()
    assert torch.equal(xm[~shown], xr[~shown])                   # only the <mask> positions differ
    assert bool((xr[shown] >= N_SPECIAL).all())                  # ... and show ordinary tokens instead
    with pytest.raises(ParameterError, match="corruption"):
        mask_tokens(ids, 4000, 0.15, corruption="blank")


def test_a_random_corruption_run_streams_the_mask_runs_text_and_targets():
    from tanbias.lab.config import MASK_ID, RunConfig
    from tanbias.lab.data import Stream

    base = {"name": "x", "kind": "encoder", "size": "smoke", "languages": ["pt"], "steps": 4}
    mask = Stream.from_config(RunConfig.from_dict(base))
    rand = Stream.from_config(RunConfig.from_dict({**base, "corruption": "random"}))
    for a, b in ((next(mask.training()), next(rand.training())), (mask.common(1)[0], rand.common(1)[0])):
        assert torch.equal(a["labels"], b["labels"])
        assert (a["input_ids"] == MASK_ID).any() and not (b["input_ids"] == MASK_ID).any()
