# The speed map finished (gru, rnn_tanh: resumed from call115's map.jsonl), then the edge where cuDNN overtakes us: batch 128 and 512 at hidden 1024-4096 (LSTM, GRU)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c116; mkdir -p $d/map
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
cp ab/map115.jsonl $d/map/map.jsonl
python3 benchmarks/speed_map.py $d/map --cells gru,rnn_tanh --deadline 240 > $d/speed_map.txt 2>&1; echo "speed_map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 560 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/edge --cells lstm,gru --batch-sizes 128,512 --hidden-sizes 1024,2048,4096 --deadline $left > $d/edge.txt 2>&1; echo "edge rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c116.tgz -C $OUT c116
head -1 $d/map/map.md; tail -2 $d/map/map.log; cat $d/edge/map.md | cut -c1-150; tail -2 $d/edge/map.log; cat $d/rc.txt
