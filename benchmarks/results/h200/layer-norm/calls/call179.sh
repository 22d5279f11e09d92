# Why our TF32 layer-normalized LSTM trains 10x further from float64 than the loop (c178): per-tensor errors.
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c179; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 python3 ab/diag179.py > $d/diag.txt 2>&1; echo "diag rc $?" >> $d/rc.txt
cat $d/rc.txt; cat $d/diag.txt | tail -150
