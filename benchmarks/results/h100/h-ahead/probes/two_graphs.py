"""Probe: which two-graph pattern faults. Two modules captured in CUDA graphs (warm-up on a side
stream each, outputs discarded inside the capture as trees_graphed.py does), replayed in turns.

    PYTHONPATH=src python3 THIS MODE [OLD_PKG_DIR]

MODE: one-tree (both modules from src), two-trees (src and OLD_PKG_DIR's rnnbench_old),
two-trees-runner (the same with DIRECT_LAUNCH off in both), one-tree-kept (outputs kept),
one-tree-fresh-counters (the counter buffers forgotten before each capture), one-module (the
same module captured twice), one-tree-no-warmup, one-graph (the first module only), torch (torch.nn's LSTM, the control), one-tree-alive (each module and its input kept).
Prints 'ok' or the error."""
import importlib, sys
import torch

sys.path.insert(0, "src")
mode = sys.argv[1]
new_nn = importlib.import_module("rnnbench.nn")
trees = [new_nn, new_nn]
if mode.startswith("two-trees"):
    sys.path.insert(0, sys.argv[2])
    trees = [importlib.import_module("rnnbench_old.nn"), new_nn]
    if mode == "two-trees-runner":
        for name in ("rnnbench_old.ops.launch", "rnnbench.ops.launch"):
            importlib.import_module(name).DIRECT_LAUNCH = False
if mode == "one-graph":
    trees = trees[:1]
graphs, kept = [], []
module = None
for k, nn_ in enumerate(trees):
    torch.manual_seed(k)
    m = nn_.LSTM(512, 512, backend="triton").cuda().to(torch.bfloat16)
    if mode == "torch":  # the control: torch.nn's LSTM (cuDNN) in the same pattern
        m = torch.nn.LSTM(512, 512).cuda().to(torch.bfloat16)
    if mode == "one-module":
        module = module or m
        m = module
    if mode == "one-tree-fresh-counters":
        importlib.import_module("rnnbench.ops.launch").COUNTERS.clear()
    x = torch.randn(30, 32, 512, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(0 if mode == "one-tree-no-warmup" else 3):
            m(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        out = m(x)
    if mode.endswith("kept"):
        kept.append(out)
    if mode.endswith("alive"):  # the module and its input outlive the capture, as a graph's must
        kept.append((m, x))
    graphs.append(g)
try:
    for _ in range(3):
        for g in graphs:
            g.replay()
    torch.cuda.synchronize()
    print(mode, "ok")
except Exception as err:  # noqa: BLE001 (a probe: report and stop)
    print(mode, "fault:", str(err).splitlines()[0])
