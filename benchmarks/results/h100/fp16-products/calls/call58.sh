# the engine, trees side by side: theano's depth-1 strict fp32 grid at hidden 512 and 1024
set -u
export PYTHONUNBUFFERED=1
d=$OUT/c58; mkdir -p $d
PYTHONPATH=src python3 -m rnnbench env > $d/env.txt 2>&1
OLD_COMMIT=$1 NEW_COMMIT=$2 timeout 560 bash benchmarks/trees_ab.sh build/old/src $d/ab --cell lstm,gru --batch-size 32,128 --seq-len 30 --input-size hidden --hidden-size 512,1024 --dtype fp32 --lanes torch-nn,triton --budget 0.2 --device cuda > $d/ab.txt 2>&1
echo "ab rc $?" >> $d/ab.txt
tar czf $OUT/c58.tgz -C $OUT c58
cat $d/ab.txt; for n in 1 2; do grep -i "triton" $d/ab/compare-$n.md | head -40; done
