# The whole CUDA suite at HEAD (choose_plan in short functions, the gate split to 4096, the transpose's chunks
# narrowed), then the engine's A/B of the gate split past 2048, verified against float64
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c110; mkdir -p $d
pack() { tar czf $OUT/c110.tgz -C $OUT c110; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 335 bash scripts/cuda_tests.sh $d/tests 12 > $d/tests.txt 2>&1; echo "tests rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
pack
timeout 215 python3 benchmarks/on_chip.py $d/ab --compare gate_split_wider --budget 195 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt
pack
tail -16 $d/tests.txt; tail -14 $d/ab.txt | cut -c1-230; cat $d/rc.txt
