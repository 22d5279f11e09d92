"""How much of an eager forward at small sizes a leaner call could take off: the module's call
against the floor of any call on our kernels, the same launches with nothing else. On a GPU, from
the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/call-floor/probes/call_floor.py OUT.jsonl

Per case (TF32, theano's depth-1 hidden 128 and glample's hidden 100, as the engine's ``forward``
mode calls them: under ``no_grad``, initial states given), timed as the engine times a call (CUDA
events around it, synchronised after), medians of 12 rounds of 200 calls, the forms in the order
A B C D E E D C B A in each round:

- ``module``: ``rnnbench.nn`` (``backend="triton"``) on its normal path (``ops/replay.py`` off);
- ``replayed``: the same module replaying its recorded call (``ops/replay.py``, as the ``triton``
  lane calls it since the replay);
- ``allocs+launches``: the kernels' launches recorded from one module call, replayed through their
  cached direct launchers with the same arguments, after the call's ``torch.empty`` of the same
  shapes (the floor of a call that allocates its results);
- ``launches``: the replayed launches alone (the floor of the kernels themselves, host and device);
- ``torch.nn``: cuDNN's module, the ``torch-nn`` lane's call.

Each replay's output is checked equal to the module's first."""
import json
import sys
import time

import torch

from rnnbench import nn as rnn
from rnnbench.ops import launch
from rnnbench.ops import replay as replays

CASES = [("lstm", 32, 128, 128), ("gru", 32, 128, 128), ("lstm", 128, 128, 128), ("gru", 128, 128, 128),
         ("lstm", 20, 100, 100), ("rnn_tanh", 20, 100, 100)]


def recorded_launches(module, x, hx):
    """The launches one module call makes: ``(launcher, grid, args, constexprs, stream, keyed)``,
    and the shapes and dtypes of its ``torch.empty`` calls."""
    calls, empties = [], []
    call, empty = launch.KernelLauncher.__call__, torch.empty

    def recording(self, grid, args, constexprs, stream=None, keyed=None):
        calls.append((self, grid, args, constexprs, stream, keyed))
        return call(self, grid, args, constexprs, stream, keyed)

    def empty_recording(*size, **kwargs):
        empties.append((size, kwargs))
        return empty(*size, **kwargs)

    launch.KernelLauncher.__call__, torch.empty = recording, empty_recording
    try:
        with torch.no_grad():
            out = module(x, hx)
    finally:
        launch.KernelLauncher.__call__, torch.empty = call, empty
    return calls, empties, out


def replay(calls, empties, allocate):
    """The recorded launches through the launchers' cached entries (the direct C launch)."""
    entries = []
    for launcher, grid, args, constexprs, stream, keyed in calls:
        tensors = launcher._tensors
        key = (constexprs.number, launch._specialisation(args[:tensors if keyed is None else keyed]),
               args[0].device.index)
        kernel, tail, direct = launcher._compiled[key]
        c_launch, head = direct
        grid3 = (*grid, 1, 1)
        entries.append((c_launch, grid3[0], grid3[1], grid3[2], stream or launch._current_stream(), head, args, tail))

    def run():
        if allocate:
            for size, kwargs in empties:
                torch.empty(*size, **kwargs)
        for c_launch, gx, gy, gz, stream, head, args, tail in entries:
            c_launch(gx, gy, gz, stream, *head, *args, *tail)
    return run


def timed(fn, calls=200):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(calls):
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


def host_us(fn, calls=200):
    """Host time a call, the device kept busy behind: issued back to back, synchronised once."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def main(out):
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    dev = torch.device("cuda")
    rows = []
    for cell, batch, hidden, inp in CASES:
        torch.manual_seed(0)
        kwargs = {"nonlinearity": "tanh"} if cell.startswith("rnn") else {}
        ours_cls = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": rnn.RNN}[cell]
        theirs_cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN}[cell]
        ours = ours_cls(inp, hidden, 1, backend="triton", **kwargs).to(dev)
        theirs = theirs_cls(inp, hidden, 1, **kwargs).to(dev)
        theirs.load_state_dict(ours.state_dict())
        x = torch.randn(30, batch, inp, device=dev)
        h0 = torch.randn(1, batch, hidden, device=dev)
        hx = (h0, torch.randn_like(h0)) if cell == "lstm" else h0
        with torch.no_grad():
            for _ in range(20):
                ours(x, hx)
                theirs(x, hx)
        replays.ENABLED = False  # the normal path's launches (a replay makes none of its own)
        rnn._REPLAYS.pop(ours, None)
        calls, empties, first = recorded_launches(ours, x, hx)

        def normal():
            replays.ENABLED = False
            rnn._REPLAYS.pop(ours, None)
            return ours(x, hx)

        def replayed():
            replays.ENABLED = True
            return ours(x, hx)

        forms = {"module": normal, "replayed": replayed, "allocs+launches": replay(calls, empties, True),
                 "launches": replay(calls, empties, False), "torch.nn": lambda: theirs(x, hx)}
        with torch.no_grad():
            # The replay writes the recorded call's buffers: its output, zeroed first, comes back.
            want = first[0].clone()
            first[0].zero_()
            forms["launches"]()
            torch.cuda.synchronize()
            assert torch.equal(first[0], want), "the replayed launches did not write the module's output"
            samples = {k: [] for k in forms}
            hosts = {k: [] for k in forms}
            order = list(forms) + list(forms)[::-1]
            for _ in range(12):
                for name in order:
                    samples[name].append(timed(forms[name]))
                    hosts[name].append(host_us(forms[name]))
        row = {"cell": cell, "batch_size": batch, "hidden_size": hidden, "input_size": inp, "dtype": "tf32",
               "launches": [getattr(c[0].fn, "__name__", "?") for c in calls],
               "empties": len(empties)}
        for name in forms:
            s, h = sorted(samples[name]), sorted(hosts[name])
            row[f"{name}_us"] = s[len(s) // 2]
            row[f"{name}_host_us"] = h[len(h) // 2]
        rows.append(row)
        print(f"{cell} B{batch} H{hidden}: " + ", ".join(
            f"{n} {row[f'{n}_us']:.1f} ({row[f'{n}_host_us']:.1f} host)" for n in forms)
            + f" µs; launches {len(calls)}, empties {len(empties)}", flush=True)
    write_rows(out, rows)


def write_rows(out, rows):
    """``out`` (JSON lines): this machine's environment record, then ``rows``."""
    from rnnbench.env import environment

    with open(out, "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
