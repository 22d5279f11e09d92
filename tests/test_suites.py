"""rnnbench.suites: each suite expands to the cases its seed table implies."""

from __future__ import annotations

import itertools

import pytest

from rnnbench.errors import UsageError
from rnnbench.suites import SUITES, default_suites, suite_cases


def test_glample_2016():
    cases = suite_cases("glample-2016", "cuda")
    assert len(cases) == 8
    got = {(c.cell, c.hidden_size, c.mode) for c in cases}
    assert got == set(itertools.product(["rnn_tanh", "lstm"], [100, 500], ["train", "forward"]))
    assert {(c.batch_size, c.seq_len, c.input_size, c.num_layers, c.loss, c.dtype, c.device)
            for c in cases} == {(20, 30, 100, 1, "last_step", "fp32", "cuda")}


def test_theano_cudnn_2016():
    cases = suite_cases("theano-cudnn-2016", "cuda")
    assert len(cases) == 40  # 2 cells × 2 batches × 3 hidden × 2 modes + 2 cells × 2 seq × 2 hidden × 2 modes
    assert all(c.input_size == c.hidden_size for c in cases)
    one = [c for c in cases if c.num_layers == 1]
    three = [c for c in cases if c.num_layers == 3]
    assert len(one) == 24 and len(three) == 16
    assert {c.hidden_size for c in one} == {128, 512, 1024}
    assert {(c.batch_size, c.seq_len) for c in three} == {(128, 30), (128, 200)}
    assert {c.loss for c in cases} == {"all_steps"}


def test_fastrnns():
    cases = suite_cases("fastrnns", "cuda")
    assert len(cases) == 2
    assert {c.mode for c in cases} == {"train", "forward"}
    assert {(c.cell, c.batch_size, c.seq_len, c.input_size, c.hidden_size, c.num_layers) for c in cases} == \
        {("lstm", 64, 100, 512, 512, 1)}


def test_flashrnn_2024():
    cases = suite_cases("flashrnn-2024", "cuda")
    assert len(cases) == 4
    assert {(c.dtype, c.mode) for c in cases} == set(itertools.product(["bf16", "fp16"], ["train", "forward"]))
    assert {(c.batch_size, c.seq_len, c.input_size, c.hidden_size) for c in cases} == {(16, 1024, 768, 768)}


def test_quick_covers_every_cell_and_mode_and_is_small():
    cases = suite_cases("quick", "cpu")
    assert {c.cell for c in cases} == {"rnn_tanh", "rnn_relu", "lstm", "gru"}
    assert {(c.cell, c.mode) for c in cases} >= set(itertools.product(
        ["rnn_tanh", "rnn_relu", "lstm", "gru"], ["train", "forward"]))
    assert {c.num_layers for c in cases} == {1, 2}
    assert all(c.num_weights < 50_000 and c.activation_elements < 50_000 for c in cases)
    assert not SUITES["quick"].gpu_default


@pytest.mark.parametrize("name", list(SUITES))
def test_device_is_chosen_at_run_time_and_cases_unique(name):
    cpu, cuda = (suite_cases(name, d) for d in ("cpu", "cuda"))
    assert {c.device for c in cpu} == {"cpu"} and {c.device for c in cuda} == {"cuda"}
    assert len(cpu) == len(set(cpu)) == len(cuda)
    assert SUITES[name].source


def test_overrides_replace_fields():
    cases = suite_cases("glample-2016", "cpu", hidden_size=[8], batch_size=2)
    assert len(cases) == 4  # 2 cells × 1 hidden × 2 modes
    assert {(c.hidden_size, c.batch_size, c.seq_len) for c in cases} == {(8, 2, 30)}
    # "input = hidden" suites follow an overridden hidden size...
    tc = suite_cases("theano-cudnn-2016", "cpu", hidden_size=16, mode="forward")
    assert {(c.input_size, c.hidden_size, c.mode) for c in tc} == {(16, 16, "forward")}
    # ...unless the input size itself is overridden; duplicates collapse
    assert {c.input_size for c in suite_cases("theano-cudnn-2016", "cpu", input_size=4)} == {4}
    assert len(suite_cases("quick", "cpu", cell="gru", mode="train")) == 2


def test_overrides_are_validated():
    with pytest.raises(UsageError):
        suite_cases("quick", "cpu", cell="foo")
    with pytest.raises(UsageError):
        suite_cases("quick", "cpu", dtype="tf32")  # tf32 on the CPU
    with pytest.raises(UsageError, match="unknown case field"):
        suite_cases("quick", "cpu", colour="red")


def test_unknown_suite():
    with pytest.raises(UsageError, match="unknown suite 'nope'"):
        suite_cases("nope", "cpu")


def test_default_suites():
    assert default_suites("cpu") == ["quick"]
    on_gpu = default_suites("cuda")
    assert on_gpu == ["glample-2016", "theano-cudnn-2016", "fastrnns", "flashrnn-2024"]
    assert "quick" not in on_gpu
