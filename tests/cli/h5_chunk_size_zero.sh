# An HDF5 chunk whose index entry keeps its address but says 0 bytes are
# stored (the size field of its v1 B-tree key zeroed): damaged, not a
# chunk never written, so it is not read as fill values.
$PY - <<'PY' || exit 99
import h5py, numpy as np, struct
with h5py.File("a.h5", "w") as f:
    f.create_dataset("i", data=np.arange(3000, dtype="i4").reshape(60, 50),
                     chunks=(20, 25), compression="gzip")
with h5py.File("a.h5", "r") as f:
    ci = f["i"].id.get_chunk_info(1)
b = bytearray(open("a.h5", "rb").read())
key = struct.pack("<II", ci.size, 0) + struct.pack("<QQQ", *ci.chunk_offset, 0)
at = b.find(key + struct.pack("<Q", ci.byte_offset))
assert at >= 0
b[at:at + 4] = struct.pack("<I", 0)
open("a.h5", "wb").write(b)
PY
$CHUNKCTL copy --quiet a.h5:/i out.zarr 2>&1 | sed 's/stored at [0-9]*/stored at N/' >&2
test -e out.zarr && echo "output appeared" >&2
$CHUNKCTL verify --quiet a.h5:/i >/dev/null
