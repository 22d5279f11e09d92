# Layer norm's training on the exchange plans (the backward's sums across programs): the CUDA tests of
# layer norm (7 new exchange training cases), the launch, replay, recurrent dropout and lengths; two
# mutations of the backward's gathering run against the CUDA training tests (the exchange cases must
# fail); then training steps of every cell (benchmarks/layer_norm.py --mode train).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c188; mkdir -p $d
bash scripts/device_tests.sh $d 180 "test_layer_norm or test_launch or replay or test_recurrent_dropout or test_lengths" > $d/tests-tail.txt 2>&1
mutate() {  # FILE OLD NEW -k
  cp $1 /tmp/mut.bak
  python3 -c "import sys; p,a,b=sys.argv[1:4]; s=open(p).read(); assert s.count(a)==1; open(p,'w').write(s.replace(a,b))" "$1" "$2" "$3"
  echo "[$1: $2 -> $3] $(timeout 75 python3 -m pytest -q -p no:cacheprovider tests/test_layer_norm.py -k "$4" 2>&1 | tail -1)" >> $d/mutations.txt
  cp /tmp/mut.bak $1
}
mutate src/rnnbench/ops/common.py "dot / (GATES * H), valid, GATES)" "0.0 * dot / (GATES * H), valid, GATES)" "cuda_kernels_train"
mutate src/rnnbench/ops/common.py "        at = part_ptr + (k * PROGRAMS + p)" "        at = part_ptr + (k * PROGRAMS + 0 * p)" "cuda_kernels_train"
timeout 215 python3 benchmarks/layer_norm.py $d/layer_norm-train.jsonl --mode train --budget 200 > $d/train.txt 2>&1; echo "train rc $?" >> $d/rc.txt
tar czf $OUT/c188.tgz -C $OUT c188
cat $d/rc.txt; head -30 $d/tests-tail.txt; cat $d/mutations.txt
python3 - $d <<'PY'
import json, sys
for line in open(f"{sys.argv[1]}/layer_norm-train.jsonl"):
    r = json.loads(line)
    if r.get("record") == "env": continue
    if "error" in r: print(r); continue
    ln = (f"triton-ln {r['triton-ln_ms']:6.3f} err {r['err_triton-ln']:.1e} "
          f"loop/tln {r['loop-ln/triton-ln']:6.2f} tln/cudnn {r['triton-ln/cudnn']:5.2f} tln/triton {r['triton-ln/triton']:5.2f}"
          ) if "triton-ln_ms" in r else "triton-ln refused: " + r.get("triton-ln_refused", "")[-80:]
    print(f"{r['cell']:8s} B{r['batch_size']:<3d} H{r['hidden_size']:<4d} T{r['seq_len']:<3d} {r['dtype']} loop-ln {r['loop-ln_ms']:7.3f} "
          f"err {r['err']:.1e} triton {r['triton_ms']:6.3f} cudnn {r['cudnn_ms']:6.3f}  {ln}")
PY
