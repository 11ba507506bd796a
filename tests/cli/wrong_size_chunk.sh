# An uncompressed chunk file of the wrong size names the chunk.
$CHUNKCTL gen --quiet --shape 20,20 --chunks 10,10 --compress none a.zarr || exit 99
head -c 100 a.zarr/1.0 > short && mv short a.zarr/1.0
$CHUNKCTL copy --quiet a.zarr out.zarr
rc=$?
test -e out.zarr && echo "output appeared" >&2
exit $rc
