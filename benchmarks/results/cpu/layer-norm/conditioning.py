"""How far float32 rounding carries in layer-normalized cells, on the CPU: the float32 loop
(``rnnbench.nn`` with ``backend="torch"``) and the same module in float64 against the float64
reference (``rnnbench.ops.naive``), at 10, 30 and 100 steps, with and without layer norm; then the
LSTM's three norms apart (the reference with one or two of them left out). The float64 loop shows
the loop computes the reference's function; the float32 column how much its rounding grows. From
the repository root::

    PYTHONPATH=src python3 benchmarks/results/cpu/layer-norm/conditioning.py
"""
import warnings

import torch

import rnnbench.reference as reference
from rnnbench import nn as rnn
from rnnbench.ops.naive import naive_network
from rnnbench.verify import relative_error

H, B = 128, 8


def modules():
    warnings.simplefilter("ignore")  # (the fallback's warning)
    torch.manual_seed(0)
    for cell, cls in (("lstm", rnn.LSTM), ("gru", rnn.GRU)):
        for norm in (True, False):
            m = cls(H, H, layer_norm=norm, backend="torch")
            wide = cls(H, H, layer_norm=norm, backend="torch").double()
            wide.load_state_dict(m.state_dict())
            params = {n: p.detach().double() for n, p in m.named_parameters()}
            for steps in (10, 30, 100):
                x = torch.randn(steps, B, H)
                with torch.no_grad():
                    ref = naive_network(cell, params, x.double(), None, 1)[0]
                    e32 = relative_error(m(x)[0].double(), ref)
                    e64 = relative_error(wide(x.double())[0], ref)
                print(f"{cell} {'layer norm' if norm else 'plain':10s} T{steps:<3d} float32 loop {e32:.1e}  "
                      f"float64 loop {e64:.1e}")


def norms_apart():
    """The reference's LSTM with some of its three norms (x's product, h's product, c) left out."""
    normalized = reference.normalized

    def run(dtype, steps, left_out):
        count = iter(range(10 ** 9))
        # (cell_step normalizes x's product, h's product, then c, in that order, every step)
        reference.normalized = lambda v: v if next(count) % 3 in left_out else normalized(v)
        g = torch.Generator().manual_seed(1)
        w = {n: ((torch.rand(s, generator=g) * 2 - 1) / H ** 0.5).to(dtype) for n, s in
             (("weight_ih_l0", (4 * H, H)), ("weight_hh_l0", (4 * H, H)), ("bias_ih_l0", (4 * H,)),
              ("bias_hh_l0", (4 * H,)))}
        ones = torch.ones(4 * H, dtype=dtype)
        norm = reference.LayerNormWeights(ones, ones, torch.ones(H, dtype=dtype), torch.zeros(H, dtype=dtype))
        x = torch.randn(steps, B, H, generator=g).to(dtype)
        zeros = torch.zeros(1, B, H, dtype=dtype)
        try:
            return reference.reference_forward("lstm", w, x, (zeros, zeros), 1, layer_norms=[norm])[0]
        finally:
            reference.normalized = normalized

    for left_out, name in (((), "all three"), ((2,), "products only"), ((0, 1), "c only")):
        for steps in (10, 100):
            err = relative_error(run(torch.float32, steps, left_out).double(), run(torch.float64, steps, left_out))
            print(f"lstm norms: {name:13s} T{steps:<3d} float32 {err:.1e}")


if __name__ == "__main__":
    modules()
    norms_apart()
