# Layer norm on a GPU: its CUDA tests (and recurrent dropout's, whose check moved to tests/module_check.py),
# then benchmarks/layer_norm.py, training steps and evaluation forwards
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c173; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 bash scripts/cuda_tests.sh $d/suite 8 "test_layer_norm or test_recurrent_dropout or benchmark_scripts" > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt
grep -h -B5 -A20 "^E   " $d/suite/shard.*.log $d/suite/alone.log > $d/failures.txt 2>/dev/null
rm -rf $d/suite
timeout 170 python3 benchmarks/layer_norm.py $d/layer_norm-train.jsonl --mode train --budget 120 > $d/train.txt 2>&1; echo "train rc $?" >> $d/rc.txt
timeout 120 python3 benchmarks/layer_norm.py $d/layer_norm-eval.jsonl --mode eval --budget 80 > $d/eval.txt 2>&1; echo "eval rc $?" >> $d/rc.txt
tar czf $OUT/c173.tgz -C $OUT c173
cat $d/rc.txt; cat $d/tests.txt | tail -12; head -c 1500 $d/failures.txt
python3 - $d <<'PY'
import json, sys
for mode in ("train", "eval"):
    for line in open(f"{sys.argv[1]}/layer_norm-{mode}.jsonl"):
        r = json.loads(line)
        if r.get("record") == "env": continue
        if "error" in r: print(mode, r); continue
        print(f"{mode:5s} {r['cell']:8s} B{r['batch_size']:<3d} H{r['hidden_size']:<4d} T{r['seq_len']:<3d} {r['dtype']} err {r['err']:.1e} "
              f"loop-ln {r['loop-ln_ms']:7.3f} triton {r['triton_ms']:6.3f} cudnn {r['cudnn_ms']:6.3f} ms  "
              f"loop-ln/cudnn {r['loop-ln/cudnn']:5.2f} loop-ln/triton {r['loop-ln/triton']:5.2f}")
PY
