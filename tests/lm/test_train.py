"""The training loop: learning, timing fields, checkpoints, resume, NaN, lanes, CUDA."""

import json
import math

import pytest
import torch

from rnnbench.errors import UsageError
from rnnbench.lm import train as train_module
from rnnbench.lm.data import load_corpus
from rnnbench.lm.model import RNNModel
from rnnbench.lm.presets import get_preset
from rnnbench.lm.train import NonFiniteLossError, load_checkpoint, train_lm
from rnnbench.results import ResultsFile, read_records

ENV = {"env_id": "test-env"}  # skip the real environment probe (git, NVML) in unit tests


def tiny(**changes):
    """A model small enough that an epoch of the synthetic corpus takes milliseconds."""
    base = dict(emb_size=16, hidden_size=16, batch_size=8, bptt=16, lr=1e-2, dropout=0.1,
                device="cpu")
    return get_preset("small").override(**{**base, **changes})


def test_loss_falls_and_perplexity_is_finite(word_dir, tmp_path):
    corpus = load_corpus(word_dir)
    out = ResultsFile(tmp_path / "out.jsonl", kind="lm")
    rows = train_lm(tiny(epochs=4), corpus, results=out, env=ENV, progress=False,
                    labels={"dataset": "pattern", "dataset_note": "synthetic"})
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4]
    assert rows[-1]["train_loss"] < rows[0]["train_loss"] - 0.5
    assert rows[-1]["valid_ppl"] < rows[0]["valid_ppl"]
    assert all(math.isfinite(r["valid_ppl"]) for r in rows)
    assert rows[-1]["valid_ppl"] < len(corpus.vocab)  # better than uniform guessing
    assert rows[-1]["test_ppl"] is not None and math.isfinite(rows[-1]["test_ppl"])
    assert all(r["test_ppl"] is None for r in rows[:-1])
    first = rows[0]
    assert first["train_wps"] > 0 and first["eval_wps"] > 0 and first["ms_per_batch"] > 0
    assert first["peak_mem_bytes"] is None and first["device"] == "cpu"
    assert first["dataset_note"] == "synthetic" and first["vocab_size"] == len(corpus.vocab)
    # The results file holds the env record first, then one flushed row per epoch.
    records = list(read_records(out.path))
    assert records[0] == {"record": "env", **ENV}
    assert [r["epoch"] for r in records[1:]] == [1, 2, 3, 4]
    assert all(r["record"] == "lm" and r["env_id"] == "test-env" for r in records[1:])


def test_words_count_every_predicted_token(word_dir):
    corpus = load_corpus(word_dir)
    config = tiny(epochs=1)
    rows = train_lm(config, corpus, env=ENV, progress=False)
    rows_per_stream = corpus.train.numel() // config.batch_size
    windows = math.ceil((rows_per_stream - 1) / config.bptt)
    assert rows[0]["steps"] == windows
    assert rows[0]["timed_batches"] == windows - train_module.WARMUP_BATCHES


def test_char_level_trains(char_file):
    corpus = load_corpus(char_file, "char")
    rows = train_lm(tiny(epochs=2, lr=2e-2), corpus, env=ENV, progress=False)
    assert rows[-1]["valid_ppl"] < rows[0]["valid_ppl"]
    assert rows[-1]["valid_ppl"] < len(corpus.vocab) / 2  # learnt something about the text


def _losses(rows):
    return [(r["epoch"], r["train_loss"], r["valid_ppl"]) for r in rows]


def test_resume_continues_exactly_like_an_uninterrupted_run(word_dir, tmp_path):
    corpus = load_corpus(word_dir)
    straight = train_lm(tiny(epochs=2), corpus, env=ENV, progress=False)
    ckpt = tmp_path / "lm.pt"
    first = train_lm(tiny(epochs=1), corpus, checkpoint=ckpt, env=ENV, progress=False)
    assert load_checkpoint(ckpt)["epoch"] == 1
    resumed = train_lm(tiny(epochs=2), corpus, checkpoint=ckpt, resume=True, env=ENV, progress=False)
    assert [r["epoch"] for r in resumed] == [2]
    # Same seed, same data order, same dropout masks: the same numbers, within float noise.
    for (e1, l1, p1), (e2, l2, p2) in zip(_losses(straight), _losses(first + resumed)):
        assert e1 == e2
        assert l1 == pytest.approx(l2, rel=1e-5)
        assert p1 == pytest.approx(p2, rel=1e-5)
    assert resumed[0]["test_ppl"] == pytest.approx(straight[-1]["test_ppl"], rel=1e-5)


def test_resume_inside_an_epoch_after_max_steps(word_dir, tmp_path):
    corpus = load_corpus(word_dir)
    straight = train_lm(tiny(epochs=1), corpus, env=ENV, progress=False)
    ckpt = tmp_path / "lm.pt"
    cut = train_lm(tiny(epochs=1, max_steps=4), corpus, checkpoint=ckpt, env=ENV, progress=False)
    assert cut[0]["stopped"] == "max_steps" and cut[0]["steps"] == 4 and cut[0]["partial"]
    rest = train_lm(tiny(epochs=1), corpus, checkpoint=ckpt, resume=True, env=ENV, progress=False)
    assert cut[0]["steps"] + rest[0]["steps"] == straight[0]["steps"]
    # The carried hidden state and position were restored: validation sees the same model.
    assert rest[0]["valid_ppl"] == pytest.approx(straight[0]["valid_ppl"], rel=1e-5)


