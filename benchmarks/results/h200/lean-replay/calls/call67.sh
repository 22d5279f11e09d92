# lean replay: in-process A/B against afc7166's replay (probes/against.py), and the host parts at this tree
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c67; mkdir -p $d
pack() { tar czf $OUT/c67.tgz -C $OUT c67; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 300 python3 benchmarks/results/h200/lean-replay/probes/against.py ab/old/src $d/against.jsonl > $d/against.txt 2>&1; echo "against rc $?" >> $d/rc.txt; pack
PYTHONPATH=src timeout 150 python3 benchmarks/results/h200/lean-replay/probes/parts.py $d/parts > $d/parts.txt 2>&1; echo "parts rc $?" >> $d/rc.txt; pack
cat $d/against.txt | cut -c1-200; cat $d/parts.txt; cat $d/rc.txt
