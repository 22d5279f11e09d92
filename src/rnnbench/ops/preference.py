"""Where cuDNN was measured faster than our kernels, so that ``backend="auto"`` runs torch.nn's path.

Our kernels keep a layer's recurrence in one launch, each program holding or streaming its slice
of the recurrent weights; cuDNN at large batch runs each step as a large matrix product, near the
GPU's peak. Past a batch × hidden of about a million the step is that product's size, and cuDNN
wins. Measured by ``benchmarks/speed_map.py`` on one NVIDIA H200 (132 multiprocessors), 2026-11-29,
in TF32 and bf16, seq_len 50, input = hidden (``benchmarks/results/h200/speed-map/``: torch-nn's
time over ours):

- LSTM and GRU, training: at batch_size × hidden_size ≥ 2^20 from hidden 1024, 0.34-0.98 (batch
  256 at 4096, 512 at 2048, 1024 at 1024 and 2048); below it 0.94-5.9.
- LSTM and GRU, forward: at batch_size × hidden_size ≥ 2^21, or ≥ 2^20 at hidden 4096,
  0.26-1.14 (the GRU in TF32 at batch 256, hidden 4096: 1.14); below it 0.90-9.2.
- RNN, training in float32 (TF32 there; its reverse product is fp32-accurate, docs/kernels.md):
  at hidden 2048 from batch 256, and at hidden 4096, 0.74-0.98; elsewhere, and in bf16, and
  every forward, 1.02-10.5.

``tests/ops/test_preference.py`` checks this rule against those files: cuDNN wherever we measured
under 0.8x, ours wherever over 1.2x. Other GPUs will cross over elsewhere (not measured).
"""

from __future__ import annotations

import torch

MILLION = 1 << 20  # batch_size × hidden_size, about where one step is a GPU-filling product


def cudnn_faster(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype, grad: bool) -> str | None:
    """Why torch.nn's path (cuDNN) runs this call under ``backend="auto"``, in one line; None
    where our kernels were measured as fast or faster (module docstring).

    Args:
        cell: ``"lstm"``, ``"gru"``, ``"rnn_tanh"`` or ``"rnn_relu"``.
        batch_size, hidden_size: the call's.
        dtype: the dtype the layer runs in (autocast's, where on).
        grad: whether the call records a backward (gradients wanted).
    """
    size = batch_size * hidden_size
    if cell in ("lstm", "gru"):
        if grad and hidden_size >= 1024 and size >= MILLION:
            return "cuDNN trains faster at batch_size x hidden_size >= 2^20 from hidden 1024 (speed map, H200)"
        if not grad and (size >= 2 * MILLION or (hidden_size >= 4096 and size >= MILLION)):
            return "cuDNN runs faster at batch_size x hidden_size >= 2^21 (2^20 at hidden 4096) (speed map, H200)"
    elif grad and dtype == torch.float32 and (hidden_size >= 4096 or (hidden_size >= 2048 and batch_size >= 256)):
        return "cuDNN trains the float32 RNN faster from hidden 2048 at batch 256, and at hidden 4096 (speed map, H200)"
    return None
