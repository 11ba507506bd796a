# "/" in a new HDF5 file is its root group, not a dataset name: said so in
# one line (it once said "'/' already exists"), exit 2, no file left.  A
# Zarr store's "/" is the store itself, which may hold the array.
$CHUNKCTL gen --quiet --shape 4 root.zarr:/ || exit 99
$CHUNKCTL gen --quiet --shape 4 new.h5:/
rc=$?
test -e new.h5 && echo "new.h5 appeared" >&2
exit $rc
