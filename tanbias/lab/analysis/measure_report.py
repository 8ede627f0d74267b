"""What the page "Measure your own model" and the command's report read of measurements.

* :func:`findings` — what a measurement says, in sentences, read by chapter 9's rules from its
  results (:func:`tanbias.lab.analysis.pretrained_report.results`, computed when it is measured
  or read: :func:`tanbias.lab.analysis.measure_folder.results_of`);
* :func:`reference_readings` — the book's own models, to draw a measurement beside: the zoo
  measured by the command (:data:`ZOO_MEASURED_DIR`) and the lab's final runs;
* :func:`zoo_costs`, :func:`cost_rule`, :func:`rule_over_zoo`, :func:`installation` — what the
  command costs and needs;
* :func:`token_widths`, :func:`premise_width` — how the premise's interval narrows with the tokens;
* :func:`lab_trajectory` — what a real trajectory over training looks like;
* the page's tables, each header a word with its unit (:func:`cost_table`, :func:`estimate_table`,
  :func:`widths_table`, :func:`findings_table`).
"""
from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path

import numpy as np

from tanbias._checks import check_choice, check_int
from tanbias.errors import ParameterError
from tanbias.numerals import MINUS, format_number
from tanbias.lab import zoo
from tanbias.lab.analysis import pretrained as pt
from tanbias.lab.analysis.measure_folder import MEASURED_DIR, load_measurement, split_revisions
from tanbias.lab.analysis.measure_inputs import probe_tokens
from tanbias.lab.analysis.pretrained import MeasureSettings
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES, SINK_RATIO, row_ci
from tanbias.lab.analysis.tables import add_log_enrichment, mean_over_layers
from tanbias.lab.loading import DTYPES
from tanbias.lab.runs import ROOT, load_run, run_dir
from tanbias.theory import anisotropy as rival_anisotropy

__all__ = ["findings", "findings_table", "REFERENCE_RUNS", "ZOO_MEASURED_DIR", "reference_columns",
           "reference_readings", "installation", "zoo_costs", "cost_rule", "ZOO_SHAPES", "rule_over_zoo",
           "TOKENS_DIR", "token_widths", "premise_width", "COST_COLUMNS", "ESTIMATE_COLUMNS", "WIDTH_COLUMNS",
           "cost_table", "estimate_table", "widths_table", "TRAJECTORY_RUN", "lab_trajectory"]

def findings(tables: dict) -> list[tuple[str, str]]:
    """What the measurements say, in sentences, each with the key of the section that explains it
    (``_findings``), their negative numbers written with the minus sign, as the book writes them.

    Example
    -------
    >>> _signed("SmolLM2-135M: ρ = -0.48 [-0.90, -0.07] (from -1.62 to +2.03)")
    'SmolLM2-135M: ρ = −0.48 [−0.90, −0.07] (from −1.62 to +2.03)'
    """
    return [(key, _signed(text)) for key, text in _findings(tables)]


def _signed(text: str) -> str:
    """``text`` with each hyphen-minus that starts a number (not one inside a name) as the minus sign."""
    return re.sub(r"(?<![\w.])-(?=\d)", MINUS, text)


def _findings(tables: dict) -> list[tuple[str, str]]:
    """What the measurements say, in sentences, each with the key of the section that explains it.

    Read from ``tables["results"]``, chapter 9's results of the last checkpoint
    (:func:`tanbias.lab.analysis.measure_folder.results_of`: computed as the measurement is made or
    read, so that drawing the report computes nothing), in chapter 9's words (an interval's word,
    the band's word over the blocks), and from the trajectory of a series.

    Returns
    -------
    list of (section, sentence)
        ``section``: ``"premise"``, ``"anisotropy"``, ``"alignment"``, ``"curvature"`` or
        ``"trajectory"``, the reading the sentence is about.
    """
    res = tables["results"]
    label = res.models["model"].iloc[-1]
    where = f" (checkpoint {label})" if len(split_revisions(tables)) > 1 else ""
    out = []
    for lang in res.languages.loc[res.languages["model"] == label, "language"]:
        out += _language_findings(res, label, lang, LANGUAGE_NAMES.get(lang, lang), where)
    trained, null = res.alignment_row(label, "trained"), res.alignment_row(label, "null")
    if trained is not None:
        out.append(("alignment", f"The gradients' median enrichment in the activations' top principal directions "
                    f"over the inner layers is {trained['median']:.2f}{where}, against "
                    f"{null['median']:.2f} for a randomly initialised copy (1 = a random subspace)."))
    traj = tables.get("trajectory")
    if traj is not None and "enrichment_gmean" in traj and traj["enrichment_gmean"].notna().any():
        curve = traj.drop_duplicates("revision").set_index("revision")["enrichment_gmean"]
        peak = curve.idxmax()
        at = list(curve.index).index(peak) + 1
        out.append(("trajectory", f"Over the {len(curve)} checkpoints the enrichment (geometric mean over the "
                    f"layers) peaks at {peak} ({at} of {len(curve)}: ×{curve.max():.2f}); the last holds "
                    f"×{curve.iloc[-1] / curve.max():.2f} of that peak. 'Imprinted early' means a peak early in "
                    "training that later training does not raise."))
    return out


