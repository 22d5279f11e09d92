# Training step kernel by kernel at HEAD (Plan.half_saved by default), ours vs cuDNN
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c140; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 200 python3 benchmarks/results/h200/train-parts/probes/kernels.py $d/parts > $d/parts.txt 2>&1; echo "parts rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c140.tgz -C $OUT c140
grep -A12 "triton:" $d/parts.txt | head -60; grep "torch-nn:" $d/parts.txt; cat $d/rc.txt
