"""The Gluon forward kernels with the weights in registers (``Plan.reg_weights``) against the same
kernels reading them from shared memory, kernel alone, through ``recurrence_forward``: output,
h_n, c_n (and the saved gates where ``save``) against float64 first (64 steps, random h0 and c0),
then µs a step (graph replays at 512 and 1024 steps, the difference over 512), the two plans in the
order A B B A. On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/rs-wgmma/probes/kernel_ab.py OUT.jsonl [--cases 0,1]
"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "gluon-step" / "probes"))

from gluon_step_parts import _per_step_us  # noqa: E402
from rnnbench.ops.recurrence import layer_launch, plan_override, recurrence_forward  # noqa: E402
from rnnbench.reference import reference_forward  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402

# (cell, batch, hidden, dtype): FlashRNN's shape, theano's and others' at two pieces of h, and
# three pieces at 32 rows (which spilled in a compile for sm_90).
CASES = [("lstm", 16, 768, "fp16"), ("lstm", 16, 768, "bf16"), ("gru", 16, 768, "fp16"),
         ("lstm", 32, 512, "bf16"), ("gru", 32, 512, "bf16"), ("lstm", 128, 512, "bf16"),
         ("lstm", 16, 512, "fp16"), ("lstm", 32, 768, "bf16"), ("lstm", 16, 300, "bf16")]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def inputs(cell, batch, hidden, dtype, dev):
    gen = torch.Generator().manual_seed(0)
    gates = 4 if cell == "lstm" else 3
    bound = hidden ** -0.5
    w_ih, w_hh = [((torch.rand(gates * hidden, hidden, generator=gen) * 2 - 1) * bound).to(dtype) for _ in range(2)]
    b_ih, b_hh = [((torch.rand(gates * hidden, generator=gen) * 2 - 1) * bound).to(dtype) for _ in range(2)]
    x = torch.randn(1024, batch, hidden, generator=gen).to(dtype)
    h0, c0 = [(torch.randn(1, batch, hidden, generator=gen) * 0.5).to(dtype) for _ in range(2)]
    weights = {"weight_ih_l0": w_ih.double(), "weight_hh_l0": w_hh.double(), "bias_ih_l0": b_ih.double(),
               "bias_hh_l0": b_hh.double()}
    states = (h0.double(), c0.double()) if cell == "lstm" else h0.double()
    ref_out, ref_n = reference_forward(cell, weights, x[:64].double(), states, 1)
    refs = (ref_out, *(ref_n if cell == "lstm" else (ref_n,)))
    on = [t.to(dev) for t in (w_hh, b_ih, b_hh, h0, c0)]
    x_proj = (x.to(dev) @ w_ih.to(dev).t()).contiguous()
    return x_proj, on, refs


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--cases", default=",".join(str(i) for i in range(len(CASES))))
    args = parser.parse_args(argv)
    dev = torch.device("cuda")
    rows = []
    for index in map(int, args.cases.split(",")):
        cell, batch, hidden, name = CASES[index]
        dtype = DTYPES[name]
        x_proj, (w, bi, bh, h0, c0), refs = inputs(cell, batch, hidden, dtype, dev)
        for save in (False, True):
            launches = {}
            for reg in (False, True):
                with plan_override(forward_reg_weights=reg):
                    launches[reg] = layer_launch(cell, batch, hidden, dtype, dev)
                assert launches[reg].forward.gluon and launches[reg].forward.reg_weights == reg, launches[reg].forward

            def run(reg, T):
                return recurrence_forward(cell, x_proj[:T], w, bi, bh, h0, c0 if cell == "lstm" else None,
                                          launches[reg], save)

            row = {"cell": cell, "batch_size": batch, "hidden_size": hidden, "dtype": name, "save": save,
                   "plan": str(launches[True].forward)}
            outs = {}
            for reg in (False, True):
                h_buf, h_n, c_n, saved, _ = run(reg, 64)
                got = (h_buf[1:], h_n) + ((c_n,) if cell == "lstm" else ())
                row[f"error_{reg}"] = max(relative_error(g.float().cpu().double().reshape(r.shape), r)
                                          for g, r in zip(got, refs))
                outs[reg] = (h_buf[1:], saved)  # (h_buf[0] holds h0 only when saving)
            row["same_output"] = bool(torch.equal(outs[False][0], outs[True][0]))
            if save:
                row["same_saved"] = bool(torch.equal(outs[False][1], outs[True][1]))
            samples = {False: [], True: []}
            for reg in (False, True, True, False):
                samples[reg].append(_per_step_us(lambda T, reg=reg: run(reg, T), 512)[0])
            row["smem_us_per_step"] = sum(samples[False]) / 2
            row["reg_us_per_step"] = sum(samples[True]) / 2
            row["reg_over_smem"] = row["reg_us_per_step"] / row["smem_us_per_step"]
            rows.append(row)
            print(f"{cell} B{batch} H{hidden} {name} save={save:d}: smem {row['smem_us_per_step']:.3f} reg "
                  f"{row['reg_us_per_step']:.3f} µs/step ({row['reg_over_smem']:.3f}x); errors "
                  f"{row['error_False']:.2e} {row['error_True']:.2e} same {row['same_output']}", flush=True)
    from rnnbench.env import environment

    with open(args.out, "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
