"""Worker lanes: the process protocol, faults (a worker that dies, hangs or raises becomes that
row's ``error`` and the run goes on), layout conversions both ways, breakages the verification
must catch, and lanes of frameworks that are not installed.

Fault workers are ``tests/workers/fault_worker.py``; the breakages are the real workers with one
conversion broken (``tests/workers/broken_layout_worker.py``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rnnbench import runner
from rnnbench.cases import CELLS, Case
from rnnbench.lanes import LANES
from rnnbench.lanes import options as lane_options
from rnnbench.lanes.frameworks import JAX, KERAS
from rnnbench.lanes.worker import WorkerError, WorkerSpec, close_all, get_worker, prepare_in_worker
from rnnbench.results import ResultsFile
from rnnbench.workers import jax_worker, keras_worker
from rnnbench.workers.protocol import encode, read_message
from rnnbench.workload import make_inputs, reference_step

WORKERS = Path(__file__).resolve().parent / "workers"
FAULT = WorkerSpec("test-fault", argv=(sys.executable, str(WORKERS / "fault_worker.py")))
TINY = Case(cell="lstm", batch_size=2, seq_len=3, input_size=4, hidden_size=5, mode="train")
ODD = dict(batch_size=3, seq_len=7, input_size=37, hidden_size=29, num_layers=2)


@pytest.fixture(autouse=True)
def _stop_workers():
    yield
    close_all()


def _worker_lane(temp_lane, name, spec, impl, settings=None, timeout_s=None, **fields):
    """A temporary lane run by ``spec``'s worker, with its own worker timeout if given. The fault
    worker is handed the right answer (the float64 reference in float32)."""

    def prepare(case, inputs):
        timeout = {"worker_timeout_s": timeout_s} if timeout_s else {}
        extra = {"answer": _answer(case, inputs)} if spec.name == FAULT.name else {}
        with lane_options.using(**timeout):
            return prepare_in_worker(spec, impl, {**(settings or {}), **extra}, case, inputs)

    return temp_lane(name, None, prepare=prepare, **fields)


def _answer(case, inputs):
    return {n: t.float().numpy() for n, t in reference_step(case, inputs).items()}


def _fault_step(fault, inputs):
    return prepare_in_worker(FAULT, fault, {"answer": _answer(TINY, inputs)}, TINY, inputs)


# --- faults ------------------------------------------------------------------------------------

def test_faults_become_error_rows_and_the_run_goes_on(temp_lane, tmp_path):
    faults = ["crash-first-call", "exit-first-call", "raise-first-call", "raise-prepare", "crash-sample",
              "hang-first-call"]
    lanes = []
    for fault in faults:
        lanes += [_worker_lane(temp_lane, f"test-{fault}", FAULT, fault, timeout_s=3.0),
                  _worker_lane(temp_lane, f"test-ok-after-{fault}", FAULT, "ok")]
    lanes.append(LANES["torch-nn"])
    started = time.monotonic()
    rows = runner.run([TINY], lanes, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    status = {r["lane"]: (r["status"], r["message"]) for r in rows}
    messages = {fault: status[f"test-{fault}"][1] for fault in faults}
    assert all(status[f"test-{fault}"][0] == "error" for fault in faults), status
    # every fault is followed by a pair measured by a (fresh or surviving) worker, then torch-nn
    assert all(status[f"test-ok-after-{fault}"] == ("ok", "") for fault in faults), status
    assert status["torch-nn"] == ("ok", "")
    assert "test-fault worker died during first_call (signal SIGKILL)" in messages["crash-first-call"]
    assert "died during first_call (exit code 3): fatal: the framework gave up" in messages["exit-first-call"]
    assert messages["raise-first-call"] == "WorkerError: RuntimeError: the framework raised in first-call"
    assert messages["raise-prepare"] == "WorkerError: ValueError: cannot prepare this"
    assert "died during sample (signal SIGKILL)" in messages["crash-sample"]
    assert messages["hang-first-call"] == ("WorkerError: the test-fault worker gave no answer to first_call "
                                           "within 3 s; killed it")
    assert all("\n" not in m and len(m) < 400 for m in messages.values())
    assert time.monotonic() - started < 60


def test_a_raising_worker_survives_and_a_dead_one_is_replaced(temp_lane):
    inputs = make_inputs(TINY)
    with pytest.raises(WorkerError, match="the framework raised"):
        _fault_step("raise-first-call", inputs).first_call()
    pid = get_worker(FAULT).proc.pid
    step = _fault_step("ok", inputs)
    assert step.first_call()[0]["grad_x"].shape == (3, 2, 4)
    assert step.extra["pid"] == pid  # the same process answered
    with pytest.raises(WorkerError, match="died"):
        _fault_step("crash-first-call", inputs).first_call()
    step = _fault_step("ok", inputs)
    step.first_call()
    assert step.extra["pid"] != pid  # a fresh worker


def test_stdout_noise_cannot_corrupt_replies():
    step = _fault_step("print", make_inputs(TINY))
    outputs, ms = step.first_call()
    assert ms > 0 and set(outputs) >= {"output", "h_n", "c_n"}
    assert "raw noise on fd 1" in open(get_worker(FAULT).log.name).read()  # it went to the worker's log


def test_a_worker_that_cannot_start():
    spec = WorkerSpec("test-nostart", argv=(sys.executable, "-c", "import sys; sys.exit('no framework here')"))
    with pytest.raises(WorkerError, match=r"test-nostart worker died during start-up \(exit code 1\): no framework here"):
        get_worker(spec)
    spec = WorkerSpec("test-missing", module="rnnbench.workers.no_such_worker")
    with pytest.raises(WorkerError, match="No module named rnnbench.workers.no_such_worker"):
        get_worker(spec)


def test_a_worker_that_does_not_start_in_time():
    spec = WorkerSpec("test-slowstart", argv=(sys.executable, "-c", "import time; time.sleep(60)"))
    with lane_options.using(worker_timeout_s=1.0):
        with pytest.raises(WorkerError, match="gave no answer to start-up within 1 s; killed it"):
            get_worker(spec)


def test_protocol_frames():
    import io

    message = {"op": "x", "arrays": {"a": np.arange(6, dtype=np.float32).reshape(2, 3)}}
    stream = io.BytesIO(encode(message) + encode({"op": "y"}))
    first = read_message(stream)
    assert first["op"] == "x" and np.array_equal(first["arrays"]["a"], message["arrays"]["a"])
    assert read_message(stream) == {"op": "y"}
    with pytest.raises(EOFError):
        read_message(stream)


def test_workers_do_not_import_torch():
    """The worker side (protocol, timing, layouts, the JAX worker module) loads without torch, so
    a framework's worker never holds two frameworks (and TensorFlow's venv needs no torch)."""
    code = ("import sys; import rnnbench.workers.protocol, rnnbench.timing, rnnbench.workers.keras_worker, "
            "rnnbench.workers.jax_worker; assert 'torch' not in sys.modules, 'torch imported'")
    src = str(Path(runner.__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": src},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


# --- layouts, both ways -------------------------------------------------------------------------

def _canonical(cell, input_size=5, hidden=3, layers=2, seed=0):
    rng = np.random.default_rng(seed)
    g = {"lstm": 4, "gru": 3}.get(cell, 1) * hidden
    out = {}
    for k in range(layers):
        i = input_size if k == 0 else hidden
        out.update({f"weight_ih_l{k}": rng.standard_normal((g, i)), f"weight_hh_l{k}": rng.standard_normal((g, hidden)),
                    f"bias_ih_l{k}": rng.standard_normal(g), f"bias_hh_l{k}": rng.standard_normal(g)})
    return out


@pytest.mark.parametrize("cell", CELLS)
def test_keras_layout_round_trip(cell):
    weights = _canonical(cell)
    keras = keras_worker.to_keras(cell, weights, 2)
    g = {"lstm": 4, "gru": 3}.get(cell, 1)
    assert keras[0][0].shape == (5, g * 3) and keras[0][1].shape == (3, g * 3) and keras[1][0].shape == (3, g * 3)
    assert keras[0][2].shape == ((2, 9) if cell == "gru" else (g * 3,))
    back = keras_worker.from_keras(cell, keras)
    for name, w in weights.items():
        if name.startswith("bias") and cell != "gru":  # merged: only the sum survives
            continue
        np.testing.assert_array_equal(back[name], w, err_msg=name)
    for k in range(2):
        np.testing.assert_allclose(back[f"bias_ih_l{k}"] + back[f"bias_hh_l{k}"],
                                   weights[f"bias_ih_l{k}"] + weights[f"bias_hh_l{k}"])
    again = keras_worker.to_keras(cell, back, 2)  # Keras -> canonical -> Keras is exact
    for a, b in zip(sum(keras, []), sum(again, [])):
        np.testing.assert_array_equal(a, b)


def test_keras_gate_order():
    """Keras's GRU gates are z, r, h: its first kernel block is torch's second (z)."""
    weights = _canonical("gru", layers=1)
    kernel = keras_worker.to_keras("gru", weights, 1)[0][0]
    np.testing.assert_array_equal(kernel[:, :3], weights["weight_ih_l0"][3:6].T)
    np.testing.assert_array_equal(kernel[:, 3:6], weights["weight_ih_l0"][:3].T)
    lstm = _canonical("lstm", layers=1)
    np.testing.assert_array_equal(keras_worker.to_keras("lstm", lstm, 1)[0][0], lstm["weight_ih_l0"].T)


@pytest.mark.parametrize("cell", CELLS)
def test_keras_gradient_conversion_is_the_adjoint(cell):
    """<to_keras(w), g> = <w, grads_from_keras(g)> for all w, g: the canonical gradient of any
    loss of the Keras weights is grads_from_keras of its Keras gradient."""
    w = _canonical(cell, seed=1)
    g = keras_worker.to_keras(cell, _canonical(cell, seed=2), 2)
    lhs = sum(np.sum(a * b) for a, b in zip(sum(keras_worker.to_keras(cell, w, 2), []), sum(g, [])))
    back = keras_worker.grads_from_keras(cell, g)
    rhs = sum(np.sum(w[n] * back[n]) for n in w)
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_cudnn_flat_layout_round_trip():
    weights = _canonical("lstm", input_size=6, hidden=4, layers=3)
    flat = jax_worker.pack_cudnn(weights, 6, 4, 3)
    assert flat.shape == (sum(w.size for w in weights.values()),)
    back = jax_worker.unpack_cudnn(flat, 6, 4, 3)
    assert list(back) == [n for n, _ in jax_worker.cudnn_shapes(6, 4, 3)]
    for name, w in weights.items():
        np.testing.assert_array_equal(back[name], w)
    with pytest.raises(ValueError, match="hold"):
        jax_worker.unpack_cudnn(flat[:-1], 6, 4, 3)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
def test_cudnn_flat_layout_is_jaxs():
    """Our packing agrees with jax.experimental.rnn's own unpacking."""
    from jax.experimental import rnn

    weights = _canonical("lstm", input_size=6, hidden=4, layers=2)
    w_ih, w_hh, b_ih, b_hh = rnn.unpack_lstm_weights(jax_worker.pack_cudnn(weights, 6, 4, 2), 6, 4, 2, False)
    for k in range(2):
        for name, theirs in (("weight_ih", w_ih), ("weight_hh", w_hh), ("bias_ih", b_ih), ("bias_hh", b_hh)):
            np.testing.assert_array_equal(np.asarray(theirs[k]), weights[f"{name}_l{k}"])


