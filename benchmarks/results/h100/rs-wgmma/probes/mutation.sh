#!/usr/bin/env bash
# The registers' path broken on purpose in the device's copy (every piece's product takes piece 0's
# weights): test_gluon_forward_weights_in_registers must fail. The file is restored after.
# bash benchmarks/results/h100/rs-wgmma/probes/mutation.sh LOG
set -u
file=src/rnnbench/ops/gluon_common.py
cp "$file" /tmp/gluon_common.py.orig
sed -i 's/acc = warpgroup_mma(w\[i\], h_smem/acc = warpgroup_mma(w[0], h_smem/' "$file"
echo "mutated lines: $(grep -c 'w\[0\], h_smem' "$file")" > "$1"
python3 -m pytest -q -p no:cacheprovider tests/ops/test_cuda_kernels.py -k "weights_in_registers and True and lstm and fp16" >> "$1" 2>&1
echo "pytest exit $?" >> "$1"
cp /tmp/gluon_common.py.orig "$file"
