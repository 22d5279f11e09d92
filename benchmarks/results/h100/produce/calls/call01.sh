# produce A/B probe (eager and graphed, bitwise), mutations of the producers' wait and reset, CUDA tests of the touched paths
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/p01; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 200 python3 benchmarks/results/h100/produce/probes/produce.py $d/produce.jsonl > $d/produce.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
K="waits_for_its_own_producers"
mut() {  # name file sed-expression
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$3" /tmp/mut-$1/src/rnnbench/ops/$2
  if cmp -s src/rnnbench/ops/$2 /tmp/mut-$1/src/rnnbench/ops/$2; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | grep -E "^FAILED|passed|failed" | sed "s/^/$1: /")
}
{ mut no-wait rnn/fma.py 's/^        _wait(counters_ptr, tiles)$/        pass/' &
  mut no-reset rnn/fma.py 's/^        _rows_out(counters_ptr, B)$/        pass/' &
  (timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | tail -1 | sed "s/^/unmutated: /") &
  wait; } > $d/mutations.txt 2>&1
timeout 230 bash ab/subset.sh $d/tests 8 "fma or replay or produce or projection or rnn_tanh or graph" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/p01.tgz -C $OUT p01
tail -36 $d/produce.txt; cat $d/mutations.txt; tail -12 $d/tests.txt; cat $d/rc.txt
