# H200: the reuse CUDA test after its inputs' mend, unmutated and under the two mutations; the replay/train subset
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/r07; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
K="take_back"
mut() {
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$2" /tmp/mut-$1/src/rnnbench/ops/replay.py
  if cmp -s src/rnnbench/ops/replay.py /tmp/mut-$1/src/rnnbench/ops/replay.py; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | grep -E "^FAILED|^E  .*(memory|came back|written)|passed|failed" | sed "s/^/$1: /")
}
{ mut always-unheld 's/^    return (_references(tensors, j) == _UNHELD_REFERENCES$/    return True or (_references(tensors, j) == _UNHELD_REFERENCES/' &
  mut no-reuse 's/^REUSE = True$/REUSE = False/' &
  (timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | tail -1 | sed "s/^/unmutated: /") &
  wait; } > $d/mutations.txt 2>&1
timeout 200 bash ab/subset.sh $d/tests 12 "replay or train or take_back or graph" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/r07.tgz -C $OUT r07
cat $d/mutations.txt; tail -15 $d/tests.txt; cat $d/rc.txt
