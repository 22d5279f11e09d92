# Layer norm with exact activations (LAYER_NORM_PLAN): per-tensor errors again (ab/diag179.py), then
# training steps and evaluation forwards (benchmarks/layer_norm.py).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c180; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 100 python3 ab/diag179.py > $d/diag.txt 2>&1; echo "diag rc $?" >> $d/rc.txt
timeout 230 python3 benchmarks/layer_norm.py $d/layer_norm-train.jsonl --mode train --budget 200 > $d/train.txt 2>&1; echo "train rc $?" >> $d/rc.txt
timeout 150 python3 benchmarks/layer_norm.py $d/layer_norm-eval.jsonl --mode eval --budget 120 > $d/eval.txt 2>&1; echo "eval rc $?" >> $d/rc.txt
tar czf $OUT/c180.tgz -C $OUT c180
cat $d/rc.txt; grep "^## " $d/diag.txt
python3 - $d <<'PY'
import json, sys
for mode in ("train", "eval"):
    for line in open(f"{sys.argv[1]}/layer_norm-{mode}.jsonl"):
        r = json.loads(line)
        if r.get("record") == "env" or "triton-ln_ms" not in r: continue
        print(f"{mode} {r['cell']:8s} B{r['batch_size']:<3d} H{r['hidden_size']:<4d} T{r['seq_len']:<3d} {r['dtype']} "
              f"loop-ln {r['loop-ln_ms']:7.3f} err {r['err']:.1e} triton {r['triton_ms']:6.3f} cudnn {r['cudnn_ms']:6.3f} "
              f"triton-ln {r['triton-ln_ms']:6.3f} rep {r.get('replayed_triton-ln', 0):d} err {r['err_triton-ln']:.1e} "
              f"loop/tln {r['loop-ln/triton-ln']:6.2f} tln/cudnn {r['triton-ln/cudnn']:5.2f} tln/triton {r['triton-ln/triton']:5.2f}")
PY
