"""Chapter 9's measurements on any model: what ``python -m tanbias measure MODEL`` runs.

:func:`measure_model` runs on one checkpoint (or a series of them) what chapter 9
runs on the zoo (:mod:`tanbias.lab.analysis.pretrained`, whose functions it calls:
one source for each measurement), with chapter 9's settings
(:class:`~tanbias.lab.analysis.pretrained.MeasureSettings`, :func:`tanbias.lab.analysis.measure_inputs.measure_settings`):

* the premise under its three count-matched readings, with the bootstrap over
  documents (``premise.csv``, ``types.csv``);
* anisotropy with and without the first position (``anisotropy.csv``), and beside
  it the rival accounts' readings and the shape of the centred cloud (:func:`anisotropy_readings`:
  the records of :data:`tanbias.theory.anisotropy.METRICS` the command reads);
* the checkpoint alignment test with its random-initialisation null
  (``alignment.csv``: models with a language-model head);
* curvature visibility (``curvature.csv``).

Every metric that needs activations only reads one forward pass per language
(:func:`tanbias.lab.analysis.pretrained.hidden_states`); the alignment test runs
its own forward and backward passes on two shorter texts. A measurement is two steps:
:func:`measure_revision` measures one checkpoint into a :class:`Measurement`, and
:func:`write_measurement` writes its tables, its report and its manifest.

``MODEL`` is a zoo name (:data:`tanbias.lab.zoo.ZOO`: measured with chapter 9's
settings, so its tables are those of ``data/pretrained/<name>/`` for the same text
and tokens), a local folder that ``transformers`` loads (a causal LM, a masked LM
or a bare encoder of an architecture in :data:`tanbias.lab.loading.ARCHITECTURES`), a hub id where
the network allows, or a folder of checkpoint folders (``step0/``, ``step1000/``
...): a series of revisions gives trajectories over training (``trajectory.csv``).

Writes, atomically (:func:`tanbias.lab.analysis.measure_folder.staged_folder`: a staged folder
beside ``out``, renamed once complete: an error or an interruption leaves nothing half-written
under ``out``), the tables
in the form of ``data/pretrained/`` (a ``revision`` and a ``step`` column first
for a series), ``report.html`` when a report builder is given, and
``manifest.json`` last: the weights' sha256, the settings, the tokens read, the
seconds of each stage, the peak memory and the package's version. The command line
itself is :mod:`tanbias.lab.measure_command`; the model is loaded by :mod:`tanbias.lab.loading`,
the settings and the text checked by :mod:`tanbias.lab.analysis.measure_inputs`, the folder kept
and read back by :mod:`tanbias.lab.analysis.measure_folder`; what the page and the report read of
a measurement is :mod:`tanbias.lab.analysis.measure_report`.
"""
from __future__ import annotations

import functools
import gc
import json
import os
import shlex
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import tanbias
from tanbias.errors import ParameterError
from tanbias.lab.analysis import pretrained as pt
from tanbias.lab.analysis.measure_folder import COMMAND, check_out, results_of, staged_folder
from tanbias.lab.analysis.measure_inputs import fit_text, measure_settings, read_documents, text_checks
from tanbias.lab.analysis.pretrained import MeasureSettings
from tanbias.lab.analysis.tables import add_log_enrichment, mean_over_layers, single_thread_blas
from tanbias.lab.checkpoints import revision_steps
from tanbias.lab.devices import resolve_device
from tanbias.lab.loading import check_dtype, load_model, model_revisions
from tanbias.lab.runs import atomic_write_text, git_commit, sha256
from tanbias.theory import anisotropy as rival_anisotropy

__all__ = ["anisotropy_readings", "ANISOTROPY_METRICS", "output_spectrum", "Measurement", "measure_model",
           "measure_revision", "write_measurement", "trajectory_table"]

