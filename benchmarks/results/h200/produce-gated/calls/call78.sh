# gated producers on the stream's counters: the new test, its two mutations (no wait; no reset), produce on/off A/B
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c78; mkdir -p $d
pack() { tar czf $OUT/c78.tgz -C $OUT c78; }
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
timeout 90 python3 -m pytest -q -p no:cacheprovider -k "gated_forwards_wait" tests/ops/test_cuda_kernels.py > $d/new.txt 2>&1; echo "new rc $?" >> $d/rc.txt; pack
PYTHONPATH=src timeout 130 python3 ab/produce.py $d/produce.jsonl 3 > $d/produce.txt 2>&1; echo "produce rc $?" >> $d/rc.txt; pack
for m in wait reset; do
  rm -rf /tmp/mut && mkdir /tmp/mut && cp -r src tests pyproject.toml /tmp/mut/
  if [ $m = wait ]; then sed -i 's/            _wait_arrivals(counter_ptr, tiles)/            pass/' /tmp/mut/src/rnnbench/ops/lstm/fma.py /tmp/mut/src/rnnbench/ops/gru/fma.py
  else sed -i 's/            rows_out(counter_ptr, B)/            pass/' /tmp/mut/src/rnnbench/ops/lstm/fma.py /tmp/mut/src/rnnbench/ops/gru/fma.py; fi
  echo "$m $(grep -c '^            pass' /tmp/mut/src/rnnbench/ops/lstm/fma.py /tmp/mut/src/rnnbench/ops/gru/fma.py | tr '\n' ' ')" >> $d/rc.txt
  (cd /tmp/mut && timeout 60 python3 -m pytest -q -p no:cacheprovider -k "gated_forwards_wait" tests/ops/test_cuda_kernels.py > $d/mutation-$m.txt 2>&1; echo "mutation $m rc $?" >> $d/rc.txt); pack
done
tail -3 $d/new.txt | cut -c1-300; cut -c1-220 $d/produce.txt | grep -v "Warn\|_VF"; tail -8 $d/mutation-*.txt | cut -c1-200; cat $d/rc.txt
