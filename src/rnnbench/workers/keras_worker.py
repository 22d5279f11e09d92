"""The Keras 3 worker: ``layers.LSTM / GRU / SimpleRNN`` on the backend named by ``KERAS_BACKEND``
(``jax``, ``torch`` or ``tensorflow``; Keras fixes it at import, hence one worker per backend).

Run as ``KERAS_BACKEND=jax python -m rnnbench.workers.keras_worker`` (see
:mod:`rnnbench.workers.protocol`).

**Layout** (:func:`to_keras`, :func:`from_keras`, :func:`grads_from_keras`; numpy only). Per layer
Keras holds ``kernel`` ``[I, G*H]``, ``recurrent_kernel`` ``[H, G*H]`` (torch's matrices
transposed) and a bias:

- LSTM: gates i, f, c, o = torch's i, f, g, o; **one** bias ``[4H]`` = ``b_ih + b_hh``. The two
  biases are only ever added, so the sum computes the same function; the gradient of each torch
  bias is the gradient of the sum (both get it back).
- GRU with ``reset_after=True`` (cuDNN's and torch's GRU: the reset gate multiplies
  ``W_hn h + b_hn`` after the matmul): gates z, r, h against torch's r, z, n, so the first two
  gate blocks swap; the bias is ``[2, 3H]``: row 0 = ``b_ih``, row 1 = ``b_hh`` (kept apart: the
  recurrent bias of the candidate sits inside ``r * (...)``, so these cannot be summed).
- SimpleRNN (tanh or relu): one bias ``[H]`` = ``b_ih + b_hh``, as LSTM.

Going back (:func:`from_keras`), a merged bias cannot be split: all of it goes to ``bias_ih`` and
``bias_hh`` is zero (the same function).

**Variable-length batches** go in with Keras's ``mask`` (``[B, T]``, True at valid steps):
a masked step keeps the state, so the final states are those at each sequence's own last step;
the loss leaves the padding out. Keras's cuDNN paths refuse a mask on the JAX and torch backends
(they fall back to the generic loop); TensorFlow's takes a right-padded one; ``keras_cudnn`` says.

**Data** is batch-major, as Keras wants: ``x`` ``[B, T, I]`` and the targets are transposed once
when the step is prepared (outside the timing); outputs and ``grad_x`` are transposed back before
verification. The layers are stacked with ``return_sequences=True, return_state=True`` and given
the canonical initial states. Each backend runs a step as its own trainer would: JAX under
``jax.jit`` (``stateless_call``, ``jax.grad``), torch eagerly (``torch.autograd.grad``),
TensorFlow in a ``tf.function`` (``tf.GradientTape``).

**cuDNN**: each row records ``keras_cudnn`` (whether a cuDNN kernel was called: torch's
``_cudnn_lstm``/``_cudnn_gru``, JAX's ``jax.experimental.rnn.lstm``, TensorFlow's cuDNN functions,
seen by wrapping them), ``keras_cudnn_ok`` (Keras's own test, ``backend.cudnn_ok``, where it has
one) and ``keras_path``: ``backend`` when the backend's fused ``lstm``/``gru`` answered, ``generic``
when Keras fell back to its step-by-step RNN loop (always for SimpleRNN).
"""

from __future__ import annotations

import os

import numpy as np

from .protocol import ArrayStep, protocol_streams, serve

# Keras's gate blocks, as indices of torch's gate blocks: GRU z, r, h <- torch r, z, n.
KERAS_GATES = {"lstm": (0, 1, 2, 3), "gru": (1, 0, 2), "rnn_tanh": (0,), "rnn_relu": (0,)}


def _blocks(a: np.ndarray, cell: str) -> np.ndarray:
    """Reorder the gate blocks along axis 0 from torch's order to Keras's (its own inverse for
    every cell: a swap or the identity)."""
    return np.concatenate([b for b in (np.split(a, len(KERAS_GATES[cell]), axis=0)[i] for i in KERAS_GATES[cell])])


