"""On a CUDA device: every lane, torch-nn-graph included, verifies and times through the runner in
fp32, tf32, bf16 and fp16, train and forward; the graph lane computes what the eager lane does;
timing is synchronised; a real out-of-memory error is recorded and the run goes on.

Skipped (and only collected) where no GPU is visible, e.g. in CI. Run on a GPU machine with
``pytest -m cuda``.
"""

from __future__ import annotations

import time

import pytest
import torch

pytestmark = pytest.mark.cuda

if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)

from rnnbench import runner  # noqa: E402
from rnnbench.cases import CELLS, Case  # noqa: E402
from rnnbench.env import environment  # noqa: E402
from rnnbench.lanes import LANES  # noqa: E402
from rnnbench.peak import matmul_peak  # noqa: E402
from rnnbench.precision import device_supports, matmul_mode, tolerance  # noqa: E402
from rnnbench.results import ResultsFile, read_records  # noqa: E402
from rnnbench.timing import measure  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402
from rnnbench.workload import lane_step, make_inputs  # noqa: E402

BUILTIN = ["torch-nn", "torch-nn-graph", "torch-cell-loop", "torch-fused-loop"]
DTYPES = [d for d in ("fp32", "tf32", "bf16", "fp16") if device_supports("cuda", d) is None]


def _case(cell, dtype, mode="train", **fields):
    sizes = dict(batch_size=4, seq_len=9, input_size=16, hidden_size=32, num_layers=2)
    return Case(cell=cell, dtype=dtype, mode=mode, device="cuda", **{**sizes, **fields})


# Lanes other than the built-in torch ones compile per case (jax.jit, torch.compile, Triton, Keras),
# seconds each: they are checked on the cells and dtypes where their paths differ most, the
# built-in lanes on all of them. Every row of every suite run is verified as well.
OTHER_LANES = [name for name in LANES if name not in BUILTIN and not name.startswith("test-")]
OTHER_GRID = [(cell, dtype) for cell in ("lstm", "gru") for dtype in ("fp32", "bf16") if dtype in DTYPES]


def _check_rows(rows, cell, dtype, must_be_ok):
    for row in rows:
        where = f"{row['case_key']} {row['lane']}: {row['status']} {row.get('message')}"
        # a lane may skip a cell or dtype with a reason, never get it wrong
        assert row["status"] in (("ok",) if must_be_ok else ("ok", "unavailable")), where
        if row["status"] == "ok":
            assert row["max_rel_error"] <= tolerance(cell, dtype), where
            assert row["us_per_example"] > 0 and row["first_call_ms"] > 0, where
            assert row["tflops"] > 0 and 0 < row["peak_fraction"] == pytest.approx(
                row["tflops"] / row["peak_tflops"]), where
            if not row["lane"].startswith(("jax-", "keras-jax")):  # JAX cannot reset its peak per step
                assert row["peak_mem_bytes"] > 0, where  # peak device memory is recorded


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", CELLS)
def test_every_builtin_lane_verifies_and_times_on_cuda(cell, dtype, tmp_path):
    cases = [_case(cell, dtype, mode) for mode in ("train", "forward")]
    out = ResultsFile(tmp_path / "r.jsonl")
    rows = runner.run(cases, [LANES[name] for name in BUILTIN], out, budget_s=0.02)
    assert len(rows) == 2 * len(BUILTIN)
    _check_rows(rows, cell, dtype, must_be_ok=True)
    env = list(read_records(out.path, "env"))
    assert env and env[0]["gpu"] and env[0]["gpu_count"] >= 1


@pytest.mark.parametrize("cell, dtype", OTHER_GRID)
@pytest.mark.parametrize("lane", OTHER_LANES)
def test_every_other_lane_verifies_or_says_why_not_on_cuda(lane, cell, dtype, tmp_path):
    cases = [_case(cell, dtype, mode) for mode in ("train", "forward")]
    rows = runner.run(cases, [LANES[lane]], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.02)
    _check_rows(rows, cell, dtype, must_be_ok=False)