def _language_findings(res, label: str, lang: str, name: str, where: str) -> list[tuple[str, str]]:
    """:func:`findings`' sentences of one language of the model ``label`` in ``res``."""
    t, d = res.premise_row(label, lang, "radius_t"), res.premise_row(label, lang, "centroid_distance")
    self_sim, row = res.premise_row(label, lang, "self_similarity"), res.language_row(label, lang)
    out = [("premise", f"{name}{where}: at the last layer, ρ(log frequency, radius t) = "
                       f"{row_ci(t)}, {t['word']}; over the blocks the band is {t['band']}. The premise predicts "
                       "negative."),
           ("premise", f"{name}: the distance of a type's centroid to the layer mean gives {row_ci(d)} at the last "
                       f"layer, {d['word']}; self-similarity {self_sim['rho']:+.2f}, {self_sim['word']}."),
           ("anisotropy", f"{name}: the mean cosine of random pairs peaks at {row['cos_max']:.2f} "
                          f"(block {row['cos_max_layer']}, first position left out; "
                          f"{row['cos_max_with_sink']:.2f} with it); IsoScore* reaches at most "
                          f"{row['iso_max']:.2f}; outlier dimensions: {row['outliers']}.")]
    if row["sink"]:
        ratio = row["sink_ratio_max"]
        out.append(("anisotropy", f"{name}: the first position's norm is up to {format_number(ratio, 3)} times the median "
                    f"elsewhere (block {row['sink_ratio_layer']}): "
                    f"{'a sink' if ratio > SINK_RATIO else 'no sink'} by chapter 9's rule (above "
                    f"{SINK_RATIO:.0f} times)."))
    out.append(("curvature", f"{name}: the normal share's slope against t has median "
                f"{row['curv_median']:+.2f} over the blocks (from {row['curv_min']:+.2f} to "
                f"{row['curv_max']:+.2f}); a curved manifold gives 2, a flat cloud 0."))
    return out

#: The lab's runs a measurement is drawn beside (:func:`reference_readings`): the rivals experiment's
#: long control runs, one per architecture, at their last step (the lab's longest-trained models
#: that carry every reading of ``rivals.csv``)
REFERENCE_RUNS = {"rivals-decoder-standard-long-s0": "lab decoder", "rivals-encoder-standard-long-s0": "lab encoder"}


#: The zoo measured by the command itself, every reading (``data/measure/zoo/<name>/``, in English: their
#: command lines are in ``data/measure/README.md``): the zoo's lines behind a measured model
ZOO_MEASURED_DIR = MEASURED_DIR / "zoo"


def reference_columns() -> dict:
    """``{reading: lab column}``: the readings :func:`reference_readings` returns (the records of
    :data:`tanbias.theory.anisotropy.METRICS` the command reads) and the column of a lab run's
    tables each is read from (the record's ``reference``; None: no lab run holds it). The zoo's
    measurements carry each reading under its own name.

    Example
    -------
    >>> reference_columns()["raw"], reference_columns()["cosine_top_share"]
    ('raw', None)
    """
    return {m.name: m.reference for m in rival_anisotropy.METRICS if m.command}