def to_keras(cell: str, weights: dict, num_layers: int) -> list[list[np.ndarray]]:
    """Canonical weights -> per layer ``[kernel, recurrent_kernel, bias]`` as Keras sets them."""
    layers = []
    for k in range(num_layers):
        w = {n: np.asarray(weights[f"{n}_l{k}"]) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        kernel, recurrent = _blocks(w["weight_ih"], cell).T, _blocks(w["weight_hh"], cell).T
        if cell == "gru":
            bias = np.stack([_blocks(w["bias_ih"], cell), _blocks(w["bias_hh"], cell)])
        else:
            bias = _blocks(w["bias_ih"] + w["bias_hh"], cell)
        layers.append([np.ascontiguousarray(kernel), np.ascontiguousarray(recurrent), bias])
    return layers


def _canonical(cell: str, layers: list, merged_bias_to: tuple[str, ...]) -> dict:
    out = {}
    for k, (kernel, recurrent, bias) in enumerate(layers):
        out[f"weight_ih_l{k}"] = _blocks(np.asarray(kernel).T, cell)
        out[f"weight_hh_l{k}"] = _blocks(np.asarray(recurrent).T, cell)
        bias = np.asarray(bias)
        if cell == "gru":
            out[f"bias_ih_l{k}"], out[f"bias_hh_l{k}"] = _blocks(bias[0], cell), _blocks(bias[1], cell)
        else:
            for name in ("bias_ih", "bias_hh"):
                out[f"{name}_l{k}"] = _blocks(bias, cell) if name in merged_bias_to else np.zeros_like(bias)
    return out


def from_keras(cell: str, layers: list) -> dict:
    """Keras weights -> canonical ones; a merged bias goes to ``bias_ih`` (``bias_hh`` = 0)."""
    return _canonical(cell, layers, ("bias_ih",))


def grads_from_keras(cell: str, layers: list) -> dict:
    """Gradients of Keras weights -> gradients of the canonical weights (the adjoint of
    :func:`to_keras`): a merged bias's gradient is each torch bias's gradient."""
    return _canonical(cell, layers, ("bias_ih", "bias_hh"))


# --- the framework -------------------------------------------------------------------------------

KERAS_DTYPE = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}


