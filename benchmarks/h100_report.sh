#!/usr/bin/env bash
# Rebuild benchmarks/results/h100/REPORT.md and speedup.png from the H100 result files, keeping
# separate runs in separate sections (ratios are only meaningful within one run).
# Usage, from the repository root: bash benchmarks/h100_report.sh [RNNBENCH]   (default: rnnbench)
set -euo pipefail
rnnbench=${1:-rnnbench}
dir=benchmarks/results/h100
# One section of REPORT.md: a blank line, a heading, then the report of the files given (one run).
section() {
  local title=$1
  shift
  echo
  echo "## $title"
  echo
  "$rnnbench" report "$@"
}
every_lane=("$dir"/glample-2016.jsonl.gz "$dir"/theano-cudnn-2016.jsonl.gz "$dir"/fastrnns.jsonl "$dir"/flashrnn-2024.jsonl "$dir"/varlen.jsonl.gz)
{
  echo "# rnnbench on an NVIDIA H100"
  echo
  echo "Every lane, one run per suite (\`bash benchmarks/frameworks_gpu.sh\`; the \`triton\` rows are the first round of the kernels):"
  echo
  "$rnnbench" report "${every_lane[@]}"
  section "The second round of the Triton kernels, in a run of its own (triton-lane.jsonl.gz)" "$dir"/triton-lane.jsonl.gz
  section "TFLOP/s against the matmul peak measured in the same run (matmul-peak.jsonl)" "$dir"/matmul-peak.jsonl
  section "Triton after the plan change, TF32 and bf16, in a run of its own (triton-lane-2/)" "$dir"/triton-lane-2/*.jsonl.gz
  section "triton-graph beside torch-nn-graph, in a run of its own (triton-graph/)" "$dir"/triton-graph/*.jsonl.gz
  section "The 3xTF32 backward, glample in TF32, in a run of its own (triton-3xtf32/)" "$dir"/triton-3xtf32/*.jsonl.gz
  section "Strict fp32 as 3xTF32, every seed suite with four lanes, in a run of its own (triton-lane-4/)" "$dir"/triton-lane-4/seeds.jsonl.gz
  section "The issue's cases after less Python per call, in a run of their own (triton-lane-4/)" "$dir"/triton-lane-4/glample-3dtypes.jsonl.gz "$dir"/triton-lane-4/theano-depth1.jsonl.gz
  section "glample-2016 after h on chip for small RNNs, in a run of its own (triton-lane-5/)" "$dir"/triton-lane-5/glample-3dtypes.jsonl.gz
  section "Every seed suite and theano's depth-1 cases after h on chip, in a run of their own (triton-lane-5/)" "$dir"/triton-lane-5/seeds.jsonl.gz "$dir"/triton-lane-5/theano-depth1.jsonl.gz
  section "TF32 after plain TF32 in the LSTM's and GRU's backward, in a run of its own (triton-lane-5/tf32-backward/)" "$dir"/triton-lane-5/tf32-backward/glample-tf32.jsonl.gz "$dir"/triton-lane-5/tf32-backward/theano-depth1-tf32.jsonl.gz
  section "The issue's cases after fast activations, in a run of their own (triton-lane-6/)" "$dir"/triton-lane-6/glample-3dtypes.jsonl.gz "$dir"/triton-lane-6/theano-depth1.jsonl.gz
  section "glample-2016 after the on-chip RNN's loads moved out of the branch, in a run of its own (triton-lane-6/)" "$dir"/triton-lane-6/glample-3dtypes-6f76605.jsonl.gz
  section "Every seed suite after fast activations, in a run of its own (triton-lane-6/)" "$dir"/triton-lane-6/seeds.jsonl.gz
  section "The issue's cases after the LSTM's split-K backward, in a run of their own (triton-lane-7/)" "$dir"/triton-lane-7/glample-3dtypes.jsonl.gz "$dir"/triton-lane-7/theano-depth1.jsonl.gz
  section "Every seed suite after the LSTM's split-K backward, in a run of its own (triton-lane-7/)" "$dir"/triton-lane-7/seeds.jsonl.gz
  section "Theano's depth-1 cases and every seed suite after the GRU's split-K backward, in a run of their own (triton-lane-7/, d8d8a63; the seed run stopped 2 rows short)" "$dir"/triton-lane-7/theano-depth1-d8d8a63.jsonl.gz "$dir"/triton-lane-7/seeds-d8d8a63.jsonl.gz
  section "The issue's cases after taller and 16-bit split-K partials, in a run of their own (triton-lane-8/, 27b06ad)" "$dir"/triton-lane-8/glample-3dtypes-27b06ad.jsonl.gz "$dir"/triton-lane-8/theano-depth1-27b06ad.jsonl.gz
  section "Every seed suite after taller and 16-bit split-K partials, in a run of its own (triton-lane-8/, 27b06ad)" "$dir"/triton-lane-8/seeds-27b06ad.jsonl.gz
  section "The issue's cases after arriving at the barrier first, in a run of their own (triton-lane-9/, 5200a63)" "$dir"/triton-lane-9/glample-3dtypes-5200a63.jsonl.gz "$dir"/triton-lane-9/theano-depth1-5200a63.jsonl.gz
  section "Every seed suite after arriving at the barrier first, in a run of its own (triton-lane-9/, 5200a63)" "$dir"/triton-lane-9/seeds-5200a63.jsonl.gz
  section "The issue's cases after wider pieces and streamed weights at 64 rows, in runs of their own (triton-lane-10/: glample at aea332f, theano at f60e46b)" "$dir"/triton-lane-10/glample-3dtypes-aea332f.jsonl.gz "$dir"/triton-lane-10/theano-depth1-f60e46b.jsonl.gz
  section "Every seed suite after wider pieces, in a run of its own (triton-lane-10/, f704438)" "$dir"/triton-lane-10/seeds-f704438.jsonl.gz
  section "Every seed suite after taller 3xTF32 split-K partials, in a run of its own (triton-lane-11/, 67974f2)" "$dir"/triton-lane-11/seeds-67974f2.jsonl.gz
  section "Every seed suite after fp32 weights at 64 batch rows on one warpgroup, in a run of its own (triton-lane-12/, de9f61c)" "$dir"/triton-lane-12/seeds-de9f61c.jsonl.gz
  section "Theano's depth-1 cases in TF32 after the same change, in a run of their own (triton-lane-12/, de9f61c)" "$dir"/triton-lane-12/theano-tf32-de9f61c.jsonl.gz
  section "Every seed suite after strict fp32's forward splits h once, in a run of its own (triton-lane-13/, 4bef952)" "$dir"/triton-lane-13/seeds-4bef952.jsonl.gz
  section "Every seed suite after split-once forwards in 32-wide chunks, in a run of its own (triton-lane-14/, 7c16564)" "$dir"/triton-lane-14/seeds-7c16564.jsonl.gz
  section "Every seed suite after a layer's gradients in one launch, in a run of its own (triton-lane-15/, 9560326)" "$dir"/triton-lane-15/seeds-9560326.jsonl.gz
  section "Every seed suite with the lanes of each case timed in 20 turns, in a run of its own (turns/seeds-a83ec95/)" "$dir"/turns/seeds-a83ec95/seeds-a83ec95.jsonl.gz
  section "The varlen suite, our kernels given lengths, after the sync left the variable-length step, in a run of its own (varlen-triton/no-sync-5be96ec/)" "$dir"/varlen-triton/no-sync-5be96ec/varlen.jsonl.gz
  section "The varlen suite, every lane timed in the engine's process, after the same fix, in a run of its own (varlen-torch-886996c/)" "$dir"/varlen-torch-886996c/varlen.jsonl
  section "triton-graph on variable lengths, bf16, in a run of its own (varlen-graph-42ca223/)" "$dir"/varlen-graph-42ca223/varlen-bf16.jsonl
} > "$dir"/REPORT.md
"$rnnbench" report "${every_lane[@]}" --plot "$dir"/speedup.png > /dev/null
echo "wrote $dir/REPORT.md and $dir/speedup.png"
