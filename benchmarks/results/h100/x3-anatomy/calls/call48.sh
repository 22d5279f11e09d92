# strict fp32 streamed forward step anatomy (x3-anatomy/probes/anatomy.py)
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c48; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 500 python3 benchmarks/results/h100/x3-anatomy/probes/anatomy.py $d/anatomy.json > $d/anatomy.txt 2>&1
tar czf $OUT/c48.tgz -C $OUT c48
grep -v Warning $d/anatomy.txt | tail -30
