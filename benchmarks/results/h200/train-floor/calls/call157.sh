# glample's four in TF32, forward and training, four lanes, in three processes (--runs 3): how far the host-bound ratios move in one lease
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c157; mkdir -p $d
pack() { tar czf $OUT/c157.tgz -C $OUT c157; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 400 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 --hidden-size 100,500 \
  --loss last_step --dtype tf32 --lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.3 --runs 3 --device cuda \
  --out $d/glample.jsonl > $d/glample.log 2>&1
echo "glample rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
python3 -m rnnbench report $d/glample.jsonl --no-published --standing > $d/glample.md 2>&1
python3 - > $d/per_run.txt 2>&1 <<'PY'
import json, os, collections
d = os.environ['OUT'] + '/c157'
t = collections.defaultdict(dict)
for line in open(d + '/glample.jsonl'):
    r = json.loads(line)
    if r.get('status') != 'ok':
        continue
    t[(r['cell'], r['hidden_size'], r['mode'], r.get('run'))][r['lane']] = r['ms_per_batch']
for (cell, h, mode, run), lanes in sorted(t.items(), key=str):
    if len(lanes) < 4:
        print(cell, h, mode, run, 'incomplete', lanes); continue
    print(cell, h, mode, 'run', run, 'torch-nn/triton %.2f' % (lanes['torch-nn'] / lanes['triton']),
          'graphs %.2f' % (lanes['torch-nn-graph'] / lanes['triton-graph']), {k: round(v, 4) for k, v in lanes.items()})
PY
gzip -f $d/glample.log; pack
cat $d/per_run.txt; grep -A12 Standing $d/glample.md | cut -c1-170; cat $d/rc.txt
