# eager A/B of fp16 against TF32 operands again, more forms (hidden 768 at batch 16 was 0.87-0.90x eagerly in c83); widths not 16-byte aligned
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c84; mkdir -p $d
pack() { tar czf $OUT/c84.tgz -C $OUT c84; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 python3 benchmarks/on_chip.py $d/ab --compare half_wide --cases 6,7,4,1 --order ABBABAAB --budget 190 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt; pack
timeout 100 python3 benchmarks/plan_sweep.py $d/odd --cases odd_widths --budget 90 > $d/odd.txt 2>&1; echo "odd rc $?" >> $d/rc.txt; pack
grep "|" $d/ab.txt | cut -c1-220; grep -v "^{" $d/odd.txt | cut -c1-200; cat $d/rc.txt
