"""Checkpoints: resume exactly where a run stopped, refuse what cannot be resumed, keep the last
good one when the loss turns NaN."""

import pytest
import torch

from rnnbench.errors import UsageError
from rnnbench.lm import NonFiniteLossError, load_checkpoint, train_lm
from rnnbench.lm.data import load_corpus
from rnnbench.lm.model import RNNModel
from rnnbench.results import ResultsFile, read_records

ENV = {"env_id": "test-env"}  # skip the real environment probe (git, NVML) in unit tests


def _losses(rows):
    return [(r["epoch"], r["train_loss"], r["valid_ppl"]) for r in rows]


def test_resume_continues_exactly_like_an_uninterrupted_run(word_dir, tmp_path, tiny):
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


def test_resume_inside_an_epoch_after_max_steps(word_dir, tmp_path, tiny):
    corpus = load_corpus(word_dir)
    straight = train_lm(tiny(epochs=1), corpus, env=ENV, progress=False)
    ckpt = tmp_path / "lm.pt"
    cut = train_lm(tiny(epochs=1, max_steps=4), corpus, checkpoint=ckpt, env=ENV, progress=False)
    assert cut[0]["stopped"] == "max_steps" and cut[0]["steps"] == 4 and cut[0]["partial"]
    rest = train_lm(tiny(epochs=1), corpus, checkpoint=ckpt, resume=True, env=ENV, progress=False)
    assert cut[0]["steps"] + rest[0]["steps"] == straight[0]["steps"]
    # The carried hidden state and position were restored: validation sees the same model.
    assert rest[0]["valid_ppl"] == pytest.approx(straight[0]["valid_ppl"], rel=1e-5)
    # One run in two segments of epoch 1: the report keeps both rows (different start_step).
    assert rest[0]["run_id"] == cut[0]["run_id"] != straight[0]["run_id"]
    assert (cut[0]["start_step"], rest[0]["start_step"]) == (0, 4)


def test_resume_refuses_a_mismatched_or_missing_checkpoint(word_dir, tmp_path, tiny):
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


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(word_dir, tmp_path, monkeypatch, tiny):
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


def test_a_kill_between_row_and_checkpoint_keeps_the_row_and_resume_reruns_the_epoch(
        word_dir, tmp_path, monkeypatch, tiny):
    """Issue 6: the row is made durable before the checkpoint, so a kill between the two loses
    nothing. The checkpoint on disk is then the previous epoch's: --resume trains the epoch again
    and appends a second row for it, which the report prefers (latest row per run and segment)."""
    corpus = load_corpus(word_dir)
    straight = train_lm(tiny(epochs=3), corpus, env=ENV, progress=False)
    out, ckpt = ResultsFile(tmp_path / "x.jsonl", kind="lm"), tmp_path / "x.pt"
    real_save = torch.save

    def killed_in_epoch_2(state, f, *args, **kwargs):  # Ctrl-C half-way through writing epoch 2's
        if state["epoch"] == 2:
            with open(f, "wb") as half:
                half.write(b"half a checkpoint")
            raise KeyboardInterrupt
        return real_save(state, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", killed_in_epoch_2)
    with pytest.raises(KeyboardInterrupt):
        train_lm(tiny(epochs=3), corpus, results=out, checkpoint=ckpt, env=ENV, progress=False)
    monkeypatch.setattr(torch, "save", real_save)
    assert [r["epoch"] for r in read_records(out.path, "lm")] == [1, 2]  # epoch 2's row survived
    assert load_checkpoint(ckpt)["epoch"] == 1  # the previous checkpoint, whole
    assert not ckpt.with_name(ckpt.name + ".tmp").exists()

    resumed = train_lm(tiny(epochs=3), corpus, results=out, checkpoint=ckpt, resume=True, env=ENV,
                       progress=False)
    assert [r["epoch"] for r in resumed] == [2, 3]
    for row, expected in zip(resumed, straight[1:]):  # as if never stopped
        assert row["train_loss"] == pytest.approx(expected["train_loss"], rel=1e-5)
        assert row["valid_ppl"] == pytest.approx(expected["valid_ppl"], rel=1e-5)
    rows = list(read_records(out.path, "lm"))
    assert [r["epoch"] for r in rows] == [1, 2, 2, 3]  # nothing measured is ever dropped
    assert len({r["run_id"] for r in rows}) == 1  # one run, resumed
    assert rows[1]["start_step"] == rows[2]["start_step"] == rows[0]["global_step"]
    assert rows[1]["train_loss"] == pytest.approx(rows[2]["train_loss"], rel=1e-5)  # the same epoch, redone
    from rnnbench.lm.report import latest_rows, read_lm_records

    kept = latest_rows(read_lm_records([out.path]))
    assert [r["epoch"] for r in kept] == [1, 2, 3]
    assert kept[1]["timestamp"] == rows[2]["timestamp"] and kept[1] == rows[2]  # the re-run's row


def test_train_lm_checks_the_checkpoint_path_before_training(word_dir, tmp_path, monkeypatch, tiny):
    from rnnbench.lm import run as run_module

    monkeypatch.setattr(run_module, "prepare", lambda *a: pytest.fail("work started before the check"))
    with pytest.raises(UsageError, match="is a directory"):
        train_lm(tiny(), load_corpus(word_dir), checkpoint=tmp_path, env=ENV, progress=False)
