"""Which TF32 rounding makes the reverse recurrence miss: the weights' or the gradients'? (CPU)

    python benchmarks/tf32_backward_error.py > OUT.txt        (seconds, no GPU)

Our TF32 backward ran its recurrent products as 3xTF32 because plain TF32 missed the float64
reference for the gradient to h0 by 1.9-2.0 % against a 1 % tolerance (H100, glample's sizes).
A cheaper accurate product would split only the operand whose rounding matters, or only the cells
that need it (what ``plans.backward_precision`` now does, after this script: 3xTF32 for the RNN). This script emulates the reverse product ``dh_{t-1} = d_gates_t @ W_hh`` in
float64 with TF32 operands (fp32 with the low 13 mantissa bits cleared, as tensor cores read them)
for: neither operand rounded, both (plain TF32), only ``W_hh`` (splitting the gradients), only the
gradients (splitting ``W_hh``: two products); the forward and every other product exact. It prints
the relative error of the gradients to h0, x and W_hh against the exact backward, for an LSTM, a GRU
and an RNN at glample-2016's sizes (batch 20, seq 30, input 100, hidden 100 and 500; loss on the
last step and the final states, as glample's cases).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from rnnbench.reference import cell_step  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402

MODES = {"exact": (False, False), "plain TF32": (True, True), "W rounded, gradients split": (True, False),
         "gradients rounded, W split": (False, True)}


def tf32(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a tensor core reads it in TF32: fp32, low 13 of the 23 mantissa bits dropped."""
    bits = t.to(torch.float32).view(torch.int32) & -8192
    return bits.view(torch.float32).to(t.dtype)


class RecurrentProduct(torch.autograd.Function):
    """``h @ W^T`` exact forward; backward's ``dh = g @ W`` with the chosen operands in TF32, the
    weight gradient ``g^T h`` exact."""

    @staticmethod
    def forward(ctx, h, w, round_w: bool, round_g: bool):
        ctx.save_for_backward(h, w)
        ctx.round_w, ctx.round_g = round_w, round_g
        return h @ w.T

    @staticmethod
    def backward(ctx, g):
        h, w = ctx.saved_tensors
        wr = tf32(w) if ctx.round_w else w
        gr = tf32(g) if ctx.round_g else g
        return gr @ wr, g.T @ h, None, None


def layer(cell, x, h0, c0, w_ih, w_hh, b, round_w, round_g):
    """One layer by ``reference.cell_step``, its recurrent product through
    :class:`RecurrentProduct`; returns (h_T, c_T)."""
    product = lambda h, w: RecurrentProduct.apply(h, w, round_w, round_g)  # noqa: E731
    state = (h0, c0) if cell == "lstm" else h0
    for t in range(x.shape[0]):
        state = cell_step(cell, x[t], state, w_ih, w_hh, b, torch.zeros_like(b), recurrent=product)
    return state if cell == "lstm" else (state, c0)


def gradients(cell, batch, seq, inputs, hidden, mode, seed=0):
    gen = torch.Generator().manual_seed(seed)
    gates = {"lstm": 4, "gru": 3}.get(cell, 1)
    bound = hidden ** -0.5
    u = lambda *s: ((torch.rand(s, generator=gen, dtype=torch.float64) * 2 - 1) * bound)  # noqa: E731
    x = torch.randn(seq, batch, inputs, generator=gen, dtype=torch.float64).requires_grad_()
    h0 = (torch.randn(batch, hidden, generator=gen, dtype=torch.float64) * 0.5).requires_grad_()
    c0 = torch.randn(batch, hidden, generator=gen, dtype=torch.float64) * 0.5
    w_ih, w_hh, b = u(gates * hidden, inputs), u(gates * hidden, hidden).requires_grad_(), u(gates * hidden)
    h, c = layer(cell, x, h0, c0, w_ih, w_hh, b, *MODES[mode])
    weights = [torch.randn(h.shape, generator=gen, dtype=torch.float64) for _ in range(2)]
    loss = (h * weights[0]).sum() + ((c * weights[1]).sum() if cell == "lstm" else 0)
    return torch.autograd.grad(loss, [h0, x, w_hh])


def main() -> int:
    print("relative error against the exact backward (float64 emulation); tolerance of tf32: 1e-2")
    print("case | mode | grad_h0 | grad_x | grad_w_hh")
    for cell in ("lstm", "gru", "rnn_tanh"):
        for hidden in (100, 500):
            exact = gradients(cell, 20, 30, 100, hidden, "exact")
            for mode in list(MODES)[1:]:
                got = gradients(cell, 20, 30, 100, hidden, mode)
                errs = " | ".join(f"{relative_error(a, b):.2e}" for a, b in zip(got, exact))
                print(f"{cell} B20 T30 H{hidden} | {mode} | {errs}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
