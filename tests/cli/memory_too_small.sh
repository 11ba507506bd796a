# A chunk that cannot fit in --memory fails up front, writing nothing.
$CHUNKCTL gen --quiet --shape 3000,3000 --chunks 3000,3000 --compress none a.zarr || exit 99
$CHUNKCTL copy --quiet --memory 40M a.zarr out.h5 2>err
rc=$?
# The exact need depends on buffer sizing; the message shape must not.
sed 's/needs [0-9.]* MiB/needs N MiB/' err >&2
test -e out.h5 && echo "output appeared" >&2
exit $rc
