#!/usr/bin/env bash
# Variable-length batches on a GPU: the CUDA tests, then the `varlen` suite (strict fp32, sorted and
# unsorted) and its unsorted cases in bf16 with torch.nn packed (cuDNN), torch.nn padded and our
# kernels (`triton`: the padded batch with its lengths since 79843bb, packed before), as run for
# benchmarks/results/h100/varlen-triton/.
# Usage (repo root, PyTorch with CUDA): bash benchmarks/varlen_gpu.sh OUT_DIR [BUDGET_S]
# Writes OUT_DIR/env.json, varlen.jsonl, varlen.md, run.log, cuda_tests.txt and pytest.tar.gz (the
# shards' logs: one file, since only 8 come back from the device); prints a short table last.
set -uo pipefail
out=${1:?usage: varlen_gpu.sh OUT_DIR [BUDGET_S]}
budget=${2:-0.3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
rnnbench="env PYTHONPATH=src python3 -m rnnbench"
$rnnbench env --json > "$out/env.json"
timeout 300 bash scripts/cuda_tests.sh "$out/pytest" > "$out/cuda_tests.txt" 2>&1
echo "cuda suite rc $?" >> "$out/cuda_tests.txt"
tar -czf "$out/pytest.tar.gz" -C "$out" pytest && rm -rf "$out/pytest"
lanes=torch-nn,torch-nn-padded,triton
{
  timeout 150 $rnnbench run --suite varlen --lanes $lanes --device cuda --budget "$budget" \
    --out "$out/varlen.jsonl" --resume
  timeout 90 $rnnbench run --cell lstm,gru --batch-size 64 --seq-len 200 --input-size 512 --hidden-size 512 \
    --lengths 10:200 --dtype bf16 --mode train,forward --lanes $lanes --device cuda --budget "$budget" \
    --out "$out/varlen.jsonl" --resume
} > "$out/run.log" 2>&1
$rnnbench report "$out/varlen.jsonl" > "$out/varlen.md" 2>&1
tail -n 4 "$out/cuda_tests.txt" | cut -c1-160
grep -h "^FAILED\|^ERROR" "$out/cuda_tests.txt" | head -20
python3 - "$out/varlen.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"record": "result"' in l]
print(f"{'case':60s} {'lane':16s} {'status':9s} {'ms':>8s}")
for r in rows:
    ms = r.get("ms_per_batch")
    print(f"{r['case_key'][:60]:60s} {r['lane']:16s} {r['status']:9s} {ms if ms is None else round(ms, 3)!s:>8s}")
PY
