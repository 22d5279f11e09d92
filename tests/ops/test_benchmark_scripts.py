"""The kernel benchmark scripts still run: each on the CPU under the interpreter, one small case,
in a process of its own (the scripts import the kernels themselves). Their GPU runs are recorded
under benchmarks/results/h100/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rnnbench.cases import CELLS
from rnnbench.ops.plans import ON_CHIP_SPLITS
from rnnbench.precision import tolerance
from rnnbench.verify import relative_error

from benchmark_helpers import run_benchmark

ROOT = Path(__file__).resolve().parents[2]
_CUDA = torch.cuda.is_available()
pytestmark = pytest.mark.usefixtures("interpreter")


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return run_benchmark(script, *args, interpret=True)


def test_on_chip_compares_both_plans_on_one_case(tmp_path):
    proc = _run("on_chip.py", str(tmp_path), "--device", "cpu", "--cases", "0", "--case-budget", "0.01",
                "--order", "ABBA")
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, row = [json.loads(line) for line in (tmp_path / "on_chip.jsonl").read_text().splitlines()]
    assert env["record"] == "env" and "error" not in row, row
    a, b = row["plans"]
    for plan in (a, b):  # both plans verified against float64 and timed, both modes
        assert row[f"error_{plan}"] <= tolerance(row["cell"], row["dtype"])
        assert row[f"forward_ms_triton_{plan}"] > 0 and row[f"train_ms_triton_{plan}"] > 0
    assert f"{row['cell']} B{row['batch_size']} H{row['hidden_size']}" in proc.stdout  # the table


def test_on_chip_runs_the_fast_activations_comparison(tmp_path):
    proc = _run("on_chip.py", str(tmp_path), "--device", "cpu", "--compare", "fast_activations", "--cases", "1",
                "--case-budget", "0.01", "--order", "AB")
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, row = [json.loads(line) for line in (tmp_path / "fast_activations.jsonl").read_text().splitlines()]
    assert row["plans"] == ["fast", "exact"] and "error" not in row, row
    assert max(row["error_fast"], row["error_exact"]) <= tolerance(row["cell"], row["dtype"])
    assert row["forward_ms_triton_exact"] > 0


@pytest.mark.parametrize("compare, case, plans, cell", [("split_k", "2", ["split_k", "transpose"], "lstm"),
                                                       ("host_path", "1", ["torch_calls", "default"], "rnn_tanh"),
                                                       ("chip_split", "0", ["chip_in_step", "chip_fp16"], "rnn_tanh"),
                                                       ("products", "1", ["masked_products", "products"], "lstm")])
def test_on_chip_runs_a_training_comparison(tmp_path, compare, case, plans, cell):
    proc = _run("on_chip.py", str(tmp_path), "--device", "cpu", "--compare", compare, "--cases", case,
                "--case-budget", "0.01", "--order", "AB")
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, row = [json.loads(line) for line in (tmp_path / f"{compare}.jsonl").read_text().splitlines()]
    assert row["plans"] == plans and row["cell"] == cell and "error" not in row, row
    assert max(row[f"error_{plan}"] for plan in plans) <= tolerance(row["cell"], row["dtype"])
    assert all(row[f"train_ms_triton_{plan}"] > 0 for plan in plans)
    if compare == "chip_split":  # the kernel was launched with the split each plan names
        assert row["forward_meta_chip_in_step"]["CHIP_SPLIT"] == ON_CHIP_SPLITS[""]
        assert row["forward_meta_chip_fp16"]["CHIP_SPLIT"] == ON_CHIP_SPLITS["fp16"]


def test_products_checks_and_times_every_tiling_beside_cublas(tmp_path):
    proc = _run("products.py", str(tmp_path), "--device", "cpu")
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, *rows = [json.loads(line) for line in (tmp_path / "products.jsonl").read_text().splitlines()]
    assert env["record"] == "env" and [r["part"] for r in rows] == ["projection", "gradients"]
    for row in rows:
        assert "error" not in row, row
        tilings = [k.removeprefix("us_") for k in row if k.startswith("us_") and k != "us_cublas"]
        assert len(tilings) >= 4 and any(t.endswith("-masked") for t in tilings)
        assert row["us_cublas"] > 0 and all(row[f"us_{t}"] > 0 for t in tilings)
        assert max(row[f"error_{t}"] for t in tilings) <= tolerance("lstm", row["dtype"])
    assert "projection 64x128x64 fp32" in proc.stdout  # the table


def test_on_chip_anatomy_times_every_part_and_the_kernel(tmp_path):
    proc = _run("on_chip_anatomy.py", str(tmp_path), "--device", "cpu")
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((tmp_path / "on_chip_anatomy.json").read_text())
    (row,) = record["rows"]
    assert "error" not in row and record["env"]
    assert set(row["us_per_step"]) == {"matmul", "+store", "+tanh", "+x 1 ahead", "+x 2 ahead", "all, x 1 ahead",
                                       "all, x 2 ahead", "kernel", "kernel, exact act"}  # no inline PTX on the CPU
    assert f"{row['cell']} B{row['batch_size']} H{row['hidden_size']}" in proc.stdout


@pytest.mark.parametrize("script, args, message", [
    ("on_chip.py", ("--device", "cpu", "--order", "AC"), "--order takes A and B only"),
    ("on_chip.py", ("--device", "cpu", "--cases", "99"), "--cases takes indices"),
    ("on_chip.py", ("--device", "cpu", "--cases", "one"), "--cases takes indices"),
    ("on_chip.py", ("--compare", "nope"), "invalid choice: 'nope'"),
    ("strict_fp32.py", ("--device", "cpu", "--cases", "-3"), "--cases takes 1 to"),
    ("strict_fp32.py", ("--device", "cpu", "--graphed"), "--graphed times CUDA graphs"),
    ("plan_sweep.py", ("--cases", "nope"), "invalid choice: 'nope'"),
    ("plan_sweep.py", ("--budget", "soon"), "invalid float value: 'soon'"),
    pytest.param("plan_sweep.py", ("--cases", "half_operands"), "no CUDA device here",
                 marks=pytest.mark.skipif(_CUDA, reason="on a GPU it measures")),
    pytest.param("results/h200/train-floor/probes/train_floor.py", (), "no CUDA device here",
                 marks=pytest.mark.skipif(_CUDA, reason="on a GPU it measures")),
    pytest.param("results/h200/stacks/probes/stacks.py", (), "no CUDA device here",
                 marks=pytest.mark.skipif(_CUDA, reason="on a GPU it measures")),
    pytest.param("results/h200/stacks/probes/bidirectional_profile.py", (), "no CUDA device here",
                 marks=pytest.mark.skipif(_CUDA, reason="on a GPU it measures")),
    pytest.param("results/h200/recurrent-dropout/probes/dropout.py", (), "no CUDA device here",
                 marks=pytest.mark.skipif(_CUDA, reason="on a GPU it measures")),
    pytest.param("layer_norm.py", (), "no CUDA device here",
                 marks=pytest.mark.skipif(_CUDA, reason="on a GPU it measures")),
    ("layer_norm.py", ("--mode", "fast"), "invalid choice: 'fast'"),
    ("host_time.py", ("--parts", "engine,nope"), "unknown part 'nope'"),
    ("products.py", ("--device", "cpu", "--parts", "projection,nope"), "unknown part 'nope'"),
    ("host_time.py", ("--launch-modes", "direct,direct"), "--launch-modes takes two different modes"),
    ("host_time.py", ("--launch-modes", "jit,fast"), "--launch-modes takes two different modes"),
])
def test_bad_options_are_refused_in_one_line_before_measuring(tmp_path, script, args, message):
    proc = _run(script, str(tmp_path), *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # the error alone, no usage block
    assert not list(tmp_path.iterdir())


def test_plan_sweep_prints_a_row_that_failed_before_it_was_measured(monkeypatch):
    """A case whose measurement raised before naming its plan (an error row made from the case's
    own items, ``ab.run_cases``) prints as a line naming its override, not a traceback."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import plan_sweep

    row = {"cell": "lstm", "batch_size": 128, "hidden_size": 1024, "dtype": "tf32", "seq_len": 30,
           "plan": {"forward_half_operands": False}, "error": "OutOfMemoryError: CUDA out of memory"}
    line = plan_sweep.row_line(row)
    assert "forward_half_operands=False" in line and line.endswith("OutOfMemoryError: CUDA out of memory")


