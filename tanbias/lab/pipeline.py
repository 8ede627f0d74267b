"""What happens after a training run, once: the analysis pipeline of the lab (chapters 5-8).

* :func:`after_run` — from a trained run's captures and final checkpoint: the
  alignment tables (:func:`tanbias.lab.analysis.tables.analyse_run`), the
  trained views (:func:`tanbias.lab.analysis.views.compute_views`) and the
  per-token radii (:func:`tanbias.lab.analysis.radii.measure_radii`), then the
  summary's ``analysis_seconds`` and the manifest. ``python -m tanbias.lab
  train`` (:func:`train_and_analyse`) and ``python -m tanbias.lab probe`` both
  call it;
* :func:`reproduce` — re-run a committed run and compare;
* :func:`run_sweep` — train the 2x2 sweep's configs in parallel (``make sweep``);
* :func:`smoke_pipeline` — the whole lab at smoke size in seconds (chapter 7).
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from tanbias._checks import check_int
from tanbias.lab import runs
from tanbias.lab.analysis.radii import measure_radii
from tanbias.lab.analysis.tables import analyse_run
from tanbias.lab.analysis.views import compute_views
from tanbias.lab.config import REPRODUCE_TOLERANCE, SWEEP_NAME_RE, parse_run_name, validate_config
from tanbias.lab.train import Interrupted, train

__all__ = ["after_run", "train_and_analyse", "reproduce", "sweep_configs", "run_sweep", "smoke_pipeline"]


def after_run(run, progress: bool = True) -> dict:
    """Everything computed from a finished run: tables, views, radii; summary and manifest updated.

    Returns
    -------
    dict
        ``{"tables": {csv name: DataFrame}, "views": dict, "tokens": DataFrame, "seconds": float}``.

    Raises
    ------
    CorruptFileError
        A capture or the final checkpoint is missing or unreadable (names it and
        the command that regenerates it).
    """
    d = runs.run_dir(run)
    t0 = time.perf_counter()
    tables = analyse_run(d, progress=progress)
    views = compute_views(d)
    tokens = measure_radii(d, write=True)
    seconds = round(time.perf_counter() - t0, 1)
    summary_path = d / "summary.json"
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text())
        summary["analysis_seconds"] = seconds
        runs.atomic_write_text(summary_path, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    runs.write_manifest(d, runs.read_config(d))
    return {"tables": tables, "views": views, "tokens": tokens, "seconds": seconds}


def train_and_analyse(config, out_dir=None, fresh: bool = False, progress: bool = True) -> dict:
    """:func:`tanbias.lab.train.train`, then :func:`after_run` if the run probed; returns the summary."""
    summary = train(config, out_dir=out_dir, fresh=fresh, progress=progress)
    d = Path(out_dir) if out_dir is not None else runs.run_dir(summary["run"])
    if summary["probe_steps"]:
        summary["analysis_seconds"] = after_run(d, progress=progress)["seconds"]
    return summary


def reproduce(run, steps: int | None = None, workdir=None, progress: bool = True) -> dict:
    """Re-run a committed run from its config in a scratch folder and compare.

    Compares every logged step's loss (``|Δ| <= loss_atol``), the evaluation loss,
    and — when the whole run is repeated — every numeric column of
    ``alignment.csv`` and ``tokens.csv`` (``|Δ| <= align_atol + align_rtol |x|``); see
    :data:`~tanbias.lab.config.REPRODUCE_TOLERANCE`.

    Parameters
    ----------
    run : str or path
    steps : int, optional
        Only re-run and compare the first ``steps`` steps (a quicker check; the
        schedule is the committed one, so the prefix is identical).

    Returns
    -------
    dict
        ``ok`` (bool), ``compared`` (counts), ``max_loss_diff``, ``failures`` (list of str).
    """
    import pandas as pd

    d = runs.run_dir(run)
    runs.verify_run(d)
    cfg = validate_config(runs.read_config(d))
    committed = {r["step"]: r for r in runs.read_jsonl(d / "metrics.jsonl") if r.get("type") == "step"}
    tmp = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix=f"reproduce-{cfg['name']}-"))
    partial = steps is not None and steps < cfg["steps"]
    try:
        if partial:
            try:
                train(cfg, out_dir=tmp, fresh=True, stop_after=int(steps), progress=progress)
            except Interrupted:
                pass
        else:
            train_and_analyse(cfg, out_dir=tmp, fresh=True, progress=progress)
        new = {r["step"]: r for r in runs.read_jsonl(tmp / "metrics.jsonl") if r.get("type") == "step"}
        tol = REPRODUCE_TOLERANCE
        failures = []
        diffs = [abs(new[s]["loss"] - committed[s]["loss"]) for s in new if s in committed]
        missing = [s for s in new if s not in committed]
        if missing:
            failures.append(f"steps {missing[:5]} are not in the committed log")
        bad = [s for s in new if s in committed and abs(new[s]["loss"] - committed[s]["loss"]) > tol["loss_atol"]]
        if bad:
            failures.append(f"loss differs by more than {tol['loss_atol']} at steps {bad[:10]}")
        n_align = 0
        tables = [name for name in ("alignment.csv", "tokens.csv") if (d / name).exists()]
        for name in tables if not partial else ():
            a = pd.read_csv(d / name)
            b = pd.read_csv(tmp / name)
            if a.shape != b.shape:
                failures.append(f"{name} shape {b.shape} != committed {a.shape}")
                continue
            for col in a.select_dtypes("number").columns:
                x, y = a[col].to_numpy(float), b[col].to_numpy(float)
                ok = np.isclose(y, x, rtol=tol["align_rtol"], atol=tol["align_atol"], equal_nan=True)
                n_align += ok.size
                if not ok.all():
                    failures.append(f"{name} column {col!r} differs in {int((~ok).sum())} rows")
        return {"ok": not failures, "compared": {"steps": len(diffs), "table_values": n_align, "tables": tables if not partial else []},
                "max_loss_diff": max(diffs) if diffs else float("nan"), "failures": failures,
                "tolerance": tol, "workdir": str(tmp)}
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)


def sweep_configs(configs_dir=None) -> list[Path]:
    """The sweep's config files (``data/runs/configs/<kind>-<regime>-s<seed>.json``), decoders first.

    Decoders train slower, so starting them first balances the parallel workers.
    """
    d = Path(configs_dir) if configs_dir is not None else runs.RUNS_DIR / "configs"
    found = [p for p in sorted(d.glob("*.json")) if SWEEP_NAME_RE.match(p.stem)]
    return sorted(found, key=lambda p: (parse_run_name(p.stem)[2], p.stem.split("-")[0] != "decoder", p.stem))


def run_sweep(jobs: int = 2, fresh: bool = False, configs_dir=None, out_root=None) -> dict:
    """Train every sweep config (``python -m tanbias.lab train``) with ``jobs`` parallel processes.

    Each run uses one thread (its config's ``threads``), so ``jobs`` should
    not exceed the number of cores. A run that is already complete (its
    manifest lists ``tokens.csv``) is skipped unless ``fresh``; an interrupted
    one resumes. Returns the wall time and each run's exit status and time
    (also written to ``sweep.json`` beside the runs when anything ran); the
    log of each run goes to ``<run>/work/train.log``.
    """
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    jobs = check_int("jobs", jobs, lo=1, hi=64)
    root = Path(out_root) if out_root is not None else runs.RUNS_DIR
    todo = []
    for cfg in sweep_configs(configs_dir):
        man = root / cfg.stem / "manifest.json"
        if not fresh and man.exists() and "tokens.csv" in json.loads(man.read_text()).get("files", {}):
            continue
        todo.append(cfg)

    def one(cfg):
        out = root / cfg.stem
        (out / "work").mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "tanbias.lab", "train", str(cfg), "--out", str(out), "--no-progress"]
        if fresh:
            cmd.append("--fresh")
        t0 = time.perf_counter()
        with open(out / "work" / "train.log", "w") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        dt = time.perf_counter() - t0
        print(f"{cfg.stem}: exit {rc} after {dt / 60:.1f} min", flush=True)
        return cfg.stem, rc, dt

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, todo))
    report = {"wall_seconds": round(time.perf_counter() - t0, 1), "jobs": jobs,
              "how": f"python -m tanbias.lab sweep --jobs {jobs}" + (" --fresh" if fresh else ""),
              "runs": {n: {"exit": rc, "seconds": round(dt, 1)} for n, rc, dt in results}}
    if todo:
        runs.atomic_write_text(root / "sweep.json", json.dumps(report, indent=1) + "\n")
    return report


def smoke_pipeline(kind: str = "decoder", steps: int = 8, out_dir=None) -> dict:
    """Train + probe + analyse a smoke-size model in a temp folder; return tables and timing."""
    import pandas as pd

    cfg = {"name": f"{kind}-smoke", "kind": kind, "size": "smoke", "steps": int(steps), "languages": ["en"],
           "checkpoint_every": int(steps), "eval_batches": 1,
           "probe": {"n_steps": 4, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}
    tmp = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="tanbias-smoke-"))
    t0 = time.perf_counter()
    summary = train_and_analyse(cfg, out_dir=tmp / cfg["name"], fresh=True, progress=False)
    seconds = time.perf_counter() - t0
    data = runs.load_run(tmp / cfg["name"])
    return {"summary": summary, "seconds": seconds, "alignment": data.alignment,
            "radius_corr": data.radius_corr, "metrics": data.metrics, "path": tmp / cfg["name"],
            "table": pd.DataFrame(data.alignment)}