@pytest.mark.parametrize("mode", ["train", "forward"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("cell", CELLS)
def test_graph_lane_computes_what_the_eager_lane_computes(cell, dtype, mode):
    if device_supports("cuda", dtype):
        pytest.skip(device_supports("cuda", dtype))
    case = _case(cell, dtype, mode)
    inputs = make_inputs(case)
    with matmul_mode(dtype):
        eager, graphed = lane_step(LANES["torch-nn"], case, inputs), lane_step(LANES["torch-nn-graph"], case, inputs)
        assert graphed.names == eager.names
        expected = [t.clone() for t in eager.fn()]
        first = [t.clone() for t in graphed.fn()]  # capture, then one replay
        again = graphed.fn()  # replay: same static outputs, same values
        torch.cuda.synchronize()
    tol = 1e-6 if dtype == "fp32" else 1e-2
    for name, e, a, b in zip(eager.names, expected, first, again):
        assert a.shape == e.shape and a.dtype == e.dtype, name
        assert relative_error(a, e) <= tol, (name, relative_error(a, e))
        assert torch.equal(a, b), name


def test_matmul_peak_per_dtype():
    """About a second per dtype at 8192³ (the cap: on an H100 no dtype reaches 10 ms a call below
    it); tensor-core dtypes above strict fp32."""
    peaks = {}
    for dtype in DTYPES:
        start = time.perf_counter()
        peaks[dtype] = matmul_peak("cuda", dtype)
        elapsed = time.perf_counter() - start
        assert peaks[dtype].tflops > 0 and elapsed < 3.0, (dtype, peaks[dtype], elapsed)
        print(dtype, peaks[dtype], f"{elapsed:.2f} s")
    for dtype in set(DTYPES) - {"fp32"}:
        assert peaks[dtype].tflops > 2 * peaks["fp32"].tflops, peaks


@pytest.mark.alone  # beside other processes on the GPU its sleep stretches (seen: 4.6 ms host, 2.0 ms timed)
def test_cuda_timing_is_synchronised():
    """``torch.cuda._sleep`` returns at once on the host (a launch takes microseconds); only a
    synchronised timer sees the GPU's wait. Compare with host time around a full synchronize."""
    import time

    def sleep():
        torch.cuda._sleep(4_000_000)  # milliseconds of GPU time, whatever the clock

    for _ in range(20):  # let the clocks ramp up
        sleep()
    torch.cuda.synchronize()
    host = []
    for _ in range(7):
        t0 = time.perf_counter()
        sleep()
        torch.cuda.synchronize()
        host.append((time.perf_counter() - t0) * 1e3)
    host_ms = sorted(host)[3]
    t0 = time.perf_counter()
    sleep()
    launch_ms = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    m = measure(sleep, "cuda", budget_s=0.1)
    assert host_ms > 0.5 and launch_ms < host_ms / 5  # the workload really is asynchronous
    assert 0.7 * host_ms <= m.median_ms <= 1.3 * host_ms, (m, host_ms)
    assert m.runs >= 5


def test_real_cuda_oom_is_recorded_and_the_run_goes_on(temp_lane, tmp_path):
    def greedy(cell, i, h, layers):
        torch.empty(2**50, dtype=torch.uint8, device="cuda")  # a petabyte
        raise AssertionError("allocation should have failed")

    case = _case("lstm", "fp32")
    rows = runner.run([case], [temp_lane("test-greedy", greedy), LANES["torch-nn"]],
                      ResultsFile(tmp_path / "r.jsonl"), budget_s=0.02)
    assert [r["status"] for r in rows] == ["oom", "ok"], rows
    assert "memory" in rows[0]["message"].lower()


def test_env_record_names_the_gpu():
    record = environment()
    assert record["gpu"] == torch.cuda.get_device_name(0)
    assert record["gpu_count"] == torch.cuda.device_count() >= 1
    assert record["cuda_runtime"] == torch.version.cuda
    assert record["gpus"] == [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    assert record["nccl"] is None or record["nccl"][0].isdigit()  # e.g. 2.27.3


@pytest.mark.parametrize("lane", ["torch-nn", "torch-cell-loop"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_memory_estimate_is_above_the_measured_peak_and_not_far_above(lane, cell):
    """memory.case_bytes must err high (a case it admits must fit) but not refuse cases that would
    fit by a wide margin: measured on the GPU, reference and lane together."""
    from rnnbench.memory import case_bytes
    from rnnbench.workload import reference_step

    case = Case(cell=cell, batch_size=64, seq_len=50, input_size=256, hidden_size=512, num_layers=2,
                dtype="fp32", mode="train", device="cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    inputs = make_inputs(case)
    reference = reference_step(case, inputs)
    with matmul_mode("fp32"):
        step = lane_step(LANES[lane], case, inputs)
        outputs, _ = step.first_call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    estimate = case_bytes(case)["device"]
    del reference, outputs, step
    assert peak <= estimate <= 4 * peak, (peak / 2**20, estimate / 2**20)


def test_peak_memory_of_a_lane_timed_beside_another_is_its_own(tmp_path):
    """The lanes of a case are alive together while they take turns; a row's peak_mem_bytes leaves
    out what the other live steps hold (here a CUDA graph's pool), so it reads as when the lane
    runs alone."""
    case = Case(cell="lstm", batch_size=64, seq_len=50, input_size=256, hidden_size=512, num_layers=2,
                dtype="fp32", mode="train", device="cuda")
    # a budget that holds 2 + 5 of these steps (a few ms each): not the long-call plan, which takes no turns
    beside = runner.run([case], [LANES["torch-nn-graph"], LANES["torch-nn"]], ResultsFile(tmp_path / "a.jsonl"),
                        budget_s=0.2)
    (alone,) = runner.run([case], [LANES["torch-nn"]], ResultsFile(tmp_path / "b.jsonl"), budget_s=0.2)
    graph, eager = beside
    assert graph["status"] == eager["status"] == alone["status"] == "ok"
    assert eager["turns"] > 1  # it was timed in turns beside the graph lane
    assert abs(eager["peak_mem_bytes"] - alone["peak_mem_bytes"]) <= 0.02 * alone["peak_mem_bytes"] + 2**20, (
        eager["peak_mem_bytes"], alone["peak_mem_bytes"], graph["peak_mem_bytes"])


# Every lane whose step runs in this process (workers time themselves in theirs; torch-compile masks
# as torch-fused-loop does, around a compiled step), full length, and variable-length where the
# lane is given the padded batch: packing (torch's pack_padded_sequence) copies its indices to the
# device synchronously, which is what a user of it pays, so packed lanes are left out there.
IN_PROCESS = [name for name, lane in LANES.items() if lane.prepare is None and not name.startswith("test-")]
SYNC_FREE = [(name, lengths) for name in IN_PROCESS for lengths in ("", "2:9")
             if not lengths or LANES[name].lengths in ("masked", "padded")]


@pytest.mark.parametrize("mode", ["train", "forward"])
@pytest.mark.parametrize("lane,lengths", SYNC_FREE)
def test_a_timed_step_never_waits_for_the_device(lane, lengths, mode):
    """A synchronisation inside the timed step serialises the host's work with the device's and
    adds it to the time: the loss's mask once was a host tensor copied to the device every step
    (a stream sync), for every lane's variable-length training. With PyTorch's sync debug mode set
    to error, a step that synchronises raises (PyTorch's own synchronisations: the mode is a
    prototype that does not see every one the driver makes)."""
    assert any(lengths for _, lengths in SYNC_FREE), "no lane takes the padded batch"
    case = _case("lstm", "fp32", mode, num_layers=1, lengths=lengths)
    step = lane_step(LANES[lane], case, make_inputs(case))
    step.first_call()  # compiles, captures, allocates and synchronises
    torch.cuda.set_sync_debug_mode("error")
    try:
        step.fn()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()


# Every lane of this process that takes a variable-length batch, its CUDA graph lanes included.
LENGTH_LANES = [name for name, lane in LANES.items()
                if lane.lengths and lane.prepare is None and not name.startswith("test-")]


@pytest.mark.parametrize("lane", LENGTH_LANES)
def test_every_length_lane_verifies_on_cuda(lane, tmp_path):
    """A variable-length case through the runner, train and forward: verified against the float64
    reference at each sequence's own length (for triton-graph, the lengths' copy is captured in
    the graph and replayed)."""
    assert "triton-graph" in LENGTH_LANES
    cases = [_case("lstm", "bf16", mode, lengths="2:9") for mode in ("train", "forward")]
    rows = runner.run(cases, [LANES[lane]], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.02)
    assert [row["status"] for row in rows] == ["ok", "ok"], [(row["status"], row.get("message")) for row in rows]