def test_aot_split_k_refuses_an_unknown_precision_in_one_line():
    proc = _run("aot_split_k.py", "--precision", "nope")
    assert proc.returncode == 2 and "invalid choice: 'nope'" in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("cell", CELLS)
def test_triton_dev_builds_the_cell_asked_for(cell, monkeypatch):
    """Its module pair comes from the lanes' builders: the cell asked for (it once built a GRU for
    every cell but the LSTM), ours on the kernels, the same weights and outputs."""
    import torch

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import triton_dev

    monkeypatch.setattr(triton_dev, "DEVICE", "cpu")
    theirs, ours = triton_dev._modules(cell, 8, 16, "fp32")
    assert theirs.mode == ours.mode == {"lstm": "LSTM", "gru": "GRU"}.get(cell, cell.upper())
    assert ours.backend == "triton"
    x = torch.randn(5, 3, 8)
    with torch.no_grad():
        assert relative_error(ours(x)[0], theirs(x)[0].double()) <= tolerance(cell, "fp32")


@pytest.mark.parametrize("cell", CELLS)
def test_kernel_tensors_are_the_cells_and_the_seeds(cell, monkeypatch):
    """The probes' shared inputs for timing kernels alone: the cell's gate rows, ``W_hh`` and the bias
    in the dtype asked, ``x_proj`` in fp32 over the steps asked; the same seed gives the same
    tensors (probes compare forms on them) and another seed others."""
    import torch

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import triton_dev

    monkeypatch.setattr(triton_dev, "DEVICE", "cpu")
    rows = {"lstm": 4, "gru": 3}.get(cell, 1) * 5
    w_hh, bias, x_proj = triton_dev.kernel_tensors(cell, 3, 5, torch.bfloat16, 7)
    assert (w_hh.shape, bias.shape, x_proj.shape) == ((rows, 5), (rows,), (7, 3, rows))
    assert (w_hh.dtype, bias.dtype, x_proj.dtype) == (torch.bfloat16, torch.bfloat16, torch.float32)
    again, other = triton_dev.kernel_tensors(cell, 3, 5, torch.bfloat16, 7), triton_dev.kernel_tensors(
        cell, 3, 5, torch.bfloat16, 7, seed=1)
    assert all(torch.equal(a, b) for a, b in zip((w_hh, bias, x_proj), again))
    assert not any(torch.equal(a, b) for a, b in zip((w_hh, bias, x_proj), other))


