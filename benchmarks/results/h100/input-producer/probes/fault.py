"""Probe: which call of theano's GRU (B32 T30 I128 H128, strict fp32) faults with the input
projection inside the launch? Each configuration in a process of its own (a fault ends its CUDA
context), CUDA_LAUNCH_BLOCKING=1 so the faulting launch raises.

    PYTHONPATH=src python3 benchmarks/results/h100/input-producer/probes/fault.py [CONFIG]

Ran on the tree of c907e95 (``Plan.input_producers``, reverted in b5a29be); see ../README.md.
"""
import os
import subprocess
import sys
import traceback

CONFIGS = ["nn-forward", "nn-train", "graph-forward", "graph-train", "layer-forward-mm", "layer-train-mm",
           "layer-forward", "layer-train", "lstm-layer-train"]


def run(config):
    import torch

    from rnnbench.ops.recurrence import plan_override, recurrent_layer
    cell = "lstm" if config.startswith("lstm") else "gru"
    g = 4 if cell == "lstm" else 3
    T, B, I, H = 30, 32, 128, 128
    torch.manual_seed(0)
    x = torch.randn(T, B, I, device="cuda", requires_grad="train" in config)
    w_ih = (torch.randn(g * H, I, device="cuda") * 0.1).requires_grad_()
    w_hh = (torch.randn(g * H, H, device="cuda") * 0.1).requires_grad_()
    b = torch.zeros(g * H, device="cuda", requires_grad=True)
    override = {"input_producers": 0} if config.endswith("-mm") else {}
    if config.startswith(("layer", "lstm")):
        with plan_override(**override):
            for _ in range(3):
                with torch.set_grad_enabled("train" in config):
                    out = recurrent_layer(cell, x, None, None, w_ih, w_hh, b, b)
                    if "train" in config:
                        out[0].sum().backward()
        torch.cuda.synchronize()
        return
    from rnnbench import nn as rnn
    m = rnn.GRU(I, H, backend="triton").cuda()
    xs = x.detach().requires_grad_("train" in config)
    if config.startswith("nn"):
        for _ in range(3):
            with torch.set_grad_enabled("train" in config):
                out, h = m(xs)
                if "train" in config:
                    out.sum().backward()
    else:
        static = xs
        fn = torch.cuda.make_graphed_callables(m, (static,)) if "train" in config else None
        if fn is None:
            s = torch.cuda.Stream()
            with torch.no_grad():
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    m(static)
                torch.cuda.current_stream().wait_stream(s)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    m(static)
                for _ in range(3):
                    graph.replay()
        else:
            for _ in range(3):
                out, h = fn(static)
                out.sum().backward()
    torch.cuda.synchronize()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        try:
            run(sys.argv[1])
            print(f"{sys.argv[1]}: ok")
        except Exception:
            print(f"{sys.argv[1]}: FAILED\n" + traceback.format_exc()[-1500:])
        sys.exit(0)
    env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1"}
    for c in CONFIGS:
        out = subprocess.run([sys.executable, __file__, c], env=env, capture_output=True, text=True, timeout=240)
        print(out.stdout.strip() or f"{c}: no output; stderr: {out.stderr[-800:]}", flush=True)
