"""rnnbench.report: seed-shaped tables (Train / Forward only µs per example, speedup over a
baseline lane), the published seed rows beside ours, and the plot."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rnnbench import report, runs
from rnnbench.cases import Case
from rnnbench.errors import UsageError
from rnnbench.lanes import LANES
from rnnbench.results import load_results
from rnnbench.runner import base_row

H100 = "NVIDIA H100 80GB HBM3"
GLAMPLE = dict(batch_size=20, seq_len=30, input_size=100, hidden_size=100, loss="last_step", device="cuda")


def _row(case: Case, lane: str, us: float | None, status: str = "ok", noisy: bool = False, env_id: str = "env0",
         gpu: str = H100) -> dict:
    row = {**base_row(case, LANES[lane], env_id), "status": status, "message": "", "gpu": gpu}
    if status == "ok":
        row.update(us_per_example=us, ms_per_batch=us * case.batch_size / 1e3, noisy=noisy)
    return row


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows)


def _glample_frame(dtype="fp32"):
    rows = []
    for mode, base in (("train", 100.0), ("forward", 40.0)):
        case = Case(cell="lstm", mode=mode, dtype=dtype, **GLAMPLE)
        rows += [_row(case, "torch-nn", base), _row(case, "torch-cell-loop", base * 4, noisy=True),
                 _row(case, "torch-fused-loop", base / 2)]
    return _frame(rows)


def _line(md: str, lane: str) -> list[str]:
    """The cells of the Markdown table row of ``lane`` (first match)."""
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[1] == lane:
            return cells
    raise AssertionError(f"no row for {lane!r} in\n{md}")


# --- from a real run ---------------------------------------------------------------------------

def test_markdown_from_a_real_run(small_run):
    frame = load_results(small_run.path)
    md = report.markdown(frame)
    assert "Train (µs)" in md and "Forward only (µs)" in md
    assert "train × torch-nn" in md and "forward × torch-nn" in md
    assert "### batch 8 × seq 16 × input 32 × hidden 32 × 1 layer · fp32 · all_steps loss · CPU" in md
    assert "torch-nn-graph" not in md  # unavailable lanes are not table rows
    by = {(r["lane"], r["mode"]): r for r in small_run.rows}
    nn_cells = _line(md, "torch-nn")
    assert nn_cells[:2] == ["gru", "torch-nn"] and nn_cells[4:6] == ["1.00×", "1.00×"]
    for text, mode in zip(nn_cells[2:4], ("train", "forward")):
        row = by[("torch-nn", mode)]
        assert text.endswith("*") == bool(row["noisy"])
        assert float(text.rstrip("*")) == pytest.approx(row["us_per_example"], abs=0.051)
    loop = _line(md, "torch-cell-loop")
    ratio = by[("torch-nn", "train")]["us_per_example"] / by[("torch-cell-loop", "train")]["us_per_example"]
    assert loop[4] == f"{ratio:.2f}×"
    assert "[published]" not in md.split("µs per example =")[0]  # no seed figures for this config


def test_tables_from_a_real_run(small_run):
    (entry,) = report.tables(load_results(small_run.path))
    title, table = entry[0], entry[1]
    assert title.startswith("batch 8 × seq 16")
    assert list(table.columns) == ["cell", "lane", "Train (µs)", "Forward only (µs)", "train × torch-nn",
                                   "forward × torch-nn", "train TFLOP/s", "forward TFLOP/s", "train % of peak",
                                   "forward % of peak"]
    assert list(table["lane"]) == ["torch-nn", "torch-cell-loop"]


def test_tflops_and_fraction_of_peak_from_a_real_run(small_run):
    md = report.markdown(load_results(small_run.path))
    by = {(r["lane"], r["mode"]): r for r in small_run.rows}
    cells = _line(md, "torch-cell-loop")
    for text, mode in zip(cells[6:8], ("train", "forward")):
        assert float(text) == pytest.approx(by[("torch-cell-loop", mode)]["tflops"], rel=5e-3)
    for text, mode in zip(cells[8:10], ("train", "forward")):
        assert 0 < float(text) == pytest.approx(100 * by[("torch-cell-loop", mode)]["peak_fraction"], rel=5e-3)
    peak = by[("torch-nn", "train")]
    assert (f"Peak: {report.significant(peak['peak_tflops'])} TFLOP/s, the best of a dense "
            f"{peak['peak_matmul_size']}³ fp32 matmul timed in the same run.") in md
    assert "TFLOP/s = the matmuls of the useful steps" in md


def test_a_peak_below_a_rows_rate_is_said_to_be_disturbed(small_run, tmp_path):
    """A peak timed while the machine was slower than for the rows (the CPU shared with another
    process) leaves rows over 100 % of it: the note says so, and says nothing of the kind when no
    row is past it."""
    assert "means nothing" not in report.markdown(load_results(small_run.path))
    lines = [json.loads(line) for line in small_run.path.read_text().splitlines()]
    slow = min(r["tflops"] for r in lines if r.get("status") == "ok") / 3  # a third of the slowest row's rate
    for r in lines:
        if r.get("status") == "ok":
            r.update(peak_tflops=slow, peak_fraction=r["tflops"] / slow)
    disturbed = tmp_path / "disturbed.jsonl"
    disturbed.write_text("".join(json.dumps(r) + "\n" for r in lines))
    md = report.markdown(load_results(disturbed))
    top = max(r["peak_fraction"] for r in lines if r.get("status") == "ok")
    assert f"Rows reach up to {top:.3g}× it" in md and "means nothing" in md
    # In fp32 on a GPU a lane past cuBLAS' fp32 peak ran its products on tensor cores: said so.
    for r in lines:
        if r.get("record") == "result":
            r.update(device="cuda", dtype="fp32")
    (tmp_path / "gpu.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    md = report.markdown(load_results(tmp_path / "gpu.jsonl"))
    assert f"Rows reach up to {top:.3g}× it" in md and "tensor cores" in md and "means nothing" not in md


def test_a_file_written_before_tflops_still_renders(small_run, tmp_path):
    """Rows without tflops and the peak fields (older files): the same times, no TFLOP/s or % of
    peak columns (they would be blank throughout), no Peak note."""
    old = tmp_path / "old.jsonl"
    dropped = ("tflops", "peak_tflops", "peak_matmul_size", "peak_fraction")
    lines = [json.loads(line) for line in small_run.path.read_text().splitlines()]
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in dropped}) + "\n" for r in lines))
    md = report.markdown(load_results(old))
    cells = _line(md, "torch-nn")
    assert cells[2:4] == _line(report.markdown(load_results(small_run.path)), "torch-nn")[2:4]
    assert len(cells) == 6 and "TFLOP/s |" not in md and "Peak:" not in md


def test_tflops_columns_stay_where_some_rows_have_them(small_run, tmp_path):
    """A table that joins old rows with new ones keeps the columns; the old rows' cells are blank."""
    mixed = tmp_path / "mixed.jsonl"
    dropped = ("tflops", "peak_tflops", "peak_matmul_size", "peak_fraction")
    lines = [json.loads(line) for line in small_run.path.read_text().splitlines()]
    lines = [{k: v for k, v in r.items() if k not in dropped} if r.get("lane") == "torch-nn" else r
             for r in lines]
    mixed.write_text("".join(json.dumps(r) + "\n" for r in lines))
    md = report.markdown(load_results(mixed))
    assert _line(md, "torch-nn")[6:10] == ["", "", "", ""]
    assert float(_line(md, "torch-cell-loop")[6]) > 0