def _check_h100_accepts(label: str, cell: str, batch: int, hidden: int, dtype: str, override: dict) -> None:
    """Fail the test unless ``choose_plan`` accepts ``override`` for this shape on an H100 (132
    multiprocessors, no GPU touched) in both directions."""
    import torch

    from rnnbench.ops.plans import STRICT_FP32_DEFAULT, choose_plan
    from rnnbench.ops.recurrence import NUM_GATES

    torch_dtype, precision = {"fp32": (torch.float32, STRICT_FP32_DEFAULT), "tf32": (torch.float32, "tf32"),
                              "bf16": (torch.bfloat16, "ieee"), "fp16": (torch.float16, "ieee")}[dtype]
    for direction in ("forward", "backward"):
        try:
            choose_plan(batch, hidden, NUM_GATES[cell], torch_dtype, torch.device("cuda"), multiprocessors=132,
                        precision=precision, direction=direction, **override)
        except (KeyError, TypeError, ValueError) as err:
            pytest.fail(f"{label}: {cell} B{batch} H{hidden} {dtype} {override} {direction}: {err!r}")


def test_every_on_chip_case_has_plans_an_h100_accepts(monkeypatch):
    """Each comparison's cases name plans in ``PLANS`` whose overrides ``choose_plan`` accepts for
    an H100 (132 multiprocessors) in both directions: a misspelt plan or field, or an override the
    shape cannot take, fails here rather than on the GPU. The H100's Triton (3.6) has the Gluon
    forwards, which ``input_ahead`` asks for, whatever this machine's Triton."""
    from rnnbench.ops import gluon_common

    monkeypatch.setattr(gluon_common, "AVAILABLE", True)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import on_chip

    checked = 0
    for name, cases in on_chip.COMPARISONS.items():
        for cell, batch, _seq, _input, hidden, dtype, plans in cases:
            for plan in plans:
                assert plan in on_chip.PLANS, (name, plan)
                _check_h100_accepts(f"{name} plan {plan!r}", cell, batch, hidden, dtype, on_chip.PLANS[plan])
                checked += 1
    assert checked >= 2 * len(on_chip.COMPARISONS)


