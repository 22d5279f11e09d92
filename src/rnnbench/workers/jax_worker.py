"""The JAX worker: ``jax-scan`` (``lax.scan`` under ``jax.jit``) and ``jax-cudnn``
(``jax.experimental.rnn.lstm``, a cuDNN call on CUDA).

Run as ``python -m rnnbench.workers.jax_worker`` (see :mod:`rnnbench.workers.protocol`).

**jax-scan** keeps the canonical (torch.nn) layout: ``x @ W_ih.T`` for every step at once (the
input projection hoisted out of the loop, as cuDNN and the fused loop do), then ``lax.scan`` over
time with one recurrent matmul and the gate math per step, one scan per layer; the same equations
as :mod:`rnnbench.reference` (GRU reset gate after the recurrent matmul). Train mode is
``jax.grad`` of the runner's loss (outputs + final states, :func:`rnnbench.workload.loss_of`) with
respect to the input, the initial states and every weight, all in one ``jax.jit``.

A variable-length batch (``arrays["lengths"]``): ``jax-scan`` masks (a sequence that has ended
keeps its state and outputs zeros), ``jax-cudnn`` hands the lengths to cuDNN, and the loss leaves
the padding out, as the runner's does.

**jax-cudnn** packs the canonical weights into cuDNN's flat vector (:func:`pack_cudnn`: every
layer's ``W_ih``, ``W_hh``, then every layer's ``b_ih``, ``b_hh``, each in torch's layout) and
calls ``jax.experimental.rnn.lstm`` on the batch-major input; its gradient with respect to the
flat vector comes back through :func:`unpack_cudnn`. The setting ``reference=True`` runs the same
path with ``jax.experimental.rnn.lstm_ref`` (pure JAX) in place of the cuDNN call, so the packing,
transposes and loss are tested on the CPU.

Precision: ``jax_default_matmul_precision`` is ``highest`` for ``fp32`` (strict float32),
``tensorfloat32`` for ``tf32``, the default for bf16/fp16. JAX is told not to preallocate GPU
memory (the runner's torch shares the GPU). Timing blocks on every result
(``jax.block_until_ready``) and reads the host clock.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402

from .protocol import ArrayStep, protocol_streams, serve  # noqa: E402

# --- layout: canonical <-> cuDNN's flat LSTM weights (numpy only) --------------------------------


def cudnn_shapes(input_size: int, hidden_size: int, num_layers: int, gates: int = 4) -> list[tuple[str, tuple]]:
    """``(canonical name, shape)`` in cuDNN's flat order (jax.experimental.rnn's
    ``_get_params_shapes_in_lstm``, one direction): all matrices, then all biases."""
    g = gates * hidden_size
    mats, biases = [], []
    for k in range(num_layers):
        mats += [(f"weight_ih_l{k}", (g, input_size if k == 0 else hidden_size)), (f"weight_hh_l{k}", (g, hidden_size))]
        biases += [(f"bias_ih_l{k}", (g,)), (f"bias_hh_l{k}", (g,))]
    return mats + biases


def pack_cudnn(weights: dict, input_size: int, hidden_size: int, num_layers: int) -> np.ndarray:
    """Canonical weights -> cuDNN's flat vector (same gate order i, f, g, o; nothing transposed)."""
    return np.concatenate([np.asarray(weights[name]).reshape(-1)
                           for name, _ in cudnn_shapes(input_size, hidden_size, num_layers)])


def unpack_cudnn(flat: np.ndarray, input_size: int, hidden_size: int, num_layers: int) -> dict:
    """cuDNN's flat vector -> canonical weights (or gradients): the inverse of :func:`pack_cudnn`."""
    shapes = cudnn_shapes(input_size, hidden_size, num_layers)
    expected = sum(int(np.prod(shape)) for _, shape in shapes)
    if flat.size != expected:
        raise ValueError(f"flat LSTM weights hold {flat.size} values, the shapes {expected}")
    out, offset = {}, 0
    for name, shape in shapes:
        size = int(np.prod(shape))
        out[name] = np.asarray(flat[offset:offset + size]).reshape(shape)
        offset += size
    return out


# --- the framework -------------------------------------------------------------------------------

MATMUL_PRECISION = {"fp32": "highest", "tf32": "tensorfloat32", "bf16": None, "fp16": None}


