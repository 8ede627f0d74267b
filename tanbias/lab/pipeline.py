"""What happens after a training run, once: the analysis pipeline of the lab (chapters 5-8).

* :func:`after_run` — from a trained run's captures and final checkpoint: the
  alignment tables (:func:`tanbias.lab.analysis.tables.analyse_run`), the
  trained views (:func:`tanbias.lab.analysis.views.compute_views`) and the
  per-token radii (:func:`tanbias.lab.analysis.radii.measure_radii`), then the
  summary's ``analysis_seconds`` and the manifest. ``python -m tanbias.lab
  train`` (:func:`train_and_analyse`) and ``python -m tanbias.lab probe`` both
  call it;
* :func:`reproduce` — re-run a committed run and compare;
* :func:`run_queue` — train a list of configs in parallel, resuming and
  (optionally) committing each run as it finishes; :func:`run_sweep` (the 2x2
  of chapter 8, ``make sweep``) and :func:`run_dose` (the dose experiment of
  chapter 10, ``make dose``) use it;
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
from tanbias.lab.config import REPRODUCE_TOLERANCE, RunConfig
from tanbias.lab.experiments import (DOSE_SEEDS, RUN_STEPS, causal_config, causal_names, design_config,
                                     dose_config, dose_names, parse_causal_name, parse_dose_name, sweep_names)
from tanbias.lab.models import resolve_device
from tanbias.lab.train import Interrupted, train

__all__ = ["after_run", "train_and_analyse", "reproduce", "write_configs", "sweep_configs", "run_queue",
           "run_sweep", "dose_configs", "run_dose", "smoke_pipeline"]


def after_run(run, progress: bool = True, device: str = "cpu") -> dict:
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
    tokens = measure_radii(d, write=True, device=device)
    seconds = round(time.perf_counter() - t0, 1)
    summary_path = d / "summary.json"
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text())
        summary["analysis_seconds"] = seconds
        runs.atomic_write_text(summary_path, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    runs.write_manifest(d, runs.read_config(d))
    return {"tables": tables, "views": views, "tokens": tokens, "seconds": seconds}


def train_and_analyse(config, out_dir=None, fresh: bool = False, progress: bool = True,
                      device: str = "auto") -> dict:
    """:func:`tanbias.lab.train.train`, then :func:`after_run` if the run probed; returns the summary."""
    summary = train(config, out_dir=out_dir, fresh=fresh, progress=progress, device=device)
    d = Path(out_dir) if out_dir is not None else runs.run_dir(summary["run"])
    if summary["probe_steps"] and summary.get("rank", 0) == 0:     # under torchrun, rank 0 analyses
        summary["analysis_seconds"] = after_run(d, progress=progress, device=summary["device"])["seconds"]
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
    cfg = runs.read_config(d)
    committed = {r["step"]: r for r in runs.read_jsonl(d / "metrics.jsonl") if r.get("type") == "step"}
    tmp = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix=f"reproduce-{cfg.name}-"))
    partial = steps is not None and steps < cfg.steps
    try:
        if partial:
            try:
                train(cfg, out_dir=tmp, fresh=True, stop_after=int(steps), progress=progress, device="cpu")
            except Interrupted:
                pass
        else:
            train_and_analyse(cfg, out_dir=tmp, fresh=True, progress=progress, device="cpu")
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


def write_configs(configs, configs_dir=None, write: bool = True) -> list[Path]:
    """The config files of ``configs`` (:class:`~tanbias.lab.config.RunConfig`) in ``configs_dir``
    (default ``data/runs/configs``): ``<name>.json``, each the config's ``to_json()`` (the form of
    a run folder's ``config.json``), rewritten only when it differs; in the given order."""
    d = Path(configs_dir) if configs_dir is not None else runs.RUNS_DIR / "configs"
    paths = []
    for cfg in configs:
        path = d / f"{cfg.name}.json"
        if write and (not path.exists() or path.read_text() != cfg.to_json()):
            d.mkdir(parents=True, exist_ok=True)
            runs.atomic_write_text(path, cfg.to_json())
        paths.append(path)
    return paths


def sweep_configs(configs_dir=None, write: bool = True) -> list[Path]:
    """The 2x2 sweep's config files (:func:`~tanbias.lab.experiments.sweep_names`) in the order
    ``make sweep`` trains them; written unless ``write=False``. (The constant-rate controls,
    :data:`~tanbias.lab.experiments.CONTROL_RUNS`, are trained on their own with ``python -m
    tanbias.lab train data/runs/configs/<name>.json``.)"""
    return write_configs([design_config(n) for n in sweep_names()], configs_dir, write)


