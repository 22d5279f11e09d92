"""Tally the compiled plans of the final change (snapshot-final.diff.gz: scripts/plan_snapshot.py
before 0bf186a against after a91ad3c): of the distinct plans that changed at 132 multiprocessors,
the old ones compiled in changed-run1.txt and changed-run2.txt (earlier forms of the rule, whose
old plans are the same), and the new ones in changed-final-new.txt. Run from this directory."""
import gzip
import re
from collections import Counter

CELL = {"1": "rnn", "3": "gru", "4": "lstm"}


def plan_text(text: str) -> str:
    return re.sub(r"\w+=(False|0|'')(, )?", "", text.strip())


def compiled(paths: list[str], side: str) -> dict:
    found = {}
    for path in paths:
        for line in open(path):
            if line.startswith(f"['{side}']"):
                p = line.split()
                key = (p[1], p[2], p[3].removeprefix("torch."), p[4], p[5], line[line.index("Plan("):].strip())
                found[key] = (int(p[6]), p[7])
    return found


def changed(side: str) -> set:
    mark = "< " if side == "old" else "> "
    keys = set()
    for line in gzip.open("snapshot-final.diff.gz", "rt"):
        if line.startswith(mark) and not line.startswith(mark + "{"):
            call, text = line[2:].rstrip("\n").split(" -> ", 1)
            batch, hidden, gates, dtype, precision, direction, bounded, device, sms = call.split()
            if sms == "132" and text.startswith("Plan"):
                keys.add((CELL[gates], direction, dtype.removeprefix("torch."), hidden, precision, plan_text(text)))
    return keys


for side, paths in (("old", ["changed-run1.txt", "changed-run2.txt"]), ("new", ["changed-final-new.txt"])):
    keys, got = changed(side), compiled(paths, side)
    hit = [k for k in keys if k in got]
    print(f"{side}: {len(keys)} distinct plans changed at 132 multiprocessors, {len(hit)} compiled: "
          f"{dict(Counter(got[k][1] for k in hit))}, largest {max(got[k][0] for k in hit)} bytes")
    for k in sorted(k for k in hit if side == "old" and got[k][1] == "fits"):
        print("  fit before:", *k[:5], got[k][0], k[5])
