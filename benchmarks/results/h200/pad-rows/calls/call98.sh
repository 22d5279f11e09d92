# Final tree (1cf2517): the layer, module and variable-length CUDA tests beside the padded ones, in the device time left
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c98; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 170 bash scripts/cuda_tests.sh $d/tests 16 "padded or many_programs or variable_lengths or half_operands or 16bit or split_k" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/c98.tgz -C $OUT c98
tail -22 $d/tests.txt; cat $d/rc.txt