def _git_commit(files, message: str, cwd: Path, check: bool = True) -> str:
    """``git add`` and ``git commit`` of ``files`` only (another git command may hold the
    index lock for a moment: retried for a minute). Returns the new commit's short hash;
    with ``check=False`` a failure (nothing to commit, say) returns ``""`` instead of raising."""
    import subprocess

    def failed(why: str) -> str:
        if check:
            raise RuntimeError(f"git commit of {files[0]}...: {why}")
        return ""

    files = [str(f) for f in files]
    for attempt in range(20):
        add = subprocess.run(["git", "add", "--", *files], cwd=cwd, capture_output=True, text=True)
        if add.returncode == 0:
            out = subprocess.run(["git", "commit", "-q", "-m", message, "--", *files], cwd=cwd,
                                 capture_output=True, text=True)
            if out.returncode == 0:
                return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True,
                                      text=True).stdout.strip()
            if "index.lock" not in out.stderr:
                return failed((out.stderr or out.stdout).strip())
        elif "index.lock" not in add.stderr:
            return failed(f"git add: {add.stderr.strip()}")
        time.sleep(3)
    return failed("the index stayed locked for a minute")


def _git_commit_run(folder: Path, message: str, extra=()) -> str:
    """Commit a finished run's committed files (its manifest's list) and ``extra`` files, nothing else."""
    files = [folder / "manifest.json", *(folder / n for n in json.loads((folder / "manifest.json").read_text())["files"]),
             *map(Path, extra)]
    # run in the repository that holds the runs (TANBIAS_RUNS_DIR may point elsewhere)
    return _git_commit(files, message, cwd=folder)


def run_queue(configs, jobs: int = 2, fresh: bool = False, out_root=None, commit: bool = False,
              report_name: str = "sweep.json", how: str = "", device: str = "auto") -> dict:
    """Train configs (``python -m tanbias.lab train``) with ``jobs`` parallel processes, in order.

    Each run uses one thread (its config's ``threads``), so ``jobs`` should not
    exceed the number of cores. A complete run (its manifest lists ``tokens.csv``) is skipped
    unless ``fresh``; an interrupted one resumes from its checkpoint and log. The
    log of each run goes to ``<run>/work/train.log``. The sitting's wall time so
    far and each finished run's exit status and time are written to
    ``report_name`` beside the runs after every run (for the sweep, the sitting;
    otherwise a list of sittings, earlier ones kept), so a sitting cut short
    still has its record. With ``commit``, each run that finishes is committed to
    git at once with that report (its manifest's files only), so an
    interruption loses at most the runs in progress.
    """
    import subprocess
    import sys
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from datetime import datetime

    jobs = check_int("jobs", jobs, lo=1, hi=64)
    resolve_device(device)                  # a bad or unavailable device fails here, not in every run
    root = Path(out_root) if out_root is not None else runs.RUNS_DIR
    todo = [Path(c) for c in configs if fresh or not runs.is_complete(root / Path(c).stem)]
    lock = threading.Lock()
    path = root / report_name
    t0 = time.perf_counter()
    sitting = {"wall_seconds": 0.0, "jobs": jobs, "how": how, "started": datetime.now().isoformat(timespec="seconds"),
               "finished": None, "runs": {}}

    def report() -> None:
        """Write the report with this sitting as it stands (called under the lock after every run)."""
        sitting["wall_seconds"] = round(time.perf_counter() - t0, 1)
        if report_name == "sweep.json":
            doc = sitting
        else:
            prior = json.loads(path.read_text()) if path.exists() else {}
            others = [x for x in prior.get("sittings", []) if x.get("started") != sitting["started"]]
            doc = {"sittings": [*others, sitting]}
        runs.atomic_write_text(path, json.dumps(doc, indent=1) + "\n")

    def one(cfg):
        out = root / cfg.stem
        (out / "work").mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "tanbias.lab", "train", str(cfg), "--out", str(out), "--no-progress",
               "--device", device]
        if fresh:
            cmd.append("--fresh")
        t1 = time.perf_counter()
        started = datetime.now().isoformat(timespec="seconds")
        with open(out / "work" / "train.log", "a") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        dt = time.perf_counter() - t1
        rec = {"exit": rc, "seconds": round(dt, 1), "start": started,
               "end": datetime.now().isoformat(timespec="seconds")}
        with lock:
            sitting["runs"][cfg.stem] = rec
            report()
            if rc == 0 and commit and runs.is_complete(out):
                rec["commit"] = _git_commit_run(out, f"{report_name.split('.')[0]}: {cfg.stem} finished "
                                                     f"({dt / 60:.1f} min, committed as it completed)",
                                                extra=[path])
        print(f"{cfg.stem}: exit {rc} after {dt / 60:.1f} min", flush=True)
        return cfg.stem, rec

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, todo))
    sitting["finished"] = datetime.now().isoformat(timespec="seconds")
    if todo:
        with lock:
            report()
            if commit:
                _git_commit([path], f"{report_name}: a sitting of {len(todo)} runs finished", cwd=path.parent, check=False)
    sitting["wall_seconds"] = round(time.perf_counter() - t0, 1)
    return sitting