def test_resume_refuses_a_mismatched_or_missing_checkpoint(word_dir, tmp_path):
    corpus = load_corpus(word_dir)
    ckpt = tmp_path / "lm.pt"
    with pytest.raises(UsageError, match="no checkpoint at"):
        train_lm(tiny(), corpus, checkpoint=ckpt, resume=True, env=ENV, progress=False)
    train_lm(tiny(epochs=1), corpus, checkpoint=ckpt, env=ENV, progress=False)
    with pytest.raises(UsageError, match="hidden_size=16"):
        train_lm(tiny(epochs=2, hidden_size=32), corpus, checkpoint=ckpt, resume=True, env=ENV,
                 progress=False)
    with pytest.raises(UsageError, match="nothing to resume"):
        train_lm(tiny(epochs=1), corpus, checkpoint=ckpt, resume=True, env=ENV, progress=False)
    ckpt.write_bytes(b"not a checkpoint")
    with pytest.raises(UsageError, match="not a readable checkpoint"):
        train_lm(tiny(epochs=2), corpus, checkpoint=ckpt, resume=True, env=ENV, progress=False)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(word_dir, tmp_path, monkeypatch):
    corpus = load_corpus(word_dir)
    ckpt, out = tmp_path / "lm.pt", ResultsFile(tmp_path / "out.jsonl", kind="lm")
    train_lm(tiny(epochs=1), corpus, results=out, checkpoint=ckpt, env=ENV, progress=False)
    good = load_checkpoint(ckpt)

    forward = RNNModel.forward

    def diverging(self, tokens, hidden):  # the model blows up from epoch 2 on
        logits, hidden = forward(self, tokens, hidden)
        return logits * float("nan"), hidden

    monkeypatch.setattr(RNNModel, "forward", diverging)
    with pytest.raises(NonFiniteLossError) as info:
        train_lm(tiny(epochs=3), corpus, results=out, checkpoint=ckpt, resume=True, env=ENV,
                 progress=False)
    message = str(info.value)
    assert "\n" not in message and "nan" in message and "epoch 2" in message
    assert f"last good checkpoint {ckpt} (epoch 1)" in message
    kept = load_checkpoint(ckpt)
    assert kept["epoch"] == 1
    assert all(torch.equal(kept["model"][k], good["model"][k]) for k in good["model"])
    assert [r["epoch"] for r in read_records(out.path, "lm")] == [1]
    assert not ckpt.with_name(ckpt.name + ".tmp").exists()


@pytest.mark.parametrize("lane", ["torch-nn", "torch-cell-loop", "torch-fused-loop"])
@pytest.mark.parametrize("rnn", ["LSTM", "GRU"])
def test_each_lane_trains_a_step(word_dir, lane, rnn):
    corpus = load_corpus(word_dir)
    rows = train_lm(tiny(lane=lane, rnn=rnn, max_steps=2), corpus, env=ENV, progress=False)
    assert rows[0]["steps"] == 2 and rows[0]["lane"] == lane
    assert math.isfinite(rows[0]["train_loss"]) and math.isfinite(rows[0]["test_ppl"])


def test_sgd_tied_bf16_autocast_on_cpu(word_dir):
    corpus = load_corpus(word_dir)
    config = tiny(optimizer="sgd", lr=1.0, tied=True, amp="bf16", max_steps=3, lr_decay=0.5,
                  lr_decay_after=0)
    rows = train_lm(config, corpus, env=ENV, progress=False)
    assert rows[0]["precision"] == "bf16-amp" and rows[0]["epoch_lr"] == 0.5
    assert math.isfinite(rows[0]["train_loss"])


def test_max_minutes_stops_training(word_dir, monkeypatch):
    corpus = load_corpus(word_dir)
    rows = train_lm(tiny(epochs=5, max_minutes=1e-9), corpus, env=ENV, progress=False)
    assert len(rows) == 1 and rows[0]["stopped"] == "max_minutes" and rows[0]["steps"] == 1
    assert rows[0]["test_ppl"] is not None


def test_cpu_only_modes_and_missing_gpu_are_usage_errors(word_dir):
    corpus = load_corpus(word_dir)
    with pytest.raises(UsageError, match="tf32"):
        train_lm(tiny(tf32=True), corpus, env=ENV, progress=False)
    with pytest.raises(UsageError, match="fp16 needs CUDA"):
        train_lm(tiny(amp="fp16"), corpus, env=ENV, progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(UsageError, match="no CUDA device"):
            train_lm(tiny(device="cuda"), corpus, env=ENV, progress=False)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_small_preset_on_cuda_with_amp(word_dir, tmp_path, amp):
    corpus = load_corpus(word_dir)
    config = get_preset("small").override(device="cuda", amp=amp, epochs=3, max_steps=8)
    out, ckpt = ResultsFile(tmp_path / "out.jsonl", kind="lm"), tmp_path / "lm.pt"
    rows = train_lm(config, corpus, results=out, checkpoint=ckpt, progress=False)
    row = rows[0]
    assert row["device"] == "cuda" and row["precision"] == f"{amp}-amp"
    assert math.isfinite(row["train_loss"]) and math.isfinite(row["valid_ppl"])
    assert row["train_wps"] > 0 and row["eval_wps"] > 0
    assert row["peak_mem_bytes"] > 0
    env = next(read_records(out.path, "env"))
    assert env["gpu"] and json.dumps(row)
    # The checkpoint (CUDA tensors, CUDA RNG state, GradScaler for fp16) resumes on the GPU.
    more = train_lm(config.override(max_steps=12), corpus, results=out, checkpoint=ckpt,
                    resume=True, progress=False)
    assert more[-1]["global_step"] == 12 and math.isfinite(more[-1]["train_loss"])
