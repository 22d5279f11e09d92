# The whole CUDA suite at HEAD (Plan.half_saved by default), then a GPU mutation: the sliced forward keyed on its leading tensors again
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c139; mkdir -p $d/mut
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 400 bash scripts/cuda_tests.sh $d/suite 14 > $d/suite.txt 2>&1; echo "suite rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
timeout 120 bash ab/mutate.sh keyed src/rnnbench/ops/recurrence.py 's/keyed=None if pieces else 7)/keyed=7)/; s/_GRU_FORWARD_PIECES(grid, args, constexprs, stream)  #/_GRU_FORWARD_PIECES(grid, args, constexprs, stream, keyed=6)  #/' "test_wide_rows_forward_by_default" $d/mut; echo "mut rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c139.tgz -C $OUT c139
cat $d/suite.txt | tail -20; cat $d/mut/mut.txt; cat $d/rc.txt
