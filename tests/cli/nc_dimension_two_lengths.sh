# A netCDF dimension has one length: two arrays that give "x" different
# lengths are refused before anything is computed, and nothing is written.
$PY -c '
import h5py, numpy as np
with h5py.File("in.h5", "w") as f:
    f["a"] = np.arange(3.0)
    f["b"] = np.arange(4.0)
    f["a"].make_scale("x")
    f["b"].dims[0].label = "a"' || exit 99
$CHUNKCTL copy --quiet in.h5 out.nc
status=$?
[ -e out.nc ] && echo "out.nc written" >&2
exit $status
