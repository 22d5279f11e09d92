# Layer norm's LSTM training on our kernels (ops/layer_norm.py): its CUDA tests (and the nn, launch,
# replay, dropout and benchmark-script ones it touches); one mutation of the backward kernel's cell
# norm run against the CUDA training test (it must fail); then training steps (benchmarks/layer_norm.py).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c178; mkdir -p $d
bash scripts/device_tests.sh $d 260 "test_layer_norm or test_recurrent_dropout or test_launch or test_nn or replay or benchmark_scripts" > $d/tests-tail.txt 2>&1
f=src/rnnbench/ops/lstm/kernels.py; cp $f /tmp/mut.bak
python3 -c "import sys; p=sys.argv[1]; s=open(p).read(); a='    d_c = d_c + d_c_hat'; assert s.count(a)==1; open(p,'w').write(s.replace(a, '    d_c = d_c + d_c_in'))" $f
echo "[$f: d_c + d_c_hat -> d_c + d_c_in] $(timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_layer_norm.py -k 'cuda_kernels_train_the_lstm' 2>&1 | tail -1)" >> $d/mutations.txt
cp /tmp/mut.bak $f
timeout 200 python3 benchmarks/layer_norm.py $d/layer_norm-train.jsonl --mode train --budget 170 > $d/train.txt 2>&1; echo "train rc $?" >> $d/rc.txt
tar czf $OUT/c178.tgz -C $OUT c178
cat $d/rc.txt; head -24 $d/tests-tail.txt; cat $d/mutations.txt
python3 - $d <<'PY'
import json, sys
for line in open(f"{sys.argv[1]}/layer_norm-train.jsonl"):
    r = json.loads(line)
    if r.get("record") == "env": continue
    if "error" in r: print(r); continue
    ln = (f"triton-ln {r['triton-ln_ms']:6.3f} err {r['err_triton-ln']:.1e} "
          f"loop/tln {r['loop-ln/triton-ln']:6.2f} tln/cudnn {r['triton-ln/cudnn']:5.2f} tln/triton {r['triton-ln/triton']:5.2f}"
          ) if "triton-ln_ms" in r else "triton-ln refused"
    print(f"{r['cell']:8s} B{r['batch_size']:<3d} H{r['hidden_size']:<4d} T{r['seq_len']:<3d} {r['dtype']} loop-ln {r['loop-ln_ms']:7.3f} "
          f"err {r['err']:.1e} triton {r['triton_ms']:6.3f} cudnn {r['cudnn_ms']:6.3f}  {ln}")
PY
