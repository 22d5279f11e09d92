"""Development check of rnnbench's Triton kernels on one GPU, in one call (a few minutes).

    python benchmarks/triton_dev.py OUT_DIR [--budget SECONDS]

1. Correctness of the multi-program kernels against the float64 reference (one layer, output,
   final states and every gradient; every cell, fp32 / tf32 / bf16 / fp16, several launch plans,
   with and without initial states), of the grid barrier itself (``barrier_check``), and that
   every kernel leaves its barrier counters at zero (they are reused without a memset).
   Meanwhile every kernel the timings need is compiled once (Triton's disk cache), so the timing
   tasks measure, not compile.
2. Timing, one case at a time: our forward (no grad) and train step (forward + MSE over all steps
   + gradients to the input and every weight) against torch.nn (cuDNN) on the same weights
   (``triton.testing.do_bench``, median of CUDA-event timings, eager calls as a user makes them);
   then where our forward's time goes: the host time of one call (CPU, no sync), the forward
   replayed from a CUDA graph (no host overhead; torch.nn's too), the input projection alone,
   the recurrence kernel alone (graph replay) at two sequence lengths, giving its time per step
   and its fixed cost (prologue, launch); the per-step floor of our layout (T barriers alone; T
   barriers after the same stacked matmul with the same plan, no cell); and the kernel alone
   under a few other launch plans, to tune from.

Each task runs in a subprocess with a time limit, so a hang (a grid that cannot be resident) or a
crash is recorded and the run goes on; tasks left when ``--budget`` is spent are recorded as
skipped. Writes ``OUT_DIR/triton_dev.json`` (every row as it arrives) and ``triton_dev.txt`` (the
tables printed at the end).
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
# The tasks' device. "cpu" (with TRITON_INTERPRET=1) only checks this script's own logic on a
# machine without a GPU: ``--task warm ...`` and ``--task correctness ...`` run there, slowly.
DEVICE = os.environ.get("RNNBENCH_DEV_DEVICE", "cuda")

# (cell, batch, seq, input, hidden, dtypes): theano-cudnn-2016 (depth 1), flashrnn-2024, glample-2016;
# in this order, so that a run out of time loses the least telling cases.
TIMING = [
    ("lstm", 32, 30, 512, 512, ("bf16", "tf32")),
    ("gru", 32, 30, 512, 512, ("bf16", "tf32")),
    ("lstm", 16, 1024, 768, 768, ("bf16", "fp16")),
    ("lstm", 128, 30, 512, 512, ("bf16", "tf32")),
    ("gru", 128, 30, 512, 512, ("bf16",)),
    ("lstm", 128, 30, 1024, 1024, ("bf16",)),
    ("lstm", 20, 30, 100, 100, ("fp32",)),
    ("lstm", 20, 30, 100, 500, ("fp32",)),
    ("rnn_tanh", 20, 30, 100, 100, ("fp32", "tf32", "bf16")),
]
CORRECTNESS_PLANS = [dict(), dict(block_h=16, block_b=16, w_resident=False), dict(block_h=32, w_resident=True, block_b=16),
                     dict(block_h=4, w_resident=False, block_k=16), dict(block_h=64, w_resident=True)]
CORRECTNESS_CELLS = ("lstm", "gru", "rnn_tanh", "rnn_relu")
CORRECTNESS_DTYPES = ("fp32", "tf32", "bf16", "fp16")
TASK_LIMIT_S = 240
TIMING_BATCH = 3  # timing cases per subprocess


def _sync():
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _torch_dtype(dtype):
    import torch

    return {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]


def _sweep(p) -> list[dict]:
    """Launch plans tried for the forward kernel besides the default ``p``."""
    out = [dict(num_warps=12 - p.num_warps), dict(w_resident=not p.w_resident), dict(block_h=2 * p.block_h)]
    if p.block_h >= 8:
        out.append(dict(block_h=p.block_h // 2))
    if p.block_b > 16:
        out.append(dict(block_b=p.block_b // 2))
    if p.w_resident:  # the width of the pieces the weights are held in (and h staged in)
        out += [dict(block_k=2 * p.block_k)] + ([dict(block_k=p.block_k // 2)] if p.block_k >= 32 else [])
    else:
        out += [dict(block_k=2 * p.block_k), dict(num_stages=p.num_stages + 2)]
    return out


def _sweep_backward(p) -> list[dict]:
    """Launch plans tried for the backward kernel besides the default ``p`` (streamed weights:
    chunk size and pipeline depth first)."""
    out = [dict(block_k=p.block_k // 2), dict(block_k=2 * p.block_k), dict(num_stages=p.num_stages + 2),
           dict(block_h=2 * p.block_h)]
    return [o for o in out if o.get("block_k", 16) >= 16]


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


def task_correctness(cell: str, *dtypes: str) -> list[dict]:
    """One layer against the float64 reference, every plan, in ``dtypes`` (default all); B20 T17
    I48 H100. Then the default plan without initial states (zeros inside the kernel), and the
    counters' state."""
    import torch

    from rnnbench.ops.launch import COUNTERS
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
    no_state = [tensors[0], None, None, *tensors[3:]]

    def run(fn, dtype, source=tensors):
        leaves = [None if x is None else x.to(DEVICE, dtype).requires_grad_() for x in source]
        if fn is naive_layer and leaves[1] is None:  # the reference takes explicit zeros
            leaves[1] = torch.zeros(b, h, device=DEVICE, dtype=dtype)
            leaves[2] = torch.zeros(b, h, device=DEVICE, dtype=dtype) if cell == "lstm" else None
        out = [o for o in fn(cell, *leaves) if o is not None]
        wgen = torch.Generator(device=DEVICE).manual_seed(1)
        loss = sum((o.double() * torch.randn(o.shape, generator=wgen, device=DEVICE, dtype=torch.float64)).sum() for o in out)
        return out + list(torch.autograd.grad(loss, [x for x in leaves if x is not None and x.requires_grad]))

    rows = []
    for dtype in dtypes or ("fp32", "tf32", "bf16", "fp16"):
        refs = {}
        variants = [(o, tensors) for o in CORRECTNESS_PLANS] + [({"initial_states": "none"}, no_state)]
        for overrides, source in variants:
            row = {"kind": "correctness", "cell": cell, "dtype": dtype, "plan_override": overrides}
            fields = {k: v for k, v in overrides.items() if k != "initial_states"}
            try:
                with plan_override(**fields), matmul_mode(dtype):
                    prec = "tf32" if dtype == "tf32" else "ieee"
                    p = plan(cell, b, h, _torch_dtype(dtype), torch.device(DEVICE), prec)
                    row["plan"] = p.__dict__
                    row["programs"] = p.grid(b, h)[0] * p.grid(b, h)[1]
                    got = run(recurrent_layer, _torch_dtype(dtype), source)
                if id(source) not in refs:  # float64, from the inputs rounded to dtype as the kernels see them
                    rounded = [None if x is None else x.to(_torch_dtype(dtype)) for x in source]
                    refs[id(source)] = run(naive_layer, torch.float64, rounded)
                err = max(relative_error(a, r) for a, r in zip(got, refs[id(source)]))
                row.update(max_rel_error=err, tolerance=tolerance(cell, dtype), ok=err <= tolerance(cell, dtype))
            except Exception as exc:  # record and go on to the next plan
                row.update(ok=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0])
            rows.append(row)
            print("ROWS " + json.dumps(rows, default=str), flush=True)  # so far: kept if the task is cut off
    _sync()
    dirty = sum(int(buf.count_nonzero()) for buf in COUNTERS.values())
    rows.append({"kind": "counters", "cell": cell, "buffers": len(COUNTERS), "nonzero": dirty,
                 "ok": dirty == 0})
    return rows


