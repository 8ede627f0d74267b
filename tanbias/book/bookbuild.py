"""The strict book build, with the chapters read (and so executed) on several cores.

``python -m tanbias.book.bookbuild ROOT [--path-output DIR] [--jobs N]`` is
``jupyter-book build ROOT --all -W -n --keep-going`` with Sphinx's parallel
read: jupyter-book's command line has no ``--jobs``, so this asks it for the
configuration it would use (its own ``get_config_only``) and calls its
``build_sphinx`` with ``jobs=N``. Reading a chapter executes it (myst-nb's
``inline`` mode, which evaluates the prose's ``{eval}`` numbers), so N
processes execute N chapters at a time. ``make book``, the tests' build and
``make bench`` all use it, so they build the same way.

Every extension of the book declares itself parallel-read safe except
``sphinx_multitoc_numbering``, which ``sphinx_external_toc`` loads whatever
the configuration says and whose ``setup`` returns nothing, so Sphinx falls
back to a serial read. It only patches how section numbers are assigned, once
the documents are read, in the main process (and this book numbers no
sections); :func:`declare_multitoc_parallel_safe` states that for it. And
``sphinx_proof`` declares itself parallel safe, keeps its data in
``env.proof_list`` (merged by its own ``env-merge-info`` handler) but leaves its
domain's ``merge_domaindata`` unimplemented, which Sphinx calls when it merges
the workers' environments; :func:`declare_multitoc_parallel_safe` gives it the
no-op its empty domain data needs.

Before the pages are read, :func:`memoise_analyses` computes the analyses of the committed runs
that the pages read (every report of :data:`tanbias.lab.analysis.findings.REPORTS`), on as many
processes, into the disk memo (:func:`tanbias.lab.runs.memoised`). The pages then read them. Were
they computed by the pages, the first page to need one would compute it while a page on the other
core waited for it, and a page's execution time would depend on which page came first.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tanbias.lab import runs
from tanbias.lab.experiments import EXPERIMENTS

__all__ = ["default_jobs", "declare_multitoc_parallel_safe", "order", "memoise_analyses", "build", "main"]

#: what :func:`memoise_analyses` prints, and ``make bench`` reads back
MEMOISED_LINE = "memoised the analyses of the committed runs in {seconds:.1f} s"


def declare_multitoc_parallel_safe() -> None:
    """Make ``sphinx_multitoc_numbering.setup`` return the parallel-safety metadata it omits."""
    import sphinx_multitoc_numbering as multitoc

    if getattr(multitoc.setup, "_tanbias_declared", False):
        return
    original = multitoc.setup

    def setup(app):
        meta = original(app) or {}
        return {"parallel_read_safe": True, "parallel_write_safe": True, **meta}

    setup._tanbias_declared = True
    multitoc.setup = setup

    from sphinx_proof.domain import ProofDomain

    if "merge_domaindata" not in ProofDomain.__dict__:
        # its domain data is empty: the proofs live in env.proof_list, which sphinx_proof merges
        ProofDomain.merge_domaindata = lambda self, docnames, otherdata: None


def default_jobs() -> int:
    """Processes for the parallel read: the cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                       # not Linux
        return max(1, os.cpu_count() or 1)


def _analyse(name: str) -> str | None:
    """``REPORTS[name].analyse()`` (memoised on disk); the error's text if it fails."""
    from tanbias.lab.analysis.findings import REPORTS

    try:
        REPORTS[name].analyse()
    except Exception as exc:  # noqa: BLE001 - the page that reads it raises it again, in its cell
        return f"{name}: {type(exc).__name__}: {exc}"
    return None


def order() -> list[str]:
    """The reports in the order :func:`memoise_analyses` starts them: the designs with the most runs first
    (their analyses take longest), from the registry (:data:`tanbias.lab.experiments.EXPERIMENTS`)."""
    from tanbias.lab.analysis.findings import REPORTS

    return sorted(REPORTS, key=lambda n: -len(EXPERIMENTS[n].cells()) if n in EXPERIMENTS else 0)


def memoise_analyses(jobs: int) -> float:
    """Compute every report's analysis of the committed runs on ``jobs`` processes, into the disk memo;
    the seconds it took. Nothing is done where the memo is off (``TANBIAS_MEMO=0``). An analysis that
    fails is named on stderr and left to the page that reads it, whose cell then fails the build."""
    import time
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from tanbias.lab.analysis.findings import REPORTS

    if not runs.memo_on():
        return 0.0
    names = order()
    t0 = time.perf_counter()
    # spawn: a fresh interpreter per worker, as a page's kernel is (no state forked from this one)
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=get_context("spawn")) as pool:
        for error in pool.map(_analyse, names):
            if error:
                print(f"memoise_analyses: {error}", file=sys.stderr)
    seconds = time.perf_counter() - t0
    print(MEMOISED_LINE.format(seconds=seconds), flush=True)
    return seconds


def build(root=".", path_output=None, jobs: int | None = None) -> int:
    """Clean, strict HTML build of the book at ``root`` (the analyses memoised first,
    :func:`memoise_analyses`); returns Sphinx's exit status (0: no warning)."""
    from jupyter_book.cli.main import build as jb_build
    from jupyter_book.sphinx import build_sphinx

    declare_multitoc_parallel_safe()
    jobs = default_jobs() if jobs is None else int(jobs)
    memoise_analyses(jobs)
    root = Path(root).resolve()
    out = Path(path_output).resolve() if path_output is not None else root
    path_config, src, overrides = jb_build.callback(
        path_source=str(root), path_output=str(out), config=None, toc=None, warningiserror=True,
        nitpick=True, keep_going=True, freshenv=True, builder="html", custom_builder=None, verbose=0,
        quiet=0, individualpages=False, get_config_only=True)
    overrides["external_toc_path"] = str((root / overrides["external_toc_path"]).as_posix())
    return build_sphinx(str(src), str(out / "_build" / "html"), use_external_toc=True, noconfig=True,
                        path_config=path_config, confoverrides=overrides, builder="html",
                        warningiserror=True, keep_going=True, freshenv=True,
                        jobs=jobs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tanbias.book.bookbuild", description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=".")
    parser.add_argument("--path-output", default=None, help="folder that receives _build/ (default ROOT)")
    parser.add_argument("--jobs", type=int, default=None, help="parallel read processes (default: the cores)")
    args = parser.parse_args(argv)
    result = build(args.root, args.path_output, args.jobs)
    return result if isinstance(result, int) else 1


if __name__ == "__main__":
    sys.exit(main())
