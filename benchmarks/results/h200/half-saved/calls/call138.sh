# Plan.half_saved: kernels alone (forward saving fp32 vs 16-bit gates, backward reading each), then the engine A/B (verified, ABBA)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c138; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 200 python3 benchmarks/results/h200/half-saved/probes/half_saved.py $d/alone > $d/alone.txt 2>&1; echo "alone rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 340 python3 benchmarks/on_chip.py $d/ab --compare half_saved --case-budget 0.3 --budget 310 > $d/ab.txt 2>&1; echo "ab rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c138.tgz -C $OUT c138
cat $d/alone.txt | tail -12; tail -16 $d/ab.txt; cat $d/rc.txt