def _modules(cell, i, h, dtype):
    """torch.nn's layer and ours on the same weights, built as the engine's lanes build them
    (``torch-nn``, ``triton``): every cell, RNN included."""
    import torch

    from rnnbench.lanes.torch_nn import build_torch_nn
    from rnnbench.lanes.triton import build_triton

    torch.manual_seed(0)
    theirs, ours = build_torch_nn(cell, i, h, 1), build_triton(cell, i, h, 1)
    ours.load_state_dict(theirs.state_dict())
    return theirs.to(DEVICE, _torch_dtype(dtype)), ours.to(DEVICE, _torch_dtype(dtype))


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


def _graph_ms(fn, rep=100) -> float:
    """Median ms of ``fn`` replayed from a CUDA graph (warmed up on a side stream first, as
    capture requires): the device time without the host's per-call overhead."""
    from triton.testing import do_bench

    from rnnbench.workload import graphed

    replay = graphed(fn)
    replay()  # the capture
    return do_bench(replay, warmup=10, rep=rep, return_mode="median")


def _host_ms(fn, calls=200) -> float:
    """Median host (CPU) time of one call in ms, no synchronisation inside the timed region."""
    import statistics

    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for k in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if k % 10 == 9:
            torch.cuda.synchronize()  # keep the queue short: a full queue would block the host
    return 1e3 * statistics.median(times)


