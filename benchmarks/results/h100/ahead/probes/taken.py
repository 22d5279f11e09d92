"""How many replays the engine's triton steps take (forward and training) at the issue's TF32 cases."""
import torch
from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.ops import replay
from rnnbench.precision import matmul_mode
from rnnbench.workload import lane_step, make_inputs

calls = {"replayed": 0, "none": 0}
orig = replay.Replay.__call__


def counted(self, inputs):
    got = orig(self, inputs)
    calls["replayed" if got is not None else "none"] += 1
    return got


replay.Replay.__call__ = counted
for spec in [dict(cell="lstm", batch_size=20, input_size=100, hidden_size=100, loss="last_step"),
             dict(cell="lstm", batch_size=32, input_size=128, hidden_size=128, loss="all_steps"),
             dict(cell="gru", batch_size=32, input_size=128, hidden_size=128, loss="all_steps")]:
    for mode in ("forward", "train"):
        case = Case(**spec, seq_len=30, dtype="tf32", mode=mode, device="cuda")
        inputs = make_inputs(case)
        with matmul_mode("tf32"):
            step = lane_step(LANES["triton"], case, inputs)
            step.first_call()
            for _ in range(5):
                step.fn()
            calls.update(replayed=0, none=0)
            for _ in range(100):
                step.fn()
            torch.cuda.synchronize()
        print(case.key, dict(calls), flush=True)
