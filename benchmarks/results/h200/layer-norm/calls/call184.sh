# The TF32 layer-normalized LSTM's training error over 8 draws of weights and inputs, TF32 and bf16 (ab/diag184.py).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c184; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 python3 ab/diag184.py > $d/diag.txt 2>&1; echo "diag rc $?" >> $d/rc.txt
cat $d/rc.txt; tail -40 $d/diag.txt
