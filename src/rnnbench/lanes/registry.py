"""The lane registry: one entry per implementation family.

A lane answers one question: *give me a step for this case* (:func:`rnnbench.workload.lane_step`).
A torch lane does it by building a recurrent module for a cell and loading the canonical weights
(torch.nn layout, see :mod:`rnnbench.reference`) into it; every such module follows torch.nn's
calling convention: ``module(x [T, B, I], hx) -> (output [T, B, H], h_n)`` where ``hx`` and ``h_n``
are ``[L, B, H]``, or a pair ``(h, c)`` of those for LSTM. A lane of another framework gives its
own ``prepare(case, inputs) -> Step`` instead. Adding a lane is one module and one
:func:`register` call.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from ..cases import CELLS, DEVICES, DTYPES, Case
from ..errors import UsageError
from ..precision import TORCH_DTYPE, device_supports


def load_state_dict(module: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Copy canonical weights into a module whose parameters already carry torch.nn's names."""
    module.load_state_dict(weights, strict=True)


@dataclass(frozen=True)
class Lane:
    """One implementation family.

    Attributes:
        name: registry key, e.g. ``torch-nn``.
        summary: one line for ``rnnbench list``.
        build: ``(cell, input_size, hidden_size, num_layers) -> nn.Module`` as described above
            (None for a lane with its own ``prepare``).
        load: copies canonical weights into a built module.
        canonical_name: maps a module parameter name to its canonical (torch.nn) name.
        cuda_graph: the runner captures the step in a CUDA graph and times its replay.
        requires: Python packages the lane imports; missing ones make it unavailable.
        prepare: ``(case, inputs) -> Step`` for lanes that are not a torch module (see
            :class:`rnnbench.workload.Step`); None: the torch module path.
        lengths: how the lane meets a variable-length batch: ``packed``, ``masked``, ``padded``
            (see :func:`rnnbench.workload.module_call`), or None: it cannot.
        variable_lengths_only: the lane exists to be compared on variable-length batches.
        check: ``device -> None or a one-line reason`` for what ``requires`` cannot say (a
            compiler, a framework's CUDA plugin, an interpreter of another environment). Cheap:
            ``rnnbench list`` calls it for every lane.
    """

    name: str
    summary: str
    build: Callable[[str, int, int, int], nn.Module] | None
    load: Callable[[nn.Module, dict], None] = load_state_dict
    cells: tuple[str, ...] = CELLS
    devices: tuple[str, ...] = DEVICES
    dtypes: tuple[str, ...] = DTYPES
    cuda_graph: bool = False
    requires: tuple[str, ...] = ()
    canonical_name: Callable[[str], str] = lambda name: name
    prepare: Callable | None = None
    lengths: str | None = None
    variable_lengths_only: bool = False
    check: Callable[[str], str | None] | None = None
    # device -> (dtypes the lane runs there, why not the others): a limit of one device only.
    device_dtypes: dict | None = None

    def final_states(self, case: Case) -> bool:
        """Whether this lane's step of ``case`` returns ``h_n``/``c_n`` (a padded lane cannot)."""
        return not (case.lengths and self.lengths == "padded")

    def unavailable(self, device: str) -> str | None:
        """None if the lane can run on ``device`` here, else a one-line reason."""
        for package in self.requires:
            if importlib.util.find_spec(package) is None:
                return f"package {package!r} is not installed"
        if device not in self.devices:
            return f"runs on {', '.join(self.devices)} only"
        if device == "cuda" and not torch.cuda.is_available():
            return "no CUDA device is visible"
        return self.check(device) if self.check is not None else None

    def skip_reason(self, case: Case) -> str | None:
        """None if this lane applies to ``case``, else why not (one line)."""
        if case.cell not in self.cells:
            return f"no {case.cell} cell"
        if case.dtype not in self.dtypes:
            return f"no {case.dtype} support"
        allowed, why = (self.device_dtypes or {}).get(case.device, (self.dtypes, ""))
        if case.dtype not in allowed:
            return f"no {case.dtype} on {case.device}: {why}"
        if case.lengths and self.lengths is None:
            return "no variable-length support"
        if self.variable_lengths_only and not case.lengths:
            return "measures variable-length batches only (--lengths)"
        return self.unavailable(case.device) or device_supports(case.device, case.dtype)

    def module_for(self, case: Case, weights: dict[str, torch.Tensor]) -> nn.Module:
        """A module for ``case`` holding ``weights``, on the case's device, in its dtype."""
        module = self.build(case.cell, case.input_size, case.hidden_size, case.num_layers)
        self.load(module, weights)
        return module.to(device=case.device, dtype=TORCH_DTYPE[case.dtype])


LANES: dict[str, Lane] = {}


def register(lane: Lane) -> Lane:
    if lane.name in LANES:
        raise ValueError(f"lane {lane.name!r} registered twice")
    LANES[lane.name] = lane
    return lane


def get_lane(name: str) -> Lane:
    """The lane called ``name``. Raises UsageError for an unknown name."""
    if name not in LANES:
        raise UsageError(f"unknown lane {name!r}; choose from {', '.join(LANES)}")
    return LANES[name]
