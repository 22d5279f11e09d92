"""cProfile of the engine's eager train step (lane triton) at two TF32 cases: where its host time goes.

    PYTHONPATH=src python3 benchmarks/results/h100/train-gap/probes/prof_train.py   # prints; the environment first
"""
import cProfile, io, json, pstats, sys
sys.path.insert(0, "src")
import torch
from rnnbench.env import environment
from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.precision import matmul_mode
from rnnbench.workload import lane_step, make_inputs
print(json.dumps({"record": "env", **environment()}))  # the machine the profiles ran on
for cell, b, h in (("lstm", 128, 1024), ("lstm", 32, 128)):
    case = Case(cell=cell, batch_size=b, seq_len=30, input_size=h, hidden_size=h, dtype="tf32", mode="train", device="cuda")
    inputs = make_inputs(case)
    with matmul_mode("tf32"):
        step = lane_step(LANES["triton"], case, inputs)
        for _ in range(10):
            step.fn()
        torch.cuda.synchronize()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(100):
            step.fn()
        pr.disable()
        torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(35)
    print(f"=== {cell} B{b} H{h} tf32 train, 100 calls")
    print(s.getvalue())
