"""rnnbench.published: seed figures matched to our configurations, for labelled display only."""

from __future__ import annotations

from rnnbench.published import GLAMPLE, PUBLISHED, THEANO_CUDNN, published_for
from rnnbench.suites import suite_cases

GLAMPLE_100 = dict(batch_size=20, seq_len=30, input_size=100, hidden_size=100, num_layers=1, loss="last_step",
                   dtype="fp32")


def test_glample_hidden_100():
    rows = published_for(GLAMPLE_100)
    assert len(rows) == 6
    fast = [r for r in rows if r["lane"].endswith("Theano (FastLSTM)")]
    assert len(fast) == 1 and fast[0]["cell"] == "lstm"
    assert (fast[0]["train"], fast[0]["forward"]) == (713.1, 241.7)
    assert {r["cell"] for r in rows} == {"rnn_tanh", "lstm"}
    assert all("[published]" in r["lane"] and r["source"] == GLAMPLE for r in rows)  # labelled as not ours


def test_only_fp32_and_only_matching_configs():
    assert published_for({**GLAMPLE_100, "dtype": "bf16"}) == []
    assert published_for({**GLAMPLE_100, "batch_size": 32}) == []
    assert published_for({**GLAMPLE_100, "loss": "all_steps"}) == []
    assert published_for({**GLAMPLE_100, "num_layers": 2}) == []


def test_every_seed_suite_case_has_published_rows_and_vice_versa():
    configs = {(c.batch_size, c.seq_len, c.input_size, c.hidden_size, c.num_layers, c.loss)
               for name in ("glample-2016", "theano-cudnn-2016") for c in suite_cases(name, "cuda")}
    for b, t, i, h, layers, loss in configs:
        config = dict(batch_size=b, seq_len=t, input_size=i, hidden_size=h, num_layers=layers, loss=loss, dtype="fp32")
        assert published_for(config), config
    assert len(configs) == len(PUBLISHED) == 12


def test_theano_cudnn_entry():
    rows = published_for(dict(batch_size=128, seq_len=200, input_size=1024, hidden_size=1024, num_layers=3,
                              loss="all_steps"))
    assert [(r["cell"], r["train"], r["forward"]) for r in rows] == [
        ("lstm", 5711.1, 3427.9), ("lstm", 5342.5, 1692.1), ("gru", 4163.4, 1274.5)]
    assert all(r["source"] == THEANO_CUDNN and "[published]" in r["lane"] for r in rows)
