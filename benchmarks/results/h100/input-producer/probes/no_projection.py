"""Probe (not a benchmark): how much of an eager forward is the input projection's torch.mm?

Times the engine's `triton` and `triton-graph` lanes with the projection as it is (`default`)
against the same kernels fed a cached, never-recomputed x_proj (`no_mm`: WRONG values, its error
column shows that; an upper bound on what removing the host call could save), beside torch-nn.

    PYTHONPATH=src python3 benchmarks/results/h100/input-producer/probes/no_projection.py OUT
"""
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402

import on_chip  # noqa: E402
from ab import run_cases  # noqa: E402
from rnnbench.ops import recurrence  # noqa: E402

_CACHE = {}
_REAL = recurrence._layer_forward


def _no_mm(x, h0, c0, w_ih, w_hh, b_ih, b_hh, cell, launch, save):
    T, B, _ = x.shape
    key = (T, B, w_ih.shape[0], x.dtype, x.device)
    if key not in _CACHE:
        _CACHE[key] = torch.mm(x.reshape(T * B, -1), w_ih.t()).view(T, B, -1)
    h_buf, h_n, c_n, saved, c_buf = recurrence.recurrence_forward(cell, _CACHE[key], w_hh, b_ih, b_hh, h0, c0,
                                                                  launch, save)
    return h_buf[1:], h_n, c_n, h_buf, saved, c_buf


@contextlib.contextmanager
def _setting(plan):
    if plan == "no_mm":
        recurrence._layer_forward = _no_mm
    try:
        yield
    finally:
        recurrence._layer_forward = _REAL


on_chip._setting = _setting
PLANS = ("default", "no_mm")
CASES = [("rnn_tanh", 20, 30, 100, 100, "fp32", PLANS), ("lstm", 20, 30, 100, 100, "fp32", PLANS),
         ("gru", 32, 30, 128, 128, "fp32", PLANS), ("lstm", 32, 30, 128, 128, "fp32", PLANS),
         ("lstm", 20, 30, 100, 500, "fp32", PLANS), ("lstm", 32, 30, 128, 128, "bf16", PLANS)]

if __name__ == "__main__":
    out = Path(sys.argv[1])
    fields = ("cell", "batch_size", "seq_len", "input_size", "hidden_size", "dtype", "plans")
    rows = run_cases(out / "no_projection.jsonl", CASES, fields,
                     lambda case: on_chip.measure_case(*case, 0.25, "cuda", "ABBA"), 600)
    print(on_chip._table(rows))
