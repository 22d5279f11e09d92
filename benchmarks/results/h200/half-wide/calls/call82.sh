# whole CUDA suite at HEAD (scripts/cuda_tests.sh with its new EXPR, checked on a subset first); fp16 operands against TF32's at every resident width
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c82; mkdir -p $d
pack() { tar czf $OUT/c82.tgz -C $OUT c82; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 python3 benchmarks/plan_sweep.py $d/sweep --cases half_operands_wide --budget 185 > $d/sweep.txt 2>&1; echo "sweep rc $?" >> $d/rc.txt; pack
timeout 60 bash scripts/cuda_tests.sh $d/subset 4 "half_operands_forward and 768" > $d/subset.txt 2>&1; echo "subset rc $?" >> $d/rc.txt; pack
timeout 300 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
grep -v "^{" $d/sweep.txt | cut -c1-60,70-200 | tail -80; cat $d/subset.txt | tail -5; tail -14 $d/suite.txt; cat $d/rc.txt
