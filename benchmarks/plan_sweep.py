"""Our recurrence kernels alone under launch-plan overrides: µs per step, forward and backward (one GPU).

    python benchmarks/plan_sweep.py OUT_DIR [--cases warps64|first|spills|rows|rows_backward|tf32_wide|tf32_split_k|tall_backward|gate_split|gate_split_rule|half_operands|half_operands_resident|half_operands_wide|odd_widths|odd_widths_lm|pad_rows|pad_rows_backward|pad_rows_16bit|pad_rows_16bit_rule|resident_chunks|lm_backward|gate_split_wide|gate_split_wider|gate_split_narrow|pieces|pieces_gru|pieces_backward|pieces_backward_gru|pieces_backward_3xtf32|strict_fp32_wide|pieces_tf32|pieces_tf32_rule|pieces_rows|pieces_rows_more|wide_rows|wide_rows_backward|wide_rows_backward_more] [--budget SECONDS]

For each case (cell, batch_size, hidden_size, dtype, seq_len) and each plan override
(``rnnbench.ops.recurrence.plan_override``; ``{}`` is the default plan), on prebuilt inputs
(``x_proj``, weights; no module, no host time):

- the forward kernel replayed from a CUDA graph at ``seq_len`` and ``2 * seq_len`` steps: its µs
  per step (the difference over ``seq_len``) and its ms at ``seq_len``;
- the backward kernel (graph replay, including the transpose backward's ``W_hh^T`` copy) on one
  saved forward of the default plan, as µs per step (ms / ``seq_len``).

What it is for: choosing a plan rule before the engine-level A/B (``on_chip.py``), which checks
the choice against float64 and times the lanes. Case sets:

- ``warps64``: at 64 batch rows a program (batch 128 at hidden 768-1024, 256 at 512, 64 at 2048),
  fp32 (3xTF32), TF32, bf16 and fp16, the default against 8 warps both ways (the plans before
  ``plans.FP32_WIDE_FORWARD_WARPS`` and ``X3_SPLIT_K_WIDE_WARPS``) and 4 both ways (run before
  the rule, as 4 against the default then: ``results/h100/triton-lane-12``);
- ``first``: the sweep that found it, forward only then (tile heights, chunk widths, stages,
  warps at batch 128, hidden 512-1024; FlashRNN's fp16 LSTM; glample's and theano's small fp32
  cases);
- ``spills``: strict fp32's split-once forwards (``Plan.split_once``), the default against 8
  warps, 32-wide chunks and no split once (and at 64 rows: 32-wide chunks six in flight, the
  weights split in the step).
- ``rows``: batch rows a program at batch 32-128 where 16-row blocks still fit on the
  multiprocessors at the smallest weight tile (``plans.default_block_b`` gives 32 past batch 32
  in the forward, from a sweep of 32 against 64 rows only, and the batch up to 64 rows in the
  backward, not swept before): the default against 16 rows forward, and 16 and 32 rows backward.
- ``rows_backward``: the backwards that keep the whole batch (up to 64 rows) a program after that
  (the RNN's; the LSTM's and GRU's transpose backward, strict fp32 and TF32 at hidden 1024): the
  default against 16 rows, or 32 where 16 would not fit.
- ``tf32_wide``: TF32's streamed forward at batch 128, hidden 1024 with fewer bytes read from L2 a
  step (the whole batch a program, 32 units a program, both).
  (``narrow``, the LSTM's TF32 forward reading h from an fp16 copy, was measured at 73527ae and
  reverted: ``results/h100/tf32-exchange/``.)
- ``tf32_split_k``: TF32's backward at hidden 1024, batch 32 and 128: the transpose plan (the
  default) against split-K with the forward's programs, with 32 units a program, and with 32 units
  and 32 batch rows a program.
- ``tall_backward``: the transpose backward at hidden 1024 with 32 or 64 units a program (fewer
  bytes of d_gates read in all), TF32 at batch 32 and 128, strict fp32 at 128.
- ``gate_split``: the transpose backward with each gate's partial apart (``Plan.gate_split``)
  against the default: TF32 at hidden 1024 (batch 32, 64, 128; stages and warps), strict fp32 at
  batch 128, and where split-K is the default (TF32 at hidden 512, bf16 at 1024).
- ``half_operands``: TF32's forward on fp16 operands (``Plan.half_operands``, the default where
  TF32's weights would stream) against the TF32 plan, LSTM and GRU at hidden 1024 (batch 16-128)
  and 768 (batch 256).
- ``half_operands_resident``: then where TF32's weights are resident (hidden 512, 768 up to batch
  128), fp16 operands against TF32's (the default since ``half_operands_wide``).
- ``odd_widths``: hidden 650 (rows not 16-byte aligned) beside 640 and 656 at batch 128, TF32,
  the default backward against the transpose backward.
- ``odd_widths_lm``: the LSTM at batch 20 (a language model's), hidden 1496/1500/1504 in bf16 and
  TF32, 648/650/656 in TF32.
- ``pad_rows``: TF32's fp16-operand forward with its own fp16 rows padded to 16 bytes
  (``Plan.pad_rows``, the default since this set's run) against unpadded, at hidden 650, 500 and
  1500 (640 the aligned control).
- ``pad_rows_backward``: the split-K backward's partials unpadded against padded to 16 bytes
  (``Plan.pad_rows``, its default where hidden is not a multiple of 8), TF32 at hidden 650 (batch
  128, 32), 500 and 100 (batch 20: glample's) and 640 (the control); bf16 at 650 (batch 128) and
  100 (20); strict fp32 at 100 and 500 (batch 20).
- ``pad_rows_16bit``: the 16-bit forward on rows of its own padded to 16 bytes (``Plan.pad_rows``
  asked for) against the default plan (and against Gluon's off where Gluon is the default), bf16 at
  hidden 650 (batch 128, 32), 1500 (batch 20: zaremba-large's), fp16 at 650; 640 the control. Run
  before the rule (``results/h200/pad-rows/16bit-dbd411d``): since, the default at 650 and 1500 is
  the padded plan.
- ``pad_rows_16bit_rule``: then that default (where hidden is not a multiple of 8) against
  ``forward_pad_rows=False`` where it was not measured: hidden 100 and 500 (glample's) at batch 20
  and 128, 650 at batch 20, 1500 at batch 128; bf16 and a few fp16.
- ``resident_chunks``: the resident forward's chunk width (``block_k``) where it spills: the
  default against 64 and 128, bf16 and TF32 at hidden 1500 and 650 (batch 20, 35 steps) and 650
  (batch 32).
- ``lm_backward``: the LSTM's backward at a language model's batch (20, 35 steps), hidden 1500
  (zaremba-large's) beside 1496 and 1504, bf16 and TF32, and the GRU's at 1500: the default
  transpose plan against the gate split, 64-wide chunks, 3 stages and 32 units a program.
- ``gate_split_wide``: then the gate split against the transpose plan past hidden 1024 (1280,
  1500, 2048) at batch 20, 64 and 128, bf16 and TF32, strict fp32 at 1500; LSTM and GRU.
- ``gate_split_wider``: and past hidden 2048, where the transpose plan is the default (2560, 3072,
  4096 at batch 20, 64 and 128, bf16 and TF32; the GRU at 4096, batch 20 and 128).
- ``gate_split_narrow``: the gate split against split-K below hidden 768 at 64 batch rows a
  program (hidden 576, 640, 650, 704 at batch 64 and 128), TF32 and bf16.
- ``half_operands_wide``: fp16 operands (the default since this set's run) against TF32's at every
  width from 136 to 768 (batch 1, 32, 128).
- ``pieces``: the LSTM's 16-bit forward in slices of units (``Plan.pieces``, its default where the
  step's accumulator would be 64 or more fp32 values a thread) against the whole tile and another
  slice count, batch 256-1024 x hidden 512-4096.
- ``pieces_gru``: the GRU's in slices (its default at batch 1024 x hidden 2048 and 512 x 4096 in
  bf16) against the whole tile.
- ``pieces_backward``: the LSTM's backward with its cell gradients in slices (the backward's
  ``Plan.pieces``) against the whole tile, with and without the gate split, batch 256-1024 x
  hidden 1024-4096 in bf16, and at 1024 x 2048 in fp16 and TF32; ``pieces_backward_gru``: the GRU's
  default against one slice asked (the plan before) and 2 and 4 slices.
- ``pieces_tf32``: TF32's LSTM and GRU forward on fp16 operands (the default past hidden 128)
  against TF32 on its own operands, in slices and whole.
- ``pieces_tf32_rule``: TF32's LSTM default since (its own operands in 2 slices where fp16 operands'
  whole tile would hold 256 values a thread) against fp16 operands whole and 4 slices;
  ``pieces_rows``: the bf16 LSTM's forward at 128 batch rows a program in slices against its default;
  ``pieces_rows_more``: the same at more shapes, in TF32, for the GRU and for the LSTM's backward;
  ``wide_rows``: the rule that followed (128 rows a program) against the 64-row plan before it;
  ``wide_rows_backward``: the backward at 128 rows a program against its default;
  ``wide_rows_backward_more``: that at more shapes and TF32, and TF32's GRU forward at 128 rows on its
  own operands.
- ``gate_split_rule``: then where the rule was open: 16-bit at hidden 768-1024 and TF32 at 768
  (split-K's default) at batch 16-128, strict fp32 at batch 32, 2 and 3 stages.

Writes ``OUT_DIR/plan_sweep-<cases>.jsonl`` (the environment record, then one row per case and
plan as measured) and prints one line per row.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ab import OneLineParser, check_device, run_cases  # noqa: E402

# The default, the plans before the rule (8 warps both ways at 64 rows), and 4 warps both ways.
WARPS = [{}, {"num_warps": 8}, {"num_warps": 4}]
BIG = [{}, {"block_h": 32}, {"block_k": 32}, {"num_stages": 3}, {"num_stages": 6}, {"num_warps": 4},
       {"block_b": 32}, {"block_b": 32, "num_warps": 4}]
# Strict fp32's split-once forwards (Plan.split_once) at 4 warps and 64-wide chunks spilled under
# Triton 3.9 (8 of 9, 32-200 bytes a thread; at 64 rows a program under 3.6 too: 152-184): 8 warps
# or 32-wide chunks do not (benchmarks/aot_3xtf32.py); which costs less, and against no split once.
ONCE = [{}, {"forward_num_warps": 8}, {"forward_block_k": 32}, {"forward_split_once": False}]
ONCE_COPY = ONCE + [{"forward_block_k": 32, "forward_num_stages": 6}, {"forward_split_w_once": False}]
# (cell, batch_size, hidden_size, dtype, seq_len, plan overrides)
CASE_SETS = {
    "warps64": [
        ("lstm", 128, 1024, "fp32", 30, WARPS + [{"forward_num_stages": 3}, {"forward_block_k": 32}]),
        ("gru", 128, 1024, "fp32", 30, WARPS + [{"forward_num_stages": 3}]),
        *[(cell, 128, 1024, dtype, 30, WARPS) for cell, dtype in (("lstm", "tf32"), ("gru", "tf32"), ("lstm", "bf16"),
                                                                   ("lstm", "fp16"), ("gru", "bf16"))],
        *[(cell, b, h, dtype, 30, WARPS) for cell, b, h, dtype in (
            ("lstm", 256, 512, "fp32"), ("gru", 256, 512, "fp32"), ("gru", 128, 768, "fp32"), ("lstm", 64, 2048, "fp32"),
            ("lstm", 256, 512, "tf32"), ("lstm", 256, 512, "bf16"))],
    ],
    "first": [
        ("gru", 128, 1024, "fp32", 30, BIG), ("lstm", 128, 1024, "fp32", 30, BIG),
        ("gru", 128, 1024, "tf32", 30, [{}]), ("lstm", 128, 1024, "tf32", 30, [{}]),
        ("gru", 128, 512, "fp32", 30, [{}, {"block_h": 32}, {"block_k": 128}, {"num_warps": 8}]),
        ("lstm", 128, 512, "fp32", 30, [{}, {"block_h": 32}, {"block_k": 128}, {"num_warps": 8}]),
        ("lstm", 16, 768, "fp16", 512, [{}, {"block_h": 8}, {"block_h": 32}, {"block_k": 128}, {"block_k": 512},
                                        {"num_warps": 8}, {"w_resident": False},
                                        {"w_resident": False, "block_k": 128}]),
        ("gru", 32, 128, "fp32", 30, [{}, {"block_h": 64}, {"num_warps": 8}]),
        ("gru", 128, 128, "fp32", 30, [{}, {"num_warps": 8}]),
        ("rnn_tanh", 20, 100, "fp32", 30, [{}, {"block_k": 32}, {"h_on_chip": False}]),
        ("lstm", 20, 100, "fp32", 30, [{}, {"num_warps": 8}]),
    ],
    "spills": [
        *[(cell, b, h, "fp32", 30, ONCE) for cell, b, h in (
            ("lstm", 20, 500), ("rnn_tanh", 20, 500), ("gru", 32, 512), ("lstm", 32, 512), ("lstm", 128, 512),
            ("lstm", 32, 1024))],
        *[(cell, b, h, "fp32", 30, ONCE_COPY) for cell, b, h in (("lstm", 128, 1024), ("gru", 128, 1024), ("lstm", 256, 512))],
    ],
}
# Batch rows a program: 16 forward, 16 or 32 backward, against the default.
BACK16, BACK32 = {"backward_block_b": 16}, {"backward_block_b": 32}
ROWS = [{}, {"forward_block_b": 16}, BACK16, BACK32]
CASE_SETS["rows"] = [
    *[(cell, 128, 128, dtype, 30, ROWS) for cell in ("lstm", "gru") for dtype in ("fp32", "tf32", "bf16")],
    *[("lstm", 64, 512, dtype, 100, ROWS) for dtype in ("fp32", "tf32", "bf16")],  # fastrnns
    ("lstm", 128, 256, "bf16", 30, ROWS),
    *[(cell, 32, 128, "fp32", 30, [{}, BACK16]) for cell in ("lstm", "gru")],
    ("lstm", 32, 512, "bf16", 30, [{}, BACK16]),
]
# Batch rows a program in the backwards that do not take the forward's (not split-K).
CASE_SETS["rows_backward"] = [
    *[("rnn_tanh", 20, 500, dtype, 30, [{}, BACK16]) for dtype in ("fp32", "tf32", "bf16")],  # glample
    ("rnn_tanh", 128, 512, "bf16", 30, [{}, BACK16, BACK32]),
    *[(cell, 32, 1024, dtype, 30, [{}, BACK16]) for cell in ("lstm", "gru") for dtype in ("fp32", "tf32")],
    ("lstm", 64, 1024, "tf32", 30, [{}, BACK32]),
]
# Fewer bytes from L2 a step in TF32's streamed forward at batch 128, hidden 1024: 128 programs of
# 64 rows and 16 units each read their 256 KB of W_hh and 256 KB of h every step (64 MB a step); the
# whole batch a program (64 programs), or 32 units a program, read a quarter less; both, half (too
# much shared memory). Each was slower on the H100 (results/h100/tf32-exchange/).
WIDE = [{}, {"forward_block_b": 128, "forward_num_warps": 8}, {"forward_block_b": 128, "forward_num_warps": 8,
                                                                "forward_block_k": 32},
        {"forward_block_h": 32}, {"forward_block_h": 32, "forward_block_k": 32},
        {"forward_block_b": 128, "forward_block_h": 32, "forward_num_warps": 8}]
CASE_SETS["tf32_wide"] = [(cell, 128, 1024, "tf32", 30, WIDE) for cell in ("lstm", "gru")]
# TF32's backward at hidden 1024 runs the transpose plan (every program reads all of d_gates_t and
# its rows of W_hh^T a step: 1.25 MB a program at batch 128); split-K there (plans.SPLIT_K_MAX_HIDDEN)
# wrote and read 64 MB of fp32 partials a step at batch 128, more than L2 holds. Programs of 32 units
# (a 128-row tile) halve the partials: 32 MB, 255 registers without spills at 8 warps (sm_90, 3.6).
SPLIT_K_TALL = [{}, {"backward_split_k": True}, {"backward_split_k": True, "backward_block_h": 32},
                {"backward_split_k": True, "backward_block_h": 32, "backward_block_b": 32}]
CASE_SETS["tf32_split_k"] = [(cell, b, 1024, "tf32", 30, SPLIT_K_TALL) for b in (128, 32) for cell in ("lstm", "gru")]
# The transpose backward at hidden 1024 reads a program's batch rows of d_gates_t (4H wide) and its
# units' columns of W_hh every step: 1.25 MB a program, 160 MB a step at batch 128 (6.2 TB/s at the
# 26 µs a step tf32_split_k found). 32 units a program read 96 MB (1.5 MB each), 64 units 64 MB.
# Compiled for sm_90 (3.6): 32 units with 64-wide chunks 226 registers, no spills; with 128-wide 255
# and 8 bytes of stack; 64 units spill (176-520 bytes).
TALL_BACKWARD = [{}, {"backward_block_h": 32}, {"backward_block_h": 32, "backward_block_k": 64},
                 {"backward_block_h": 32, "backward_block_k": 64, "backward_num_stages": 3},
                 {"backward_block_h": 64, "backward_block_k": 64}]
# The transpose backward with each gate's partial apart (Plan.gate_split): a program reads one gate's
# gradients a step for 4 x 16 units (LSTM; 3 x 16 GRU) instead of every gate's for 16: 512 KB a
# program at batch 128, hidden 1024 in TF32 (the transpose plan's 1.25 MB), then a group barrier.
GATE_SPLIT = [{}, {"backward_gate_split": True}, {"backward_gate_split": True, "backward_num_stages": 3},
              {"backward_gate_split": True, "backward_num_warps": 4}]
CASE_SETS["gate_split"] = [
    *[(cell, b, 1024, "tf32", 30, GATE_SPLIT) for b in (128, 32) for cell in ("lstm", "gru")],
    *[(cell, 64, 1024, "tf32", 30, GATE_SPLIT[:2]) for cell in ("lstm", "gru")],
    *[(cell, 128, 1024, "fp32", 30, GATE_SPLIT[:2]) for cell in ("lstm", "gru")],
    *[(cell, b, h, dtype, 30, [{}, {"backward_gate_split": True, "backward_split_k": False,
                                   "backward_w_resident": False}])
      for cell in ("lstm", "gru") for b, h, dtype in ((128, 512, "tf32"), (128, 1024, "bf16"), (32, 512, "tf32"))],
]
# Where the rule for it was open after the first gate_split run: 16-bit at hidden 768-1024 and TF32 at
# 768 (split-K's), batch 16-32; 3 stages at 16-32 batch rows; strict fp32 at batch 32.
GS, NO_SPLIT_K = {"backward_gate_split": True}, {"backward_split_k": False, "backward_w_resident": False}
CASE_SETS["gate_split_rule"] = [
    *[(cell, b, h, dtype, 30, [{}, {**GS, **NO_SPLIT_K}, {**GS, **NO_SPLIT_K, "backward_num_stages": 3}])
      for cell in ("lstm", "gru") for b, h, dtype in ((32, 1024, "bf16"), (32, 1024, "fp16"), (128, 1024, "fp16"),
                                                      (32, 768, "tf32"), (128, 768, "tf32"), (128, 768, "bf16"))],
    ("lstm", 16, 768, "fp16", 100, [{}, {**GS, **NO_SPLIT_K}, {**GS, **NO_SPLIT_K, "backward_num_stages": 3}]),
    ("lstm", 16, 768, "bf16", 100, [{}, {**GS, **NO_SPLIT_K}]),
    *[(cell, 32, 1024, "fp32", 30, [{}, GS, {**GS, "backward_num_stages": 3}]) for cell in ("lstm", "gru")],
    *[(cell, b, 1024, "tf32", 30, [{}, *({**GS, "backward_num_stages": s} for s in (2, 3))]) for cell in ("lstm", "gru")
      for b in (64, 128)],
]
# TF32's forward on fp16 operands (Plan.half_operands, the default where TF32's weights would stream)
# against the TF32 plan it replaces, and the half plan with 4 warps at 64 batch rows.
HALF = [{}, {"forward_half_operands": False}]
CASE_SETS["half_operands"] = [
    *[(cell, b, 1024, "tf32", 30, HALF) for b in (128, 64, 32, 16) for cell in ("lstm", "gru")],
    *[(cell, 256, 768, "tf32", 30, HALF) for cell in ("lstm", "gru")],
    ("lstm", 128, 1024, "tf32", 30, [{}, {"forward_num_warps": 4}]),
]
# Then where TF32's weights are resident: fp16 operands against TF32's. (results/h100/half-operands/
# resident-b8374be ran it when the default there was TF32's operands, with fp16's asked for.)
CASE_SETS["half_operands_resident"] = [
    (cell, b, h, "tf32", 30, [{}, {"forward_half_operands": False}])
    for b, h in ((32, 512), (128, 512), (16, 768), (32, 768), (128, 768)) for cell in ("lstm", "gru")]
# Then across every width where TF32's LSTM and GRU forwards exchange h with resident weights (past
# the FMA forwards' hidden 128): is the half plan faster at each, at one, 32 and 128 batch rows? (The
# default there since; results/h200/half-wide/ ran at b14dda0, before, with both asked for.)
CASE_SETS["half_operands_wide"] = [
    (cell, b, h, "tf32", 30, [{}, {"forward_half_operands": False}])
    for h in (136, 256, 384, 500, 650, 768) for b in (1, 32, 128) for cell in ("lstm", "gru")]
# Widths whose rows are not 16-byte aligned: at batch 128 the TF32 LSTM's forward took 9.7 µs a step
# at hidden 650 against 9.0 at 768, its backward 22.8 against 11.0 (half_operands_wide, H200):
# against the aligned widths beside it (640, 656), and the backward's transpose plan.
CASE_SETS["odd_widths"] = [
    (cell, 128, h, "tf32", 30, [{}, {"backward_split_k": False}]) for h in (640, 650, 656) for cell in ("lstm", "gru")]
# Then the language models' widths (zaremba-large's 1500: fp16 rows of 3,000 bytes; 650, a medium
# LSTM's) at their batch, 20, beside aligned neighbours: do odd widths cost there too?
CASE_SETS["odd_widths_lm"] = [
    *[("lstm", 20, h, dtype, 35, [{}]) for dtype in ("bf16", "tf32") for h in (1496, 1500, 1504)],
    *[("lstm", 20, h, "tf32", 35, [{}]) for h in (648, 650, 656)]]
# Unpadded against fp16 rows padded to 16 bytes (Plan.pad_rows, the default since this set ran; asked
# for when it ran first), TF32 on fp16 operands:
# hidden 650 (1,300-byte rows) at batch 128 and 32, 500 (1,000) at 128 and 20, 1500 at 20; 640 as the
# control (already aligned: the same kernel both ways).
CASE_SETS["pad_rows"] = [
    (cell, b, h, "tf32", 30, [{"forward_pad_rows": False}, {}])
    for h, b in ((650, 128), (650, 32), (500, 128), (500, 20), (1500, 20), (640, 128)) for cell in ("lstm", "gru")]
# The split-K backward's partials unpadded against padded (Plan.pad_rows, the backward's default since this
# set ran) where hidden is not a multiple of 8; 640 the control.
CASE_SETS["pad_rows_backward"] = [
    *[(cell, b, h, "tf32", 30, [{"backward_pad_rows": False}, {}])
      for h, b in ((650, 128), (650, 32), (500, 20), (100, 20), (640, 128)) for cell in ("lstm", "gru")],
    *[(cell, 128, 650, "bf16", 30, [{"backward_pad_rows": False}, {}]) for cell in ("lstm", "gru")],
    *[(cell, 20, h, "fp32", 30, [{"backward_pad_rows": False}, {}]) for h in (100, 500) for cell in ("lstm", "gru")],
    ("lstm", 20, 100, "bf16", 30, [{"backward_pad_rows": False}, {}])]
# The 16-bit forward padded (Plan.pad_rows asked for) against the default, which was unpadded when this ran
# (results/h200/pad-rows/16bit-dbd411d; padded by default since).
CASE_SETS["pad_rows_16bit"] = [
    *[(cell, b, h, dtype, 30, [{}, {"forward_gluon": False}, {"forward_pad_rows": True}])
      for dtype, h, b in (("bf16", 650, 128), ("bf16", 650, 32), ("bf16", 1500, 20), ("fp16", 650, 128),
                          ("bf16", 640, 128))
      for cell in ("lstm", "gru")]]
CASE_SETS["pad_rows_16bit_rule"] = [
    *[(cell, b, h, dtype, 30, [{}, {"forward_pad_rows": False}])
      for dtype, h, b in (("bf16", 100, 20), ("bf16", 100, 128), ("bf16", 500, 20), ("bf16", 500, 128),
                          ("bf16", 650, 20), ("fp16", 100, 20), ("fp16", 500, 128), ("bf16", 1500, 128))
      for cell in ("lstm", "gru")]]
# The resident forward's chunk width where it spills (a local sm_90 compile, Triton 3.6: the LSTM at
# hidden 1500, batch 20 spills 208 bytes a thread at 128-wide chunks in bf16, 72 at 64, 48 at 32;
# TF32's fp16 operands 256, 72, 64): zaremba-large's 1500 and zaremba-medium's 650 at the language
# model's batch 20 (35 steps), 650 at batch 32; bf16 and TF32.
CASE_SETS["resident_chunks"] = [
    *[(cell, b, h, dtype, 35 if b == 20 else 30, [{}, {"forward_block_k": 64}, {"forward_block_k": 128}])
      for dtype in ("bf16", "tf32") for h, b in ((1500, 20), (650, 20), (650, 32)) for cell in ("lstm", "gru")]]
# The language models' backward at their batch: zaremba-large's LSTM at hidden 1500, batch 20 took
# 21.13 µs a backward step in bf16 against 13.79 at 1504 and 17.71 at 1496, every one the same
# transpose plan (results/h200/half-wide/lm-widths-dc8b273): other plans at the three widths, bf16
# and TF32, and the GRU at 1500.
LM_BACKWARD = [{}, {"backward_gate_split": True}, {"backward_block_k": 64}, {"backward_num_stages": 3},
               {"backward_block_h": 32}, {"backward_block_h": 32, "backward_block_k": 64}]
CASE_SETS["lm_backward"] = [
    *[("lstm", 20, h, dtype, 35, LM_BACKWARD) for dtype in ("bf16", "tf32") for h in (1500, 1496, 1504)],
    *[("gru", 20, 1500, dtype, 35, LM_BACKWARD) for dtype in ("bf16", "tf32")]]
# Then the gate split past hidden 1024 (GATE_SPLIT_MAX_HIDDEN), where the transpose plan is the default
# (lm_backward: 0.59x its step for the LSTM at 1500, batch 20, bf16 and TF32): widths 1280, 1500 and
# 2048 at batch 20, 64 and 128, bf16 and TF32 (strict fp32 at 1500).
CASE_SETS["gate_split_wide"] = [
    *[(cell, b, h, dtype, 35 if b == 20 else 30, [{}, GS]) for dtype in ("bf16", "tf32") for h in (1280, 1500, 2048)
      for b in (20, 64, 128) for cell in ("lstm", "gru")],
    *[(cell, b, 1500, "fp32", 35 if b == 20 else 30, [{}, GS]) for b in (20, 64, 128) for cell in ("lstm", "gru")]]
# And past 2048 (GATE_SPLIT_MAX_HIDDEN then), where the transpose plan was the default and the gate split's
# groups are still resident (32 units a program at batch 20-64, 64 at 128).
CASE_SETS["gate_split_wider"] = [
    *[("lstm", b, h, dtype, 35 if b == 20 else 30, [{}, GS]) for dtype in ("bf16", "tf32") for h in (2560, 3072, 4096)
      for b in (20, 64, 128)],
    *[("gru", b, 4096, dtype, 35 if b == 20 else 30, [{}, GS]) for dtype in ("bf16", "tf32") for b in (20, 128)]]
# And below GATE_SPLIT_MIN_HIDDEN at 64 batch rows a program, where split-K is the default (hidden 650, batch
# 128: 15.8 µs a TF32 backward step padded, 13.8 at 656; results/h200/pad-rows): the gate split against
# split-K at hidden 576-704, batch 64 and 128, TF32 and bf16.
CASE_SETS["gate_split_narrow"] = [
    (cell, b, h, dtype, 30, [{}, {**GS, **NO_SPLIT_K}]) for dtype in ("tf32", "bf16") for h in (576, 640, 650, 704)
    for b in (64, 128) for cell in ("lstm", "gru")]
CASE_SETS["tall_backward"] = [
    *[(cell, 128, 1024, "tf32", 30, TALL_BACKWARD) for cell in ("lstm", "gru")],
    *[(cell, 32, 1024, "tf32", 30, TALL_BACKWARD[:3]) for cell in ("lstm", "gru")],
    *[(cell, 128, 1024, "fp32", 30, TALL_BACKWARD[:3]) for cell in ("lstm", "gru")],
]
# The LSTM's forward in slices of units (Plan.pieces: the default, as many slices as bring the step's
# accumulator to 32 fp32 values a thread) against the whole tile and another slice count, where the
# whole tile's accumulator is 64-256 values a thread (16-bit weights, batch x hidden 2^19-2^22).
CASE_SETS["pieces"] = [
    *[("lstm", b, h, "bf16", 30, [{}, {"forward_pieces": 1}, {"forward_pieces": alt}]) for b, h, alt in (
        (1024, 2048, 4), (1024, 1024, 8), (512, 2048, 8), (256, 4096, 8), (512, 4096, 4))],
    ("lstm", 1024, 2048, "fp16", 30, [{}, {"forward_pieces": 1}]),
    *[("lstm", b, h, "bf16", 30, [{}, {"forward_pieces": 1}]) for b, h in ((512, 1024), (256, 2048), (1024, 512))],
]
# The GRU's forward in slices (the same rule: its stacked tile has four gate blocks too) against the
# whole tile, where the rule slices it.
CASE_SETS["pieces_gru"] = [("gru", b, h, "bf16", 30, [{}, {"forward_pieces": 1}]) for b, h in ((1024, 2048), (512, 4096))]
# The LSTM's backward with its cell gradients in slices (the backward's Plan.pieces, ops/lstm/pieces.py)
# against the whole tile, its product as one (gate_split 0) or in gate partials (the default's, where
# it is), where the whole tile spilled 1.4-5.2 KB a thread (results/h200/pieces/aot_backward.txt).
_SLICED_BACK = [{"backward_pieces": 4}, {"backward_gate_split": 0}, {"backward_gate_split": 0, "backward_pieces": 4},
                {"backward_gate_split": 0, "backward_pieces": 2}]
CASE_SETS["pieces_backward"] = [
    *[("lstm", b, h, "bf16", 30, [{}, *_SLICED_BACK]) for b, h in ((1024, 2048), (512, 4096))],
    *[("lstm", b, h, "bf16", 30, [{}, {"backward_pieces": 2}, *_SLICED_BACK[2:]])
      for b, h in ((1024, 1024), (512, 2048), (256, 4096))],
    *[("lstm", 1024, 2048, dtype, 30, [{}, _SLICED_BACK[2]]) for dtype in ("fp16", "tf32")],
]
# The GRU's backward in slices (ops/gru/pieces.py) by the LSTM's rule (the default) against the plan
# before (one slice asked: split-K at 1024 x 1024) and the other slice count.
CASE_SETS["pieces_backward_gru"] = [
    *[("gru", b, h, "bf16", 30, [{}, {"backward_pieces": 1}, {"backward_pieces": 2}, {"backward_pieces": 4}])
      for b, h in ((1024, 2048), (512, 4096), (1024, 1024), (512, 2048), (256, 4096))],
    *[("gru", b, h, "tf32", 30, [{}, {"backward_pieces": 1}]) for b, h in ((1024, 2048), (1024, 1024))],
]
# Strict fp32's backward (3xTF32's products in the step) in slices, which plans.backward_sliced leaves out
# of the default: the default against 2 and 4 slices asked.
CASE_SETS["pieces_backward_3xtf32"] = [
    (cell, b, h, "fp32", 30, [{}, {"backward_pieces": 2}, {"backward_pieces": 4}])
    for cell in ("lstm", "gru") for b, h in ((1024, 1024), (1024, 2048), (512, 4096))]
# Strict fp32 past batch x hidden 2^20 at 256 units a program: the default (the forward's operands split
# once, whole tile; the LSTM's backward in gate groups) ran 2.6-12 ms a step (pieces_backward_3xtf32),
# against 3xTF32 in the step in slices and a backward without gate groups, whole or in slices. 4 steps
# (k2 - k1 over 4 more steps): the slowest forms take seconds a replay.
_X3_FORMS = [{}, {"forward_split_once": False, "backward_gate_split": 0},
             {"forward_split_once": False, "forward_pieces": 4, "backward_gate_split": 0, "backward_pieces": 4},
             {"forward_split_once": False, "forward_pieces": 8, "backward_gate_split": 0, "backward_pieces": 2}]
CASE_SETS["strict_fp32_wide"] = [
    (cell, b, h, "fp32", 4, _X3_FORMS)
    for cell, b, h in (("lstm", 1024, 2048), ("gru", 1024, 2048), ("lstm", 512, 4096), ("gru", 512, 4096),
                       ("lstm", 1024, 1024))]
# TF32's forward in slices: its default (fp16 operands, Plan.half_operands, whole tile) against TF32
# on its own fp32 operands in slices and whole (asking for pieces, even one, leaves fp16 operands out).
CASE_SETS["pieces_tf32"] = [
    *[("lstm", b, h, "tf32", 30, [{}, {"forward_pieces": 4}, {"forward_pieces": 2}, {"forward_pieces": 1}])
      for b, h in ((1024, 2048), (512, 4096))],
    *[("gru", b, h, "tf32", 30, [{}, {"forward_pieces": 4}, {"forward_half_operands": False}])
      for b, h in ((1024, 2048), (512, 4096))],
    ("lstm", 1024, 1024, "tf32", 30, [{}, {"forward_pieces": 2}]),
]
# The rule that followed (plans.PIECE_ACCUMULATOR_TF32): the LSTM's default in TF32 where fp16 operands'
# whole tile would hold 256 values a thread (its own operands in 2 slices) against that plan before
# (fp16 operands, whole) and 4 slices, at the four shapes it applies to on 132 multiprocessors.
CASE_SETS["pieces_tf32_rule"] = [
    ("lstm", b, h, "tf32", 30, [{}, {"forward_half_operands": True}, {"forward_pieces": 4}])
    for b, h in ((1024, 2048), (512, 4096), (1024, 1536), (512, 3072))]
# The forward's weights re-read from L2 by every batch block (16 blocks of 64 rows at batch 1024): 128
# rows a program halves that, in slices that keep the accumulator at 32-64 values a thread.
CASE_SETS["pieces_rows"] = [
    ("lstm", 1024, 2048, "bf16", 30, [{}, *[{"forward_block_b": 128, "forward_block_h": bh, "forward_pieces": n}
                                           for bh, n in ((128, 4), (128, 8), (256, 8))]]),
    ("lstm", 512, 4096, "bf16", 30, [{}, {"forward_block_b": 128, "forward_block_h": 256, "forward_pieces": 8}]),
]
# Then (128 rows a program: 1024 x 2048 bf16 103.9 us a step in 4 slices of 32 units against 155.9,
# results/h200/pieces/rows-3b9c458) wider: more shapes, TF32 on its own operands, the GRU, the backward.
_ROWS = {"forward_block_b": 128}
CASE_SETS["pieces_rows_more"] = [
    *[("lstm", b, h, "bf16", 30, [{}, *[{**_ROWS, "forward_block_h": bh, "forward_pieces": n} for bh, n in alts]])
      for b, h, alts in ((1024, 2048, ((128, 2),)), (512, 4096, ((128, 4), (128, 2))), (1024, 1536, ((128, 4),)),
                         (512, 3072, ((128, 4),)), (1024, 1024, ((64, 2), (64, 1))), (512, 2048, ((64, 2),)),
                         (256, 4096, ((64, 2),)))],
    *[("lstm", b, h, "tf32", 30, [{}, *[{**_ROWS, "forward_block_h": 128, "forward_pieces": n} for n in (2, 4)]])
      for b, h in ((1024, 2048), (512, 4096))],
    ("gru", 1024, 2048, "bf16", 30, [{}, *[{**_ROWS, "forward_block_h": 128, "forward_pieces": n} for n in (1, 2, 4)]]),
    ("lstm", 1024, 2048, "bf16", 30, [{}, *[{"backward_block_b": 128, "backward_block_h": 128, "backward_pieces": n}
                                           for n in (4, 8)]]),  # ({} since: ae9b435 timed it in the first row)
]
# The rule that followed (plans.wide_rows_default: 128 rows, half the units, 2 slices) against the 64-row
# plan before it (asked for: the rule steps aside), where no sweep above timed the rule's plan.
CASE_SETS["wide_rows"] = [
    *[("gru", b, h, "bf16", 30, [{}, {"forward_block_b": 64}])
      for b, h in ((512, 4096), (1024, 1536), (512, 3072), (1024, 1024), (512, 2048), (256, 4096))],
    *[("lstm", b, h, dtype, 30, [{}, {"forward_block_b": 64}])
      for dtype in ("bf16", "tf32") for b, h in ((1024, 1536), (512, 3072))],
    ("lstm", 1024, 2048, "fp16", 30, [{}, {"forward_block_b": 64}]),
]
# And the backward at 128 rows a program (the LSTM at 1024 x 2048: 91.7 us a step in 4 slices against
# 103.2, pieces_rows_more), not a default: its transposed product re-reads W_hh per batch block too.
def _wide_back(bh, n):
    return {"backward_block_b": 128, "backward_block_h": bh, "backward_pieces": n}


CASE_SETS["wide_rows_backward"] = [
    ("lstm", 1024, 2048, "bf16", 30, [{}, _wide_back(128, 4), _wide_back(128, 2)]),
    ("lstm", 512, 4096, "bf16", 30, [{}, _wide_back(128, 4)]),
    *[(cell, 1024, 1024, "bf16", 30, [{}, _wide_back(64, 2)]) for cell in ("lstm", "gru")],
    ("gru", 1024, 2048, "bf16", 30, [{}, _wide_back(128, 4)]),
]
# Then (0.87-0.91x a step at 256 units a program, 1.00-1.05x at 128: wide-rows-backward-d567cf0) the rest
# of the shapes whose sliced backward holds 256 units a program, TF32's too; and TF32's GRU forward on its
# own operands at 128 rows (its default: fp16 operands whole at 64 rows, 256 units a program).
CASE_SETS["wide_rows_backward_more"] = [
    *[(cell, b, h, dtype, 30, [{}, _wide_back(128, 4)])
      for cell, dtype, shapes in (("lstm", "bf16", ((1024, 1536), (512, 3072), (2048, 1024))),
                                  ("gru", "bf16", ((512, 4096), (1024, 1536))),
                                  ("lstm", "tf32", ((1024, 2048), (512, 4096))), ("gru", "tf32", ((1024, 2048),)))
      for b, h in shapes],
    *[("gru", b, h, "tf32", 30, [{}, *[{"forward_block_b": 128, "forward_block_h": 128, "forward_pieces": n,
                                         "forward_half_operands": False} for n in (2, 1)]])
      for b, h in ((1024, 2048), (512, 4096))],
]
FIELDS = ("cell", "batch_size", "hidden_size", "dtype", "seq_len", "plan")


def _plan_text(p) -> str:
    return (f"bb{p.block_b} bh{p.block_h} res{int(p.w_resident)} bk{p.block_k} w{p.num_warps} st{p.num_stages}"
            + (" on_chip" if p.h_on_chip else "") + (" split_k" if p.split_k else "")
            + (" split_once" if p.split_once else "") + (" split_w_once" if p.split_once and p.split_w_once else ""))


def override_text(override: dict) -> str:
    """A row's ``plan``: the override as ``field=value,...``, or ``default``."""
    return ",".join(f"{k}={v}" for k, v in override.items()) or "default"


