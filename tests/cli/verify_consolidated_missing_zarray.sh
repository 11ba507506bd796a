# A consolidated Zarr v2 store whose sub/x/.zarray is gone while .zmetadata
# still lists it (zarr.open_consolidated and xarray still open sub/x from
# there): verify names the array and the missing file, still checks the
# rest, and fails.  Naming the sound array alone checks only that; info
# warns.
$PY -c "
import zarr, numpy as np
g = zarr.open_group('c.zarr', mode='w')
g.create_dataset('sub/x', data=np.arange(100.).reshape(10, 10), chunks=(5, 5))
g.create_dataset('y', data=np.arange(6), chunks=(3,))
zarr.consolidate_metadata('c.zarr')" || exit 99
rm c.zarr/sub/x/.zarray
$CHUNKCTL verify --quiet c.zarr:/y >/dev/null || echo "c.zarr:/y failed" >&2
# info lists what it can and warns of the rest (this warning is expected)
$CHUNKCTL info c.zarr >/dev/null || echo "info failed" >&2
$CHUNKCTL verify --quiet c.zarr >out
rc=$?
grep -qx 'damaged: c.zarr:/sub/x: .zmetadata lists this array, but sub/x/.zarray is missing' out ||
    echo "no line naming sub/x and its .zarray" >&2
grep -q '^c.zarr: 1 array, 2 chunks,.* 0 damaged, 1 named but missing$' out ||
    echo "summary: $(tail -1 out)" >&2
exit $rc
