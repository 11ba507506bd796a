"""cf_bench.sh's helpers: the file with missing values, and the untimed
check of every tool's time mean against NumPy.

usage: python3 cf_bench_peers.py make-miss CLIM.nc OUT.nc
       python3 cf_bench_peers.py check CASE IN.nc CK.nc CKRAW.nc CDO.nc NCO.nc

  make-miss  a copy of CLIM.nc (array_bench_peers.py make-clim) whose tas
             has _FillValue 1e20f (CF's usual, as CMIP files have) at 10% of
             its values, drawn at random (seed 15), written by netCDF4-python
             with the same chunks (1 x 360 x 720), zlib 1 + shuffle and
             attributes, and the same coordinate variables
  check      one line per tool: its time mean against NumPy's, computed in
             float64 from the values netCDF4-python decodes (masked -> NaN,
             np.nanmean); max error in float32 ulps of the reference, and
             whether the missing results are in the same places.  An output
             that does not exist reads "not run".
"""
import sys

import numpy as np

SEED = 15
FRACTION = 0.10
FILL = np.float32(1e20)


def make_miss(src, dst):
    import netCDF4
    rng = np.random.default_rng(SEED)
    with netCDF4.Dataset(src) as s, netCDF4.Dataset(dst, "w", format="NETCDF4") as d:
        d.setncatts({k: s.getncattr(k) for k in s.ncattrs()})
        d.title = s.title + "; 10%% of tas missing (_FillValue 1e20, seed %d)" % SEED
        for n, dim in s.dimensions.items():
            d.createDimension(n, len(dim))
        for n, v in s.variables.items():
            if n == "tas":
                continue
            c = d.createVariable(n, v.dtype, v.dimensions)
            c.setncatts({k: v.getncattr(k) for k in v.ncattrs()})
            c[:] = v[:]
        v = s.variables["tas"]
        t = d.createVariable("tas", "f4", v.dimensions, zlib=True, complevel=1, shuffle=True,
                             chunksizes=v.chunking(), fill_value=FILL)
        t.setncatts({k: v.getncattr(k) for k in v.ncattrs() if k != "_FillValue"})
        for i in range(v.shape[0]):
            x = v[i]
            t[i] = np.ma.array(x, mask=rng.random(x.shape) < FRACTION)


def ulps(got, ref):
    sp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    both = np.isnan(got) & np.isnan(ref)
    return np.where(both, 0, np.abs(got - ref) / sp)


def read_mean(path):
    """The time mean in PATH (netCDF4-python, masked -> NaN), as float64
    (lat, lon); CDO's has a time axis of length 1."""
    import netCDF4
    with netCDF4.Dataset(path) as d:
        v = d.variables["tas"]
        a = np.ma.filled(v[:].astype(np.float64), np.nan)
        return a.reshape(a.shape[-2:]), v.dtype


def check(case, src, outs):
    import netCDF4
    import os
    with netCDF4.Dataset(src) as d:
        v = d.variables["tas"]
        nt = v.shape[0]
        ref = np.zeros(v.shape[1:], np.float64)
        cnt = np.zeros(v.shape[1:], np.int64)
        raw = np.zeros(v.shape[1:], np.float64)
        for i in range(v.shape[0]):
            x = v[i]
            ref += np.ma.filled(x.astype(np.float64), 0)
            cnt += ~np.ma.getmaskarray(x)
            raw += np.ma.getdata(x).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ref /= cnt
    ref[cnt == 0] = np.nan
    raw_ref = raw / nt
    lines = []
    ok = True
    names = ("chunkctl (CF decoding)", "chunkctl --raw", "cdo timmean", "ncwa -a time")
    for name, path in zip(names, outs):
        if not os.path.exists(path):
            lines.append("%s: not run" % name)
            continue
        got, dt = read_mean(path)
        want = raw_ref if name.endswith("--raw") else ref
        u = ulps(got, want)
        same_nan = bool(np.array_equal(np.isnan(got), np.isnan(want)))
        worst = float(np.nanmax(u))
        # chunkctl is held to 1 ulp (a float64 sum rounded once); CDO's
        # and NCO's errors are reported, not judged
        peer = name.startswith(("cdo", "ncwa"))
        good = same_nan and worst <= 1.0
        ok &= good or peer
        lines.append("%s %s %s: %s, max err %.2f ulp of float32%s, missing results %s" % (
            "INFO" if peer else "PASS" if good else "FAIL", case, name, dt, worst,
            "" if peer else " (limit 1)", "in the same places" if same_nan else "DIFFER"))
    lines.append("     %s reference: %d of %d values missing, %d all-missing columns" % (
        case, int(nt * cnt.size - cnt.sum()), nt * cnt.size, int((cnt == 0).sum())))
    return ok, lines


def main(argv):
    if len(argv) >= 4 and argv[1] == "make-miss":
        make_miss(argv[2], argv[3])
        return 0
    if len(argv) >= 5 and argv[1] == "check":
        ok, lines = check(argv[2], argv[3], argv[4:])
        print("\n".join(lines))
        return 0 if ok else 1
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
