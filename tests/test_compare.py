"""rnnbench.compare and ``rnnbench compare``: synthetic results files whose answer is known.

Samples are drawn from a seeded generator around a known median, so a pair made 20 % slower with
a 0.5 % spread must come out slower (exit 1), an identical pair unchanged, a pair with a huge
spread noisy and not slower; old rows without samples fall back to their p20–p80 ranges.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from cli_helpers import run_main
from rnnbench import compare
from rnnbench.errors import UsageError

ENV = {"record": "env", "env_id": "base-env", "gpu": "NVIDIA H100 80GB HBM3", "driver": "580.1", "torch": "2.11.0",
       "cudnn": 91900, "triton": "3.6.0", "jax": None, "cpu": "Xeon"}


def draws(median: float, spread: float = 0.005, n: int = 40, seed: int = 0) -> list[float]:
    """``n`` sorted run times (ms) with the given median and a lognormal spread (sigma)."""
    values = median * np.random.default_rng(seed).lognormal(0.0, spread, n)
    return sorted(float(v) for v in values * median / np.median(values))


def row(case: str, samples: list[float] | None = None, lane: str = "torch-nn", env_id: str = "base-env",
        status: str = "ok", **fields) -> dict:
    """A result row of ``case`` with ``samples`` (its median, p20, p80 and noisy flag follow
    from them, as timing.Measurement computes them); ``samples=None`` for a failed row."""
    out = {"record": "result", "cell": "lstm", "batch_size": 8, "seq_len": 16, "input_size": 32, "hidden_size": 32,
           "num_layers": 1, "dtype": "fp32", "mode": "train", "loss": "all_steps", "device": "cuda",
           "case_key": case, "lane": lane, "env_id": env_id, "status": status}
    if samples is not None:
        median = float(np.median(samples))
        p20, p80 = (float(v) for v in np.quantile(samples, [0.2, 0.8]))
        out.update(ms_per_batch=median, us_per_example=median * 1e3 / 8, p20_ms=p20, p80_ms=p80,
                   samples_ms=samples, runs=len(samples), noisy=(p80 - p20) / median > 0.10)
    out.update(fields)
    return out


def write(path, *rows, env: dict | None = None):
    env = ENV if env is None else env
    records = [env] + [{**r, "env_id": env["env_id"]} for r in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def old(row_: dict) -> dict:
    """The same row as written before samples were recorded."""
    return {k: v for k, v in row_.items() if k not in ("samples_ms", "runs")}


# --- the statistics ------------------------------------------------------------------------

def test_twenty_percent_slower_with_tight_samples_is_slower():
    v = compare.judge(row("c", draws(10.0)), row("c", draws(12.0, seed=1)))
    assert v.verdict == "slower" and v.method == "bootstrap" and v.noisy == ""
    assert v.ratio == pytest.approx(1.2, rel=1e-9)
    assert 1.18 < v.ci[0] < 1.2 < v.ci[1] < 1.22


def test_twenty_percent_faster_is_faster():
    v = compare.judge(row("c", draws(12.0)), row("c", draws(10.0, seed=1)))
    assert v.verdict == "faster" and v.ci[1] < 1


def test_identical_samples_are_unchanged():
    samples = draws(10.0)
    v = compare.judge(row("c", samples), row("c", list(samples)))
    assert v.verdict == "unchanged" and v.ratio == 1.0 and v.ci[0] < 1 < v.ci[1] and v.noisy == ""


def test_a_significant_change_below_the_threshold_is_unchanged():
    v = compare.judge(row("c", draws(10.0)), row("c", draws(10.2, seed=1)))  # 2 %: real, but under 5 %
    assert v.ci[0] > 1 and v.verdict == "unchanged"
    assert compare.judge(row("c", draws(10.0)), row("c", draws(10.2, seed=1)), threshold=0.01).verdict == "slower"


def test_huge_spread_is_noisy_not_slower():
    v = compare.judge(row("c", draws(10.0, spread=0.6)), row("c", draws(12.0, spread=0.6, seed=1)))
    assert v.ratio == pytest.approx(1.2) and v.ci[0] < 1 < v.ci[1]
    assert v.verdict == "unchanged"
    assert "CI wider than 5%" in v.noisy and "BASE row noisy" in v.noisy and "NEW row noisy" in v.noisy


def test_a_row_flagged_noisy_is_called_out_even_with_a_tight_interval():
    base = row("c", draws(10.0), noisy=True)  # the runner's own flag (p20-p80 over 10 %)
    v = compare.judge(base, row("c", draws(10.0, seed=1)))
    assert v.noisy == "BASE row noisy" and v.verdict == "unchanged"


def test_old_rows_without_samples_fall_back_to_p20_p80():
    tight = compare.judge(old(row("c", draws(10.0))), old(row("c", draws(12.0, seed=1))))
    assert tight.ci is None and tight.method == "p20-p80" and tight.verdict == "slower"
    wide = compare.judge(old(row("c", draws(10.0, spread=0.6))), old(row("c", draws(12.0, spread=0.6, seed=1))))
    assert wide.method == "p20-p80" and wide.verdict == "unchanged" and "row noisy" in wide.noisy
    # one side old is enough to lose the interval
    assert compare.judge(old(row("c", draws(10.0))), row("c", draws(12.0, seed=1))).ci is None


def test_rows_with_only_a_median_are_judged_on_the_ratio():
    bare = {k: v for k, v in old(row("c", draws(10.0))).items() if k not in ("p20_ms", "p80_ms")}
    v = compare.judge(bare, {**bare, "ms_per_batch": 12.0})
    assert v.method == "ratio only" and v.verdict == "slower"


def test_too_few_samples_count_as_none():
    v = compare.judge(row("c", draws(10.0, n=2)), row("c", draws(12.0, n=2, seed=1)))
    assert v.ci is None and v.method == "p20-p80"


def test_ratio_ci_is_reproducible_and_covers_the_true_ratio():
    a, b = draws(10.0, spread=0.05, n=30), draws(11.0, spread=0.05, n=30, seed=1)
    assert compare.ratio_ci([a], [b]) == compare.ratio_ci([a], [b])
    rng = np.random.default_rng(7)
    covered = 0
    for trial in range(100):
        a = 10 * rng.lognormal(0, 0.05, 20)
        b = 11 * rng.lognormal(0, 0.05, 20)
        low, high = compare.ratio_ci([a], [b], seed=trial)
        covered += low <= 1.1 <= high
    assert covered >= 88  # nominal 95 %; measured 96-97 % at n = 20-50


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("0.05", 0.05), ("0", 0.0), ("12.5%", 0.125), (" 2% ", 0.02),
                                         ("150%", 1.5)])
def test_parse_threshold(text, value):
    assert compare.parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text, message", [("five", "fraction"), ("-1%", "at least 0"), ("nan", "finite"),
                                           ("5", "did you mean 5%"), ("inf%", "finite")])
def test_parse_threshold_refuses(text, message):
    with pytest.raises(UsageError, match=message):
        compare.parse_threshold(text)


# --- two files -----------------------------------------------------------------------------

def test_several_runs_widen_the_interval_by_their_spread(tmp_path):
    """A file of three runs (``--runs 3``): the pair's median is the runs' medians' median, and
    its interval draws runs, then samples, so three tight runs that disagree (NEW's medians 10.0,
    10.6, 11.2 against BASE's 10.0 three times) leave a 6 % change unresolved where the last run
    alone (12 %) or every sample pooled would call it slower. A failed run fails the pair."""
    def runs(medians, seeds):
        return [row("c", draws(m, seed=s), run=i) for i, (m, s) in enumerate(zip(medians, seeds), start=1)]

    base = write(tmp_path / "base.jsonl", *runs([10.0, 10.0, 10.0], [1, 2, 3]))
    new = write(tmp_path / "new.jsonl", *runs([10.0, 10.6, 11.2], [4, 5, 6]))
    (pair,) = compare.compare_files(base, new).pairs.itertuples()
    assert pair.method == "bootstrap over runs" and pair.ratio == pytest.approx(1.06, abs=1e-3)
    assert pair.verdict == "unchanged" and pair.ci_low < 1 < pair.ci_high
    pooled = compare.ratio_ci([[v for r in runs([10.0] * 3, [1, 2, 3]) for v in r["samples_ms"]]],
                              [[v for r in runs([10.0, 10.6, 11.2], [4, 5, 6]) for v in r["samples_ms"]]])
    assert pooled[0] > 1  # (what pooling would have called significant)
    broken = write(tmp_path / "broken.jsonl", *runs([10.0, 10.0], [4, 5]), row("c", None, status="error", run=3))
    with pytest.raises(UsageError, match="no \\(case, lane\\) pair measured ok in both"):
        compare.compare_files(base, broken)


def test_a_pair_measured_on_two_machines_is_the_machine_written_last(tmp_path):
    """A file holding a pair's two runs on one machine and then one run on another (a rerun
    elsewhere, appended): its row is the second machine's run alone, not a run of each."""
    other = {**ENV, "env_id": "other-env", "gpu": "NVIDIA H200"}
    records = [ENV, other, {**row("c", draws(10.0)), "run": 1}, {**row("c", draws(10.0, seed=1)), "run": 2},
               {**row("c", draws(20.0, seed=2), env_id="other-env"), "run": 1}]
    path = tmp_path / "two-machines.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (got,) = compare.latest_rows(path).values()
    assert got["env_id"] == "other-env" and got["processes"] == 1
    assert got["ms_per_batch"] == pytest.approx(20.0)


