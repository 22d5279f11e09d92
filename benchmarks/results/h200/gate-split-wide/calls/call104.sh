# The gate split up to hidden 2048 by default: its CUDA tests (hidden 1500 new), the engine's A/B verified
# against float64 (on_chip.py --compare gate_split_wide), and zaremba-large through rnnbench lm again
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c104; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash scripts/cuda_tests.sh $d/tests 12 "gate_split" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
WT2_NOTE="WikiText-2 laid out from its valid/test splits (train<-valid.txt, valid and test<-test.txt): 18k-word vocabulary instead of 33k (a cheaper decoder), perplexities not comparable with published WikiText-2 figures"
run() {  # run NAME ARGS...
  local name=$1; shift
  timeout --signal=INT 90 python3 -m rnnbench lm --device cuda --no-progress --out $d/$name.jsonl \
    --data-dir data-local/wt2 --level word --dataset-note "$WT2_NOTE" "$@" > $d/$name.log 2>&1
  echo "$name rc $?: $(grep 'steps 150' $d/$name.log)"
}
Z=(--preset zaremba-large --max-steps 150 --max-minutes 1)
run zaremba-torch-nn-bf16 ${Z[@]} --lane torch-nn --amp bf16
run zaremba-triton-bf16   ${Z[@]} --lane triton --amp bf16
run zaremba-triton-tf32   ${Z[@]} --lane triton --tf32
run zaremba-torch-nn-tf32 ${Z[@]} --lane torch-nn --tf32
timeout 200 python3 benchmarks/on_chip.py $d/ab --compare gate_split_wide --budget 170 > $d/ab.txt 2>&1; echo "ab rc $?" >> $d/rc.txt
tar czf $OUT/c104.tgz -C $OUT c104
tail -5 $d/tests.txt; tail -30 $d/ab.txt | cut -c1-220; cat $d/rc.txt
