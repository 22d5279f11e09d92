"""RunOutput, the one writer of a run: the row before the checkpoint, nothing from a quiet one."""

import pytest

from rnnbench.lm.checkpoint import load_checkpoint
from rnnbench.lm.output import RunOutput
from rnnbench.results import ResultsFile, read_records

ROW = {"record": "lm", "epoch": 1, "epochs": 2, "steps": 3, "train_wps": 10.0, "eval_wps": 20.0,
       "ms_per_batch": 1.0, "train_loss": 2.0, "valid_ppl": 7.0, "status": "ok"}


def test_the_row_is_on_disk_before_the_checkpoint_state_is_even_built(tmp_path, capsys):
    results, ckpt = ResultsFile(tmp_path / "o.jsonl", kind="lm"), tmp_path / "c.pt"
    seen = []

    def state():
        seen.append([r["epoch"] for r in read_records(results.path, "lm")])
        return {"format": "rnnbench-lm-checkpoint-1", "epoch": 1}

    with RunOutput(results, ckpt, live=False) as output:
        output.begin({"env_id": "e"})
        output.epoch_done(ROW, state)
    assert seen == [[1]]
    assert load_checkpoint(ckpt)["epoch"] == 1 and output.last_good == 1
    assert output.kept() == f"last good checkpoint {ckpt} (epoch 1)"
    assert capsys.readouterr().out.startswith("epoch 1/2  steps 3")


def test_a_quiet_output_without_files_writes_and_prints_nothing(capsys):
    """What the ranks other than 0 of a data-parallel run will hold."""
    with RunOutput(None, None, quiet=True, every_s=0.0) as output:
        output.begin({"env_id": "e"})
        output.phase("epoch 1 train", 2)
        output.advance("x")
        output.epoch_done(ROW, lambda: pytest.fail("no checkpoint to build"))
        output.line("hello")
    assert capsys.readouterr() == ("", "")
    assert output.kept() == "no checkpoint kept"
