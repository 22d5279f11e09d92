"""rnnbench.env: the environment record stored with every result."""

from __future__ import annotations

import hashlib
import json
import platform

import pytest
import torch

from rnnbench import __version__
from rnnbench.env import device_label, environment


@pytest.fixture(scope="module")
def record():
    return environment()


def test_record_fields(record):
    assert record["torch"] == torch.__version__
    assert record["python"] == platform.python_version()
    assert record["rnnbench"] == __version__
    assert record["cpu_cores"] >= 1 and record["torch_threads"] >= 1 and record["cpu"]
    assert record["gpu_count"] == torch.cuda.device_count()
    if not torch.cuda.is_available():
        assert "gpu" not in record
    assert json.loads(json.dumps(record)) == record  # flat and JSON-able


def test_env_id_hashes_the_content(record):
    content = {k: v for k, v in record.items() if k != "env_id"}
    assert record["env_id"] == hashlib.sha1(json.dumps(content, sort_keys=True).encode()).hexdigest()[:12]
    assert len(record["env_id"]) == 12


def test_git_commit_override_changes_env_id(monkeypatch, record):
    monkeypatch.setenv("RNNBENCH_GIT_COMMIT", "abc123def456")
    other = environment()
    assert other["git_commit"] == "abc123def456"
    assert other["env_id"] != record["env_id"] or record["git_commit"] == "abc123def456"
    assert environment()["env_id"] == other["env_id"]  # same machine, same record


@pytest.mark.parametrize("gpu, label", [
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-40GB", "a100"),
    ("Tesla T4", "t4"), ("NVIDIA L40S", "l40s"), ("NVIDIA L4", "l4"), ("NVIDIA GeForce RTX 4090", "nvidia-geforce-rtx-4090"),
    (None, "cpu"), ("", "cpu"),
])
def test_device_label(gpu, label):
    assert device_label({"gpu": gpu}) == label
    assert device_label({}) == "cpu"
