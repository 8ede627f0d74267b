"""Binder from the repository alone (binder/, DESIGN.md "The stack").

repo2docker (mybinder.org, any BinderHub) reads ``binder/``: the Python version
(``runtime.txt``), the pinned stack with torch's CPU build (``requirements.txt``) and
``postBuild``, which runs ``scripts/setup_env.sh``, the script the Makefile runs too. The first
tests read that configuration; the last replays it without Docker: a fresh virtual environment of
that Python, ``binder/requirements.txt`` installed, ``binder/postBuild`` run, then JupyterLab from
that environment opens a chapter as a notebook and runs it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tomllib

import pytest

from bookhelpers import BIN, ROOT, project_links
from labhelpers import check_prose, lab_overrides, lab_server, lab_workspace_url, open_page, run_all_in_lab

BINDER = ROOT / "binder"
#: PyTorch's index of CPU builds, where Binder's torch comes from
PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: the chapter the fresh environment runs in JupyterLab: quick (seconds), cites papers, links
#: other chapters, shows a live figure
BINDER_CHAPTER = "chapters/01_manifold_hypothesis.md"


def _lines(path) -> list[str]:
    """The lines of a requirements file, without comments and blank lines."""
    out = []
    for line in path.read_text(encoding="utf8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def _pin(lines: list[str], name: str) -> str | None:
    found = [line.split("==", 1)[1] for line in lines if re.match(rf"{name}\s*==", line)]
    assert len(found) <= 1, f"{name} pinned twice: {found}"
    return found[0] if found else None


def runtime_python() -> str:
    """``3.11`` from binder/runtime.txt (``python-3.11``)."""
    text = (BINDER / "runtime.txt").read_text(encoding="utf8").strip()
    m = re.fullmatch(r"python-(3\.\d+)", text)
    assert m, f"binder/runtime.txt says {text!r}; repo2docker reads python-X.Y"
    return m[1]


def test_runtime_is_the_python_the_package_and_the_makefile_use():
    from packaging.specifiers import SpecifierSet

    version = runtime_python()
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f"{version}.0" in SpecifierSet(requires), (version, requires)
    makefile = (ROOT / "Makefile").read_text(encoding="utf8")
    assert re.search(rf"^PYTHON \?= python{re.escape(version)}$", makefile, re.MULTILINE), \
        f"the Makefile's PYTHON is not python{version}"


def test_binder_requirements_are_the_pins_with_the_cpu_build_of_torch():
    """The pinned stack (``-r ../requirements.txt``), nothing else pinned apart from torch, which
    is the same version's CPU build from PyTorch's CPU index (never unpinned)."""
    lines = _lines(BINDER / "requirements.txt")
    assert "-r ../requirements.txt" in lines
    assert f"--extra-index-url {PYTORCH_CPU_INDEX}" in lines
    torch = _pin(_lines(ROOT / "requirements.txt"), "torch")
    assert torch and "+" not in torch, f"requirements.txt pins torch=={torch}"
    assert _pin(lines, "torch") == f"{torch}+cpu"
    others = [line for line in lines if not line.startswith(("-r ", "--extra-index-url "))
              and not line.startswith("torch==")]
    assert not others, f"binder/requirements.txt pins more than requirements.txt: {others}"


def test_postbuild_and_the_makefile_run_one_set_up_script():
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable"
    calls = re.findall(r"scripts/setup_env\.sh\"?((?: [a-z-]+)+)", post_build.read_text(encoding="utf8"))
    assert calls and set(calls[0].split()) == {"package", "lab-settings"}, calls
    makefile = (ROOT / "Makefile").read_text(encoding="utf8")
    assert re.search(r"^SETUP_ENV = .*scripts/setup_env\.sh$", makefile, re.MULTILINE)
    steps = set(" ".join(re.findall(r"\$\(SETUP_ENV\) ([a-z -]+)", makefile)).split())
    assert steps == {"requirements", "package", "lab-settings"}, steps


#: the project's own files that may name its address (data/ and tests/ aside: provenance of
#: third-party data, and the link detector's examples)
ADDRESS_FILES = ["README.md", "DESIGN.md", "pyproject.toml", "Makefile", "_config.yml", "intro.md",
                 "references.bib", "CITATION.cff", "CHANGELOG.md", "LICENSE-text.md", "data/README.md",
                 "binder/*", "scripts/*", "chapters/*.md", "lab-settings/*"]
#: an address, up to what closes it in Markdown, HTML, BibTeX or prose (a trailing comma or full stop)
URL = re.compile(r"https?://[^\s)\]>\"'`}]+[^\s)\]>\"'`},.;:]")


def test_the_projects_address_is_the_setting_everywhere():
    """Every GitHub, Binder or Colab address in the project's files is formed from
    ``repository`` (and ``launch_buttons.binderhub_url``) in _config.yml: README's Binder link
    included, so that changing the setting cannot leave a stale copy behind."""
    links = project_links()
    bad, found = [], 0
    for pattern in ADDRESS_FILES:
        for path in sorted(ROOT.glob(pattern)):
            for url in URL.findall(path.read_text(encoding="utf8")):
                if "colab" in url:
                    bad.append(f"{path.name}: {url} (no Colab: DESIGN.md)")
                elif "github.com/" in url:
                    found += 1
                    if not (url == links["repository"] or url.startswith(links["repository"] + "/")):
                        bad.append(f"{path.relative_to(ROOT)}: {url} is not under {links['repository']}")
                elif url.startswith(links["binderhub"]):
                    found += 1
                    if not url.startswith(links["binder"] + "?") and url != links["binderhub"]:
                        bad.append(f"{path.relative_to(ROOT)}: {url} does not launch {links['binder']}")
    assert found, "the check read no address at all (the README links Binder)"
    assert not bad, bad


def _reachable(url: str) -> bool:
    host = re.match(r"https?://([^/:]+)", url)[1]
    try:
        with socket.create_connection((host, 443), timeout=5):
            return True
    except OSError:
        return False


def _offline_requirements(tmp) -> tuple[str, list[str]]:
    """binder/requirements.txt for this machine: as it is when PyTorch's index answers;
    otherwise the same pins with that index left out and pip's find-links handed to uv (as the
    Makefile does: where our machines keep the CPU wheel of torch)."""
    src = BINDER / "requirements.txt"
    if _reachable(PYTORCH_CPU_INDEX):
        return str(src), []
    text = src.read_text(encoding="utf8")
    text = text.replace(f"--extra-index-url {PYTORCH_CPU_INDEX}", "")
    text = text.replace("-r ../requirements.txt", f"-r {ROOT / 'requirements.txt'}")
    copy = tmp / "binder-requirements.txt"
    copy.write_text(text, encoding="utf8")
    links = subprocess.run([str(BIN / "python"), "-m", "pip", "config", "get", "global.find-links"],
                           capture_output=True, text=True).stdout.split()
    if not links:
        pytest.fail(f"{PYTORCH_CPU_INDEX} is unreachable and pip has no find-links for torch's CPU wheel")
    return str(copy), [a for d in links for a in ("--find-links", d)]


@pytest.mark.browser
@pytest.mark.slow
def test_binder_set_up_in_a_fresh_environment_runs_a_chapter_in_jupyterlab(
        tmp_path_factory, browser, screenshot_dir):
    """What repo2docker does, without Docker: a fresh environment of binder/runtime.txt's
    Python, binder/requirements.txt (uv, from the wheels already in its cache), binder/postBuild;
    then that environment's JupyterLab opens a chapter as a notebook and runs it, its prose shows
    its numbers, and a link to another chapter opens that chapter as a notebook too."""
    uv = BIN / "uv"
    if not uv.exists():
        pytest.fail(f"{uv} missing: `make install` installs uv into the venv")
    python = shutil.which(f"python{runtime_python()}")
    if python is None:
        pytest.fail(f"python{runtime_python()} (binder/runtime.txt) is not installed")
    tmp = tmp_path_factory.mktemp("binder")
    env_dir = tmp / "env"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}

    def run(*cmd, **kw):
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, **kw)
        assert proc.returncode == 0, f"{' '.join(map(str, cmd))}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        return proc.stdout

    run(uv, "venv", "-q", "--seed", "-p", python, env_dir)     # --seed: pip, which postBuild uses
    requirements, links = _offline_requirements(tmp)
    run(uv, "pip", "install", "-q", "--python", env_dir / "bin" / "python", *links, "-r", requirements)
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    run(BINDER / "postBuild", cwd=ROOT)

    assert run(env_dir / "bin" / "python", "-c", "import torch; print(torch.__version__)").strip() \
        == _pin(_lines(BINDER / "requirements.txt"), "torch"), "not torch's CPU build"
    assert run(env_dir / "bin" / "python", "-c", "import tanbias, sys; print(tanbias.__file__)").strip() \
        == str(ROOT / "tanbias" / "__init__.py"), "the package is not installed from the repository"
    assert lab_overrides(env_dir).read_bytes() == (ROOT / "lab-settings" / "overrides.json").read_bytes()

    with lab_server(env_dir / "bin", tmp_path_factory) as (base, token):
        page, _ = open_page(browser, lab_workspace_url(base, token, BINDER_CHAPTER), viewport=(1400, 1100))
        try:
            run_all_in_lab(page)
            check_prose(page, BINDER_CHAPTER, screenshot_dir)
            # a link to another chapter opens it, as a notebook
            link = page.locator(".jp-MarkdownCell a[href*='02_radial_concentration.md']").first
            link.scroll_into_view_if_needed()
            link.click()
            page.wait_for_function(
                "() => { const w = window.jupyterapp.shell.currentWidget;"
                " return w && w.context && w.context.path === 'chapters/02_radial_concentration.md'"
                " && w.node.querySelector('.jp-Cell, .jp-FileEditor') !== null; }", timeout=60_000)
            assert page.locator(".jp-FileEditor").count() == 0, "the linked chapter opened as text"
            page.screenshot(path=str(screenshot_dir / "binder-linked-chapter.png"))
        finally:
            page.close()
