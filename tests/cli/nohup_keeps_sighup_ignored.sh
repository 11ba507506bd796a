# Under nohup (SIGHUP ignored when chunkctl starts) a hangup must not stop
# the run: chunkctl caught SIGHUP anyway and died of it, exit 129.
trap '' HUP
$CHUNKCTL gen --quiet --shape 4000,4000 --chunks 250,500 out.zarr &
pid=$!
sleep 0.2
kill -HUP $pid
wait $pid
rc=$?
[ $rc = 0 ] || echo "exit $rc after SIGHUP" >&2
$CHUNKCTL verify --quiet out.zarr > /dev/null || echo "out.zarr damaged" >&2
exit 0
