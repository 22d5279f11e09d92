"""Where an eager call of rnnbench.nn spends its host time, and what two changes buy (one GPU).

    python benchmarks/host_time.py OUT_DIR [--parts launch,barrier,profile,engine] [--launch-modes A,B]

1. Launch: two ways of launching the forward kernel (``--launch-modes``, default
   ``runner,direct``; ``jit`` is Triton's JIT launch on every call, ``runner`` our cached
   compiled launch through Triton's Python runner, ``direct`` the same calling Triton 3.6's C
   launcher itself: ``ops/launch.py``), host µs per launch; the whole module per eager call
   (forward under no_grad, and a training step: forward, MSE over every step, backward) with
   each launch mode, as host µs per call (no synchronisation inside the timed call), as µs per
   call synchronised before and after (as the engine times), and as device-inclusive ms per call
   (``triton.testing.do_bench``); each mode measured twice, in the order A B B A, and averaged;
   torch.nn beside it; a cProfile of the training step.
2. Barrier: the grid barrier's per-step cost (``ops/floor.barrier_floor``), the barrier check,
   and the kernels alone replayed from CUDA graphs (no host time). (At commit e5c2309 this part
   also compared other barrier designs, each in its own process: results/h100/host-time.)
3. Profile: host µs per eager call of our module and torch.nn's now, and cProfiles of ours
   (forward and training step), on the small cases where the host decides (``PROFILE_CASES``).
4. Engine: the engine's own training step for ``torch-nn``, ``triton`` and their graph lanes,
   synchronised and host µs per call, cProfiles of both eager steps (``ENGINE_CASES``).

Writes ``OUT_DIR/host_time.json`` (rows) and ``OUT_DIR/host_time.txt`` (the tables, also printed).
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ab import OneLineParser  # noqa: E402
from triton_dev import _host_ms, _modules  # noqa: E402  (shared: one timer of host work, the lanes' modules)

# (cell, batch, seq, input, hidden, dtype): theano-cudnn-2016 depth 1, glample-2016, flashrnn-2024.
CASES = [("lstm", 32, 30, 512, 512, "bf16"), ("gru", 32, 30, 512, 512, "bf16"), ("lstm", 20, 30, 100, 100, "fp32"),
         ("lstm", 128, 30, 1024, 1024, "bf16"), ("gru", 32, 30, 128, 128, "fp32"),
         ("rnn_tanh", 20, 30, 100, 100, "fp32")]
# How each launch mode sets ops/launch.py's switches.
LAUNCH_MODES = {"jit": dict(JIT_ONLY=True, DIRECT_LAUNCH=False), "runner": dict(JIT_ONLY=False, DIRECT_LAUNCH=False),
                "direct": dict(JIT_ONLY=False, DIRECT_LAUNCH=True)}
KERNEL_CASES = CASES[:3] + [("lstm", 20, 30, 500, 500, "fp32"), ("lstm", 16, 1024, 768, 768, "bf16"),
                            ("lstm", 16, 1024, 768, 768, "fp16")]


def _torch_dtype(name):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def host_us(fn, calls=300) -> float:
    """Median host µs of one call, no synchronisation inside the timed call (triton_dev's measure:
    the queue is drained every 10 calls so that a full queue never blocks the host)."""
    return 1e3 * _host_ms(fn, calls)


def synced_us(fn, calls=300) -> float:
    """Median µs of one call timed as the engine times it: synchronised before and after, so the
    host's work and the device's add up (nothing of one call hides behind another)."""
    import torch

    fn()
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times)


def _steps(module, x):
    import torch

    def forward():
        with torch.no_grad():
            return module(x)

    xg = x.detach().clone().requires_grad_()

    def train():
        out, _ = module(xg)
        torch.nn.functional.mse_loss(out.float(), torch.zeros_like(out, dtype=torch.float32)).backward()

    return forward, train


def _set_launch_mode(launch, mode: str) -> None:
    for name, value in LAUNCH_MODES[mode].items():
        setattr(launch, name, value)


def launch_part(modes: tuple[str, str]) -> list[dict]:
    import torch
    from triton.testing import do_bench

    from rnnbench.ops import launch, recurrence
    from rnnbench.ops.plans import dot_precision

    rows = []
    torch.backends.cuda.matmul.allow_tf32 = False
    for cell, b, t, i, h, dt in CASES:
        dtype = _torch_dtype(dt)
        ref, mine = _modules(cell, i, h, dt)
        x = torch.randn(t, b, i, device="cuda", dtype=dtype)
        row = dict(part="launch", case=f"{cell} B{b} T{t} H{h} {dt}")
        # The forward kernel's launch alone, on prebuilt tensors.
        g = recurrence.NUM_GATES[cell]
        x_proj = torch.randn(t, b, g * h, device="cuda", dtype=dtype)
        w = mine.weight_hh_l0.detach()
        lch = recurrence._cached_launch(cell, b, h, dtype, x.device, dot_precision(dtype), ())  # the module's
        kernel_call = lambda: recurrence.recurrence_forward(cell, x_proj, w, None, None, None, None, lch, False)  # noqa
        # A B B A: each launch mode measured twice, in both orders, and averaged, so that a drift
        # over the run (clocks, the allocator's pools, the host's load) favours neither.
        samples: dict[str, list[float]] = {}
        for mode in (*modes, *reversed(modes)):
            _set_launch_mode(launch, mode)
            fwd, train = _steps(mine, x)
            for name, value in (
                ("recurrence_forward_host_us", lambda: host_us(kernel_call, 200)),
                ("recurrence_forward_sync_us", lambda: synced_us(kernel_call, 200)),
                ("forward_host_us", lambda: host_us(fwd, 200)),
                ("forward_sync_us", lambda: synced_us(fwd, 200)),
                ("train_host_us", lambda: host_us(train, 100)),
                ("forward_ms", lambda: do_bench(fwd, warmup=10, rep=100, return_mode="median")),
                ("train_ms", lambda: do_bench(train, warmup=10, rep=100, return_mode="median")),
            ):
                samples.setdefault(f"{name}_{mode}", []).append(value())
        row.update({k: statistics.fmean(v) for k, v in samples.items()})
        _set_launch_mode(launch, "direct")
        fwd, train = _steps(ref, x)
        row["torch_nn_forward_host_us"] = host_us(fwd)
        row["torch_nn_forward_sync_us"] = synced_us(fwd)
        row["torch_nn_train_host_us"] = host_us(train, 200)
        row["torch_nn_forward_ms"] = do_bench(fwd, warmup=10, rep=200, return_mode="median")
        row["torch_nn_train_ms"] = do_bench(train, warmup=10, rep=200, return_mode="median")
        empty = lambda: torch.empty(t, b, h, device="cuda", dtype=dtype)  # noqa: E731
        mm = lambda: torch.mm(x.view(t * b, i), mine.weight_ih_l0.t())  # noqa: E731
        row["torch_empty_host_us"] = host_us(empty)
        row["torch_mm_host_us"] = host_us(mm)
        if not rows:
            row["train_profile"] = _profile(_steps(mine, x)[1], 200, 25)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "train_profile"}), flush=True)
    return rows


def barrier_part() -> list[dict]:
    import torch
    from triton.testing import do_bench

    from rnnbench.ops.floor import barrier_check, barrier_floor
    from rnnbench.workload import graphed

    rows = []
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for programs in (16, 64, 128, sms):
        counts = {}
        for t in (200, 2200):
            barrier_floor(programs, t, "cuda")
            counts[t] = do_bench(lambda: barrier_floor(programs, t, "cuda"), warmup=5, rep=100, return_mode="median")
        rows.append(dict(part="barrier", programs=programs,
                         us_per_step=1e3 * (counts[2200] - counts[200]) / 2000,
                         stale_slots=barrier_check(programs, 300, "cuda")))
        print(json.dumps(rows[-1]), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    for cell, b, t, i, h, dt in KERNEL_CASES:
        dtype = _torch_dtype(dt)
        _, mine = _modules(cell, i, h, dt)
        x = torch.randn(t, b, i, device="cuda", dtype=dtype)
        fwd, train = _steps(mine, x)
        row = dict(part="kernels", case=f"{cell} B{b} T{t} H{h} {dt}")
        for name, step in (("forward", fwd), ("train", train)):
            replay = graphed(lambda step=step: step() or ())
            replay()
            row[f"{name}_graph_ms"] = do_bench(replay, warmup=10, rep=200, return_mode="median")
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


PROFILE_CASES = [("lstm", 20, 30, 100, 100, "fp32"), ("gru", 32, 30, 128, 128, "fp32"), ("lstm", 32, 30, 512, 512, "bf16")]


def _profile(fn, calls: int, top: int = 30) -> str:
    """The top of a cProfile of ``calls`` calls, by own time (C functions such as torch.mm count
    as their own rows)."""
    import torch

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def profile_part() -> list[dict]:
    """3. Where an eager call's host time goes now: host µs per call of our module and torch.nn's
    (forward under no_grad, training step), and cProfiles of ours, for the small seed cases the
    host decides (PROFILE_CASES, strict fp32 as the engine runs it, and one bf16 case)."""
    import torch

    rows = []
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    for cell, b, t, i, h, dt in PROFILE_CASES:
        ref, mine = _modules(cell, i, h, dt)
        x = torch.randn(t, b, i, device="cuda", dtype=_torch_dtype(dt))
        row = dict(part="profile", case=f"{cell} B{b} T{t} H{h} {dt}")
        for name, module in (("triton", mine), ("torch_nn", ref)):
            fwd, train = _steps(module, x)
            row[f"{name}_forward_host_us"] = host_us(fwd, 300)
            row[f"{name}_train_host_us"] = host_us(train, 100)
        fwd, train = _steps(mine, x)
        row["forward_profile"] = _profile(fwd, 500)
        row["train_profile"] = _profile(train, 200)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("_profile")}), flush=True)
    return rows


# The seed suites' strict fp32 training rows under 0.9x torch-nn eager (triton-lane-13/seeds-4bef952).
ENGINE_CASES = [("lstm", 20, 30, 100, 100, "fp32"), ("lstm", 128, 30, 128, 128, "fp32"),
                ("gru", 32, 30, 128, 128, "fp32"), ("rnn_tanh", 20, 30, 100, 100, "fp32")]
ENGINE_LANES = ("torch-nn", "triton", "torch-nn-graph", "triton-graph")


def engine_part() -> list[dict]:
    """4. The engine's own training step (``workload.lane_step``: the loss over the output and the
    final states, ``torch.autograd.grad`` to the input, the initial states and every weight) for
    ``torch-nn``, ``triton`` and their graph lanes: µs per call synchronised before and after (as
    the engine times, ``Step.measure``), host µs per call of the eager lanes (no synchronisation),
    and cProfiles of both eager steps."""
    from ab import median_ms
    from rnnbench.cases import Case
    from rnnbench.lanes import LANES
    from rnnbench.precision import matmul_mode
    from rnnbench.workload import lane_step, make_inputs

    rows = []
    for cell, b, t, i, h, dt in ENGINE_CASES:
        case = Case(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h, dtype=dt, mode="train",
                    device="cuda")
        inputs = make_inputs(case)
        row = dict(part="engine", case=f"{cell} B{b} T{t} H{h} {dt} train")
        with matmul_mode(dt):
            for name in ENGINE_LANES:
                step = lane_step(LANES[name], case, inputs)
                row[f"{name}_sync_us"] = 1e3 * median_ms(step, 0.5)
                if not LANES[name].cuda_graph:
                    row[f"{name}_host_us"] = host_us(step.fn, 100)
                    row[f"{name}_profile"] = _profile(step.fn, 200, 25)
                step.close()
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("_profile")}), flush=True)
    return rows


def _per_mode(names, modes) -> list[str]:
    return [f"{name}_{mode}" for name in names for mode in modes]


def _table(rows, keys) -> str:
    lines = [" | ".join(keys)]
    for r in rows:
        lines.append(" | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys))
    return "\n".join(lines)


def main(argv) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--parts", default="launch,barrier", help="launch, barrier, profile, engine (comma-separated)")
    parser.add_argument("--launch-modes", default="runner,direct",
                        help=f"the two launch modes the launch part compares: {', '.join(LAUNCH_MODES)}")
    args = parser.parse_args(argv)
    unknown = set(args.parts.split(",")) - {"launch", "barrier", "profile", "engine"}
    if unknown:
        parser.error(f"unknown part {sorted(unknown)[0]!r}; choose from launch, barrier, profile, engine")
    modes = tuple(args.launch_modes.split(","))
    if len(modes) != 2 or len(set(modes)) != 2 or not set(modes) <= set(LAUNCH_MODES):
        parser.error(f"--launch-modes takes two different modes of {', '.join(LAUNCH_MODES)}, "
                     f"not {args.launch_modes!r}")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    rows = launch_part(modes) if "launch" in args.parts else []
    rows += barrier_part() if "barrier" in args.parts else []
    rows += profile_part() if "profile" in args.parts else []
    rows += engine_part() if "engine" in args.parts else []
    (out / "host_time.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    launch_rows = [r for r in rows if r["part"] == "launch"]
    text = "\n\n".join([
        "launch (host µs per call, no synchronisation inside the timed call)",
        _table(launch_rows, ["case", *_per_mode(("recurrence_forward_host_us", "forward_host_us"), modes),
                             "torch_nn_forward_host_us", *_per_mode(("train_host_us",), modes),
                             "torch_nn_train_host_us"]),
        "synchronised before and after each call, as the engine times (µs per call)",
        _table(launch_rows, ["case", *_per_mode(("recurrence_forward_sync_us", "forward_sync_us"), modes),
                             "torch_nn_forward_sync_us"]),
        "device-inclusive ms per call (triton.testing.do_bench); host µs of torch.empty and torch.mm",
        _table(launch_rows, ["case", *_per_mode(("forward_ms",), modes), "torch_nn_forward_ms",
                             *_per_mode(("train_ms",), modes), "torch_nn_train_ms", "torch_empty_host_us",
                             "torch_mm_host_us"]),
        "barrier (µs per step)",
        _table([r for r in rows if r["part"] == "barrier"], ["programs", "us_per_step", "stale_slots"]),
        "kernels replayed from CUDA graphs (ms)",
        _table([r for r in rows if r["part"] == "kernels"], ["case", "forward_graph_ms", "train_graph_ms"]),
        "training step profile (cached launch, 200 calls)",
        launch_rows[0].get("train_profile", "") if launch_rows else "",
        "host µs per eager call now (no synchronisation inside the timed call)",
        _table([r for r in rows if r["part"] == "profile"], ["case", "triton_forward_host_us",
                                                             "torch_nn_forward_host_us", "triton_train_host_us",
                                                             "torch_nn_train_host_us"]),
        *(f"{r['case']}: {kind} profile\n{r[kind + '_profile']}" for r in rows if r["part"] == "profile"
          for kind in ("forward", "train")),
        "the engine's training step (µs per call: synchronised as the engine times; host, not synchronised)",
        _table([r for r in rows if r["part"] == "engine"],
               ["case", *(f"{n}_sync_us" for n in ENGINE_LANES), "torch-nn_host_us", "triton_host_us"]),
        *(f"{r['case']}: {name} profile\n{r[name + '_profile']}" for r in rows if r["part"] == "engine"
          for name in ("torch-nn", "triton")),
    ])
    (out / "host_time.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