def test_compare_files_pairs_latest_rows_and_lists_the_rest(tmp_path):
    base = write(tmp_path / "base.jsonl", row("slow", draws(10.0)), row("same", draws(5.0)),
                 row("gone", draws(1.0)), row("broke", draws(1.0)), row("graph", None, status="unavailable"),
                 row("same", draws(5.0, seed=3), lane="torch-cell-loop"))
    new = write(tmp_path / "new.jsonl", row("slow", draws(10.0, seed=1)), row("slow", draws(12.0, seed=1)),
                row("same", draws(5.0)), row("broke", None, status="mismatch"), row("added", draws(1.0)),
                row("graph", None, status="unavailable"), row("same", draws(4.0, seed=3), lane="torch-cell-loop"))
    result = compare.compare_files(base, new)
    got = {(r.case_key, r.lane): r.verdict for r in result.pairs.itertuples()}
    assert got == {("slow", "torch-nn"): "slower", ("same", "torch-nn"): "unchanged",
                   ("same", "torch-cell-loop"): "faster"}  # "slow": the latest NEW row (12 ms) counts
    assert list(result.pairs["verdict"]) == ["slower", "faster", "unchanged"]  # slower first
    assert result.slower == 1 and result.warnings == []
    others = {(r.case_key, r.base_status, r.new_status) for r in result.not_compared.itertuples()}
    assert others == {("gone", "ok", "absent"), ("broke", "ok", "mismatch"), ("added", "absent", "ok")}
    assert result.broken == 1  # "broke": ok in BASE, a mismatch in NEW; "gone" is only absent


