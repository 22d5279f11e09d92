"""The lm command's options and the lm report table."""

import pytest
import typer
from typer.testing import CliRunner

from rnnbench.errors import UsageError
from rnnbench.lm import run as run_module
from rnnbench.lm.cli import lm
from rnnbench.lm.report import latest_rows, lm_table
from rnnbench.results import read_records

TINY = dict(emb_size=16, hidden_size=16, batch_size=8, bptt=16, device="cpu", progress=False)


@pytest.fixture(autouse=True)
def fake_env(monkeypatch):
    import rnnbench.env

    monkeypatch.setattr(rnnbench.env, "environment", lambda: {"env_id": "cli-env", "gpu": None})


def test_cli_options_override_the_preset(word_dir, tmp_path):
    out = tmp_path / "lm.jsonl"
    app = typer.Typer()
    app.command("lm")(lm)

    @app.callback()
    def main():  # a group, as in the main CLI, so the command is invoked by name
        pass

    result = CliRunner().invoke(app, [
        "lm", "--data-dir", str(word_dir), "--rnn", "GRU", "--emb-size", "16", "--hidden-size", "16",
        "--batch-size", "8", "--bptt", "64", "--epochs", "2", "--max-steps", "12", "--no-tied",
        "--lane", "torch-fused-loop", "--optimizer", "sgd", "--lr", "1", "--clip", "5",
        "--device", "cpu", "--out", str(out), "--dataset-note", "synthetic pattern", "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = list(read_records(out, "lm"))
    assert [r["epoch"] for r in rows] == [1, 2]
    assert rows[-1]["global_step"] == 12 and rows[-1]["stopped"] == "max_steps"
    assert {r["rnn"] for r in rows} == {"GRU"} and rows[0]["lane"] == "torch-fused-loop"
    assert rows[0]["optimizer"] == "sgd" and rows[0]["dataset_note"] == "synthetic pattern"
    assert rows[0]["dataset"] == word_dir.name and rows[0]["level"] == "word"
    assert "valid ppl" in result.output  # the closing table


def test_char_level_file_and_return_value(char_file, tmp_path):
    rows = lm(data_dir=char_file, max_steps=3, out=tmp_path / "c.jsonl", **TINY)
    assert rows[0]["level"] == "char" and rows[0]["dataset"] == "chars/input.txt"


def test_data_source_must_be_given_once(word_dir):
    with pytest.raises(UsageError, match="exactly one of --data-dir"):
        lm(**TINY)
    with pytest.raises(UsageError, match="exactly one of --data-dir"):
        lm(data_dir=word_dir, dataset="ptb", **TINY)
    with pytest.raises(UsageError, match="unknown level"):
        lm(data_dir=word_dir, level="byte", **TINY)


def test_nan_loss_exits_1(word_dir, tmp_path, monkeypatch, capsys):
    def nan_epoch(*args, **kwargs):
        raise run_module.NonFiniteLossError("training loss became nan in epoch 1 by step 3")

    monkeypatch.setattr(run_module, "train_epoch", nan_epoch)
    with pytest.raises(typer.Exit) as info:
        lm(data_dir=word_dir, out=tmp_path / "x.jsonl", **TINY)
    assert info.value.exit_code == 1
    assert "loss became nan" in capsys.readouterr().err


def test_ctrl_c_keeps_finished_rows_and_exits_130(word_dir, tmp_path, monkeypatch, capsys):
    real = run_module.train_epoch

    def interrupt_in_epoch_2(*args, epoch, **kwargs):
        if epoch == 2:
            raise KeyboardInterrupt
        return real(*args, epoch=epoch, **kwargs)

    monkeypatch.setattr(run_module, "train_epoch", interrupt_in_epoch_2)
    out, ckpt = tmp_path / "x.jsonl", tmp_path / "x.pt"
    with pytest.raises(typer.Exit) as info:
        lm(data_dir=word_dir, epochs=3, out=out, checkpoint=ckpt, **TINY)
    assert info.value.exit_code == 130
    assert [r["epoch"] for r in read_records(out, "lm")] == [1]
    assert f"--resume --checkpoint {ckpt}" in capsys.readouterr().err


def test_offline_dataset_is_a_usage_error(tmp_path, monkeypatch):
    import urllib.error

    monkeypatch.setenv("RNNBENCH_CACHE", str(tmp_path))
    from rnnbench.lm import data

    def offline(url, dest, timeout=None):  # the real fetch_dataset with no network under it
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(data, "download", offline)
    with pytest.raises(UsageError, match=r"^offline .*put train\.txt, valid\.txt and test\.txt of ptb"):
        lm(dataset="ptb", **TINY)


def test_lm_table_columns_and_gpu_from_env():
    records = [
        {"record": "env", "env_id": "e1", "gpu": "NVIDIA H100 80GB HBM3"},
        {"record": "result", "lane": "torch-nn"},  # micro-benchmark rows are ignored
        {"record": "lm", "env_id": "e1", "device": "cuda", "dataset": "wt2", "preset": "kawakami-2017",
         "lane": "torch-nn", "rnn": "LSTM", "precision": "bf16-amp", "epoch": 1, "steps": 13,
         "train_wps": 1234567.89, "eval_wps": 4567890.1, "ms_per_batch": 12.3456, "train_loss": 6.54321,
         "valid_ppl": 512.345, "test_ppl": 498.7, "peak_mem_bytes": 3 * 2**30},
        {"record": "lm", "env_id": "e2", "device": "cpu", "lane": "torch-cell-loop", "rnn": "GRU",
         "precision": "fp32", "epoch": 2, "train_wps": None, "eval_wps": 10.0},
    ]
    table = lm_table(records)
    assert list(table.columns) == ["dataset", "preset", "lane", "rnn", "amp/precision", "epoch", "steps",
                                   "train words/s", "eval words/s", "ms/batch", "train loss",
                                   "valid ppl", "test ppl", "peak MiB", "device/gpu"]
    assert len(table) == 2
    first = table.iloc[0]
    assert first["train words/s"] == 1234568 and first["ms/batch"] == 12.35
    assert first["valid ppl"] == 512.35 and first["peak MiB"] == 3072
    assert first["device/gpu"] == "NVIDIA H100 80GB HBM3"
    assert table.iloc[1]["device/gpu"] == "cpu"
    assert lm_table([]).empty


def test_report_keeps_the_latest_row_per_run_epoch_and_segment():
    def row(run_id, epoch, start_step, wps):
        return {"record": "lm", "run_id": run_id, "epoch": epoch, "start_step": start_step, "train_wps": wps}

    records = [
        {"record": "env", "env_id": "e1"},
        row("a", 1, 0, 10.0),
        row("a", 2, 13, 20.0),  # killed before its checkpoint: trained again below
        row("b", 1, 0, 99.0),  # another run in the same file
        row("a", 2, 13, 21.0),
        row("a", 3, 26, 30.0),
        row("c", 1, 0, 40.0), row("c", 1, 4, 41.0),  # one epoch cut by --max-steps, then resumed
        {"record": "lm", "epoch": 1, "train_wps": 1.0}, {"record": "lm", "epoch": 1, "train_wps": 2.0},  # no run_id
    ]
    kept = latest_rows(records)
    assert [(r.get("run_id"), r["epoch"], r["train_wps"]) for r in kept] == [
        ("a", 1, 10.0), ("b", 1, 99.0), ("a", 2, 21.0), ("a", 3, 30.0), ("c", 1, 40.0), ("c", 1, 41.0),
        (None, 1, 1.0), (None, 1, 2.0)]
    assert lm_table(records)["train words/s"].tolist() == [10, 99, 21, 30, 40, 41, 1, 2]


def test_scaling_efficiency_against_the_same_run_on_one_process():
    from rnnbench.lm.report import lm_table

    base = dict(record="lm", dataset="wt2", preset="kawakami-2017", lane="torch-nn", rnn="LSTM",
                precision="bf16-amp", emb_size=1024, hidden_size=1024, num_layers=1, batch_size=128,
                bptt=128, device="cuda", epoch=1)
    one = {**base, "run_id": "a", "start_step": 0, "world_size": 1, "train_wps": 1000.0, "train_wps_per_rank": 1000.0}
    two = {**base, "run_id": "b", "start_step": 0, "world_size": 2, "train_wps": 1500.0, "train_wps_per_rank": 750.0}
    other = {**two, "run_id": "c", "batch_size": 256}  # another global batch: no baseline
    frame = lm_table([one, two, other])
    assert list(frame["processes"]) == [1, 2, 2]
    assert frame["scaling efficiency"].iloc[1] == 0.75 and frame["scaling efficiency"].isna().tolist() == [True, False, True]
    assert list(frame["train words/s per process"]) == [1000, 750, 750]
    assert "processes" not in lm_table([one]).columns  # one-process tables stay as they were
