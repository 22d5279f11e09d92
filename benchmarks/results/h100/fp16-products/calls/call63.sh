# host time against call time, eager steps with the splits taken and not
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/c63; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 300 python3 benchmarks/results/h100/fp16-products/probes/host.py $d/host.jsonl > $d/host.txt 2>&1; echo "rc $?" >> $d/host.txt
tar czf $OUT/c63.tgz -C $OUT c63
grep -v Warn $d/host.txt
