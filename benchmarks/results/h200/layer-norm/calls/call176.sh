# The whole CUDA suite at the session's last code commit (after the review mend of _layer_forward)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c176; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 420 bash scripts/cuda_tests.sh $d/suite 14 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt
grep -h -B5 -A20 "^E   " $d/suite/shard.*.log $d/suite/alone.log > $d/failures.txt 2>/dev/null
grep -h "passed\|failed" $d/suite/shard.*.log $d/suite/alone.log > $d/summaries.txt
rm -rf $d/suite
tar czf $OUT/c176.tgz -C $OUT c176
cat $d/rc.txt; head -1 $d/suite.txt; cat $d/summaries.txt; grep FAILED $d/suite.txt | head; head -c 1500 $d/failures.txt
