# The floor of an eager training step for any autograd-Function layer at glample's size, against ours and cuDNN's
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c155; mkdir -p $d
pack() { tar czf $OUT/c155.tgz -C $OUT c155; }
python3 -m rnnbench env > $d/env.txt 2>&1
cp ab/train_floor.py ab/train_host.py $d/
t0=$(date +%s)
timeout 300 python3 ab/train_floor.py $d > $d/train_floor.log 2>&1
echo "train_floor rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
python3 - <<'PY'
import json,os
d=os.environ['OUT']+'/c155'
for r in json.load(open(d+'/train_floor.json')):
    print(r['case']); print({k: round(v,1) for k,v in r.items() if k.endswith('_us')})
    print({k: (round(v,1) if isinstance(v,float) else v) for k,v in r['triton_parts'].items()})
PY
tail -3 $d/train_floor.log; cat $d/rc.txt
