# An HDF5 file cut short: a clean error and no output.
$CHUNKCTL gen --quiet --shape 400,300 --chunks 100,100 --compress none a.h5:/x || exit 99
truncate -s 20000 a.h5
$CHUNKCTL copy --quiet a.h5:/x out.h5
rc=$?
test -e out.h5 && echo "output appeared" >&2
exit $rc
