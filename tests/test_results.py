"""rnnbench.results: append-only JSON lines, tolerant of a torn last line, strict otherwise."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest
import torch

from rnnbench.errors import UsageError
from rnnbench.results import ResultsFile, load_results, read_records


def _row(i, env_id="e1", **extra):
    return {"record": "result", "case_key": f"case{i}", "lane": "torch-nn", "env_id": env_id, "status": "ok", **extra}


def test_append_and_read(tmp_path):
    out = ResultsFile(tmp_path / "deeper" / "dir" / "r.jsonl")  # parents are created
    out.write_env({"env_id": "e1", "gpu": None})
    out.append(_row(1))
    out.append(_row(2, value=1.5))
    text = out.path.read_text()
    assert text.endswith("\n") and len(text.splitlines()) == 3
    assert [r["record"] for r in read_records(out.path)] == ["env", "result", "result"]
    assert [r["case_key"] for r in read_records(out.path, "result")] == ["case1", "case2"]
    assert [r["env_id"] for r in read_records(out.path, "env")] == ["e1"]
    assert list(read_records(out.path, "result"))[1]["value"] == 1.5


def test_write_env_once_per_env_id(tmp_path):
    out = ResultsFile(tmp_path / "r.jsonl")
    out.write_env({"env_id": "e1"})
    out.write_env({"env_id": "e1"})
    out.write_env({"env_id": "e2"})
    assert [r["env_id"] for r in read_records(out.path, "env")] == ["e1", "e2"]


def test_non_json_values_are_stringified(tmp_path):
    from pathlib import Path

    out = ResultsFile(tmp_path / "r.jsonl")
    out.append(_row(1, where=Path("/x/y")))
    assert next(read_records(out.path))["where"] == "/x/y"


def test_missing_file_yields_nothing(tmp_path):
    assert list(read_records(tmp_path / "nope.jsonl")) == []


def test_blank_lines_ignored(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n" + json.dumps(_row(1)) + "\n\n" + json.dumps(_row(2)) + "\n\n")
    assert len(list(read_records(path))) == 2


def test_torn_last_line_is_tolerated(tmp_path):
    out = ResultsFile(tmp_path / "r.jsonl")
    for i in range(3):
        out.append(_row(i))
    full = json.dumps(_row(3))
    with out.path.open("a") as f:
        f.write(full[: len(full) // 2])  # killed mid-write: half a line, no newline
    assert [r["case_key"] for r in read_records(out.path)] == ["case0", "case1", "case2"]


def test_opening_drops_a_torn_tail_so_appends_start_a_new_line(tmp_path):
    path = tmp_path / "r.jsonl"
    ResultsFile(path).append(_row(0))
    with path.open("a") as f:
        f.write('{"record": "result", "case_k')
    out = ResultsFile(path)
    out.append(_row(1))
    assert [r["case_key"] for r in read_records(path)] == ["case0", "case1"]
    assert path.read_text().count("\n") == 2
    # a complete file is left byte for byte as it was
    before = path.read_bytes()
    ResultsFile(path)
    assert path.read_bytes() == before


def test_a_directory_is_not_a_results_file(tmp_path):
    with pytest.raises(UsageError, match="is a directory"):
        ResultsFile(tmp_path)


def test_corrupt_middle_line_raises(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [json.dumps(_row(0)), json.dumps(_row(1))[:20], json.dumps(_row(2))]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError, match=r"r\.jsonl:2 is not a JSON line"):
        list(read_records(path))


@pytest.mark.parametrize("line", ['[1, 2]', '"text"', '{"no_record_key": 1}', "3"])
def test_json_that_is_not_a_record_raises(tmp_path, line):
    path = tmp_path / "r.jsonl"
    path.write_text(line + "\n" + json.dumps(_row(1)) + "\n")
    with pytest.raises(UsageError, match=r":1 is not an rnnbench record"):
        list(read_records(path))


def test_load_results_joins_env(tmp_path):
    out = ResultsFile(tmp_path / "r.jsonl")
    out.write_env({"env_id": "cpu-box", "gpu": None, "git_commit": "abc1234"})
    out.write_env({"env_id": "gpu-box", "gpu": "NVIDIA H100 80GB HBM3", "git_commit": None})
    for i, env_id in enumerate(("cpu-box", "gpu-box", "unknown-box"), 1):  # complete rows: load_results checks them
        out.append(_full_row(case_key=f"case{i}", env_id=env_id))
    frame = load_results(out.path)
    assert list(frame["case_key"]) == ["case1", "case2", "case3"]
    assert list(frame["gpu"]) == ["cpu", "NVIDIA H100 80GB HBM3", "cpu"]
    assert frame["git_commit"].iloc[0] == "abc1234" and frame["git_commit"].iloc[1:].isna().all()
    assert "record" in frame and (frame["record"] == "result").all()


def test_load_results_errors(tmp_path):
    with pytest.raises(UsageError, match="no results file"):
        load_results(tmp_path / "missing.jsonl")
    with pytest.raises(UsageError, match="no results file"):
        load_results(tmp_path)  # a directory
    only_env = ResultsFile(tmp_path / "env.jsonl")
    only_env.write_env({"env_id": "e"})
    with pytest.raises(UsageError, match="holds no result rows"):
        load_results(only_env.path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(UsageError, match="holds no result rows"):
        load_results(empty)
    text = tmp_path / "notes.txt"
    text.write_text("these are my notes\nnot JSON at all\n")
    with pytest.raises(UsageError, match="not a JSON line"):
        load_results(text)


def test_small_run_loads(small_run):
    frame = load_results(small_run.path)
    machine = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    assert len(frame) == 6 and set(frame["gpu"]) == {machine}
    assert set(frame["status"]) == {"ok", "unavailable"}


# --- a file that is not ours is never touched ------------------------------------------------


FOREIGN = {
    "text without a final newline": b"line one\nline two, the last, unterminated",
    "text": b"my notes\nmore notes\n",
    "png": bytes.fromhex("89504e470d0a1a0a0000000d49484452") + b"\x00\x01\x02 no newline at the end",
    "JSON that is not a record": b'{"name": "not ours"}\n',
}


@pytest.mark.parametrize("name", FOREIGN)
def test_a_foreign_file_is_refused_and_left_byte_for_byte(tmp_path, name):
    path = tmp_path / "r.jsonl"
    path.write_bytes(FOREIGN[name])
    with pytest.raises(UsageError, match="not an rnnbench results file.*left untouched"):
        ResultsFile(path)
    assert path.read_bytes() == FOREIGN[name]


def test_a_file_of_the_other_kind_is_refused(tmp_path):
    lm_file = ResultsFile(tmp_path / "lm.jsonl", kind="lm")
    lm_file.append({"record": "lm", "epoch": 1, "env_id": "e"})
    before = lm_file.path.read_bytes()
    with pytest.raises(UsageError, match="holds rows of rnnbench lm, not rnnbench run"):
        ResultsFile(lm_file.path, kind="result")
    micro = ResultsFile(tmp_path / "micro.jsonl")
    micro.append(_row(1))
    with pytest.raises(UsageError, match="holds rows of rnnbench run, not rnnbench lm"):
        ResultsFile(micro.path, kind="lm")
    assert lm_file.path.read_bytes() == before


def test_our_torn_file_is_still_repaired(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"record": "env", "env_id": "e"}) + "\n" + '{"record": "res')
    ResultsFile(path).append(_row(1))
    assert [r["record"] for r in read_records(path)] == ["env", "result"]


@pytest.mark.parametrize("value, word", [(float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf")])
def test_non_finite_values_are_written_as_null_with_the_reason(tmp_path, value, word):
    out = ResultsFile(tmp_path / "r.jsonl")
    out.append(_row(1, valid_ppl=value, train_loss=2.5))
    line = out.path.read_text().strip()
    record = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert record["valid_ppl"] is None and record["train_loss"] == 2.5
    assert record["non_finite"] == {"valid_ppl": word}


# --- rows are checked when loaded: file:line and the field, never a traceback later -------------

def _full_row(**extra) -> dict:
    """A result row as the runner writes it (status ok)."""
    return {"record": "result", "cell": "gru", "batch_size": 8, "seq_len": 16, "input_size": 32, "hidden_size": 32,
            "num_layers": 1, "dtype": "fp32", "mode": "train", "loss": "all_steps", "device": "cpu",
            "case_key": "gru-B8-T16-I32-H32-L1-fp32-train-all_steps-cpu", "lane": "torch-nn", "env_id": "e1",
            "status": "ok", "ms_per_batch": 1.5, "us_per_example": 187.5, "p20_ms": 1.4, "p80_ms": 1.6,
            "samples_ms": [1.4, 1.5, 1.6], "noisy": False, **extra}


def _file_with(tmp_path, bad: dict):
    path = tmp_path / "r.jsonl"
    lines = [{"record": "env", "env_id": "e1"}, _full_row(), bad]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_complete_rows_load(tmp_path):
    frame = load_results(_file_with(tmp_path, _full_row(lane="torch-fused-loop")))
    assert list(frame["lane"]) == ["torch-nn", "torch-fused-loop"]


@pytest.mark.parametrize("field", ["lane", "case_key", "status", "env_id", "cell", "batch_size", "mode",
                                   "us_per_example", "ms_per_batch"])
def test_a_row_missing_a_field_names_file_line_and_field(tmp_path, field):
    bad = _full_row()
    del bad[field]
    with pytest.raises(UsageError, match=rf"r\.jsonl:3: result row has no field '{field}'"):
        load_results(_file_with(tmp_path, bad))


def test_a_failed_row_needs_no_times(tmp_path):
    failed = {k: v for k, v in _full_row(status="oom").items() if k not in ("ms_per_batch", "us_per_example")}
    assert list(load_results(_file_with(tmp_path, failed))["status"]) == ["ok", "oom"]


@pytest.mark.parametrize("extra, message", [
    ({"us_per_example": "fast"}, r"field 'us_per_example' is 'fast', not a positive number"),
    ({"ms_per_batch": None}, r"field 'ms_per_batch' is None, not a positive number"),
    ({"ms_per_batch": 0}, r"field 'ms_per_batch' is 0, not a positive number"),
    ({"batch_size": "8"}, r"field 'batch_size' is '8', not a positive whole number"),
    ({"num_layers": 1.5}, r"field 'num_layers' is 1.5, not a positive whole number"),
    ({"lane": 3}, r"field 'lane' is 3, not text"),
    ({"p80_ms": [1]}, r"field 'p80_ms' is \[1\], not a number of at least 0"),
    ({"samples_ms": "1,2,3"}, r"field 'samples_ms' is '1,2,3', not a list of numbers"),
    ({"samples_ms": [1.0, "x"]}, r"a value in 'samples_ms' is 'x', not a number of at least 0"),
    ({"tflops": "1.2"}, r"field 'tflops' is '1.2', not a number of at least 0"),
    ({"peak_fraction": -0.5}, r"field 'peak_fraction' is -0.5, not a number of at least 0"),
    ({"run": 0}, r"field 'run' is 0, not a positive whole number"),
    ({"run": "2"}, r"field 'run' is '2', not a positive whole number"),
])
def test_a_row_with_a_wrong_value_names_file_line_and_field(tmp_path, extra, message):
    with pytest.raises(UsageError, match=r"r\.jsonl:3: " + message):
        load_results(_file_with(tmp_path, _full_row(**extra)))


# --- gzip-compressed files (benchmarks/results/ keeps finished runs as .jsonl.gz) ------------


def _gzip(plain, gz):
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    return gz


def test_a_gzipped_run_loads_to_the_same_frame(small_run, tmp_path):
    gz = _gzip(small_run.path, tmp_path / "results.jsonl.gz")
    assert gz.read_bytes()[:2] == b"\x1f\x8b"  # compressed bytes: no JSON line until gunzipped
    pd.testing.assert_frame_equal(load_results(gz), load_results(small_run.path))
    assert list(read_records(gz)) == list(read_records(small_run.path))


def test_a_torn_last_line_inside_gzip_is_skipped(tmp_path):
    plain = tmp_path / "r.jsonl"
    full = json.dumps(_row(3))
    plain.write_text("".join(json.dumps(_row(i)) + "\n" for i in range(3)) + full[: len(full) // 2])
    gz = _gzip(plain, tmp_path / "r.jsonl.gz")
    assert [r["case_key"] for r in read_records(gz)] == ["case0", "case1", "case2"]


def test_a_corrupt_middle_line_inside_gzip_names_file_and_line(tmp_path):
    plain = tmp_path / "r.jsonl"
    plain.write_text("\n".join([json.dumps(_row(0)), json.dumps(_row(1))[:20], json.dumps(_row(2))]) + "\n")
    gz = _gzip(plain, tmp_path / "r.jsonl.gz")
    with pytest.raises(UsageError, match=r"r\.jsonl\.gz:2 is not a JSON line"):
        list(read_records(gz))


@pytest.mark.parametrize("damage", ["not gzip", "cut short"])
def test_a_gz_file_that_is_not_whole_gzip_is_named(tmp_path, damage):
    whole = gzip.compress(("".join(json.dumps(_row(i)) + "\n" for i in range(50))).encode())
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(b"plain notes, not gzip\n" if damage == "not gzip" else whole[: len(whole) // 2])
    with pytest.raises(UsageError, match=r"r\.jsonl\.gz cannot be read as gzip"):
        list(read_records(gz))


def test_a_gz_name_is_refused_for_writing_and_nothing_is_made(tmp_path):
    with pytest.raises(UsageError, match=r"--out .*r\.jsonl\.gz: results are written as plain JSON lines, not gzip"):
        ResultsFile(tmp_path / "new" / "r.jsonl.gz")
    assert not (tmp_path / "new").exists()
