# The probes re-run at HEAD after their mends (train-parts: host_time.synced_us; half-saved, saving-forward:
# triton_dev.kernel_tensors), and strict fp32's backward in slices (plan_sweep pieces_backward_3xtf32)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c144; mkdir -p $d
pack() { tar czf $OUT/c144.tgz -C $OUT c144; }
python3 -m rnnbench env > $d/env.txt 2>&1
run() { local name=$1 lim=$2; shift 2; local t0=$(date +%s)
  timeout $lim "$@" > $d/$name.txt 2>&1; echo "$name rc $? $(( $(date +%s) - t0 )) s" >> $d/rc.txt; pack; }
run sweep 200 python3 benchmarks/plan_sweep.py $d/sweep --cases pieces_backward_3xtf32 --budget 170
run half_saved 110 python3 benchmarks/results/h200/half-saved/probes/half_saved.py $d/half_saved
run train_parts 110 python3 benchmarks/results/h200/train-parts/probes/kernels.py $d/train_parts
run save_forward 110 python3 benchmarks/results/h200/saving-forward/probes/save_forward.py $d/save_forward
tail -n 14 $d/sweep.txt; cat $d/half_saved.txt | tail -9; grep -B1 -A3 "torch-nn:\|triton:" $d/train_parts.txt | head -30; tail -n 8 $d/save_forward.txt; cat $d/rc.txt
