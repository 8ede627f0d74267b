"""What happens after a training run, once, and the queue of every experiment of the registry.

* :func:`after_run` — from a trained run's captures and final checkpoint: the
  alignment tables (:func:`tanbias.lab.analysis.tables.analyse_run`), the
  trained views (:func:`tanbias.lab.analysis.views.compute_views`) and the
  per-token radii (:func:`tanbias.lab.analysis.radii.measure_radii`), then the
  summary's ``analysis_seconds`` and the manifest. ``python -m tanbias.lab
  train`` (:func:`train_and_analyse`) and ``python -m tanbias.lab probe`` both
  call it;
* :func:`reproduce` — re-run a committed run and compare;
* :func:`run_queue` — train a list of configs in parallel, resuming and
  (optionally) committing each run as it finishes; :func:`run_experiment` trains an
  experiment of :data:`tanbias.lab.experiments.EXPERIMENTS` with it (``make sweep``,
  ``make dose``, ``make alias``, ``make causal``), from the config files
  :func:`experiment_configs` writes;
* :func:`smoke_pipeline` — the whole lab at smoke size in seconds (chapter 7).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from tanbias._checks import check_int, check_real
from tanbias.lab import runs
from tanbias.lab.analysis.radii import measure_radii
from tanbias.lab.analysis.tables import analyse_run
from tanbias.lab.analysis.views import compute_views
from tanbias.lab.config import REPRODUCE_TOLERANCE, RunConfig
from tanbias.lab.experiments import Design
from tanbias.lab.devices import resolve_device
from tanbias.lab.train import Interrupted, train

__all__ = ["after_run", "train_and_analyse", "reproduce", "write_configs", "experiment_configs", "run_queue",
           "run_experiment", "smoke_pipeline"]


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


def experiment_configs(design: Design, configs_dir=None, seeds=None, kinds=None, write: bool = True,
                       **overrides) -> list[Path]:
    """An experiment's config files in ``configs_dir`` (default ``data/runs/configs``), in the order
    its queue trains them (:meth:`~tanbias.lab.experiments.Design.names`: the cells it borrows from
    another design are not among them); written unless ``write=False``.

    Parameters
    ----------
    design : Design
        An experiment of :data:`~tanbias.lab.experiments.EXPERIMENTS`.
    seeds : sequence of int, optional
        One tuple for every architecture, instead of the design's seeds.
    kinds : sequence of str, optional
        The architectures (default both).
    overrides
        Keywords of the design's config function (``steps``, ``size``, ``languages``, further
        :class:`~tanbias.lab.config.RunConfig` fields): smoke-size runs.

    Returns
    -------
    list of Path
    """
    names = design.names(seeds, **({} if kinds is None else {"kinds": tuple(kinds)}))
    return write_configs([design.config_of(n, **overrides) for n in names], configs_dir, write)


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


def _logged_steps(out: Path) -> list[float]:
    """The ``seconds`` of every training step a run's log (``metrics.jsonl``) holds, in order (the run's
    training time when the step ended); empty where there is no log. A line that cannot be read is
    skipped (the run's own resume checks it)."""
    path = Path(out) / "metrics.jsonl"
    if not path.exists():
        return []
    seconds = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("type") == "step" and isinstance(rec.get("seconds"), (int, float)):
            seconds.append(float(rec["seconds"]))
    return seconds


def _config_steps(path: Path) -> int | None:
    """The ``steps`` of a run's config file, or None where it cannot be read."""
    try:
        return int(json.loads(Path(path).read_text())["steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


#: how often (seconds) a queue rewrites its sitting's record while runs train, so that a sitting
#: killed with its session (no run finishing) still leaves its wall time beside the runs
RECORD_EVERY_S = 60.0


def run_queue(configs, jobs: int = 2, fresh: bool = False, out_root=None, commit: bool = False,
              report_name: str = "queue.json", how: str = "", device: str = "auto", sittings: bool = True,
              budget_hours: float | None = None) -> dict:
    """Train configs (``python -m tanbias.lab train``) with ``jobs`` parallel processes, in order.

    Each run uses one thread (its config's ``threads``), so ``jobs`` should not
    exceed the number of cores. A complete run (its manifest lists ``tokens.csv``) is skipped
    unless ``fresh``; an interrupted one resumes from its checkpoint and log. The
    log of each run goes to ``<run>/work/train.log``. The sitting's wall time so
    far and each finished run's exit status and time are written to
    ``report_name`` beside the runs after every run and every ``RECORD_EVERY_S`` seconds while
    runs train (a list of sittings, earlier ones kept; with ``sittings=False``, this sitting
    alone), so a sitting cut short still has its record, up to the last minute
    (:func:`tanbias.lab.runs.queue_record` reads it). With
    ``commit``, each run that finishes is committed to git at once with that report (its manifest's files only), so an
    interruption loses at most the runs in progress.

    Each finished run's entry gives its pace: ``steps``, ``resumed_after`` (the steps its log already
    held when this sitting started it), ``seconds_per_step`` (its wall time over the steps it trained in
    this sitting, start-up included; after a resume the steps recomputed from the checkpoint are not
    counted, so it is an upper bound), ``median_step_seconds`` (the median time between two steps of
    its log, every sitting's) and ``load`` (the mean one-minute load average sampled
    while it trained: above ``jobs``, something else shared the machine).

    With ``budget_hours``, the queue starts no run once the record's wall time (every sitting,
    :func:`tanbias.lab.runs.queue_record`, this one included) has reached it; a run already
    training finishes. The sitting's ``stopped`` then says so and ``not_started`` lists the runs
    left.
    """
    import subprocess
    import sys
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from datetime import datetime

    jobs = check_int("jobs", jobs, lo=1, hi=64)
    if budget_hours is not None:
        budget_hours = check_real("budget_hours", budget_hours, lo=0.0)
    resolve_device(device)                  # a bad or unavailable device fails here, not in every run
    root = Path(out_root) if out_root is not None else runs.RUNS_DIR
    todo = [Path(c) for c in configs if fresh or not runs.is_complete(root / Path(c).stem)]
    lock = threading.Lock()
    path = root / report_name
    prior = runs.queue_record(path) if budget_hours is not None else None
    spent_before = 0.0 if prior is None else prior["wall_seconds"]
    t0 = time.perf_counter()
    sitting = {"wall_seconds": 0.0, "jobs": jobs, "how": how, "started": datetime.now().isoformat(timespec="seconds"),
               "finished": None, "runs": {}}
    loads: dict[str, list[float]] = {}

    def report() -> None:
        """Write the report with this sitting as it stands (called under the lock after every run)."""
        sitting["wall_seconds"] = round(time.perf_counter() - t0, 1)
        if not sittings:
            doc = sitting
        else:
            prior = json.loads(path.read_text()) if path.exists() else {}
            others = [x for x in prior.get("sittings", []) if x.get("started") != sitting["started"]]
            doc = {"sittings": [*others, sitting]}
        runs.atomic_write_text(path, json.dumps(doc, indent=1) + "\n")

    def over_budget() -> bool:
        return budget_hours is not None and spent_before + time.perf_counter() - t0 >= 3600.0 * budget_hours

    def one(cfg):
        with lock:
            if over_budget():
                sitting["stopped"] = (f"the budget of {budget_hours:g} h was reached "
                                      f"({(spent_before + time.perf_counter() - t0) / 3600:.2f} h recorded)")
                sitting.setdefault("not_started", []).append(cfg.stem)
                report()
                return cfg.stem, None
            loads[cfg.stem] = [os.getloadavg()[0]]
        out = root / cfg.stem
        (out / "work").mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "tanbias.lab", "train", str(cfg), "--out", str(out), "--no-progress",
               "--device", device]
        if fresh:
            cmd.append("--fresh")
        before = len(_logged_steps(out))
        t1 = time.perf_counter()
        started = datetime.now().isoformat(timespec="seconds")
        with open(out / "work" / "train.log", "a") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        dt = time.perf_counter() - t1
        rec = {"exit": rc, "seconds": round(dt, 1), "start": started,
               "end": datetime.now().isoformat(timespec="seconds")}
        with lock:
            steps = _config_steps(cfg)
            if steps:
                rec.update(steps=steps, resumed_after=before,
                           seconds_per_step=round(dt / max(1, steps - before), 3))
            gaps = np.diff(_logged_steps(out))
            if (gaps > 0).any():               # a resume restarts the clock: its gap is not a step's
                rec["median_step_seconds"] = round(float(np.median(gaps[gaps > 0])), 3)
            rec["load"] = round(float(np.mean(loads.pop(cfg.stem))), 2)
            sitting["runs"][cfg.stem] = rec
            report()
            if rc == 0 and commit and runs.is_complete(out):
                rec["commit"] = _git_commit_run(out, f"{report_name.split('.')[0]}: {cfg.stem} finished "
                                                     f"({dt / 60:.1f} min, committed as it completed)",
                                                extra=[path])
        print(f"{cfg.stem}: exit {rc} after {dt / 60:.1f} min", flush=True)
        return cfg.stem, rec

    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(RECORD_EVERY_S):
            with lock:
                load = os.getloadavg()[0]
                for samples in loads.values():
                    samples.append(load)
                report()

    if todo:
        threading.Thread(target=heartbeat, name="queue-record", daemon=True).start()
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, todo))
    finally:
        stop.set()
    sitting["finished"] = datetime.now().isoformat(timespec="seconds")
    if todo:
        with lock:
            report()
            if commit:
                _git_commit([path], f"{report_name}: a sitting of {len(todo)} runs finished", cwd=path.parent, check=False)
    sitting["wall_seconds"] = round(time.perf_counter() - t0, 1)
    return sitting


