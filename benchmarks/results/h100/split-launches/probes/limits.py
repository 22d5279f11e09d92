"""Strict fp32's split products under other limits than the tree's, in the engine's steps, one
process, each form its own module (its own replays), in the rounds of
``fp16-products/probes/paths.py``. Two sets of forms (``SETS``):

- ``eager``: ``triton`` (the tree's limits), ``triton-low`` (the eager limits lowered to the
  captured ones: the projection's ``SPLIT_MIN_FLOP["eager"]`` to its ``"captured"`` value, the
  gradients' weight-tiles rule dropped), ``triton-unsplit`` (never split) and ``torch-nn``, eager
  steps, theano's depth-1 layers at batch 32 and 128, hidden 512 and 1024;
- ``gradients``: the gradients' limits as they were at 48eac23 (``before``: the splits from 1e10
  FLOP, eagerly with 128 weight tiles, the fused launch on whole tiles up to 6.1e9), without the
  tiles rule (``no-tiles``), and from 4e9 for both the splits and the fused launch on whole tiles
  (``from-4e9``), beside ``torch-nn``, eager and in CUDA graphs (each form's graph captured under
  its limits), at the sizes around those limits.

From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h100/split-launches/probes/limits.py OUT.jsonl [SET]

Per case the median of 8 (4 rounds of forms A B C D D C B A) of the engine's call timing (events
around each call, synchronised after), µs a call."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import timed, write_rows  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.ops import gradients, projection  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import graphed, make_inputs, module_call  # noqa: E402

NEVER = float("inf")
TREE = (gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP, gradients.SPLIT_MIN_WEIGHT_TILES,
        gradients.EVEN_FUSED_MAX_FLOP)
UNSPLIT = (NEVER, {"captured": NEVER, "eager": NEVER}, 0, TREE[3])
LOW = {"captured": TREE[1]["captured"], "eager": TREE[1]["captured"]}
FUSED_4E9 = dict(TREE[3], tf32x3=4e9)
THEANO = [dict(cell=c, batch_size=b, input_size=h, hidden_size=h) for c in ("lstm", "gru") for b in (32, 128)
          for h in (512, 1024)]
# set: (cases, {form: (gradients' FLOPs, projection's FLOPs, gradients' eager weight tiles, fused on
# whole tiles up to)}, graphed too)
SETS = {
    "eager": (THEANO, {"triton": TREE, "triton-low": (TREE[0], LOW, 0, TREE[3]), "triton-unsplit": UNSPLIT,
                       "torch-nn": UNSPLIT}, False),
    "gradients": ([dict(cell=c, batch_size=b, input_size=h, hidden_size=h) for c in ("lstm", "gru")
                   for b, h in ((32, 512), (128, 512), (128, 128))]
                  + [dict(cell="lstm", batch_size=20, input_size=100, hidden_size=500),
                     dict(cell="lstm", batch_size=64, input_size=512, hidden_size=512, seq_len=100)],
                  {"before": (1e10, TREE[1], 128, dict(TREE[3], tf32x3=6.1e9)),
                   "no-tiles": (1e10, TREE[1], 0, dict(TREE[3], tf32x3=6.1e9)),
                   "from-4e9": (4e9, TREE[1], 0, FUSED_4E9), "torch-nn": UNSPLIT}, True),
}


def limits(forms, form):
    (gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP, gradients.SPLIT_MIN_WEIGHT_TILES,
     gradients.EVEN_FUSED_MAX_FLOP) = forms[form]


def main(out, name="eager"):
    cases, forms, graphs = SETS[name]
    rows = []
    for spec in cases:
        spec = dict(dict(loss="all_steps", seq_len=30), **spec)
        train = Case(**spec, dtype="fp32", mode="train", device="cuda")
        inputs = make_inputs(train)
        with matmul_mode(train.dtype):
            modules = {n: get_lane("torch-nn" if n == "torch-nn" else "triton").module_for(train, inputs.weights)
                       for n in forms}
            for case in (train.replace(mode="forward"), train):
                steps = {}
                for n, m in modules.items():
                    limits(forms, n)
                    steps[n] = module_call(m, case, inputs)[0]
                    if graphs:
                        steps[f"{n} graphed"] = graphed(steps[n])  # (captured under n's limits)
                calls = 100 if case.mode == "forward" else 40
                for n, fn in steps.items():
                    limits(forms, n.split()[0])
                    for _ in range(10):
                        fn()
                got = {n: [] for n in steps}
                order = list(steps) + list(steps)[::-1]
                for _ in range(4):
                    for n in order:
                        limits(forms, n.split()[0])
                        got[n].append(timed(steps[n], calls))
                for n in steps:
                    row = {"case": case.key, "form": n, "call_us": sorted(got[n])[len(got[n]) // 2],
                           "rounds_us": got[n]}
                    rows.append(row)
                    print(f"{case.key} {n}: {row['call_us']:.1f} µs", flush=True)
    (gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP, gradients.SPLIT_MIN_WEIGHT_TILES,
     gradients.EVEN_FUSED_MAX_FLOP) = TREE
    write_rows(out, rows)


if __name__ == "__main__":
    main(*sys.argv[1:])