class KerasStep(ArrayStep):
    """One case on the current backend; see the module docstring."""

    def __init__(self, request: dict):
        super().__init__()
        import keras

        self.keras = keras
        self.backend = keras.backend.backend()
        self.case, self.names = request["case"], tuple(request["names"])
        case, arrays, settings = self.case, request["arrays"], request.get("settings", {})
        self.cell, self.lstm, self.train = case["cell"], case["cell"] == "lstm", case["mode"] == "train"
        self.use_cudnn = settings.get("use_cudnn", "auto")
        self.dtype = KERAS_DTYPE[case["dtype"]]
        self.spy = CudnnSpy(self.backend)
        self.extra = {"framework_version": f"keras {keras.__version__} ({self.backend} backend)",
                      "keras_use_cudnn": str(self.use_cudnn)}
        self.device_name = self._device_name(case["device"])
        self._set_precision()
        with self._on_device():
            self.layers = self._build(arrays["weights"])
            self._prepare_backend(arrays, request.get("threads"))
        self.extra["keras_cudnn_ok"] = self._cudnn_ok()

    # --- common ---

    def _device_name(self, device: str) -> str:
        # torch: the names Keras's torch backend uses itself ("cpu:0" makes it copy every new
        # variable off its Parameter, which breaks the integer seed variable of an RNN cell)
        if self.backend == "torch":
            return "cuda" if device == "cuda" else "cpu"
        return "gpu:0" if device == "cuda" else "cpu:0"

    def _on_device(self):
        """keras.device(...) for the case's device, or nothing where it is the default already."""
        import contextlib

        if self.backend == "torch":
            from keras.src.backend.torch.core import get_device

            if str(get_device()) == self.device_name:
                return contextlib.nullcontext()
        return self.keras.device(self.device_name)

    def _build(self, weights: dict) -> list:
        keras, case = self.keras, self.case
        hidden, layers = case["hidden_size"], []
        # The initial values are overwritten at once: zeros spare the orthogonal initialiser's QR
        # (which has no bfloat16 kernel on the CPU in torch, nor in JAX)
        kw = dict(return_sequences=True, return_state=True, dtype=self.dtype, kernel_initializer="zeros",
                  recurrent_initializer="zeros", bias_initializer="zeros")
        for k, values in enumerate(to_keras(self.cell, weights, case["num_layers"])):
            if self.lstm:
                layer = keras.layers.LSTM(hidden, use_cudnn=self.use_cudnn, **kw)
            elif self.cell == "gru":
                layer = keras.layers.GRU(hidden, reset_after=True, use_cudnn=self.use_cudnn, **kw)
            else:
                layer = keras.layers.SimpleRNN(hidden, activation=self.cell.removeprefix("rnn_"), **kw)
            in_size = case["input_size"] if k == 0 else hidden
            layer.build((case["batch_size"], case["seq_len"], in_size))
            layer.set_weights([v.astype(np.float32) for v in values])
            layers.append(layer)
        return layers

    def _cudnn_ok(self):
        """Keras's own test for its cuDNN path (None where the backend has none to ask)."""
        test = getattr(self.keras.src.backend, "cudnn_ok", None)
        if test is None or self.cell not in ("lstm", "gru"):
            return None if test is None else False
        import inspect

        cell = self.layers[0].cell
        args = (cell.activation, cell.recurrent_activation, False, cell.use_bias)
        gru = {"reset_after": True} if self.cell == "gru" and "reset_after" in inspect.signature(test).parameters else {}
        try:
            return bool(test(*args, **gru))
        except Exception:
            return None

    def _set_precision(self) -> None:
        tf32 = self.case["dtype"] == "tf32"
        if self.backend == "jax":
            import jax

            jax.config.update("jax_default_matmul_precision",
                              {"fp32": "highest", "tf32": "tensorfloat32"}.get(self.case["dtype"]))
        elif self.backend == "torch":
            import torch

            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
        elif self.backend == "tensorflow":
            import tensorflow as tf

            tf.config.experimental.enable_tensor_float_32_execution(tf32)

    def before_call(self) -> None:
        self._set_precision()

    def _stack(self, call, x, h0, c0=None):
        """Run the layers; ``call(k, layer, inputs, initial_state, mask)`` -> Keras's outputs list
        (``mask`` ``[B, T]``: a variable-length batch's valid steps, or None)."""
        layer_input, hs, cs = x, [], []
        for k, layer in enumerate(self.layers):
            initial = [h0[k], c0[k]] if self.lstm else [h0[k]]
            outs = call(k, layer, layer_input, initial, self.mask)
            layer_input = outs[0]
            hs.append(outs[1])
            if self.lstm:
                cs.append(outs[2])
        return layer_input, hs, cs

    def _batch_first(self, arrays: dict) -> dict:
        """The arrays as the step needs them: batch-major, and for a variable-length batch the
        mask of valid steps (``mask`` ``[B, T]`` bool for the layers, ``valid`` ``[B, T, 1]``
        float32 for the loss) and each sequence's last step (``last`` ``[B, T, 1]`` one-hot)."""
        target = arrays["target"]
        out = {"x": arrays["x"].transpose(1, 0, 2), "h0": arrays["h0"], "c0": arrays["c0"],
               "target": target.transpose(1, 0, 2) if target.ndim == 3 else target,
               "target_h": arrays["target_h"], "target_c": arrays["target_c"]}
        lengths = arrays.get("lengths")
        if lengths is not None:
            steps = np.arange(self.case["seq_len"])[None, :]
            out["mask"] = steps < lengths[:, None]
            out["valid"] = out["mask"][..., None].astype(np.float32)
            out["last"] = (steps == lengths[:, None] - 1)[..., None].astype(np.float32)
        return out

    def _loss(self, output, finals, t: dict):
        """The runner's loss (:func:`rnnbench.workload.loss_of`) in float32 with ``keras.ops``
        (so one definition serves every backend): ``output`` ``[B, T, H]``, ``finals`` stacked
        ``[L, B, H]``; ``t`` holds the targets and, for a variable-length batch, ``valid`` and
        ``last`` (see :meth:`_batch_first`)."""
        ops = self.keras.ops
        y, target = ops.cast(output, "float32"), t["target"]
        if "valid" not in t:
            y = y if self.case["loss"] == "all_steps" else y[:, -1]
        elif self.case["loss"] == "all_steps":  # padded steps count for nothing
            y, target = y * t["valid"], target * t["valid"]
        else:  # each sequence's own last step
            y = ops.sum(y * t["last"], axis=1)
        total = ops.sum(ops.square(y - target))
        for state, key in zip(finals, ("target_h", "target_c")):
            total = total + ops.sum(ops.square(ops.cast(state, "float32") - t[key]))
        return 0.5 * total / output.shape[0]

    @staticmethod
    def _split_grads(grads: list, n_leaves: int, params: list) -> tuple:
        """``(grad of each leaf..., per-layer grads)`` from one flat list of gradients."""
        g_layers, at = [], n_leaves
        for layer in params:
            g_layers.append(grads[at:at + len(layer)])
            at += len(layer)
        return grads[:n_leaves], g_layers

    def _finish(self, to_np, values, grads=None, n_leaves=0, params=()) -> dict:
        """Canonical arrays from a step's result: ``values`` (output, h_n[, c_n]) and the flat
        gradients (leaves, then every layer's weights)."""
        values = [to_np(v) for v in values]
        c_n = values[2] if self.lstm else None
        if grads is None:
            return self._collect(values[0], values[1], c_n)
        g_leaves, g_layers = self._split_grads([to_np(g) for g in grads], n_leaves, params)
        return self._collect(values[0], values[1], c_n,
                             (g_leaves[0], g_leaves[1], g_leaves[2] if self.lstm else None, g_layers))

    def _collect(self, output, h_n, c_n, grads=None) -> dict:
        """Canonical, time-major float32 arrays from numpy values."""
        out = {"output": output.transpose(1, 0, 2), "h_n": h_n}
        if self.lstm:
            out["c_n"] = c_n
        if grads is not None:
            g_x, g_h0, g_c0, g_layers = grads
            out["grad_x"], out["grad_h0"] = g_x.transpose(1, 0, 2), g_h0
            if self.lstm:
                out["grad_c0"] = g_c0
            out.update({f"grad_{n}": g for n, g in grads_from_keras(self.cell, g_layers).items()})
        return {n: np.asarray(v, dtype=np.float32) for n, v in out.items()}

    def first_call(self):
        self.spy.reset()
        with self.spy:
            result = super().first_call()
        self.extra["keras_cudnn"], self.extra["keras_path"] = self.spy.cudnn, self.spy.path
        return result

    def run(self):
        with self._on_device():
            return self._run()

    peak_memory = None
    mask = None  # [B, T] valid steps of a variable-length batch, as a backend tensor

    def sample(self, budget_s: float, min_runs: int, max_runs: int) -> list[float]:
        result = super().sample(budget_s, min_runs, max_runs)
        if self.peak_memory is not None:
            self.extra["peak_mem_bytes"] = int(self.peak_memory())
        return result

    # --- per backend ---

    def _prepare_backend(self, arrays: dict, threads) -> None:
        getattr(self, f"_prepare_{self.backend}")(self._batch_first(arrays), threads)

    def _prepare_jax(self, a: dict, threads) -> None:
        import jax
        import jax.numpy as jnp

        device = jax.devices("gpu" if self.case["device"] == "cuda" else "cpu")[0]
        put = lambda v, dtype=self.dtype: jax.device_put(jnp.asarray(v, dtype=dtype), device)  # noqa: E731
        params = [[put(v.value) for v in layer.trainable_variables] for layer in self.layers]
        fixed = [[v.value for v in layer.non_trainable_variables] for layer in self.layers]
        leaves = [put(a["x"]), put(a["h0"])] + ([put(a["c0"])] if self.lstm else [])
        t = {k: put(a[k], "float32") for k in ("target", "target_h", "target_c", "valid", "last") if k in a}
        self.mask = put(a["mask"], bool) if "mask" in a else None

        def loss(params, *leaves):
            def call(k, layer, inputs, initial, mask):
                outs, _ = layer.stateless_call(params[k], fixed[k], inputs, initial_state=initial, mask=mask)
                return outs

            output, hs, cs = self._stack(call, *leaves)
            finals = [jnp.stack(hs)] + ([jnp.stack(cs)] if self.lstm else [])
            return self._loss(output, finals, t), (output, *finals)

        if self.train:
            fn = jax.jit(jax.grad(loss, argnums=tuple(range(len(leaves) + 1)), has_aux=True))
        else:
            fn = jax.jit(lambda params, *leaves: loss(params, *leaves)[1])
        args = (params, *leaves)
        self._run = lambda: jax.block_until_ready(fn(*args))

        def outputs(result):
            to_np = lambda v: np.asarray(jax.device_get(v)).astype(np.float32)  # noqa: E731
            if not self.train:
                return self._finish(to_np, result)
            (g_params, *g_leaves), values = result
            return self._finish(to_np, values, [*g_leaves, *(g for layer in g_params for g in layer)],
                                len(g_leaves), g_params)

        self.outputs = outputs
        self.extra["jax_backend"] = device.platform

    def _prepare_torch(self, a: dict, threads) -> None:
        import torch

        if threads:
            torch.set_num_threads(int(threads))
        device = torch.device("cuda" if self.case["device"] == "cuda" else "cpu")
        self.timer = "cuda" if device.type == "cuda" else "cpu"
        dtype = getattr(torch, self.dtype)
        put = lambda v, dt=dtype: torch.as_tensor(v).to(device=device, dtype=dt)  # noqa: E731
        leaves = [put(a["x"]), put(a["h0"])] + ([put(a["c0"])] if self.lstm else [])
        t = {k: put(a[k], torch.float32) for k in ("target", "target_h", "target_c", "valid", "last") if k in a}
        self.mask = put(a["mask"], torch.bool) if "mask" in a else None
        params = [[v.value for v in layer.trainable_variables] for layer in self.layers]
        flat = [p for layer in params for p in layer]

        def network():
            output, hs, cs = self._stack(
                lambda k, layer, inputs, initial, mask: layer(inputs, initial_state=initial, mask=mask), *leaves)
            return output, [torch.stack(hs)] + ([torch.stack(cs)] if self.lstm else [])

        if self.train:
            for leaf in leaves:
                leaf.requires_grad_(True)

            def run():
                output, finals = network()
                grads = torch.autograd.grad(self._loss(output, finals, t), [*leaves, *flat])
                return (output.detach(), *(f.detach() for f in finals)), grads
        else:

            def run():
                with torch.no_grad():
                    output, finals = network()
                    return (output, *finals), None

        self._run = run
        if device.type == "cuda":  # peak device memory of this step, as the runner reports for torch lanes
            torch.cuda.reset_peak_memory_stats()
            self.peak_memory = torch.cuda.max_memory_allocated

        def outputs(result):
            values, grads = result
            return self._finish(lambda v: v.detach().float().cpu().numpy(), values, grads, len(leaves), params)

        self.outputs = outputs

    def _prepare_tensorflow(self, a: dict, threads) -> None:
        import tensorflow as tf

        dtype = getattr(tf, self.dtype)
        put = lambda v, dt=dtype: tf.cast(tf.constant(v), dt)  # noqa: E731
        leaves = [put(a["x"]), put(a["h0"])] + ([put(a["c0"])] if self.lstm else [])
        t = {k: put(a[k], tf.float32) for k in ("target", "target_h", "target_c", "valid", "last") if k in a}
        self.mask = tf.constant(a["mask"]) if "mask" in a else None
        params = [[v.value for v in layer.trainable_variables] for layer in self.layers]
        flat = [p for layer in params for p in layer]

        def network(*leaves):
            output, hs, cs = self._stack(
                lambda k, layer, inputs, initial, mask: layer(inputs, initial_state=initial, mask=mask), *leaves)
            return output, [tf.stack(hs)] + ([tf.stack(cs)] if self.lstm else [])

        if self.train:

            @tf.function
            def fn(*leaves):
                with tf.GradientTape() as tape:
                    tape.watch(leaves)
                    output, finals = network(*leaves)
                    loss = self._loss(output, finals, t)
                return (output, *finals), tape.gradient(loss, [*leaves, *flat])
        else:

            @tf.function
            def fn(*leaves):
                output, finals = network(*leaves)
                return (output, *finals), None

        sync = getattr(getattr(tf.test, "experimental", None), "sync_devices", None)

        def run():
            result = fn(*leaves)
            if sync is not None and self.case["device"] == "cuda":
                sync()
            return result

        self._run = run

        def outputs(result):
            values, grads = result
            return self._finish(lambda v: tf.cast(v, tf.float32).numpy(), values, grads, len(leaves), params)

        self.outputs = outputs


