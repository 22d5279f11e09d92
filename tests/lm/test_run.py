"""A whole run (train_lm): learning, timing fields, lanes, precision, limits, CUDA.

Checkpoints and resume are in test_checkpoint.py."""

import json
import math
import time

import pytest
import torch

from rnnbench.errors import UsageError
from rnnbench.lm import run as run_module
from rnnbench.lm import train_lm
from rnnbench.lm.data import load_corpus
from rnnbench.lm.presets import get_preset
from rnnbench.results import ResultsFile, read_records
from rnnbench.precision import cpu_runs_bf16_rnn

ENV = {"env_id": "test-env"}  # skip the real environment probe (git, NVML) in unit tests


def test_loss_falls_and_perplexity_is_finite(word_dir, tmp_path, tiny):
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


def test_words_count_every_predicted_token(word_dir, tiny):
    corpus = load_corpus(word_dir)
    config = tiny(epochs=1)
    rows = train_lm(config, corpus, env=ENV, progress=False)
    rows_per_stream = corpus.train.numel() // config.batch_size
    windows = math.ceil((rows_per_stream - 1) / config.bptt)
    assert rows[0]["steps"] == windows
    assert rows[0]["timed_batches"] == windows - run_module.WARMUP_BATCHES


def test_char_level_trains(char_file, tiny):
    corpus = load_corpus(char_file, "char")
    rows = train_lm(tiny(epochs=2, lr=2e-2), corpus, env=ENV, progress=False)
    assert rows[-1]["valid_ppl"] < rows[0]["valid_ppl"]
    assert rows[-1]["valid_ppl"] < len(corpus.vocab) / 2  # learnt something about the text


@pytest.mark.parametrize("lane", ["torch-nn", "torch-cell-loop", "torch-fused-loop"])
@pytest.mark.parametrize("rnn", ["LSTM", "GRU"])
def test_each_lane_trains_a_step(word_dir, lane, rnn, tiny):
    corpus = load_corpus(word_dir)
    rows = train_lm(tiny(lane=lane, rnn=rnn, max_steps=2), corpus, env=ENV, progress=False)
    assert rows[0]["steps"] == 2 and rows[0]["lane"] == lane
    assert math.isfinite(rows[0]["train_loss"]) and math.isfinite(rows[0]["test_ppl"])


@pytest.mark.skipif(not cpu_runs_bf16_rnn(), reason="this CPU's oneDNN has no bfloat16 RNN primitive")
def test_sgd_tied_bf16_autocast_on_cpu(word_dir, tiny):
    corpus = load_corpus(word_dir)
    config = tiny(optimizer="sgd", lr=1.0, tied=True, amp="bf16", max_steps=3, lr_decay=0.5,
                  lr_decay_after=0)
    rows = train_lm(config, corpus, env=ENV, progress=False)
    assert rows[0]["precision"] == "bf16-amp" and rows[0]["epoch_lr"] == 0.5
    assert math.isfinite(rows[0]["train_loss"])


@pytest.mark.parametrize("lane", ["torch-nn", "torch-fused-loop"])
def test_bf16_autocast_without_a_cpu_bf16_rnn(word_dir, tiny, monkeypatch, lane):
    """On a CPU whose oneDNN has no bfloat16 RNN, torch-nn under --amp bf16 is refused in one line
    before any work; a per-step lane (matmuls) still trains."""
    from rnnbench.lm import run

    monkeypatch.setattr(run, "cpu_runs_bf16_rnn", lambda: False)
    config = tiny(lane=lane, amp="bf16", max_steps=1)
    if lane == "torch-nn":
        with pytest.raises(UsageError, match="no bfloat16 RNN primitive"):
            train_lm(config, load_corpus(word_dir), env=ENV, progress=False)
    else:
        rows = train_lm(config, load_corpus(word_dir), env=ENV, progress=False)
        assert rows[0]["precision"] == "bf16-amp" and math.isfinite(rows[0]["train_loss"])


def test_max_minutes_stops_training(word_dir, monkeypatch, tiny):
    corpus = load_corpus(word_dir)
    rows = train_lm(tiny(epochs=5, max_minutes=1e-9), corpus, env=ENV, progress=False)
    assert len(rows) == 1 and rows[0]["stopped"] == "max_minutes" and rows[0]["steps"] == 1
    assert rows[0]["test_ppl"] is not None


def test_cpu_only_modes_and_missing_gpu_are_usage_errors(word_dir, tiny):
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


def test_piped_progress_prints_lines_during_an_epoch(word_dir, tiny, capsys, monkeypatch):
    """`lm` in a pipe is never silent for long: without a bar, the shared progress view prints a
    line at least every ``every_s`` seconds while an epoch runs, not only one line per epoch."""
    from rnnbench.lm import loop

    real = loop.train_step

    def slow_step(*args, **kwargs):  # about 40 batches of 10 ms: half a second of training
        time.sleep(0.01)
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "train_step", slow_step)
    train_lm(tiny(epochs=1), load_corpus(word_dir), env=ENV, progress=False, every_s=0.05)
    lines = capsys.readouterr().out.splitlines()
    during = [line for line in lines if line.startswith("epoch 1 train")]
    assert len(during) >= 4, lines
    counts = [int(line.split()[3].split("/")[0]) for line in during]
    assert counts == sorted(counts) and counts[-1] > counts[0]
    summary = next(i for i, line in enumerate(lines) if line.startswith("epoch 1/1"))
    assert lines.index(during[-1]) < summary


def test_rows_say_ok_or_diverged_and_stay_standard_json(word_dir, tmp_path, monkeypatch, tiny, capsys):
    """Issue 6: an infinite perplexity is written as null (standard JSON) and the row's status
    says why, instead of ``Infinity`` in the file and ``ok`` implied."""
    corpus = load_corpus(word_dir)
    fine = train_lm(tiny(max_steps=2), corpus, env=ENV, progress=False)
    assert fine[0]["status"] == "ok" and fine[0]["message"] is None

    from rnnbench.lm.model import RNNModel

    forward = RNNModel.forward

    def overconfident_in_eval(self, tokens, hidden):  # training is untouched, evaluation blows up
        logits, hidden = forward(self, tokens, hidden)
        return (logits if self.training else logits * 1e6), hidden

    monkeypatch.setattr(RNNModel, "forward", overconfident_in_eval)
    out = ResultsFile(tmp_path / "out.jsonl", kind="lm")
    rows = train_lm(tiny(max_steps=2), corpus, results=out, env=ENV, progress=False)
    row = rows[0]
    assert row["status"] == "diverged" and math.isinf(row["valid_ppl"]) and math.isfinite(row["train_loss"])
    assert "valid perplexity is inf" in row["message"] and "test perplexity is inf" in row["message"]
    assert "\n" not in row["message"]
    line = out.path.read_text().splitlines()[-1]
    saved = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert saved["status"] == "diverged" and saved["valid_ppl"] is None and saved["test_ppl"] is None
    assert saved["non_finite"] == {"valid_ppl": "inf", "test_ppl": "inf"}
    assert "(diverged: valid perplexity is inf" in capsys.readouterr().out
