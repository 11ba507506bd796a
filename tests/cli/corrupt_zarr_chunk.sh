# A zstd chunk overwritten with garbage: the error names the chunk.
$CHUNKCTL gen --quiet --shape 40,30 --chunks 10,10 --compress zstd:3 a.zarr || exit 99
printf 'garbage garbage garbage' > a.zarr/2.1
$CHUNKCTL copy --quiet a.zarr out.h5
rc=$?
test -e out.h5 && echo "output appeared" >&2
exit $rc
