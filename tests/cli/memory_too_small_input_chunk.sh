# An input chunk too large for --memory is named as the cause: smaller
# output --chunks would not help.
$CHUNKCTL gen --quiet --shape 3000,3000 --chunks 3000,3000 --compress none a.zarr || exit 99
$CHUNKCTL copy --quiet --memory 40M --chunks 100,100 a.zarr out.h5 2>err
rc=$?
# The exact sizes depend on buffer sizing; the message shape must not.
sed 's/[0-9.]* MiB/N MiB/g' err >&2
test -e out.h5 && echo "output appeared" >&2
exit $rc
