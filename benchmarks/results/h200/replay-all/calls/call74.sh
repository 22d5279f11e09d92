# the CUDA suite's alone test; refusal test's mutation; training re-measured; glample TF32 --runs 3
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c74; mkdir -p $d
pack() { tar czf $OUT/c74.tgz -C $OUT c74; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 60 python3 -m pytest -q -p no:cacheprovider -m "cuda and alone" tests > $d/alone.log 2>&1; echo "alone rc $?" >> $d/rc.txt
rm -rf /tmp/mut && mkdir /tmp/mut && cp -r src tests pyproject.toml /tmp/mut/
sed -i 's/return self.refused.get(half, 0) < ATTEMPTS/return True/' /tmp/mut/src/rnnbench/ops/replayed_layer.py
grep -c "return True" /tmp/mut/src/rnnbench/ops/replayed_layer.py >> $d/rc.txt
(cd /tmp/mut && timeout 90 python3 -m pytest -q -p no:cacheprovider -k refused_past_hidden tests/ops/test_cuda_kernels.py > $d/mutation.txt 2>&1; echo "mutation rc $?" >> $d/rc.txt)
timeout 60 python3 -m pytest -q -p no:cacheprovider -k refused_past_hidden tests/ops/test_cuda_kernels.py > $d/refusal.txt 2>&1; echo "refusal rc $?" >> $d/rc.txt; pack
PYTHONPATH=src timeout 150 python3 ab/replay_all.py $d/train.jsonl "H500-L1-tf32-train,I1024-H1024-L1-tf32-train" 6 > $d/train.txt 2>&1; echo "train rc $?" >> $d/rc.txt; pack
PYTHONPATH=src timeout 170 python3 -m rnnbench run --cell rnn_tanh,lstm --batch-size 20 --seq-len 30 --input-size 100 \
  --hidden-size 100,500 --loss last_step --dtype tf32 --lanes torch-nn,torch-nn-graph,triton,triton-graph --budget 0.2 \
  --device cuda --runs 3 --out $d/glample-tf32.jsonl > $d/glample-tf32.log 2>&1; echo "glample rc $?" >> $d/rc.txt
PYTHONPATH=src python3 -m rnnbench report $d/glample-tf32.jsonl --no-published --standing > $d/glample-tf32.md 2>&1
gzip $d/glample-tf32.jsonl; pack
tail -2 $d/alone.log; tail -3 $d/mutation.txt; tail -2 $d/refusal.txt; cut -c1-230 $d/train.txt; grep "| triton \|Standing" $d/glample-tf32.md; cat $d/rc.txt
