# The TF32 layer-normalized LSTM's training error with the static operands rounded to TF32 first (ab/diag183.py).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c183; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 120 python3 ab/diag183.py > $d/diag.txt 2>&1; echo "diag rc $?" >> $d/rc.txt
cat $d/rc.txt; tail -40 $d/diag.txt