def test_significant_digits_without_exponent():
    assert [report.significant(v) for v in (0.000123456, 0.0451, 45.23, 312.4, 1234.5, 0.0)] == [
        "0.000123", "0.0451", "45.2", "312", "1234", "0"]


def test_plot_writes_a_png(small_run, tmp_path):
    path = tmp_path / "speedup.png"
    report.plot(load_results(small_run.path), str(path))
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000


# --- synthetic frames --------------------------------------------------------------------------

def test_speedup_noisy_mark_and_lane_order():
    md = report.markdown(_glample_frame(), published=False)
    assert _line(md, "torch-nn")[2:6] == ["100.0", "40.0", "1.00×", "1.00×"]
    assert _line(md, "torch-cell-loop")[2:6] == ["400.0*", "160.0*", "0.25×", "0.25×"]
    assert _line(md, "torch-fused-loop")[2:6] == ["50.0", "20.0", "2.00×", "2.00×"]
    body = md.split("µs per example =")[0]
    assert body.index("| torch-nn ") < body.index("| torch-cell-loop ") < body.index("| torch-fused-loop ")
    assert "· NVIDIA H100 80GB HBM3" in md and "fp32 · last_step loss" in md


def test_glample_config_shows_published_titan_x_rows():
    md = report.markdown(_glample_frame())
    fast = _line(md, "[published] Theano (FastLSTM)")
    assert fast[0] == "lstm" and fast[2:4] == ["713.1", "241.7"]
    assert _line(md, "[published] Torch")[:4] == ["rnn_tanh", "[published] Torch", "403.3", "154.4"]
    assert "GTX Titan X" in md and "not our measurements" in md
    # our rows come first, the published ones after, and they carry no speedup
    assert md.index("| torch-fused-loop") < md.index("[published] Theano (FastLSTM)")
    assert all(cell == "" for cell in fast[4:])