# THE RIVAL ANISOTROPY METRICS PLUG IN HERE.
def anisotropy_readings(Y, type_ids, spectrum=None) -> dict:
    """More readings of one layer's anisotropy, beside chapter 9's: the command's.

    :func:`tanbias.theory.anisotropy.measure_readings` of the layer's rows without the first
    position (``Y``, ``(n, D)``) and their types, one column per record of
    :data:`tanbias.theory.anisotropy.METRICS` that the command computes: ``raw`` (the exact mean
    cosine over all pairs, where chapter 9's ``mean_cosine`` samples 20,000), ``mean_share`` (the
    mean vector's share of the squared norm: what the raw mean cosine mostly measures),
    ``cosine_top_share`` (the top three coordinates' share of the mean cosine itself),
    ``top_share`` (their share of the variance), ``standardised``, ``type_balanced`` and
    ``participation_ratio`` (read off ``spectrum``, the eigenvalues of the rows' scatter matrix
    that chapter 9's anisotropy computed, when given). Each account of anisotropy without a
    tangent bias names the correction that should remove it if it is right (the rivals
    chapter). Rows of norm 0 are left out. The columns of ``anisotropy.csv`` that
    :data:`ANISOTROPY_METRICS` adds; chapter 9's own tables never carry them. The lab's runs read
    :func:`tanbias.theory.anisotropy.readings` instead (``rivals.csv``).

    Example
    -------
    >>> rng = np.random.default_rng(0)
    >>> r = anisotropy_readings(rng.normal(size=(500, 8)) + 5.0, rng.integers(0, 20, 500))
    >>> list(r) == list(rival_anisotropy.MEASURE_READINGS), round(r["mean_share"], 1)
    (True, 1.0)
    """
    Y = np.asarray(Y, np.float64)
    live = np.linalg.norm(Y, axis=1) > 0
    if not live.all():
        Y, type_ids, spectrum = Y[live], np.asarray(type_ids)[live], None
    return rival_anisotropy.measure_readings(Y, type_ids=np.asarray(type_ids), spectrum=spectrum)


#: The anisotropy readings the command adds to chapter 9's, per layer: ``metrics(Y, type_ids)``
#: of :func:`tanbias.lab.analysis.pretrained.layer_tables` (None: chapter 9's alone).
ANISOTROPY_METRICS = anisotropy_readings


def output_spectrum(net):
    """The singular spectrum of a model's output matrix (its unembedding), or None without one.

    Returns
    -------
    pandas.DataFrame or None
        One row per singular value, largest first: ``rank`` (1, 2, ...), ``dims`` (the matrix's
        smaller side, D), ``singular_value``, ``share`` (its square's share of the sum of
        squares) and ``cumulative`` (the shares summed so far): an isotropic matrix has
        ``cumulative`` = ``rank / dims``
        (:func:`tanbias.theory.anisotropy.singular_spectrum`).
    """
    import pandas as pd

    out = net.get_output_embeddings()
    if out is None or getattr(out, "weight", None) is None:
        return None
    sv = rival_anisotropy.singular_spectrum(out.weight.detach().float().cpu().numpy())
    share = sv ** 2 / float((sv ** 2).sum())
    return pd.DataFrame({"rank": np.arange(1, len(sv) + 1), "dims": len(sv), "singular_value": sv,
                         "share": share, "cumulative": np.cumsum(share)})


def _check_tokenizer(loaded: dict, name: str, alignment: bool) -> None:
    """The special tokens the measurement needs: an encoder's start and end tokens (its rows are
    framed as it was trained), a masked LM's mask token (the alignment test masks tokens)."""
    tok, kind = loaded["tokenizer"], loaded["kind"]
    start, end = pt.frame_tokens(tok)
    if kind == "encoder" and (start is None or end is None):
        missing = " and no ".join(w for w, i in (("start token ([CLS] or <s>)", start),
                                                 ("end token ([SEP] or </s>)", end)) if i is None)
        raise ParameterError(f"model={name!r} is not allowed: its tokenizer ({type(tok).__name__}) has no "
                             f"{missing}: valid range is an encoder whose tokenizer frames its rows as it "
                             "was trained. Save the model's own tokenizer beside it.")
    if kind == "encoder" and loaded["head"] and alignment and tok.mask_token_id is None:
        raise ParameterError(f"model={name!r} is not allowed with the alignment test: its tokenizer has no mask "
                             "token, and the test masks tokens for the masked-LM loss. Save the model's own "
                             "tokenizer beside it, or pass --no-alignment.")


