# The split-K backward's padded partials (Plan.pad_rows, backward): their CUDA test, the gate watched failing, the kernel alone
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c90; mkdir -p $d
pack() { tar czf $OUT/c90.tgz -C $OUT c90; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 100 bash scripts/cuda_tests.sh $d/padtest 6 padded_partials > $d/padtest.txt 2>&1; echo "padtest rc $?" >> $d/rc.txt; pack
# the gate watched failing: the partials' padding left unwritten (their store bounded at H, not S)
cp src/rnnbench/ops/common.py /tmp/common.py
sed -i 's/                 mask=(k < S)\[:, None\] & row_mask\[None, :\])  # (the pieces reach S: BLOCK_K >= 8)/                 mask=(k < H)[:, None] \& row_mask[None, :])/' src/rnnbench/ops/common.py
diff /tmp/common.py src/rnnbench/ops/common.py >> $d/mutant.txt
timeout 100 bash scripts/cuda_tests.sh $d/mutant 6 padded_partials >> $d/mutant.txt 2>&1; echo "mutant rc $? (1 expected)" >> $d/rc.txt
cp /tmp/common.py src/rnnbench/ops/common.py; diff /tmp/common.py src/rnnbench/ops/common.py && echo restored >> $d/mutant.txt; pack
timeout 215 python3 benchmarks/plan_sweep.py $d/sweep --cases pad_rows_backward --budget 200 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt; pack
tail -4 $d/padtest.txt; grep -c FAILED $d/mutant.txt; tail -2 $d/mutant.txt; grep -v "^{" $d/sweep.txt | cut -c1-175 | tail -34; cat $d/rc.txt
