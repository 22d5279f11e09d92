"""Where a replayed eager forward's host time goes: each piece of the call timed alone on the host.
On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/call-floor/probes/host_parts.py OUT.jsonl

For theano's TF32 LSTM at batch 32, hidden 128 (the engine's ``forward`` mode's call: no_grad,
initial states given), after the module has recorded its replay: each piece run back to back
200 times, the host's µs a call (``time.perf_counter``; pieces that launch are synchronised
before and after, and their calls are few enough not to fill the launch queue), medians of 9
rounds. The pieces nest: ``module(x, hx)`` holds ``forward``, which holds ``_replayed``, which
holds the key, the lookup and the replay itself."""
import json
import sys

import torch
from call_floor import host_us  # (this directory: the script's own, first on sys.path)

from rnnbench import nn as rnn
from rnnbench.ops import launch, recurrence
from rnnbench.ops import replay as replays



def main(out):
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    dev = torch.device("cuda")
    torch.manual_seed(0)
    module = rnn.LSTM(128, 128, 1, backend="triton").to(dev)
    x = torch.randn(30, 32, 128, device=dev)
    h0 = torch.randn(1, 32, 128, device=dev)
    hx = (h0, torch.randn_like(h0))
    states = (h0, hx[1])
    torch.set_grad_enabled(False)
    for _ in range(5):
        module(x, hx)
    # The FMA forward's launch alone through its direct launcher: tensors, or their addresses.
    replays.ENABLED = False
    rnn._REPLAYS.pop(module)
    with launch.recording() as records:
        module(x, hx)
    replays.ENABLED = True
    module(x, hx)  # recorded again
    kept = rnn._REPLAYS[module]
    launcher, grid, args, constexprs, stream, keyed = records[-1]
    c_launch, head, tail = launcher.direct(args, constexprs, keyed)
    grid3 = (*grid, 1, 1)[:3]
    stream = launch._current_stream()
    addresses = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
    key = module._replay_key(x, states)
    weights, _, layer = kept[key]
    replay = layer.forward
    inputs = (x, *states, *module._flat_weights)
    flat = module._flat_weights
    unwrapped = type(module).forward.__wrapped__
    pieces = {
        "direct launch, tensors": lambda: c_launch(*grid3, stream, *head, *args, *tail),
        "direct launch, addresses": lambda: c_launch(*grid3, stream, *head, *addresses, *tail),
        "module(x, hx)": lambda: module(x, hx),
        "forward (no Module.__call__)": lambda: module.forward(x, hx),
        "forward unwrapped (no compiler.disable)": lambda: unwrapped(module, x, hx),
        "_replayed": lambda: module._replayed(kept, x, hx),
        "Replay.__call__": lambda: replay(inputs),
        "_replay_key": lambda: module._replay_key(x, states),
        "aligned (7 tensors)": lambda: replays.aligned(inputs),
        "recurrence._setting": lambda: recurrence._setting("lstm", 32, 128, x.dtype, x.device),
        "dict lookup by key": lambda: kept.get(key),
        "_REPLAYS.get(module)": lambda: rnn._REPLAYS.get(module),
        "module._flat_weights": lambda: module._flat_weights,
        "weights identity": lambda: any(a is not b for a, b in zip(flat, weights)),
        "can_replay": replays.can_replay,
        "launch._no_launch_hooks": launch._no_launch_hooks,
        "torch.cuda.is_available": torch.cuda.is_available,
        "is_current_stream_capturing": torch.cuda.is_current_stream_capturing,
        "launch._current_stream": launch._current_stream,
        "torch.empty([30,32,128])": lambda: torch.empty((30, 32, 128), dtype=torch.float32, device=dev),
        "x.new_empty([30,32,128])": lambda: x.new_empty((30, 32, 128)),
        "torch.is_grad_enabled": torch.is_grad_enabled,
        "torch.is_autocast_enabled(cuda)": lambda: torch.is_autocast_enabled("cuda"),
        "x.is_contiguous()": x.is_contiguous,
        "x.data_ptr()": x.data_ptr,
        "x.shape": lambda: x.shape,
        "x.dtype": lambda: x.dtype,
        "x.device": lambda: x.device,
        "x.stride()": x.stride,
        "rnn._states": lambda: rnn._states(hx, "lstm"),
        "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "nothing (loop)": lambda: None,
    }
    rounds = {k: [] for k in pieces}
    for _ in range(9):
        for name, fn in pieces.items():
            rounds[name].append(host_us(fn))
    rows = []
    from rnnbench.env import environment

    with open(out, "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")
        for name, samples in rounds.items():
            samples.sort()
            row = {"piece": name, "host_us": samples[len(samples) // 2], "min_us": samples[0]}
            rows.append(row)
            f.write(json.dumps(row) + "\n")
    for row in rows:
        print(f"{row['host_us']:8.2f}  (min {row['min_us']:7.2f})  {row['piece']}")


if __name__ == "__main__":
    main(sys.argv[1])