def _kernel_alone(cell, b, t, h, torch_dtype, precision, x_proj_full, w_hh, b_ih, b_hh):
    """A no-grad forward launch on prebuilt inputs (what the module adds around it is measured
    apart); ``t`` steps of ``x_proj_full``."""
    import torch

    from rnnbench.ops import recurrence

    x_proj = x_proj_full[:t].contiguous()

    def run():
        launch = recurrence._cached_launch(cell, b, h, torch_dtype, torch.device(DEVICE), precision,
                                           recurrence._PLAN_OVERRIDE.get())
        return recurrence.recurrence_forward(cell, x_proj, w_hh, b_ih, b_hh, None, None, launch, False)

    return run


def us_per_step(run_at, steps: int) -> float:
    """µs a step of a recurrence kernel: ``run_at(n)`` builds its run over ``n`` steps; the
    difference of ``steps`` and ``2 * steps`` steps replayed from a CUDA graph (:func:`_graph_ms`),
    over ``steps``, so that the launch and the prologue cancel."""
    ms = [_graph_ms(run_at(n)) for n in (steps, 2 * steps)]
    return 1e3 * (ms[1] - ms[0]) / steps


def form_row(row: dict, key: str, run_at, expected, steps: int, timed: bool, check_steps: int = 4) -> None:
    """One form of a probe's stand-in step, checked then timed into ``row``: ``run_at(n)`` builds its
    run over fresh tensors of ``n`` steps, returning ``h_buf``. Its ``h`` after ``check_steps``
    against ``expected`` (``row[key + "_err"]``, the largest difference over ``expected``'s largest
    value), then, if ``timed`` (on CUDA), its :func:`us_per_step` (``row[key + "_us"]``); an exception
    is recorded as ``row[key + "_error"]`` in one line and the caller goes on."""
    try:
        out = run_at(check_steps)()[-1].float()
        row[f"{key}_err"] = float((out - expected).abs().max() / expected.abs().max())
        if timed:
            row[f"{key}_us"] = us_per_step(run_at, steps)
    except Exception as e:  # (a tile that does not compile or fit)
        row[f"{key}_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def kernel_tensors(cell, b, h, torch_dtype, steps, seed=0):
    """A layer's tensors for timing its kernels alone, drawn in this order from one generator
    seeded ``seed`` on the tasks' device: ``(w_hh [G*H, H], bias [G*H], x_proj [steps, B, G*H])``,
    the first two in ``torch_dtype``, ``x_proj`` in fp32 (the caller casts it as the kernel wants);
    ``W_hh`` scaled by ``H^-1/2``, the bias by 0.1, so that h stays in range over many steps."""
    import torch

    from rnnbench.ops.recurrence import NUM_GATES

    g = NUM_GATES[cell]
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    w_hh = (torch.randn(g * h, h, device=DEVICE, generator=gen) * h ** -0.5).to(torch_dtype)
    bias = (torch.randn(g * h, device=DEVICE, generator=gen) * 0.1).to(torch_dtype)
    return w_hh, bias, torch.randn(steps, b, g * h, device=DEVICE, generator=gen)


def _saved_forward(cell, b, t, h, torch_dtype, precision, x_proj_full, w_hh, b_ih, b_hh):
    """One forward (default plan) that saves for backward: ``(h_buf, saved, c_buf, d_out)``."""
    import torch

    from rnnbench.ops import recurrence

    dev = torch.device(DEVICE)
    launch = recurrence._cached_launch(cell, b, h, torch_dtype, dev, precision, ())
    h_buf, _, _, saved, c_buf = recurrence.recurrence_forward(cell, x_proj_full[:t].contiguous(), w_hh, b_ih, b_hh,
                                                              None, None, launch, True)
    return h_buf, saved, c_buf, torch.randn(t, b, h, device=dev).to(torch_dtype)


def _backward_alone(cell, b, h, torch_dtype, precision, w_hh, state):
    """A backward launch (the plan in force when called) on the saved values of ``state``."""
    import torch

    from rnnbench.ops import recurrence

    h_buf, saved, c_buf, d_out = state

    def run():
        launch = recurrence._cached_launch(cell, b, h, torch_dtype, torch.device(DEVICE), precision,
                                           recurrence._PLAN_OVERRIDE.get())
        return recurrence.recurrence_backward(cell, d_out, None, None, saved, c_buf, h_buf, w_hh, launch)

    return run


def task_timing(cell, b, t, i, h, dtype, warm_only=False) -> list[dict]:
    import torch
    from triton.testing import do_bench

    from rnnbench.ops.plans import gates_padded
    from rnnbench.ops.floor import barrier_floor, dot_floor
    from rnnbench.ops.recurrence import NUM_GATES, plan, plan_override
    from rnnbench.ops.plans import dot_precision
    from rnnbench.precision import matmul_mode
    from rnnbench.verify import relative_error

    key = f"{cell}-B{b}-T{t}-I{i}-H{h}-{dtype}"
    torch_dtype = _torch_dtype(dtype)
    dev = torch.device(DEVICE)
    with matmul_mode(dtype):  # the products the modules get for this dtype (fp32: 3xTF32)
        precision = dot_precision(torch_dtype)
    row = {"kind": "warm" if warm_only else "timing", "case": key, "cell": cell, "batch_size": b, "seq_len": t,
           "input_size": i, "hidden_size": h, "dtype": dtype}

    def once(fn, rep=None):  # warming: compile and run once, time nothing
        fn()
        return 0.0

    def bench(fn, rep=200):
        return once(fn) if warm_only else do_bench(fn, warmup=25, rep=rep, return_mode="median")

    graph = once if warm_only else _graph_ms
    seq = 3 if warm_only else t  # warming compiles the same kernels: T and B are never specialised
    with matmul_mode(dtype):
        theirs, ours = _modules(cell, i, h, dtype)
        gen = torch.Generator(device=DEVICE).manual_seed(0)
        x = torch.randn(seq, b, i, device=dev, generator=gen).to(torch_dtype).requires_grad_()
        target = torch.randn(seq, b, h, device=dev, generator=gen)
        p = plan(cell, b, h, torch_dtype, dev, precision)
        pb = plan(cell, b, h, torch_dtype, dev, precision, "backward")
        nh, nb = p.grid(b, h)
        row.update(plan=p.__dict__, plan_backward=pb.__dict__, programs=nh * nb)
        (tf, tt), (of, ot) = _steps(theirs, x, target), _steps(ours, x, target)
        row["rel_diff_vs_torch_nn"] = relative_error(of(), tf())
        t0 = time.perf_counter()
        ot()
        _sync()
        row["first_train_call_s"] = time.perf_counter() - t0
        for name, fn in (("torch_nn_forward_ms", tf), ("triton_forward_ms", of), ("torch_nn_train_ms", tt),
                         ("triton_train_ms", ot)):
            row[name] = bench(fn)
        # Where our forward's time goes.
        if not warm_only:  # (fewer calls when each is long: the queue drains every 10)
            row["torch_nn_forward_host_ms"] = _host_ms(tf, 200 if t <= 64 else 30)
            row["triton_forward_host_ms"] = _host_ms(of, 200 if t <= 64 else 30)
        row["torch_nn_forward_graph_ms"] = graph(tf)
        row["triton_forward_graph_ms"] = graph(of)
        w_ih, w_hh, b_ih, b_hh = (getattr(ours, n + "_l0").detach() for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
        xd = x.detach()
        row["input_projection_ms"] = graph(lambda: torch.mm(xd.reshape(seq * b, i), w_ih.t()))
        t2 = 2 * seq if seq < 256 else seq // 2
        x_proj = torch.randn(max(seq, t2), b, NUM_GATES[cell] * h, device=dev, generator=gen).to(torch_dtype)
        k1 = graph(_kernel_alone(cell, b, seq, h, torch_dtype, precision, x_proj, w_hh, b_ih, b_hh))
        k2 = graph(_kernel_alone(cell, b, t2, h, torch_dtype, precision, x_proj, w_hh, b_ih, b_hh))
        per_step_ms = (k2 - k1) / (t2 - seq)
        row.update(kernel_ms=k1, kernel_ms_t2=k2, t2=t2, kernel_us_per_step=1e3 * per_step_ms,
                   kernel_fixed_us=1e3 * (k1 - seq * per_step_ms), triton_forward_us_per_step=1e3 * row["triton_forward_ms"] / t)
        # The per-step floor of this plan: barriers alone; barriers after the same stacked matmul.
        row["floor_barrier_us_per_step"] = 1e3 * graph(lambda: barrier_floor(nh, seq, DEVICE)) / seq
        h_buf = (torch.randn(seq + 1, min(b, p.block_b), h, device=dev, generator=gen) * 0.01).to(torch_dtype)
        w = (torch.randn(NUM_GATES[cell] * h, h, device=dev, generator=gen) * h ** -0.5).to(torch_dtype)
        row["floor_dot_us_per_step"] = 1e3 * graph(lambda: dot_floor(h_buf, w, p.block_h, precision, resident=p.w_resident,
                                                                     block_k=p.block_k, num_warps=p.num_warps,
                                                                     num_stages=p.num_stages)) / seq
        row["floor_gates_padded"] = gates_padded(NUM_GATES[cell])
        state = _saved_forward(cell, b, seq, h, torch_dtype, precision, x_proj, w_hh, b_ih, b_hh)
        forward_alone = _kernel_alone(cell, b, seq, h, torch_dtype, precision, x_proj, w_hh, b_ih, b_hh)
        backward_alone = _backward_alone(cell, b, h, torch_dtype, precision, w_hh, state)
        row["backward_kernel_ms"] = graph(backward_alone)
        row["backward_us_per_step"] = 1e3 * row["backward_kernel_ms"] / seq
        for field, plans, alone in (("kernel_ms_by_plan", _sweep(p), forward_alone),
                                    ("backward_kernel_ms_by_plan", _sweep_backward(pb), backward_alone)):
            sweep = {}
            for overrides in plans:  # each run reads the plan in force: the override
                label = ",".join(f"{k}={v}" for k, v in overrides.items())
                try:
                    with plan_override(**overrides):
                        plan(cell, b, h, torch_dtype, dev, precision)  # raises if not resident-safe
                        sweep[label] = graph(alone)
                except Exception as exc:
                    sweep[label] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            row[field] = sweep
    return [row]


def run_task(name: str, args: list[str]) -> list[dict]:
    if name == "env":
        return [task_env()]
    if name == "barrier":
        return task_barrier()
    if name == "correctness":
        return task_correctness(*args)
    if name in ("timing", "warm"):  # one or more cases, six arguments each, one after another
        rows = []
        for k in range(0, len(args), 6):
            cell, b, t, i, h, dtype = args[k:k + 6]
            try:
                rows += task_timing(cell, int(b), int(t), int(i), int(h), dtype, warm_only=name == "warm")
            except Exception as exc:  # record it and go on to the next case
                rows.append({"kind": "failure", "task": name, "args": args[k:k + 6],
                             "error": f"{type(exc).__name__}: {exc}".splitlines()[0], "traceback": traceback.format_exc()})
            print("ROWS " + json.dumps(rows, default=str), flush=True)  # so far: kept if a later case hangs
        return rows
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
            stdout, _ = proc.communicate()
            found = [line for line in (stdout or "").splitlines() if line.startswith("ROWS ")]
            rows.extend(json.loads(found[-1][5:]) if found else [])  # the cases finished before the hang
            rows.append({**label, "kind": "failure",
                         "error": f"cut off after {limit_s:.0f} s (still compiling, or a barrier that never opens)"})
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


def _table(head, body) -> list[str]:
    table = [head, *body]
    widths = [max(len(row[k]) for row in table) for k in range(len(head))]
    return ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in table]


def _best_plan(r, key="kernel_ms_by_plan", default="kernel_ms") -> str:
    timed = {k: v for k, v in r.get(key, {}).items() if isinstance(v, float)}
    if not timed:
        return "-"
    label = min(timed, key=timed.get)
    return f"{label} {timed[label] / r[default]:.2f}x"


def summary(rows: list[dict]) -> str:
    lines = []
    checks = ("correctness", "barrier", "counters")
    bad = [r for r in rows if r.get("kind") in checks and not r.get("ok")]
    n = sum(r.get("kind") in checks for r in rows)
    lines.append(f"correctness: {n - len(bad)}/{n} ok (float64 reference; barrier; counters left at zero)")
    for r in bad:
        lines.append(f"  FAIL {r.get('kind')} {r.get('cell', '')} {r.get('dtype', '')} "
                     f"{r.get('plan_override', r.get('programs'))}: "
                     f"{r.get('error') or r.get('max_rel_error') or r.get('stale_reads') or r.get('nonzero')}")
    timing = [r for r in rows if r.get("kind") == "timing"]
    lines.append("")
    head = ("case", "progs", "fwd ms nn", "fwd ms ours", "x", "train ms nn", "train ms ours", "x", "diff vs nn")
    body = [(r["case"], str(r["programs"]), _fmt(r["torch_nn_forward_ms"]), _fmt(r["triton_forward_ms"]),
             f"{r['torch_nn_forward_ms'] / r['triton_forward_ms']:.2f}", _fmt(r["torch_nn_train_ms"]),
             _fmt(r["triton_train_ms"]), f"{r['torch_nn_train_ms'] / r['triton_train_ms']:.2f}",
             _fmt(r["rel_diff_vs_torch_nn"], 2)) for r in timing]
    lines += _table(head, body)
    lines.append("(x = torch.nn time / ours, eager calls: above 1 is faster than cuDNN)")
    lines.append("")
    lines.append("where our forward goes (ms unless µs; graph = replayed from a CUDA graph, no host overhead;")
    lines.append(" kernel = the recurrence launch alone; per step and fixed from two lengths; floors per step)")
    head = ("case", "host/call", "graph nn", "graph ours", "x_proj", "kernel", "µs/step", "fixed µs",
            "barrier µs", "dot+bar µs", "best other plan (kernel time vs default)")
    body = [(r["case"], _fmt(r["triton_forward_host_ms"]), _fmt(r["torch_nn_forward_graph_ms"]),
             _fmt(r["triton_forward_graph_ms"]), _fmt(r["input_projection_ms"]), _fmt(r["kernel_ms"]),
             _fmt(r["kernel_us_per_step"]), _fmt(r["kernel_fixed_us"]), _fmt(r["floor_barrier_us_per_step"]),
             _fmt(r["floor_dot_us_per_step"]), _best_plan(r)) for r in timing]
    lines += _table(head, body)
    lines.append("")
    lines.append("backward kernel alone (graph replay, incl. the W_hh transpose), per step = ms / T")
    head = ("case", "bwd plan", "bwd ms", "bwd µs/step", "best other plan (vs default)")
    body = [(r["case"], "bb={block_b} bh={block_h} res={w_resident:d} bk={block_k} w={num_warps} st={num_stages}"
             .format(**r["plan_backward"]), _fmt(r["backward_kernel_ms"]), _fmt(r["backward_us_per_step"]),
             _best_plan(r, "backward_kernel_ms_by_plan", "backward_kernel_ms")) for r in timing]
    lines += _table(head, body)
    for r in rows:
        if r.get("kind") == "failure":
            lines.append(f"FAILED {r['task']} {' '.join(r['args'])}: {r['error']}")
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
    # Correctness (one process per cell and dtype) and warming (compiling what the timings launch)
    # run side by side: mostly compilation, which is CPU work. Timings alone, a few cases per
    # process (a crash loses only its batch; each process start costs seconds).
    cases = [[c, str(b), str(t), str(i), str(h), d] for c, b, t, i, h, ds in TIMING for d in ds]
    groups = [[("env", []), ("barrier", [])]
              + [("correctness", [c, d]) for c in CORRECTNESS_CELLS for d in CORRECTNESS_DTYPES]
              + [("warm", case) for case in cases]]
    groups += [[("timing", sum(cases[k:k + TIMING_BATCH], []))] for k in range(0, len(cases), TIMING_BATCH)]
    rows: list[dict] = []
    started = time.monotonic()
    for group in groups:
        left = deadline - time.monotonic()
        kinds = [n for n, _ in group]
        names = ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))
        if len(group) == 1:
            names += " " + " ".join(group[0][1])
        if left < 5:
            rows += [{"kind": "failure", "task": n, "args": a, "error": "skipped: time budget spent"} for n, a in group]
            continue
        t0 = time.monotonic()
        # The first group compiles; it must leave the timings most of the budget.
        new = spawn(group, min(TASK_LIMIT_S, left if group is not groups[0] else max(60.0, left - 130)))
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
