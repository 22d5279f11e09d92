# Where the sliced LSTM forward's step goes outside its product (probe), then the whole CUDA suite at HEAD
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c149; mkdir -p $d
pack() { tar czf $OUT/c149.tgz -C $OUT c149; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 200 python3 benchmarks/results/h200/step-parts/probes/step_parts.py $d/probe > $d/probe.txt 2>&1
echo "probe rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
t0=$(date +%s)
timeout 340 bash scripts/cuda_tests.sh $d/suite 14 > $d/suite.txt 2>&1
echo "suite rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
gzip -f $d/suite/*.log 2>/dev/null; pack
cut -c1-900 $d/probe.txt; tail -n 12 $d/suite.txt; cat $d/rc.txt
