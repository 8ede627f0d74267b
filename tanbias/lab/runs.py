"""Training-run folders: configs, atomic writes, manifests, and loading with integrity checks (ch 7, 8).

A run lives in ``data/runs/<name>/`` (``TANBIAS_RUNS_DIR`` overrides the parent)::

    config.json       the validated config (committed)
    metrics.jsonl     append-only log: one JSON record per training step, then the
                      evaluation record (committed; fsync after every line)
    token_counts.npy  counts of every token id in the training stream the run consumed
    input_counts.npy  (an aliased run) counts of every input id the run was shown
    types.csv         (an aliased run) radii per merged type on the common held-out text
    alias.csv         (an aliased run) the convergence of its aliases, per probe step
    rivals.csv        the rival accounts' readings per probe step and layer (runs trained after they existed)
    alignment.csv     tidy table: one row per (step, layer, bucket, proxy)   (committed)
    radius.csv        per-token concentration radius per (step, layer)      (committed)
    radius_corr.csv   frequency-radius correlations per (step, layer)       (committed)
    summary.json      evaluation vs unigram baseline, timings               (committed)
    views.json        per-layer numbers of the trained views of chapters 5, 6 (committed)
    tokens.csv        per-token radius t on a common held-out text (ch 8)  (committed)
    premise.csv       count-matched premise per layer on that text (ch 12) (committed; runs from ch 12 on)
    manifest.json     config, seed, versions, git commit, sha256 of every committed file
    work/             checkpoint + raw probe captures (git-ignored, large)

Every committed file is listed with its checksum in ``manifest.json``;
:func:`load_run` refuses a missing or altered file with a
:class:`~tanbias.errors.CorruptFileError` that names the file and the command
that regenerates it.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import tanbias
from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.config import RunConfig

__all__ = ["RUNS_DIR", "git_commit", "run_dir", "atomic_write_bytes", "atomic_write_text", "append_jsonl",
           "read_jsonl", "sha256", "write_manifest", "verify_run", "load_run", "RunData",
           "COMMITTED_FILES", "is_complete", "regenerate_command", "list_runs", "capture_path", "checkpoint_path",
           "read_config", "atomic_save_npz", "MEMO_DIR", "SETTLED_S", "inputs_digest", "memo_on", "memoised", "queue_record"]

ROOT = Path(__file__).resolve().parents[2]
RUNS_DIR = Path(os.environ.get("TANBIAS_RUNS_DIR", ROOT / "data" / "runs"))
COMMITTED_FILES = ("config.json", "metrics.jsonl", "token_counts.npy", "alignment.csv",
                   "radius.csv", "radius_corr.csv", "summary.json", "views.json", "tokens.csv",
                   "anisotropy.csv", "premise.csv", "input_counts.npy", "types.csv", "alias.csv", "rivals.csv")


def is_complete(run) -> bool:
    """A run is complete when its manifest lists ``tokens.csv`` (the last file its analysis writes)."""
    man = run_dir(run) / "manifest.json"
    try:
        return "tokens.csv" in json.loads(man.read_text()).get("files", {})
    except (OSError, ValueError):
        return False


def run_dir(run) -> Path:
    """Folder of a run given its name (under :data:`RUNS_DIR`) or a path to it."""
    p = Path(run)
    if p.is_dir() or len(p.parts) > 1:
        return p
    return RUNS_DIR / str(run)


def capture_path(run, step: int) -> Path:
    """The probe capture of ``step`` in a run folder: ``work/probe/step_XXXXXX.npz``."""
    return run_dir(run) / "work" / "probe" / f"step_{int(step):06d}.npz"


def checkpoint_path(run) -> Path:
    """The run's last checkpoint, ``work/ckpt.pt`` (git-ignored)."""
    return run_dir(run) / "work" / "ckpt.pt"


def read_config(run) -> RunConfig:
    """The run's ``config.json`` as a :class:`~tanbias.lab.config.RunConfig` (``to_json()`` gives
    the file back byte for byte)."""
    d = run_dir(run)
    path = d / "config.json"
    try:
        return RunConfig.from_dict(json.loads(path.read_text(encoding="utf-8")), stored=True)
    except FileNotFoundError:
        raise CorruptFileError(path, regenerate_command(d), "config is missing") from None
    except json.JSONDecodeError as exc:
        raise CorruptFileError(path, regenerate_command(d), f"not valid JSON: {exc}") from None
    except (ParameterError, TypeError) as exc:
        raise CorruptFileError(path, regenerate_command(d), f"not a valid run config: {exc}") from None