def _jax():
    import jax

    return jax


def jax_dtype(dtype: str):
    import jax.numpy as jnp

    return {"fp32": jnp.float32, "tf32": jnp.float32, "bf16": jnp.bfloat16, "fp16": jnp.float16}[dtype]


def jax_device(device: str):
    """JAX's first device of ``device`` (``cpu`` or ``cuda``); a clear error without one."""
    jax = _jax()
    try:
        return jax.devices("gpu" if device == "cuda" else "cpu")[0]
    except RuntimeError as exc:
        raise RuntimeError(f"JAX has no {device} device here ({jax.default_backend()} only): {exc}") from None


def set_precision(dtype: str) -> None:
    _jax().config.update("jax_default_matmul_precision", MATMUL_PRECISION[dtype])


def gate_math(cell: str, x_proj, h_proj, state):
    """One step's gates given both projections ``[B, G*H]`` (biases included); torch.nn's
    equations (see :func:`rnnbench.reference.cell_step`)."""
    import jax
    import jax.numpy as jnp

    if cell == "lstm":
        i, f, g, o = jnp.split(x_proj + h_proj, 4, axis=-1)
        c = jax.nn.sigmoid(f) * state[1] + jax.nn.sigmoid(i) * jnp.tanh(g)
        return jax.nn.sigmoid(o) * jnp.tanh(c), c
    if cell == "gru":
        x_r, x_z, x_n = jnp.split(x_proj, 3, axis=-1)
        h_r, h_z, h_n = jnp.split(h_proj, 3, axis=-1)
        r, z = jax.nn.sigmoid(x_r + h_r), jax.nn.sigmoid(x_z + h_z)
        n = jnp.tanh(x_n + r * h_n)
        return n + z * (state - n)
    pre = x_proj + h_proj
    return jnp.tanh(pre) if cell == "rnn_tanh" else jax.nn.relu(pre)


def running_mask(lengths, seq_len: int):
    """``[T, B, 1]`` booleans, True while sequence ``b`` runs (``t < lengths[b]``)."""
    import jax.numpy as jnp

    return (jnp.arange(seq_len)[:, None] < lengths[None, :])[..., None]


def scan_network(cell: str, num_layers: int, params: dict, x, h0, c0=None, lengths=None):
    """The stacked network with ``lax.scan``: ``x`` ``[T, B, I]``, ``h0``/``c0`` ``[L, B, H]``
    -> ``(output [T, B, H], (h_n,) or (h_n, c_n))``. With ``lengths`` ``[B]`` (a variable-length
    batch), a sequence that has ended keeps its state and outputs zeros, as the reference does."""
    import jax.numpy as jnp
    from jax import lax

    lstm = cell == "lstm"
    layer_input, finals = x, []
    mask = None if lengths is None else running_mask(lengths, x.shape[0])
    for k in range(num_layers):
        w_ih, w_hh = params[f"weight_ih_l{k}"], params[f"weight_hh_l{k}"]
        b_ih, b_hh = params[f"bias_ih_l{k}"], params[f"bias_hh_l{k}"]
        t, b = layer_input.shape[:2]
        x_proj = (layer_input.reshape(t * b, -1) @ w_ih.T + b_ih).reshape(t, b, -1)

        def step(state, xs, w_hh=w_hh, b_hh=b_hh):
            xp, running = xs if mask is not None else (xs, None)
            h = state[0] if lstm else state
            new = gate_math(cell, xp, h @ w_hh.T + b_hh, state)
            if running is None:
                return new, (new[0] if lstm else new)
            if lstm:
                new = tuple(jnp.where(running, n, o) for n, o in zip(new, state))
            else:
                new = jnp.where(running, new, state)
            return new, jnp.where(running, new[0] if lstm else new, 0)

        final, layer_input = lax.scan(step, (h0[k], c0[k]) if lstm else h0[k],
                                      x_proj if mask is None else (x_proj, mask))
        finals.append(final)
    if lstm:
        return layer_input, (jnp.stack([f[0] for f in finals]), jnp.stack([f[1] for f in finals]))
    return layer_input, (jnp.stack(finals),)