def row_line(r: dict) -> str:
    """One row as printed: its case, its override and its times (or its error). A row that failed
    before :func:`measure` named its plan holds the override itself (``ab.run_cases``)."""
    plan = r["plan"] if isinstance(r["plan"], str) else override_text(r["plan"])
    head = f"{r['cell']:8s} B{r['batch_size']:<4d} H{r['hidden_size']:<5d} {r['dtype']:4s} {plan:44s}"
    if "error" in r:
        return f"{head} {r['error']}"
    return (f"{head} F[{r['forward_plan']}] {r['forward_us_per_step']:6.2f} us/step | "
            f"B[{r['backward_plan']}] {r['backward_us_per_step']:6.2f} us/step")


def measure(case: tuple) -> dict:
    """One case and one override (``case[-1]``): the kernels' times, or the error the plan raised."""
    import torch

    from rnnbench.ops.plans import dot_precision
    from rnnbench.ops.recurrence import plan, plan_override
    from rnnbench.precision import matmul_mode
    from triton_dev import _backward_alone, _graph_ms, _kernel_alone, _saved_forward, _torch_dtype, kernel_tensors

    cell, b, h, dtype, t, override = case
    dev, td = torch.device("cuda"), _torch_dtype(dtype)
    row = dict(zip(FIELDS, case), plan=override_text(override))
    with matmul_mode(dtype):  # the products the modules get for this dtype (fp32: 3xTF32)
        precision = dot_precision(td)
        w_hh, b_ih, x_proj = kernel_tensors(cell, b, h, td, 2 * t)
        x_proj = x_proj.to(td)
        state = _saved_forward(cell, b, t, h, td, precision, x_proj, w_hh, b_ih, b_ih)  # the default plan's
        try:
            with plan_override(**override):  # each launch below reads the plan in force
                row["forward_plan"] = _plan_text(plan(cell, b, h, td, dev, precision))
                row["backward_plan"] = _plan_text(plan(cell, b, h, td, dev, precision, "backward"))
                k1 = _graph_ms(_kernel_alone(cell, b, t, h, td, precision, x_proj, w_hh, b_ih, b_ih))
                k2 = _graph_ms(_kernel_alone(cell, b, 2 * t, h, td, precision, x_proj, w_hh, b_ih, b_ih))
                backward_ms = _graph_ms(_backward_alone(cell, b, h, td, precision, w_hh, state))
        except Exception as err:  # a plan that cannot run here (resident programs, shared memory)
            return {**row, "error": f"{type(err).__name__}: {err}".splitlines()[0][:200]}
    return {**row, "forward_ms": k1, "forward_us_per_step": 1e3 * (k2 - k1) / t,
            "backward_ms": backward_ms, "backward_us_per_step": 1e3 * backward_ms / t}


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--cases", default="warps64", choices=tuple(CASE_SETS), help="which case set")
    parser.add_argument("--budget", type=float, default=400.0, help="seconds for the whole run")
    a = parser.parse_args()
    check_device(parser, "cuda")  # (it times the kernels on a CUDA device)
    cases = [(*case[:5], override) for case in CASE_SETS[a.cases] for override in case[5]]
    rows = run_cases(a.out_dir / f"plan_sweep-{a.cases}.jsonl", cases, FIELDS, measure, a.budget)
    for r in rows:
        print(row_line(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
