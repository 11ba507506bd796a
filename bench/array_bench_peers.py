"""The data, the NumPy/SciPy and dask sides of array_bench.sh, and its checks.

usage: python3 array_bench_peers.py make-clim OUT.h5
       python3 array_bench_peers.py numpy|dask EXERCISE IN OUT
       python3 array_bench_peers.py check EXERCISE IN CHUNKCTL_OUT [CDO_OUT...]

The exercises (see array_bench.sh for the data and chunkctl's commands):

  mean      clim.h5:/tas (365 x 360 x 720 float32) .mean(axis=0)
  quantile  the quantiles 0.05, 0.5, 0.95 of clim.h5:/tas along axis 0
            (NumPy's default "linear" method)
  cumsum    x.h5:/x (5000 x 5000 float64) .cumsum(axis=0)
  convolve  scipy.ndimage.convolve(x, W, mode="reflect"), W = the 5 x 5
            kernel [[1..5], [6..10], ..., [21..25]] (not symmetric, so
            convolve and correlate differ)
  coarsen   the mean of each 4 x 4 block of x (output 1250 x 1250)
  uniform   scipy.ndimage.uniform_filter(x, size=101) (mode "reflect", the
            default): the mean of the 101 x 101 box around each value
  gaussian  scipy.ndimage.gaussian_filter(x, sigma=8) (mode "reflect",
            truncate 4: radius int(4 * 8 + 0.5) = 32, 65 taps per axis)

numpy: h5py loads the whole dataset, NumPy/SciPy compute in memory, h5py
writes the result to OUT:/r (contiguous, no filters).
dask: da.from_array(dset, chunks=dset.chunks) (the chunks as stored), the
threaded scheduler with num_workers=2; the result is written to OUT:/r
(small results: computed, then h5py; array results: to_hdf5, dask's chunks):
  mean      x.mean(axis=0)
  quantile  dask.array has no quantile along an axis (da.percentile is 1-D
            and approximate; no da.quantile/nanquantile in this dask), so the
            row does what dask users do: rechunk to whole columns in time,
            x.rechunk((-1, 40, 720)) (9 blocks of 42 MB), then
            map_blocks(np.quantile(b, Q, axis=0)): exact, same method as NumPy
  cumsum    da.cumsum(x, axis=0)
  convolve  x.map_overlap(scipy.ndimage.convolve, depth=2, boundary="reflect",
            weights=W, mode="reflect")
  coarsen   da.coarsen(np.mean, x, {0: 4, 1: 4})
  uniform   x.map_overlap(scipy.ndimage.uniform_filter, depth=50,
            boundary="reflect", size=101, mode="reflect")
  gaussian  x.map_overlap(scipy.ndimage.gaussian_filter, depth=32,
            boundary="reflect", sigma=8, mode="reflect")

check computes the exercise with NumPy/SciPy (in float64 for the float32
mean) and compares chunkctl's output (and CDO's outputs, and dask's where it
can differ) with it; it prints one line, "PASS ..." or "FAIL ...", and exits
1 on FAIL.  The timed modes print nothing.
"""
import sys

import h5py
import numpy as np

Q = [0.05, 0.5, 0.95]
W = np.arange(1, 26, dtype=np.float64).reshape(5, 5)   # chunkctl: --weights "$WEIGHTS" (array_bench.sh)
SIZE, SIGMA = 101, 8.0     # chunkctl: --size "$SIZE", --sigma "$SIGMA" (array_bench.sh)
# map_overlap's depth for the stencils: the kernel's radius (gaussian:
# SciPy's int(truncate * sigma + 0.5) with the default truncate 4)
DEPTH = {"convolve": W.shape[0] // 2, "uniform": SIZE // 2, "gaussian": int(4 * SIGMA + 0.5)}
DASK = dict(scheduler="threads", num_workers=2)
CLIM_SHAPE = (365, 360, 720)


def make_clim(path):
    """A netCDF-4 file (written by netCDF4-python, so CDO reads it as netCDF
    and chunkctl/h5py as HDF5): tas(time, lat, lon) float32 in K, chunks
    1 x 360 x 720, zlib level 1 + shuffle, with time/lat/lon coordinates.
    Values: a smooth climate (latitude profile, seasonal cycle, a fixed
    land-sea pattern), smooth daily weather (a 19 x 37 random field
    upsampled) and 0.3 K of white noise; seed 13."""
    import netCDF4
    from scipy import ndimage
    nt, ny, nx = CLIM_SHAPE
    rng = np.random.default_rng(13)
    lat = np.linspace(-89.75, 89.75, ny)
    lon = np.linspace(0.25, 359.75, nx)
    phi = np.deg2rad(lat)[:, None]
    base = 253.0 + 45.0 * np.cos(phi) ** 2 + np.zeros((1, nx))
    base += ndimage.zoom(rng.normal(0, 4, (19, 37)), (ny / 19, nx / 37), order=1)
    d = netCDF4.Dataset(path, "w", format="NETCDF4")
    d.createDimension("time", nt)
    d.createDimension("lat", ny)
    d.createDimension("lon", nx)
    t = d.createVariable("time", "f8", ("time",))
    t.units, t.calendar, t.standard_name = "days since 2000-01-01 00:00:00", "365_day", "time"
    t[:] = np.arange(nt) + 0.5
    for name, vals, units in (("lat", lat, "degrees_north"), ("lon", lon, "degrees_east")):
        c = d.createVariable(name, "f8", (name,))
        c.units, c.standard_name = units, {"lat": "latitude", "lon": "longitude"}[name]
        c[:] = vals
    v = d.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=1, shuffle=True,
                         chunksizes=(1, ny, nx))
    v.units, v.standard_name, v.long_name = "K", "air_temperature", "near-surface air temperature"
    d.Conventions = "CF-1.8"
    d.title = "chunkctl array_bench synthetic daily tas (seed 13)"
    for i in range(nt):
        season = 15.0 * np.sin(2 * np.pi * (i - 100) / 365.0) * np.sin(phi)
        weather = ndimage.zoom(rng.normal(0, 3, (19, 37)), (ny / 19, nx / 37), order=1)
        v[i] = (base + season + weather + rng.normal(0, 0.3, (ny, nx))).astype(np.float32)
    d.close()


