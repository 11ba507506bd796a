# Ctrl-C (SIGINT) or SIGTERM at several moments of a write: the run stops,
# dies of the signal, and leaves neither its output nor its temporary
# (unless it had already finished: then the output is whole, exit 0).
for d in 0.1 0.3 0.5 0.7 0.9; do
    for sig in INT TERM; do
        # (a shell starts background jobs with SIGINT ignored, which
        # chunkctl keeps, as nohup's SIGHUP: give it back its default)
        env --default-signal=INT $CHUNKCTL gen --quiet --shape 4000,4000 \
            --chunks 250,500 out.zarr &
        pid=$!
        sleep $d
        kill -$sig $pid 2>/dev/null
        wait $pid 2>/dev/null
        rc=$?
        left=$(ls -A | grep -v '^out.zarr$')
        [ -n "$left" ] && echo "$sig after ${d}s: left $left" >&2
        if [ $rc = 0 ]; then
            $CHUNKCTL verify --quiet out.zarr >/dev/null ||
                echo "$sig after ${d}s: exit 0 with a damaged output" >&2
        elif [ -e out.zarr ]; then
            echo "$sig after ${d}s: exit $rc with an output" >&2
        fi
        case $rc in 0 | 130 | 143) ;; *) echo "$sig: exit $rc" >&2 ;; esac
        rm -rf out.zarr .out.zarr*
    done
done
exit 0