# ---------------------------------------------------------------------------------- measuring
@dataclass
class Measurement:
    """One measurement under way: what :func:`measure_revision` adds to, checkpoint after checkpoint,
    and :func:`write_measurement` writes.

    ``model``, ``settings``, ``device``, the ``revisions`` and their ``steps`` (``series``: they
    are labelled in the tables), the ``text`` of one's own (its path) and its ``docs``, whether
    to run the alignment test and show ``progress``; then what the checkpoints add: the tables'
    ``frames``, the ``seconds`` of each stage, ``notes``, each language's text and frequencies
    (read once, from the first checkpoint), the ``first`` checkpoint's description, the
    documents and tokens read per language.
    """
    model: str | os.PathLike
    settings: MeasureSettings
    device: torch.device       # a name only (the module imports torch where it measures)
    revisions: list
    steps: list
    series: bool = False
    text: str | None = None
    docs: list | None = None
    alignment: bool = True
    progress: bool = True
    argv: list | None = None
    dtype: str = "float32"
    started: float = field(default_factory=time.perf_counter)
    frames: dict = field(default_factory=lambda: {k: [] for k in (*pt.TABLES, "alignment", "spectrum")})
    seconds: dict = field(default_factory=lambda: dict.fromkeys(
        ("load", "frequencies", "forward", "analysis", "probe", "report"), 0.0))
    notes: list = field(default_factory=list)
    texts: dict = field(default_factory=dict)
    frequencies: dict = field(default_factory=dict)
    first: dict | None = None
    documents: dict = field(default_factory=dict)
    measured: dict = field(default_factory=dict)
    n_read: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The model as named (a zoo name, a folder, a hub id)."""
        return os.fspath(self.model)

    @property
    def documents_of(self) -> dict | None:
        """A text of one's own as ``{language: documents}`` (None: the corpus' held-out documents)."""
        return None if self.docs is None else {self.settings.languages[0]: self.docs}


def _peak_gb(device) -> dict:
    import torch

    out = {"peak_rss_gb": pt.peak_rss_gb()}
    if device.type == "cuda":
        out["peak_device_gb"] = torch.cuda.max_memory_allocated(device) / 2 ** 30
    return out


def measure_model(model, out=None, settings: MeasureSettings | None = None, *, text=None, revisions=None,
                  alignment: bool = True, device="cpu", progress: bool = True, report=None, argv=None,
                  dtype: str = "float32", **overrides) -> dict:
    """Measure a model (or a series of its checkpoints) and write its folder (the module docstring).

    ``model`` is a zoo name, a local folder (a checkpoint, or a folder of checkpoint
    folders: all of them, or ``revisions``) or a hub id (with ``revisions``); ``out`` the
    folder to write (:func:`tanbias.lab.analysis.measure_folder.check_out`; default ``measure-<name>``). ``settings`` and
    ``overrides`` as :func:`tanbias.lab.analysis.measure_inputs.measure_settings` takes them (``n_tokens`` bounds the time and the
    memory: the hidden states kept are ``(L + 1) x n_tokens x D`` float32); ``text`` a UTF-8
    file of one's own (:func:`tanbias.lab.analysis.measure_inputs.read_documents`); ``alignment``: run the alignment test (a model
    with a language-model head); ``device``: :data:`tanbias.lab.devices.DEVICES`; ``dtype``: the
    parameters' type in the forward passes (:data:`tanbias.lab.loading.DTYPES`, checked on ``device`` first);
    ``report(tables) -> str``: the HTML written as ``report.html`` (``tables`` as
    :func:`tanbias.lab.analysis.measure_folder.load_measurement` returns them, the manifest without its final timings); ``argv``:
    the command line that asked for it, recorded in the manifest.

    Returns
    -------
    dict
        The manifest, with ``out`` (the folder written).

    Raises
    ------
    ParameterError, CorruptFileError, tanbias.lab.checkpoints.CheckpointUnavailable, tanbias.lab.zoo.ZooUnavailable
        Before anything is written when the arguments are wrong; nothing is left under ``out``
        when the measurement fails.
    """
    started = time.perf_counter()
    dev = resolve_device(device)
    check_dtype(dtype, dev)
    docs = read_documents(text) if text is not None else None
    s = measure_settings(model, settings, text=docs is not None, **overrides)
    revs = model_revisions(model, revisions)
    series = revisions is not None or len(revs) > 1
    slug = Path(os.fspath(model).rstrip("/\\")).name or "model"
    out = check_out(Path(out) if out is not None else Path(f"measure-{slug}"))
    run = Measurement(model, s, dev, revs, revision_steps(revs) if series else [0], series,
                      text=os.fspath(text) if text is not None else None, docs=docs, alignment=alignment,
                      progress=progress, argv=argv, started=started, dtype=dtype)
    _reset_peak(dev)
    with staged_folder(out) as tmp, warnings.catch_warnings():
        # the embeddings' readings do not vary (every occurrence of a type is one vector): their
        # correlations are NaN by design, and numpy says so at every layer 0
        warnings.filterwarnings("ignore", "Mean of empty slice|Degrees of freedom <= 0", RuntimeWarning)
        for i, (rev, step) in enumerate(_progress_bar(list(zip(run.revisions, run.steps)), progress)):
            if i:
                gc.collect()            # the last checkpoint's model, before the next one loads
            measure_revision(run, rev, step)
        manifest = write_measurement(run, tmp, report)
    return {**manifest, "out": str(out)}


def _reset_peak(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _progress_bar(items: list, progress: bool):
    if not progress or len(items) < 2:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc="revisions", unit="checkpoint")


def measure_revision(run: Measurement, revision, step: int) -> None:
    """Measure one checkpoint of ``run`` (``revision``, None for a folder's own, at ``step``) and
    add its rows to ``run``: every table in each language, then the alignment test.

    The first checkpoint fixes what every later one must share: each language's text (a
    checkpoint that reads it differently is refused) and its token frequencies, and the
    alignment test's random-init null (measured once, beside it).
    """
    first = run.first is None
    t0 = time.perf_counter()
    loaded = load_model(run.model, revision, run.device, run.progress, run.dtype)
    run.seconds["load"] += time.perf_counter() - t0
    net, tok, kind = loaded["model"], loaded["tokenizer"], loaded["kind"]
    _check_tokenizer(loaded, run.name, run.alignment)
    seq_len = min(run.settings.seq_len,
                  int(getattr(net.config, "max_position_embeddings", None) or run.settings.seq_len))
    if first:
        run.first = {**{k: v for k, v in loaded.items() if k not in ("model", "tokenizer")},
                     "seq_len": seq_len, "flops_per_token": pt.flops_per_token(net, seq_len)}
        if run.docs is not None:
            run.settings, notes = fit_text(run.settings, run.docs, run.text, tok, seq_len)
            run.notes += notes
    for lang in run.settings.languages:
        _measure_language(run, net, tok, kind, lang, seq_len, revision, step)
    t0 = time.perf_counter()
    with single_thread_blas():      # as the readings: OpenBLAS's threads on shared cores made its one
        spectrum = output_spectrum(net)   # eigenproblem take seconds (measured: 4 s for a 576 x 576)
    if spectrum is not None:
        run.frames["spectrum"].append(_label(spectrum, revision, step, run.series))
    run.seconds["analysis"] += time.perf_counter() - t0
    if run.alignment and loaded["head"]:
        _alignment_test(run, net, tok, kind, seq_len, revision, step, null=first)
    elif first:
        run.notes.append("alignment test not run: " + ("--no-alignment" if not run.alignment else
                                                       f"{loaded['arch']} has no language-model head"))
    del net, tok, loaded


def _measure_language(run: Measurement, net, tok, kind: str, lang: str, seq_len: int, revision, step: int) -> None:
    s = run.settings
    t = pt.language_text(tok, kind, lang, s, seq_len, run.documents_of)
    if lang not in run.texts:
        text_checks(t, tok, s, lang, run.text)
        run.texts[lang] = t
        t0 = time.perf_counter()
        vocab = int(max(len(tok), net.get_input_embeddings().weight.shape[0]))
        run.frequencies[lang] = pt.corpus_frequencies(tok, [lang], vocab, s.frequency_docs)
        run.seconds["frequencies"] += time.perf_counter() - t0
    elif not np.array_equal(t["input_ids"], run.texts[lang]["input_ids"]):
        raise ParameterError(f"revisions={run.revisions!r} is not allowed for {run.name!r}: valid range is revisions "
                             f"that share one tokenizer ({revision!r} reads the text differently from "
                             f"{run.revisions[0]!r}). Measure them apart.")
    res = pt.measure_language(net, tok, kind, lang, s, seq_len, run.progress, run.documents_of, ANISOTROPY_METRICS,
                              text=t, frequency=run.frequencies[lang])
    for key, frame in res["tables"].items():
        run.frames[key].append(_label(frame, revision, step, run.series))
    for key in ("forward", "analysis"):
        run.seconds[key] += res["seconds"][key]
    run.notes += [n for n in res["notes"] if n not in run.notes]
    run.documents[lang], run.measured[lang], run.n_read[lang] = res["documents"], res["measured"], res["n_tokens"]


def _alignment_test(run: Measurement, net, tok, kind: str, seq_len: int, revision, step: int, null: bool) -> None:
    from tanbias.lab.analysis.checkpoint_probe import heldout_alignment      # here: it loads torch

    s = run.settings
    t0 = time.perf_counter()
    lang = "en" if "en" in s.languages else s.languages[0]
    a = heldout_alignment(net, tok, kind, n_tokens=s.probe_tokens, seq_len=seq_len, seed=s.seed, probe=s.probe,
                          language=lang, null=null, progress=run.progress, documents=run.documents_of)
    run.frames["alignment"].append(_label(a, revision, step, run.series))
    run.seconds["probe"] += time.perf_counter() - t0


def write_measurement(run: Measurement, folder, report=None) -> dict:
    """Write what ``run`` measured into ``folder``: its tables (and, for a series, the trajectory),
    the report (``report(tables) -> str``, when given) and the manifest, last.

    A report that cannot be drawn leaves a note in the manifest: the tables stand without it.

    Returns
    -------
    dict
        The manifest as written.
    """
    import pandas as pd

    folder = Path(folder)
    tables = {k: pd.concat(v, ignore_index=True) for k, v in run.frames.items() if v}
    if run.series:
        tables["trajectory"] = trajectory_table(tables)
    for key, frame in tables.items():
        atomic_write_text(folder / f"{key}.csv", frame.to_csv(index=False, float_format=pt.CSV_FLOAT))
    manifest = _manifest(run, folder, tables)
    if report is not None:
        _write_report(run, folder, {"manifest": manifest, **tables}, report)
    run.seconds["total"] = time.perf_counter() - run.started
    manifest.update({"seconds": run.seconds, "git": git_commit(), **_peak_gb(run.device)})
    # the manifest last: a folder without one is an unfinished measurement
    atomic_write_text(folder / "manifest.json", json.dumps(manifest, indent=1, default=_json_default) + "\n")
    return manifest


def _manifest(run: Measurement, folder: Path, tables: dict) -> dict:
    import torch
    import transformers

    s, first = run.settings, run.first
    n_total = sum(run.n_read.values()) * len(run.revisions)
    manifest = {
        "command": COMMAND, **({"command_line": shlex.join(run.argv)} if run.argv is not None else {}),
        "model": run.name, "revisions": [r if r is not None else "main" for r in run.revisions],
        "steps": run.steps if run.series else None, **{k: v for k, v in first.items() if k != "seq_len"},
        "settings": s.to_dict(), "languages": list(s.languages), "text": _text_record(run.text),
        "documents": run.documents, "n_tokens": n_total, "tokens_measured": run.measured, "seq_len": first["seq_len"],
        "device": str(run.device), "dtype": run.dtype, "versions": {"tanbias": tanbias.__version__, "torch": torch.__version__,
                                                "transformers": transformers.__version__},
        "notes": run.notes, "tables": {k: sha256(folder / f"{k}.csv") for k in tables},
    }
    forward = max(run.seconds["forward"], 1e-9)
    peak = _gemm_rate(str(run.device))
    manifest.update({"tokens_per_s": n_total / forward, "gemm_flops": peak,
                     "gemm_fraction": first["flops_per_token"] * n_total / forward / peak})
    return manifest


@functools.lru_cache(maxsize=4)
def _gemm_rate(device: str) -> float:
    """The device's matrix-multiply rate (:func:`tanbias.lab.models.gemm_peak` of 1,024 x 1,024 float32
    matrices), measured once per process: the reference of the manifest's ``gemm_fraction``."""
    from tanbias.lab.models import gemm_peak      # here: it loads torch

    return gemm_peak(n=1024, device=device)


