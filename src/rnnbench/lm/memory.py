"""How much memory a language-model run needs, estimated from its configuration before anything
is built, and a refusal when the machine cannot hold it.

``rnnbench lm --hidden-size 200000`` used to ask the allocator for 640 GB (a traceback), and
``--num-layers 100000`` spent a minute building layers before failing; both are now one line in
well under a second. The estimate counts the large tensors of a training step at its peak and
errs high (the recurrent activations are counted as a per-step cell loop keeps them, more than
cuDNN's reserve space); the same constants serve the micro-benchmark (:mod:`rnnbench.memory`).
"""

from __future__ import annotations

import torch

from .. import memory as shared_memory
from ..cases import GATES
from ..errors import UsageError
from .model import cell_name
from .presets import LMConfig

GIB = 2**30
# Bytes of one activation element: float32, or 2-byte floats under autocast.
ACTIVATION_BYTES = {"off": 4, "bf16": 2, "fp16": 2}
# Float32 tensors of [T*B, V] around the decoder at the peak of a step: the logits cast to
# float32 for the softmax, the log-softmax cross_entropy keeps, and their gradient.
LOGIT_FLOAT_COPIES = 3


def num_parameters(config: LMConfig, vocab_size: int) -> int:
    """Parameters of :class:`rnnbench.lm.model.RNNModel` for ``config``, counted from the sizes.

    Embedding ``V x E``; per recurrent layer ``G*H x (input + H)`` weights and two ``G*H`` biases
    (G gates: 4 LSTM, 3 GRU, 1 plain RNN; the input is E for the first layer, H after); decoder
    ``H x V`` (shared with the embedding when tied) and a ``V`` bias.
    """
    g = len(GATES[cell_name(config.rnn)])
    e, h, layers, v = config.emb_size, config.hidden_size, config.num_layers, vocab_size
    recurrent = g * h * (e + h + 2) + (layers - 1) * g * h * (2 * h + 2)
    decoder = (0 if config.tied else h * v) + v
    return v * e + recurrent + decoder


def training_bytes(config: LMConfig, vocab_size: int, tokens: int = 0) -> dict[str, int]:
    """Estimated peak bytes of training ``config`` over a vocabulary of ``vocab_size``.

    Returns a dict of parts, and their ``total``:

    - ``weights``: float32 parameters, their gradients, the optimiser's state (Adam: two
      moments; plain SGD: none), and under autocast a 2-byte copy of the weights;
    - ``activations``: one bptt window of ``batch_size`` streams (``T*B`` tokens): embedding
      output and dropout, the recurrent layers' saved tensors (per step and layer
      ``B x H x (SAVED_PER_GATE * G + SAVED_PER_STEP)``, as :mod:`rnnbench.memory` counts a cell
      loop), the output dropout, and the ``[T*B, V]`` logits with their float32 copies;
    - ``data``: the ``tokens`` of the three splits as int64 on the device.
    """
    n = num_parameters(config, vocab_size)
    a = ACTIVATION_BYTES[config.amp]
    cast_copy = 2 * n if config.amp != "off" else 0
    weights = 4 * n * (2 + (2 if config.optimizer == "adam" else 0)) + cast_copy
    g = len(GATES[cell_name(config.rnn)])
    t_b = config.bptt * config.batch_size
    per_token = (2 * config.emb_size  # embedding output, dropout
                 + config.num_layers * config.hidden_size
                 * (shared_memory.SAVED_PER_GATE * g + shared_memory.SAVED_PER_STEP)
                 + 2 * config.hidden_size)  # recurrent output, dropout
    activations = t_b * (a * per_token + (a + 4 * LOGIT_FLOAT_COPIES) * vocab_size)
    data = 8 * tokens
    return {"weights": weights, "activations": activations, "data": data,
            "total": weights + activations + data}


def check_fits(config: LMConfig, vocab_size: int, device: torch.device, tokens: int = 0) -> None:
    """Raise UsageError when training ``config`` cannot fit in ``device``'s available memory.

    Available: the kernel's ``MemAvailable`` on the CPU, free plus cached memory on CUDA
    (:func:`rnnbench.memory.available_bytes`); nothing is refused when it cannot be read. The
    model is built on the host before it moves to a GPU, so a CUDA run's parameters must also fit
    in host memory.

    Raises:
        UsageError: one line with the estimate, its largest part and what is available.
    """
    need = training_bytes(config, vocab_size, tokens)
    checks = [(device.type, need["total"])]
    if device.type == "cuda":
        checks.append(("cpu", 4 * num_parameters(config, vocab_size)))
    for where, needed in checks:
        free = shared_memory.available_bytes(where)
        if free is not None and needed > free:
            label = "GPU" if where == "cuda" else "host"
            raise UsageError(
                f"this model needs about {needed / GIB:,.1f} GiB of {label} memory (estimate: "
                f"weights with gradients and optimiser state {need['weights'] / GIB:,.1f} GiB, "
                f"activations of one bptt window {need['activations'] / GIB:,.1f} GiB), "
                f"{free / GIB:,.1f} GiB available; lower --hidden-size, --num-layers, --emb-size, "
                "--batch-size or --bptt")
