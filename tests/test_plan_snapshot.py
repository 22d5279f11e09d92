"""scripts/plan_snapshot.py: it sees a change of one planning rule, only where the rule applies,
and refuses bad arguments in one line."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from rnnbench.ops import plans

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "plan_snapshot.py"


def _module():
    spec = importlib.util.spec_from_file_location("plan_snapshot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_changed_rule_changes_only_its_lines(monkeypatch):
    snapshot = _module().snapshot
    before = snapshot(small=True)
    # The gate split at 64 batch rows from hidden 576 (multiples of 8) back to 768 as before 6340195
    monkeypatch.setattr(plans, "GATE_SPLIT_MIN_ALIGNED_HIDDEN", 768)
    after = snapshot(small=True)
    assert len(before) == len(after) > 1000
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert changed
    for old, new in changed:
        call = old.split(" -> ")[0].split()
        assert "backward" in call and "576" in call, old
        assert "split_k=False" in old and "gate_split=0" not in old, old
        assert "split_k=True" in new and "gate_split=0" in new, new


def test_bad_arguments_get_one_line_and_exit_2(tmp_path):
    for args in ([], [str(tmp_path / "a"), "--big"], [str(tmp_path / "no" / "such" / "dir" / "out")], [str(tmp_path)]):
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