def list_runs(runs_dir=None) -> list[str]:
    """Names of the runs that have a manifest under ``runs_dir`` (default :data:`RUNS_DIR`)."""
    d = Path(runs_dir) if runs_dir is not None else RUNS_DIR
    return sorted(p.parent.name for p in d.glob("*/manifest.json"))


def regenerate_command(run, fresh: bool = True) -> str:
    """The shell command that rebuilds a run folder from its config."""
    d = run_dir(run)
    try:
        rel = d.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        rel = d
    return f"python -m tanbias.lab train {rel / 'config.json'}" + (" --fresh" if fresh else "")


# --------------------------------------------------------------------------- writing
def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temp file in the same folder, fsync, os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; committed files should be world-readable
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_save_npz(path, **arrays) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def atomic_save_npy(path, array) -> None:
    """Save one array as ``.npy`` atomically (:func:`atomic_write_bytes`)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(array))
    atomic_write_bytes(path, buf.getvalue())


def append_jsonl(path, record: dict) -> None:
    """Append one JSON line and fsync: a record that was logged survives a kill."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path) -> list[dict]:
    """Records of a JSONL log; a torn last line (killed mid-write) is dropped."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # torn final line of a killed run
            raise CorruptFileError(path, regenerate_command(path.parent),
                                   f"line {i + 1} is not valid JSON") from None
    return out


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_commit() -> dict:
    """The repository's HEAD commit, and whether the package has uncommitted changes."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "tanbias"], cwd=ROOT,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except Exception:  # no git: the manifest says so
        commit, dirty = None, None
    return {"commit": commit, "package_dirty": dirty}


