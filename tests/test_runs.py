"""The disk memo of analyses of the committed data (``tanbias.lab.runs.memoised``).

The run folders themselves (manifests, checksums, atomic writes, resume) are tested
where runs are written: ``test_train.py`` and ``test_pipeline.py``.
"""
from __future__ import annotations

import pytest

from tanbias.lab import runs


@pytest.fixture
def memo_world(tmp_path, monkeypatch):
    """A repository root of its own: data/ with one run file, a memo folder."""
    data = tmp_path / "data" / "runs" / "r1"
    data.mkdir(parents=True)
    (data / "summary.json").write_text('{"loss": 1.0}')
    (data / "work").mkdir()
    monkeypatch.setattr(runs, "ROOT", tmp_path)
    monkeypatch.setattr(runs, "RUNS_DIR", tmp_path / "data" / "runs")
    monkeypatch.setattr(runs, "MEMO_DIR", tmp_path / "memo")
    monkeypatch.delenv("TANBIAS_MEMO", raising=False)
    return tmp_path


def _counting():
    calls = []

    def compute():
        calls.append(1)
        return {"value": len(calls)}
    return calls, compute


def test_a_memoised_analysis_is_computed_once_per_state_of_the_data(memo_world):
    calls, compute = _counting()
    assert runs.memoised("a", compute) == {"value": 1}
    assert runs.memoised("a", compute) == {"value": 1} and len(calls) == 1
    # another analysis has its own entry
    assert runs.memoised("b", compute) == {"value": 2}
    # a changed data file is a new key: computed again, and the stale entry is removed
    (memo_world / "data" / "runs" / "r1" / "summary.json").write_text('{"loss": 2.0}')
    assert runs.memoised("a", compute) == {"value": 3}
    assert len(list((memo_world / "memo").glob("a-*.pkl"))) == 1
    # a run's work/ folder (checkpoints, captures) is not part of the key
    (memo_world / "data" / "runs" / "r1" / "work" / "ckpt.pt").write_bytes(b"x")
    assert runs.memoised("a", compute) == {"value": 3}


def test_a_corrupt_entry_is_recomputed_and_the_memo_can_be_turned_off(memo_world, monkeypatch):
    calls, compute = _counting()
    runs.memoised("a", compute)
    entry, = (memo_world / "memo").glob("a-*.pkl")
    entry.write_bytes(b"not a pickle")
    assert runs.memoised("a", compute) == {"value": 2}
    assert runs.memoised("a", compute) == {"value": 2}
    monkeypatch.setenv("TANBIAS_MEMO", "0")
    assert runs.memoised("a", compute) == {"value": 3}
    assert runs.memoised("a", compute) == {"value": 4}


def test_the_key_follows_every_data_file_and_not_the_work_folders(memo_world):
    key = runs.inputs_digest()
    (memo_world / "data" / "runs" / "r1" / "work" / "capture.npz").write_bytes(b"y")
    assert runs.inputs_digest() == key
    (memo_world / "data" / "new.csv").write_text("a\n1\n")
    assert runs.inputs_digest() != key


def _settle(root, seconds=60):
    """Date every file under ``root`` ``seconds`` back: written long before the digest is read."""
    import os
    import time

    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(time.time_ns() - seconds * 10**9,) * 2)


def test_settled_files_are_read_once_per_process_and_a_change_is_read_again(memo_world, monkeypatch):
    """The key reads 300 MB: a process reads files whose sizes and times have not moved once, and
    reads them again when one moves, or while one was written within SETTLED_S (same digest)."""
    from pathlib import Path

    monkeypatch.setattr(runs, "_DIGESTS", {})
    package = memo_world / "pkg" / "lab"               # the package's source: one module of its own
    package.mkdir(parents=True)
    (package / "runs.py").write_text("x = 1\n")
    monkeypatch.setattr(runs, "__file__", str(package / "runs.py"))
    summary = memo_world / "data" / "runs" / "r1" / "summary.json"
    reads = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or read_bytes(self))

    def digest():
        reads.clear()
        return runs.inputs_digest(), reads.count(summary)

    fresh, n = digest()                                # just written: read, and read again
    assert n > 0 and digest() == (fresh, n)
    _settle(memo_world)
    assert digest() == (fresh, n)                      # the same digest, read once more
    assert digest() == (fresh, 0)                      # settled and unmoved: not read again
    summary.write_text('{"loss": 3.0}')                # the same size, another time
    _settle(memo_world, seconds=30)
    changed, m = digest()
    assert changed != fresh and m == n and digest() == (changed, 0)
