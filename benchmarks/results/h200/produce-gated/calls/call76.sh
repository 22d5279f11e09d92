# HEAD: the whole CUDA suite; the refusal test under its mutation; the one-launch bound of the gated FMA forwards
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c76; mkdir -p $d
pack() { tar czf $OUT/c76.tgz -C $OUT c76; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
PYTHONPATH=src timeout 150 python3 ab/bound.py $d/bound.jsonl 3 > $d/bound.txt 2>&1; echo "bound rc $?" >> $d/rc.txt; pack
rm -rf /tmp/mut && mkdir /tmp/mut && cp -r src tests pyproject.toml /tmp/mut/
sed -i 's/return self.refused.get(half, 0) < ATTEMPTS/return True/' /tmp/mut/src/rnnbench/ops/replayed_layer.py
grep -c "return True" /tmp/mut/src/rnnbench/ops/replayed_layer.py >> $d/rc.txt
(cd /tmp/mut && timeout 60 python3 -m pytest -q -p no:cacheprovider -k refused_past_hidden tests/ops/test_cuda_kernels.py > $d/mutation.txt 2>&1; echo "mutation rc $?" >> $d/rc.txt); pack
timeout 300 bash scripts/cuda_tests.sh $d/suite 12 > $d/suite.txt 2>&1; echo "suite rc $?" >> $d/rc.txt; pack
cut -c1-250 $d/bound.txt | grep -v Warn; tail -3 $d/mutation.txt | cut -c1-200; tail -16 $d/suite.txt | cut -c1-200; cat $d/rc.txt
