"""Implementations ("lanes") of the recurrent layers; importing this registers them all.

Import order is registration order, which is the order lanes appear in tables.
"""

from . import torch_nn  # noqa: F401, I001  (registration side effect; order matters)
from . import cell_loop  # noqa: F401
from . import fused_loop  # noqa: F401
from . import triton  # noqa: F401  (rnnbench.ops kernels; CPU only under TRITON_INTERPRET=1)
from . import torch_compile  # noqa: F401
from . import frameworks  # noqa: F401
from .registry import LANES, Lane, get_lane, register

__all__ = ["LANES", "Lane", "get_lane", "register"]
