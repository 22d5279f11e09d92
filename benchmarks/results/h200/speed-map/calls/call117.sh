# The auto rule's CUDA test (and the replayed forwards, which pass _launch), then the speed map's edge in strict fp32 and fp16 (the rule applies there unmeasured)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c117; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
timeout 170 bash scripts/cuda_tests.sh $d/tests 8 "auto_runs_cudnn or an_eager_forward_is_replayed" > $d/tests.txt 2>&1; echo "tests rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 470 - ($(date +%s) - t0) ))
python3 benchmarks/speed_map.py $d/edge-fp32-fp16 --cells lstm,gru,rnn_tanh --dtypes fp32,fp16 --batch-sizes 256,1024 --hidden-sizes 1024,4096 --deadline $left > $d/edge.txt 2>&1; echo "edge rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c117.tgz -C $OUT c117
tail -6 $d/tests.txt; head -1 $d/edge-fp32-fp16/map.md; tail -2 $d/edge-fp32-fp16/map.log; cat $d/rc.txt