def reference_readings(zoo_names=None, runs=None, language: str = "en"):
    """The book's own per-layer readings, to draw a measurement beside: the zoo's and the lab's.

    The zoo measured by the command (:data:`ZOO_MEASURED_DIR`, in ``language``: every reading the
    command reads, by the same functions as the measured model's) and the lab's
    :data:`REFERENCE_RUNS` at their last step (``rivals.csv``; IsoScore* and the participation
    ratio from ``anisotropy.csv``'s content positions), every table read with its checksums. A
    source whose files are absent (an installed package without the book's ``data/``) is left
    out. Read once per process (the committed files do not change under it); each call returns
    a copy.

    Returns
    -------
    pandas.DataFrame
        ``source``, ``group`` (``"zoo"`` or ``"lab"``), ``reading`` (a key of
        :func:`reference_columns`), ``layer``, ``depth`` (layer over the last layer) and
        ``value``; one row per source, reading and layer.
    """
    names = tuple(zoo.ZOO if zoo_names is None else zoo_names)
    runs = tuple((REFERENCE_RUNS if runs is None else runs).items())
    return _reference_readings(names, runs, language, tuple(reference_columns().items())).copy()


@functools.lru_cache(maxsize=4)
def _reference_readings(zoo_names: tuple, runs: tuple, language: str, columns: tuple):
    import pandas as pd

    rows = []

    def add(source, group, frame, col, reading):
        L = max(int(frame["layer"].max()), 1)
        rows.extend({"source": source, "group": group, "reading": reading, "layer": int(r.layer),
                     "depth": r.layer / L, "value": float(getattr(r, col))} for r in frame.itertuples())

    for name in zoo_names:
        folder = ZOO_MEASURED_DIR / name
        if not (folder / "manifest.json").is_file():
            continue
        a = load_measurement(folder, results=False)["anisotropy"]
        a = a[a["language"] == language]
        for reading, _ in columns:
            if reading in a and len(a):
                add(name, "zoo", a, reading, reading)
    for run, label in runs:
        if not (run_dir(run) / "manifest.json").is_file():
            continue
        data = load_run(run)
        last = data.rivals[data.rivals["step"] == data.rivals["step"].max()]
        an = data.anisotropy
        an = an[(an["step"] == an["step"].max()) & (an["positions"] == "content")]
        for reading, col in columns:
            if col is not None:
                add(label, "lab", last if col in last else an, col, reading)
    return pd.DataFrame(rows, columns=["source", "group", "reading", "layer", "depth", "value"])



# ---------------------------------------------------------------------------------- what it costs
def installation(root=None) -> dict:
    """What the command needs installed, read from the project's own files: ``python`` (the
    ``requires-python`` of ``pyproject.toml``), and the versions ``requirements.txt`` pins of
    ``torch`` and ``transformers`` (the tested ones: ``make install`` installs them).

    Example
    -------
    >>> sorted(installation())
    ['python', 'torch', 'transformers']
    """
    root = Path(root or ROOT)
    python = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf8"))["project"]["requires-python"]
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s#]+)", (root / "requirements.txt").read_text(encoding="utf8"),
                           flags=re.M))
    return {"python": python, "torch": pins["torch"], "transformers": pins["transformers"]}


def zoo_costs(names=None):
    """What the command costs at its default tokens, per zoo model: chapter 9's committed measurements.

    ``python -m tanbias measure NAME`` with no option measures a zoo model as chapter 9 did
    (its languages, 16,384 tokens each, the alignment test where there is a language-model
    head), through the same functions; the manifests of ``data/pretrained/`` hold what that
    took on the project's two-core CPU machine, one torch thread.

    Returns
    -------
    pandas.DataFrame
        One row per model: ``model``, ``kind``, ``languages``, ``tokens`` (all languages),
        ``layers`` (the hidden states read, embeddings included), ``gflops_per_token``,
        ``probe_tokens`` (of each of the alignment test's texts; 0 without it), ``seconds`` (total), ``forward``, ``analysis``, ``probe`` (the alignment test),
        ``peak_gb`` (the process's peak resident memory).
    """
    import pandas as pd

    rows = []
    for name in zoo.ZOO if names is None else names:
        tab = pt.load_pretrained(name)
        man, an = tab["manifest"], tab["anisotropy"]
        sec = man["seconds"]
        rows.append({"model": name, "kind": man["kind"], "languages": len(man["languages"]),
                     "tokens": int(sum(man["tokens_measured"].values())), "layers": int(an["layer"].max()) + 1,
                     "gflops_per_token": man["flops_per_token"] / 1e9,
                     "probe_tokens": man["settings"]["probe_tokens"] if sec["probe"] > 1 else 0, "seconds": sec["total"],
                     "forward": sec["forward"], "analysis": sec["analysis"],
                     "probe": sec["probe"] if sec["probe"] > 1 else 0.0,
                     "peak_gb": man["peak_rss_gb"]})
    return pd.DataFrame(rows)


