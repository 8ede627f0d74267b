"""Where a measurement is kept: its folder, written whole or not at all, and read back with its checksums.

:func:`check_out` says whether a measurement may be written to a folder, :func:`staged_folder`
writes it beside and renames it once complete, :func:`load_measurement` reads it back (every table
against the sha256 its manifest holds, with chapter 9's results of it: :func:`results_of`) and
:func:`split_revisions` splits a series into its checkpoints. :data:`MEASURED_DIR` holds the measurements the book reads.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from tanbias.errors import ParameterError
from tanbias.lab.analysis import pretrained as pt
from tanbias.lab.analysis.pretrained_report import Results, results

__all__ = ["COMMAND", "MEASURED_DIR", "check_out", "staged_folder", "load_measurement", "results_of",
           "split_revisions"]

#: The command that writes a measurement folder (named by the errors that find one damaged).
COMMAND = "python -m tanbias measure"


#: Measurements the command made that the book reads (``data/measure/<name>/``: the tables and the
#: manifest, whose ``command_line`` is the command that wrote them; ``data/measure/README.md``).
MEASURED_DIR = pt.PRETRAINED_DIR.parent / "measure"


def _rebuild(folder) -> str:
    return f"{COMMAND} MODEL --out {folder}"


def check_out(out) -> Path:
    """``out`` if a measurement may be written there: a folder that does not exist yet, an empty
    one, or one this command wrote before (it holds a ``manifest.json`` naming the command).

    Raises
    ------
    ParameterError
        ``out`` is a file, or a folder holding anything else (it is never overwritten).
    """
    out = Path(out).expanduser()
    if out.is_file():
        raise ParameterError(f"out={str(out)!r} is not allowed: valid range is a folder; it is a file. "
                             "Pass another --out.")
    if out.is_dir() and any(out.iterdir()):
        try:
            ours = json.loads((out / "manifest.json").read_text()).get("command") == COMMAND
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise ParameterError(f"out={str(out)!r} is not allowed: valid range is a new or empty folder, or one "
                                 f"this command wrote before (it is replaced). It holds other files. Pass another "
                                 "--out.")
    return out


@contextlib.contextmanager
def staged_folder(out):
    """A folder beside ``out`` to write into; renamed to ``out`` when the block completes.

    On an error (or an interruption) the staged folder is removed and ``out`` is left as it
    was. A measurement ``out`` held before is replaced only once the new one is complete.

    Example
    -------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> try:
    ...     with staged_folder(root / "m") as tmp:
    ...         _ = (tmp / "a.csv").write_text("x")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> sorted(p.name for p in root.iterdir())
    []
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    try:
        yield tmp
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def load_measurement(folder, results: bool = True) -> dict:
    """A measurement folder's tables (pandas frames) and its manifest, checksums verified; with
    ``results``, chapter 9's results of its last checkpoint too (:func:`results_of`), so that what
    draws it reads them and computes nothing.

    Raises
    ------
    CorruptFileError
        The manifest or a table is missing or altered (names the command that writes it).
    """
    tables = pt.load_tables(folder, _rebuild(folder))
    return {**tables, "results": results_of(tables)} if results else tables


def results_of(tables: dict) -> Results:
    """Chapter 9's results (:func:`tanbias.lab.analysis.pretrained_report.results`) of a measurement's
    last checkpoint, under its label (:func:`split_revisions`): what its report's words are read from.
    The manifest must hold the seconds (a measurement under way passes them in)."""
    parts = split_revisions(tables)
    label = list(parts)[-1]
    return results({label: parts[label]})


def split_revisions(tables: dict) -> dict:
    """``{label: tables}``: one entry per checkpoint, in the form the chapter's figures read.

    One model gives ``{its name: tables}`` (without ``results``); a series (tables with a ``revision`` column)
    gives one entry per revision, each with the random-init null of the alignment test
    (measured once) beside its own rows.
    """
    man = tables["manifest"]
    name = Path(str(man["model"]).rstrip("/\\")).name or str(man["model"])
    keys = [k for k in tables if k not in ("manifest", "trajectory", "results")]
    if "revision" not in tables["anisotropy"]:
        return {name: {k: v for k, v in tables.items() if k != "results"}}
    out = {}
    for rev in dict.fromkeys(tables["anisotropy"]["revision"]):
        part = {"manifest": man}
        for key in keys:
            t = tables[key]
            keep = t["revision"] == rev
            if key == "alignment":
                keep |= t["model"] == "random-init"
            part[key] = t[keep].drop(columns=["revision", "step"]).reset_index(drop=True)
        out[str(rev)] = part
    return out
