# glample's TF32 RNN training (1.43x, asked 1.5x): where the eager step's host time goes, and the engine's ratio in 3 runs
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c154; mkdir -p $d
pack() { tar czf $OUT/c154.tgz -C $OUT c154; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 150 python3 ab/train_host.py $d > $d/train_host.log 2>&1
echo "train_host rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
timeout 120 python3 -c "
import sys; sys.path[:0]=['benchmarks']; import host_time as h
h.ENGINE_CASES=[('rnn_tanh',20,30,100,100,'tf32'),('lstm',20,30,100,100,'tf32')]
sys.exit(h.main(['$d/engine','--parts','engine']))" > $d/engine.log 2>&1
echo "engine rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
L="--lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 --device cuda"
for k in 1 2 3; do
timeout 60 python3 -m rnnbench run --cell rnn_tanh --batch-size 20 --seq-len 30 --input-size 100 --hidden-size 100 \
  --loss last_step --dtype tf32 --mode train $L --out $d/glample$k.jsonl > $d/glample$k.log 2>&1
echo "glample$k rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
python3 -m rnnbench report $d/glample$k.jsonl --no-published > $d/glample$k.md 2>&1
done
pack
python3 - <<'PY'
import json,os
d=os.environ['OUT']+'/c154'
for r in json.load(open(d+'/train_host.json')):
    print(r['case'], r['lane'], r['round'], round(r['host_us'],1), round(r['synced_us'],1), {k:round(v,1) for k,v in r['parts'].items()}, r['counts'])
PY
for k in 1 2 3; do grep -E "triton |torch-nn " $d/glample$k.md | cut -c1-150; done; cat $d/rc.txt
