# strict fp32 gradients: cuBLAS against ops/split_products (split-products/probes/backward.py)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c42; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 300 python3 benchmarks/results/h100/split-products/probes/backward.py $d/backward.jsonl > $d/backward.txt 2>&1
tar czf $OUT/c42.tgz -C $OUT c42
grep -v Warn $d/backward.txt | tail -20
