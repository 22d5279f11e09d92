# strict fp32 products: cuBLAS against 3xTF32 from operands split once (split-products/probes/speed.py)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c38; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 400 python3 benchmarks/results/h100/split-products/probes/speed.py $d/speed.jsonl > $d/speed.txt 2>&1
tar czf $OUT/c38.tgz -C $OUT c38
cat $d/speed.txt | grep -v Warning | tail -40
