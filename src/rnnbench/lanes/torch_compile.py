"""``torch-compile``: the fused cell loop (:mod:`.fused_loop`) with its per-step work compiled by
``torch.compile`` (Inductor).

What is compiled is one step of one layer: the recurrent matmul ``h @ W_hh.T + b_hh`` and the
gate math (:func:`~rnnbench.lanes.fused_loop.recurrent_step`). Every step and layer calls the same
compiled function, so compilation is paid once per case (forward, and the backward graph in
train mode) whatever the sequence length. Compiling the whole module instead makes Dynamo unroll
the Python loop over time: on the CPU here a 2-layer LSTM took 64 s to compile at seq 30 against
3 s for the step, and the unrolled graph grows with every step (seq 1024 in flashrnn-2024).

The first call holds the compilation and is reported as ``first_call_ms`` beside the steady-state
median. ``--compile-mode`` picks ``torch.compile``'s ``mode`` (``default``, ``reduce-overhead``:
CUDA graphs, ``max-autotune``: kernel autotuning); the row records it as ``compile_mode``.
Dynamo's caches are reset before each case, so no case inherits another's compilation (nor its
recompile count), while Inductor's on-disk cache stays as a user would have it.
"""

from __future__ import annotations

import importlib.util
import shutil

import torch

from . import options
from .fused_loop import FusedLoop, recurrent_step
from .registry import Lane, load_state_dict, register


class CompiledLoop(FusedLoop):
    """:class:`FusedLoop` whose per-step function is ``torch.compile``'d with ``mode``."""

    def __init__(self, cell: str, input_size: int, hidden_size: int, num_layers: int, mode: str = "default"):
        super().__init__(cell, input_size, hidden_size, num_layers)
        self.mode = mode

        def step(x_proj, w_hh, b_hh, state):
            return recurrent_step(cell, x_proj, w_hh, b_hh, state)

        self._compiled_step = torch.compile(step, mode=mode, fullgraph=True)

    def forward(self, x: torch.Tensor, hx, lengths: torch.Tensor | None = None):
        if self.mode == "reduce-overhead":
            # One iteration of CUDA-graph trees starts here (outputs of the last call may be reused).
            torch.compiler.cudagraph_mark_step_begin()
        return super().forward(x, hx, lengths)

    def _recurrent_step(self, x_proj, w_hh, b_hh, state):
        return self._compiled_step(x_proj, w_hh, b_hh, state)


def prepare(case, inputs):
    """The step of ``case`` (see :func:`rnnbench.workload.lane_step`), compiled on its first call."""
    from ..precision import TORCH_DTYPE
    from ..workload import TorchStep, module_call

    mode = options.current().compile_mode
    torch._dynamo.reset()  # no compiled code, guard or recompile count left from another case
    module = CompiledLoop(case.cell, case.input_size, case.hidden_size, case.num_layers, mode)
    load_state_dict(module, inputs.weights)
    module.to(device=case.device, dtype=TORCH_DTYPE[case.dtype])
    fn, names = module_call(module, case, inputs, lengths_mode=LANE_LENGTHS)
    return TorchStep(fn, names, case.device, extra={"compile_mode": mode, "compile_scope": "step"})


# A variable-length batch is masked as in the fused loop: the masking stays outside the compiled step.
LANE_LENGTHS = "masked"


def _inductor_missing(device: str) -> str | None:
    """Inductor writes C++ for the CPU and Triton for CUDA: None if the one needed is here."""
    if device == "cpu" and not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        return "torch.compile needs a C++ compiler on the CPU (g++ or clang++ not found)"
    if device == "cuda" and importlib.util.find_spec("triton") is None:
        return "torch.compile needs Triton on CUDA (package 'triton' is not installed)"
    return None


register(
    Lane(
        "torch-compile",
        "the fused loop's step (recurrent matmul + gates) under torch.compile (--compile-mode)",
        None,
        prepare=prepare,
        check=_inductor_missing,
        lengths=LANE_LENGTHS,
    )
)
