# buffers.together: allocation costs, the A/B probe (together vs apart, bit for bit), the whole CUDA suite
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c31; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 60 python3 benchmarks/results/h100/bounds/probes/alloc_costs.py $d/alloc_costs.jsonl > $d/alloc_costs.txt 2>&1
PYTHONPATH=src timeout 200 python3 benchmarks/results/h100/bounds/probes/together.py $d/together.jsonl > $d/together.txt 2>&1
timeout 300 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "suite rc $?" >> $d/cuda.txt
tar czf $OUT/c31.tgz -C $OUT c31
cat $d/alloc_costs.txt; cat $d/together.txt; tail -n 15 $d/cuda.txt
