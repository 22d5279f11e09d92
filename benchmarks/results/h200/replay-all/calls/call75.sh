# pool slices replayed: the replay tests, the mutation (no pool slices), bf16 forwards past hidden 128 replay on/off
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c75; mkdir -p $d
pack() { tar czf $OUT/c75.tgz -C $OUT c75; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 110 bash ab/subset.sh $d/tests 12 "replay or take_back or refused" tests/ops/test_cuda_kernels.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt; pack
PYTHONPATH=src timeout 75 python3 ab/replay_all.py $d/bf16.jsonl "bf16-forward" 3 bf16 > $d/bf16.txt 2>&1; echo "bf16 rc $?" >> $d/rc.txt; pack
rm -rf /tmp/mut && mkdir /tmp/mut && cp -r src tests pyproject.toml /tmp/mut/
sed -i 's/                elif launch.is_pool_slice(a):/                elif False:/' /tmp/mut/src/rnnbench/ops/replay.py
grep -c "elif False:" /tmp/mut/src/rnnbench/ops/replay.py >> $d/rc.txt
cp ab/subset.sh /tmp/mutsub.sh
(cd /tmp/mut && timeout 60 bash /tmp/mutsub.sh $d/mutation 12 "is_replayed and (bf16 or fp16) and (lstm-20-500 or gru-32-512)" tests/ops/test_cuda_kernels.py > $d/mutation.txt 2>&1; echo "mutation rc $?" >> $d/rc.txt); pack
tail -16 $d/tests.txt | cut -c1-220; cut -c1-240 $d/bf16.txt | grep -v Warn; tail -4 $d/mutation.txt | cut -c1-200; cat $d/rc.txt
