# host time against call time with the splits taken and not, old tree and new; the eager limits lowered
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/c02; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
for t in old new; do
  if [ $t = old ]; then s=build/old/src; else s=src; fi
  PYTHONPATH=$s timeout 150 python3 benchmarks/results/h100/fp16-products/probes/host.py $d/host-$t.jsonl > $d/host-$t.txt 2>&1; echo "rc $?" >> $d/host-$t.txt
done
PYTHONPATH=src timeout 250 python3 benchmarks/results/h100/split-launches/probes/limits.py $d/limits.jsonl > $d/limits.txt 2>&1; echo "rc $?" >> $d/limits.txt
tar czf $OUT/c02.tgz -C $OUT c02
for f in $d/host-old.txt $d/host-new.txt $d/limits.txt; do echo "== $f"; grep -v Warn $f | sed 's/-T30-.*-cuda//'; done
