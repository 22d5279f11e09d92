"""Registers and spilled bytes a thread of the Gluon forwards with the weights in registers
(``REG_WEIGHTS``), compiled for sm_90 with Triton 3.6 (no GPU needed): LSTM and GRU, 16 and 32 batch
rows, hidden 300-768, fp16 and bf16, saving or not, with and without h0. Prints ``s<SAVE>h<H0>:
registers/spilled bytes``. ``PYTHONPATH=src python benchmarks/results/h100/rs-wgmma/probes/compile_grid.py``
"""
import torch
from rnnbench.ops import aot, gluon_common
from triton.experimental.gluon._runtime import GluonASTSource
from rnnbench.ops.lstm import gluon as lg
from rnnbench.ops.gru import gluon as gg
for cell, fn in [("lstm", lg.lstm_forward_gluon_kernel), ("gru", gg.gru_forward_gluon_kernel)]:
  for B, H in [(16, 768), (32, 768), (16, 512), (32, 512), (16, 300)]:
    for dt in (torch.float16, torch.bfloat16):
        width = gluon_common.piece_width(max(16, 1 << (H - 1).bit_length()))
        out = []
        for save in (False, True):
          for h0 in (False, True):
            c = dict(H=H, HAS_BIAS=True, HAS_H0=h0, SAVE=save, AHEAD=False, BLOCK_B=B, PIECE=width, PIECES=-(-H // width), REG_WEIGHTS=1, num_warps=4)
            if cell == "lstm": c["HAS_C0"] = h0
            k = aot._compile(fn, c, {"counters_ptr": "*i32", "ready_ptr": "*i32", "c_buf_ptr": "*fp32", "gates_ptr": "*fp32", "saved_ptr": "*fp32"}, aot.POINTER[dt], 4, 1, 90, GluonASTSource)
            u = aot.resource_usage(k)
            out.append(f"s{int(save)}h{int(h0)}:{u['reg']}/{u['stack']}")
        print(cell, B, H, str(dt)[6:], " ".join(out), flush=True)