# --- the jax-cudnn path on the CPU, with jax's reference LSTM in place of the cuDNN call ---------

@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
def test_jax_cudnn_path_with_reference_lstm(temp_lane, tmp_path):
    # train returns the output and final states too (lstm_ref is unrolled: slow to compile); the
    # second case is a variable-length batch, whose lengths go to the call as seq_lengths
    cases = [Case(cell="lstm", mode="train", **ODD), Case(cell="lstm", mode="train", loss="last_step",
                                                         lengths="2:7", **ODD)]
    lane = _worker_lane(temp_lane, "test-jax-cudnn-ref-lengths", JAX, "jax-cudnn", {"reference": True},
                        cells=("lstm",), lengths="packed")
    rows = runner.run(cases, [lane], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    assert all(r["max_rel_error"] < 1e-5 and r["cudnn"] is False for r in rows)


# --- breakages the verification catches ---------------------------------------------------------

def _broken(module, breakage, env=None):
    return WorkerSpec(f"test-broken-{module}-{breakage}", env=env or {},
                      argv=(sys.executable, str(WORKERS / "broken_layout_worker.py"), module, breakage))


BREAKAGES = [
    # (worker module, breakage, cell, mode, backend, the tensor the message must name or None)
    pytest.param("keras", "gru-gates", "gru", "forward", "torch", None, id="keras-gru-gates"),
    pytest.param("keras", "lstm-bias", "lstm", "forward", "jax", None, id="keras-lstm-bias"),
    pytest.param("keras", "no-transpose-back", "rnn_tanh", "train", "torch", "grad_x", id="keras-grad-x-order"),
    pytest.param("jax", "cudnn-order", "lstm", "forward", None, None, id="jax-cudnn-flat-order"),
]


@pytest.mark.parametrize("module, breakage, cell, mode, backend, worst", BREAKAGES)
def test_verification_catches_a_broken_layout(temp_lane, tmp_path, module, breakage, cell, mode, backend, worst):
    if importlib.util.find_spec("jax" if backend != "torch" else "keras") is None:
        pytest.skip("framework not installed")
    env = {"KERAS_BACKEND": backend} if module == "keras" else {}
    impl, settings = ("keras", {}) if module == "keras" else ("jax-cudnn", {"reference": True})
    lane = _worker_lane(temp_lane, f"test-{module}-{breakage}", _broken(module, breakage, env), impl, settings)
    case = Case(cell=cell, mode=mode, batch_size=3, seq_len=4, input_size=5, hidden_size=6, num_layers=2)
    row = runner.run([case], [lane], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)[0]
    assert row["status"] == "mismatch", row
    assert "relative error" in row["message"] and row["max_rel_error"] > 1e-2
    if worst:
        assert row["message"].startswith(worst), row["message"]


# --- frameworks that are not installed ----------------------------------------------------------

def test_missing_framework_makes_lanes_unavailable(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    hidden = {"jax", "keras", "tensorflow"}
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] in hidden else real(name, *a))
    monkeypatch.delenv("RNNBENCH_TF_PYTHON", raising=False)
    worker_lanes = [lane for lane in LANES.values() if lane.prepare is not None and lane.name != "torch-compile"]
    for lane in worker_lanes:
        reason = lane.unavailable("cpu")
        assert reason and ("is not installed" in reason or "cpu" not in lane.devices), (lane.name, reason)
    rows = runner.run([TINY], worker_lanes, ResultsFile(tmp_path / "r.jsonl"))
    assert {r["status"] for r in rows} == {"unavailable"} and all(r["message"] for r in rows)


