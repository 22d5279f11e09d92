# zaremba-large (seed 003's model: 2x1500 LSTM, batch 20 x 35) through rnnbench lm with our kernels, never
# measured before, beside torch-nn in the same call (A B B A in bf16, A B in TF32); kawakami's bf16 check again
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c99; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
WT2_NOTE="WikiText-2 laid out from its valid/test splits (train<-valid.txt, valid and test<-test.txt): 18k-word vocabulary instead of 33k (a cheaper decoder), perplexities not comparable with published WikiText-2 figures"
run() {  # run NAME ARGS...
  local name=$1; shift
  echo "=== $name $(date +%T)"
  timeout --signal=INT 150 python3 -m rnnbench lm --device cuda --no-progress --out $d/$name.jsonl \
    --data-dir data-local/wt2 --level word --dataset-note "$WT2_NOTE" "$@" > $d/$name.log 2>&1
  echo "rc $? $(date +%T)"; tail -3 $d/$name.log
}
Z=(--preset zaremba-large --max-steps 150 --max-minutes 1.5)
run zaremba-torch-nn-bf16-a ${Z[@]} --lane torch-nn --amp bf16
run zaremba-triton-bf16-a   ${Z[@]} --lane triton --amp bf16
run zaremba-triton-bf16-b   ${Z[@]} --lane triton --amp bf16
run zaremba-torch-nn-bf16-b ${Z[@]} --lane torch-nn --amp bf16
run zaremba-torch-nn-tf32   ${Z[@]} --lane torch-nn --tf32
run zaremba-triton-tf32     ${Z[@]} --lane triton --tf32
K=(--preset kawakami-2017 --epochs 1 --max-minutes 1)
run kawakami-torch-nn-bf16 ${K[@]} --lane torch-nn --amp bf16
run kawakami-triton-bf16   ${K[@]} --lane triton --amp bf16
python3 -m rnnbench report $d/*.jsonl > $d/report.txt 2>&1
tar czf $OUT/c99.tgz -C $OUT c99
cat $d/report.txt | cut -c1-250
