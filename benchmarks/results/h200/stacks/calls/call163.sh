# The whole CUDA suite at the stacked replays' tree
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c163; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 520 bash scripts/cuda_tests.sh $d/suite 14 > $d/cuda.txt 2>&1; echo "suite rc $?" >> $d/rc.txt
grep -h "^FAILED\|^ERROR" $d/suite/*.log > $d/failures.txt 2>/dev/null
tar czf $OUT/c163.tgz -C $OUT c163
cat $d/rc.txt; tail -20 $d/cuda.txt
# Mutations: the GPU test must fail with each layer on the normal path, and with the view-of-a-view lookup off
sel="stacked and (lstm-20-100-100-fp32 or gru-32-128-128-tf32)"
cp src/rnnbench/ops/replayed_layer.py /tmp/rl.py; cp src/rnnbench/ops/replay.py /tmp/rp.py
python3 - <<'PY'
p='src/rnnbench/ops/replayed_layer.py'; s=open(p).read()
s=s.replace("    if not replay.aligned((x, h0, c0)):\n","    if True:\n",1); open(p,'w').write(s)
PY
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$sel" > $d/mutation-normal-path.txt 2>&1
cp /tmp/rl.py src/rnnbench/ops/replayed_layer.py
sed -i 's/        k = _holding_input(a, inputs)/        k = None/' src/rnnbench/ops/replay.py
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$sel" > $d/mutation-no-view-lookup.txt 2>&1
cp /tmp/rp.py src/rnnbench/ops/replay.py
tar czf $OUT/c163.tgz -C $OUT c163
tail -qn1 $d/mutation-*.txt
