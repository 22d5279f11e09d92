"""Host µs of one allocation (and of a view of one) on this machine, by the ways PyTorch offers:
what a replayed call pays per output. On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/bounds/probes/alloc_costs.py OUT.jsonl

Each way 2,000 times back to back (the tensors dropped at once, as the caching allocator then
hands the same block back), medians of 9 rounds, the ways in the order A B ... B A."""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import write_rows  # noqa: E402

SHAPE = (30, 32, 128)


def ways():
    dev = torch.device("cuda")
    dt = torch.float32
    proto = torch.empty(0, device=dev, dtype=dt)
    flat = torch.empty(2 * 30 * 32 * 128, device=dev, dtype=dt)
    stride = (32 * 128, 128, 1)
    n = 30 * 32 * 128
    return {
        "torch.empty(shape, dtype=, device=torch.device)": lambda: torch.empty(SHAPE, dtype=dt, device=dev),
        "torch.empty(shape, dtype=, device='cuda')": lambda: torch.empty(SHAPE, dtype=dt, device="cuda"),
        "proto.new_empty(shape)": lambda: proto.new_empty(SHAPE),
        "torch.empty_strided(shape, stride, ...)": lambda: torch.empty_strided(SHAPE, stride, dtype=dt, device=dev),
        "flat.as_strided(shape, stride, offset)": lambda: flat.as_strided(SHAPE, stride, n),
        "flat[a:b].view(shape)": lambda: flat[n:2 * n].view(SHAPE),
        "nothing (loop)": lambda: None,
    }


def main(out):
    fns = ways()
    got = {k: [] for k in fns}
    order = list(fns) + list(fns)[::-1]
    for _ in range(9):
        for k in order:
            fn = fns[k]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(2000):
                fn()
            got[k].append((time.perf_counter() - t0) / 2000 * 1e6)
    rows = []
    for k, v in got.items():
        v.sort()
        rows.append({"way": k, "host_us": v[len(v) // 2], "min_us": v[0]})
        print(f"{v[len(v) // 2]:8.2f}  (min {v[0]:6.2f})  {k}", flush=True)
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