class CudnnSpy:
    """Within the block, notes whether a cuDNN kernel of the backend was called (and returned),
    and whether the backend's fused ``lstm``/``gru`` answered or Keras fell back to its loop."""

    TARGETS = {"torch": ("keras.src.backend.torch.rnn", ("_cudnn_lstm", "_cudnn_gru")),
               "jax": ("jax.experimental.rnn", ("lstm",)),
               "tensorflow": ("keras.src.backend.tensorflow.rnn", ("_cudnn_lstm", "_cudnn_gru"))}

    def __init__(self, backend: str):
        self.backend = backend
        self.reset()

    def reset(self) -> None:
        self.cudnn, self.path = False, "generic"

    def __enter__(self):
        import importlib

        self._patched = []
        module_name, names = self.TARGETS.get(self.backend, ("", ()))
        targets = [(importlib.import_module(module_name), n, self._on_cudnn) for n in names] if module_name else []
        backend = importlib.import_module("keras.src.backend")
        targets += [(backend, n, self._on_backend) for n in ("lstm", "gru")]
        for module, name, wrap in targets:
            original = getattr(module, name, None)
            if original is not None:
                setattr(module, name, wrap(original))
                self._patched.append((module, name, original))
        return self

    def __exit__(self, *exc) -> None:
        for module, name, original in reversed(self._patched):
            setattr(module, name, original)

    def _on_cudnn(self, original):
        def spy(*args, **kwargs):
            result = original(*args, **kwargs)
            self.cudnn = True
            return result

        return spy

    def _on_backend(self, original):
        def spy(*args, **kwargs):
            result = original(*args, **kwargs)  # NotImplementedError: Keras falls back to its loop
            self.path = "backend"
            return result

        return spy


def make_step(request: dict) -> KerasStep:
    if request["lane"] != "keras":
        raise ValueError(f"the Keras worker has no lane {request['lane']!r}")
    return KerasStep(request)


def main() -> None:
    streams = protocol_streams()  # before Keras is imported: nothing it prints can reach the replies
    import keras

    hello = {"keras": keras.__version__, "backend": keras.backend.backend(),
             "KERAS_BACKEND": os.environ.get("KERAS_BACKEND")}
    serve(make_step, hello, streams)


if __name__ == "__main__":
    main()
