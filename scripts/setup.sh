#!/usr/bin/env bash
# Set up rnnbench in .venv (idempotent). Usage: bash scripts/setup.sh
#
# torch is the one heavy dependency, so it is chosen here rather than left to pip:
#  - a Python that already has torch (a GPU machine's image, say) is reused as it is: the venv
#    sees its site-packages, and pip leaves that torch alone;
#  - otherwise, with an NVIDIA GPU visible, pip installs PyPI's default (CUDA) torch;
#  - otherwise the CPU build, pinned: a bare `torch` would pull a multi-gigabyte CUDA build.
#    Set RNNBENCH_TORCH_INDEX (e.g. PyTorch's CPU wheel index) where PyPI's pin is not a CPU build.
# The framework lanes' JAX and Keras are installed the same way: kept where the Python already has
# them (a GPU image's JAX with its CUDA plugin), else pinned CPU builds, the versions the tests run
# with. TensorFlow (keras-tf) is optional: RNNBENCH_WITH_TF=1 adds it (pip's rnnbench[tf] extra),
# or point RNNBENCH_TF_PYTHON at a Python of another environment that has it.
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
has() { .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('$1') is None)"; }
has jax || pip_q "jax==0.10.2"
has keras || pip_q "keras==3.15.1"   # found, not imported: importing Keras needs its backend
pip_q -e ".[test${RNNBENCH_WITH_TF:+,tf}]"
echo "rnnbench is set up in .venv ($(.venv/bin/python -c 'from importlib.metadata import version as v; print(*(f"{p} {v(p)}" for p in ("torch", "jax", "keras")), sep=", ")'))"
