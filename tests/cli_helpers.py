"""What the command-line tests share: the one-line-error check and ``main()`` run in-process."""

from __future__ import annotations

import subprocess
import sys

from rnnbench import cli as cli_module


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("rnnbench: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def run_main(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["rnnbench", *map(str, args)])
    try:
        cli_module.main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # what a real process would print as a traceback
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, 1, out, err + f"Traceback (escaped main): {exc!r}\n")
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)
