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