def test_a_pair_that_started_failing_fails_the_comparison(tmp_path, cli):
    base = write(tmp_path / "base.jsonl", row("same", draws(5.0)), row("broke", draws(1.0)))
    for status in ("mismatch", "oom", "too_large", "error"):
        new = write(tmp_path / f"new-{status}.jsonl", row("same", draws(5.0)), row("broke", None, status=status))
        result = compare.compare_files(base, new)
        assert result.slower == 0 and result.broken == 1, status
        proc = cli("compare", base, new)
        assert proc.returncode == 1 and "**1 ok in BASE but failing in NEW**" in proc.stdout, proc.stderr
    fine = write(tmp_path / "new-ok.jsonl", row("same", draws(5.0)), row("broke", draws(1.0)))
    assert cli("compare", base, fine).returncode == 0


def test_environment_differences_are_warned_one_line_each(tmp_path):
    base = write(tmp_path / "base.jsonl", row("c", draws(10.0)))
    new_env = {**ENV, "env_id": "new-env", "torch": "2.13.0", "gpu": "NVIDIA H200"}
    new = write(tmp_path / "new.jsonl", row("c", draws(10.0)), env=new_env)
    warnings = compare.compare_files(base, new).warnings
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: gpu differs") and "NVIDIA H100 80GB HBM3" in warnings[0]
    assert warnings[1].startswith("warning: torch differs") and "2.11.0" in warnings[1] and "2.13.0" in warnings[1]
    same_machine = write(tmp_path / "again.jsonl", row("c", draws(10.0)), env={**ENV, "env_id": "other-id"})
    assert compare.compare_files(base, same_machine).warnings == []  # the id alone differs: same software