def loss_of(output, finals, targets: dict, loss: str, batch_axis: int = 1, lengths=None):
    """The runner's loss (:func:`rnnbench.workload.loss_of`) in float32: ``output`` is
    ``[T, B, H]`` (``batch_axis`` 1) or ``[B, T, H]`` (``batch_axis`` 0); with ``lengths``, the
    padded steps count for nothing (``all_steps``) or each sequence's own last step is taken
    (``last_step``)."""
    import jax.numpy as jnp

    y, target = output.astype(jnp.float32), targets["target"]
    if lengths is None:
        y = y if loss == "all_steps" else (y[-1] if batch_axis == 1 else y[:, -1])
    elif loss == "all_steps":
        mask = running_mask(lengths, output.shape[1 - batch_axis])
        mask = mask if batch_axis == 1 else mask.transpose(1, 0, 2)
        y, target = y * mask, target * mask
    else:
        rows = jnp.arange(output.shape[batch_axis])
        y = y[lengths - 1, rows] if batch_axis == 1 else y[rows, lengths - 1]
    total = jnp.sum((y - target) ** 2)
    for state, key in zip(finals, ("target_h", "target_c")):
        total = total + jnp.sum((state.astype(jnp.float32) - targets[key]) ** 2)
    return 0.5 * total / output.shape[batch_axis]


def to_numpy(value) -> np.ndarray:
    return np.asarray(_jax().device_get(value)).astype(np.float32)


class JaxStep(ArrayStep):
    """Common to the JAX lanes: arrays on the device, a jitted function, blocking calls."""

    def __init__(self, request: dict):
        super().__init__()
        self.case, self.names = request["case"], tuple(request["names"])
        self.dtype = self.case["dtype"]
        set_precision(self.dtype)
        self.device = jax_device(self.case["device"])
        jax = _jax()
        self.extra = {"framework_version": f"jax {jax.__version__}", "jax_backend": self.device.platform,
                      "matmul_precision": MATMUL_PRECISION[self.dtype] or "default"}

    def put(self, array, dtype=None):
        import jax.numpy as jnp

        jax = _jax()
        return jax.device_put(jnp.asarray(array, dtype=dtype or jax_dtype(self.dtype)), self.device)

    def put_targets(self, arrays: dict, batch_first: bool = False) -> dict:
        import jax.numpy as jnp

        target = arrays["target"]
        if batch_first and target.ndim == 3:
            target = target.transpose(1, 0, 2)
        return {"target": self.put(target, jnp.float32), "target_h": self.put(arrays["target_h"], jnp.float32),
                "target_c": self.put(arrays["target_c"], jnp.float32)}

    def put_lengths(self, arrays: dict):
        """The lengths ``[B]`` (int32) of a variable-length batch on the device, or None."""
        import jax.numpy as jnp

        lengths = arrays.get("lengths")
        return None if lengths is None else self.put(lengths, jnp.int32)

    def before_call(self) -> None:
        set_precision(self.dtype)

    def run(self):
        return _jax().block_until_ready(self.fn(*self.args))


class ScanStep(JaxStep):
    """``jax-scan``: see the module docstring."""

    def __init__(self, request: dict):
        super().__init__(request)
        jax = _jax()
        case, arrays = self.case, request["arrays"]
        cell, layers, lstm = case["cell"], case["num_layers"], case["cell"] == "lstm"
        params = {n: self.put(w) for n, w in arrays["weights"].items()}
        leaves = [self.put(arrays["x"]), self.put(arrays["h0"])] + ([self.put(arrays["c0"])] if lstm else [])
        targets = self.put_targets(arrays)
        lengths = self.put_lengths(arrays)

        def network(params, *leaves):
            x, h0, *c0 = leaves
            return scan_network(cell, layers, params, x, h0, *(c0 or [None]), lengths=lengths)

        if case["mode"] == "forward":
            def forward(params, *leaves):
                output, finals = network(params, *leaves)
                return (output, *finals)

            self.fn, self.args = jax.jit(forward), (params, *leaves)
            return

        def loss(params, *leaves):
            output, finals = network(params, *leaves)
            return loss_of(output, finals, targets, case["loss"], lengths=lengths), (output, *finals)

        grad = jax.grad(loss, argnums=tuple(range(len(leaves) + 1)), has_aux=True)
        self.fn, self.args = jax.jit(grad), (params, *leaves)

    def outputs(self, result) -> dict:
        if self.case["mode"] == "forward":
            return dict(zip(self.names, map(to_numpy, result)))
        (g_params, *g_leaves), values = result
        out = dict(zip(("output", "h_n", "c_n"), map(to_numpy, values)))
        out.update(zip(("grad_x", "grad_h0", "grad_c0"), map(to_numpy, g_leaves)))
        out.update({f"grad_{n}": to_numpy(g) for n, g in g_params.items()})
        return out


