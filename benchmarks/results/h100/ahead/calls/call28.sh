# replays taken per engine step; where an eager step's host time goes (step_profile) at this tree
set -u
export RNNBENCH_GIT_COMMIT=$1
d=$OUT/c28; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 120 python3 ab/taken.py > $d/taken.txt 2>&1
cat $d/taken.txt
PYTHONPATH=src timeout 300 python3 benchmarks/results/h100/call-floor/probes/step_profile.py $d/profile > $d/profile.txt 2>&1
tar czf $OUT/c28.tgz -C $OUT c28
cat $d/profile.txt; head -30 $d/profile/triton-train.prof.txt