def run_sweep(jobs: int = 2, fresh: bool = False, configs_dir=None, out_root=None, device: str = "auto",
              paths=None) -> dict:
    """Train every sweep config (the 2x2 of chapter 8) with ``jobs`` parallel processes (:func:`run_queue`).

    ``paths`` replaces the design's configs (tests pass smoke-size ones).
    """
    paths = sweep_configs(configs_dir) if paths is None else paths
    return run_queue(paths, jobs=jobs, fresh=fresh, out_root=out_root, device=device,
                     how=f"python -m tanbias.lab sweep --jobs {jobs}" + (" --fresh" if fresh else ""))


def dose_configs(configs_dir=None, seeds=DOSE_SEEDS, steps: int = RUN_STEPS, size: str = "small",
                 write: bool = True, kinds=None, **overrides) -> list[Path]:
    """The dose experiment's config files (chapter 10) in ``configs_dir``, in the order they run
    (:func:`~tanbias.lab.experiments.dose_names`); written unless ``write=False``. ``kinds`` and
    ``overrides`` (keywords of :func:`~tanbias.lab.experiments.dose_config`) make smoke-size sweeps."""
    names = dose_names(seeds, **({} if kinds is None else {"kinds": tuple(kinds)}))
    return write_configs([dose_config(*parse_dose_name(n)[:2], parse_dose_name(n)[2], steps=steps, size=size,
                                      **overrides) for n in names], configs_dir, write)


def run_dose(jobs: int = 2, fresh: bool = False, commit: bool = False, seeds=DOSE_SEEDS, configs_dir=None,
             out_root=None, paths=None, device: str = "auto") -> dict:
    """The dose experiment (``make dose``): every dose config, complete runs skipped, interrupted ones resumed.

    ``paths`` replaces the committed configs (tests pass smoke-size ones from :func:`dose_configs`).
    """
    paths = dose_configs(configs_dir, seeds=seeds) if paths is None else paths
    how = f"python -m tanbias.lab dose --jobs {jobs}" + (" --commit" if commit else "") + (" --fresh" if fresh else "")
    return run_queue(paths, jobs=jobs, fresh=fresh, out_root=out_root, commit=commit, report_name="dose.json",
                     how=how, device=device)


def causal_configs(configs_dir=None, seeds=None, steps: int = RUN_STEPS, size: str = "small",
                   write: bool = True, kinds=None, **overrides) -> list[Path]:
    """The causal test's config files (chapter 11) in ``configs_dir``, in the order they run
    (:func:`~tanbias.lab.experiments.causal_names`; ``seeds`` replaces the design's
    :data:`~tanbias.lab.experiments.CAUSAL_SEEDS`); written unless ``write=False``. ``kinds``
    and ``overrides`` (keywords of :func:`~tanbias.lab.experiments.causal_config`) make smoke-size runs."""
    names = causal_names(seeds, **({} if kinds is None else {"kinds": tuple(kinds)}))
    return write_configs([causal_config(*parse_causal_name(n), steps=steps, size=size, **overrides) for n in names],
                         configs_dir, write)


def alias_configs(configs_dir=None, seeds=None, steps: int = RUN_STEPS, size: str = "small",
                  write: bool = True, kinds=None, **overrides) -> list[Path]:
    """The aliasing knob's config files (chapter 10, issue 21) in ``configs_dir``, in the order they
    run (:func:`~tanbias.lab.experiments.alias_names`: the k0 cells shared with the causal test's
    control arm are not among them); ``seeds`` replaces :data:`~tanbias.lab.experiments.ALIAS_SEEDS`;
    written unless ``write=False``. ``kinds`` and ``overrides`` make smoke-size runs."""
    from tanbias.lab.experiments import ALIAS_SEEDS, alias_config, alias_names, parse_alias_name

    names = alias_names(ALIAS_SEEDS if seeds is None else tuple(seeds),
                        **({} if kinds is None else {"kinds": tuple(kinds)}))
    return write_configs([alias_config(*parse_alias_name(n), steps=steps, size=size, **overrides) for n in names],
                         configs_dir, write)


