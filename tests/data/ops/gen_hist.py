#!/usr/bin/python3
"""Writes hist_cases.txt: histograms computed by NumPy (1.24) for
tests/ops/test_hist.c.  Run with Debian's /usr/bin/python3; seed 20240602.

Floats are written with float.hex() (exact); one record per line:
  hist <dtype> <nbins> <lo> <hi> <weighted> <n> | data ... | [weights ...]
      | edges ... | counts ... | density ...
  histe <dtype> <nedges> <n> | data ... | edges ... | counts ... | density ...
  hist2d <dtype> <nx> <ny> <xlo> <xhi> <ylo> <yhi> <weighted> <n> | x ...
      | y ... | [weights ...] | counts ... | density ...
Fields after '|' start with their name (data, weights, edges, ...).
"""
import numpy as np

rng = np.random.default_rng(20240602)


def h(v):
    return float(v).hex()


def vals(a):
    if a.dtype.kind == "f":
        return " ".join(h(v) for v in a)
    return " ".join(str(int(v)) for v in a)


def sample(dtype, lo, hi, nbins, n=250):
    """Random values over a slightly wider range, plus every edge (as the
    data type and as float64 rounded to it) and its float neighbours."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, int(lo) - 3),
                            min(info.max, int(hi) + 3), n, endpoint=True,
                            dtype=dtype)
    span = hi - lo if hi > lo else 1.0
    a = rng.uniform(lo - 0.1 * span, hi + 0.1 * span, n).astype(dtype)
    e64 = np.linspace(lo if lo != hi else lo - .5, hi if lo != hi else hi + .5,
                      nbins + 1)
    e = np.concatenate([e64, np.histogram(np.zeros(1, dtype), nbins,
                                          (lo, hi))[1].astype(np.float64)])
    ed = e.astype(dtype)
    extra = np.concatenate([ed, np.nextafter(ed, np.inf, dtype=dtype),
                            np.nextafter(ed, -np.inf, dtype=dtype),
                            np.array([np.nan, np.inf, -np.inf], dtype)])
    a = np.concatenate([a, extra.astype(dtype)])
    rng.shuffle(a)
    return a


lines = []
ranges = [(-9.0, 11.0, 7), (0.0, 1.0, 10), (-1e-3, 1e-3, 13), (0.1, 0.7, 3),
          (5.0, 5.0, 4), (-1.0, 3.0, 1), (0.3, 0.3000002, 5),
          (-2.5, 1e6, 199)]
for dtype in ["float32", "float64"]:
    for lo, hi, nb in ranges:
        for weighted in (0, 1):
            a = sample(dtype, lo, hi, nb)
            w = rng.uniform(0, 2, a.size) if weighted else None
            c, e = np.histogram(a, nb, (lo, hi), weights=w)
            d, _ = np.histogram(a, nb, (lo, hi), weights=w, density=True)
            assert e.dtype == np.dtype(dtype)
            rec = "hist %s %d %s %s %d %d | data %s" % (
                dtype, nb, h(lo), h(hi), weighted, a.size, vals(a))
            if weighted:
                rec += " | weights " + vals(w)
            rec += " | edges %s | counts %s | density %s" % (
                vals(e), vals(c.astype(float)), vals(d))
            lines.append(rec)
# float32 data with a range beyond float32: the bins turn float64
a = sample("float32", -1.0, 3.0, 5)
c, e = np.histogram(a, 5, (-1e300, 1e300))
d, _ = np.histogram(a, 5, (-1e300, 1e300), density=True)
assert e.dtype == np.float64
lines.append("hist float32 5 %s %s 0 %d | data %s | edges %s | counts %s "
             "| density %s" % (h(-1e300), h(1e300), a.size, vals(a), vals(e),
                               vals(c.astype(float)), vals(d)))
for dtype, lo, hi, nb in [("int16", -9.0, 11.0, 7), ("uint8", 0.0, 255.0, 17),
                          ("int64", -100.0, 100.0, 6),
                          ("uint16", 3.0, 3.0, 2)]:
    a = sample(dtype, lo, hi, nb)
    c, e = np.histogram(a, nb, (lo, hi))
    d, _ = np.histogram(a, nb, (lo, hi), density=True)
    lines.append("hist %s %d %s %s 0 %d | data %s | edges %s | counts %s | "
                 "density %s" % (dtype, nb, h(lo), h(hi), a.size, vals(a),
                                 vals(e), vals(c.astype(float)), vals(d)))

# explicit edges, some repeated
for dtype, edges in [("float64", [-3.0, -1.0, 0.0, 0.5, 0.5, 2.0, 7.0]),
                     ("float32", [0.1, 0.2, 0.30000001192092896, 1.0]),
                     ("int32", [-5.0, -4.5, 0.0, 3.0, 3.0, 3.0, 10.0])]:
    edges = np.array(edges)
    if dtype == "int32":
        a = rng.integers(-8, 13, 500).astype(dtype)
    else:
        a = rng.uniform(edges[0] - 1, edges[-1] + 1, 500).astype(dtype)
        a = np.concatenate([a, edges.astype(dtype), [np.nan]]).astype(dtype)
    c, _ = np.histogram(a, edges)
    with np.errstate(all="ignore"):
        d, _ = np.histogram(a, edges, density=True)
    lines.append("histe %s %d %d | data %s | edges %s | counts %s | density "
                 "%s" % (dtype, edges.size, a.size, vals(a), vals(edges),
                         vals(c.astype(float)), vals(d)))

# histogram2d: float64 edges whatever the data
for dtype, nx, ny, xr, yr in [("float32", 5, 3, (-1.0, 1.0), (0.0, 0.3)),
                              ("float64", 4, 6, (-9.0, 11.0), (0.1, 0.7))]:
    for weighted in (0, 1):
        ex = np.linspace(xr[0], xr[1], nx + 1)
        ey = np.linspace(yr[0], yr[1], ny + 1)
        x = rng.uniform(xr[0] - .2, xr[1] + .2, 400)
        y = rng.uniform(yr[0] - .05, yr[1] + .05, 400)
        x = np.concatenate([x, np.repeat(ex, ey.size), [np.nan, 0]])
        y = np.concatenate([y, np.tile(ey, ex.size), [0.2, np.nan]])
        x, y = x.astype(dtype), y.astype(dtype)
        w = rng.uniform(0, 2, x.size) if weighted else None
        c, _, _ = np.histogram2d(x, y, [nx, ny], [xr, yr], weights=w)
        d, _, _ = np.histogram2d(x, y, [nx, ny], [xr, yr], weights=w,
                                 density=True)
        rec = "hist2d %s %d %d %s %s %s %s %d %d | x %s | y %s" % (
            dtype, nx, ny, h(xr[0]), h(xr[1]), h(yr[0]), h(yr[1]), weighted,
            x.size, vals(x), vals(y))
        if weighted:
            rec += " | weights " + vals(w)
        rec += " | counts %s | density %s" % (vals(c.ravel()),
                                             vals(d.ravel()))
        lines.append(rec)

with open("hist_cases.txt", "w") as fh:
    fh.write("\n".join(lines) + "\n")
print(len(lines), "records")
