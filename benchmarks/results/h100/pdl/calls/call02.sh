# mutations of the PDL wait (each on a copy of the tree), then the whole CUDA suite
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/p02; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
K="waits_for_a_long_projection or gated_forward_on_fma_units or rnn_on_fma_units"
mut() {  # name file sed-expression
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$3" /tmp/mut-$1/src/rnnbench/ops/$2
  if cmp -s src/rnnbench/ops/$2 /tmp/mut-$1/src/rnnbench/ops/$2; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 250 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | grep -E "^FAILED|passed|failed" | sed "s/^/$1: /")
}
{ mut rnn-no-wait rnn/fma.py 's/^    _wait_prior(PDL)  #/    pass  #/' &
  mut gru-no-wait gru/fma.py 's/^        _wait_prior(PDL)$/        pass/' &
  mut lstm-no-wait lstm/fma.py 's/^        _wait_prior(PDL)$/        pass/' &
  (timeout 250 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | tail -1 | sed "s/^/unmutated: /") &
  wait; } > $d/mutations.txt 2>&1
timeout 420 bash scripts/cuda_tests.sh $d/cuda 8 > $d/cuda.txt 2>&1; echo "cuda rc $?" >> $d/rc.txt
tar czf $OUT/p02.tgz -C $OUT p02
cat $d/mutations.txt; tail -15 $d/cuda.txt; cat $d/rc.txt