def run_alias(jobs: int = 2, fresh: bool = False, commit: bool = False, seeds=None, configs_dir=None,
              out_root=None, paths=None, device: str = "auto") -> dict:
    """The aliasing knob (``make alias``): every aliasing config, two at a time, complete runs skipped,
    an interrupted one resumed from its checkpoint, each run committed as it finishes with ``commit``
    (with the sitting's record ``data/runs/alias.json``)."""
    paths = alias_configs(configs_dir, seeds=seeds) if paths is None else paths
    how = (f"python -m tanbias.lab alias --jobs {jobs}" + (" --commit" if commit else "")
           + (" --fresh" if fresh else "") + (f" --seeds {' '.join(map(str, seeds))}" if seeds else ""))
    return run_queue(paths, jobs=jobs, fresh=fresh, out_root=out_root, commit=commit, report_name="alias.json",
                     how=how, device=device)


def run_causal(jobs: int = 2, fresh: bool = False, commit: bool = False, seeds=None, configs_dir=None,
               out_root=None, paths=None, device: str = "auto") -> dict:
    """The causal test (``make causal``): every causal config, two at a time, complete runs skipped,
    an interrupted one resumed from its checkpoint (the surgery's bases included), each run
    committed as it finishes with ``commit``.

    ``paths`` replaces the committed configs (tests pass smoke-size ones from :func:`causal_configs`).
    """
    paths = causal_configs(configs_dir, seeds=seeds) if paths is None else paths
    how = (f"python -m tanbias.lab causal --jobs {jobs}" + (" --commit" if commit else "")
           + (" --fresh" if fresh else "") + (f" --seeds {' '.join(map(str, seeds))}" if seeds else ""))
    return run_queue(paths, jobs=jobs, fresh=fresh, out_root=out_root, commit=commit, report_name="causal.json",
                     how=how, device=device)


def rivals_configs(configs_dir=None, seeds=None, steps: int = RUN_STEPS, size: str = "small",
                   write: bool = True, kinds=None, long: bool = True, **overrides) -> list[Path]:
    """The rivals experiment's config files in ``configs_dir``, in the order they run
    (:func:`~tanbias.lab.experiments.rivals_names`); ``seeds``, ``steps``, ``size``, ``kinds``,
    ``long`` and ``overrides`` make smoke-size runs."""
    from tanbias.lab.experiments import parse_rivals_name, rivals_config, rivals_names

    names = rivals_names(**({} if kinds is None else {"kinds": tuple(kinds)}), seeds=seeds, long=long)
    return write_configs([rivals_config(*parse_rivals_name(n), steps=steps, size=size, **overrides) for n in names],
                         configs_dir, write)


def run_rivals(jobs: int = 2, fresh: bool = False, commit: bool = False, seeds=None, configs_dir=None,
               out_root=None, paths=None, device: str = "auto") -> dict:
    """The rival accounts (``make rivals``): every rivals config, two at a time, complete runs skipped,
    an interrupted one resumed from its checkpoint, each run committed as it finishes with
    ``commit`` (with the sitting's record ``data/runs/rivals.json``)."""
    paths = rivals_configs(configs_dir, seeds=seeds) if paths is None else paths
    how = (f"python -m tanbias.lab rivals --jobs {jobs}" + (" --commit" if commit else "")
           + (" --fresh" if fresh else "") + (f" --seeds {' '.join(map(str, seeds))}" if seeds else ""))
    return run_queue(paths, jobs=jobs, fresh=fresh, out_root=out_root, commit=commit, report_name="rivals.json",
                     how=how, device=device)


def smoke_pipeline(kind: str = "decoder", steps: int = 8, out_dir=None) -> dict:
    """Train + probe + analyse a smoke-size model in a temp folder; return tables and timing."""
    import pandas as pd

    cfg = RunConfig.from_dict({"name": f"{kind}-smoke", "kind": kind, "size": "smoke", "steps": int(steps),
                               "languages": ["en"], "checkpoint_every": int(steps), "eval_batches": 1,
                               "probe": {"n_steps": 4, "rank": 4, "local_rank": 2, "min_count": 4}})
    tmp = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="tanbias-smoke-"))
    t0 = time.perf_counter()
    summary = train_and_analyse(cfg, out_dir=tmp / cfg.name, fresh=True, progress=False)
    seconds = time.perf_counter() - t0
    data = runs.load_run(tmp / cfg.name)
    return {"summary": summary, "seconds": seconds, "alignment": data.alignment,
            "radius_corr": data.radius_corr, "metrics": data.metrics, "path": tmp / cfg.name,
            "table": pd.DataFrame(data.alignment)}
