# Plan.pad_rows reading its rows to the padded end (branch pad-rows): its CUDA test, the kernel alone padded vs unpadded, the engine A/B
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c88; mkdir -p $d
pack() { tar czf $OUT/c88.tgz -C $OUT c88; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 bash scripts/cuda_tests.sh $d/padtest 2 padded_rows > $d/padtest.txt 2>&1; echo "padtest rc $?" >> $d/rc.txt; pack
# the gate watched failing: the weights' copy's padding left unwritten (its store bounded at H, not S)
cp src/rnnbench/ops/common.py /tmp/common.py
sed -i 's/w_valid\[:, None\] & (k < S)\[None, :\], REMAINDER)/w_valid[:, None] \& (k < H)[None, :], REMAINDER)/' src/rnnbench/ops/common.py
diff /tmp/common.py src/rnnbench/ops/common.py >> $d/mutant.txt
timeout 100 bash scripts/cuda_tests.sh $d/mutant 2 padded_rows >> $d/mutant.txt 2>&1; echo "mutant rc $? (1 expected)" >> $d/rc.txt
cp /tmp/common.py src/rnnbench/ops/common.py; diff /tmp/common.py src/rnnbench/ops/common.py && echo restored >> $d/mutant.txt; pack
timeout 150 python3 benchmarks/plan_sweep.py $d/sweep --cases pad_rows --budget 135 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt; pack
timeout 175 python3 benchmarks/on_chip.py $d/ab --compare pad_rows --budget 160 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt; pack
tail -8 $d/padtest.txt; tail -5 $d/mutant.txt; grep -v "^{" $d/sweep.txt | cut -c1-200 | tail -30; tail -16 $d/ab.txt | cut -c1-220; cat $d/rc.txt
