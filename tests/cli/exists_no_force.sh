# An existing output is kept unless --force is given.
$CHUNKCTL gen --quiet --shape 10,10 a.h5:/x || exit 99
echo keep > out.zarr
$CHUNKCTL copy --quiet a.h5 out.zarr
rc=$?
test "$(cat out.zarr)" = keep || echo "output was overwritten" >&2
$CHUNKCTL copy --quiet --force a.h5 out.zarr || echo "--force failed" >&2
test -f out.zarr/.zarray || echo "--force did not write" >&2
exit $rc
