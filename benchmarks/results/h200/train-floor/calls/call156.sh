# The floor of an eager training step, finer: timers on the parts of ours and of the empty Function
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c156; mkdir -p $d
pack() { tar czf $OUT/c156.tgz -C $OUT c156; }
python3 -m rnnbench env > $d/env.txt 2>&1
cp ab/train_floor.py ab/train_host.py $d/
t0=$(date +%s)
timeout 300 python3 ab/train_floor.py $d > $d/train_floor.log 2>&1
echo "train_floor rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
python3 - <<'PY'
import json,os
d=os.environ['OUT']+'/c156'
for r in json.load(open(d+'/train_floor.json')):
    print(r['case']); print({k: round(v,1) for k,v in r.items() if k.endswith('_us')})
    [print(p, {k: (round(v,1) if isinstance(v,float) else v) for k,v in r[p].items()}) for p in ('triton_parts','empty_parts')]
PY
tail -3 $d/train_floor.log; cat $d/rc.txt