def cost_rule(params: float, layers: int, d_model: int, vocab: int = 128_256, n_tokens: int = MeasureSettings.n_tokens,
              languages: int = 1, alignment: bool = True, dtype: str = "float32", costs=None) -> dict:
    """A rule of thumb for the command's time and memory on a model the zoo does not hold.

    ``params`` counts the parameters of the blocks, the embedding and the output matrix left out
    (the forward pass runs the blocks alone); ``vocab`` and ``d_model`` give the embedding's.
    Time: the forward pass at the zoo's rate of floating-point operations (``2 params`` per
    token), the readings at the zoo's seconds per token and layer, and the alignment test at
    the zoo's seconds per token of its texts and operation (:func:`tanbias.lab.analysis.measure_inputs.probe_tokens` of ``n_tokens``;
    each rate fitted by least squares through 0 to ``costs``, :func:`zoo_costs`). Memory: the
    weights (``params + vocab d_model``, tied: 4 bytes each in float32, 2 in bfloat16), the hidden states kept (``(layers +
    1) n_tokens d_model`` float32), with the alignment test a batch's logits and their gradients
    (``3 batch_size seq_len vocab`` float32), and 1 GB for the rest. A rough guide, within a
    factor of 2 of the zoo's own (:func:`rule_over_zoo`, checked on the page that quotes it); the
    zoo's models span 23 M to 270 M parameters.

    Returns
    -------
    dict
        ``seconds``, ``forward``, ``analysis``, ``probe`` and ``peak_gb``, and the ``rates`` used.

    Example
    -------
    >>> r = cost_rule(0.97e9, 16, 2048)            # Llama 3.2 1B: 1.24 B parameters, 0.97 B in its blocks
    >>> 300 < r["seconds"] < 5000, 5 < r["peak_gb"] < 15
    (True, True)
    """
    check_choice("dtype", dtype, DTYPES)
    for name, v in (("layers", layers), ("d_model", d_model), ("vocab", vocab), ("n_tokens", n_tokens),
                    ("languages", languages)):
        check_int(name, v, lo=1)
    if not params > 0:
        raise ParameterError(f"params={params!r} is out of range: valid range is (0, inf). Pass e.g. 1e9.")
    z = zoo_costs() if costs is None else costs
    fwd_rate = float((z["tokens"] * z["gflops_per_token"] * 1e9) @ z["forward"] / (z["forward"] @ z["forward"]))
    x = z["tokens"] * z["layers"]
    per_layer = float(x @ z["analysis"] / (x @ x))
    head = z[z["probe_tokens"] > 0]
    work = head["probe_tokens"] * head["gflops_per_token"] * 1e9
    probe_rate = float(work @ head["probe"] / (work @ work)) if len(head) else 0.0
    tokens = n_tokens * languages
    forward = tokens * 2 * params / fwd_rate
    analysis = tokens * (layers + 1) * per_layer
    probe = probe_tokens(n_tokens) * 2 * params * probe_rate if alignment else 0.0
    weights = (params + vocab * d_model) * (4 if dtype == "float32" else 2) / 2 ** 30
    hidden = (layers + 1) * n_tokens * d_model * 4 / 2 ** 30
    s = MeasureSettings
    logits = 3 * s.batch_size * s.seq_len * vocab * 4 / 2 ** 30 if alignment else 0.0
    return {"seconds": forward + analysis + probe, "forward": forward, "analysis": analysis, "probe": probe,
            "peak_gb": weights + hidden + logits + 1.0,
            "rates": {"forward_flops_per_s": fwd_rate, "analysis_s_per_token_layer": per_layer,
                      "probe_s_per_flop": probe_rate}}


#: Each zoo model's shape, from its config: the parameters of its blocks (embedding and output matrix left
#: out), its layers, width and vocabulary (:func:`cost_rule`'s arguments)
ZOO_SHAPES = {"smollm2-135m": (106.7e6, 30, 576, 49_152), "gemma3-270m": (100.2e6, 18, 640, 262_144),
              "minilm-l6": (11.0e6, 6, 384, 30_522), "me5-small": (22.0e6, 12, 384, 250_037)}


