"""A TF32 layer at most ``plans.STRICT_TF32_MAX_HIDDEN`` units wide multiplies as strict fp32 does
(``plans.layer_precision``): its recurrence, input projection and gradients, and the torch products
it falls back on (``products.cublas_at``). Planned and checked without a GPU."""

from __future__ import annotations

import pytest
import torch

from rnnbench.precision import matmul_mode


@pytest.fixture
def planned_for_cuda(monkeypatch):
    """Precisions as on CUDA (the interpreter multiplies everything as IEEE fp32)."""
    from rnnbench.ops import plans

    monkeypatch.setattr(plans, "INTERPRET", False)


@pytest.mark.usefixtures("planned_for_cuda")
def test_tf32_turns_strict_up_to_16_units():
    from rnnbench.ops.plans import STRICT_TF32_MAX_HIDDEN, layer_precision
    from rnnbench.ops.recurrence import _setting, strict_fp32

    assert STRICT_TF32_MAX_HIDDEN == 16
    with matmul_mode("tf32"):
        assert [layer_precision(torch.float32, h) for h in (1, 16, 17, 100)] == ["tf32x3", "tf32x3", "tf32", "tf32"]
        with strict_fp32("ieee"):
            # (the launch's key: the precision every product of the layer takes)
            assert _setting("rnn_tanh", 64, 1, torch.float32, torch.device("cuda"))[5] == "ieee"
        assert _setting("lstm", 64, 1, torch.float32, torch.device("cuda"))[5] == "tf32x3"
        assert _setting("lstm", 64, 17, torch.float32, torch.device("cuda"))[5] == "tf32"
        assert layer_precision(torch.bfloat16, 1) == "ieee"
    with matmul_mode("fp32"):
        assert layer_precision(torch.float32, 100) == "tf32x3"


def test_torch_products_follow_a_strict_precision():
    """Inside ``cublas_at``, float32 products with TF32 on are strict where the kernels' precision
    is; the switch comes back after the block, an error in it too; TF32 precision and half types
    leave it alone."""
    from rnnbench.ops.products import cublas_at

    with matmul_mode("tf32"):
        for precision in ("tf32x3", "ieee"):
            with cublas_at(precision, torch.float32):
                assert not torch.backends.cuda.matmul.allow_tf32
            assert torch.backends.cuda.matmul.allow_tf32
        with pytest.raises(KeyError), cublas_at("tf32x3", torch.float32):
            raise KeyError("inside")
        assert torch.backends.cuda.matmul.allow_tf32
        for precision, dtype in (("tf32", torch.float32), ("ieee", torch.bfloat16)):
            with cublas_at(precision, dtype):
                assert torch.backends.cuda.matmul.allow_tf32
    with matmul_mode("fp32"), cublas_at("tf32x3", torch.float32):
        assert not torch.backends.cuda.matmul.allow_tf32


def test_the_fallbacks_to_torch_products_take_the_layers_precision(monkeypatch):
    """The input projection's F.linear and the gradients' torch products (where our launches do not
    take them) see TF32 off when the layer's precision is strict, on when it is TF32."""
    from rnnbench.ops import gradients, projection

    seen = []

    def record(result):
        def call(*args, **kwargs):
            seen.append(torch.backends.cuda.matmul.allow_tf32)
            return result(*args, **kwargs)
        return call

    monkeypatch.setattr(projection, "PROJECTION_MAX_FLOP", 0.0)
    monkeypatch.setattr(projection, "EVEN_MAX_FLOP", 0.0)
    monkeypatch.setattr(projection.F, "linear", record(torch.nn.functional.linear))
    monkeypatch.setattr(gradients, "fused", lambda *args: False)
    monkeypatch.setattr(gradients, "reference_gradients", record(gradients.reference_gradients))
    x, w = torch.randn(3, 2, 5), torch.randn(4, 5)
    d, h = torch.randn(6, 4), torch.randn(6, 1)
    with matmul_mode("tf32"):
        for precision in ("tf32x3", "tf32"):
            projection.input_projection(x, w, precision, False)
            gradients.layer_gradients(d, d, x.reshape(6, 5), h, w, (True,) * 5, precision, False)
    assert seen == [False, False, True, True]
