#!/usr/bin/env bash
# Break the gated FMA forwards on purpose and watch test_gated_forward_on_fma_units fail; then
# restore. Run on a CUDA machine from the repository root: bash .../mutations.sh OUT_DIR
# (each mutation's diff and pytest tail in OUT_DIR/<name>.txt; each source restored from a copy).
set -uo pipefail
out=$1
mkdir -p "$out"
run() {  # name, file, sed expression
  cp "$2" "$out/original"
  sed -i "$3" "$2"
  diff "$out/original" "$2" > "$out/$1.txt"
  PYTHONPATH=src timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py \
    -k "gated_forward_on_fma_units and fp32 and (37 or 100)" 2>&1 | tail -6 >> "$out/$1.txt"
  cp "$out/original" "$2" && rm "$out/original"
}
# 1. a chunk of k in shared memory read from the next gate's buffers
run smem_chunk_of_next_gate src/rnnbench/ops/gluon_fma.py \
  's/w = w_smem\[g \* (CHUNKS - REG_CHUNKS) + c - REG_CHUNKS\]/w = w_smem[((g + 1) % GATES) * (CHUNKS - REG_CHUNKS) + c - REG_CHUNKS]/'
# 2. the LSTM's cell update with i and f swapped
run lstm_i_f_swapped src/rnnbench/ops/lstm/fma.py 's/c = gl.where(running, f \* c + i \* g, c)/c = gl.where(running, i * c + f * g, c)/'
# 3. the GRU's h_t from z the other way round
run gru_z_reversed src/rnnbench/ops/gru/fma.py 's/h = gl.where(running, n + z \* (h - n), h)/h = gl.where(running, h + z * (n - h), h)/'
# 4. h_t written to the buffer being read this step (no double buffering)
run h_same_buffer src/rnnbench/ops/gru/fma.py 's/h_smem.index((t + 1) % 2).store(h)/h_smem.index(t % 2).store(h)/'
