# where the split products overtake the fused launch, the torch calls, our tiles and cuBLAS (device and host µs)
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/c03; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 400 python3 benchmarks/results/h100/split-launches/probes/crossover.py $d/crossover.jsonl > $d/crossover.txt 2>&1; echo "rc $?" >> $d/crossover.txt
tar czf $OUT/c03.tgz -C $OUT c03
grep -v Warn $d/crossover.txt
