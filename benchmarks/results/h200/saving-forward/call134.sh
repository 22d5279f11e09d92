# Saving forward with evict_first (x_proj loads, saved stores) vs before, same lease; the new default's CUDA test
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c134; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 130 python3 benchmarks/results/h200/saving-forward/probes/save_forward.py $d/evict > $d/evict.txt 2>&1; echo "evict rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
cp src/rnnbench/ops/lstm/pieces.py /tmp/l.py; cp src/rnnbench/ops/gru/pieces.py /tmp/g.py
cp ab/old/lstm_pieces.py src/rnnbench/ops/lstm/pieces.py; cp ab/old/gru_pieces.py src/rnnbench/ops/gru/pieces.py
timeout 130 python3 benchmarks/results/h200/saving-forward/probes/save_forward.py $d/before > $d/before.txt 2>&1; echo "before rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
cp /tmp/l.py src/rnnbench/ops/lstm/pieces.py; cp /tmp/g.py src/rnnbench/ops/gru/pieces.py
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "wide_rows_both_ways or tf32_lstm_forward_in_slices_by_default" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c134.tgz -C $OUT c134
echo EVICT; grep -v Warn $d/evict.txt | tail -9; echo BEFORE; grep -v Warn $d/before.txt | tail -9; tail -2 $d/tests.txt; grep "^FAILED\|^ERROR" $d/tests.txt | head; cat $d/rc.txt
