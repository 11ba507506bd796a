# A run killed midway leaves neither the output nor its temporary files.
$CHUNKCTL gen --quiet --shape 30000,8192 --compress gzip:9 big.h5 &
pid=$!
sleep 0.5
kill -TERM $pid
wait $pid
echo "exit status $?" >&2
ls -A >&2  # must list nothing
