"""The judge for ``rnnbench.nn`` modules with what torch.nn lacks (recurrent dropout, layer norm):
one training call against the float64 network of ``rnnbench.ops.naive`` (-> rnnbench.reference) on
the same parameters: the output, the final states and the gradients of the input, the states and
every parameter, each within ``rnnbench.precision.tolerance``."""

from __future__ import annotations

import warnings

import torch

from rnnbench.ops.naive import naive_network
from rnnbench.precision import matmul_mode, tolerance
from rnnbench.verify import relative_error

TORCH_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _grads(outs, leaves):
    g = torch.Generator().manual_seed(9)
    loss = sum((o.cpu().double() * torch.randn(o.shape, generator=g, dtype=torch.float64)).sum() for o in outs)
    return list(torch.autograd.grad(loss, leaves))


def check_against_naive(cell, module, batch, seq, input_size, with_state=True, lengths=None, device="cpu",
                        dtype="fp32", masks=None, gradients=True):
    """``module`` (on ``device``, in ``dtype``'s torch dtype) called once on fresh random inputs
    (``[B, T, I]`` where it is batch_first), with random initial states or none and ``lengths``,
    against :func:`naive_network` in float64 on its parameters (with ``masks``, a list the module's
    recurrent-dropout masks are drawn into by the call, or None). Without ``gradients``, the call
    under ``torch.no_grad`` and its outputs alone. Returns the warnings the call gave.

    Raises:
        AssertionError: a shape differs, or a relative error is past ``tolerance(cell, dtype)``.
    """
    gen = torch.Generator().manual_seed(7)
    x = torch.randn((batch, seq, input_size) if module.batch_first else (seq, batch, input_size),
                    generator=gen).to(device, TORCH_DTYPE[dtype]).requires_grad_(gradients)
    d = (2 if module.bidirectional else 1) * module.num_layers
    states = [torch.randn(d, batch, module.hidden_size, generator=gen).to(device, TORCH_DTYPE[dtype])
              .requires_grad_(gradients) for _ in range(2 if cell == "lstm" else 1)] if with_state else []
    hx = (tuple(states) if cell == "lstm" else states[0]) if states else None
    params = dict(module.named_parameters())
    with warnings.catch_warnings(record=True) as caught, matmul_mode(dtype), torch.set_grad_enabled(gradients):
        warnings.simplefilter("always")
        out, finals = module(x, hx, lengths=lengths)
    got = [out, *(finals if cell == "lstm" else (finals,))]
    leaves = [x, *states, *params.values()]
    if gradients:
        got += _grads(got, leaves)

    wide = {n: p.detach().cpu().double().requires_grad_() for n, p in params.items()}
    xw = x.detach().cpu().double().requires_grad_()
    sw = [s.detach().cpu().double().requires_grad_() for s in states]
    hxw = (tuple(sw) if cell == "lstm" else sw[0]) if sw else None
    wide_masks = None if masks is None else [m.cpu().double() for m in masks]
    ref_out, ref_finals = _reference(cell, module, wide, xw, hxw, wide_masks, lengths)
    ref = [ref_out, *(ref_finals if cell == "lstm" else (ref_finals,))]
    names = ["output", "h_n", "c_n"][: 3 if cell == "lstm" else 2]
    if gradients:
        ref += _grads(ref, [xw, *sw, *wide.values()])
        names += ["grad_x"] + [f"grad_state{i}" for i in range(len(states))] + [f"grad_{n}" for n in params]
    for name, a, b in zip(names, got, ref, strict=True):
        assert a.shape == b.shape, name
        err = relative_error(a.cpu(), b)
        assert err <= tolerance(cell, dtype), f"{name}: relative error {err:.3g}"
    return [str(w.message) for w in caught]


def _reference(cell, module, params, x, hx, masks, lengths):
    """naive_network with the masks; with ``lengths``, each sequence run alone to its own end and
    padded with zeros (what a variable-length batch computes)."""
    layers, bi, bf = module.num_layers, module.bidirectional, module.batch_first
    if lengths is None:
        return naive_network(cell, params, x, hx, layers, bi, bf, recurrent_masks=masks)
    outs, finals = [], []
    for b, n in enumerate(lengths.tolist()):
        xb = x[:n, b:b + 1]
        hb = None if hx is None else (tuple(h[:, b:b + 1] for h in hx) if cell == "lstm" else hx[:, b:b + 1])
        if n == 0:  # (nothing runs: the state as it came, zeros out)
            zeros = x.new_zeros(layers * (2 if bi else 1), 1, module.hidden_size)
            out_b = x.new_zeros(x.shape[0], 1, module.hidden_size * (2 if bi else 1))
            fin = (hb if hb is not None else ((zeros, zeros) if cell == "lstm" else zeros))
        else:
            out_b, fin = naive_network(cell, params, xb, hb, layers, bi, False,
                                       recurrent_masks=None if masks is None else [m[b:b + 1] for m in masks])
            out_b = torch.cat([out_b, out_b.new_zeros(x.shape[0] - n, 1, out_b.shape[2])])
        outs.append(out_b)
        finals.append(fin)
    out = torch.cat(outs, dim=1)
    if cell == "lstm":
        return out, tuple(torch.cat([f[i] for f in finals], dim=1) for i in range(2))
    return out, torch.cat(finals, dim=1)
