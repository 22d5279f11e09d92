# The sliced kernels' CUDA tests under four kernel mutations (each seen failing; the whole tile's control passing), then 128 batch rows a program explored (kernels alone)
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1 PYTHONPATH=src
d=$OUT/c129; mkdir -p $d/mut
python3 -m rnnbench env > $d/env.txt 2>&1
t0=$(date +%s)
L=src/rnnbench/ops/lstm/pieces.py G=src/rnnbench/ops/gru/pieces.py
H='s/tl.store(h_buf_ptr + _at(row_t + B, units, H)/tl.store(h_buf_ptr + _at(row_t, units, H)/'
timeout 200 bash ab/mutate.sh lstm_forward_h_slot $L "$H" 'forward_in_slices_on_the_gpu\[lstm-(bf16|tf32)-same-lengths-(2|1)\]|tf32_lstm_forward_in_slices_by_default\[same' $d/mut &
timeout 200 bash ab/mutate.sh lstm_backward_final_slot $L 's/last = d_state_ptr + (T % 2) \* (2 \* plane_h)/last = d_state_ptr + ((T + 1) % 2) * (2 * plane_h)/' 'backward_in_slices_on_the_gpu\[lstm-bf16-(same-lengths|lengths)-2-transpose\]' $d/mut &
timeout 200 bash ab/mutate.sh gru_forward_h_slot $G "$H" 'forward_in_slices_on_the_gpu\[gru-bf16-same-lengths-(2|1)\]' $d/mut &
timeout 200 bash ab/mutate.sh gru_backward_final_slot $G 's/last = d_state_ptr + (T % 2) \* plane_h/last = d_state_ptr + ((T + 1) % 2) * plane_h/' 'backward_in_slices_on_the_gpu\[gru-bf16-(same-lengths|lengths)-2-transpose\]' $d/mut &
wait; echo "mutations at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
left=$(( 560 - ($(date +%s) - t0) ))
timeout $left python3 benchmarks/plan_sweep.py $d/rows --cases pieces_rows_more --budget $(( left - 20 )) > $d/rows.txt 2>&1; echo "rows rc $? at $(( $(date +%s) - t0 )) s" >> $d/rc.txt
tar czf $OUT/c129.tgz -C $OUT c129
cat $d/mut/mut.txt; grep -h "us/step\|Error" $d/rows.txt | cut -c1-190; cat $d/rc.txt
