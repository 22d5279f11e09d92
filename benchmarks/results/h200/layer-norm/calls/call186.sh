# Layer norm's forward on the exchange plans (b352560): the CUDA tests of layer norm (its exchange cases,
# the replayed wide stack, the wide training's fallback), replay and the launch; one mutation of the
# statistics' gathering (Chan's between-share term dropped) run against the CUDA forward cases (the
# exchange ones must fail); then evaluation forwards of every cell (benchmarks/layer_norm.py --mode eval).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c186; mkdir -p $d
bash scripts/device_tests.sh $d 200 "test_layer_norm or replay or test_launch" > $d/tests-tail.txt 2>&1
f=src/rnnbench/ops/common.py; cp $f /tmp/mut.bak
python3 -c "import sys; p=sys.argv[1]; s=open(p).read(); a='apart * apart / n'; assert s.count(a)==1; open(p,'w').write(s.replace(a, '0.0 * apart / n'))" $f
echo "[$f: apart * apart / n -> 0.0 * apart / n] $(timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_layer_norm.py -k 'cuda_kernels_without_gradients' 2>&1 | tail -1)" >> $d/mutations.txt
cp /tmp/mut.bak $f
timeout 230 python3 benchmarks/layer_norm.py $d/layer_norm-eval.jsonl --mode eval --budget 210 > $d/eval.txt 2>&1; echo "eval rc $?" >> $d/rc.txt
tar czf $OUT/c186.tgz -C $OUT c186
cat $d/rc.txt; head -20 $d/tests-tail.txt; cat $d/mutations.txt
python3 - $d <<'PY'
import json, sys
for line in open(f"{sys.argv[1]}/layer_norm-eval.jsonl"):
    r = json.loads(line)
    if r.get("record") == "env": continue
    if "error" in r: print(r); continue
    ln = (f"triton-ln {r['triton-ln_ms']:6.3f} err {r['err_triton-ln']:.1e} rep {r.get('replayed_triton-ln')} "
          f"loop/tln {r['loop-ln/triton-ln']:6.2f} tln/cudnn {r['triton-ln/cudnn']:5.2f} tln/triton {r['triton-ln/triton']:5.2f}"
          ) if "triton-ln_ms" in r else "triton-ln refused: " + r.get("triton-ln_refused", "")[-80:]
    print(f"{r['cell']:8s} B{r['batch_size']:<3d} H{r['hidden_size']:<4d} T{r['seq_len']:<3d} {r['dtype']} loop-ln {r['loop-ln_ms']:7.3f} "
          f"err {r['err']:.1e} triton {r['triton_ms']:6.3f} cudnn {r['cudnn_ms']:6.3f}  {ln}")
PY
