# The padded-rows tests through one helper (test_recurrence.padded_and_unpadded): the CUDA ones, and each watched failing
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c95; mkdir -p $d
pack() { tar czf $OUT/c95.tgz -C $OUT c95; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 bash scripts/cuda_tests.sh $d/padtest 6 "padded_rows or padded_partials" > $d/padtest.txt 2>&1; echo "padtest rc $?" >> $d/rc.txt; pack
cp src/rnnbench/ops/common.py /tmp/common.py
# the 16-bit copy's padding and the fp16-operand copy's left unwritten (stores bounded at H, not S)
sed -i 's/wk, mask=w_valid\[:, None\] & (k < S)\[None, :\])/wk, mask=w_valid[:, None] \& (k < H)[None, :])/' src/rnnbench/ops/common.py
sed -i 's/w_valid\[:, None\] & (k < S)\[None, :\], REMAINDER)/w_valid[:, None] \& (k < H)[None, :], REMAINDER)/' src/rnnbench/ops/common.py
diff /tmp/common.py src/rnnbench/ops/common.py > $d/mutant1.txt
timeout 110 bash scripts/cuda_tests.sh $d/mutant1 6 padded_rows >> $d/mutant1.txt 2>&1; echo "mutant1 rc $? (1 expected)" >> $d/rc.txt
cp /tmp/common.py src/rnnbench/ops/common.py
# the split-K partials' padding left unwritten
sed -i 's/                 mask=(k < S)\[:, None\] & row_mask\[None, :\])  # (the pieces reach S/                 mask=(k < H)[:, None] \& row_mask[None, :])  # (the pieces reach S/' src/rnnbench/ops/common.py
diff /tmp/common.py src/rnnbench/ops/common.py > $d/mutant2.txt
timeout 110 bash scripts/cuda_tests.sh $d/mutant2 6 padded_partials >> $d/mutant2.txt 2>&1; echo "mutant2 rc $? (1 expected)" >> $d/rc.txt
cp /tmp/common.py src/rnnbench/ops/common.py; diff /tmp/common.py src/rnnbench/ops/common.py && echo restored >> $d/rc.txt; pack
tail -9 $d/padtest.txt; for m in 1 2; do grep -c "^>" $d/mutant$m.txt; grep "tests in\|passed\|failed" $d/mutant$m.txt | grep -v "^FAILED" ; grep -c "^FAILED" $d/mutant$m.txt; done; cat $d/rc.txt
