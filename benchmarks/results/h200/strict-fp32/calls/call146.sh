# Strict fp32 in slices at HEAD: its CUDA test, the engine beside cuDNN, then the CUDA tests in fp32 or slices
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c146; mkdir -p $d
pack() { tar czf $OUT/c146.tgz -C $OUT c146; }
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k strict_fp32_in_slices > $d/new_test.txt 2>&1
echo "new_test rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack
L="--mode forward,train --lanes torch-nn,triton --budget 0.2 --device cuda --dtype fp32 --seq-len 50 --input-size hidden"
t0=$(date +%s)
timeout 200 bash -c "python3 -m rnnbench run --cell lstm,gru --batch-size 1024 --hidden-size 2048 $L --out $d/engine.jsonl &&
  python3 -m rnnbench run --cell lstm,gru --batch-size 512 --hidden-size 4096 $L --out $d/engine.jsonl &&
  python3 -m rnnbench run --cell lstm --batch-size 256 --hidden-size 4096 $L --out $d/engine.jsonl" > $d/engine.log 2>&1
echo "engine rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
python3 -m rnnbench report $d/engine.jsonl --no-published > $d/engine.md 2>&1; gzip -f $d/engine.log; pack
t0=$(date +%s)
timeout 190 bash scripts/cuda_tests.sh $d/suite 16 "fp32 or pieces or slices" > $d/suite.txt 2>&1
echo "suite rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt
gzip -f $d/suite/*.log 2>/dev/null; pack
tail -3 $d/new_test.txt; grep -B2 -A14 "Train (µs)" $d/engine.md | head -40; tail -n 20 $d/suite.txt; cat $d/rc.txt
