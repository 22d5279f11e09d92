# Where a layer's tensors lie in memory against our sliced forward's step (one process)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c152; mkdir -p $d
pack() { tar czf $OUT/c152.tgz -C $OUT c152; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 230 python3 benchmarks/results/h200/step-parts/probes/placement.py $d/probe > $d/probe.txt 2>&1
echo "probe rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
cat $d/probe.txt | tail -5; cat $d/rc.txt
