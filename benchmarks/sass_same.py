"""Whether two ``python -m rnnbench.ops.aot --sass DIR`` dumps hold the same machine code.

    python benchmarks/sass_same.py BEFORE_DIR AFTER_DIR

Compares every ``*.sass`` file present in both, line by line, ignoring what a new kernel
parameter moves without changing an instruction: instruction addresses and encodings, and the
constant-bank offsets of the kernel's parameters (``c[0x0][0x...]``). Prints one line per file
that differs (with its first differing lines) and a count; exits 1 if any differs. What it is for:
showing that a change which adds a compile-time-disabled path (``HAS_LENGTHS=False``) leaves the
kernels that run without it instruction for instruction as they were (no device time needed).
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path


def normalised(text: str) -> list[str]:
    """The SASS's instruction lines without addresses, encodings and parameter offsets."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"/\*[0-9a-f]{4,}\*/", "", line)  # instruction address
        line = re.sub(r"/\* 0x[0-9a-f]+ \*/", "", line)  # encoding
        line = re.sub(r"c\[0x0\]\[0x[0-9a-f]+\]", "c[0x0][param]", line)  # a parameter's offset
        if line.strip():
            lines.append(line.strip())
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not all(Path(a).is_dir() for a in argv):
        print("usage: python benchmarks/sass_same.py BEFORE_DIR AFTER_DIR (two aot --sass dumps)", file=sys.stderr)
        return 2
    before, after = map(Path, argv)
    names = sorted(p.name for p in before.glob("*.sass") if (after / p.name).exists())
    if not names:
        print("no .sass file in both directories", file=sys.stderr)
        return 2
    differ = 0
    for name in names:
        old, new = normalised((before / name).read_text()), normalised((after / name).read_text())
        if old != new:
            differ += 1
            changed = [d for d in difflib.unified_diff(old, new, lineterm="", n=0)
                       if d[:1] in "+-" and d[:3] not in ("+++", "---")]
            print(f"differs: {name} ({len(old)} -> {len(new)} lines): {' | '.join(changed[:4])}")
    print(f"{len(names) - differ} of {len(names)} kernels the same instruction for instruction")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
