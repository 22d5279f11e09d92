"""Where a step's time goes inside the Gluon kernels: SM clock stamps (``%clock64``) at seven
points of the step, program 0, steps 64-95 of 256, for the probe (gluon_step_parts.py) and the
package's kernel (src/rnnbench/ops/lstm/gluon.py) with and without biases and with int32 plane
offsets. The stamps are injected into copies of the sources; they may move the schedule they
measure, so only differences between kernels at the same points mean anything. Run before the
kernel copied h into shared memory by cp.async (then probes/gluon_lstm_forward.py, at b62d65e),
it showed the time in "h staged" (ptxas interleaving the stores with the loads); run after, the
same for every variant (../stdout-logs.txt). Run from the repository root on a GPU:
``PYTHONPATH=src python3 benchmarks/results/h100/gluon-step/probes/trace.py``"""
import importlib.util
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, "src")
sys.path.insert(0, str(HERE))

STAMP = '''
@gluon.jit
def _stamp(trace_ptr, t, slot: gl.constexpr):
    c = gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [t], dtype=gl.int64, is_pure=False, pack=1)
    if gl.program_id(0) == 0:
        if (t >= 64) & (t < 96):
            gl.store(trace_ptr + (t - 64) * 8 + slot, c)

'''
POINTS = ["top", "h staged", "product", "cell", "arrived", "input issued", "waited"]


def _inject(source, marks, signature):
    s = source
    for old, new in [signature] + marks:
        assert old in s, old[:60]
        s = s.replace(old, new, 1)
    return s


def _stamp_line(indent, slot):
    return f"\n{' ' * indent}_stamp(trace_ptr, t, {slot})"


def probe_source():
    s = (HERE / "gluon_step_parts.py").read_text().replace("Path(__file__).resolve().parents[5]", "Path('.').resolve()")
    s = s.replace("@gluon.jit\ndef _tanh_fast", STAMP + "@gluon.jit\ndef _tanh_fast", 1)
    marks = [
        ("    while t < T:\n", "    while t < T:" + _stamp_line(8, 0) + "\n"),
        ("            fence_async_shared()\n        acc = gl.zeros", "            fence_async_shared()" + _stamp_line(12, 1) + "\n        acc = gl.zeros"),
        ("            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))\n", "            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))" + _stamp_line(12, 2) + "\n"),
        ("        gl.store(h_buf_ptr + (t + 1) * plane_h + hid, h.to(dt), mask=mask)\n", "        _stamp(trace_ptr, t, 3)\n        gl.store(h_buf_ptr + (t + 1) * plane_h + hid, h.to(dt), mask=mask)\n"),
        ('            gl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")\n', '            gl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")' + _stamp_line(12, 4) + "\n"),
        ("            x_o = gl.load(nxt + 3 * H + xid, mask=mask, other=0.0).to(gl.float32)\n", "            x_o = gl.load(nxt + 3 * H + xid, mask=mask, other=0.0).to(gl.float32)" + _stamp_line(12, 5) + "\n"),
        ("            gl.thread_barrier()\n        t += 1\n", "            gl.thread_barrier()" + _stamp_line(12, 6) + "\n        t += 1\n"),
    ]
    return _inject(s, marks, ("def lstm_step_kernel(x_proj_ptr, w_ptr, bias_ptr, h_buf_ptr, c_n_ptr, counter_ptr, T, B,",
                              "def lstm_step_kernel(x_proj_ptr, w_ptr, bias_ptr, h_buf_ptr, c_n_ptr, counter_ptr, trace_ptr, T, B,"))


