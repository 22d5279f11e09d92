# the suite's five failures at 2e47e56 mended: half operands at hidden 100 against the TF32 plan's own projection, cuBLAS made
# before a producing forward; the new test again; the cuBLAS mend taken out (first capture must fail)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c80; mkdir -p $d
pack() { tar czf $OUT/c80.tgz -C $OUT c80; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 bash ab/subset.sh $d/tests 8 "half_operands_forward or first_capture or gated_forwards_wait or rnns_forward_waits" tests/ops/test_cuda_kernels.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt; pack
rm -rf /tmp/mut && mkdir /tmp/mut && cp -r src tests pyproject.toml /tmp/mut/
sed -i 's/^    make_cublas(x)  # (a later capture/    pass  # (a later capture/' /tmp/mut/src/rnnbench/ops/recurrence.py
grep -c "^    pass  # (a later capture" /tmp/mut/src/rnnbench/ops/recurrence.py >> $d/rc.txt
(cd /tmp/mut && timeout 90 python3 -m pytest -q -p no:cacheprovider -k "first_capture" tests/ops/test_cuda_kernels.py > $d/mutation.txt 2>&1; echo "mutation rc $?" >> $d/rc.txt); pack
tail -12 $d/tests.txt | cut -c1-250; tail -4 $d/mutation.txt | cut -c1-200; cat $d/rc.txt
