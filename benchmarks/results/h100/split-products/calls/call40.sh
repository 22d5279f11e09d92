# strict fp32 gradients at hidden 512-1024: cuBLAS against our fused launch (split-products/probes/gradients.py)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c40; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 300 python3 benchmarks/results/h100/split-products/probes/gradients.py $d/gradients.jsonl > $d/gradients.txt 2>&1
tar czf $OUT/c40.tgz -C $OUT c40
grep -v Warn $d/gradients.txt | tail -20