def test_published_rows_can_be_turned_off_and_are_fp32_only():
    assert "[published] Theano" not in report.markdown(_glample_frame(), published=False)
    assert "[published] Theano" not in report.markdown(_glample_frame(dtype="bf16"))
    other = _glample_frame()
    other["batch_size"] = 32
    assert "[published]" not in report.markdown(other).split("µs per example =")[0]


def test_baseline_option():
    md = report.markdown(_glample_frame(), baseline="torch-fused-loop", published=False)
    assert "train × torch-fused-loop" in md and "train × torch-nn" not in md
    assert _line(md, "torch-nn")[4:6] == ["0.50×", "0.50×"]


def test_failed_rows_show_their_status_and_no_speedup():
    case = Case(cell="gru", **GLAMPLE)
    frame = _frame([_row(case, "torch-nn", 10.0), _row(case, "torch-cell-loop", None, status="mismatch"),
                    _row(case, "torch-fused-loop", None, status="oom")])
    md = report.markdown(frame)
    assert _line(md, "torch-cell-loop")[2:5] == ["mismatch", "", ""]
    assert _line(md, "torch-fused-loop")[2:5] == ["oom", "", ""]
    baseline_failed = _frame([_row(case, "torch-nn", None, status="error"), _row(case, "torch-cell-loop", 5.0)])
    assert _line(report.markdown(baseline_failed), "torch-cell-loop")[2:5] == ["5.0", "", ""]


def test_latest_row_supersedes_and_machines_are_separate():
    case = Case(cell="lstm", **GLAMPLE)
    frame = _frame([_row(case, "torch-nn", 10.0), _row(case, "torch-nn", 20.0),
                    _row(case, "torch-nn", 30.0, env_id="other", gpu="NVIDIA H200")])
    assert list(runs.latest(frame)["us_per_example"]) == [20.0, 30.0]
    titles = [t[0] for t in report.tables(frame, published=False)]
    assert len(titles) == 2 and titles[0].endswith(H100) and titles[1].endswith("NVIDIA H200")


def test_configs_with_only_unavailable_rows_are_skipped():
    case = Case(cell="lstm", **GLAMPLE)
    other = Case(cell="lstm", batch_size=3, seq_len=4, input_size=5, hidden_size=6)
    frame = _frame([_row(case, "torch-nn", None, status="unavailable"), _row(other, "torch-nn", 1.0)])
    (entry,) = report.tables(frame)
    assert entry[0].startswith("batch 3 × seq 4")


def test_plot_without_any_ok_row(tmp_path):
    """Found while writing these tests: this used to raise KeyError('us_per_example')."""
    case = Case(cell="lstm", **GLAMPLE)
    frame = _frame([_row(case, "torch-nn", None, status="mismatch"), _row(case, "torch-cell-loop", None, "unavailable")])
    with pytest.raises(UsageError, match="nothing to plot"):
        report.plot(frame, str(tmp_path / "p.png"))
    assert not (tmp_path / "p.png").exists()


def test_figures_keep_one_decimal_in_every_column():
    """Found while writing these tests: tabulate re-parsed the cell texts as numbers, so in a column
    with no '*' mark '40.0' printed as '40' (and large values in %g form)."""
    md = report.markdown(_glample_frame(), published=False)
    case = Case(cell="gru", **GLAMPLE)
    md2 = report.markdown(_frame([_row(case, "torch-nn", 40.0), _row(case, "torch-cell-loop", 1234567.0)]))
    assert _line(md2, "torch-nn")[2] == "40.0" and _line(md2, "torch-cell-loop")[2] == "1234567.0"
    assert _line(md, "torch-nn")[2] == "100.0"


# --- --baseline must name a lane with rows -------------------------------------------------------

