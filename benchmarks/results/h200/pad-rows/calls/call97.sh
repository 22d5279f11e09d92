# Final tree's padded-rows, many-programs and fp16-operand CUDA tests (after the plans' review mend and the kernels' docstrings)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c97; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 220 bash scripts/cuda_tests.sh $d/tests 12 "padded or many_programs or half_operands" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/c97.tgz -C $OUT c97
tail -16 $d/tests.txt; cat $d/rc.txt
