#!/usr/bin/env bash
# Set up rnnbench in .venv (idempotent). Usage: bash scripts/setup.sh
#
# torch is the one heavy dependency, so it is chosen here rather than left to pip:
#  - a Python that already has torch (a GPU machine's image, say) is reused as it is: the venv
#    sees its site-packages, and pip leaves that torch alone;
#  - otherwise, with an NVIDIA GPU visible, pip installs PyPI's default (CUDA) torch;
#  - otherwise the CPU build, pinned: a bare `torch` would pull a multi-gigabyte CUDA build.
#    Set RNNBENCH_TORCH_INDEX (e.g. PyTorch's CPU wheel index) where PyPI's pin is not a CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
pip_q() { .venv/bin/python -m pip install -q --disable-pip-version-check "$@"; }

if [ ! -x .venv/bin/python ]; then
  if "$py" -c "import torch" 2>/dev/null; then
    "$py" -m venv --system-site-packages .venv
  else
    "$py" -m venv .venv
  fi
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    pip_q torch
  else
    pip_q ${RNNBENCH_TORCH_INDEX:+--index-url "$RNNBENCH_TORCH_INDEX"} "torch==2.13.0"
  fi
fi
pip_q -e ".[test]"
echo "rnnbench is set up in .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
