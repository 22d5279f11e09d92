"""Our fused recurrent kernels (Triton), one folder per cell family.

- ``<cell>/kernels.py``: forward and backward kernels, each one launch for all time steps of one
  layer and direction; ``<cell>/naive.py``: the same layer, readable, calling
  :mod:`rnnbench.reference`.
- ``recurrence.py``: the autograd Function gluing them to the input projection and the weight
  gradients (large torch matmuls); ``common.py``: shared tiles and barrier; ``plans.py``: the launch plan;
  ``floor.py``: kernels that measure the per-step floor (barrier alone, barrier + small dot).
- ``naive.py``: whole readable networks (layers, directions) from the per-cell naive layers.
- ``loop.py``: a layer as a loop of torch's cells (recurrent dropout and layer norm where no kernel
  takes them); imports no Triton.

Importing :mod:`rnnbench.ops.recurrence` imports Triton and compiles nothing; set
``TRITON_INTERPRET=1`` *before* that import to run the kernels on CPU tensors. See
``docs/kernels.md``.
"""
