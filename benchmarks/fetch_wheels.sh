#!/usr/bin/env bash
# Download, on a machine with a package index, the wheels the GPU machine lacks for the framework
# lanes, into .whl/ (git-ignored): Keras 3 and the small wheels it needs beyond the device image
# (which has PyTorch, JAX with its CUDA plugin, numpy, ml_dtypes, rich, packaging, but no Keras).
# They are Python 3.12 manylinux x86_64 wheels, for the device image's Python; about 12 MB.
#
# Usage (repo root): bash benchmarks/fetch_wheels.sh
# Then carry .whl to the GPU machine and run benchmarks/frameworks_gpu.sh there (its header says how).
set -euo pipefail
cd "$(dirname "$0")/.."
# Pinned to the versions the CPU tests run with (scripts/setup.sh, pyproject's [frameworks] extra).
PURE="keras==3.15.1 namex==0.1.0 absl-py==2.5.1"     # pure Python: one wheel for every platform
BINARY="optree==0.20.0 h5py==3.16.0"                  # compiled: CPython 3.12, manylinux x86_64
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: -d .whl $PURE
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl $BINARY
ls -l .whl
du -sh .whl
