# The TF32 layer-normalized LSTM's training error: the reverse recurrence in TF32 against 3xTF32 (ab/diag181.py).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c181; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 python3 ab/diag181.py > $d/diag.txt 2>&1; echo "diag rc $?" >> $d/rc.txt
cat $d/rc.txt; tail -40 $d/diag.txt