def test_a_run_timed_with_another_training_step_is_warned(tmp_path):
    """Records written before the training step was recorded (the loss differentiated through
    autograd) against the step of now (rnnbench.workload.TRAIN_STEP, which the environment records)."""
    from rnnbench.env import environment

    base = write(tmp_path / "base.jsonl", row("c", draws(10.0)))
    now = {**ENV, "env_id": "now", "train_step": environment()["train_step"]}
    warnings = compare.compare_files(base, write(tmp_path / "new.jsonl", row("c", draws(10.0)), env=now)).warnings
    assert warnings == [f"warning: train_step differs (BASE None; NEW {now['train_step']}): the ratios measure "
                        "that change too"]


def test_no_pairs_in_common(tmp_path):
    base = write(tmp_path / "base.jsonl", row("a", draws(1.0)))
    new = write(tmp_path / "new.jsonl", row("b", draws(1.0)), row("a", None, status="oom"))
    with pytest.raises(UsageError, match="no .case, lane. pair measured ok in both"):
        compare.compare_files(base, new)


def test_markdown_and_csv(tmp_path):
    base = write(tmp_path / "base.jsonl", row("slow", draws(10.0)), old(row("old", draws(3.0))),
                 row("gone", draws(1.0)))
    new = write(tmp_path / "new.jsonl", row("slow", draws(12.0, seed=1)), old(row("old", draws(3.0, seed=1))))
    result = compare.compare_files(base, new)
    md = compare.markdown(result)
    assert "**1 slower**, 0 faster, 1 unchanged (0 noisy) of 2 pairs; 1 not compared, **0 ok in BASE but failing in NEW**." in md
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")]
             for line in md.splitlines() if line.startswith("| ")}
    assert lines["slow"][4:7] == ["1.200", lines["slow"][5], "slower"] and lines["slow"][5] != "unknown (no samples)"
    assert lines["old"][5:7] == ["unknown (no samples)", "unchanged"] and lines["old"][8] == "p20-p80"
    assert lines["gone"][1:] == ["torch-nn", "ok", "absent"]
    rows = list(csv.DictReader(io.StringIO(compare.csv(result))))
    assert [(r["case_key"], r["verdict"]) for r in rows] == [("slow", "slower"), ("old", "unchanged"),
                                                            ("gone", "not compared")]
    assert float(rows[0]["ratio"]) == pytest.approx(1.2) and float(rows[0]["ci_low"]) > 1
    assert rows[1]["ci_low"] == "" and rows[2]["base_status"] == "ok" and rows[2]["new_status"] == "absent"


# --- the command, as a user runs it --------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    base = write(tmp / "base.jsonl", row("a", draws(10.0)), row("b", draws(5.0)), row("noisy", draws(10.0, 0.6)))
    return {
        "base": base,
        "slower": write(tmp / "slower.jsonl", row("a", draws(12.0, seed=1)), row("b", draws(5.0, seed=1))),
        "same": write(tmp / "same.jsonl", row("a", draws(10.0)), row("b", draws(5.0))),
        "noisy": write(tmp / "noisy.jsonl", row("a", draws(10.0, seed=1)), row("noisy", draws(12.0, 0.6, seed=1))),
        "other_env": write(tmp / "other.jsonl", row("a", draws(10.0)), env={**ENV, "env_id": "x", "driver": "590.2"}),
        "old": write(tmp / "old.jsonl", *(old(r) for r in (row("a", draws(12.0, seed=1)), row("b", draws(5.0))))),
        "nothing_shared": write(tmp / "nothing.jsonl", row("zzz", draws(1.0))),
        "notes": tmp / "notes.txt",
        "tmp": tmp,
    }


RUNS = {
    "slower": ["base", "slower"],
    "same": ["base", "same"],
    "noisy": ["base", "noisy"],
    "other_env": ["base", "other_env"],
    "old": ["base", "old"],
    "csv, threshold 25%": ["base", "slower", "--format", "csv", "--threshold", "25%"],
    "missing file": ["base", "missing.jsonl"],
    "not results": ["notes", "base"],
    "no pairs": ["base", "nothing_shared"],
    "bad threshold": ["base", "same", "--threshold", "5"],
    "bad format": ["base", "same", "--format", "xml"],
}


