# (prepared 2026-11-29 for the next session) The branch gate-split-576: its gate-split CUDA tests (hidden 576 new),
# the engine's A/B verified against float64, and the padded 16-bit forward test at 1500 (default backward now the gate split)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c106; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 240 bash scripts/cuda_tests.sh $d/tests 12 "gate_split or 16bit_forward_with_padded_rows" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
timeout 240 python3 benchmarks/on_chip.py $d/ab --compare gate_split_narrow --budget 200 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt
tar czf $OUT/c106.tgz -C $OUT c106
tail -5 $d/tests.txt; tail -12 $d/ab.txt | cut -c1-220; cat $d/rc.txt
