# Engine map (ours vs cuDNN, verified) at batch 512/1024 x hidden 2048, LSTM+GRU, bf16+TF32: the 128-row backward and TF32 GRU forward defaults
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c136; mkdir -p $d
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
python3 benchmarks/speed_map.py $d/map --cells lstm,gru --dtypes bf16,tf32 --batch-sizes 512,1024 --hidden-sizes 2048 --deadline 225 > $d/map.txt 2>&1; echo "map rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c136.tgz -C $OUT c136
cat $d/map/map.md 2>/dev/null | head -40; cat $d/rc.txt
