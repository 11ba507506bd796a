# CF attributes that cannot be decoded were taken for no attributes: the
# values were summed undecoded (-999 counted, not skipped), exit 0.
$PY -c "import h5py, numpy as np, zarr
with h5py.File('a.h5', 'w') as f:
    d = f.create_dataset('a', data=np.array([1, 2, -999, 4], 'f4'))
    d.attrs['_FillValue'] = np.array([-999.0, 5.0], 'f4')
    d = f.create_dataset('c', data=np.array([1, 2, 3], 'i2'))
    d.attrs['scale_factor'] = np.array([2.0, 3.0])
z = zarr.open('z.zarr', 'w', shape=4, chunks=4, dtype='f8')
z[:] = [1, 2, -999, 4]" || exit 99
printf '{"_FillValue": -999.0, "_ARRAY_DIMENSIONS": ["t"' > z.zarr/.zattrs
$CHUNKCTL reduce sum a.h5:/a
$CHUNKCTL reduce sum a.h5:/c
$CHUNKCTL reduce sum --raw z.zarr > /dev/null || exit 98
$CHUNKCTL reduce sum z.zarr
