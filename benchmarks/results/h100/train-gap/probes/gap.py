"""Where an eager training step's time goes beyond its graph's, for the engine's own steps (one GPU).

    PYTHONPATH=src python3 benchmarks/results/h100/train-gap/probes/gap.py OUT_DIR

Why: in the seed runs an eager training step at batch 128, hidden 1024 in TF32 takes about 0.9 ms
more than the same step replayed from a CUDA graph (ours 2.61 against 1.70 ms, cuDNN's 3.18 against
1.96), and at hidden 100-128 eight times the graph's. The host's work and the device's overlap
when the host runs ahead; the gap is what does not. For each case and lane (the engine's
``lane_step``, the step it times): the synchronised time per call (median of 50), the host time
of the call alone (returned, not synchronised), the graph lane's time, and from one profiled call
(torch.profiler) the GPU's busy time, its idle gaps between kernels (the largest five, with the
CPU op running when each gap began) and the CPU ops by self time. Writes ``OUT_DIR/gap.jsonl`` (an
environment record first) and prints a table.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))

CASES = [("lstm", 128, 1024, "tf32"), ("gru", 128, 1024, "tf32"), ("lstm", 32, 128, "tf32"), ("lstm", 20, 100, "tf32")]
LANES = ("torch-nn", "triton")


def timings(fn, calls: int = 50) -> tuple[float, float]:
    """(median synchronised ms, median host ms of the call alone) over ``calls`` calls."""
    synced, host = [], []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) * 1e3)
        synced.append((t2 - t0) * 1e3)
    return statistics.median(synced), statistics.median(host)


def profile(fn) -> dict:
    """GPU busy and idle time in one call, the largest gaps, the top CPU ops."""
    from torch.profiler import ProfilerActivity, profile as prof

    torch.cuda.synchronize()
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as p:
        fn()
    syncs = [(e.name, " <- ".join(str(f) for f in (e.stack or [])[:6]))
             for e in p.events() if "Synchronize" in e.name]
    events = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0]
    kernels = sorted(((e.time_range.start, e.time_range.end, e.name) for e in events))
    cpu = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CPU]
    busy = sum(end - start for start, end, _ in kernels)
    gaps = []
    for (s0, e0, n0), (s1, e1, n1) in zip(kernels, kernels[1:]):
        if s1 > e0:
            gaps.append((s1 - e0, n0[:40], n1[:40]))
    gaps.sort(reverse=True)
    span = kernels[-1][1] - kernels[0][0] if kernels else 0
    top = p.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return {"gpu_busy_us": busy, "gpu_span_us": span, "kernels": len(kernels),
            "gaps_us": [round(g[0], 1) for g in gaps[:5]], "gap_between": [g[1:] for g in gaps[:5]],
            "cpu_ops": len(cpu), "syncs": syncs, "top_cpu": top}


def host_parts(module_fn, loss_fn, grad_fn, calls: int = 30) -> dict:
    """Median host ms of the step's three parts, each called alone after a synchronisation."""
    parts = {"forward": [], "loss": [], "grad": []}
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = module_fn()
        t1 = time.perf_counter()
        loss = loss_fn(out)
        t2 = time.perf_counter()
        grad_fn(loss)
        t3 = time.perf_counter()
        parts["forward"].append((t1 - t0) * 1e3)
        parts["loss"].append((t2 - t1) * 1e3)
        parts["grad"].append((t3 - t2) * 1e3)
    return {f"host_{k}_ms": statistics.median(v) for k, v in parts.items()}


def split_step(lane, case, inputs):
    """The engine's train step of ``lane`` in its three parts (the same calls as
    ``workload.module_call``'s ``train``)."""
    from rnnbench.workload import _targets_on, finals_of, loss_of

    module = lane.module_for(case, inputs.weights)
    dtype = module.weight_hh_l0.dtype
    move = lambda t: t.detach().to(device="cuda", dtype=dtype, copy=True).requires_grad_(True)  # noqa: E731
    x, h0, c0 = move(inputs.x), move(inputs.h0), move(inputs.c0)
    lstm = case.cell == "lstm"
    leaves = [x, h0, c0] if lstm else [x, h0]
    params = list(module.parameters())
    targets = _targets_on(inputs, "cuda")
    forward = lambda: module(x, (h0, c0) if lstm else h0)  # noqa: E731
    loss = lambda out: loss_of(out[0], finals_of(case.cell, out[1]), targets, case.loss)  # noqa: E731
    grad = lambda l: torch.autograd.grad(l, [*leaves, *params])  # noqa: E731
    return forward, loss, grad


def main(argv: list[str]) -> int:
    from rnnbench.cases import Case
    from rnnbench.env import environment
    from rnnbench.lanes import LANES as REGISTRY
    from rnnbench.precision import matmul_mode
    from rnnbench.workload import lane_step, make_inputs

    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for gap.jsonl and the profiles")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    f = open(out / "gap.jsonl", "w")
    f.write(json.dumps({"record": "env", **environment()}) + "\n")
    print("case | lane | synced ms | host ms | graph ms | GPU busy us | GPU span us | kernels | largest gaps us | "
          "host forward / loss / grad ms | synchronisations in the profiled call")
    for cell, b, h, dtype in CASES:
        case = Case(cell=cell, batch_size=b, seq_len=30, input_size=h, hidden_size=h, dtype=dtype, mode="train",
                    device="cuda")
        inputs = make_inputs(case)
        with matmul_mode(dtype):
            for lane in LANES:
                step = lane_step(REGISTRY[lane], case, inputs)
                graph = lane_step(REGISTRY[lane + "-graph"], case, inputs)
                for _ in range(5):
                    step.fn()
                    graph.fn()
                synced, host = timings(step.fn)
                graph_ms, _ = timings(graph.fn)
                prof = profile(step.fn)
                parts = host_parts(*split_step(REGISTRY[lane], case, inputs))
                row = {"cell": cell, "batch_size": b, "hidden_size": h, "dtype": dtype, "lane": lane,
                       "synced_ms": synced, "host_ms": host, "graph_ms": graph_ms, **parts,
                       **{k: v for k, v in prof.items() if k != "top_cpu"}}
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(f"{cell} B{b} H{h} {dtype} | {lane} | {synced:.3f} | {host:.3f} | {graph_ms:.3f} | "
                      f"{prof['gpu_busy_us']:.0f} | {prof['gpu_span_us']:.0f} | {prof['kernels']} | {prof['gaps_us']} | "
                      f"host parts {parts['host_forward_ms']:.3f} / {parts['host_loss_ms']:.3f} / {parts['host_grad_ms']:.3f}"
                      f" | syncs {len(prof['syncs'])}", flush=True)
                for name, stack in prof["syncs"]:
                    print("   ", name, stack, flush=True)
                (out / f"top-{cell}-{b}-{h}-{lane}.txt").write_text(prof["top_cpu"] + "\n" + json.dumps(prof["gap_between"]))
                step.close()
                graph.close()
    f.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
