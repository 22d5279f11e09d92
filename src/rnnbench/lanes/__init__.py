"""Implementations ("lanes") of the recurrent layers; importing this registers them all."""

from . import cell_loop, fused_loop, torch_nn  # noqa: F401  (registration side effect)
from .registry import LANES, Lane, get_lane, register

__all__ = ["LANES", "Lane", "get_lane", "register"]
