# gated producers: the new test and the FMA/replay tests; the new test with the rows' wait taken out; produce on/off A/B
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c77; mkdir -p $d
pack() { tar czf $OUT/c77.tgz -C $OUT c77; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 90 python3 -m pytest -q -p no:cacheprovider -k "gated_forwards_wait" tests/ops/test_cuda_kernels.py > $d/new.txt 2>&1; echo "new rc $?" >> $d/rc.txt; pack
PYTHONPATH=src timeout 130 python3 ab/produce.py $d/produce.jsonl 3 > $d/produce.txt 2>&1; echo "produce rc $?" >> $d/rc.txt; pack
rm -rf /tmp/mut && mkdir /tmp/mut && cp -r src tests pyproject.toml /tmp/mut/
sed -i 's/            _wait_arrivals(counter_ptr, tiles)/            pass/' /tmp/mut/src/rnnbench/ops/lstm/fma.py /tmp/mut/src/rnnbench/ops/gru/fma.py
grep -c "^            pass" /tmp/mut/src/rnnbench/ops/lstm/fma.py /tmp/mut/src/rnnbench/ops/gru/fma.py >> $d/rc.txt
(cd /tmp/mut && timeout 60 python3 -m pytest -q -p no:cacheprovider -k "gated_forwards_wait" tests/ops/test_cuda_kernels.py > $d/mutation.txt 2>&1; echo "mutation rc $?" >> $d/rc.txt); pack
timeout 200 bash ab/subset.sh $d/tests 12 "produc or fma or replay or take_back or refused" tests/ops/test_cuda_kernels.py > $d/tests.txt 2>&1; echo "tests rc $?" >> $d/rc.txt; pack
tail -8 $d/new.txt | cut -c1-300; cut -c1-220 $d/produce.txt | grep -v Warn; tail -8 $d/mutation.txt | cut -c1-200; tail -16 $d/tests.txt | cut -c1-250; cat $d/rc.txt