def rule_over_zoo(costs=None):
    """:func:`cost_rule` over what chapter 9's measurement of each zoo model took (:data:`ZOO_SHAPES`,
    :func:`zoo_costs`): one row per model, ``seconds`` and ``peak_gb`` as the rule's over the
    measured (1 = the rule is exact)."""
    import pandas as pd

    costs = zoo_costs() if costs is None else costs
    rows = []
    for row in costs.itertuples():
        params, layers, d_model, vocab = ZOO_SHAPES[row.model]
        rule = cost_rule(params, layers, d_model, vocab, n_tokens=row.tokens // row.languages,
                         languages=row.languages, alignment=row.probe_tokens > 0, costs=costs)
        rows.append({"model": row.model, "seconds": rule["seconds"] / row.seconds,
                     "peak_gb": rule["peak_gb"] / row.peak_gb})
    return pd.DataFrame(rows)



#: SmolLM2 measured at more tokens than the page's example (``data/measure/tokens/``), for
#: :func:`token_widths`
TOKENS_DIR = MEASURED_DIR / "tokens"


def token_widths(folders=None, chapter: str | None = "smollm2-135m", reading: str = "radius_t"):
    """How the premise's interval narrows with ``--tokens``: one row per measurement.

    ``folders`` (default: ``data/measure/smollm2-135m`` and those under :data:`TOKENS_DIR`),
    each read with its checksums, and chapter 9's committed measurement of ``chapter`` (None:
    none), which ``python -m tanbias measure NAME`` would write again: its first language, at
    chapter 9's tokens. The width is that of the 95 % interval over documents of the matched ρ
    of log corpus frequency with ``reading``, in the first language measured, at the last layer
    and as the median over the blocks (layers 1 to L).

    Returns
    -------
    pandas.DataFrame
        ``source`` (``"command"``, ``"chapter 9"``), ``tokens`` (asked), ``measured`` (read),
        ``types`` (types that reach ``m`` at the last layer), ``rho``, ``lo``, ``hi``, ``width``,
        ``median_width``, ``seconds`` (chapter 9's: loading, and that language's share of the
        counts, the forward pass and the readings; the alignment test left out), ``peak_gb``;
        sorted by ``tokens``.
    """
    import pandas as pd

    if folders is None:
        folders = [MEASURED_DIR / "smollm2-135m", *sorted(p.parent for p in TOKENS_DIR.glob("*/manifest.json"))]
    rows = []
    for folder in folders:
        tab = load_measurement(folder, results=False)
        man = tab["manifest"]
        lang = man["languages"][0]
        rows.append({"source": "command", "tokens": man["settings"]["n_tokens"],
                     "measured": man["tokens_measured"][lang], **premise_width(tab, lang, reading),
                     "seconds": man["seconds"]["total"], "peak_gb": man["peak_rss_gb"]})
    if chapter is not None:
        tab = pt.load_pretrained(chapter)
        man = tab["manifest"]
        lang, sec, k = man["languages"][0], man["seconds"], len(man["languages"])
        rows.append({"source": "chapter 9", "tokens": man["settings"]["n_tokens"],
                     "measured": man["tokens_measured"][lang], **premise_width(tab, lang, reading),
                     "seconds": sec["load"] + (sec["frequencies"] + sec["forward"] + sec["analysis"]) / k,
                     "peak_gb": man["peak_rss_gb"]})
    return pd.DataFrame(rows).sort_values("tokens", ignore_index=True)


def premise_width(tables: dict, language: str = "en", reading: str = "radius_t") -> dict:
    """The premise's interval in one measurement (the command's, or chapter 9's
    :func:`tanbias.lab.analysis.pretrained.load_pretrained`): the matched ρ of log corpus frequency
    with ``reading`` at the measurement's ``m``, in ``language``.

    Returns
    -------
    dict
        ``types`` (types read at the last layer), ``rho``, ``lo``, ``hi`` and ``width`` at the last
        layer; ``median_width``, the median width over the blocks (layers 1 to L).
    """
    pr = tables["premise"]
    m = tables["manifest"]["settings"]["m"]
    g = pr[(pr["language"] == language) & (pr["estimator"] == "matched") & (pr["source"] == "corpus")
           & (pr["reading"] == reading) & (pr["m"] == m)].sort_values("layer")
    if g.empty:
        raise ParameterError(f"language={language!r}, reading={reading!r} is out of range for this measurement: "
                             f"valid range is its languages {sorted(set(pr['language']))} and the readings "
                             f"{sorted(set(pr['reading']))}.")
    last = g.iloc[-1]
    body = g[g["layer"] >= 1]
    return {"types": int(last["n"]), "rho": float(last["rho"]), "lo": float(last["lo"]), "hi": float(last["hi"]),
            "width": float(last["hi"] - last["lo"]), "median_width": float((body["hi"] - body["lo"]).median())}



