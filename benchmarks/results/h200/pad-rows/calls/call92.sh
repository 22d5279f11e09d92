# The 16-bit forward on padded rows of its own (branch pad-16bit, first GPU run): its CUDA test, the gate watched failing, the kernel alone, the engine A/B
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c92; mkdir -p $d
pack() { tar czf $OUT/c92.tgz -C $OUT c92; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 170 bash scripts/cuda_tests.sh $d/padtest 4 padded_rows > $d/padtest.txt 2>&1; echo "padtest rc $?" >> $d/rc.txt; pack
# the gate watched failing: the 16-bit copy's padding left unwritten (its store bounded at H, not S)
cp src/rnnbench/ops/common.py /tmp/common.py
sed -i 's/wk, mask=w_valid\[:, None\] & (k < S)\[None, :\])/wk, mask=w_valid[:, None] \& (k < H)[None, :])/' src/rnnbench/ops/common.py
diff /tmp/common.py src/rnnbench/ops/common.py >> $d/mutant.txt
timeout 110 bash scripts/cuda_tests.sh $d/mutant 4 16bit_forward_with_padded_rows >> $d/mutant.txt 2>&1; echo "mutant rc $? (1 expected)" >> $d/rc.txt
cp /tmp/common.py src/rnnbench/ops/common.py; diff /tmp/common.py src/rnnbench/ops/common.py && echo restored >> $d/mutant.txt; pack
timeout 150 python3 benchmarks/plan_sweep.py $d/sweep --cases pad_rows_16bit --budget 135 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt; pack
timeout 150 python3 benchmarks/on_chip.py $d/ab --compare pad_rows_16bit --budget 135 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt; pack
tail -6 $d/padtest.txt; tail -4 $d/mutant.txt; grep -v "^{" $d/sweep.txt | cut -c1-200 | tail -32; tail -12 $d/ab.txt | cut -c1-220; cat $d/rc.txt
