"""rechunk_bench.sh's peers and its untimed check of the outputs.

usage: python3 rechunk_bench_peers.py h5py IN.h5 OUT.h5 ROWS,COLS
       python3 rechunk_bench_peers.py dask IN.h5 OUT.h5 ROWS,COLS
       python3 rechunk_bench_peers.py check REF.h5 ROWS,COLS OUT...

  h5py   the naive way: read all of IN.h5's /x into memory, write it to a
         new OUT.h5:/x with chunks ROWS,COLS and no filter
  dask   da.from_array(IN's /x, chunks=(1000, 1000)).rechunk((ROWS, COLS)),
         stored (da.store, dask's default threaded scheduler, its default
         lock around the writes, as da.to_hdf5 does) into a new OUT.h5:/x
         with chunks ROWS,COLS and no filter
  check  each OUT (an .h5 file, array /x, or a .zarr store) holds REF.h5's
         /x element for element, in chunks ROWS,COLS, with no compression;
         exits 1 naming the first that does not

For a zstd input, HDF5_PLUGIN_PATH must name chunkctl's plugins.
"""
import sys

import h5py
import numpy as np

DASK_BLOCK = (1000, 1000)


def chunks_arg(s):
    return tuple(int(n) for n in s.split(","))


def naive(src, dst, chunks):
    with h5py.File(src, "r") as f:
        a = f["x"][:]
    with h5py.File(dst, "w") as g:
        g.create_dataset("x", data=a, chunks=chunks)


def dask(src, dst, chunks):
    import dask.array as da
    with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
        x = f["x"]
        block = tuple(min(b, n) for b, n in zip(DASK_BLOCK, x.shape))
        y = da.from_array(x, chunks=block).rechunk(chunks)
        d = g.create_dataset("x", shape=x.shape, dtype=x.dtype, chunks=chunks)
        da.store(y, d)


def describe(path):
    """(array, chunks, compression) of an output."""
    if path.endswith(".zarr"):
        import zarr
        z = zarr.open(path, mode="r")
        comp = None
        if z.compressor is not None or z.filters:
            comp = "compressor %r, filters %r" % (z.compressor, z.filters)
        return z[:], tuple(z.chunks), comp
    with h5py.File(path, "r") as f:
        d = f["x"]
        dcpl = d.id.get_create_plist()
        filters = [str(dcpl.get_filter(i)[0]) for i in range(dcpl.get_nfilters())]
        return d[:], d.chunks, ("HDF5 filters " + ",".join(filters) if filters else None)


def check(ref_path, chunks, outs):
    with h5py.File(ref_path, "r") as f:
        ref = f["x"][:]
    for p in outs:
        a, c, comp = describe(p)
        if a.dtype != ref.dtype or not np.array_equal(a, ref):
            sys.exit("rechunk_bench: %s differs from %s" % (p, ref_path))
        if c != chunks:
            sys.exit("rechunk_bench: %s has chunks %s, not %s" % (p, c, chunks))
        if comp is not None:
            sys.exit("rechunk_bench: %s is compressed (%s)" % (p, comp))
    print("rechunk_bench: %d outputs equal %s, chunks %s, uncompressed" % (
        len(outs), ref_path, ",".join(map(str, chunks))))


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd in ("h5py", "dask") and len(sys.argv) == 5:
        (naive if cmd == "h5py" else dask)(sys.argv[2], sys.argv[3], chunks_arg(sys.argv[4]))
    elif cmd == "check" and len(sys.argv) >= 5:
        check(sys.argv[2], chunks_arg(sys.argv[3]), sys.argv[4:])
    else:
        sys.exit(__doc__)
