"""Development check of rnnbench's Triton kernels on one GPU, in one call (a few minutes).

    python benchmarks/triton_dev.py OUT_DIR [--budget SECONDS]

1. Correctness of the multi-program kernels against the float64 reference (one layer, output,
   final states and every gradient; every cell, fp32 / tf32 / bf16 / fp16, several program counts),
   and of the grid barrier itself (``barrier_check``).
2. Timing (``triton.testing.do_bench``, median of CUDA-event timings): our forward (no grad) and
   train step (forward + MSE over all steps + gradients to the input and every weight) against
   torch.nn (cuDNN) on the same weights, plus the per-step floor for our grid: T barriers alone,
   and T barriers each after a small on-chip ``tl.dot``; and the forward under a few other
   launch plans, to tune from.

Each task runs in a subprocess with a time limit, so a hang (a grid that cannot be resident) or a
crash is recorded and the run goes on; tasks left when ``--budget`` is spent are recorded as
skipped. Writes ``OUT_DIR/triton_dev.json`` (every row as it arrives) and ``triton_dev.txt`` (the
table printed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# (cell, batch, seq, input, hidden, dtypes): glample-2016, theano-cudnn-2016-like, flashrnn-2024
TIMING = [
    ("lstm", 20, 30, 100, 100, ("fp32",)),
    ("lstm", 20, 30, 100, 500, ("fp32",)),
    ("lstm", 32, 30, 512, 512, ("tf32", "bf16")),
    ("gru", 32, 30, 512, 512, ("tf32", "bf16")),
    ("lstm", 128, 30, 512, 512, ("tf32", "bf16")),
    ("gru", 128, 30, 512, 512, ("tf32", "bf16")),
    ("lstm", 16, 1024, 768, 768, ("bf16", "fp16")),
]
# Launch plans tried for the forward besides the default (fields of rnnbench.ops.common.Plan).
SWEEP = [dict(w_resident=True), dict(w_resident=False), dict(block_h=32), dict(num_warps=8)]
CORRECTNESS_PLANS = [dict(), dict(block_h=16, block_b=16, w_resident=False), dict(block_h=32, w_resident=True, block_b=16)]
TASK_LIMIT_S = 240


def _torch_dtype(dtype):
    import torch

    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]


# ----------------------------------------------------------------------------- tasks (subprocess)


def task_env() -> dict:
    import torch
    import triton

    p = torch.cuda.get_device_properties(0)
    return {"gpu": p.name, "multiprocessors": p.multi_processor_count, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "triton": triton.__version__}


def task_barrier() -> list[dict]:
    import torch

    from rnnbench.ops.floor import barrier_check

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for n in sorted({1, 2, 16, 64, sms}):
        errors = barrier_check(n, 1000, "cuda")
        rows.append({"kind": "barrier", "programs": n, "steps": 1000, "stale_reads": errors, "ok": errors == 0})
    return rows


def task_correctness(cell: str) -> list[dict]:
    """One layer against the float64 reference, every dtype and plan; B20 T17 I48 H100."""
    import torch

    from rnnbench.ops.naive import naive_layer
    from rnnbench.ops.recurrence import plan, plan_override, recurrent_layer
    from rnnbench.precision import matmul_mode, tolerance
    from rnnbench.verify import relative_error

    b, t, i, h = 20, 17, 48, 100
    g = {"lstm": 4, "gru": 3}.get(cell, 1)
    gen = torch.Generator().manual_seed(0)
    u = lambda *s: (torch.rand(s, generator=gen) * 2 - 1) * h ** -0.5  # noqa: E731
    tensors = [torch.randn(t, b, i, generator=gen), torch.randn(b, h, generator=gen) * 0.5,
               torch.randn(b, h, generator=gen) * 0.5 if cell == "lstm" else None, u(g * h, i), u(g * h, h), u(g * h), u(g * h)]

    def run(fn, dtype, source=tensors):
        leaves = [None if x is None else x.to("cuda", dtype).requires_grad_() for x in source]
        out = [o for o in fn(cell, *leaves) if o is not None]
        wgen = torch.Generator(device="cuda").manual_seed(1)
        loss = sum((o.double() * torch.randn(o.shape, generator=wgen, device="cuda", dtype=torch.float64)).sum() for o in out)
        return out + list(torch.autograd.grad(loss, [x for x in leaves if x is not None]))

    rows = []
    for dtype in ("fp32", "tf32", "bf16", "fp16"):
        ref = None
        for overrides in CORRECTNESS_PLANS:
            row = {"kind": "correctness", "cell": cell, "dtype": dtype, "plan_override": overrides}
            try:
                with plan_override(**overrides):
                    p = plan(cell, b, h, _torch_dtype(dtype), torch.device("cuda"))
                    row["plan"] = p.__dict__
                    row["programs"] = p.grid(b, h)[0] * p.grid(b, h)[1]
                    with matmul_mode(dtype):
                        got = run(recurrent_layer, _torch_dtype(dtype))
                if ref is None:  # float64, from the inputs rounded to dtype as the kernels see them
                    rounded = [None if x is None else x.to(_torch_dtype(dtype)) for x in tensors]
                    ref = run(naive_layer, torch.float64, rounded)
                err = max(relative_error(a, r) for a, r in zip(got, ref))
                row.update(max_rel_error=err, tolerance=tolerance(cell, dtype), ok=err <= tolerance(cell, dtype))
            except Exception as exc:  # record and go on to the next plan
                row.update(ok=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0])
            rows.append(row)
    return rows


def _modules(cell, i, h, dtype):
    import torch

    from rnnbench import nn as rnn

    torch.manual_seed(0)
    if cell == "lstm":
        theirs, ours = torch.nn.LSTM(i, h), rnn.LSTM(i, h, backend="triton")
    else:
        theirs, ours = torch.nn.GRU(i, h), rnn.GRU(i, h, backend="triton")
    ours.load_state_dict(theirs.state_dict())
    return theirs.to("cuda", _torch_dtype(dtype)), ours.to("cuda", _torch_dtype(dtype))


def _steps(module, x, target):
    import torch

    params = list(module.parameters())

    def forward():
        with torch.no_grad():
            return module(x)[0]

    def train():
        out = module(x)[0]
        loss = 0.5 * (out.float() - target).pow(2).sum() / x.shape[1]
        return torch.autograd.grad(loss, [x, *params])

    return forward, train


def task_timing(cell, b, t, i, h, dtype) -> list[dict]:
    import torch
    from triton.testing import do_bench

    from rnnbench.ops.floor import barrier_floor, dot_floor
    from rnnbench.ops.recurrence import plan, plan_override
    from rnnbench.precision import matmul_mode
    from rnnbench.verify import relative_error

    key = f"{cell}-B{b}-T{t}-I{i}-H{h}-{dtype}"
    torch_dtype = _torch_dtype(dtype)
    dev = torch.device("cuda")
    row = {"kind": "timing", "case": key, "cell": cell, "batch_size": b, "seq_len": t, "input_size": i,
           "hidden_size": h, "dtype": dtype}
    with matmul_mode(dtype):
        theirs, ours = _modules(cell, i, h, dtype)
        gen = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(t, b, i, device=dev, generator=gen).to(torch_dtype).requires_grad_()
        target = torch.randn(t, b, h, device=dev, generator=gen)
        p = plan(cell, b, h, torch_dtype, dev)
        nh, nb = p.grid(b, h)
        row.update(plan=p.__dict__, programs=nh * nb)
        (tf, tt), (of, ot) = _steps(theirs, x, target), _steps(ours, x, target)
        row["rel_diff_vs_torch_nn"] = relative_error(of(), tf())
        t0 = time.perf_counter()
        ot()
        torch.cuda.synchronize()
        row["first_train_call_s"] = time.perf_counter() - t0
        for name, fn in (("torch_nn_forward_ms", tf), ("triton_forward_ms", of), ("torch_nn_train_ms", tt),
                         ("triton_train_ms", ot)):
            row[name] = do_bench(fn, warmup=25, rep=200, return_mode="median")
        # The per-step floor for this grid: barrier only, and barrier + on-chip dot of the same width.
        row["floor_barrier_us_per_step"] = 1e3 * do_bench(lambda: barrier_floor(nh, t, "cuda"), warmup=10, rep=100,
                                                          return_mode="median") / t
        # One batch block of the plan's height (the dot floor runs a single block).
        h_buf = torch.randn(t + 1, min(b, p.block_b), h, device=dev).to(torch_dtype) * 0.01
        w = (torch.randn(h, h, device=dev) * h ** -0.5).to(torch_dtype)
        prec = "tf32" if dtype == "tf32" else "ieee"
        row["floor_dot_us_per_step"] = 1e3 * do_bench(lambda: dot_floor(h_buf, w, p.block_h, prec), warmup=10,
                                                      rep=100, return_mode="median") / t
        row["triton_forward_us_per_step"] = 1e3 * row["triton_forward_ms"] / t
        sweep = {}
        x_nograd = x.detach()
        for overrides in SWEEP:
            label = ",".join(f"{k}={v}" for k, v in overrides.items())
            try:
                with plan_override(**overrides):
                    plan(cell, b, h, torch_dtype, dev)  # raises if not resident-safe

                    def fwd():
                        with torch.no_grad():
                            return ours(x_nograd)[0]

                    sweep[label] = do_bench(fwd, warmup=10, rep=100, return_mode="median")
            except Exception as exc:
                sweep[label] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        row["forward_ms_by_plan"] = sweep
    return [row]


def run_task(name: str, args: list[str]) -> list[dict]:
    if name == "env":
        return [task_env()]
    if name == "barrier":
        return task_barrier()
    if name == "correctness":
        return task_correctness(args[0])
    if name == "timing":
        cell, b, t, i, h, dtype = args
        return task_timing(cell, int(b), int(t), int(i), int(h), dtype)
    raise SystemExit(f"unknown task {name}")


# ----------------------------------------------------------------------------- orchestration


def spawn(tasks: list[tuple[str, list[str]]], limit_s: float) -> list[dict]:
    """Run tasks, each in its own subprocess, all at once; their rows, or one row per task saying
    how it failed (a hang is killed at ``limit_s``)."""
    procs = []
    for name, args in tasks:
        cmd = [sys.executable, __file__, "--task", name, *args]
        procs.append((name, args, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    deadline = time.monotonic() + limit_s
    rows = []
    for name, args, proc in procs:
        label = {"task": name, "args": args}
        try:
            stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            rows.append({**label, "kind": "failure", "error": f"timed out after {limit_s:.0f} s (a barrier that never opens?)"})
            continue
        found = [line for line in stdout.splitlines() if line.startswith("ROWS ")]
        if found:
            rows.extend(json.loads(found[-1][5:]))
        else:
            tail = (stderr or stdout).strip().splitlines()[-3:]
            rows.append({**label, "kind": "failure", "error": f"exit {proc.returncode}: {' | '.join(tail)}"})
    return rows


def _fmt(v, digits=3):
    return "-" if v is None else (f"{v:.{digits}g}" if isinstance(v, float) else str(v))


def summary(rows: list[dict]) -> str:
    lines = []
    bad = [r for r in rows if r.get("kind") in ("correctness", "barrier") and not r.get("ok")]
    n = sum(r.get("kind") in ("correctness", "barrier") for r in rows)
    lines.append(f"correctness: {n - len(bad)}/{n} ok")
    for r in bad:
        lines.append(f"  FAIL {r.get('cell', 'barrier')} {r.get('dtype', '')} {r.get('plan_override', r.get('programs'))}: "
                     f"{r.get('error') or r.get('max_rel_error') or r.get('stale_reads')}")
    lines.append("")
    head = ("case", "progs", "fwd ms nn", "fwd ms ours", "x", "train ms nn", "train ms ours", "x",
            "µs/step ours", "barrier µs", "dot+barrier µs", "diff vs nn")
    table = [head]
    for r in rows:
        if r.get("kind") != "timing":
            continue
        fx = r["torch_nn_forward_ms"] / r["triton_forward_ms"]
        tx = r["torch_nn_train_ms"] / r["triton_train_ms"]
        table.append((r["case"], str(r["programs"]), _fmt(r["torch_nn_forward_ms"]), _fmt(r["triton_forward_ms"]),
                      f"{fx:.2f}", _fmt(r["torch_nn_train_ms"]), _fmt(r["triton_train_ms"]), f"{tx:.2f}",
                      _fmt(r["triton_forward_us_per_step"]), _fmt(r["floor_barrier_us_per_step"]),
                      _fmt(r.get("floor_dot_us_per_step")), _fmt(r["rel_diff_vs_torch_nn"], 2)))
    widths = [max(len(row[k]) for row in table) for k in range(len(head))]
    for row in table:
        lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    lines.append("(x = torch.nn time / ours: above 1 is faster than cuDNN)")
    for r in rows:
        if r.get("kind") == "failure":
            lines.append(f"FAILED {r['task']} {' '.join(r['args'])}: {r['error']}")
        elif r.get("kind") == "timing" and "error" in r:
            lines.append(f"FAILED {r['case']}: {r['error']}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?")
    parser.add_argument("--budget", type=float, default=280.0, help="seconds for the whole run")
    parser.add_argument("--task", nargs="+", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.task:  # inside a subprocess: print the rows as one JSON line
        try:
            rows = run_task(a.task[0], a.task[1:])
        except Exception as exc:
            rows = [{"kind": "failure", "task": a.task[0], "args": a.task[1:],
                     "error": f"{type(exc).__name__}: {exc}".splitlines()[0], "traceback": traceback.format_exc()}]
        print("ROWS " + json.dumps(rows, default=str))
        return 0
    if not a.out_dir:
        parser.error("OUT_DIR is required")
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + a.budget
    # Correctness tasks run side by side (mostly compilation, which is CPU work); timings alone.
    groups = [[("env", []), ("barrier", [])] + [("correctness", [c]) for c in ("lstm", "gru", "rnn_tanh", "rnn_relu")]]
    groups += [[("timing", [c, str(b), str(t), str(i), str(h), d])] for c, b, t, i, h, ds in TIMING for d in ds]
    rows: list[dict] = []
    started = time.monotonic()
    for group in groups:
        left = deadline - time.monotonic()
        names = "; ".join(f"{n} {' '.join(a)}" for n, a in group)
        if left < 5:
            rows += [{"kind": "failure", "task": n, "args": a, "error": "skipped: time budget spent"} for n, a in group]
            continue
        t0 = time.monotonic()
        new = spawn(group, min(TASK_LIMIT_S, left))
        print(f"[{time.monotonic() - started:6.1f} s] {names}: {len(new)} row(s) in {time.monotonic() - t0:.1f} s",
              flush=True)
        rows.extend(new)
        (out / "triton_dev.json").write_text(json.dumps({"rows": rows}, indent=1, default=str))
    text = summary(rows)
    print("\n" + text)
    (out / "triton_dev.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
