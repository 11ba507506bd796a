# A text file is neither HDF5 nor Zarr; copy must leave no output.
echo "hello" > notes.h5
$CHUNKCTL copy --quiet notes.h5 out.zarr
rc=$?
test -e out.zarr && echo "output appeared" >&2
exit $rc