def test_standing_counts_each_lanes_rows_against_the_baseline():
    """Four configurations, the lane at 2x, 100/105, 100/120 and 1x the baseline's speed; a fifth
    where the lane failed and a sixth without a baseline row count nowhere."""
    rows = []
    for hidden, lane_us in ((100, 50.0), (200, 105.0), (300, 120.0), (400, 100.0)):
        case = Case(cell="lstm", mode="forward", dtype="fp32", **{**GLAMPLE, "hidden_size": hidden})
        rows += [_row(case, "torch-nn", 100.0), _row(case, "torch-fused-loop", lane_us)]
    failed = Case(cell="lstm", mode="forward", dtype="fp32", **{**GLAMPLE, "hidden_size": 500})
    rows += [_row(failed, "torch-nn", 100.0), _row(failed, "torch-fused-loop", None, status="error")]
    alone = Case(cell="lstm", mode="train", dtype="fp32", **{**GLAMPLE, "hidden_size": 600})
    rows += [_row(alone, "torch-fused-loop", 1.0)]
    table = report.standing(_frame(rows))
    assert list(table["Lane"]) == ["torch-fused-loop"]
    lane = table.iloc[0]
    assert (lane["rows"], lane["≥ 0.9×"], lane["≥ 1×"]) == (4, 3, 2)
    assert (lane["median ×"], lane["worst ×"]) == ("0.98", "0.83")  # median of 0.952 and 1.0
    assert "H300" in lane["worst row"] and lane["worst row"].endswith("forward")
    assert report.standing(_frame(rows), floor=0.8).iloc[0]["≥ 0.8×"] == 4
    failed_only = _frame([r for r in rows if r["hidden_size"] == 500 and r["lane"] != "torch-nn"])
    assert report.standing(failed_only).empty  # nothing ok: nothing to stand on, no error


def test_check_baseline():
    report.check_baseline(_glample_frame(), "torch-fused-loop")  # present: no error
    with pytest.raises(UsageError, match=r"--baseline nope has no measured \(ok\) rows in these files; "
                                         r"lanes with rows: torch-nn, torch-cell-loop, torch-fused-loop"):
        report.check_baseline(_glample_frame(), "nope")
    case = Case(cell="gru", **GLAMPLE)
    failed = _frame([_row(case, "torch-nn", 10.0), _row(case, "torch-cell-loop", None, status="mismatch")])
    with pytest.raises(UsageError, match="--baseline torch-cell-loop has no measured .* lanes with rows: torch-nn$"):
        report.check_baseline(failed, "torch-cell-loop")


# --- the plot: one bar per configuration and machine, legend clear of the bars -----------------

@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """``drawn(frame, baseline)`` -> the Figure ``report.plot`` saved (captured at savefig)."""
    from matplotlib.figure import Figure

    figures = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (figures.append(self), real(self, *a, **k)))

    def draw(frame, baseline="torch-nn"):
        report.plot(frame, str(tmp_path / "p.png"), baseline)
        return figures[-1]

    return draw


def _bars(ax) -> dict[str, list[float]]:
    """x label -> bar heights (one per lane, in legend order) of a pandas bar chart."""
    labels = [t.get_text() for t in ax.get_xticklabels()]
    by_lane = [c.patches for c in ax.containers]
    return {label: [round(bars[i].get_height(), 9) for bars in by_lane] for i, label in enumerate(labels)}


def _speedup_rows(device: str, gpu: str, slow: float, **case_fields) -> list[dict]:
    """torch-nn at ``slow`` µs and torch-fused-loop at 10 µs: a speedup of slow / 10, both modes."""
    rows = []
    for mode in ("train", "forward"):
        case = Case(cell="lstm", mode=mode, **{**GLAMPLE, "device": device, **case_fields})
        env = "h100-box" if device == "cuda" else "cpu-box"
        rows += [_row(case, "torch-nn", slow, env_id=env, gpu=gpu), _row(case, "torch-fused-loop", 10.0, env_id=env,
                                                                          gpu=gpu)]
    return rows


def test_plot_keeps_machines_apart(drawn):
    """The issue's case: an H100 file (13×) and a CPU file (23×) of one configuration used to be
    averaged into one 18× bar, because the label left out the device and the GPU."""
    fig = drawn(_frame(_speedup_rows("cuda", H100, 130.0) + _speedup_rows("cpu", "cpu", 230.0)))
    for ax in fig.axes[:2]:
        bars = _bars(ax)
        assert bars == {f"cuda {H100}": [1.0, 13.0], "cpu": [1.0, 23.0]}


def test_plot_keeps_input_size_and_loss_apart(drawn):
    frame = _frame(_speedup_rows("cuda", H100, 130.0) + _speedup_rows("cuda", H100, 50.0, input_size=512)
                   + _speedup_rows("cuda", H100, 20.0, loss="all_steps"))
    bars = _bars(drawn(frame).axes[0])
    assert bars == {"I100 last_step": [1.0, 13.0], "I512 last_step": [1.0, 5.0], "I100 all_steps": [1.0, 2.0]}


