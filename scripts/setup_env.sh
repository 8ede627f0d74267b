#!/usr/bin/env bash
# The set-up steps that `make` and Binder share (binder/postBuild calls this script, and so does
# the Makefile), so that a chapter launched on mybinder.org, or any BinderHub, runs in what
# `make lab` runs it in. Steps, run in the order given:
#
#   requirements   the pinned stack, requirements.txt (on Binder, repo2docker installs
#                  binder/requirements.txt itself before postBuild: the same pins, torch's CPU build)
#   package        tanbias itself, editable, without dependencies (they are the pins above)
#   lab-settings   lab-settings/overrides.json into the environment's JupyterLab settings:
#                  chapters (.md) open as notebooks, notebook windowing off
#
# PYTHON (default: python, the first on PATH, as on Binder) is the environment's interpreter;
# PIP_INSTALL (default: "$PYTHON -m pip install") the installer: the Makefile passes uv's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python}"
read -r -a INSTALL <<< "${PIP_INSTALL:-$PYTHON -m pip install}"

[ $# -gt 0 ] || { echo "usage: $0 requirements|package|lab-settings ..." >&2; exit 2; }
for step in "$@"; do
  case "$step" in
    requirements)
      "${INSTALL[@]}" -r "$ROOT/requirements.txt" ;;
    package)
      "${INSTALL[@]}" --no-deps -e "$ROOT" ;;
    lab-settings)
      # JupyterLab reads <sys.prefix>/share/jupyter/lab/settings/overrides.json
      settings="$("$PYTHON" -c 'import sys; print(sys.prefix)')/share/jupyter/lab/settings"
      mkdir -p "$settings"
      cp "$ROOT/lab-settings/overrides.json" "$settings/overrides.json" ;;
    *)
      echo "$0: unknown step '$step' (requirements, package, lab-settings)" >&2; exit 2 ;;
  esac
done
