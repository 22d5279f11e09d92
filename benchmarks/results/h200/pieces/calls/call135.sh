# Saving forward: last slice's saved gates after the arrival vs before (same lease); then the whole CUDA suite
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c135; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 110 python3 benchmarks/results/h200/saving-forward/probes/save_forward.py $d/after > $d/after.txt 2>&1; echo "after rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
cp src/rnnbench/ops/lstm/pieces.py /tmp/l.py; cp src/rnnbench/ops/gru/pieces.py /tmp/g.py
cp ab/old/lstm_pieces.py src/rnnbench/ops/lstm/pieces.py; cp ab/old/gru_pieces.py src/rnnbench/ops/gru/pieces.py
timeout 110 python3 benchmarks/results/h200/saving-forward/probes/save_forward.py $d/before > $d/before.txt 2>&1; echo "before rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
cp /tmp/l.py src/rnnbench/ops/lstm/pieces.py; cp /tmp/g.py src/rnnbench/ops/gru/pieces.py
left=$(( 570 - ($(date +%s) - t0) ))
timeout $left bash scripts/cuda_tests.sh $d/tests 14 > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c135.tgz -C $OUT c135
echo AFTER; grep -v Warn $d/after.txt | tail -9; echo BEFORE; grep -v Warn $d/before.txt | tail -9; tail -4 $d/tests.txt; grep -h "^FAILED\|^ERROR" $d/tests/*.log | sort -u | head; cat $d/rc.txt
