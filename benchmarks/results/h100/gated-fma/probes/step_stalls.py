"""What the LSTM's and GRU's forward on FMA units (``ops/<cell>/fma.py``) waits on: calls of the
kernel to be profiled by Nsight Compute. On a GPU, from the repository root::

    ncu --kernel-name regex:forward_fma --launch-skip 5 --launch-count 2 \\
        --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \\
        --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \\
        python3 benchmarks/results/h100/gated-fma/probes/step_stalls.py

Runs ``rnnbench.nn``'s LSTM and GRU (``backend="triton"``) at theano's TF32 sizes (batch 32, hidden
and input 128, 30 steps) under ``no_grad``, six calls each (the first recorded, the rest replayed):
the skip and count above profile the LSTM's sixth launch of the FMA forward and the GRU's first.
With the argument ``parts=2``, k is split in two parts for these fp32 weights too
(``gluon_fma.k_split``, which splits only 16-bit weights)."""
import sys

import torch

from rnnbench import nn as rnn
from rnnbench.ops import gluon_fma


def main():
    if "parts=2" in sys.argv[1:]:
        gluon_fma.k_split = lambda num_gates, hidden_size, element: 2
    torch.backends.cuda.matmul.allow_tf32 = True
    x = torch.randn(30, 32, 128, device="cuda")
    for cls in (rnn.LSTM, rnn.GRU):
        module = cls(128, 128, backend="triton").cuda()
        with torch.no_grad():
            for _ in range(6):
                module(x)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
