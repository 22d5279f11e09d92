"""h on chip against h exchanged through memory, and other A/Bs of our kernels' plans (one GPU).

    python benchmarks/on_chip.py OUT_DIR [--compare on_chip|fast_activations|split_k|split_k_rows|split_k_half|split_k_warps|split_k_x3|split_k_tf32|block_h|piece|stream|warps64|split_once|host_path|batch_rows|backward_rows|chip_split|projection|products|gluon|ahead|fma|gated_fma|gated_fma_more|gate_split|gate_split_wide|gate_split_wider|gate_split_narrow|half_operands|half_wide|reg_weights|pad_rows|pad_rows_16bit|half_saved] [--budget SECONDS] [--case-budget SECONDS]

At small hidden sizes the default plan gives one program all the hidden units of its 16 batch rows
(``Plan.h_on_chip``): h, and backward the gate gradients, stay in its registers as the next step's
matmul operand, with no exchange through memory and no grid barrier. This script runs, for each
case, the engine's ``triton`` and ``triton-graph`` lanes under that plan and under the exchange plan
(``plan_override(h_on_chip=False)``, the default before), beside ``torch-nn`` and
``torch-nn-graph`` (cuDNN) on the same weights and inputs, through the engine's own pieces:

- accuracy: the largest relative error over everything the training step returns (output, final
  states, every gradient) against the float64 reference (``verify.compare``), for both plans;
- time: the engine's forward and training steps (``Step.measure``), the two plans in the order
  A B B A and averaged, so that drift favours neither.

Cases: glample-2016's hidden 100 (RNN in fp32, tf32, bf16; LSTM in bf16), theano-cudnn-2016's
hidden 128 in bf16 and one in fp16, and two RNNs at hidden 256 with the on-chip plan forced (past
the default's 128 columns: is the limit right?).

``--compare fast_activations`` runs the same measurements with the MUFU's tanh (``fast``, the
default for bf16, fp16 and TF32 forwards: ``Plan.fast_activations``) against the exact activations
(``exact``), on glample-2016's and theano-cudnn-2016's small cases, FlashRNN's, and the LSTM and
GRU at hidden 100-128 in bf16 forced on chip against the exchange plan (both with fast activations).

``--compare split_k`` runs the split-K backward (``Plan.split_k``: the forward's programs,
each multiplying its own units' gate gradients by its own rows of W_hh into partials that the
programs sum after the barrier) against the transpose backward (each program reads every
program's gate gradients and its units' columns of W_hh), on the LSTM training cases of
glample-2016, theano-cudnn-2016 (depth 1), fastrnns and flashrnn-2024 in their dtypes and the issue's,
then theano-cudnn-2016's GRU (depth 1).

``--compare split_k_rows`` runs the split-K backward with its partials' matmuls 128 or 256 units
high (``plan_override(backward_block_k=...)``) against 64, and at hidden 1024 against the transpose
backward.

``--compare split_k_half`` stores the split-K partials in 16 bits (``Plan.half_partials``)
against fp32, and at batch 128, hidden 1024 runs split-K so against the transpose backward.

``--compare split_k_warps`` runs taller split-K partials with 8 warps (at 32 and 64 batch rows a
program, where 4 warps spilled, and at 16) against the default plan.

``--compare split_k_x3`` runs strict fp32's split-K backward (3xTF32 products, weights streamed
from L2) with partials 128 units high at 8 warps (``rows128w8``: half the waits for a wgmma result;
a local sm_90 compile, Triton 3.9, spilled up to 240 bytes a thread at 4 warps and none at 8) against
the default's 64 at 4 warps, on the fp32 training cases of glample-2016 and theano-cudnn-2016
(depth 1), then 256 units at 8 warps at hidden 500-512; then (indices 13-14), TF32's resident
backward at 128 units against 64 on theano's GRU at hidden 128; from index 15, with the rule
(``plans.X3_SPLIT_K_ROWS``), the default against 64 units at 4 warps on shapes it covers that
were not measured for it.

``--compare split_k_tf32`` runs plain TF32's resident split-K backward with partials 128 units high,
at 4 warps and at 8, against the default's 64 at 4, at theano's batch 32, hidden 512 and glample's
LSTM at hidden 500 (then one case each at 32 batch rows and at hidden 128).

``--compare block_h`` gives each program 32 hidden units (half the programs, a stacked tile 128 rows
high, both directions), at 4 warps and at 8 (one warpgroup per 64 rows), against the default's 16,
where 16-bit weights stay resident either way.

``--compare piece`` holds the forward's resident weights and stages h in pieces twice as wide as the
default's 8 KB of h (``plan_override(forward_block_k=...)``; the backward unchanged): one wait for
a wgmma chain per piece each step, so half the waits, where ``rnnbench.ops.aot.variant_usage``
(a local compile for sm_90, Triton 3.9) found no spills (and FlashRNN's shape, which spilled 8
bytes a thread and pads 768 to 1024);
from index 11, with 256 columns the default for 16-bit weights at 32 batch rows, the default
against the 128 columns before.

``--compare gluon`` runs the default plan, whose LSTM forward is the Gluon kernel where
``plans.gluon_forward`` allows it (``Plan.gluon``: 16-bit weights, h more than one piece, a
Triton with the Gluon it was written for, sm_90), against the ``tl`` kernel (``forward_gluon=False``),
the backward the same under both: FlashRNN's shape, theano's 16-bit
LSTMs at hidden 512 and 1024, glample's at 500; from index 6 the GRU's Gluon forward
(``ops/gru/gluon.py``) at FlashRNN's shape and theano's.

``--compare ahead`` runs the default plan, which computes a long Gluon forward's input
projection ahead when captured in a CUDA graph (``Plan.input_ahead``: chunks by cuBLAS on a side
stream while the recurrence runs), against the projection first (``forward_input_ahead=False``):
FlashRNN's shape in fp16 and bf16, 512 steps of bf16 at batch 16, hidden 1024; index 3 the
GRU at FlashRNN's shape in fp16, projecting ahead asked for (``ahead``: the default is the LSTM's
alone, ``plans.AHEAD_DEFAULT_GATES``). The graph lane's
rows are the comparison; eager calls run the same path under both plans (the control).

``--compare stream`` streams the forward's weights from L2 in 64-column chunks (Triton pipelines
the chunk loop, ``num_stages`` deep) against the default, which holds them resident and stages h
one piece at a time, waiting for each piece's wgmma chain before the next: at 64 batch rows a
program the pieces are 64 columns wide, 16 waits a step at hidden 1024.

``--compare warps64`` runs the default where a program has 64 batch rows of fp32 weights (batch
128 at hidden 768-1024, batch 256 at 512): one warpgroup (4 warps) in the forward and in strict
fp32's split-K backward, against the 8 warps before (``fwd_w8``: the forward's; ``w8``: both
directions'), where two warpgroups split the batch columns and each read all the weights. Strict
fp32 (3xTF32, streamed weights) first, then two TF32 cases.

``--compare split_once`` runs strict fp32's forward with h split into TF32 high parts and
remainders once, by the program that computes it (the default where the weights stream,
``Plan.split_once``), against Triton's ``tf32x3``, which splits both operands of every product
inside the step (``split_in_step``), on the fp32 cases of the seed suites whose weights stream;
then the weights read from a split copy (``Plan.split_w_once``) against split in the step, each
against the default.

``--compare chip_split`` runs the on-chip RNN's strict fp32 forward from operands split once
(``Plan.on_chip_split``): 3xFP16 (``chip_fp16``: fp16 high parts and scaled remainders, half the
wgmma instructions of TF32's) and 3xTF32 (``chip_tf32``) against Triton's ``tf32x3``, which splits
both operands inside every product (``chip_in_step``).

``--compare fma`` runs the RNN's forward on FMA units, one batch row a program (``Plan.fma``,
``ops/rnn/fma.py``: the weights in registers, no tensor cores), against the on-chip tensor-core
plan (``tensor_cores``), at glample's hidden 100 in every dtype and at hidden 128 and 64.

``--compare gated_fma`` runs the LSTM's and GRU's forwards on FMA units (``ops/<cell>/fma.py``, Gluon:
``W_hh^T`` on chip, a thread per unit; ``fma_forward``) against the on-chip tensor-core forward
(``tc_forward``); both backwards on tensor cores, so training differs by the forward alone.
``--compare gated_fma_more`` does the same where the plan does not take it by default: 16-bit
weights, and fp32 past one batch row per multiprocessor.

``--compare gate_split`` runs the LSTM's and GRU's backward with each gate's partial apart
(``Plan.gate_split``, the default there) against the plan before it (the transpose backward, or
split-K at 64 batch rows from hidden 768), TF32, strict fp32 and bf16 at hidden 768-1024.

``--compare gate_split_wide`` does the same past hidden 1024 (the default there up to 2048 since
``plan_sweep.py --cases gate_split_wide``): zaremba-large's layer at hidden 1500, batch 20 in bf16,
TF32 and strict fp32, its GRU, hidden 2048 at batch 64 and 1280 at 128.

``--compare gate_split_wider`` does the same past hidden 2048, where the transpose plan was the
default, the gate split asked for (2560 to 4096, batch 20 to 128, bf16, TF32 and strict fp32, LSTM
and GRU).

``--compare gate_split_narrow`` does the same from hidden 576 at 64 batch rows where hidden is a
multiple of 8 (batch 128 at 576, 640, 704), in split-K's place.

``--compare projection`` is not a plan either: the input projection as our own launch
(``ops/projection.py``, ``our_projection``) against F.linear (cuBLAS, ``cublas_projection``),
whatever ``PROJECTION_MAX_FLOP`` says, from the seed suites' small cases to larger ones.

``--compare products`` is not a plan either: the tile products as they were (``masked_products``:
masked tiles everywhere, the gradients' 64x64 for every dtype, each launch within its general size
limit) against now (``products``: the unmasked path for whole tiles, ``ops/products.even``, and
what it allows), on the seed suites' cases whose products changed.

``--compare host_path`` is not a plan: it runs the eager host path before ``ops/gradients.py`` (``torch_calls``:
the layer's weight, bias and input gradients as three cuBLAS matmuls, a sum and a copy,
``ops/gradients.reference_gradients``; the initial states taken per layer by indexing, whose
backward fills zeros and copies) against the default (one launch of
``ops/gradients.layer_gradients_kernel`` for small layers; the states by ``squeeze``/``unbind``),
on the seed suites' small cases, where eager training is bound by the host.

``--compare batch_rows`` runs the default, batch blocks of 16 rows wherever their programs fit
(``plans.default_block_b``; the split-K backward takes the forward's blocks), against 32
(``plan_override(block_b=32)``, the default before past batch 32; the RNN's forward alone, its
backward keeps the whole batch), both ways: theano's depth-1
cases at hidden 128 and fastrnns', then the RNN (forward only changes) and shapes the kernel
sweep (``plan_sweep.py --cases rows``) did not cover. ``--compare backward_rows`` does the same for
the backwards that do not take the forward's blocks (the RNN's; the LSTM's and GRU's transpose
backward in TF32 at hidden 1024): the default (16 or 32 rows) against the whole batch up to 64
(``backward_block_b``, the default before).

``--compare half_operands`` runs TF32's forward on fp16 operands (``Plan.half_operands``, the
default where TF32's weights would stream) against TF32 operands, on theano's depth-1 TF32 cases at
hidden 1024. ``--compare half_wide`` does the same where TF32's weights are resident (the default
there too since the H200's ``plan_sweep.py --cases half_operands_wide``): theano's depth-1 cases at
hidden 512, glample's LSTM at hidden 500, fastrnns' LSTM (batch 64, 100 steps, hidden 512), and
hidden 768 at batch 16.

``--compare pad_rows`` runs TF32's fp16-operand forward with its own fp16 rows padded to 16 bytes
(``Plan.pad_rows``) against unpadded, at hidden 650 (batch 128, 32, 20), 500 and 640 (the control).
``--compare pad_rows_16bit`` runs the 16-bit forward on padded rows of its own (asked for) against
the default plan: bf16 at hidden 650 (batch 128, 32, 20) and 1500 (batch 20), fp16 at 650, 640 the
control (run before the rule that made it the default at 650 and 1500: ``results/h200/pad-rows``).

``--compare reg_weights`` holds the Gluon forwards' weights in registers (``Plan.reg_weights``)
against reading them from shared memory every step, at FlashRNN's shape and hidden 512.

Writes ``OUT_DIR/<compare>.jsonl`` (the environment record, then one row per case as measured;
``forward_meta_<plan>`` in a row is the forward kernel's compile-time arguments as launched under
that plan) and prints a table. ``--device cpu`` (with ``TRITON_INTERPRET=1``) only checks this script.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ab import parser as ab_parser, check_order, in_turns, median_ms, run_cases  # noqa: E402

DEFAULT = ("on_chip", "exchange")  # row key of plan A, plan B
FORCED = ("forced", "exchange")
FAST = ("fast", "exact")
SPLIT = ("split_k", "transpose")
PLANS = {"on_chip": {}, "forced": {"h_on_chip": True}, "exchange": {"h_on_chip": False}, "fast": {},
         "exact": {"fast_activations": False}, "split_k": {"split_k": True}, "transpose": {"split_k": False},
         **{f"rows{k}": {"split_k": True, "backward_block_k": k} for k in (64, 128, 256)},
         "half": {"backward_half_partials": True}, "full": {"backward_half_partials": False},
         "split_half": {"split_k": True, "backward_half_partials": True}, "default": {}, "units32": {"block_h": 32},
         "units32w8": {"block_h": 32, "num_warps": 8},
         **{f"rows{k}w8": {"split_k": True, "backward_block_k": k, "backward_num_warps": 8} for k in (128, 256)},
         **{f"piece{k}": {"forward_block_k": k} for k in (128, 256, 512)},
         "rows64w4": {"split_k": True, "backward_block_k": 64, "backward_num_warps": 4},
         "stream": {"forward_w_resident": False, "forward_block_k": 64},
         "resident64": {"forward_w_resident": True, "forward_block_k": 64},
         "fwd_w8": {"forward_num_warps": 8}, "w8": {"num_warps": 8}, "split_in_step": {"split_once": False},
         "w_in_step": {"split_w_once": False}, "w_copy": {"split_w_once": True},
         "batch32": {"block_b": 32}, "fwd_batch32": {"forward_block_b": 32},
         **{f"bwd_batch{k}": {"backward_block_b": k} for k in (32, 64)},
         "chip_in_step": {"on_chip_split": ""}, "chip_tf32": {"on_chip_split": "tf32"},
         "chip_fp16": {"on_chip_split": "fp16"},
         "torch_calls": {},  # the default plan on the host path before ops/gradients.py (_setting)
         "cublas_projection": {}, "our_projection": {},  # the input projection by F.linear, by ours (_setting)
         "masked_products": {}, "products": {},  # the tile products as they were, as they are (_setting)
         "tl": {"forward_gluon": False}, "projection_first": {"forward_input_ahead": False},
         "ahead": {"forward_input_ahead": True}, "fma": {"fma": True}, "tensor_cores": {"fma": False},
         "fp32_saved": {"forward_half_saved": False}, "half_saved": {"forward_half_saved": True},
         "fma_forward": {"forward_fma": True}, "tc_forward": {"forward_fma": False},
         "gate_split": {}, "no_gate_split": {"backward_gate_split": False},
         "gate_split_asked": {"backward_gate_split": True},
         "half_operands": {}, "tf32_operands": {"forward_half_operands": False},
         "reg_weights": {"forward_reg_weights": True}, "smem_weights": {"forward_reg_weights": False},
         "padded": {"forward_pad_rows": True}, "unpadded": {"forward_pad_rows": False}}
# (cell, batch_size, seq_len, input_size, hidden_size, dtype, plans compared)
CASES = [
    ("rnn_tanh", 20, 30, 100, 100, "fp32", DEFAULT), ("rnn_tanh", 20, 30, 100, 100, "tf32", DEFAULT),
    ("rnn_tanh", 20, 30, 100, 100, "bf16", DEFAULT), ("lstm", 20, 30, 100, 100, "bf16", DEFAULT),
    ("lstm", 32, 30, 128, 128, "bf16", DEFAULT), ("gru", 32, 30, 128, 128, "bf16", DEFAULT),
    ("lstm", 128, 30, 128, 128, "bf16", DEFAULT), ("gru", 128, 30, 128, 128, "bf16", DEFAULT),
    ("lstm", 32, 30, 128, 128, "fp16", DEFAULT),
    ("rnn_tanh", 32, 30, 256, 256, "bf16", FORCED), ("rnn_tanh", 128, 30, 256, 256, "bf16", FORCED),
]
FAST_CASES = [
    ("rnn_tanh", 20, 30, 100, 100, "tf32", FAST), ("rnn_tanh", 20, 30, 100, 100, "bf16", FAST),
    ("lstm", 20, 30, 100, 100, "tf32", FAST), ("lstm", 20, 30, 100, 100, "bf16", FAST),
    ("lstm", 32, 30, 128, 128, "tf32", FAST), ("gru", 32, 30, 128, 128, "tf32", FAST),
    ("lstm", 32, 30, 512, 512, "bf16", FAST), ("lstm", 16, 1024, 768, 768, "bf16", FAST),
    ("lstm", 16, 1024, 768, 768, "fp16", FAST),
    ("lstm", 20, 30, 100, 100, "bf16", FORCED), ("lstm", 32, 30, 128, 128, "bf16", FORCED),
    ("gru", 32, 30, 128, 128, "bf16", FORCED),
]


def _case(cell: str, batch_size: int, hidden_size: int, dtype: str, plans: tuple, seq_len: int = 30) -> tuple:
    """A case of the split-K comparisons: input_size = hidden_size, seq_len 30 unless given."""
    return (cell, batch_size, seq_len, hidden_size, hidden_size, dtype, plans)


# The LSTM's training cases of every suite that has them, and FlashRNN's, then theano's depth-1 GRU
# grid and three fp32 GRUs (indices 26-40); the forward is the same under both plans: its rows are
# the control.
SPLIT_CASES = [
    _case("lstm", 16, 768, "bf16", SPLIT, seq_len=1024), _case("lstm", 16, 768, "fp16", SPLIT, seq_len=1024),
    _case("lstm", 20, 100, "fp32", SPLIT), _case("lstm", 20, 100, "tf32", SPLIT),
    _case("lstm", 20, 500, "tf32", SPLIT),
    _case("lstm", 20, 500, "fp32", SPLIT), _case("lstm", 20, 500, "bf16", SPLIT),
    _case("lstm", 32, 128, "tf32", SPLIT), _case("lstm", 128, 128, "tf32", SPLIT),
    _case("lstm", 32, 512, "bf16", SPLIT), _case("lstm", 32, 512, "tf32", SPLIT),
    _case("lstm", 128, 512, "bf16", SPLIT), _case("lstm", 128, 512, "tf32", SPLIT),
    _case("lstm", 32, 1024, "bf16", SPLIT), _case("lstm", 32, 1024, "tf32", SPLIT),
    _case("lstm", 128, 1024, "bf16", SPLIT), _case("lstm", 128, 1024, "tf32", SPLIT),
    _case("lstm", 20, 100, "bf16", SPLIT), _case("lstm", 32, 128, "bf16", SPLIT),
    _case("lstm", 128, 128, "bf16", SPLIT), _case("lstm", 32, 128, "fp16", SPLIT),
    _case("lstm", 32, 128, "fp32", SPLIT), _case("lstm", 128, 128, "fp32", SPLIT),
    _case("lstm", 32, 512, "fp32", SPLIT), _case("lstm", 128, 1024, "fp32", SPLIT),
    _case("lstm", 64, 512, "fp32", SPLIT, seq_len=100),
] + [_case("gru", b, h, dtype, SPLIT) for h in (128, 512, 1024) for b in (32, 128) for dtype in ("bf16", "tf32")] + [
    _case("gru", 32, 128, "fp32", SPLIT), _case("gru", 128, 128, "fp32", SPLIT),
    _case("gru", 32, 512, "fp32", SPLIT),
]
# The split-K backward's partial matmuls 128 or 256 units high (fewer waits for a wgmma result
# before its store: 3 instead of 12 a step at FlashRNN's shape) against 64, where the transposed
# weights are resident; at hidden 1024, taller partials against the transpose backward (the default
# there before); last (indices 19-21), one partial as wide as hidden 100-128 against two, in bf16.
TALL, TALLER = ("rows128", "rows64"), ("rows256", "rows64")
ROWS_CASES = [
    _case("lstm", 16, 768, "bf16", TALLER, seq_len=1024), _case("lstm", 16, 768, "fp16", TALLER, seq_len=1024),
    _case("lstm", 20, 500, "tf32", TALLER), _case("lstm", 20, 500, "bf16", TALLER),
    _case("lstm", 32, 512, "bf16", TALLER), _case("lstm", 32, 512, "tf32", TALLER),
    _case("gru", 32, 512, "bf16", TALLER), _case("gru", 32, 512, "tf32", TALLER),
    _case("lstm", 32, 128, "tf32", TALL), _case("lstm", 128, 128, "tf32", TALL),
    _case("lstm", 128, 512, "bf16", TALL), _case("lstm", 128, 512, "tf32", TALL),
    _case("lstm", 128, 512, "bf16", TALLER), _case("gru", 128, 512, "bf16", TALLER),
    _case("lstm", 32, 1024, "bf16", ("rows256", "transpose")),
    _case("lstm", 128, 1024, "bf16", ("rows128", "transpose")),
    _case("gru", 32, 1024, "bf16", ("rows256", "transpose")),
    _case("gru", 128, 1024, "bf16", ("rows128", "transpose")),
    _case("lstm", 32, 1024, "tf32", ("rows128", "transpose")),
    _case("lstm", 20, 100, "bf16", TALL), _case("lstm", 32, 128, "bf16", TALL),
    _case("gru", 32, 128, "bf16", TALL),
]
# The split-K partials stored in 16 bits (Plan.half_partials: half the bytes written and read each
# step) against fp32, on the default split-K plans; at batch 128, hidden 1024 (where the fp32
# partials outgrow L2) split-K with them against the transpose backward, the default there then;
# last (indices 12-15), fp16 at hidden 1024: the default (split-K, 16-bit partials) against the transpose.
HALF = ("half", "full")
HALF_CASES = [
    _case("lstm", 16, 768, "bf16", HALF, seq_len=1024), _case("lstm", 16, 768, "fp16", HALF, seq_len=1024),
    _case("lstm", 32, 512, "bf16", HALF), _case("lstm", 128, 512, "bf16", HALF),
    _case("gru", 32, 512, "bf16", HALF), _case("gru", 128, 512, "bf16", HALF),
    _case("lstm", 32, 1024, "bf16", HALF), _case("gru", 32, 1024, "bf16", HALF),
    _case("lstm", 128, 1024, "bf16", ("split_half", "transpose")),
    _case("gru", 128, 1024, "bf16", ("split_half", "transpose")),
    _case("lstm", 20, 500, "bf16", HALF), _case("lstm", 32, 128, "bf16", HALF),
] + [_case(cell, b, 1024, "fp16", ("default", "transpose")) for cell in ("lstm", "gru") for b in (32, 128)]
# Taller split-K partials at 32 and 64 batch rows a program (where 4 warps spilled) with 8 warps,
# and at 16 rows with 8 warps, against the default plan.
WARPS_CASES = [
    _case("lstm", 128, 512, "bf16", ("rows256w8", "default")), _case("gru", 128, 512, "bf16", ("rows256w8", "default")),
    _case("lstm", 128, 128, "bf16", ("rows128w8", "default")),
    _case("lstm", 128, 512, "tf32", ("rows256w8", "default")),
    _case("lstm", 128, 1024, "bf16", ("rows128", "default")), _case("gru", 128, 1024, "bf16", ("rows128", "default")),
    _case("lstm", 16, 768, "bf16", ("rows256w8", "default"), seq_len=1024),
    _case("lstm", 32, 512, "bf16", ("rows256w8", "default")),
]
# Exchange-plan cases in 16 bits whose weights stay resident at 32 units a program.
UNITS_CASES = [
    _case("lstm", 16, 768, "bf16", ("units32", "default"), seq_len=1024),
    _case("lstm", 16, 768, "fp16", ("units32", "default"), seq_len=1024),
    _case("lstm", 32, 512, "bf16", ("units32", "default")), _case("gru", 32, 512, "bf16", ("units32", "default")),
    _case("lstm", 20, 500, "bf16", ("units32", "default")),
    _case("lstm", 128, 512, "bf16", ("units32", "default")),
] + [_case("lstm", 16, 768, dtype, ("units32w8", "default"), seq_len=1024) for dtype in ("bf16", "fp16")] + [
    _case(cell, 32, 512, "bf16", ("units32w8", "default")) for cell in ("lstm", "gru")]
# Resident forwards with pieces of h twice the default's 8 KB (16 KB; the default width after "vs").
PIECE_CASES = [
    _case("lstm", 128, 512, "bf16", ("piece256", "default")), _case("gru", 128, 512, "bf16", ("piece256", "default")),
    _case("lstm", 32, 512, "bf16", ("piece512", "default")), _case("gru", 32, 512, "bf16", ("piece512", "default")),
    _case("lstm", 20, 500, "bf16", ("piece512", "default")), _case("rnn_tanh", 20, 500, "bf16", ("piece512", "default")),
    _case("lstm", 32, 1024, "bf16", ("piece512", "default")), _case("gru", 32, 1024, "bf16", ("piece512", "default")),
    _case("lstm", 128, 512, "tf32", ("piece128", "default")), _case("lstm", 32, 512, "tf32", ("piece256", "default")),
    _case("lstm", 16, 768, "bf16", ("piece512", "default"), seq_len=1024),
] + [  # indices 11-18, after the rule (plans.WIDE_PIECE_ROWS; at aea332f it covered hidden 1024 too,
    # since WIDE_PIECE_MAX_HIDDEN = 768 the default there is 128 columns): the default against 128 at 32 rows
    _case("lstm", 128, 512, "bf16", ("default", "piece128")), _case("gru", 128, 512, "bf16", ("default", "piece128")),
    _case("lstm", 128, 512, "fp16", ("default", "piece128")), _case("lstm", 64, 512, "bf16", ("default", "piece128")),
    _case("lstm", 64, 1024, "bf16", ("default", "piece128")), _case("gru", 64, 768, "bf16", ("default", "piece128")),
    _case("rnn_tanh", 128, 1024, "bf16", ("default", "piece128")),
    _case("lstm", 256, 256, "bf16", ("default", "piece128")),
]
# Forwards whose resident weights are held in many pieces (16 at 64 rows and hidden 1024, 8 at 32
# rows in TF32 or at hidden 1024), streamed instead; a few with 2-4 pieces for contrast.
STREAM = ("stream", "default")
STREAM_CASES = [
    _case("lstm", 128, 1024, "bf16", STREAM), _case("gru", 128, 1024, "bf16", STREAM),
    _case("lstm", 128, 1024, "fp16", STREAM), _case("lstm", 64, 1024, "bf16", STREAM),
    _case("rnn_tanh", 128, 1024, "bf16", STREAM), _case("lstm", 128, 512, "tf32", STREAM),
    _case("gru", 128, 512, "tf32", STREAM), _case("lstm", 32, 512, "tf32", STREAM),
    _case("lstm", 32, 1024, "bf16", STREAM), _case("lstm", 128, 512, "bf16", STREAM),
    _case("lstm", 64, 768, "bf16", STREAM),
] + [  # indices 11-14, after the rule (plans.STREAM_FORWARD_ROWS): other shapes it streams, against resident
    _case(cell, b, h, "bf16", ("default", "resident64"))
    for cell, b, h in (("lstm", 128, 768), ("lstm", 256, 512), ("gru", 512, 256), ("lstm", 256, 768))
]
# Strict fp32's split-K backward (3xTF32, streamed) with partials 128 (or 256) units high at 8 warps,
# against the default then (64 units, 4 warps); then TF32's resident backward at 128 units on
# theano's GRU.
X3_TALL = ("rows128w8", "default")
X3_CASES = [
    _case("lstm", 20, 100, "fp32", X3_TALL), _case("lstm", 32, 128, "fp32", X3_TALL),
    _case("lstm", 128, 128, "fp32", X3_TALL), _case("gru", 32, 128, "fp32", X3_TALL),
    _case("gru", 128, 128, "fp32", X3_TALL), _case("lstm", 20, 500, "fp32", X3_TALL),
    _case("lstm", 32, 512, "fp32", X3_TALL), _case("gru", 32, 512, "fp32", X3_TALL),
    _case("lstm", 128, 512, "fp32", X3_TALL), _case("gru", 128, 512, "fp32", X3_TALL),
    _case("lstm", 20, 500, "fp32", ("rows256w8", "default")), _case("lstm", 32, 512, "fp32", ("rows256w8", "default")),
    _case("gru", 32, 512, "fp32", ("rows256w8", "default")),
    _case("gru", 32, 128, "tf32", ("rows128", "default")), _case("gru", 128, 128, "tf32", ("rows128", "default")),
] + [  # indices 15-19, after the rule (plans.X3_SPLIT_K_ROWS): shapes it covers that were not measured
    # for it, the default against 64 units at 4 warps
    _case(cell, b, h, "fp32", ("default", "rows64w4"), seq_len=t)
    for cell, b, h, t in (("lstm", 16, 768, 100), ("lstm", 256, 256, 30), ("gru", 64, 512, 30),
                          ("lstm", 37, 200, 30), ("gru", 48, 700, 30))
]
# Plain TF32's resident split-K backward at 16 batch rows (and one at 32) with partials 128 units
# high, at 4 warps and at 8, against the default (64 units, 4 warps): triton_dev.py at ecf81bd found
# 128 units at 0.95-0.96x the kernel time at theano's batch 32, hidden 512.
TF32_TALL_CASES = [
    _case(cell, b, h, "tf32", (plan, "default"))
    for cell, b, h in (("lstm", 32, 512), ("gru", 32, 512), ("lstm", 20, 500)) for plan in ("rows128", "rows128w8")
] + [_case("lstm", 128, 512, "tf32", ("rows128w8", "default")), _case("lstm", 32, 128, "tf32", ("rows128w8", "default"))]
# 64 batch rows a program (batch 128 from hidden 768, 256 from 512), fp32 weights: the default
# (plans.FP32_WIDE_FORWARD_WARPS, X3_SPLIT_K_WIDE_WARPS: one warpgroup of 4 warps) against the 8
# warps before, in the forward (fwd_w8) or both ways (w8, where the split-K backward changed too).
WARPS64_CASES = [
    _case("lstm", 128, 1024, "fp32", ("default", "fwd_w8")), _case("gru", 128, 1024, "fp32", ("default", "fwd_w8")),
    _case("lstm", 256, 512, "fp32", ("default", "w8")), _case("gru", 256, 512, "fp32", ("default", "w8")),
    _case("gru", 128, 768, "fp32", ("default", "w8")),
    _case("lstm", 128, 1024, "tf32", ("default", "fwd_w8")), _case("lstm", 256, 512, "tf32", ("default", "fwd_w8")),
]
# Strict fp32's forward with h split once (plans.SPLIT_ONCE, Plan.split_once) against Triton's
# tf32x3, which splits both operands inside every product, on every fp32 case of glample-2016,
# theano-cudnn-2016 (depth 1) and fastrnns whose weights stream (hidden 500 and up), and one at
# batch 256; then (from index 11) the weights from a split copy (Plan.split_w_once, the default
# from 64 batch rows a program: plans.SPLIT_W_ONCE_ROWS) against split in the step, both ways.
_STREAMED_FP32 = (("lstm", 20, 500, 30), ("rnn_tanh", 20, 500, 30), ("gru", 32, 512, 30), ("lstm", 32, 512, 30),
                  ("lstm", 128, 512, 30), ("lstm", 64, 512, 100), ("lstm", 32, 1024, 30), ("gru", 32, 1024, 30),
                  ("lstm", 128, 1024, 30), ("gru", 128, 1024, 30), ("lstm", 256, 512, 30))


def _weights_copied(cell: str, batch_size: int, hidden_size: int) -> bool:
    """Whether strict fp32's default forward plan on an H100 (132 multiprocessors) streams the
    weights from a split copy (``Plan.split_w_once``)."""
    import torch

    from rnnbench.ops.plans import choose_plan
    from rnnbench.ops.recurrence import NUM_GATES

    return choose_plan(batch_size, hidden_size, NUM_GATES[cell], torch.float32, torch.device("cuda"),
                       multiprocessors=132, precision="tf32x3").split_w_once


SPLIT_ONCE_CASES = [
    _case(cell, b, h, "fp32", ("default", "split_in_step"), seq_len=t) for cell, b, h, t in _STREAMED_FP32
] + [
    _case(cell, b, h, "fp32", ("default", "w_in_step" if _weights_copied(cell, b, h) else "w_copy"), seq_len=t)
    for cell, b, h, t in _STREAMED_FP32
]
# Batch blocks of 16 rows wherever their programs fit (plans.default_block_b; the split-K backward
# takes the forward's blocks) against 32, the default before past batch 32: theano's depth-1 cases at
# hidden 128 and fastrnns' (which it changes), then shapes the kernel sweep did not cover (the RNN,
# whose backward keeps the whole batch, so only its forward's blocks differ; the GRU at hidden 512,
# batch 64).
BATCH_ROWS = ("default", "batch32")
BATCH_ROWS_CASES = [
    _case(cell, 128, 128, dtype, BATCH_ROWS) for dtype in ("fp32", "tf32", "bf16") for cell in ("lstm", "gru")
] + [_case("lstm", 64, 512, dtype, BATCH_ROWS, seq_len=100) for dtype in ("fp32", "bf16")] + [
    _case("rnn_tanh", 128, 512, "bf16", ("default", "fwd_batch32")),
    _case("rnn_tanh", 128, 1024, "bf16", ("default", "fwd_batch32")),
    _case("lstm", 128, 256, "bf16", BATCH_ROWS), _case("gru", 64, 512, "tf32", BATCH_ROWS),
]
# The backwards that do not take the forward's blocks (the RNN's; the LSTM's and GRU's transpose
# backward in TF32 at hidden 1024) in blocks of 16 or 32 rows (the default now) against the whole
# batch up to 64 rows (the default before); forwards unchanged (the control).
BACKWARD_ROWS_CASES = [
    _case(cell, b, h, dtype, ("default", f"bwd_batch{whole}"))
    for cell, b, h, dtype, whole in (("rnn_tanh", 20, 500, "fp32", 32), ("rnn_tanh", 20, 500, "tf32", 32),
                                     ("rnn_tanh", 20, 500, "bf16", 32), ("rnn_tanh", 128, 512, "bf16", 64),
                                     ("lstm", 32, 1024, "tf32", 32), ("gru", 32, 1024, "tf32", 32),
                                     ("lstm", 64, 1024, "tf32", 64))
]
# The on-chip RNN's strict fp32 forward from operands split once (Plan.on_chip_split): 3xFP16 and
# 3xTF32 against Triton's tf32x3 in the step, at glample's hidden 100 (tanh, relu), and at 128 and 64.
CHIP_SPLIT_CASES = [
    _case("rnn_tanh", 20, 100, "fp32", ("chip_in_step", "chip_fp16")),
    _case("rnn_tanh", 20, 100, "fp32", ("chip_in_step", "chip_tf32")),
    _case("rnn_relu", 20, 100, "fp32", ("chip_in_step", "chip_fp16")),
    _case("rnn_tanh", 32, 128, "fp32", ("chip_in_step", "chip_fp16")),
    _case("rnn_tanh", 128, 64, "fp32", ("chip_in_step", "chip_fp16")),
]
# The LSTM forward in Gluon against the tl kernel, where the plan takes Gluon: FlashRNN's shape,
# theano-cudnn-2016's 16-bit LSTMs past hidden 256, glample-2016's at hidden 500.
GLUON_CASES = [
    _case("lstm", 16, 768, "fp16", ("default", "tl"), seq_len=1024),
    _case("lstm", 16, 768, "bf16", ("default", "tl"), seq_len=1024),
    _case("lstm", 32, 512, "bf16", ("default", "tl")), _case("lstm", 128, 512, "bf16", ("default", "tl")),
    _case("lstm", 32, 1024, "bf16", ("default", "tl")), _case("lstm", 20, 500, "bf16", ("default", "tl")),
    # The GRU's Gluon forward (ops/gru/gluon.py) at the same shapes: cases 6-10.
    _case("gru", 16, 768, "fp16", ("default", "tl"), seq_len=1024),
    _case("gru", 16, 768, "bf16", ("default", "tl"), seq_len=1024),
    _case("gru", 32, 512, "bf16", ("default", "tl")), _case("gru", 128, 512, "bf16", ("default", "tl")),
    _case("gru", 32, 1024, "bf16", ("default", "tl")),
]
# The input projected ahead, overlapping the Gluon forward in graphs (Plan.input_ahead), against
# projected first: FlashRNN's shape (48 programs), then 512 steps at batch 16, hidden 1024 (64).
AHEAD_CASES = [
    _case("lstm", 16, 768, "fp16", ("projection_first", "default"), seq_len=1024),
    _case("lstm", 16, 768, "bf16", ("projection_first", "default"), seq_len=1024),
    _case("lstm", 16, 1024, "bf16", ("projection_first", "default"), seq_len=512),
    _case("gru", 16, 768, "fp16", ("projection_first", "ahead"), seq_len=1024),  # case 3: the GRU's, asked for
]
# The RNN's forward on FMA units, a batch row a program (Plan.fma, ops/rnn/fma.py), against the
# on-chip tensor-core plan: glample's hidden 100 in every dtype, relu, hidden 128 and 64, batch 128.
FMA = ("fma", "tensor_cores")
FMA_CASES = [
    _case("rnn_tanh", 20, 100, "fp32", FMA), _case("rnn_tanh", 20, 100, "tf32", FMA),
    _case("rnn_tanh", 20, 100, "bf16", FMA), _case("rnn_relu", 20, 100, "fp32", FMA),
    _case("rnn_tanh", 32, 128, "fp32", FMA), _case("rnn_tanh", 128, 64, "fp32", FMA),
    _case("rnn_tanh", 20, 100, "fp16", FMA), _case("rnn_tanh", 128, 128, "tf32", FMA),
    _case("rnn_tanh", 20, 100, "fp32", FMA, seq_len=300),  # case 8: ten times the steps (the time a step)
    # cases 9-12: past one batch row per multiprocessor (the default stops at one; fma forced here)
    _case("rnn_tanh", 256, 100, "fp32", FMA), _case("rnn_tanh", 512, 100, "fp32", FMA),
    _case("rnn_tanh", 1024, 100, "fp32", FMA), _case("rnn_tanh", 512, 128, "bf16", FMA),
]
# The LSTM's and GRU's forwards on FMA units (Plan.fma, ops/<cell>/fma.py: W_hh^T on chip, a thread
# per unit) against the tensor-core on-chip forward: glample's width (100) and theano's 128 (batch
# 32 and 128), strict fp32 and TF32; 300 steps (the time a step); hidden 64; bf16 (not the default).
GATED_FMA = ("fma_forward", "tc_forward")
GATED_FMA_CASES = [
    _case("gru", 32, 128, "fp32", GATED_FMA), _case("gru", 128, 128, "fp32", GATED_FMA),
    _case("gru", 32, 128, "tf32", GATED_FMA), _case("gru", 20, 100, "fp32", GATED_FMA),
    _case("gru", 32, 128, "fp32", GATED_FMA, seq_len=300), _case("gru", 64, 64, "fp32", GATED_FMA),
    _case("lstm", 20, 100, "fp32", GATED_FMA), _case("lstm", 20, 100, "tf32", GATED_FMA),
    _case("lstm", 32, 128, "fp32", GATED_FMA), _case("lstm", 128, 128, "fp32", GATED_FMA),
    _case("lstm", 32, 128, "tf32", GATED_FMA), _case("lstm", 32, 128, "fp32", GATED_FMA, seq_len=300),
    _case("lstm", 32, 128, "bf16", GATED_FMA), _case("gru", 32, 128, "bf16", GATED_FMA),
]
# Where the gated FMA forward is not the default yet, forced against the tensor-core forward: 16-bit
# weights at more shapes than batch 32, hidden 128 (bf16 at batch 128, glample's LSTM, hidden 64,
# fp16), then fp32 past one batch row per multiprocessor (two and four rows).
GATED_FMA_MORE_CASES = [
    _case("gru", 128, 128, "bf16", GATED_FMA), _case("lstm", 128, 128, "bf16", GATED_FMA),
    _case("lstm", 20, 100, "bf16", GATED_FMA), _case("gru", 32, 64, "bf16", GATED_FMA),
    _case("lstm", 32, 128, "fp16", GATED_FMA), _case("gru", 32, 128, "fp16", GATED_FMA),
    _case("gru", 264, 128, "fp32", GATED_FMA), _case("lstm", 264, 128, "fp32", GATED_FMA),
    _case("gru", 528, 100, "fp32", GATED_FMA),
]
# The gate-split backward (Plan.gate_split, the default since it was measured) against the plan
# before it (the transpose past the split-K range, split-K at 64 batch rows from hidden 768): the
# issue's TF32 cases at hidden 1024 (theano depth 1), theano's depth-3 fp32 at 1024, bf16 at 128 rows.
GATE_SPLIT = ("gate_split", "no_gate_split")
GATE_SPLIT_CASES = [
    _case("lstm", 128, 1024, "tf32", GATE_SPLIT), _case("gru", 128, 1024, "tf32", GATE_SPLIT),
    _case("lstm", 32, 1024, "tf32", GATE_SPLIT), _case("gru", 32, 1024, "tf32", GATE_SPLIT),
    _case("lstm", 128, 1024, "fp32", GATE_SPLIT), _case("lstm", 128, 1024, "bf16", GATE_SPLIT),
    _case("gru", 128, 768, "tf32", GATE_SPLIT),
]
# Then past hidden 1024 (the default up to 2048 since plan_sweep.py --cases gate_split_wide):
# zaremba-large's layer (hidden 1500, batch 20, 35 steps) in bf16, TF32 and strict fp32, its GRU in
# bf16, and hidden 2048 at batch 64 and 1280 at batch 128.
GATE_SPLIT_WIDE_CASES = [
    *[_case("lstm", 20, 1500, dtype, GATE_SPLIT, seq_len=35) for dtype in ("bf16", "tf32", "fp32")],
    _case("gru", 20, 1500, "bf16", GATE_SPLIT, seq_len=35),
    _case("lstm", 64, 2048, "bf16", GATE_SPLIT), _case("lstm", 128, 1280, "tf32", GATE_SPLIT),
]
# And past hidden 2048 (plan_sweep.py --cases gate_split_wider), where the transpose plan was the
# default: the gate split asked for, whatever the default, against the transpose plan (its TF32
# chunks at batch 128 narrowed to fit since _backward_chunks, now _chunks_fit); strict fp32 at 3072 too.
GATE_SPLIT_ASKED = ("gate_split_asked", "no_gate_split")
GATE_SPLIT_WIDER_CASES = [
    _case("lstm", 20, 4096, "bf16", GATE_SPLIT_ASKED, seq_len=35),
    _case("lstm", 20, 2560, "tf32", GATE_SPLIT_ASKED, seq_len=35),
    _case("lstm", 64, 3072, "bf16", GATE_SPLIT_ASKED), _case("lstm", 128, 4096, "tf32", GATE_SPLIT_ASKED),
    _case("gru", 20, 3072, "bf16", GATE_SPLIT_ASKED, seq_len=35),
    _case("lstm", 20, 3072, "fp32", GATE_SPLIT_ASKED, seq_len=35),
]
# And from hidden 576 at 64 batch rows where hidden is a multiple of 8 (plan_sweep.py --cases
# gate_split_narrow), in split-K's place: batch 128 at hidden 576, 640 and 704, TF32 and bf16.
GATE_SPLIT_NARROW_CASES = [
    _case("lstm", 128, 640, "tf32", GATE_SPLIT), _case("gru", 128, 640, "tf32", GATE_SPLIT),
    _case("lstm", 128, 576, "bf16", GATE_SPLIT), _case("lstm", 128, 704, "tf32", GATE_SPLIT),
    _case("gru", 128, 704, "bf16", GATE_SPLIT),
]
# TF32's forward on fp16 operands (Plan.half_operands, the default where TF32's weights would
# stream) against TF32 operands: theano's depth-1 cases at hidden 1024, batch 128 and 32.
HALF_OPERANDS = ("half_operands", "tf32_operands")
HALF_OPERAND_CASES = [_case(cell, b, 1024, "tf32", HALF_OPERANDS) for b in (128, 32) for cell in ("lstm", "gru")]
# Then where TF32's weights are resident (the default there since half_operands_wide's sweep):
# theano's depth-1 cases at hidden 512, glample's LSTM at hidden 500, fastrnns' LSTM, hidden 768 at batch 16.
HALF_WIDE_CASES = [*[_case(cell, b, 512, "tf32", HALF_OPERANDS) for b in (128, 32) for cell in ("lstm", "gru")],
                   ("lstm", 20, 30, 500, 500, "tf32", HALF_OPERANDS),
                   _case("lstm", 64, 512, "tf32", HALF_OPERANDS, seq_len=100),
                   *[_case(cell, 16, 768, "tf32", HALF_OPERANDS) for cell in ("lstm", "gru")]]
# The Gluon forwards with the weights in registers (Plan.reg_weights) against shared memory: FlashRNN's
# shape in fp16 and bf16 (LSTM, GRU), two pieces of h at batch 32 (theano's hidden 512, bf16).
REG_WEIGHTS = ("reg_weights", "smem_weights")
REG_WEIGHT_CASES = [_case("lstm", 16, 768, "fp16", REG_WEIGHTS, seq_len=1024),
                    _case("lstm", 16, 768, "bf16", REG_WEIGHTS, seq_len=1024),
                    _case("gru", 16, 768, "fp16", REG_WEIGHTS, seq_len=1024),
                    _case("lstm", 32, 512, "bf16", REG_WEIGHTS), _case("gru", 32, 512, "bf16", REG_WEIGHTS)]
# TF32's fp16-operand forward with its own fp16 rows 16 bytes apart (Plan.pad_rows, the default since this set ran)
# against unpadded: hidden 650 (1,300-byte rows; zaremba-medium's width) at batch 128, 32 and 20 (the
# language model's batch and bptt 35), 500 at batch 20 (glample's LSTM), 640 the aligned control.
PAD_ROWS = ("padded", "unpadded")
PAD_ROW_CASES = [*[_case(cell, 128, 650, "tf32", PAD_ROWS) for cell in ("lstm", "gru")],
                 _case("lstm", 32, 650, "tf32", PAD_ROWS), _case("lstm", 20, 650, "tf32", PAD_ROWS, seq_len=35),
                 ("lstm", 20, 30, 500, 500, "tf32", PAD_ROWS), _case("lstm", 128, 640, "tf32", PAD_ROWS)]
# The 16-bit forward on padded rows of its own (Plan.pad_rows asked for: a padded copy of W_hh, h through
# padded planes; never Gluon) against the default plan: bf16 at hidden 650 (batch 128, 32, and 20 at
# bptt 35), zaremba-large's 1500 at batch 20, fp16 at 650; 640 at batch 128 the aligned control.
PAD_16BIT = ("padded", "default")
PAD_16BIT_CASES = [*[_case(cell, 128, 650, "bf16", PAD_16BIT) for cell in ("lstm", "gru")],
                   _case("lstm", 32, 650, "bf16", PAD_16BIT), _case("lstm", 20, 650, "bf16", PAD_16BIT, seq_len=35),
                   _case("lstm", 20, 1500, "bf16", PAD_16BIT, seq_len=35), _case("lstm", 128, 650, "fp16", PAD_16BIT),
                   _case("lstm", 128, 640, "bf16", PAD_16BIT)]
# The sliced 16-bit forward saving its gates in fp32 against in the weights' dtype (Plan.half_saved):
# the LSTM and GRU in bf16 at batch 1024, hidden 2048 and 512 x 4096 (seq_len 50, the speed map's),
# the LSTM at 1024 x 1024 and in fp16 at 1024 x 2048.
HALF_SAVED = ("fp32_saved", "half_saved")
HALF_SAVED_CASES = [*[_case(cell, b, h, "bf16", HALF_SAVED, seq_len=50) for b, h in ((1024, 2048), (512, 4096))
                      for cell in ("lstm", "gru")],
                    _case("lstm", 1024, 1024, "bf16", HALF_SAVED, seq_len=50),
                    _case("lstm", 1024, 2048, "fp16", HALF_SAVED, seq_len=50)]
COMPARISONS = {"on_chip": CASES, "fast_activations": FAST_CASES, "split_k": SPLIT_CASES, "split_k_rows": ROWS_CASES,
               "split_k_half": HALF_CASES, "split_k_warps": WARPS_CASES, "split_k_x3": X3_CASES,
               "split_k_tf32": TF32_TALL_CASES,
               "block_h": UNITS_CASES, "piece": PIECE_CASES,
               "stream": STREAM_CASES, "warps64": WARPS64_CASES, "split_once": SPLIT_ONCE_CASES,
               "batch_rows": BATCH_ROWS_CASES, "backward_rows": BACKWARD_ROWS_CASES, "chip_split": CHIP_SPLIT_CASES,
               "gluon": GLUON_CASES, "ahead": AHEAD_CASES, "fma": FMA_CASES, "gated_fma": GATED_FMA_CASES,
               "gated_fma_more": GATED_FMA_MORE_CASES, "gate_split": GATE_SPLIT_CASES,
               "gate_split_wide": GATE_SPLIT_WIDE_CASES,
               "gate_split_wider": GATE_SPLIT_WIDER_CASES, "gate_split_narrow": GATE_SPLIT_NARROW_CASES,
               "half_operands": HALF_OPERAND_CASES, "half_wide": HALF_WIDE_CASES, "reg_weights": REG_WEIGHT_CASES,
               "pad_rows": PAD_ROW_CASES, "pad_rows_16bit": PAD_16BIT_CASES, "half_saved": HALF_SAVED_CASES}
LANES_TIMED = ("triton", "triton-graph")


def _with_plans(plans: tuple, shapes: list[tuple]) -> list[tuple]:
    """Cases ``(cell, batch, seq, input, hidden, dtype, plans)``: each shape with the same two plans."""
    return [(*shape, plans) for shape in shapes]


HOST_PATH = ("torch_calls", "default")
# The seed suites' small cases (fp32 is strict: glample's and theano's own), where eager training
# is bound by the host; then two where the device is (the gradients' torch calls there either way).
HOST_PATH_CASES = _with_plans(HOST_PATH, [
    ("lstm", 20, 30, 100, 100, "fp32"), ("rnn_tanh", 20, 30, 100, 100, "fp32"), ("lstm", 20, 30, 100, 500, "fp32"),
    ("rnn_tanh", 20, 30, 100, 500, "fp32"), ("lstm", 32, 30, 128, 128, "fp32"), ("gru", 32, 30, 128, 128, "fp32"),
    ("lstm", 128, 30, 128, 128, "fp32"), ("gru", 128, 30, 128, 128, "fp32"), ("lstm", 20, 30, 100, 100, "tf32"),
    ("lstm", 32, 30, 128, 128, "bf16"), ("gru", 32, 30, 512, 512, "bf16"), ("lstm", 64, 100, 512, 512, "fp32"),
])
COMPARISONS["host_path"] = HOST_PATH_CASES
# The input projection as our launch (ops/projection.py) against F.linear (cuBLAS), whatever
# PROJECTION_MAX_FLOP says: the seed suites' small cases (FLOPs of the projection 1.2e7 to 1.3e8),
# then larger ones (2.4e8 to 1.5e9), where the rule's limit is decided.
PROJECTION = ("cublas_projection", "our_projection")
PROJECTION_CASES = _with_plans(PROJECTION, [
    ("rnn_tanh", 20, 30, 100, 100, "fp32"), ("lstm", 20, 30, 100, 100, "fp32"), ("lstm", 20, 30, 100, 100, "tf32"),
    ("rnn_tanh", 20, 30, 100, 500, "fp32"), ("gru", 32, 30, 128, 128, "fp32"), ("lstm", 32, 30, 128, 128, "bf16"),
    ("lstm", 20, 30, 100, 500, "fp32"), ("lstm", 128, 30, 128, 128, "fp32"), ("gru", 32, 30, 512, 512, "bf16"),
    ("lstm", 32, 30, 512, 512, "fp32"), ("lstm", 32, 30, 512, 512, "bf16"),
])
COMPARISONS["projection"] = PROJECTION_CASES
# The tile products as they were (masked tiles everywhere: the projection's 32x64, the gradients'
# 64x64, each launch within its general size limit) against now (the unmasked path for whole
# tiles, the gradients' tiles by operand width, the larger limits where the tiles are whole;
# results/h100/products): the seed suites' cases whose products changed.
PRODUCTS = ("masked_products", "products")
PRODUCT_CASES = _with_plans(PRODUCTS, [
    ("lstm", 20, 30, 100, 100, "fp32"), ("lstm", 32, 30, 128, 128, "fp32"), ("gru", 32, 30, 128, 128, "fp32"),
    ("lstm", 128, 30, 128, 128, "fp32"), ("lstm", 32, 30, 512, 512, "fp32"), ("lstm", 32, 30, 128, 128, "tf32"),
    ("lstm", 32, 30, 512, 512, "tf32"), ("lstm", 32, 30, 128, 128, "bf16"), ("gru", 32, 30, 512, 512, "bf16"),
])
COMPARISONS["products"] = PRODUCT_CASES


@contextlib.contextmanager
def _torch_calls():
    """The host path before ``ops/gradients.py``: the layer's gradients as torch calls, the initial states
    taken per layer by indexing (``nn._per_layer`` leaves ``[L*D, B, H]`` whole: ``h0[idx]``)."""
    from rnnbench import nn
    from rnnbench.ops import gradients

    saved = gradients.FUSED_MAX_FLOP, gradients.EVEN_FUSED_MAX_FLOP, nn._per_layer
    gradients.FUSED_MAX_FLOP, gradients.EVEN_FUSED_MAX_FLOP, nn._per_layer = 0, {}, lambda state: state
    try:
        yield
    finally:
        gradients.FUSED_MAX_FLOP, gradients.EVEN_FUSED_MAX_FLOP, nn._per_layer = saved


@contextlib.contextmanager
def _projection_limit(flop: float):
    """``ops.projection.PROJECTION_MAX_FLOP``, ``EVEN_MAX_FLOP`` and ``STRICT_EVEN_MAX_FLOP`` set
    to ``flop`` (0: F.linear always; inf: ours)."""
    from rnnbench.ops import projection

    saved = projection.PROJECTION_MAX_FLOP, projection.EVEN_MAX_FLOP, projection.STRICT_EVEN_MAX_FLOP
    projection.PROJECTION_MAX_FLOP = projection.EVEN_MAX_FLOP = projection.STRICT_EVEN_MAX_FLOP = flop
    try:
        yield
    finally:
        projection.PROJECTION_MAX_FLOP, projection.EVEN_MAX_FLOP, projection.STRICT_EVEN_MAX_FLOP = saved


@contextlib.contextmanager
def _masked_products():
    """The tile products before the unmasked path: every tile masked, the gradients' 64x64 for every
    dtype, each launch within its general limit (``FUSED_MAX_FLOP``, ``PROJECTION_MAX_FLOP``)."""
    from rnnbench.ops import gradients, projection
    from rnnbench.ops.products import Tiles

    names = [(projection, "TILES"), (projection, "EVEN_TILES"), (projection, "EVEN_MAX_FLOP"),
             (projection, "STRICT_EVEN_MAX_FLOP"), (gradients, "FP32_TILES"), (gradients, "HALF_TILES"),
             (gradients, "EVEN_FUSED_MAX_FLOP")]
    saved = [getattr(module, name) for module, name in names]
    projection.TILES = projection.EVEN_TILES = Tiles(32, 64, 32, 4, 2, even=False)
    gradients.FP32_TILES = gradients.HALF_TILES = Tiles(64, 64, 32, 4, 3, even=False)
    projection.EVEN_MAX_FLOP = projection.STRICT_EVEN_MAX_FLOP = 0
    gradients.EVEN_FUSED_MAX_FLOP = {}
    try:
        yield
    finally:
        for (module, name), value in zip(names, saved):
            setattr(module, name, value)


def _setting(plan: str):
    """The context a plan's steps are built and timed in: a :func:`plan_override`, the old host
    path, the input projection forced to F.linear or to ours, or the products as they were."""
    from rnnbench.ops.recurrence import plan_override

    if plan == "torch_calls":
        return _torch_calls()
    if plan in PROJECTION:
        return _projection_limit(0.0 if plan == "cublas_projection" else float("inf"))
    if plan in PRODUCTS:
        return _masked_products() if plan == "masked_products" else contextlib.nullcontext()
    return plan_override(**PLANS[plan])


def _forward_meta(case) -> dict:
    """The compile-time arguments of the forward kernel that a call of ``case`` launches in the
    setting of the moment (the plan's override, the TF32 mode): what the row says ran."""
    import torch

    from rnnbench.ops.recurrence import layer_launch
    from rnnbench.precision import TORCH_DTYPE

    launch = layer_launch(case.cell, case.batch_size, case.hidden_size, TORCH_DTYPE[case.dtype],
                          torch.device(case.device))
    return dict(launch.forward_meta)


def measure_case(cell, b, t, i, h, dtype, plans, budget_s, device="cuda", order="ABBA") -> dict:
    """One case: each plan's steps for both our lanes (built, and for the graph lane captured,
    under that plan), cuDNN's two lanes beside them, errors and times. ``order``: the sequence in
    which the plans are timed (A the first of ``plans``); each plan's time is the mean of its turns."""
    from rnnbench.cases import Case
    from rnnbench.lanes import LANES
    from rnnbench.precision import matmul_mode
    from rnnbench.verify import compare
    from rnnbench.workload import lane_step, make_inputs, reference_step

    row = dict(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h, dtype=dtype, plans=list(plans))
    train = Case(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h, dtype=dtype, mode="train",
                 device=device)
    cases = {"train": train, "forward": Case(**{**vars(train), "mode": "forward"})}
    inputs = make_inputs(train)
    reference = reference_step(train, inputs)
    lanes = [name for name in ("torch-nn", "torch-nn-graph", *LANES_TIMED) if device in LANES[name].devices]
    with matmul_mode(dtype):
        for name in (n for n in lanes if n.startswith("torch")):
            for which, case in cases.items():
                row[f"{which}_ms_{name}"] = median_ms(lane_step(LANES[name], case, inputs), budget_s)
        steps = {}
        for plan in plans:
            with _setting(plan):
                steps[plan] = {(name, which): lane_step(LANES[name], case, inputs)
                               for name in lanes if not name.startswith("torch") for which, case in cases.items()}
                outputs, _ = steps[plan][("triton", "train")].first_call()
                row[f"error_{plan}"] = compare(outputs, reference, 1.0).max_rel_error
                row[f"forward_meta_{plan}"] = _forward_meta(train)
        for key in steps[plans[0]]:
            times = in_turns({plan: steps[plan][key] for plan in plans}, _setting,
                             budget_s, order)
            for plan, ms in times.items():
                row[f"{key[1]}_ms_{key[0]}_{plan}"] = ms
    return row


def _table(rows: list[dict]) -> str:
    """Per case and mode: milliseconds of cuDNN eager / graph and of our eager and graph lanes
    under plan A and B, and the two ratios that matter (B / A: what the plan gains; cuDNN's graph
    / our graph under A)."""
    head = "case | mode | error A, B | torch-nn / graph ms | triton A / B ms | triton-graph A / B ms | B/A eager, graph | cuDNN graph / A graph"
    lines = [head, " | ".join("---" for _ in head.split(" | "))]
    for r in rows:
        case = f"{r['cell']} B{r['batch_size']} H{r['hidden_size']} {r['dtype']}"
        if "error" in r:
            lines.append(f"{case} | | {r['error']}")
            continue
        a, b = r["plans"]
        for mode in ("forward", "train"):
            g = lambda lane, plan=None: r.get(f"{mode}_ms_{lane}" + (f"_{plan}" if plan else ""), float("nan"))  # noqa: E731
            lines.append(
                f"{case} ({a} vs {b}) | {mode} | {r[f'error_{a}']:.1e}, {r[f'error_{b}']:.1e} | "
                f"{g('torch-nn'):.3f} / {g('torch-nn-graph'):.3f} | {g('triton', a):.3f} / {g('triton', b):.3f} | "
                f"{g('triton-graph', a):.3f} / {g('triton-graph', b):.3f} | "
                f"{g('triton', b) / g('triton', a):.2f}x, {g('triton-graph', b) / g('triton-graph', a):.2f}x | "
                f"{g('torch-nn-graph') / g('triton-graph', a):.2f}x")
    return "\n".join(lines)


def main() -> int:
    parser = ab_parser(__doc__, 300.0)
    parser.add_argument("--compare", default="on_chip", choices=tuple(COMPARISONS), help="which A/B and its cases")
    parser.add_argument("--cases", type=str, default="",
                        help="which cases: indices into the comparison's, e.g. 0,1,2 (default all)")
    parser.add_argument("--order", default="ABBA", help="the order the two plans are timed in, e.g. BAABABBA")
    args = parser.parse_args()
    if check_order(args.order):
        parser.error(check_order(args.order))
    cases = COMPARISONS[args.compare]
    try:
        chosen = [cases[int(k)] for k in args.cases.split(",")] if args.cases else cases
    except (ValueError, IndexError):
        parser.error(f"--cases takes indices 0 to {len(cases) - 1}, comma-separated; got {args.cases!r}")
    fields = ("cell", "batch_size", "seq_len", "input_size", "hidden_size", "dtype", "plans")
    rows = run_cases(args.out_dir / f"{args.compare}.jsonl", chosen, fields,
                     lambda case: {**measure_case(*case, args.case_budget, args.device, args.order), "order": args.order},
                     args.budget)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