def test_plot_label_names_the_environment_when_only_it_differs(drawn):
    rows = _speedup_rows("cuda", H100, 130.0)
    other = [{**r, "env_id": "newer-torch", "us_per_example": r["us_per_example"] / (2 if r["lane"] == "torch-nn" else 1)}
             for r in rows]  # the other environment's torch-nn is twice as fast: a speedup of 6.5
    bars = _bars(drawn(_frame(rows + other)).axes[0])
    assert bars == {"lstm env h100-box": [1.0, 13.0], "lstm env newer-torch": [1.0, 6.5]}


def test_plot_legend_is_outside_the_bars(drawn):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = drawn(_frame(_speedup_rows("cuda", H100, 130.0) + _speedup_rows("cpu", "cpu", 230.0)))
    renderer = FigureCanvasAgg(fig).get_renderer()  # plot() closed the figure; lay it out again
    for ax in fig.axes[:2]:
        legend = ax.get_legend()
        assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["torch-nn", "torch-fused-loop"]
        assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


def test_plot_colours_follow_the_lane_in_both_panels(drawn):
    case_rows = _speedup_rows("cuda", H100, 130.0)
    extra = Case(cell="lstm", mode="forward", **GLAMPLE)  # a lane measured in forward mode only
    fig = drawn(_frame(case_rows + [_row(extra, "torch-cell-loop", 400.0)]))
    colours = [{t.get_text(): h.get_facecolor() for t, h in zip(ax.get_legend().get_texts(),
                                                               ax.get_legend().legend_handles)} for ax in fig.axes[:2]]
    assert colours[0]["torch-fused-loop"] == colours[1]["torch-fused-loop"]
    assert colours[0]["torch-nn"] == colours[1]["torch-nn"]


# --- several runs (rnnbench run --runs N) -------------------------------------------------------

def _runs_frame(lane_us: list[float], base_us: list[float], statuses: list[str] | None = None) -> pd.DataFrame:
    """Glample's LSTM forward measured in len(lane_us) runs: torch-nn at ``base_us``, torch-fused-loop
    at ``lane_us`` (its status per run ``statuses``)."""
    case = Case(cell="lstm", mode="forward", **GLAMPLE)
    rows = []
    for run, (lane, base) in enumerate(zip(lane_us, base_us), start=1):
        status = statuses[run - 1] if statuses else "ok"
        rows += [{**_row(case, "torch-nn", base), "run": run},
                 {**_row(case, "torch-fused-loop", lane if status == "ok" else None, status), "run": run}]
    return _frame(rows)


def test_runs_give_the_median_of_each_runs_ratio_and_its_range():
    """Each run's ratio is its own lanes' (side by side in one process); the table gives their
    median and range, the times' medians, and says how many runs; standing and the plot's
    speedups take the median ratio."""
    # ratios 2.0, 1.25, 4.0 (torch-nn 100, 100, 100 against 50, 80, 25)
    md = report.markdown(_runs_frame([50.0, 80.0, 25.0], [100.0, 100.0, 100.0]), published=False)
    assert _line(md, "torch-fused-loop")[3] == "50.0" and _line(md, "torch-fused-loop")[5] == "2.00× (1.25–4.00)"
    assert _line(md, "torch-nn")[5] == "1.00×"
    assert "Runs: 3, each a process of its own" in md
    # ratios 2.0, 5.0, 1.0: their median 2.0, where the medians' ratio would be 100 / 30
    frame = _runs_frame([50.0, 20.0, 30.0], [100.0, 100.0, 30.0])
    assert _line(report.markdown(frame, published=False), "torch-fused-loop")[5] == "2.00× (1.00–5.00)"
    # ratios 2.5, 1.5, 1.0: their median 1.5, the medians' ratio 90 / 40
    frame = _runs_frame([40.0, 60.0, 20.0], [100.0, 90.0, 20.0])
    assert report.standing(frame).set_index("Lane").loc["torch-fused-loop", "median ×"] == "1.50"
    assert report.speedups(frame)["forward"].iloc[0]["torch-fused-loop"] == pytest.approx(1.5)


def test_a_run_not_ok_is_what_the_pair_shows():
    """A pair one of whose runs failed shows that run's status, not a median of the others."""
    md = report.markdown(_runs_frame([50.0, None, 25.0], [100.0, 100.0, 100.0], ["ok", "mismatch", "ok"]),
                         published=False)
    assert _line(md, "torch-fused-loop")[3] == "mismatch" and _line(md, "torch-fused-loop")[5] == ""


def test_one_run_is_as_before():
    """Rows without runs (one run, or files from before ``--runs``) give no range and no runs note."""
    md = report.markdown(_glample_frame(), published=False)
    assert "Runs:" not in md and "(" not in _line(md, "torch-fused-loop")[4]