def test_every_plan_sweep_override_is_one_an_h100_accepts(monkeypatch):
    """``plan_sweep.py`` (CUDA only) names overrides that ``choose_plan`` accepts for an H100 in
    both directions, and each case set times the default plan: a misspelt field or a plan the
    shape cannot take fails here, not on the GPU."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import plan_sweep

    for name, cases in plan_sweep.CASE_SETS.items():
        for cell, batch, hidden, dtype, _seq, overrides in cases:
            assert {} in overrides, (name, cell, batch, hidden, dtype)  # the default beside its variants
            for override in overrides:
                _check_h100_accepts(name, cell, batch, hidden, dtype, override)


def test_strict_fp32_times_both_modes_on_one_case(tmp_path):
    proc = _run("strict_fp32.py", str(tmp_path), "--device", "cpu", "--cases", "1", "--case-budget", "0.01")
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, row = [json.loads(line) for line in (tmp_path / "strict_fp32.jsonl").read_text().splitlines()]
    assert env["record"] == "env" and "error" not in row, row
    for key in ("torch-nn", "ieee", "tf32x3"):
        assert row[f"error_{key}"] <= tolerance(row["cell"], "fp32")
        assert row[f"forward_ms_{key}"] > 0 and row[f"train_ms_{key}"] > 0


def test_tf32_backward_emulation_rounds_what_it_says():
    """The emulation's TF32 drops exactly the low 13 mantissa bits, and each mode perturbs the
    gradients (by less than TF32's tolerance at this size) where exact mode does not."""
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import tf32_backward_error as emu
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    x = torch.tensor([1 + 2 ** -10 + 2 ** -11, -3.0, 2 ** -30], dtype=torch.float64)
    assert emu.tf32(x).tolist() == [1 + 2 ** -10, -3.0, 2 ** -30]
    exact = emu.gradients("gru", 3, 4, 5, 7, "exact")
    for mode in list(emu.MODES)[1:]:
        got = emu.gradients("gru", 3, 4, 5, 7, mode)
        assert 0 < relative_error(got[0], exact[0]) < 1e-2, mode


def test_sass_same_ignores_moved_parameters_and_catches_a_changed_instruction(tmp_path):
    """Two dumps whose kernels differ only in addresses, encodings and a parameter's offset are the
    same; one changed instruction is not (exit 1, the file named); a missing directory is one line."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "k.sass").write_text("        /*0010*/   LDC R1, c[0x0][0x28] ;   /* 0x00000a00ff017b82 */\n"
                                   "        /*0020*/   FFMA R2, R2, R3, 0.5 ;   /* 0x3f00000002027423 */\n")
    (after / "k.sass").write_text("        /*0030*/   LDC R1, c[0x0][0x30] ;   /* 0x00000c00ff017b82 */\n"
                                  "        /*0040*/   FFMA R2, R2, R3, 0.5 ;   /* 0x3f00000002027423 */\n")
    same = _run("sass_same.py", str(before), str(after))
    assert same.returncode == 0 and "1 of 1 kernels the same" in same.stdout, same.stdout + same.stderr
    (after / "k.sass").write_text((after / "k.sass").read_text().replace("FFMA", "FMUL"))
    differs = _run("sass_same.py", str(before), str(after))
    assert differs.returncode == 1 and "differs: k.sass" in differs.stdout, differs.stdout
    missing = _run("sass_same.py", str(before), str(tmp_path / "nope"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr


@pytest.mark.parametrize("device, interpret, cuda, message", [
    ("cpu", None, False, "--device cpu needs TRITON_INTERPRET=1"),
    ("cuda", "1", False, "no CUDA device here"),
    ("cpu", "1", False, None), ("cuda", None, True, None),
])
def test_check_device_refuses_a_device_the_run_cannot_use(monkeypatch, capsys, device, interpret, cuda, message):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from ab import OneLineParser, check_device

    if interpret is None:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TRITON_INTERPRET", interpret)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    p = OneLineParser(prog="probe")
    if message is None:
        check_device(p, device)
        return
    with pytest.raises(SystemExit) as exit_:
        check_device(p, device)
    assert exit_.value.code == 2 and capsys.readouterr().err == f"probe: error: {message}\n"


@pytest.mark.parametrize("probe, args, out", [
    ("results/h200/tma-step/probes/tma_step.py", (), "tma_step.jsonl"),
    ("results/h200/step-parts/probes/step_parts.py", (), "step_parts.jsonl"),
    ("results/h200/step-parts/probes/step_parts.py", ("--second",), "step_parts_second.jsonl"),
])
def test_step_probes_check_every_form_against_torch_on_the_cpu(tmp_path, probe, args, out):
    """The H200 probes of a large step's parts (``tma-step``, ``step-parts``), one program under the
    interpreter: every form's h_T within 16-bit rounding of float32 torch, no form raised."""
    proc = _run(probe, str(tmp_path), "--device", "cpu", *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, row = [json.loads(line) for line in (tmp_path / out).read_text().splitlines()]
    errors = {k: v for k, v in row.items() if k.endswith("_err")}
    assert env["record"] == "env" and not [k for k in row if k.endswith("_error")], row
    assert len(errors) >= 7 and max(errors.values()) < 5e-3, errors


@pytest.mark.parametrize("cell", ["rnn_tanh", "lstm"])
def test_train_floor_stand_in_returns_what_our_layer_returns(cell, monkeypatch):
    """The train-floor probe's ``empty`` layer (an autograd Function that launches nothing) stands in
    for ours in the engine's training step: the same names, shapes and dtypes of outputs and
    gradients as torch.nn's step of the same case, with and without the saving variant."""
    import importlib.util

    from rnnbench import workload
    from rnnbench.cases import Case

    path = ROOT / "benchmarks/results/h200/train-floor/probes/train_floor.py"
    spec = importlib.util.spec_from_file_location("train_floor_probe", path)
    probe = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "path", list(sys.path))  # (the probe puts src/ and benchmarks/ first)
    spec.loader.exec_module(probe)
    case = Case(cell=cell, batch_size=3, seq_len=7, input_size=5, hidden_size=4, dtype="fp32", mode="train",
                device="cpu", loss="last_step")
    inputs = workload.make_inputs(case)
    want_fn, want_names = workload.module_call(
        (torch.nn.LSTM if cell == "lstm" else torch.nn.RNN)(5, 4), case, inputs)
    want = [(t.shape, t.dtype) for t in want_fn()]
    for saving in (False, True):
        fn, names = workload.module_call(probe.empty_module(cell, saving)(5, 4), case, inputs)
        assert names == want_names
        assert [(t.shape, t.dtype) for t in fn()] == want


def test_rounds_time_the_forms_forward_then_back(monkeypatch):
    """``ab.rounds_ms``: A B C C B A each round, ``calls`` calls a turn, each form's median over its
    turns of each turn's median."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import ab

    order, clock = [], iter(range(1, 1000))
    monkeypatch.setattr("rnnbench.timing.time_call", lambda fn, device: (fn(), float(next(clock))))
    forms = {name: (lambda name=name: order.append(name)) for name in "ABC"}
    got = ab.rounds_ms(forms, "cpu", rounds=2, calls=3)
    assert "".join(order[::3]) == "ABCCBA" * 2 and len(order) == 36
    # (form A's turns are calls 1-3 and 16-18 of round one, 19-21 and 34-36 of round two: medians 2, 17, 20, 35)
    assert got["A"] == 18.5 and got["C"] == 18.5 and got["B"] == 18.5


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_layer_norm_probe_checks_its_step_against_float64(monkeypatch, train):
    """The layer-norm probe's ``err``: small for the layer-normalized module, large for one that
    leaves the norm out (its gains still there, so the reference normalizes): the check can fail."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import warnings

    import layer_norm

    from rnnbench import nn as rnn

    torch.manual_seed(0)
    module = rnn.LSTM(6, 10, layer_norm=True, backend="torch")
    x = torch.randn(5, 3, 6).requires_grad_(train)
    hx = tuple((torch.randn(1, 3, 10) * 0.5).requires_grad_(train) for _ in range(2))
    assert layer_norm._error("lstm", module, x, hx, train) <= tolerance("lstm", "fp32")
    module.layer_norm = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert layer_norm._error("lstm", module, x, hx, train) > 0.05