def test_tf_python_of_another_environment(monkeypatch):
    """RNNBENCH_TF_PYTHON points the TensorFlow worker at another interpreter; the lane asks that
    interpreter whether it has TensorFlow."""
    monkeypatch.setenv("RNNBENCH_TF_PYTHON", sys.executable)
    assert KERAS["tensorflow"].command()[0] == sys.executable
    reason = LANES["keras-tf"].unavailable("cpu")
    if importlib.util.find_spec("tensorflow") is None:
        assert reason == f"package 'tensorflow' is not installed in {sys.executable}"
    monkeypatch.setenv("RNNBENCH_TF_PYTHON", "/nonexistent/python")
    assert "cannot run /nonexistent/python" in LANES["keras-tf"].unavailable("cpu")


def test_list_shows_every_lane_without_a_traceback(cli_env):
    """`rnnbench list` with JAX, Keras and TensorFlow hidden: every lane is listed, those of the
    missing frameworks with a reason, and nothing fails."""
    code = ("import importlib.util as u, sys; real = u.find_spec; "
            "u.find_spec = lambda n, *a: None if n.split('.')[0] in ('jax', 'keras', 'tensorflow') else real(n, *a); "
            "sys.argv = ['rnnbench', 'list']; from rnnbench.cli import main; main()")
    env = {k: v for k, v in cli_env.items() if k != "RNNBENCH_TF_PYTHON"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    for name in LANES:
        if not name.startswith("test-"):
            assert name in proc.stdout, name
    assert "package 'jax' is not installed" in proc.stdout and "package 'keras' is not installed" in proc.stdout
