# A proxy fence around the grid barrier: the default kernels alone, as they are and fenced (tree copies)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c151; mkdir -p $d
pack() { tar czf $OUT/c151.tgz -C $OUT c151; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
rm -rf /tmp/fenced && mkdir -p /tmp/fenced && cp -r src /tmp/fenced/ && python3 ab/fence_patch.py /tmp/fenced/src/rnnbench/ops/common.py
diff src/rnnbench/ops/common.py /tmp/fenced/src/rnnbench/ops/common.py > $d/fence.diff
t0=$(date +%s)
for tree in plain fenced plain fenced; do
  src=src; [ $tree = fenced ] && src=/tmp/fenced/src
  PYTHONPATH=$src timeout 100 python3 ab/fence_ab.py $tree >> $d/ab.jsonl 2>> $d/ab.err
  echo "$tree rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
done
python3 - <<'P' > $d/ab.txt
import json, collections
rows = [json.loads(l) for l in open("$OUT/c151/ab.jsonl".replace("$OUT", __import__("os").environ["OUT"]))]
t = collections.defaultdict(list)
for r in rows:
    if "forward_us_per_step" in r:
        t[(r["cell"], r["batch_size"], r["hidden_size"], r["dtype"], r["tree"])].append((r["forward_us_per_step"], r["backward_us_per_step"]))
for k, v in sorted(t.items()):
    print(*k, " ".join(f"{f:.1f}/{b:.1f}" for f, b in v))
P
pack; cat $d/ab.txt; tail -3 $d/ab.err; cat $d/rc.txt