def wired_source(int32=False):
    s = Path("src/rnnbench/ops/lstm/gluon.py").read_text()
    s = s.replace("    @gluon.jit\n    def _tanh(x):", "\n".join("    " + line if line else line for line in STAMP.splitlines())
                  + "\n    @gluon.jit\n    def _tanh(x):", 1)
    if int32:
        s = s.replace("B.to(gl.int64) * H", "B * H").replace("B.to(gl.int64) * (4 * H)", "B * (4 * H)")
    marks = [
        ("        while t < T:\n", "        while t < T:" + _stamp_line(12, 0) + "\n"),
        ("            gl.thread_barrier()\n            acc = gl.zeros", "            gl.thread_barrier()" + _stamp_line(12, 1) + "\n            acc = gl.zeros"),
        ("            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))\n", "            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))" + _stamp_line(12, 2) + "\n"),
        ("            gl.store(h_buf_ptr + (t + 1) * plane_h + h_corner + hid, h.to(dt), mask=mask)\n", "            _stamp(trace_ptr, t, 3)\n            gl.store(h_buf_ptr + (t + 1) * plane_h + h_corner + hid, h.to(dt), mask=mask)\n"),
        ('                gl.atomic_add(counter, 1, sem="release", scope="gpu")\n', '                gl.atomic_add(counter, 1, sem="release", scope="gpu")' + _stamp_line(16, 4) + "\n"),
        ("            x_i, x_f, x_g, x_o = _step_input(x_proj_ptr + gl.minimum(t + 1, T - 1) * plane_g + g_corner, gid, mask, H)\n",
         "            x_i, x_f, x_g, x_o = _step_input(x_proj_ptr + gl.minimum(t + 1, T - 1) * plane_g + g_corner, gid, mask, H)" + _stamp_line(12, 5) + "\n"),
        ("                gl.thread_barrier()\n            t += 1\n", "                gl.thread_barrier()" + _stamp_line(16, 6) + "\n            t += 1\n"),
    ]
    return _inject(s, marks, ("h_buf_ptr, h_n_ptr, c_n_ptr, c_buf_ptr, gates_ptr, counters_ptr,\n        T, B,",
                              "h_buf_ptr, h_n_ptr, c_n_ptr, c_buf_ptr, gates_ptr, counters_ptr, trace_ptr,\n        T, B,"))


def load(name, source):
    path = Path(f"/tmp/trace_{name}.py")
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"trace_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    dev = torch.device("cuda")
    B, H, T, dtype = 16, 768, 256, torch.float16
    w = (torch.randn(4 * H, H, device=dev) * H ** -0.5).to(dtype)
    x_proj = torch.randn(T, B, 4 * H, device=dev).to(dtype)
    bias32 = torch.zeros(4 * H, device=dev)
    b16 = torch.zeros(4 * H, device=dev, dtype=dtype)
    probe = load("probe", probe_source())
    wired = load("wired", wired_source())
    wired32 = load("wired32", wired_source(int32=True))

    def run_probe(trace):
        h_buf = torch.zeros(T + 1, B, H, device=dev, dtype=dtype)
        c_n = torch.empty(B, H, device=dev, dtype=torch.float32)
        counter = torch.zeros(1, device=dev, dtype=torch.int32)
        probe.lstm_step_kernel[(H // 16, )](x_proj, w, bias32, h_buf, c_n, counter, trace, T, B, H=H, PIECES=3, CELL=True,
                                            SWIZZLE=True, LOAD_H=True, MMA=True, POLL=False, num_warps=4)

    def run_wired(module, has_bias):
        def run(trace):
            h_buf = torch.empty(T + 1, B, H, device=dev, dtype=dtype)
            h_n = torch.empty(1, B, H, device=dev, dtype=dtype)
            c_n = torch.empty_like(h_n)
            counter = torch.zeros(1, device=dev, dtype=torch.int32)
            module.lstm_forward_gluon_kernel[(H // 16, 1)](x_proj, w, b16, b16, h_buf, h_n, h_buf, h_n, c_n, h_n, h_n,
                                                           counter, trace, T, B, H=H, HAS_BIAS=has_bias, HAS_H0=False,
                                                           HAS_C0=False, SAVE=False, BLOCK_B=16, PIECE=256, PIECES=3,
                                                           num_warps=4)
        return run

    kernels = {"probe": run_probe, "wired, biases": run_wired(wired, True), "wired, none": run_wired(wired, False),
               "wired int32, biases": run_wired(wired32, True)}
    print("SM cycles from one point to the next (program 0, mean over steps 64-94, launches 2-6 of 6)")
    print(f"{'kernel':22s} " + " ".join(f"{p:>13s}" for p in POINTS[1:] + ["next top"]) + "   step")
    for name, run in kernels.items():
        means = []
        for _ in range(6):
            trace = torch.zeros(32, 8, device=dev, dtype=torch.int64)
            run(trace)
            torch.cuda.synchronize()
            t = trace[:, :7].double()  # [step, point]
            within = t[:-1, 1:] - t[:-1, :-1]  # point k to k + 1 in one step
            to_next = (t[1:, 0] - t[:-1, 6]).view(-1, 1)  # the last point to the next step's top
            step = (t[1:, 0] - t[:-1, 0]).mean().view(1)
            means.append(torch.cat([within.mean(0), to_next.mean(0), step]))
        m = torch.stack(means[1:]).mean(0)
        print(f"{name:22s} " + " ".join(f"{v:13.0f}" for v in m[:7].tolist()) + f"   {m[7].item():6.0f}", flush=True)


if __name__ == "__main__":
    main()
