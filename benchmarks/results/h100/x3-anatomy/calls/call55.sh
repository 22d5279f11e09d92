# probe: 3xFP16 split products against 3xTF32 and cuBLAS
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c55; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 300 python3 benchmarks/results/h100/x3-anatomy/probes/fp16_products.py $d/fp16_products.jsonl > $d/fp16_products.txt 2>&1
tar czf $OUT/c55.tgz -C $OUT c55
grep -v Warning $d/fp16_products.txt | tail -20
