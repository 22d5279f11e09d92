"""rnnbench.paths: an output path that cannot be written is refused before any work starts."""

from __future__ import annotations

import os

import pytest

from rnnbench.errors import UsageError
from rnnbench.paths import check_output_file, plot_formats


def test_a_writable_file_passes_and_missing_folders_are_made(tmp_path):
    path = check_output_file(tmp_path / "a" / "b" / "r.jsonl", "--out")
    assert path.parent.is_dir() and not path.exists()
    assert os.listdir(path.parent) == []  # the probe file is gone


@pytest.mark.parametrize("target, words", [
    ("/dev/null", "not a regular file"),
    ("/dev/full", "not a regular file"),
    ("/proc/rnnbench.jsonl", "kernel file system"),
    ("/proc/self/status", "not a regular file|kernel file system|not writable"),
])
def test_devices_and_kernel_files_are_refused(target, words):
    if not os.path.exists(os.path.dirname(target)):
        pytest.skip(f"{target} has no parent here")
    with pytest.raises(UsageError, match=words):
        check_output_file(target, "--out")


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(UsageError, match="--checkpoint .* is a directory"):
        check_output_file(tmp_path, "--checkpoint")


def test_an_unwritable_folder_is_refused(tmp_path):
    if os.geteuid() == 0:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        target = blocker / "r.jsonl"  # a folder that is a file: cannot be made, as root too
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "r.jsonl"
    with pytest.raises(UsageError, match="cannot write in"):
        check_output_file(target, "--out")


def test_plot_extensions(tmp_path):
    assert "png" in plot_formats() and "pdf" in plot_formats()
    check_output_file(tmp_path / "p.PNG", "--plot", suffixes=plot_formats())
    with pytest.raises(UsageError, match="unknown file type '.jsonl'"):
        check_output_file(tmp_path / "p.jsonl", "--plot", suffixes=plot_formats())
    with pytest.raises(UsageError, match=r"unknown file type '\(none\)'"):
        check_output_file(tmp_path / "plot", "--plot", suffixes=plot_formats())