def load(path):
    with h5py.File(path, "r") as f:
        name = "tas" if "tas" in f else "x"
        return f[name][:]


def write(path, a):
    with h5py.File(path, "w") as f:
        f.create_dataset("r", data=a)      # contiguous, no filters


def compute_numpy(ex, x):
    from scipy import ndimage
    if ex == "mean":
        return x.mean(axis=0)
    if ex == "quantile":
        return np.quantile(x, Q, axis=0)
    if ex == "cumsum":
        return np.cumsum(x, axis=0)
    if ex == "convolve":
        return ndimage.convolve(x, W, mode="reflect")
    if ex == "coarsen":
        n, m = x.shape
        return x.reshape(n // 4, 4, m // 4, 4).mean(axis=(1, 3))
    if ex == "uniform":
        return ndimage.uniform_filter(x, size=SIZE)
    if ex == "gaussian":
        return ndimage.gaussian_filter(x, sigma=SIGMA)
    raise SystemExit("array_bench_peers: unknown exercise " + ex)


def run_numpy(ex, src, dst):
    write(dst, compute_numpy(ex, load(src)))


def dask_graph(ex, src):
    import dask.array as da
    f = h5py.File(src, "r")
    d = f["tas"] if "tas" in f else f["x"]
    x = da.from_array(d, chunks=d.chunks)
    if ex == "mean":
        return x.mean(axis=0), True
    if ex == "quantile":
        y = x.rechunk((-1, 40, x.shape[2]))
        dt = np.quantile(np.zeros((2, 1, 1), x.dtype), Q, axis=0).dtype
        return y.map_blocks(lambda b: np.quantile(b, Q, axis=0), chunks=((len(Q),),) + y.chunks[1:],
                            dtype=dt), True
    if ex == "cumsum":
        return da.cumsum(x, axis=0), False
    if ex == "convolve":
        from scipy import ndimage
        return x.map_overlap(ndimage.convolve, depth=DEPTH[ex], boundary="reflect", dtype=x.dtype,
                             weights=W, mode="reflect"), False
    if ex == "coarsen":
        return da.coarsen(np.mean, x, {0: 4, 1: 4}), False
    if ex == "uniform":
        from scipy import ndimage
        return x.map_overlap(ndimage.uniform_filter, depth=DEPTH[ex], boundary="reflect", dtype=x.dtype,
                             size=SIZE, mode="reflect"), False
    if ex == "gaussian":
        from scipy import ndimage
        return x.map_overlap(ndimage.gaussian_filter, depth=DEPTH[ex], boundary="reflect", dtype=x.dtype,
                             sigma=SIGMA, mode="reflect"), False
    raise SystemExit("array_bench_peers: unknown exercise " + ex)


def run_dask(ex, src, dst):
    import dask
    r, small = dask_graph(ex, src)
    if small:
        write(dst, r.compute(**DASK))
    else:
        with dask.config.set(**DASK):
            r.to_hdf5(dst, "/r")


def read_out(spec):
    path, name = spec.rsplit(":", 1)
    with h5py.File(path, "r") as f:
        return f[name][()]


def read_cdo(path):
    import netCDF4
    with netCDF4.Dataset(path) as d:
        return np.asarray(d["tas"][:].filled(np.nan))


def errs(got, want):
    """(max abs error, max error relative to max |want|) in float64."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    a = float(np.max(np.abs(got - want)))
    return a, a / float(np.max(np.abs(want)))


def check(ex, src, outs):
    """One line comparing chunkctl's output (PATH:/DATASET) with NumPy/SciPy."""
    x = load(src)
    # uniform: SciPy's uniform_filter1d keeps a running sum along each line,
    # so its values carry rounding from the start of the line and a window
    # summed afresh may differ from them by more than an ulp (~4e-15 here)
    tol = {"mean": 1e-6, "quantile": 1e-6, "cumsum": 1e-12, "convolve": 1e-12, "coarsen": 1e-12,
           "uniform": 1e-12, "gaussian": 1e-13}[ex]
    if ex == "mean":
        want = x.astype(np.float64).mean(axis=0)      # the exact-ish reference
    else:
        want = compute_numpy(ex, x)
    try:
        got = read_out(outs[0])
    except Exception as e:                            # noqa: BLE001 (the output is what we check)
        return False, "%s: chunkctl's output %s unreadable: %s" % (ex, outs[0], e)
    if got.shape != want.shape:
        return False, "%s: chunkctl's output has shape %s, NumPy's %s" % (ex, got.shape, want.shape)
    a, r = errs(got, want)
    ok = r <= tol
    line = "%s: chunkctl %s vs %s: max abs err %.3g, relative to max|ref| %.2e (limit %g)%s" % (
        ex, got.dtype, "NumPy in float64 (x.astype(float64).mean(axis=0))" if ex == "mean" else
        {"quantile": "np.quantile(x, [0.05, 0.5, 0.95], axis=0) (linear)", "cumsum": "np.cumsum(x, axis=0)",
         "convolve": "scipy.ndimage.convolve(x, W, mode='reflect')",
         "coarsen": "x.reshape(1250, 4, 1250, 4).mean(axis=(1, 3))",
         "uniform": "scipy.ndimage.uniform_filter(x, size=%d) (mode 'reflect')" % SIZE,
         "gaussian": "scipy.ndimage.gaussian_filter(x, sigma=%g) (mode 'reflect')" % SIGMA}[ex],
        a, r, tol, "; bit-identical" if got.dtype == want.dtype and np.array_equal(got, want) else "")
    if ex == "mean":
        a2, r2 = errs(x.mean(axis=0), want)
        line += "; NumPy's own float32 x.mean(axis=0): %.3g / %.2e" % (a2, r2)
    if ex == "quantile" and not ok:
        bad = np.abs(got.astype(np.float64) - want) > 0
        line += "; %d of %d values differ" % (int(bad.sum()), bad.size)
    if ex in ("mean", "quantile") and len(outs) > 1:
        # CDO: timmean in double, written as float32; timpctl from a
        # CDO_PCTL_NBINS-bin histogram between timmin and timmax (approximate)
        cdo = [read_cdo(p) for p in outs[1:]]
        c = np.concatenate(cdo, axis=0) if ex == "quantile" else cdo[0][0]
        if c.shape == want.shape:
            a3, r3 = errs(c, want)
            line += "; CDO %s: %.3g / %.2e" % ("timpctl,5/50/95" if ex == "quantile" else "timmean", a3, r3)
            if ex == "quantile":
                line += " (mean abs err %.3g K)" % float(np.mean(np.abs(c.astype(np.float64) - want)))
        else:
            line += "; CDO's output has shape %s" % (c.shape,)
    if ex in DEPTH:
        # dask's boundary="reflect" (pads with the mirror image including the
        # edge value: d c b a | a b c d) against scipy's mode="reflect" (the same rule)
        import dask.array as da  # noqa: F401  (dask_graph imports it)
        r, _ = dask_graph(ex, src)
        dk = r.compute(**DASK)
        e_all = errs(dk, want)[0]
        k = DEPTH[ex]
        d = np.abs(dk - want)
        inner = d[k:-k, k:-k].max()
        border = max(d[:k].max(), d[-k:].max(), d[:, :k].max(), d[:, -k:].max())
        line += ("; dask map_overlap(boundary='reflect') vs scipy mode='reflect': max abs diff %.3g "
                 "(interior %.3g, the %d-wide border %.3g)" % (e_all, inner, k, border))
    return ok, line


def main(argv):
    mode = argv[1]
    if mode == "make-clim":
        make_clim(argv[2])
        return 0
    ex, src = argv[2], argv[3]
    if mode == "numpy":
        run_numpy(ex, src, argv[4])
    elif mode == "dask":
        run_dask(ex, src, argv[4])
    elif mode == "check":
        ok, line = check(ex, src, argv[4:])
        print(("PASS " if ok else "FAIL ") + line)
        return 0 if ok else 1
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
