# The whole CUDA suite at HEAD (the launch key with the plan), then two kernel mutations on the GPU
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c143; mkdir -p $d/mut
pack() { tar czf $OUT/c143.tgz -C $OUT c143; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 380 bash scripts/cuda_tests.sh $d/suite 14 > $d/suite.txt 2>&1
echo "suite rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
t0=$(date +%s)
timeout 90 bash ab/mutate.sh plan-not-keyed src/rnnbench/ops/launch.py \
  's/(tuple(sorted(values.items())), plan), len/(tuple(sorted(values.items())), None), len/' \
  'test_wide_rows_forward_by_default' $d/mut
echo "mutA $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
t0=$(date +%s)
timeout 90 bash ab/mutate.sh rows-mod-4 src/rnnbench/ops/lstm/pieces.py \
  's/rows = tl.program_id(1) \* BLOCK_B + tl.arange(0, BLOCK_B)/rows = (tl.program_id(1) % 4) * BLOCK_B + tl.arange(0, BLOCK_B)/' \
  'test_wide_rows_both_ways_by_default' $d/mut
echo "mutB $(( $(date +%s) - t0 )) s" >> $d/rc.txt
gzip -f $d/suite/*.log $d/mut/*.log 2>/dev/null; pack
cat $d/suite.txt | tail -25; cat $d/mut/mut.txt; cat $d/rc.txt
