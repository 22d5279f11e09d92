# lean replay (detach of its own): A/B in the engine against afc7166's src (ab/old/src), the replay/train/graph CUDA subset, the take_back test's mutations
set -u
export PYTHONUNBUFFERED=1
new=$1
d=$OUT/c66; mkdir -p $d
pack() { tar czf $OUT/c66.tgz -C $OUT c66; }
RNNBENCH_GIT_COMMIT=$new PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
K="take_back"
mut() {
  rm -rf /tmp/mut-$1 && mkdir -p /tmp/mut-$1 && cp -r src tests pyproject.toml /tmp/mut-$1/
  sed -i "$3" /tmp/mut-$1/src/rnnbench/ops/$2
  if cmp -s src/rnnbench/ops/$2 /tmp/mut-$1/src/rnnbench/ops/$2; then echo "$1: NOT APPLIED"; return; fi
  (cd /tmp/mut-$1 && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "$K" 2>&1 | grep -E "^FAILED|^E  .*assert|passed|failed" | sed "s/^/$1: /")
}
{ mut no-detach replay.py 's/owned\[r\[1\]\]\[4\]\[r\[2\]\].detach()/owned[r[1]][4][r[2]]/' &
  mut unheld-always replay.py 's/    return _storage_use_count(owned\[1\]._cdata) == owned\[3\]/    return True/' &
  mut unheld-never replay.py 's/    return _storage_use_count(owned\[1\]._cdata) == owned\[3\]/    return False/' &
  timeout 200 bash ab/subset.sh $d/tests 10 "replay or train or take_back or graph" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
  wait; } > $d/mutations.txt 2>&1; pack
L="--lanes torch-nn,triton --budget 0.15 --device cuda --runs 1"
G1="--cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 --hidden-size 100 --loss last_step --dtype tf32,fp32"
G2="--cell lstm,gru --batch-size 32 --seq-len 30 --input-size 128 --hidden-size 128 --loss all_steps --dtype tf32,fp32"
for r in 1 2; do
  for form in old new; do
    if [ $form = old ]; then src=ab/old/src c=afc7166; else src=src c=$new; fi
    for g in G1 G2; do
      RNNBENCH_GIT_COMMIT=$c PYTHONPATH=$src timeout 120 python3 -m rnnbench run ${!g} $L --out $d/ab-$form-$g.jsonl > $d/ab-$form-$g-$r.log 2>&1
      echo "$form $g $r rc $?" >> $d/rc.txt
    done
  done
  pack
done
gzip $d/*.jsonl; pack
cat $d/mutations.txt; tail -6 $d/tests.txt; cat $d/rc.txt
