"""ops/preference.py's rule (where ``backend="auto"`` runs cuDNN) against the speed maps measured on
the H200 and kept in ``benchmarks/results/h200/speed-map/``: cuDNN wherever ours was under 0.8x
torch-nn's speed, ours wherever over 1.2x (between, either)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rnnbench.ops.preference import cudnn_faster, dtype_name
from rnnbench.results import read_records

MAPS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200" / "speed-map"


def measured() -> dict[tuple, float]:
    """(cell, dtype, mode, batch_size, hidden_size) -> torch-nn's ms_per_batch over ours, where
    both rows of a pair are ok, from every ``map.jsonl.gz`` kept (the latest row of a pair)."""
    latest = {}
    for path in sorted(MAPS.glob("*/map.jsonl.gz")):
        for row in read_records(path, "result"):
            latest[row["cell"], row["dtype"], row["mode"], row["batch_size"], row["hidden_size"], row["lane"]] = row
    ratios = {}
    for (*key, lane), ours in latest.items():
        base = latest.get((*key, "torch-nn"))
        if lane == "triton" and base and ours["status"] == base["status"] == "ok":
            ratios[tuple(key)] = base["ms_per_batch"] / ours["ms_per_batch"]
    return ratios


def test_the_rule_sends_to_cudnn_where_it_was_measured_faster_and_nowhere_we_are():
    ratios = measured()
    assert len(ratios) >= 250, len(ratios)  # (the kept maps: 261 timed pairs)
    assert {key[1] for key in ratios} == {"fp32", "tf32", "bf16", "fp16"}
    wrong = []
    for (cell, dtype, mode, batch, hidden), ratio in sorted(ratios.items()):
        says = cudnn_faster(cell, batch, hidden, dtype, grad=mode == "train")
        if (ratio < 0.8 and says is None) or (ratio > 1.2 and says is not None):
            wrong.append(f"{cell} {dtype} {mode} batch {batch} hidden {hidden}: {ratio:.2f}x, rule says {says}")
    assert not wrong, "\n".join(wrong)


def test_small_calls_strict_fp32_and_the_16_bit_rnn_stay_ours():
    """The seed suites' sizes (batch 20-128, hidden 100-1024) never leave our kernels; nor does
    strict fp32, nor the RNN outside TF32 training, at any size."""
    for cell in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        for dtype in ("fp32", "tf32", "bf16", "fp16"):
            for batch, hidden in ((20, 100), (128, 1024), (16, 768), (1, 2048)):
                assert cudnn_faster(cell, batch, hidden, dtype, grad=True) is None, (cell, dtype, batch, hidden)
        for grad in (True, False):
            assert cudnn_faster(cell, 1024, 4096, "fp32", grad) is None
    assert cudnn_faster("rnn_tanh", 1024, 2048, "bf16", grad=True) is None
    assert cudnn_faster("rnn_tanh", 1024, 2048, "tf32", grad=False) is None


def test_the_tf32_lstm_stays_ours_below_hidden_4096():
    """TF32's LSTM at batch 1024, hidden 2048 (training 1.01x cuDNN's speed, forward 1.05x, H200) stays
    on our kernels; at hidden 4096 (batch 512: 0.89x, 0.93x) and the GRU in TF32 (training 1.00x,
    forward 0.89x since a124e9d) go to cuDNN's, as does the bf16 LSTM's training at 1024 x 2048 (0.90x)."""
    for grad in (True, False):
        assert cudnn_faster("lstm", 1024, 2048, "tf32", grad) is None
        assert cudnn_faster("lstm", 512, 4096, "tf32", grad) is not None
        assert cudnn_faster("gru", 1024, 2048, "tf32", grad) is not None
    assert cudnn_faster("lstm", 1024, 2048, "bf16", grad=True) is not None


@pytest.mark.parametrize("dtype, precision, name", [
    (torch.float32, "tf32", "tf32"), (torch.float32, "tf32x3", "fp32"), (torch.float32, "ieee", "fp32"),
    (torch.bfloat16, "ieee", "bf16"), (torch.float16, "ieee", "fp16")])
def test_dtype_names_follow_the_kernels_precision(dtype, precision, name):
    assert dtype_name(dtype, precision) == name


def test_a_dtype_without_kernels_is_refused():
    with pytest.raises(ValueError, match="no kernel computes in torch.float64"):
        dtype_name(torch.float64, "ieee")
