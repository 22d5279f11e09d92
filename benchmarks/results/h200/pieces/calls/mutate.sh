# One kernel mutation in a copy of the tree, and the CUDA tests that must see it:
#   bash ab/mutate.sh NAME FILE SED_EXPR ID_REGEX LOG_DIR  -> LOG_DIR/NAME.log, a line in LOG_DIR/mut.txt
set -u
name=$1 file=$2 expr=$3 ids=$4 logs=$5
root=$PWD; m=/tmp/mut-$name
rm -rf $m && mkdir -p $m && cp -r src tests pyproject.toml $m/ && cd $m
sed -i "$expr" $file
if cmp -s $file $root/$file; then echo "$name: NOT APPLIED" >> $logs/mut.txt; exit 1; fi
diff $root/$file $file > $logs/$name.diff
sel=$(python3 -m pytest -q --collect-only tests/ops/test_cuda_kernels.py 2>/dev/null | grep -E "$ids")
python3 -m pytest -q -p no:cacheprovider $sel > $logs/$name.log 2>&1
echo "$name: rc $? | $(tail -1 $logs/$name.log) | $(echo $sel | wc -w) selected" >> $logs/mut.txt
