"""The language model and its presets."""

import pytest
import torch

from rnnbench.errors import UsageError
from rnnbench.lm.model import RNNModel
from rnnbench.lm.presets import PRESETS, LMConfig, get_preset


@pytest.mark.parametrize("rnn", ["LSTM", "GRU", "RNN_TANH", "rnn_relu"])
@pytest.mark.parametrize("lane", ["torch-nn", "torch-cell-loop", "torch-fused-loop"])
def test_forward_shapes(rnn, lane):
    model = RNNModel(vocab_size=11, rnn=rnn, emb_size=6, hidden_size=5, num_layers=2, lane=lane)
    hidden = model.init_hidden(3)
    logits, hidden = model(torch.zeros(4, 3, dtype=torch.int64), hidden)
    assert logits.shape == (4, 3, 11)
    h = hidden[0] if isinstance(hidden, tuple) else hidden
    assert h.shape == (2, 3, 5)


def test_tied_weights_share_the_embedding():
    model = RNNModel(vocab_size=11, emb_size=8, hidden_size=8, tied=True)
    assert model.decoder.weight is model.encoder.weight


def test_tied_with_mismatched_sizes_is_rejected():
    with pytest.raises(UsageError, match="--tied needs emb_size == hidden_size, got 8 and 16"):
        RNNModel(vocab_size=11, emb_size=8, hidden_size=16, tied=True)
    with pytest.raises(UsageError, match="--tied"):
        get_preset("small").override(tied=True, emb_size=32)


def test_cuda_graph_lane_is_rejected():
    with pytest.raises(UsageError, match="CUDA graph"):
        RNNModel(vocab_size=11, lane="torch-nn-graph")


def test_unknown_rnn_and_lane():
    with pytest.raises(UsageError, match="unknown rnn 'LSTMX'"):
        RNNModel(vocab_size=11, rnn="LSTMX")
    with pytest.raises(UsageError, match="unknown lane"):
        get_preset("small").override(lane="nope")


def test_presets_match_their_sources():
    kawakami = PRESETS["kawakami-2017"]  # seed 002's command line
    assert (kawakami.emb_size, kawakami.hidden_size, kawakami.num_layers, kawakami.tied) == (1024, 1024, 1, False)
    assert (kawakami.optimizer, kawakami.lr, kawakami.dropout, kawakami.clip) == ("adam", 2e-4, 0.5, 0.1)
    assert (kawakami.batch_size, kawakami.bptt, kawakami.epochs, kawakami.seed) == (128, 128, 10, 1234)
    large = PRESETS["zaremba-large"]  # Zaremba et al. 2014, PTB large
    assert (large.hidden_size, large.num_layers, large.dropout, large.batch_size, large.bptt) == (1500, 2, 0.65, 20, 35)
    assert (large.optimizer, large.lr, large.tied) == ("sgd", 1.0, False)
    assert all(isinstance(p, LMConfig) for p in PRESETS.values())


def test_override_ignores_unset_options_and_validates():
    config = get_preset("kawakami-2017").override(lr=None, epochs=2, rnn="gru")
    assert (config.lr, config.epochs, config.rnn) == (2e-4, 2, "GRU")
    for bad in ({"dropout": 1.0}, {"batch_size": 0}, {"optimizer": "rmsprop"}, {"amp": "fp8"},
                {"clip": -1.0}, {"lr": 0.0}, {"max_minutes": -2.0}, {"device": "tpu"}):
        with pytest.raises(UsageError):
            get_preset("small").override(**bad)
    with pytest.raises(UsageError, match="unknown preset"):
        get_preset("huge")
