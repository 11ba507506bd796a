# A run killed midway leaves neither the output nor its temporary files.
# The kill must land while the run is writing: wait (at most 20 s) for its
# temporary, .big.h5.ck-tmp-PID-START@HOST beside big.h5, to appear, and
# fail if it never does, so that a kill before any file exists cannot pass.
$CHUNKCTL gen --quiet --shape 30000,8192 --compress gzip:9 big.h5 &
pid=$!
tmp=".big.h5.ck-tmp-$pid-*"
i=0
while ! ls -d $tmp >/dev/null 2>&1 && [ $i -lt 400 ]; do
    sleep 0.05
    i=$((i + 1))
done
if ls -d $tmp >/dev/null 2>&1; then
    echo "temporary present before the kill" >&2
else
    echo "no temporary $tmp after 20 s: $(ls -A)" >&2
fi
kill -TERM $pid
wait $pid
echo "exit status $?" >&2
ls -A >&2  # must list nothing