#: The page's tables: each column's header, a word with its unit
COST_COLUMNS = {"model": "model", "kind": "kind", "languages": "languages", "tokens": "tokens read, all languages",
                "seconds": "total time (s)", "forward": "forward pass (s)", "analysis": "readings (s)",
                "probe": "alignment test (s)", "peak_gb": "peak memory (GB)"}


ESTIMATE_COLUMNS = {"seconds": "total time (min)", "forward": "forward pass (min)", "analysis": "readings (min)",
                    "probe": "alignment test (min)", "peak_gb": "peak memory (GB)"}


WIDTH_COLUMNS = {"source": "measured by", "tokens": "tokens asked (--tokens)", "types": "types read",
                 "rho": "ρ, last layer", "lo": "95 % interval, low", "hi": "95 % interval, high",
                 "width": "interval width, last layer", "median_width": "median interval width over the blocks",
                 "seconds": "time (s)"}


def cost_table(costs=None):
    """:func:`zoo_costs` as the page shows it: one row per zoo model, every header a word with its unit."""
    costs = zoo_costs() if costs is None else costs
    return costs[list(COST_COLUMNS)].rename(columns=COST_COLUMNS)


def estimate_table(params: float, layers: int, d_model: int, **kwargs):
    """:func:`cost_rule` for one model, as the page shows it: one row per way of running the command (with
    and without the alignment test, in float32; with it in bfloat16), times in minutes.

    Example
    -------
    >>> t = estimate_table(0.97e9, 16, 2048)
    >>> list(t.columns)[:2], len(t)
    (['run', 'total time (min)'], 3)
    """
    import pandas as pd

    rows = []
    for label, over in (("float32, with the alignment test", {}), ("float32, without it", {"alignment": False}),
                        ("bfloat16, with the alignment test", {"dtype": "bfloat16"})):
        r = cost_rule(params, layers, d_model, **{**kwargs, **over})
        rows.append({"run": label, **{ESTIMATE_COLUMNS[k]: r[k] / (60 if k != "peak_gb" else 1)
                                      for k in ESTIMATE_COLUMNS}})
    return pd.DataFrame(rows)


def widths_table(widths):
    """:func:`token_widths` as the page shows it, every header a word (with its unit)."""
    return widths[list(WIDTH_COLUMNS)].rename(columns=WIDTH_COLUMNS)


def findings_table(tables):
    """:func:`findings` as a table: what each sentence is about, and the sentence."""
    import pandas as pd

    return pd.DataFrame(findings(tables), columns=["about", "what the measurement says"])


#: The lab run whose trajectory the page shows beside the worked one: the rivals experiment's long
#: decoder control, probed at 19 steps over 1,280 (its enrichment peaks early and falls)
TRAJECTORY_RUN = "rivals-decoder-standard-long-s0"


def lab_trajectory(run: str = TRAJECTORY_RUN, proxy: str = "refit"):
    """A lab run's enrichment over training, in the form of :func:`tanbias.lab.analysis.measure.trajectory_table`: what a real
    trajectory looks like.

    The run's own alignment test at every probe step (``alignment.csv``, all tokens), with a proxy
    refitted at each step (``proxy="refit"``: as the command fits one per checkpoint), as the
    geometric mean over the layers (``enrichment_gmean``, the command's reading). The run reads
    its training batches' gradients, where the command reads held-out text: the same quantity,
    measured in training.

    Returns
    -------
    pandas.DataFrame
        ``revision`` (``step<N>``), ``step``, ``language`` (``"en"``), ``enrichment_gmean``; one row
        per probe step.
    """
    import pandas as pd

    a = load_run(run).alignment
    g = a[(a["bucket"] == "all") & (a["proxy"] == proxy)]
    gm = mean_over_layers(add_log_enrichment(g), ["step"], ["log_enrichment"]).sort_values("step")
    return pd.DataFrame({"revision": [f"step{int(s)}" for s in gm["step"]], "step": gm["step"].astype(int),
                         "language": "en", "enrichment_gmean": np.exp(gm["log_enrichment"].to_numpy())})
