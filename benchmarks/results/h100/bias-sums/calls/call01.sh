# the biases' sums in the split: split_gradients old (build/old: HEAD~1's tree) against new, then the CUDA tests of the split products' paths
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/b01; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
P=benchmarks/results/h100/bias-sums/probes/gradients.py
for t in old new new old; do
  if [ $t = old ]; then src=build/old/src; else src=src; fi
  PYTHONPATH=$src timeout 100 python3 $P $t $d/gradients.jsonl >> $d/gradients.txt 2>&1 || echo "$t rc $?" >> $d/gradients.txt
done
timeout 160 bash ab/subset.sh $d/tests 8 "split or gradients or projection or strict_fp32" tests > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/b01.tgz -C $OUT b01
cat $d/gradients.txt; tail -12 $d/tests.txt; cat $d/rc.txt
