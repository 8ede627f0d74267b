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
    from tanbias.book.bench import toc_documents

    return toc_documents(ROOT)


def toc_notebooks() -> list[str]:
    """Docnames in _toc.yml whose source is an executable notebook."""
    from tanbias.book.bench import is_notebook

    out = []
    for doc in toc_docs():
        src = ROOT / f"{doc}.md"
        if src.exists() and is_notebook(src):
            out.append(doc)
    return out


def project_links() -> dict:
    """The project's addresses, all formed from ``repository`` and ``launch_buttons`` in
    _config.yml: ``repository`` (the url), ``issues`` (new-issue form) and ``binder`` (the
    launch address up to its ``?urlpath=``), plus the setting's ``branch`` and ``path_to_book``."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))
    repo = config["repository"]
    url = repo["url"].rstrip("/")
    owner_name = url.removeprefix("https://github.com/")
    assert owner_name != url and owner_name.count("/") == 1, f"repository.url {url} is not a GitHub repository"
    binderhub = config["launch_buttons"]["binderhub_url"].rstrip("/")
    branch = repo.get("branch", "main")
    return {"repository": url, "issues": f"{url}/issues/new", "branch": branch,
            "path_to_book": repo.get("path_to_book", "") or "", "binderhub": binderhub,
            "binder": f"{binderhub}/v2/gh/{owner_name}/{branch}"}


def output_tables(html: str) -> list[dict]:
    """Every ``<table>`` inside a code cell's output of a built page: ``{"class": its class
    attribute, "headings": the class of each ``<th>``, "cells": the text of each cell, "header_texts": the
    text of each ``<th>``}``
    (Markdown tables in the prose are not outputs)."""
    from html.parser import HTMLParser

    class Outputs(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.inside = 0                  # depth of <div> inside a cell_output, 0 outside
            self.tables, self.table, self.cell = [], None, None

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "div":
                if self.inside:
                    self.inside += 1
                elif "cell_output" in (a.get("class") or "").split():
                    self.inside = 1
            elif tag == "table" and self.inside:
                self.table = {"class": a.get("class") or "", "headings": [], "cells": [], "header_texts": []}
            elif tag in ("td", "th") and self.table is not None:
                self.cell = []
                if tag == "th":
                    self.table["headings"].append(a.get("class") or "")

        def handle_endtag(self, tag):
            if tag == "div" and self.inside:
                self.inside -= 1
            elif tag in ("td", "th") and self.cell is not None:
                self.table["cells"].append("".join(self.cell).strip())
                if tag == "th":
                    self.table["header_texts"].append(self.table["cells"][-1])
                self.cell = None
            elif tag == "table" and self.table is not None:
                self.tables.append(self.table)
                self.table = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell.append(data)

    parser = Outputs()
    parser.feed(html)
    return parser.tables