def _write_report(run: Measurement, folder: Path, tables: dict, report) -> None:
    t0 = time.perf_counter()
    run.seconds["total"] = t0 - run.started            # so far: the manifest's last word comes after
    manifest = tables["manifest"]
    try:
        tables = {**tables, "manifest": {**manifest, "seconds": dict(run.seconds)}}
        html = report({**tables, "results": results_of(tables)})   # the words read here, not while drawing
    except Exception as exc:  # noqa: BLE001 - the tables stand without their report
        run.notes.append(f"the report could not be drawn ({type(exc).__name__}: {exc}); the tables are complete")
        warnings.warn(run.notes[-1], stacklevel=3)
    else:
        atomic_write_text(folder / "report.html", html)
        manifest["report"] = "report.html"
    run.seconds["report"] = time.perf_counter() - t0


def _json_default(obj):
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    if isinstance(obj, (tuple, set)):
        return list(obj)
    return str(obj)


def _text_record(text) -> dict:
    if text is None:
        return {"source": "corpus", "split": "validation (held-out documents, tanbias.lab.corpus)"}
    p = Path(text).expanduser()
    return {"source": "file", "path": str(p.resolve()), "sha256": sha256(p)}


def _label(frame, rev, step, series: bool):
    if not series:
        return frame
    frame = frame.copy()
    frame.insert(0, "step", int(step))
    frame.insert(0, "revision", rev if rev is not None else "main")
    return frame


