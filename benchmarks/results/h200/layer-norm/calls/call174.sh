# Layer norm's forward on our kernels: its CUDA tests (and the dropout, launch and nn ones it touches),
# then benchmarks/layer_norm.py, evaluation forwards (with triton-ln) and training steps
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c174; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 240 bash scripts/cuda_tests.sh $d/suite 14 "test_layer_norm or test_recurrent_dropout or test_launch or test_nn or benchmark_scripts" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
grep -h -B5 -A30 "^E   " $d/suite/shard.*.log $d/suite/alone.log > $d/failures.txt 2>/dev/null
rm -rf $d/suite
timeout 150 python3 benchmarks/layer_norm.py $d/layer_norm-eval.jsonl --mode eval --budget 110 > $d/eval.txt 2>&1; echo "eval rc $?" >> $d/rc.txt
tar czf $OUT/c174.tgz -C $OUT c174
cat $d/rc.txt; tail -16 $d/tests.txt; head -c 2500 $d/failures.txt
python3 - $d <<'PY'
import json, sys
for line in open(f"{sys.argv[1]}/layer_norm-eval.jsonl"):
    r = json.loads(line)
    if r.get("record") == "env": continue
    if "error" in r: print(r); continue
    ln = (f"triton-ln {r['triton-ln_ms']:6.3f} err {r['err_triton-ln']:.1e} loop/triton-ln {r['loop-ln/triton-ln']:6.2f} "
          f"triton-ln/cudnn {r['triton-ln/cudnn']:5.2f} triton-ln/triton {r['triton-ln/triton']:5.2f}") if "triton-ln_ms" in r else "triton-ln refused"
    print(f"{r['cell']:8s} B{r['batch_size']:<3d} H{r['hidden_size']:<4d} T{r['seq_len']:<3d} {r['dtype']} loop-ln {r['loop-ln_ms']:7.3f} "
          f"err {r['err']:.1e} triton {r['triton_ms']:6.3f} cudnn {r['cudnn_ms']:6.3f}  {ln}")
PY
