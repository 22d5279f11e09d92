# TMA against pointer loads in a large step's product (probe); strict fp32's slices under GPU mutation
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c147; mkdir -p $d/mut
pack() { tar czf $OUT/c147.tgz -C $OUT c147; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 330 python3 benchmarks/results/h200/tma-step/probes/tma_step.py $d/probe > $d/probe.txt 2>&1
echo "probe rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
t0=$(date +%s)
timeout 110 bash ab/mutate.sh x3-forward-plain src/rnnbench/ops/lstm/pieces.py '71s/False, PRECISION, UPCAST)/False, "tf32", UPCAST)/' "strict_fp32_in_slices" $d/mut
timeout 110 bash ab/mutate.sh x3-backward-plain src/rnnbench/ops/lstm/pieces.py '247s/PRECISION, UPCAST)/"tf32", UPCAST)/' "strict_fp32_in_slices" $d/mut
echo "mut rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
cat $d/probe.txt | cut -c1-600; cat $d/mut/mut.txt; cat $d/rc.txt
