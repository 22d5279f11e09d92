# Plan.pad_rows (branch pad-rows) on a GPU for the first time: its CUDA test, the kernel alone padded vs unpadded, the engine's A/B
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c87; mkdir -p $d
pack() { tar czf $OUT/c87.tgz -C $OUT c87; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 bash scripts/cuda_tests.sh $d/padtest 2 padded_rows > $d/padtest.txt 2>&1; echo "padtest rc $?" >> $d/rc.txt; pack
timeout 150 python3 benchmarks/plan_sweep.py $d/sweep --cases pad_rows --budget 135 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt; pack
timeout 175 python3 benchmarks/on_chip.py $d/ab --compare pad_rows --budget 160 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt; pack
tail -8 $d/padtest.txt; grep -v "^{" $d/sweep.txt | cut -c1-200 | tail -30; tail -16 $d/ab.txt | cut -c1-220; cat $d/rc.txt
