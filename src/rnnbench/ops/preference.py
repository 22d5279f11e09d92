"""Where cuDNN was measured faster than our kernels, so that ``backend="auto"`` runs torch.nn's path.

Our kernels keep a layer's recurrence in one launch, each program holding or streaming its slice
of the recurrent weights; every program must be resident, so past a batch × hidden of about a
million each program's tile outgrows its registers and spills (docs/kernels.md, "Against cuDNN
past the seeds' sizes"), while cuDNN runs each step as one GPU-filling matrix product. Measured by
``benchmarks/speed_map.py`` on one NVIDIA H200 (132 multiprocessors), 2026-11-29, seq_len 50,
input = hidden (``benchmarks/results/h200/speed-map/``: torch-nn's time over ours):

- LSTM and GRU in TF32, bf16 and fp16, training: at batch_size × hidden_size ≥ 2^20 from hidden
  1024, 0.34-0.98 (batch 256 at 4096, 512 at 2048, 1024 at 1024 and 2048); below it 0.94-5.9.
  With the backward in slices (2026-11-30, ``lstm-slices-backward-befec70``,
  ``gru-slices-backward-55913c7``) 0.66-0.99 in bf16 and 0.88-1.08 for the GRU in TF32 at batch 512
  and 1024: faster than before, cuDNN still ahead but for the GRU in TF32 at 2^20 (1.04-1.08,
  within noise of even), so the rule stands.
- The same, forward: at batch_size × hidden_size ≥ 2^21, or ≥ 2^20 at hidden 4096, 0.26-1.14
  (the GRU in TF32 at batch 256, hidden 4096: 1.14); below it 0.90-9.2.
- Since the forward's 128 batch rows a program and TF32's own operands in slices (2026-11-30,
  ``wide-rows-bf16-063585d``, ``wide-rows-tf32-d567cf0``): the LSTM in TF32 below hidden 4096 at
  batch 512 and 1024 is even with cuDNN or ahead, training 1.01-1.08 and forward 1.05-1.19, so it
  stays ours there (at hidden 4096, batch 512: 0.89 and 0.93, cuDNN's). In bf16 at 2^20-2^21 the
  LSTM's forward is 1.00-1.37 and training 0.86-1.00, the GRU's 0.89-1.30 and 0.86-1.05, batch 512
  at hidden 4096 0.80-0.92: cuDNN's training and the forward's larger sizes keep the rule above.
- Since the backward's 128 rows and TF32's GRU forward there (2026-11-30,
  ``wide-rows-backward-2a9c33f``), at batch 1024, hidden 2048: training 0.88-0.90 in bf16, the GRU
  in TF32 1.00 with its forward 0.89: cuDNN's still, by the same rule.
- Since the 16-bit saved gates (2026-11-30, ``results/h200/half-saved/engine-47cf27e``), 16-bit
  training at 1024 x 2048 and 512 x 4096: 0.89-0.94 eagerly, 0.89-0.93 graphed: cuDNN's still.
- RNN in TF32, training: at hidden 2048 from batch 256, and at hidden 4096, 0.74-0.98 (its reverse
  product is 3xTF32, fp32-accurate: docs/kernels.md); elsewhere, in bf16 and fp16, and every
  forward, 1.02-10.5.
- Strict fp32 (3xTF32 products, ours; cuDNN's float32 without TF32): ours 1.16-3.78x at every
  size measured, batch 256 and 1024 × hidden 1024 and 4096 included; between them, at batch 1024,
  hidden 2048, 0.23-0.84 until strict fp32 ran in slices (2026-11-30, ``results/h200/strict-fp32``),
  1.38-2.02 since, at 512 × 4096 and 256 × 4096 too; 1.06-2.08 at batch 1024, hidden 1500 and batch
  132, hidden 4096, the RNN 2.40-3.02 at 1024 × 2048 (``speed-map/strict-fp32-shapes-be1b86c``).
  Never sent to cuDNN.

``tests/ops/test_preference.py`` checks this rule against those files: cuDNN wherever we measured
under 0.8x, ours wherever over 1.2x. Other GPUs will cross over elsewhere (not measured).
"""

from __future__ import annotations

import torch

MILLION = 1 << 20  # batch_size × hidden_size, about where one step is a GPU-filling product


def dtype_name(dtype: torch.dtype, precision: str) -> str:
    """rnnbench's name for what a layer computes in: ``"fp32"``, ``"tf32"``, ``"bf16"`` or
    ``"fp16"`` (``rnnbench.precision.TORCH_DTYPE``'s keys). ``precision`` is the recurrence's dot
    precision (``rnnbench.ops.plans.dot_precision``: ``"tf32"`` where torch allows TF32).

    Raises:
        ValueError: a dtype the kernels do not take.
    """
    names = {torch.bfloat16: "bf16", torch.float16: "fp16"}
    if dtype == torch.float32:
        return "tf32" if precision == "tf32" else "fp32"
    if dtype not in names:
        raise ValueError(f"no kernel computes in {dtype}")
    return names[dtype]


def cudnn_faster(cell: str, batch_size: int, hidden_size: int, dtype: str, grad: bool) -> str | None:
    """Why torch.nn's path (cuDNN) runs this call under ``backend="auto"``, in one line; None
    where our kernels were measured as fast or faster, or nothing was measured (module docstring).

    Args:
        cell: ``"lstm"``, ``"gru"``, ``"rnn_tanh"`` or ``"rnn_relu"``.
        batch_size, hidden_size: the call's.
        dtype: what the layer computes in, as :func:`dtype_name` names it.
        grad: whether the call records a backward (gradients wanted).
    """
    size = batch_size * hidden_size
    if dtype == "fp32":
        return None
    if cell == "lstm" and dtype == "tf32" and hidden_size < 4096:
        return None  # (its own operands in slices at 128 rows: even with cuDNN or ahead, module docstring)
    if cell in ("lstm", "gru"):
        if grad and hidden_size >= 1024 and size >= MILLION:
            return f"cuDNN trains faster in {dtype} at batch_size x hidden_size >= 2^20 from hidden 1024 (speed map, H200)"
        if not grad and (size >= 2 * MILLION or (hidden_size >= 4096 and size >= MILLION)):
            return f"cuDNN runs faster in {dtype} at batch_size x hidden_size >= 2^21 (2^20 at hidden 4096) (speed map, H200)"
    elif grad and dtype == "tf32" and (hidden_size >= 4096 or (hidden_size >= 2048 and batch_size >= 256)):
        return "cuDNN trains the RNN faster in tf32 from hidden 2048 at batch 256, and at hidden 4096 (speed map, H200)"
    return None
