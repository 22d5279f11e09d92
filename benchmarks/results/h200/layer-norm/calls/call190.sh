# The shares of layer norm's statistics and of its norm backwards' sums gathered 32 programs' at a time
# (common._GATHER_SLOTS): the CUDA tests of layer norm (a new LSTM training case at hidden 2048, 128
# programs), then an A/B of step times against the tree before (bdfe0d2, one tile of every program's
# shares) in alternate processes, A B B A (ab/time_ln.py: medians of 5 rounds of 20 calls).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c190; mkdir -p $d
bash scripts/device_tests.sh $d 170 "test_layer_norm" > $d/tests-tail.txt 2>&1
for v in before after after before; do
  src=src; [ $v = before ] && src=ab/old_src/src
  PYTHONPATH=$src timeout 100 python3 ab/time_ln.py $v >> $d/ab.jsonl 2>> $d/ab-err.txt; echo "$v rc $?" >> $d/rc.txt
done
cp ab/time_ln.py $d/
tar czf $OUT/c190.tgz -C $OUT c190
cat $d/rc.txt; head -20 $d/tests-tail.txt; tail -3 $d/ab-err.txt
python3 - $d <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/ab.jsonl")]
keys = {}
for r in rows:
    keys.setdefault((r["cell"], r["batch_size"], r["hidden_size"], r["seq_len"], r["dtype"], r["mode"]), {}).setdefault(r["label"], []).append(r["ms"])
for k, v in keys.items():
    b, a = v.get("before", []), v.get("after", [])
    print(k, "before", [round(x, 3) for x in b], "after", [round(x, 3) for x in a],
          "after/before", round(st.mean(a) / st.mean(b), 3) if a and b else None)
PY
