# An HDF5 chunk whose zstd bytes are damaged (found with h5py's chunk index).
$CHUNKCTL gen --quiet --shape 40,30 --chunks 10,10 --compress zstd:3 a.h5:/x || exit 99
$PY - <<'PY' || exit 99
import h5py
with h5py.File("a.h5", "r") as f:
    info = f["x"].id.get_chunk_info_by_coord((20, 10))
with open("a.h5", "r+b") as f:
    f.seek(info.byte_offset)
    f.write(b"\0" * 16)
PY
$CHUNKCTL copy --quiet a.h5 out.zarr
rc=$?
test -e out.zarr && echo "output appeared" >&2
exit $rc
