"""Helpers shared by the book and browser tests (importable: pytest pythonpath = tests)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def toc_docs() -> list[str]:
    """Docnames of _toc.yml, in reading order."""
    from tanbias.bench import toc_documents

    return toc_documents(ROOT)


def toc_notebooks() -> list[str]:
    """Docnames in _toc.yml whose source is an executable notebook."""
    from tanbias.bench import is_notebook

    out = []
    for doc in toc_docs():
        src = ROOT / f"{doc}.md"
        if src.exists() and is_notebook(src):
            out.append(doc)
    return out
