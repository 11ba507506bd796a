# An empty array has no singular values; the message did not say which
# array was empty.
$PY -c "import h5py
with h5py.File('a.h5', 'w') as f:
    f.create_dataset('x', shape=(0, 5), dtype='f8')" || exit 99
$CHUNKCTL svd a.h5:/x
