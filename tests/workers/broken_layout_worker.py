"""A real framework worker with one layout conversion broken on purpose, to show that the
verification catches it. Usage: ``python broken_layout_worker.py MODULE BREAKAGE``:

- ``keras gru-gates``: Keras's GRU gate blocks left in torch's order (r, z, n), not swapped;
- ``keras lstm-bias``: the merged Keras bias takes ``b_ih`` alone, dropping ``b_hh``;
- ``keras no-transpose-back``: ``grad_x`` left batch-major... shaped back without transposing;
- ``jax cudnn-order``: the cuDNN flat vector with each layer's biases before its matrices.
"""

from __future__ import annotations

import sys

import numpy as np

module, breakage = sys.argv[1], sys.argv[2]

if module == "keras":
    from rnnbench.workers import keras_worker as worker

    if breakage == "gru-gates":
        worker.KERAS_GATES["gru"] = (0, 1, 2)
    elif breakage == "lstm-bias":
        original = worker.to_keras

        def to_keras(cell, weights, num_layers):
            weights = {n: (np.zeros_like(w) if n.startswith("bias_hh") else w) for n, w in weights.items()}
            return original(cell, weights, num_layers)

        worker.to_keras = to_keras
    elif breakage == "no-transpose-back":
        original_collect = worker.KerasStep._collect

        def _collect(self, output, h_n, c_n, grads=None):
            out = original_collect(self, output, h_n, c_n, grads)
            if "grad_x" in out:
                t, b, i = out["grad_x"].shape
                out["grad_x"] = np.ascontiguousarray(out["grad_x"].transpose(1, 0, 2)).reshape(t, b, i)
            return out

        worker.KerasStep._collect = _collect
elif module == "jax":
    from rnnbench.workers import jax_worker as worker

    if breakage == "cudnn-order":
        def cudnn_shapes(input_size, hidden_size, num_layers, gates=4):
            g, out = gates * hidden_size, []
            for k in range(num_layers):
                out += [(f"bias_ih_l{k}", (g,)), (f"bias_hh_l{k}", (g,)),
                        (f"weight_ih_l{k}", (g, input_size if k == 0 else hidden_size)),
                        (f"weight_hh_l{k}", (g, hidden_size))]
            return out

        worker.cudnn_shapes = cudnn_shapes
else:
    raise SystemExit(f"unknown module {module!r}")

worker.main()
