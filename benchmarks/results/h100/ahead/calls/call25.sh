# host-state probe, then the whole CUDA suite at this tree
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c25; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 90 python3 benchmarks/results/h100/ahead/probes/host_state.py $d/host_state.jsonl > $d/host_state.txt 2>&1
cat $d/host_state.txt
start=$(date +%s)
bash scripts/cuda_tests.sh $d 8 > $d/cuda-suite.txt 2>&1; echo "rc $?" >> $d/cuda-suite.txt
echo "wall $(( $(date +%s) - start )) s" >> $d/cuda-suite.txt
gzip $d/*.jsonl 2>/dev/null
tar czf $OUT/c25.tgz -C $OUT c25
tail -n 12 $d/cuda-suite.txt
