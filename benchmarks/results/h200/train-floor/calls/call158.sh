# The floor of an eager training step (the archived probe, train-floor/probes/train_floor.py) in one more lease
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c158; mkdir -p $d
pack() { tar czf $OUT/c158.tgz -C $OUT c158; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 300 python3 benchmarks/results/h200/train-floor/probes/train_floor.py $d > $d/train_floor.log 2>&1
echo "train_floor rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
python3 - <<'PY'
import json, os
d = os.environ['OUT'] + '/c158'
for line in open(d + '/train_floor.jsonl'):
    r = json.loads(line)
    if r.get('record') == 'env':
        continue
    print(r.get('case'), r.get('error', ''))
    print({k: round(v, 1) for k, v in r.items() if k.endswith('_us')})
    for p in ('triton_parts', 'empty_parts'):
        print(p, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.get(p, {}).items() if k != 'counts'})
PY
tail -2 $d/train_floor.log; cat $d/rc.txt
