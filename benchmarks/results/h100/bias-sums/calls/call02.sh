# the issue's strict fp32 cases at theano's grid after the biases' sums moved into the split
set -u
export RNNBENCH_GIT_COMMIT=$1 PYTHONUNBUFFERED=1
d=$OUT/b02; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 170 python3 -m rnnbench run --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 128,512,1024 --dtype fp32 --lanes torch-nn,triton --budget 0.2 --device cuda --out $d/th.jsonl > $d/th.log 2>&1; echo "th rc $?" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/th.jsonl --no-published --standing > $d/th.md 2>&1
python3 benchmarks/results/h100/gated-fma/probes/ratios.py benchmarks/results/h100/split-launches/final-c8033d8/th.jsonl.gz $d/th.jsonl > $d/th-against-c8033d8.txt 2>&1
gzip $d/*.jsonl $d/*.log
tar czf $OUT/b02.tgz -C $OUT b02
cat $d/rc.txt; cat $d/th-against-c8033d8.txt | head -30
