# The engine's ratio at batch 1024, hidden 2048 (bf16 LSTM) in three processes: how far one run's ratio moves
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c153; mkdir -p $d
pack() { tar czf $OUT/c153.tgz -C $OUT c153; }
python3 -m rnnbench env > $d/env.txt 2>&1
L="--cell lstm --batch-size 1024 --hidden-size 2048 --input-size hidden --seq-len 50 --dtype bf16 --mode forward,train --lanes torch-nn,triton --budget 0.2 --device cuda"
t0=$(date +%s)
for k in 1 2 3; do
  timeout 100 python3 -m rnnbench run $L --out $d/run$k.jsonl > $d/run$k.log 2>&1
  echo "run$k rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
done
python3 -m rnnbench report $d/run1.jsonl $d/run2.jsonl $d/run3.jsonl --no-published > $d/report.md 2>&1
for k in 1 2 3; do python3 -m rnnbench report $d/run$k.jsonl --no-published > $d/report$k.md 2>&1; done
gzip -f $d/run*.log; pack
grep -A6 "Train (µs)" $d/report.md | cut -c1-160; for k in 1 2 3; do grep "triton " $d/report$k.md | cut -c1-130; done; cat $d/rc.txt
