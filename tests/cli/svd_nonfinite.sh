# A NaN or an infinity in an SVD's input: one line naming the array and the
# value's place in it (NumPy's svd raises LinAlgError), and no output.  A
# tall array (exact: the TSQR's pass), and a wide one (randomized: the first
# pass, over the transpose).
$PY - <<'PY' || exit 99
import h5py, numpy as np
a = np.ones((200, 6))
a[137, 4] = np.nan
b = np.ones((5, 300))
b[3, 251] = -np.inf
with h5py.File("a.h5", "w") as f:
    f.create_dataset("tall", data=a, chunks=(50, 6))
    f.create_dataset("wide", data=b, chunks=(5, 64))
PY
$CHUNKCTL svd --quiet a.h5:/tall -o t.h5
echo "exit $?" >&2
$CHUNKCTL svd --quiet --randomized --k 2 a.h5:/wide -o w.h5
rc=$?
test -e t.h5 && echo "t.h5 appeared" >&2
test -e w.h5 && echo "w.h5 appeared" >&2
exit $rc
