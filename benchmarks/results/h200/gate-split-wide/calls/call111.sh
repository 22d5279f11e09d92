# After the rule's refinement (the gate split past 2048 at 32 units a program or fewer): the CUDA tests it touches
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c111; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 bash scripts/cuda_tests.sh $d/tests 12 "past_hidden_2048 or gate_split_backward" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/c111.tgz -C $OUT c111
tail -15 $d/tests.txt; cat $d/rc.txt
