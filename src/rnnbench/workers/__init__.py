"""The other side of worker lanes: one process per framework (see :mod:`rnnbench.lanes.worker`).

A worker is started as ``python -m rnnbench.workers.<framework>_worker``. It imports its own
framework and never torch unless torch *is* its framework (``keras-torch``): two frameworks in one
process fight over GPU memory and over their cuDNN builds. Nothing here may import
:mod:`rnnbench.lanes` (whose ``__init__`` loads the torch lanes); :mod:`rnnbench.timing` is safe.

Each worker module holds its framework's layout conversion from the canonical (torch.nn) weights,
both ways, in plain numpy so that the tests can check it without the framework.
"""
