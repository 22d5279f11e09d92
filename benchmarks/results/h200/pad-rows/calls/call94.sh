# Padded forwards only at a multiple of 8 units a program (plans.padded_units_covered; branch pad-16bit): the whole CUDA suite, and the gate watched failing without it
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c94; mkdir -p $d
pack() { tar czf $OUT/c94.tgz -C $OUT c94; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 340 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
# the gate watched failing: padded rows allowed at any units a program (4 at hidden 100 leaves units 100-103 unwritten)
cp src/rnnbench/ops/plans.py /tmp/plans.py
sed -i 's/    return plan.block_h % PAD_ROWS_TO == 0/    return True/' src/rnnbench/ops/plans.py
diff /tmp/plans.py src/rnnbench/ops/plans.py >> $d/mutant.txt
timeout 120 bash scripts/cuda_tests.sh $d/mutant 4 test_layer_on_many_programs >> $d/mutant.txt 2>&1; echo "mutant rc $? (1 expected)" >> $d/rc.txt
cp /tmp/plans.py src/rnnbench/ops/plans.py; diff /tmp/plans.py src/rnnbench/ops/plans.py && echo restored >> $d/mutant.txt; pack
tail -16 $d/suite.txt; grep -v "^  \|^E " $d/mutant.txt | tail -14; cat $d/rc.txt