class CudnnStep(JaxStep):
    """``jax-cudnn``: see the module docstring (LSTM only)."""

    def __init__(self, request: dict, reference: bool = False):
        super().__init__(request)
        jax = _jax()
        import jax.numpy as jnp
        from jax.experimental import rnn

        case, arrays = self.case, request["arrays"]
        if case["cell"] != "lstm":
            raise ValueError(f"jax.experimental.rnn has no {case['cell']} cell")
        i, h, layers = case["input_size"], case["hidden_size"], case["num_layers"]
        b = case["batch_size"]
        flat = self.put(pack_cudnn(arrays["weights"], i, h, layers))
        x = self.put(arrays["x"].transpose(1, 0, 2))  # batch-major [B, T, I], as the call wants
        h0, c0 = self.put(arrays["h0"]), self.put(arrays["c0"])
        lengths = self.put_lengths(arrays)  # cuDNN takes the lengths itself and skips the padding
        seq_lengths = lengths if lengths is not None else self.put(np.full((b,), case["seq_len"]), jnp.int32)
        targets = self.put_targets(arrays, batch_first=True)
        precision = {"fp32": jax.lax.Precision.HIGHEST, "tf32": jax.lax.Precision.HIGH}.get(self.dtype)
        self.extra["cudnn"] = not reference

        def network(flat, x, h0, c0):
            if reference:
                w_ih, w_hh, b_ih, b_hh = rnn.unpack_lstm_weights(flat, i, h, layers, False)
                return rnn.lstm_ref(x, h0, c0, w_ih, w_hh, b_ih, b_hh, seq_lengths, input_size=i, hidden_size=h,
                                    num_layers=layers, dropout=0.0, bidirectional=False)
            return rnn.lstm(x, h0, c0, flat, seq_lengths, input_size=i, hidden_size=h, num_layers=layers,
                            dropout=0.0, bidirectional=False, precision=precision)

        self.args = (flat, x, h0, c0)
        if case["mode"] == "forward":
            self.fn = jax.jit(network)
            return

        def loss(flat, x, h0, c0):
            y, h_n, c_n = network(flat, x, h0, c0)
            return loss_of(y, (h_n, c_n), targets, case["loss"], batch_axis=0, lengths=lengths), (y, h_n, c_n)

        self.fn = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3), has_aux=True))

    def outputs(self, result) -> dict:
        if self.case["mode"] == "forward":
            y, h_n, c_n = map(to_numpy, result)
            return {"output": y.transpose(1, 0, 2), "h_n": h_n, "c_n": c_n}
        (g_flat, g_x, g_h0, g_c0), (y, h_n, c_n) = result
        out = {"output": to_numpy(y).transpose(1, 0, 2), "h_n": to_numpy(h_n), "c_n": to_numpy(c_n),
               "grad_x": to_numpy(g_x).transpose(1, 0, 2), "grad_h0": to_numpy(g_h0), "grad_c0": to_numpy(g_c0)}
        case = self.case
        grads = unpack_cudnn(to_numpy(g_flat), case["input_size"], case["hidden_size"], case["num_layers"])
        out.update({f"grad_{n}": g for n, g in grads.items()})
        return out


def make_step(request: dict):
    lane, settings = request["lane"], request.get("settings", {})
    if lane == "jax-scan":
        return ScanStep(request)
    if lane == "jax-cudnn":
        return CudnnStep(request, reference=bool(settings.get("reference")))
    raise ValueError(f"the JAX worker has no lane {lane!r}")


def main() -> None:
    streams = protocol_streams()  # before JAX is imported: nothing it prints can reach the replies
    jax = _jax()
    import jaxlib

    serve(make_step, {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "backend": jax.default_backend()},
          streams)


if __name__ == "__main__":
    main()
