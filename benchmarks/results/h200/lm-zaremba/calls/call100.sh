# The whole CUDA suite at this session's tree, and zaremba-large in strict fp32 on both lanes (does
# torch-nn's TF32 perplexity of call99, 1406 against 1125-1136 for every other run, follow TF32?)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c100; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
WT2_NOTE="WikiText-2 laid out from its valid/test splits (train<-valid.txt, valid and test<-test.txt): 18k-word vocabulary instead of 33k (a cheaper decoder), perplexities not comparable with published WikiText-2 figures"
run() {  # run NAME ARGS...
  local name=$1; shift
  echo "=== $name $(date +%T)"
  timeout --signal=INT 100 python3 -m rnnbench lm --device cuda --no-progress --out $d/$name.jsonl \
    --data-dir data-local/wt2 --level word --dataset-note "$WT2_NOTE" "$@" > $d/$name.log 2>&1
  echo "rc $? $(date +%T)"; grep "steps 150" $d/$name.log
}
Z=(--preset zaremba-large --max-steps 150 --max-minutes 1)
run zaremba-torch-nn-fp32 ${Z[@]} --lane torch-nn --no-tf32
run zaremba-triton-fp32   ${Z[@]} --lane triton --no-tf32
run zaremba-torch-nn-tf32 ${Z[@]} --lane torch-nn --tf32
python3 -m rnnbench report $d/*.jsonl > $d/report.txt 2>&1
timeout 420 bash scripts/cuda_tests.sh $d/tests 12 > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
tar czf $OUT/c100.tgz -C $OUT c100
grep -A12 "^| dataset" $d/report.txt | cut -c1-220; tail -16 $d/tests.txt; cat $d/rc.txt
