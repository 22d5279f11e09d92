#!/usr/bin/env bash
# The half-operand gates broken on purpose, in the device's copy only (restored after each):
#   bash THIS OUT_DIR
# M1: the products not multiplied back by the weights' row scales; M2: the weights rounded to
# bf16's 8 significant bits before fp16 (TF32's accuracy lost, within TF32's tolerance maybe).
# For each: the CUDA test of the half-operand forward (20 cases), and for M1 the engine's
# verification of the triton lane at theano's batch 128, hidden 1024 in TF32 (status mismatch).
set -u
out=$1; mkdir -p "$out"; f=src/rnnbench/ops/common.py; cp $f /tmp/common.orig
run_tests() { python3 -m pytest -q -p no:cacheprovider -m cuda tests/ops/test_cuda_kernels.py -k half_operands_forward > "$out/$1.log" 2>&1; tail -n1 "$out/$1.log"; }
sed -i 's/acc = acc \* w_scale\[:, None\] \* tl.where/acc = acc * tl.where/' $f
grep -c "acc = acc \* tl.where" $f
echo "M1: $(run_tests m1)"
PYTHONPATH=src python3 -m rnnbench run --cell lstm --batch-size 128 --seq-len 30 --input-size hidden --hidden-size 1024 \
  --dtype tf32 --mode forward --lanes triton --budget 0.1 --device cuda --out "$out/m1-engine.jsonl" > "$out/m1-engine.log" 2>&1
grep -o '"status": "[a-z]*"' "$out/m1-engine.jsonl"
cp /tmp/common.orig $f
sed -i 's/(wk \* inv\[:, None\]).to(tl.float16)/(wk * inv[:, None]).to(tl.bfloat16).to(tl.float16)/' $f
grep -c "to(tl.bfloat16).to(tl.float16)" $f
echo "M2: $(run_tests m2)"
cp /tmp/common.orig $f
