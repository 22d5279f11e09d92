"""Lanes of other frameworks, each answered by that framework's worker process (:mod:`.worker`).

Adding a framework is a worker module under :mod:`rnnbench.workers` and a few lines here.
Availability is decided here, cheaply and without importing the framework: a package that is not
installed, or (for CUDA) a JAX without its CUDA plugin, makes the lane ``unavailable`` with a
one-line reason; whatever fails later inside the worker becomes the row's ``error``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess

from ..cases import CELLS
from .registry import Lane, register
from .worker import WorkerSpec, prepare_in_worker

JAX = WorkerSpec("jax", "rnnbench.workers.jax_worker")
# The Keras backend is fixed when keras is imported, hence one worker per backend.
KERAS = {backend: WorkerSpec(f"keras-{short}", "rnnbench.workers.keras_worker", env={"KERAS_BACKEND": backend},
                             python_env="RNNBENCH_TF_PYTHON" if backend == "tensorflow" else None)
         for short, backend in (("jax", "jax"), ("torch", "torch"), ("tf", "tensorflow"))}


def worker_lane(name: str, summary: str, spec: WorkerSpec, impl: str, settings: dict | None = None,
                **fields) -> Lane:
    """Register a lane whose steps run ``impl`` with ``settings`` in ``spec``'s worker. Keras
    lanes take variable-length batches with Keras's mask."""
    if impl == "keras":
        fields.setdefault("lengths", "masked")

    def prepare(case, inputs):
        return prepare_in_worker(spec, impl, dict(settings or {}), case, inputs)

    return register(Lane(name, summary, None, prepare=prepare, **fields))


def _jax_cuda_plugin() -> bool:
    """Whether JAX's CUDA support is installed (the jax-cuda12/13 plugin or its PJRT package)."""
    if any(importlib.util.find_spec(m) for m in ("jax_cuda13_plugin", "jax_cuda12_plugin")):
        return True
    spec = importlib.util.find_spec("jax_plugins")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if any(name.startswith("xla_cuda") for name in os.listdir(folder)):
            return True
    return False


def jax_cuda_missing(device: str) -> str | None:
    if device == "cuda" and importlib.util.find_spec("jax") and not _jax_cuda_plugin():
        return "JAX has no CUDA plugin here (jax-cuda12/13-plugin)"
    return None


@functools.lru_cache(maxsize=None)
def _importable_in(python: str, packages: tuple[str, ...]) -> str | None:
    """None if ``packages`` import in interpreter ``python``, else which is missing (one line)."""
    probe = "import importlib.util as u, sys; print(','.join(p for p in sys.argv[1:] if u.find_spec(p) is None))"
    try:
        out = subprocess.run([python, "-c", probe, *packages], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {python}: {exc}"
    missing = out.stdout.strip()
    if out.returncode != 0:
        return f"{python} failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:150]}"
    return f"package {missing.split(',')[0]!r} is not installed in {python}" if missing else None


def other_python_missing(spec: WorkerSpec, packages: tuple[str, ...]):
    """A check for a worker that may run in another interpreter (``spec.python_env``): where that
    variable is unset, the packages must be importable here."""

    def check(device: str) -> str | None:
        python = os.environ.get(spec.python_env or "")
        if not python:
            for package in packages:
                if importlib.util.find_spec(package) is None:
                    return f"package {package!r} is not installed (or set {spec.python_env} to a Python that has it)"
            return None
        return _importable_in(python, packages)

    return check


# --- JAX -----------------------------------------------------------------------------------------

worker_lane("jax-scan", "JAX: lax.scan over time under jax.jit, jax.grad for train (worker process)",
            JAX, "jax-scan", requires=("jax",), check=jax_cuda_missing, lengths="masked")
# jax.experimental.rnn lowers float32 only ("TODO: Add support for input and weight dtypes other than float32").
worker_lane("jax-cudnn", "JAX: jax.experimental.rnn.lstm, a cuDNN call (LSTM, fp32/tf32, CUDA only; worker)",
            JAX, "jax-cudnn", cells=("lstm",), devices=("cuda",), dtypes=("fp32", "tf32"), requires=("jax",),
            check=jax_cuda_missing, lengths="packed")  # cuDNN takes the lengths (seq_lengths)

# --- Keras 3, one lane per backend ----------------------------------------------------------------
# keras-tf is also "TensorFlow 2's tf.keras.layers.LSTM": from TF 2.16 tf.keras *is* Keras 3 (checked
# with TF 2.21: tf.keras.layers.LSTM is keras.layers.LSTM), so a separate `tf` lane would repeat it.

KERAS_SUMMARY = "Keras 3 layers.LSTM/GRU/SimpleRNN on the {} backend, use_cudnn={} (worker)"
# Seen on the H100 (Keras 3.15.1, JAX 0.11.2): in bf16 and fp16 the JAX backend's cuDNN path fails
# with "ValueError: Unknown output type bfloat16" (it calls jax.experimental.rnn, float32 only).
worker_lane("keras-jax", KERAS_SUMMARY.format("JAX", "auto"), KERAS["jax"], "keras", {"use_cudnn": "auto"},
            cells=CELLS, requires=("keras", "jax"), check=jax_cuda_missing,
            device_dtypes={"cuda": (("fp32", "tf32"), "Keras's JAX cuDNN path (jax.experimental.rnn) "
                                    "lowers float32 only; keras-jax-nocudnn runs half precision")})
worker_lane("keras-torch", KERAS_SUMMARY.format("PyTorch", "auto"), KERAS["torch"], "keras", {"use_cudnn": "auto"},
            requires=("keras",))
worker_lane("keras-tf", KERAS_SUMMARY.format("TensorFlow", "auto"), KERAS["tensorflow"], "keras",
            {"use_cudnn": "auto"}, check=other_python_missing(KERAS["tensorflow"], ("tensorflow", "keras")))
# The same layers with cuDNN refused: what Keras's cuDNN path is worth (seed: CuDNNLSTM vs LSTM).
# On the CPU Keras has no cuDNN path, so these would repeat the lanes above: CUDA only.
worker_lane("keras-jax-nocudnn", KERAS_SUMMARY.format("JAX", "False"), KERAS["jax"], "keras", {"use_cudnn": False},
            devices=("cuda",), requires=("keras", "jax"), check=jax_cuda_missing)
worker_lane("keras-torch-nocudnn", KERAS_SUMMARY.format("PyTorch", "False"), KERAS["torch"], "keras",
            {"use_cudnn": False}, devices=("cuda",), requires=("keras",))
worker_lane("keras-tf-nocudnn", KERAS_SUMMARY.format("TensorFlow", "False"), KERAS["tensorflow"], "keras",
            {"use_cudnn": False}, devices=("cuda",),
            check=other_python_missing(KERAS["tensorflow"], ("tensorflow", "keras")))
