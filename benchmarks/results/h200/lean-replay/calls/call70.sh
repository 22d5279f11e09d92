# the engine verifying two warm calls: every row of glample-2016, flashrnn-2024 and fastrnns still verified
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c70; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 150 python3 -m rnnbench run --suite glample-2016,fastrnns,flashrnn-2024 \
  --lanes torch-nn,torch-nn-graph,triton,triton-graph,torch-fused-loop --budget 0.05 --device cuda \
  --out $d/verify.jsonl > $d/verify.log 2>&1; echo "run rc $?" >> $d/rc.txt
python3 -c "
import json, collections
rows=[json.loads(l) for l in open('$d/verify.jsonl') if '\"result\"' in l]
rows=[r for r in rows if r.get('record')=='result']
print(len(rows), 'rows', collections.Counter(r['status'] for r in rows))
for r in rows:
    if r['status']!='ok': print(r['case_key'], r['lane'], r['status'], r['message'][:150])
" > $d/summary.txt 2>&1
gzip $d/verify.jsonl; tar czf $OUT/c70.tgz -C $OUT c70
cat $d/summary.txt $d/rc.txt; tail -3 $d/verify.log
