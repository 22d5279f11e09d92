"""How much of an eager step is the layer's own, and how much the step around it: the engine's
steps (``workload.module_call``; training: forward, the loss's gradient, ``autograd.grad``)
of ``torch-nn`` and ``triton`` against the same step on a stand-in layer that launches nothing
(an autograd Function returning fresh tensors of the right shapes, forward and backward). On a
GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/call-floor/probes/train_floor.py OUT.jsonl

Per case (TF32: glample's RNN at hidden 100, theano's LSTM at batch 32, hidden 128), medians over
12 rounds (forms in the order A B C C B A) of 200 calls, the engine's forward step (under
``no_grad``) and its training step: ``call`` as the engine times a call (events around it,
synchronised after), ``host`` issued back to back, synchronised once. ``stand-in`` is the floor
any layer's step has here: the module's call, the harness and (training) autograd's engine.
(``floor-cc3c43d/`` ran an earlier form: training only, with the module's call alone as well.)"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from call_floor import host_us, timed, write_rows  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [dict(cell="rnn_tanh", batch_size=20, input_size=100, hidden_size=100, loss="last_step"),
         dict(cell="lstm", batch_size=32, input_size=128, hidden_size=128, loss="all_steps")]


class _Nothing(torch.autograd.Function):
    """Fresh tensors of a layer's shapes, forward and backward, and no work."""

    @staticmethod
    def forward(ctx, x, h0, c0, *weights):
        ctx.shapes = [(t.shape, t.dtype) for t in (x, h0, c0, *weights)]
        T, B, _ = x.shape
        H = h0.shape[-1]
        return x.new_empty(T, B, H), h0.new_empty(h0.shape), c0.new_empty(c0.shape)

    @staticmethod
    def backward(ctx, *grads):
        return tuple(torch.empty(s, dtype=d, device="cuda") for s, d in ctx.shapes)


class StandIn(torch.nn.Module):
    """torch.nn.LSTM's / RNN's call and parameters, on :class:`_Nothing`."""

    def __init__(self, like: torch.nn.Module):
        super().__init__()
        for name, p in like.named_parameters():
            self.register_parameter(name, torch.nn.Parameter(p.detach().clone()))
        self.lstm = isinstance(like, torch.nn.LSTM)

    def forward(self, x, hx):
        h0, c0 = hx if self.lstm else (hx, hx)
        out, h_n, c_n = _Nothing.apply(x, h0, c0, *self.parameters())
        return out, ((h_n, c_n) if self.lstm else h_n)


def main(out):
    rows = []
    for spec in CASES:
        train = Case(**spec, seq_len=30, dtype="tf32", mode="train", device="cuda")
        inputs = make_inputs(train)
        with matmul_mode(train.dtype):
            modules = {name: get_lane(name).module_for(train, inputs.weights) for name in ("torch-nn", "triton")}
            modules["stand-in"] = StandIn(modules["torch-nn"]).cuda()
            for case in (train.replace(mode="forward"), train):
                steps = {name: module_call(m, case, inputs)[0] for name, m in modules.items()}
                for fn in steps.values():
                    for _ in range(20):
                        fn()
                got = {(n, k): [] for n in steps for k in ("call", "host")}
                order = list(steps) + list(steps)[::-1]
                for _ in range(12):
                    for n in order:
                        got[n, "call"].append(timed(steps[n]))
                        got[n, "host"].append(host_us(steps[n]))
                for n in steps:
                    row = {"case": case.key, "form": n, **{k: sorted(got[n, k])[6] for k in ("call", "host")}}
                    rows.append(row)
                    print(f"{case.key} {n}: call {row['call']:.1f}, host {row['host']:.1f} µs", flush=True)
    write_rows(out, rows)

if __name__ == "__main__":
    main(sys.argv[1])
