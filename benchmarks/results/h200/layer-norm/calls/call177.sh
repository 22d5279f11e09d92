# Layer norm replayed: every norm in the kernel. Its CUDA tests (and the nn, launch, replay,
# dropout and benchmark-script ones it touches); two mutations of the replay's tensors, each
# run against the replay test (it must fail); then evaluation forwards (benchmarks/layer_norm.py).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c177; mkdir -p $d
bash scripts/device_tests.sh $d 230 "test_layer_norm or test_recurrent_dropout or test_launch or test_nn or replay or benchmark_scripts" > $d/tests-tail.txt 2>&1
mutate() {  # FILE OLD NEW: the replay test against a mutated copy, then the file restored
  cp "$1" /tmp/mut.bak
  python3 -c "import sys; p,a,b=sys.argv[1:4]; s=open(p).read(); assert s.count(a)==1, a; open(p,'w').write(s.replace(a,b))" "$1" "$2" "$3"
  echo "[$1: $2 -> $3] $(timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_layer_norm.py -k 'cuda_a_call_without_gradients_is_replayed' 2>&1 | tail -1)" >> $d/mutations.txt
  cp /tmp/mut.bak "$1"
}
mutate src/rnnbench/ops/replayed_layer.py "tensors = inputs if norm is None else (*inputs, *norm)" "tensors = inputs"
mutate src/rnnbench/nn.py "return [*self._flat_weights, *(params[name] for name in self._layer_norm_names)]" "return self._flat_weights"
timeout 170 python3 benchmarks/layer_norm.py $d/layer_norm-eval.jsonl --mode eval --budget 140 > $d/eval.txt 2>&1; echo "eval rc $?" >> $d/rc.txt
tar czf $OUT/c177.tgz -C $OUT c177
cat $d/rc.txt; cat $d/tests-tail.txt | head -30; cat $d/mutations.txt
python3 - $d <<'PY'
import json, sys
for line in open(f"{sys.argv[1]}/layer_norm-eval.jsonl"):
    r = json.loads(line)
    if r.get("record") == "env": continue
    if "error" in r: print(r); continue
    ln = (f"triton-ln {r['triton-ln_ms']:6.3f} rep {r['replayed_triton-ln']:d} err {r['err_triton-ln']:.1e} "
          f"loop/tln {r['loop-ln/triton-ln']:6.2f} tln/cudnn {r['triton-ln/cudnn']:5.2f} tln/triton {r['triton-ln/triton']:5.2f}"
          ) if "triton-ln_ms" in r else "triton-ln refused"
    print(f"{r['cell']:8s} B{r['batch_size']:<3d} H{r['hidden_size']:<4d} T{r['seq_len']:<3d} {r['dtype']} loop-ln {r['loop-ln_ms']:7.3f} "
          f"triton {r['triton_ms']:6.3f} rep {r.get('replayed_triton', 0):d} cudnn {r['cudnn_ms']:6.3f}  {ln}")
PY
