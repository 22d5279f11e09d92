# Where a replayed bidirectional forward's time goes (torch.profiler)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c164; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 150 env PYTHONPATH=src python3 benchmarks/results/h200/stacks/probes/bidirectional_profile.py > $d/profile.txt 2>&1; echo "probe rc $?" >> $d/rc.txt
tar czf $OUT/c164.tgz -C $OUT c164
cat $d/rc.txt; grep "===" $d/profile.txt
