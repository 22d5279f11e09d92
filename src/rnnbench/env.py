"""The environment record: what machine and software a result was measured on.

Modelled on the details block of the seed word-language-model benchmark (seed 002): GPU, driver,
CUDA and cuDNN versions, framework versions, Python, CPU. GPU facts come from NVML
(nvidia-ml-py) where it is present, else from torch.cuda.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path

import torch

from . import __version__
from .workload import TRAIN_STEP


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    """The checkout's commit (``-dirty`` with local edits); RNNBENCH_GIT_COMMIT overrides it for
    copies of the tree that travel without ``.git`` (e.g. to a remote GPU machine)."""
    if os.environ.get("RNNBENCH_GIT_COMMIT"):
        return os.environ["RNNBENCH_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _nccl_version() -> str | None:
    """NCCL's version as ``2.27.3`` where this torch was built with it, else None."""
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # built without NCCL, or no CUDA
        return None
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def _gpu_facts() -> dict:
    """Name, count, memory (MiB), SM clocks (MHz) and driver of GPU 0, NVML first."""
    facts = {"gpu_count": torch.cuda.device_count()}
    if not torch.cuda.is_available():
        return facts
    props = torch.cuda.get_device_properties(0)
    facts.update(gpu=props.name, gpu_memory_mib=props.total_memory // 2**20,
                 gpu_sm_count=props.multi_processor_count, gpu_capability=f"{props.major}.{props.minor}",
                 gpus=[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
                 nccl=_nccl_version())
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        facts.update(
            driver=pynvml.nvmlSystemGetDriverVersion(),
            gpu_sm_clock_mhz=pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            gpu_sm_clock_max_mhz=pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
            gpu_power_limit_w=pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000,
        )
        pynvml.nvmlShutdown()
    except Exception as exc:  # NVML missing or refused: keep what torch said, note why
        facts["nvml"] = f"unavailable: {type(exc).__name__}"
    return facts


def environment() -> dict:
    """The environment record as a flat JSON-able dict, with an ``env_id`` hash of its content."""
    record = {
        **_gpu_facts(),
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "torch": torch.__version__,
        "triton": _version("triton"),
        "jax": _version("jax"),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "os": platform.platform(),
        "rnnbench": __version__,
        "git_commit": _git_commit(),
        "train_step": TRAIN_STEP,  # how a timed training step reaches its backward (rnnbench.workload)
    }
    record["env_id"] = hashlib.sha1(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]
    return record


def device_label(record: dict) -> str:
    """Short machine name for folders and headings: ``h100``, ``h200``, ``cpu``."""
    name = (record.get("gpu") or "").lower()
    for tag in ("h200", "h100", "a100", "l40s", "l4", "a10", "t4", "v100"):
        if tag in name:
            return tag
    return name.replace(" ", "-") or "cpu"
