"""Figures published by the seed benchmarks, for side-by-side display only.

These are other people's measurements on other hardware (a GTX Titan X, Maxwell, 2016), quoted
from ``shared/seeds``; they are never mixed into our results, and every table that shows them
labels them. Units: µs per example (time per batch / batch_size), train = forward + backward.
Each entry: the configuration it matches, then (cell, implementation, train µs, forward µs).
"""

from __future__ import annotations

GLAMPLE = "glample/rnn-benchmarks, GTX Titan X (published 2016)"
THEANO_CUDNN = "cudnn-rnn-benchmarks, GTX Titan X, cuDNN 5.1 (published 2016)"

_G = dict(batch_size=20, seq_len=30, input_size=100, num_layers=1, loss="last_step")


def _tc(batch_size, seq_len, hidden_size, num_layers):
    return dict(batch_size=batch_size, seq_len=seq_len, input_size=hidden_size, hidden_size=hidden_size,
                num_layers=num_layers, loss="all_steps")


def _theano_cudnn(b, t, h, layers, theano, cudnn_lstm, cudnn_gru):
    return (_tc(b, t, h, layers), THEANO_CUDNN,
            [("lstm", "Theano LSTM", *theano), ("lstm", "cuDNN Theano LSTM", *cudnn_lstm),
             ("gru", "cuDNN Theano GRU", *cudnn_gru)])


PUBLISHED = [
    ({**_G, "hidden_size": 100}, GLAMPLE, [
        ("rnn_tanh", "Theano", 343.8, 122.9), ("rnn_tanh", "Torch", 403.3, 154.4),
        ("lstm", "Theano (FastLSTM)", 713.1, 241.7), ("lstm", "Theano (LSTM)", 795.4, 274.4),
        ("lstm", "Torch (Element-Research FastLSTM)", 1991.5, 430.4),
        ("lstm", "Torch (Element-Research LSTM)", 3549.5, 1630.8)]),
    ({**_G, "hidden_size": 500}, GLAMPLE, [
        ("rnn_tanh", "Torch", 543.2, 195.8), ("rnn_tanh", "Theano", 557.5, 207.6),
        ("lstm", "Theano (FastLSTM)", 1151.9, 386.6),
        ("lstm", "Torch (Element-Research FastLSTM)", 2283.2, 499.4),
        ("lstm", "Theano (LSTM)", 2396.0, 770.9), ("lstm", "Torch (Element-Research LSTM)", 4636.1, 2923.9)]),
    _theano_cudnn(32, 30, 128, 1, (204.5, 57.1), (118.8, 59.5), (117.4, 57.6)),
    _theano_cudnn(32, 30, 512, 1, (530.9, 148.1), (223.2, 102.4), (184.6, 77.6)),
    _theano_cudnn(32, 30, 1024, 1, (1102.0, 294.0), (601.8, 161.1), (394.8, 136.2)),
    _theano_cudnn(128, 30, 128, 1, (200.8, 52.8), (33.4, 15.0), (32.2, 14.4)),
    _theano_cudnn(128, 30, 512, 1, (491.0, 138.2), (100.8, 31.7), (83.3, 26.5)),
    _theano_cudnn(128, 30, 1024, 1, (1000.1, 291.8), (221.2, 69.0), (181.3, 59.1)),
    _theano_cudnn(128, 30, 512, 3, (778.3, 418.3), (244.9, 70.2), (197.1, 55.7)),
    _theano_cudnn(128, 30, 1024, 3, (1592.8, 882.7), (820.6, 256.8), (639.5, 195.2)),
    _theano_cudnn(128, 200, 512, 3, (2196.6, 1168.1), (1539.5, 485.9), (1253.8, 386.4)),
    _theano_cudnn(128, 200, 1024, 3, (5711.1, 3427.9), (5342.5, 1692.1), (4163.4, 1274.5)),
]


def published_for(config: dict) -> list[dict]:
    """Published rows whose configuration matches ``config`` (fp32 only: the seeds ran fp32)."""
    if config.get("dtype", "fp32") != "fp32":
        return []
    rows = []
    for match, source, entries in PUBLISHED:
        if all(config.get(k) == v for k, v in match.items()):
            rows += [{"cell": cell, "lane": f"[published] {impl}", "source": source, "train": train, "forward": fwd}
                     for cell, impl, train, fwd in entries]
    return rows
