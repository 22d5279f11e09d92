# torch's default float32 switches: which products torch.nn's LSTM and ours run, and their times
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c101; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
timeout 200 python3 ab/defaults.py > $d/defaults.jsonl 2> $d/defaults.err; echo "rc $?" >> $d/rc.txt
tar czf $OUT/c101.tgz -C $OUT c101
cat $d/defaults.jsonl; tail -5 $d/defaults.err; cat $d/rc.txt