def write_manifest(run, config: RunConfig, extra: dict | None = None) -> dict:
    """Write ``manifest.json``: config, seed, versions, git commit, checksums of committed files."""
    d = run_dir(run)
    try:
        import torch
        import transformers
        versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    except ImportError:
        versions = {}
    files = {name: {"sha256": sha256(d / name), "bytes": (d / name).stat().st_size}
             for name in COMMITTED_FILES if (d / name).exists()}
    try:
        summary = json.loads((d / "summary.json").read_text())
    except (OSError, ValueError):
        summary = {}
    manifest = {
        "run": d.name, "config": config.to_dict(), "seed": config.seed,
        **({"device": summary["device"]} if "device" in summary else {}),
        "precision": config.precision,
        "package_version": tanbias.__version__, "git": git_commit(),
        "python": sys.version.split()[0], "platform": platform.platform(), **versions,
        "files": files,
        "commands": {"train": regenerate_command(d, fresh=True),
                     "probe": f"python -m tanbias.lab probe {d.name}",
                     "reproduce": f"python -m tanbias.lab reproduce {d.name}"},
        **(extra or {}),
    }
    atomic_write_text(d / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


# --------------------------------------------------------------------------- loading
def verify_run(run) -> dict:
    """Check every file listed in the run's manifest against its sha256.

    Returns
    -------
    dict
        The manifest.

    Raises
    ------
    CorruptFileError
        Naming the missing/altered file and the command that regenerates it.
    """
    d = run_dir(run)
    regen = regenerate_command(d)
    path = d / "manifest.json"
    if not path.is_file():
        raise CorruptFileError(path, regen, "manifest is missing")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        files = manifest["files"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CorruptFileError(path, regen, f"not a valid manifest: {exc}") from None
    for name, entry in files.items():
        f = d / name
        if not f.is_file():
            raise CorruptFileError(f, regen, "file is missing")
        if sha256(f) != entry["sha256"]:
            raise CorruptFileError(f, regen, "sha256 does not match manifest.json")
    return manifest


@dataclass
class RunData:
    """A committed run, loaded and verified."""
    name: str
    path: Path
    manifest: dict
    config: RunConfig
    metrics: "object"        # pandas.DataFrame, one row per training step
    evaluation: dict
    summary: dict
    alignment: "object"      # pandas.DataFrame, tidy
    radius: "object"         # pandas.DataFrame
    radius_corr: "object"    # pandas.DataFrame
    token_counts: np.ndarray
    tokens: "object" = None  # pandas.DataFrame of per-token radii on held-out text (tokens.csv), if measured
    anisotropy: "object" = None    # pandas.DataFrame per probe step, layer and positions (anisotropy.csv)
    probe_evals: "object" = None   # pandas.DataFrame of held-out losses at the probe steps, if logged
    premise: "object" = None       # pandas.DataFrame of the count-matched premise per layer (premise.csv)
    #: an aliased run's (chapter 11's aliasing knob): counts of the input ids it was shown
    #: (input_counts.npy), radii per merged type (types.csv), its aliases' convergence (alias.csv)
    input_counts: np.ndarray | None = None
    types: "object" = None
    convergence: "object" = None
    #: the rival accounts' readings per probe step and layer (rivals.csv; runs trained before it: None)
    rivals: "object" = None


def load_run(run) -> RunData:
    """Load a run folder after verifying its checksums (:func:`verify_run`).

    Parameters
    ----------
    run : str or path
        Run name under ``data/runs`` (e.g. ``"decoder-natural-s0"``) or a folder.

    Raises
    ------
    CorruptFileError
        A file is missing, altered or unreadable (the message names it and the
        command that regenerates it).
    """
    import pandas as pd

    d = run_dir(run)
    manifest = verify_run(d)
    regen = regenerate_command(d)

    def table(name):
        try:
            return pd.read_csv(d / name)
        except Exception as exc:
            raise CorruptFileError(d / name, regen, f"unreadable CSV: {exc}") from None

    def anisotropy():
        a = table("anisotropy.csv")
        if "positions" not in a.columns:         # analysed before chapter 12: every captured position
            a.insert(a.columns.get_loc("layer") + 1, "positions", "all")
        return a

    def npy(name):
        try:
            return np.load(d / name)
        except Exception as exc:
            raise CorruptFileError(d / name, regen, f"unreadable: {exc}") from None

    records = read_jsonl(d / "metrics.jsonl")
    steps = [r for r in records if r.get("type") == "step"]
    evals = [r for r in records if r.get("type") == "eval"]
    try:
        counts = np.load(d / "token_counts.npy")
    except Exception as exc:
        raise CorruptFileError(d / "token_counts.npy", regen, f"unreadable: {exc}") from None
    return RunData(name=d.name, path=d, manifest=manifest, config=read_config(d),
                   metrics=pd.DataFrame(steps), evaluation=evals[-1] if evals else {},
                   summary=json.loads((d / "summary.json").read_text()),
                   alignment=table("alignment.csv"), radius=table("radius.csv"),
                   radius_corr=table("radius_corr.csv"), token_counts=counts,
                   tokens=table("tokens.csv") if "tokens.csv" in manifest["files"] else None,
                   anisotropy=anisotropy() if "anisotropy.csv" in manifest["files"] else None,
                   probe_evals=pd.DataFrame([r for r in records if r.get("type") == "probe_eval"]) if any(
                       r.get("type") == "probe_eval" for r in records) else None,
                   premise=table("premise.csv") if "premise.csv" in manifest["files"] else None,
                   input_counts=npy("input_counts.npy") if "input_counts.npy" in manifest["files"] else None,
                   types=table("types.csv") if "types.csv" in manifest["files"] else None,
                   convergence=table("alias.csv") if "alias.csv" in manifest["files"] else None,
                   rivals=table("rivals.csv") if "rivals.csv" in manifest["files"] else None)



# --------------------------------------------------------------------------- a memo of analyses
#: where :func:`memoised` keeps the analyses of the committed runs (git-ignored, under work/)
MEMO_DIR = Path(os.environ.get("TANBIAS_MEMO_DIR", ROOT / "work" / "memo"))


#: the digests of :func:`inputs_digest` this process computed, by the files' sizes and times
_DIGESTS: dict = {}
#: a file written less than this long before a digest is read in full every time: its time may not
#: yet tell it from a later write of the same size (the "racy" case of git's index)
SETTLED_S = 2.0


def _input_files() -> list[tuple[Path, Path]]:
    """``(root, file)`` of everything :func:`inputs_digest` reads, in the order it reads them."""
    roots = [ROOT / "data", RUNS_DIR, Path(__file__).resolve().parents[1]]
    seen, files = set(), []
    for top in roots:
        top = top.resolve()
        if top in seen or not top.exists():
            continue
        seen.add(top)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in ("work", "__pycache__"))
            files += [(top, Path(dirpath, f)) for f in sorted(filenames) if not f.endswith(".pyc")]
    return files


def inputs_digest() -> str:
    """sha256 of everything an analysis of the committed data can read: every file under
    ``data/`` and :data:`RUNS_DIR` (run ``work/`` folders left out), the package's source,
    and the versions of Python and of the numerical libraries.

    The files are read (about 300 MB) once per process while their sizes and modification times
    stay what they were, and every time while one of them was written in the last
    :data:`SETTLED_S` seconds; the digest is the same either way.
    """
    import importlib.metadata as md

    files = _input_files()
    stats = [path.stat() for _, path in files]
    versions = [f"{lib}={md.version(lib)};" for lib in ("numpy", "pandas", "scipy", "statsmodels", "patsy")]
    key = (tuple(versions), sys.version, tuple((str(path), st.st_size, st.st_mtime_ns, st.st_ino)
                                               for (_, path), st in zip(files, stats)))
    if key in _DIGESTS:
        return _DIGESTS[key]
    h = hashlib.sha256()
    for top, path in files:
        h.update(str(path.relative_to(top.parent)).encode() + b"\0")
        h.update(path.read_bytes())
    for v in versions:
        h.update(v.encode())
    h.update(sys.version.encode())
    digest = h.hexdigest()
    if all(st.st_mtime_ns < time.time_ns() - SETTLED_S * 1e9 for st in stats):
        if len(_DIGESTS) >= 8:
            _DIGESTS.clear()
        _DIGESTS[key] = digest
    return digest


def memo_on() -> bool:
    """Whether :func:`memoised` keeps analyses on disk: yes unless ``TANBIAS_MEMO=0``."""
    return os.environ.get("TANBIAS_MEMO", "1") != "0"


def memoised(name: str, compute):
    """``compute()``, kept on disk in :data:`MEMO_DIR` under a key of all it can read.

    The book's chapters and the tests analyse the same committed runs several times
    (chapter 10's analysis is computed again by the closing page and by the tests of
    the reports); this computes it once per state of the data and the code. The key is
    :func:`inputs_digest`: a changed file under ``data/``, a changed module of the package
    or another library version gives a new key, so a stale result is never returned. An
    unreadable entry is computed again; ``TANBIAS_MEMO=0`` turns the memo off. The entry
    is written atomically, so processes that compute it side by side do not clash.
    """
    import pickle

    if not memo_on():
        return compute()
    memo_dir = Path(MEMO_DIR)
    path = memo_dir / f"{name}-{inputs_digest()[:24]}.pkl"
    with _memo_lock(memo_dir / f".{name}.lock"):      # a second process waits, then reads
        if path.exists():
            try:
                return pickle.loads(path.read_bytes())
            except Exception:            # noqa: BLE001 - any unreadable entry is recomputed
                pass
        value = compute()
        try:
            atomic_write_bytes(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            for old in memo_dir.glob(f"{name}-*.pkl"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError:                  # a read-only checkout still gets its answer
            pass
        return value


class _memo_lock:
    """An exclusive advisory lock on ``path`` (``fcntl.flock``; none where there is no fcntl
    or the folder cannot be written)."""

    def __init__(self, path: Path):
        self.path, self.f = path, None

    def __enter__(self):
        try:
            import fcntl

            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.f = open(self.path, "a")
            fcntl.flock(self.f, fcntl.LOCK_EX)
        except (ImportError, OSError):
            self.f = None
        return self

    def __exit__(self, *exc):
        if self.f is not None:
            self.f.close()               # closing the file releases the lock
        return False


def queue_record(path) -> dict | None:
    """A queue's record (:func:`tanbias.lab.pipeline.run_queue`'s ``report_name`` beside the runs, e.g.
    ``data/runs/horizon.json``), summed over its sittings: ``sittings``, ``wall_seconds`` (the
    sittings' wall time, with any ``unrecorded_seconds`` added after the fact from the runs' own logs
    where a sitting outlived its last write (each with its ``unrecorded_note``), less any
    ``paused_seconds``: time the processes were stopped while the machine measured something else),
    ``unrecorded_seconds`` (their sum), ``runs_finished`` (exit 0) and ``run_seconds`` (their training
    time, runs in parallel counted each). None when there is no record."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        sittings = json.loads(path.read_text(encoding="utf8")).get("sittings", [])
        done = [r for st in sittings for r in st["runs"].values() if r["exit"] == 0]
        unrecorded = sum(st.get("unrecorded_seconds", 0.0) for st in sittings)
        wall = sum(st["wall_seconds"] - st.get("paused_seconds", 0.0) for st in sittings) + unrecorded
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptFileError(path, f"git checkout -- {path}",
                               f"unreadable queue record (its queue writes it: python -m tanbias.lab <name>): {exc}") from None
    return {"sittings": len(sittings), "wall_seconds": wall, "unrecorded_seconds": unrecorded, "runs_finished": len(done),
            "run_seconds": sum(r["seconds"] for r in done)}