@pytest.fixture(scope="module")
def runs(cli, files):
    files["notes"].write_text("my notes\nnot JSON\n")
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(cli, "compare", *[str(files.get(a, a)) for a in args], cwd=files["tmp"])
                   for name, args in RUNS.items()}
        return {name: f.result() for name, f in futures.items()}


def _verdicts(stdout: str) -> dict[str, str]:
    """case -> verdict, from the Markdown table of compared pairs."""
    cells = ([x.strip() for x in line.strip().strip("|").split("|")] for line in stdout.splitlines()
             if line.startswith("| "))
    return {c[0]: c[6] for c in cells if len(c) > 6 and c[0] != "case"}


def test_cli_slower_exits_1(runs):
    proc = runs["slower"]
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    assert _verdicts(proc.stdout) == {"a": "slower", "b": "unchanged"}
    assert "### Not compared" in proc.stdout and "| noisy  | torch-nn | ok     | absent |" in proc.stdout


def test_cli_same_and_noisy_exit_0(runs):
    assert runs["same"].returncode == 0, runs["same"].stderr
    assert _verdicts(runs["same"].stdout) == {"a": "unchanged", "b": "unchanged"}
    noisy = runs["noisy"]
    assert noisy.returncode == 0, noisy.stderr
    assert _verdicts(noisy.stdout) == {"a": "unchanged", "noisy": "unchanged"}
    assert "CI wider than 5%" in noisy.stdout and "(1 noisy)" in noisy.stdout


def test_cli_warns_when_environments_differ(runs):
    proc = runs["other_env"]
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == ["rnnbench: warning: driver differs (BASE 580.1; NEW 590.2): "
                                        "the ratios measure that change too"]


def test_cli_old_rows(runs):
    proc = runs["old"]
    assert proc.returncode == 1, proc.stderr  # a (12 vs 10 ms, p20-p80 apart) is slower without samples
    assert "unknown (no samples)" in proc.stdout and "p20-p80" in proc.stdout


def test_cli_csv_and_threshold(runs):
    proc = runs["csv, threshold 25%"]
    assert proc.returncode == 0, proc.stderr  # 20 % slower is within a 25 % threshold
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [(r["case_key"], r["verdict"]) for r in rows] == [("a", "unchanged"), ("b", "unchanged"),
                                                            ("noisy", "not compared")]
    assert float(rows[0]["ratio"]) == pytest.approx(1.2) and float(rows[0]["ci_low"]) > 1.1


def test_output_is_reproducible(files):
    """The bootstrap is seeded: the same two files always give the same text."""
    first = compare.markdown(compare.compare_files(files["base"], files["slower"]))
    assert compare.markdown(compare.compare_files(files["base"], files["slower"])) == first


@pytest.mark.parametrize("name, fragments", [
    ("missing file", ["no results file at missing.jsonl"]),
    ("not results", ["notes.txt", "not a JSON line"]),
    ("no pairs", ["no (case, lane) pair measured ok in both"]),
    ("bad threshold", ["did you mean 5%?"]),
    ("bad format", ["unknown format 'xml'"]),
])
def test_cli_bad_input_is_one_line_and_exit_2(runs, name, fragments):
    proc = runs[name]
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("rnnbench: error: ") and all(f in line for f in fragments), line


def test_cli_compares_a_gzipped_base_as_the_plain_one(monkeypatch, capsys, files, tmp_path):
    gz = tmp_path / "base.jsonl.gz"
    gz.write_bytes(gzip.compress(files["base"].read_bytes()))
    plain = run_main(monkeypatch, capsys, "compare", files["base"], files["slower"])
    packed = run_main(monkeypatch, capsys, "compare", gz, files["slower"])
    assert plain.returncode == packed.returncode == 1, packed.stderr  # "a" is slower in both
    assert f"BASE: {gz}" in packed.stdout
    assert packed.stdout == plain.stdout.replace(f"BASE: {files['base']}", f"BASE: {gz}")
