"""GRU: Triton kernels (``kernels.py``) beside the readable layer they must match (``naive.py``)."""
