"""Probe: two_graphs.py's fault by parts. Two weight sets of one LSTM shape (bf16, B32 T30 H512),
each step captured in its own CUDA graph (warm-up on a side stream first), replayed in turns with
a synchronisation after each replay.

    PYTHONPATH=src python3 THIS PART

PART: linear (the input projection alone), kernel (ops.recurrence.recurrence_forward on a
prebuilt projection), module (rnnbench.nn.LSTM), torch (torch.nn.LSTM, the control).
Prints 'ok' or the replay that faulted."""
import sys
import torch
import torch.nn.functional as F

sys.path.insert(0, "src")
from rnnbench import nn as ours  # noqa: E402
from rnnbench.ops import recurrence  # noqa: E402

part = sys.argv[1]
T, B, H = 30, 32, 512
steps = []
for k in range(2):
    torch.manual_seed(k)
    x = torch.randn(T, B, H, device="cuda", dtype=torch.bfloat16)
    if part == "torch":
        m = torch.nn.LSTM(H, H).cuda().to(torch.bfloat16)
        steps.append(lambda m=m, x=x: m(x))
    elif part == "module":
        m = ours.LSTM(H, H, backend="triton").cuda().to(torch.bfloat16)
        steps.append(lambda m=m, x=x: m(x))
    elif part == "linear":
        w = torch.randn(4 * H, H, device="cuda", dtype=torch.bfloat16)
        steps.append(lambda w=w, x=x: F.linear(x, w))
    else:
        w_hh = torch.randn(4 * H, H, device="cuda", dtype=torch.bfloat16) * 0.05
        x_proj = torch.randn(T, B, 4 * H, device="cuda", dtype=torch.bfloat16)
        launch = recurrence.layer_launch("lstm", B, H, torch.bfloat16, x.device)
        steps.append(lambda w=w_hh, xp=x_proj, launch=launch: recurrence.recurrence_forward(
            "lstm", xp, w, None, None, None, None, launch, False))
graphs, kept = [], []
for step in steps:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        kept.append(step())
    graphs.append(g)
try:
    for r in range(3):
        for k, g in enumerate(graphs):
            g.replay()
            torch.cuda.synchronize()
    print(part, "ok")
except Exception as err:  # noqa: BLE001 (a probe: report and stop)
    print(part, f"fault at round {r}, graph {k}:", str(err).splitlines()[0])