def run_experiment(design: Design, jobs: int = 2, fresh: bool = False, commit: bool = False, seeds=None,
                   configs_dir=None, out_root=None, paths=None, device: str = "auto") -> dict:
    """Train an experiment's runs (``python -m tanbias.lab <name>``, ``make <name>``): its config files
    (:func:`experiment_configs`) with ``jobs`` parallel processes (:func:`run_queue`), complete runs
    skipped, an interrupted one resumed from its checkpoint (the surgery's bases included), each run
    committed as it finishes with ``commit``, together with the sitting's record
    ``data/runs/<name>.json``.

    A design with :attr:`~tanbias.lab.experiments.Design.stages` trains its own cells first, then
    each stage's, in the stage's order, into the stage's record ``data/runs/<name>-<stage>.json``
    and within its budget. The sitting returned is the last queue's that had runs to train (its
    ``queues`` lists every queue's record name).

    ``seeds`` (one tuple for every architecture) replaces the design's; ``paths`` replaces the
    design's config files (tests pass smoke-size ones from :func:`experiment_configs`).
    """
    how = (f"python -m tanbias.lab {design.name} --jobs {jobs}" + (" --commit" if commit else "")
           + (" --fresh" if fresh else "") + (f" --seeds {' '.join(map(str, seeds))}" if seeds else ""))
    if paths is not None:
        return run_queue(paths, jobs=jobs, fresh=fresh, out_root=out_root, commit=commit,
                         report_name=f"{design.name}.json", how=how, device=device, sittings=design.sittings)
    # the design's own queue has no budget the queue enforces (make bench reads it); a stage's has
    queues = [("", f"{design.name}.json", None)]
    queues += [(st.name, f"{design.name}-{st.name}.json", st.budget_hours) for st in design.stages]
    result = None
    for stage, record, budget in queues:
        order = design.names(seeds, stage=stage) if design.stages else design.names(seeds)
        configs = write_configs([design.config_of(n) for n in order], configs_dir)
        sitting = run_queue(configs, jobs=jobs, fresh=fresh, out_root=out_root, commit=commit, report_name=record,
                            how=how, device=device, sittings=design.sittings, budget_hours=budget)
        if result is None or sitting["runs"]:
            result = sitting
    return {**result, "queues": [record for _, record, _ in queues]}


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
