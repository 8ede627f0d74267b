#!/usr/bin/env bash
# The lab on a CUDA GPU, in under 5 minutes: trains the `base` decoder (about 30 M
# parameters outside the embedding) for 300 steps in bf16 with the alignment probe
# on, then prints its tokens/s, their fraction of the GPU's bf16 matrix-multiply
# rate (measured in the same process), the probe's overhead and the peak memory.
# Installs nothing beyond the README's set-up (`make install` or any `make` target).
# On a machine without a CUDA GPU it says so and exits 0.
#   scripts/gpu_check.sh [--size base|large] [--steps N] [--precision bf16|fp32]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
if [ ! -x "$PY" ]; then
    echo "no $PY: run 'make install' first (the README's set-up)" >&2
    exit 1
fi
if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check: torch sees no CUDA GPU on this machine; nothing to check."
    exit 0
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || true
exec "$PY" -m tanbias.lab gpucheck --device cuda "$@"
