# A largest value of 2^63 - 1 (int64's, or uint64's largest that bincount
# takes) needs 2^63 bins, which the memory cannot hold: one line, not a
# crash (the bin count overflowed and the bins were written past their
# end).  2^63 - 2 was refused already.
$PY -c "import numpy as np, h5py
with h5py.File('a.h5', 'w') as f:
    f['i'] = np.array([0, 1, 2**63 - 1], np.int64)
    f['u'] = np.array([2**63 - 1], np.uint64)" || exit 99
$CHUNKCTL bincount a.h5:/i --memory 64M -o o.h5:/b
$CHUNKCTL bincount a.h5:/u --memory 64M
[ ! -e o.h5 ] && ! ls -a | grep -q ck-tmp || exit 98
exit 1
