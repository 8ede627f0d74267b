"""Input aliasing (tanbias.lab.aliasing, and its use in data, models and train): chapter 11's aliasing knob.

What the aliasing is tested for: the targets are unchanged, the ids follow the stated k, each
alias's frequency is f/k within sampling error, and a run killed and resumed gives identical
losses. Also: the map and its inverse, the extended embedding, the convergence measure.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from tanbias.errors import ParameterError
from tanbias.lab.aliasing import AliasMap, alias_convergence, alias_counts, convergence_targets, input_collision
from tanbias.lab.config import N_SPECIAL, RunConfig
from tanbias.lab.data import Stream, alias_batch, lm_batches, original_ids
from tanbias.lab.tokenizer import load_tokenizer

SMOKE = {"name": "alias-smoke", "kind": "decoder", "size": "smoke", "steps": 10, "languages": ["en"],
         "checkpoint_every": 4, "eval_batches": 1, "alias": 1.0, "alias_f0": 1e-3,
         "probe": {"n_steps": 4, "rank": 4, "local_rank": 2, "min_count": 4}}


# ---------------------------------------------------------------- the map
def test_alias_counts_follow_the_stated_rule():
    f = np.array([0.3, 0.2, 0.1, 0.05, 0.004, 0.001, 1e-4, 0.0])
    k = alias_counts(f, 0.5, 1e-3, n_special=1)
    expect = [1] + [max(1, round((x / 1e-3) ** 0.5)) if x > 1e-3 else 1 for x in f[1:]]
    assert k.tolist() == expect
    assert alias_counts(f, 0.0, 1e-3).tolist() == [1] * len(f)          # exponent 0: nothing aliased
    assert (np.diff(alias_counts(np.sort(f)[::-1], 0.7, 1e-3, n_special=0)) <= 0).all()   # k grows with f


@pytest.mark.parametrize("kw, name", [({"exponent": -0.1}, "alias="), ({"exponent": 3}, "alias="),
                                      ({"f0": 0}, "alias_f0="), ({"f0": 1.5}, "alias_f0=")])
def test_alias_counts_refuse_bad_settings_by_name(kw, name):
    args = {"exponent": 0.5, "f0": 1e-3} | kw
    with pytest.raises(ParameterError, match=name):
        alias_counts([0.5, 0.5], args["exponent"], args["f0"])


def test_input_collision_is_sum_p2_over_k():
    f = np.array([0.0, 0.5, 0.3, 0.2])
    k = np.array([1, 4, 2, 1])
    p = f[1:] / f[1:].sum()
    assert input_collision(f, k, n_special=1) == pytest.approx(np.sum(p ** 2 / k[1:]))


def test_alias_map_layout_and_inverse():
    m = AliasMap.from_counts(np.array([1, 1, 3, 1, 5, 2]))
    assert m.n_inputs == 6 + 2 + 4 + 1
    every = [a for w in range(6) for a in m.aliases(w)]
    assert sorted(every) == list(range(m.n_inputs))                    # every row belongs to one type
    assert m.type_of(every).tolist() == [w for w in range(6) for _ in m.aliases(w)]
    assert m.alias_id([4, 4, 4], [0, 1, 6]).tolist() == [4, m.aliases(4)[1], m.aliases(4)[1]]
    with pytest.raises(ParameterError, match="ids span"):
        m.type_of([m.n_inputs])
    with pytest.raises(ParameterError, match="alias counts"):
        AliasMap.from_counts([1, 0, 2])


def test_each_alias_appears_f_over_k_as_often():
    """Uniform draws: a type's k aliases share its occurrences equally (a chi-square test), and
    every occurrence is one of its own aliases."""
    m = AliasMap.from_counts(np.array([1, 1, 7, 1, 3]))
    ids = torch.tensor(np.random.default_rng(0).choice([1, 2, 3, 4], size=(200, 100), p=[0.1, 0.5, 0.1, 0.3]))
    shown = m.apply(ids, torch.Generator().manual_seed(1))
    assert torch.equal(torch.as_tensor(m.type_of(shown.numpy())), ids)           # aliases of the right type
    for w in (2, 4):
        c = np.bincount(shown[ids == w].numpy(), minlength=m.n_inputs)[m.aliases(w)]
        assert len(c) == m.k[w] and (c > 0).all()
        assert stats.chisquare(c).pvalue > 1e-3                              # f/k each, within sampling error
    assert torch.equal(shown[ids == 1], ids[ids == 1]) and torch.equal(shown[ids == 3], ids[ids == 3])


# ---------------------------------------------------------------- batches
@pytest.fixture(scope="module")
def streams():
    tok = load_tokenizer()
    out = {}
    for kind in ("decoder", "encoder"):
        cfg = RunConfig.from_dict({**SMOKE, "kind": kind})
        aliased = Stream.from_config(cfg, tok)
        a, p = aliased.training(), Stream.from_config(RunConfig.from_dict({**SMOKE, "kind": kind, "alias": 0.0}),
                                                       tok).training()
        out[kind] = (aliased, [next(a) for _ in range(6)], [next(p) for _ in range(6)], aliased.aliases)
    return out


@pytest.mark.parametrize("kind", ["decoder", "encoder"])
@pytest.mark.slow
def test_aliasing_keeps_the_targets_and_the_text(streams, kind):
    _, aliased, plain, m = streams[kind]
    assert m is not None and m.n_inputs > m.vocab
    for a, p in zip(aliased, plain):
        assert torch.equal(a["labels"], p["labels"])                 # the loss's targets: the types
        assert torch.equal(a["types"], original_ids(p))               # the same text
        assert torch.equal(torch.as_tensor(m.type_of(a["aliased"].numpy())), a["types"])
        # what the model is shown: where the plain input is the text, an alias of that type;
        # where the encoder corrupted it, an alias of the corrupted input (<mask> itself)
        assert torch.equal(torch.as_tensor(m.type_of(a["input_ids"].numpy())), p["input_ids"])
    ids = torch.cat([a["input_ids"].ravel() for a in aliased])
    assert int(ids.max()) >= m.vocab                                  # new rows are used
    assert (ids[ids >= m.vocab] < m.n_inputs).all()


def test_ids_follow_the_stated_k(streams):
    stream, aliased, _, m = streams["decoder"]
    assert m.k.tolist() == alias_counts(stream.frequencies, stream.alias, stream.alias_f0).tolist()
    shown = torch.cat([a["aliased"].ravel() for a in aliased]).numpy()
    types = torch.cat([a["types"].ravel() for a in aliased]).numpy()
    for w in np.unique(types):
        used = set(shown[types == w].tolist())
        assert used <= set(m.aliases(int(w)))                          # never another type's alias
    top = np.bincount(types).argmax()
    n, k = int((types == top).sum()), int(m.k[top])
    seen = len(set(shown[types == top].tolist()))
    assert k > 1 and abs(seen - k * (1 - (1 - 1 / k) ** n)) < 0.4 * k     # distinct aliases of n uniform draws


def test_an_unaliased_stream_is_bit_identical_to_one_without_the_option():
    tok = load_tokenizer()
    from tanbias.lab.corpus import mixture, split

    docs, _ = split(["en"])
    a = lm_batches("encoder", mixture(docs, seed=3), tok, 4, 32, seed=3)
    b = lm_batches("encoder", mixture(docs, seed=3), tok, 4, 32, seed=3, aliases=None)
    for _ in range(3):
        x, y = next(a), next(b)
        assert x.keys() == y.keys() == {"input_ids", "labels"}
        assert torch.equal(x["input_ids"], y["input_ids"]) and torch.equal(x["labels"], y["labels"])


def test_alias_batch_doctest_case_masks_stay_masks():
    m = AliasMap.from_counts(np.array([1] * N_SPECIAL + [1, 4]))
    types = torch.tensor([[N_SPECIAL + 1] * 6])
    inputs = types.clone()
    inputs[0, 2] = 4                                                  # <mask>
    b = alias_batch({"input_ids": inputs, "labels": types}, types, m, torch.Generator().manual_seed(0))
    assert int(b["input_ids"][0, 2]) == 4 and torch.equal(b["labels"], types)


# ---------------------------------------------------------------- model and training
def test_config_refuses_aliasing_a_tied_model_and_bad_values():
    with pytest.raises(ParameterError, match="tie_embeddings"):
        RunConfig.from_dict({**SMOKE, "tie_embeddings": True})
    with pytest.raises(ParameterError, match="alias=2.5"):
        RunConfig.from_dict({**SMOKE, "alias": 2.5})


@pytest.mark.slow
def test_extended_embedding_keeps_the_unaliased_model_and_draws_its_own_rows():
    from tanbias.lab.models import make_model

    a = make_model("encoder", "smoke", vocab_size=100, seed=2)
    b = make_model("encoder", "smoke", vocab_size=100, seed=2, n_inputs=160)
    wa, wb = a.get_input_embeddings().weight, b.get_input_embeddings().weight
    assert wb.shape == (160, wa.shape[1]) and torch.equal(wa, wb[:100])
    assert all(torch.equal(p, q) for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters())
               if "embed" not in n)                                   # output layer: still 100 rows
    assert 0.015 < float(wb[100:].std()) < 0.025                      # N(0, 0.02^2), like the rest
    with pytest.raises(ParameterError, match="n_inputs"):
        make_model("encoder", "smoke", vocab_size=100, n_inputs=50)


@pytest.mark.slow
def test_a_killed_aliased_run_resumes_with_identical_losses(tmp_path):
    from tanbias.lab.runs import read_jsonl
    from tanbias.lab.train import Interrupted, train

    whole = train(SMOKE, out_dir=tmp_path / "whole", progress=False)
    with pytest.raises(Interrupted):
        train(SMOKE, out_dir=tmp_path / "killed", stop_after=6, progress=False)
    resumed = train(SMOKE, out_dir=tmp_path / "killed", progress=False)
    a, b = (read_jsonl(tmp_path / d / "metrics.jsonl") for d in ("whole", "killed"))
    assert [r["loss"] for r in a if r["type"] == "step"] == [r["loss"] for r in b if r["type"] == "step"]
    assert resumed["resume_mismatches"] == 0 and resumed["eval"] == whole["eval"]
    conv = lambda log: sorted((r["step"], len(r["rows"])) for r in log if r["type"] == "alias")  # noqa: E731
    assert conv(a) == conv(b) and conv(a)[-1][0] == 10                # measured at every probe step and the end
    for name in ("input_counts.npy", "token_counts.npy"):
        assert np.array_equal(np.load(tmp_path / "whole" / name), np.load(tmp_path / "killed" / name))
    ic = np.load(tmp_path / "whole" / "input_counts.npy")
    assert ic.sum() == np.load(tmp_path / "whole" / "token_counts.npy").sum() and ic.size > 8192


# ---------------------------------------------------------------- convergence
def test_convergence_targets_take_the_most_frequent_aliased_types():
    m = AliasMap.from_counts(np.array([1, 2, 2, 1, 3]))
    types = np.array([1] * 5 + [2] * 9 + [3] * 20 + [4] * 3)
    assert convergence_targets(m, types, np.ones(types.size, bool), n_types=3, min_count=4).tolist() == [2, 1]


class _Toy(torch.nn.Module):
    """Embedding + a "block" that adds a context vector per position: an alias's own embedding
    survives in proportion to ``keep``."""

    def __init__(self, n_inputs, d, keep, shape):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.emb = torch.nn.Embedding.from_pretrained(torch.randn(n_inputs, d, generator=g))
        self.context = torch.randn(*shape, d, generator=g) * 0.5
        self.keep = keep
        self.block = torch.nn.Identity()

    def forward(self, input_ids):
        return self.block(self.keep * self.emb(input_ids) + self.context)


def test_alias_convergence_reads_separate_and_merged_aliases():
    m = AliasMap.from_counts(np.array([1] * N_SPECIAL + [1] * 10 + [4]))
    w = N_SPECIAL + 10
    g = torch.Generator().manual_seed(5)
    types = torch.randint(N_SPECIAL, N_SPECIAL + 11, (4, 16), generator=g)
    types[:, 3::4] = w
    batch = alias_batch({"input_ids": types.clone(), "labels": types.clone()}, types, m, g)
    ratios = {}
    for keep in (1.0, 0.0):
        toy = _Toy(m.n_inputs, 8, keep, types.shape)
        rows = alias_convergence(toy, [toy.emb, toy.block], batch, m, seq_len=16, n_types=1, min_count=4)
        assert [(r["type_id"], r["k"], r["shown"]) for r in rows] == [(w, 4, 4)]
        assert rows[0]["n"] == int((types == w)[:, 1:].sum())             # position 0 left out
        ratios[keep] = rows[0]["ratio"]
    assert ratios[1.0] > 1.0          # the alias's own embedding dominates: separate clouds
    assert ratios[0.0] == 0.0         # only the context, the same in every showing: one cloud
