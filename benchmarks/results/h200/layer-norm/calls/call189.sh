# The whole CUDA suite at the session's last code commit (scripts/device_tests.sh).
set -u
export PYTHONUNBUFFERED=1 RNNBENCH_GIT_COMMIT=$1
d=$OUT/c189
bash scripts/device_tests.sh $d 470
tar czf $OUT/c189.tgz -C $OUT c189
