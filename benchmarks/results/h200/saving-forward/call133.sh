# The saving forward's step (x_proj 16-bit vs fp32), and the CUDA tests of the new 128-row defaults (backward; TF32 GRU forward)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c133; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 200 python3 benchmarks/results/h200/saving-forward/probes/save_forward.py $d/save > $d/save.txt 2>&1; echo "save rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "wide_rows or slices or 128_rows" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c133.tgz -C $OUT c133
cat $d/save.txt | grep -v Warn | tail -12; tail -3 $d/tests.txt; grep "^FAILED\|^ERROR" $d/tests.txt | head; cat $d/rc.txt
