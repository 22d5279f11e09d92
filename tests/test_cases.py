"""rnnbench.cases: a Case validates itself, has a readable key, and grids expand in order."""

from __future__ import annotations

import dataclasses

import pytest

from rnnbench.cases import CELLS, FIELDS, SIZE_FIELDS, Case, expand_grid, unique
from rnnbench.errors import UsageError


def test_defaults_are_valid_and_key_is_readable():
    case = Case()
    assert case.key == "lstm-B32-T30-I128-H128-L1-fp32-train-all_steps-cpu"
    assert Case(cell="gru", batch_size=3, seq_len=37, input_size=5, hidden_size=37, num_layers=2,
                dtype="bf16", mode="forward", loss="last_step", device="cuda").key == \
        "gru-B3-T37-I5-H37-L2-bf16-forward-last_step-cuda"


@pytest.mark.parametrize("field, value", [
    ("cell", "foo"), ("cell", "LSTM"), ("dtype", "fp64"), ("mode", "backward"),
    ("loss", "mean"), ("device", "gpu"),
])
def test_unknown_names_raise(field, value):
    with pytest.raises(UsageError, match=f"unknown {field}"):
        Case(**{field: value})


@pytest.mark.parametrize("field", SIZE_FIELDS)
@pytest.mark.parametrize("value", [0, -1, 2.0, 2.5, "8", True, False, None],
                         ids=["zero", "negative", "float-integral", "float", "str", "True", "False", "None"])
def test_sizes_must_be_positive_integers(field, value):
    with pytest.raises(UsageError, match=f"{field} must be a positive integer"):
        Case(**{field: value})


def test_usage_error_is_a_value_error():
    # callers that catch ValueError (e.g. typer) still see bad input
    with pytest.raises(ValueError):
        Case(batch_size=0)


def test_tf32_only_on_cuda():
    with pytest.raises(UsageError, match="tf32"):
        Case(dtype="tf32", device="cpu")
    assert Case(dtype="tf32", device="cuda").dtype == "tf32"  # construction does not need a GPU


def test_absurd_sizes_rejected():
    with pytest.raises(UsageError, match="too large"):
        Case(hidden_size=1_000_000)
    with pytest.raises(UsageError, match="too large"):
        Case(batch_size=2**20, seq_len=2**20, input_size=64, hidden_size=64)


def test_case_is_frozen_hashable_and_replace_validates():
    case = Case()
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.batch_size = 4
    assert len({case, Case(), case.replace(mode="forward")}) == 2
    assert case.replace(hidden_size=7).hidden_size == 7 and case.hidden_size == 128
    with pytest.raises(UsageError):
        case.replace(hidden_size=0)


def test_to_dict_roundtrips():
    case = Case(cell="rnn_relu", batch_size=3, num_layers=2)
    d = case.to_dict()
    assert tuple(d) == FIELDS
    assert Case(**d) == case


@pytest.mark.parametrize("cell, gates", [("rnn_tanh", 1), ("rnn_relu", 1), ("lstm", 4), ("gru", 3)])
def test_num_weights_matches_torch_nn(cell, gates):
    import torch

    from rnnbench.lanes.torch_nn import build_torch_nn

    case = Case(cell=cell, input_size=5, hidden_size=7, num_layers=3)
    assert case.num_gates == gates
    module = build_torch_nn(cell, 5, 7, 3)
    assert case.num_weights == sum(p.numel() for p in module.parameters())
    assert isinstance(module, torch.nn.Module)


def test_expand_grid_order_and_scalars():
    cases = expand_grid({"cell": ["lstm", "gru"], "hidden_size": [8, 16], "batch_size": 2})
    assert [(c.cell, c.hidden_size) for c in cases] == [("lstm", 8), ("lstm", 16), ("gru", 8), ("gru", 16)]
    assert all(c.batch_size == 2 for c in cases)
    assert all(c.input_size == Case.input_size for c in cases)  # untouched fields keep defaults


def test_expand_grid_input_size_hidden():
    cases = expand_grid({"hidden_size": [8, 33], "input_size": "hidden"})
    assert [(c.input_size, c.hidden_size) for c in cases] == [(8, 8), (33, 33)]
    # without a hidden size in the grid, "hidden" means the default hidden size
    assert expand_grid({"input_size": "hidden"})[0].input_size == Case().hidden_size


def test_expand_grid_rejects_unknown_fields_and_bad_values():
    with pytest.raises(UsageError, match="unknown case field"):
        expand_grid({"hiden_size": 8})
    with pytest.raises(UsageError):
        expand_grid({"cell": ["lstm", "foo"]})
    with pytest.raises(UsageError):
        expand_grid({"batch_size": [4, 0]})


def test_unique_keeps_first_seen_order():
    a, b = Case(cell="gru"), Case(cell="lstm")
    assert unique([a, b, a, Case(cell="gru"), b]) == [a, b]


def test_cells_constant():
    assert CELLS == ("rnn_tanh", "rnn_relu", "lstm", "gru")
