# PDL on/off A/B of the engine's steps (eager and graphed, bitwise check), then the CUDA tests of the FMA/replay/graph/projection paths
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/p01; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 330 python3 benchmarks/results/h100/pdl/probes/pdl.py $d/pdl.jsonl > $d/pdl.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
timeout 200 bash ab/subset.sh $d/tests 8 "fma or replay or graph or projection" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/p01.tgz -C $OUT p01
tail -40 $d/pdl.txt; cat $d/tests.txt | tail -12; cat $d/rc.txt