def trajectory_table(tables: dict):
    """One row per revision and language: chapter 9's headline readings, to follow over training.

    ``rho_<reading>``, ``lo_<reading>``, ``hi_<reading>``: the matched ρ of log corpus
    frequency with each reading at the last layer, with its interval over documents;
    ``mean_cosine_max``, ``isoscore_min``, ``top1_share_max`` over the blocks (without the
    first position); ``curvature_median`` (the median normal-share slope over the blocks);
    with the alignment test, ``enrichment_gmean`` (the geometric mean of the enrichment over
    the layers, chapter 8's layer average) and ``enrichment_median`` (the median over the
    inner layers, chapter 9's), each for the checkpoint; the random-init copy's once, as
    ``null_enrichment_gmean`` and ``null_enrichment_median``.
    """
    import pandas as pd

    premise, an, curv = tables["premise"], tables["anisotropy"], tables["curvature"]
    L = int(an["layer"].max())
    m = int(premise.loc[premise["estimator"] == "matched", "m"].mode().iloc[0])
    rows = []
    null = {}
    al = tables.get("alignment")
    if al is not None:
        g = al[al["model"] == "random-init"]
        if len(g):
            null = {"null_enrichment_gmean": float(np.exp(np.log(g["enrichment"]).mean())),
                    "null_enrichment_median": float(g.loc[g["layer"].between(1, L - 1), "enrichment"].median())}
    for (rev, step, lang), a in an.groupby(["revision", "step", "language"], sort=False):
        row = {"revision": rev, "step": int(step), "language": lang}
        p = premise[(premise["revision"] == rev) & (premise["language"] == lang) & (premise["estimator"] == "matched")
                    & (premise["m"] == m) & (premise["source"] == "corpus") & (premise["layer"] == L)]
        for _, r in p.iterrows():
            row.update({f"rho_{r['reading']}": r["rho"], f"lo_{r['reading']}": r["lo"],
                        f"hi_{r['reading']}": r["hi"]})
        body = a[a["layer"] >= 1]
        row.update({"mean_cosine_max": float(body["mean_cosine"].max()),
                    "isoscore_min": float(body["isoscore_star"].min()),
                    "top1_share_max": float(body["top1_share"].max())})
        c = curv[(curv["revision"] == rev) & (curv["language"] == lang) & (curv["layer"] >= 1)]
        row["curvature_median"] = float(c["slope"].median()) if len(c) else float("nan")
        if al is not None:
            g = al[(al["revision"] == rev) & (al["model"] == "trained")]
            if len(g):
                gm = mean_over_layers(add_log_enrichment(g), ["revision"], ["log_enrichment"])
                row["enrichment_gmean"] = float(np.exp(gm["log_enrichment"].iloc[0]))
                row["enrichment_median"] = float(g.loc[g["layer"].between(1, L - 1), "enrichment"].median())
                row.update(null)
        rows.append(row)
    return pd.DataFrame(rows)
