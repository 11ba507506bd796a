"""The NumPy and dask sides of pipeline_bench.sh, and its correctness checks.

usage: python3 pipeline_bench_peers.py numpy|dask EXERCISE IN [OUT]
       python3 pipeline_bench_peers.py check EXERCISE IN CHUNKCTL_OUT...
       python3 pipeline_bench_peers.py dask-fails EXERCISE IN OUT

IN is an HDF5 file holding the dataset /x.  The exercises (see
pipeline_bench.sh for the data):

  ex1   y = x + 1; 100-bin histogram of y[y < 10] over [-9, 11]
  ex2   x.mean(), x.sum(axis=0), x.std()
  ex3a  x.reshape(5000, 1000, 5) written to OUT (HDF5, /y, uncompressed)
  ex3b  x.reshape(1000, 5000, 5) written to OUT (HDF5, /y, uncompressed)
  ex4   100-bin histogram of x over [HIST4_LOW, HIST4_HIGH] (env, default -4, 4)

numpy loads the whole dataset with h5py, then computes.  dask wraps the
h5py dataset with da.from_array(dset, chunks=dset.chunks) and computes on
the threaded scheduler with num_workers=2.  The timed modes print nothing.

check computes the exercise with NumPy and compares chunkctl's outputs
(histogram counts exactly, reductions to 1e-12 relative, reshapes
bit-identical); it prints one line, "PASS ..." or "FAIL ...", and exits 1
on FAIL.  dask-fails runs the dask side once and prints "ok" or
"fails: ErrorType: message" (for exercises dask cannot do).
"""
import os
import sys

import h5py
import numpy as np

HIST1 = dict(bins=100, range=(-9, 11))
HIST4 = dict(bins=100, range=(float(os.environ.get("HIST4_LOW", "-4")),
                              float(os.environ.get("HIST4_HIGH", "4"))))
SHAPES = {"ex3a": (5000, 1000, 5), "ex3b": (1000, 5000, 5)}
DASK = dict(scheduler="threads", num_workers=2)


def load(path):
    with h5py.File(path, "r") as f:
        return f["x"][:]


def write(path, a):
    with h5py.File(path, "w") as f:
        f.create_dataset("y", data=a)      # contiguous, no filters


def run_numpy(ex, src, dst=None):
    x = load(src)
    if ex == "ex1":
        y = x + 1
        return np.histogram(y[y < 10], **HIST1)[0]
    if ex == "ex2":
        return x.mean(), x.sum(axis=0), x.std()
    if ex in SHAPES:
        write(dst, x.reshape(SHAPES[ex]))
        return None
    if ex == "ex4":
        return np.histogram(x, **HIST4)[0]
    raise SystemExit("pipeline_bench_peers: unknown exercise " + ex)


def run_dask(ex, src, dst=None):
    import dask
    import dask.array as da
    f = h5py.File(src, "r")
    d = f["x"]
    x = da.from_array(d, chunks=d.chunks)
    if ex == "ex1":
        y = x + 1
        h, _ = da.histogram(y[y < 10], **HIST1)
        return h.compute(**DASK)
    if ex == "ex2":
        return da.compute(x.mean(), x.sum(axis=0), x.std(), **DASK)
    if ex in SHAPES:
        with dask.config.set(**DASK):
            x.reshape(SHAPES[ex]).to_hdf5(dst, "/y")
        return None
    if ex == "ex4":
        h, _ = da.histogram(x, **HIST4)
        return h.compute(**DASK)
    raise SystemExit("pipeline_bench_peers: unknown exercise " + ex)


def read_out(spec):
    path, name = spec.rsplit(":", 1)
    with h5py.File(path, "r") as f:
        return f[name][()]


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = np.maximum(np.abs(want), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(got - want) / scale))


def check(ex, src, outs):
    """One line comparing chunkctl's outputs (PATH:/DATASET) with NumPy."""
    if ex in ("ex1", "ex4"):
        want = run_numpy(ex, src)
        got = read_out(outs[0])
        ok = got.dtype == np.int64 and got.shape == want.shape and np.array_equal(got, want)
        diff = int(np.count_nonzero(got != want)) if got.shape == want.shape else -1
        line = "%s histogram: %d bins, %d values counted; chunkctl vs NumPy: %s (%d bins differ, dtype %s)" % (
            ex, want.size, int(want.sum()), "identical counts" if ok else "DIFFERENT", diff, got.dtype)
        if ex == "ex4":
            dk = run_dask(ex, src)
            line += "; dask (float64 edges) vs NumPy (float32 edges): %d bins differ, %d values moved" % (
                int(np.count_nonzero(dk != want)), int(np.abs(dk - want).sum()) // 2)
        return ok, line
    if ex == "ex2":
        x = load(src)
        want = (x.mean(), x.sum(axis=0), x.std())
        del x
        got = [read_out(o) for o in outs]
        errs = [rel_err(g, w) for g, w in zip(got, want)]
        shapes_ok = all(np.shape(g) == np.shape(w) for g, w in zip(got, want))
        ok = shapes_ok and max(errs) <= 1e-12
        line = ("ex2 reductions vs NumPy: mean rel err %.2e, sum(axis=0) %s (max rel err %.1e, dtype %s), "
                "std rel err %.2e (limit 1e-12)" % (
                    errs[0], "exact" if np.array_equal(got[1], want[1]) else "not exact",
                    errs[1], got[1].dtype, errs[2]))
        if np.issubdtype(want[1].dtype, np.integer):
            # Integer data: the exact mean and std from exact integer sums.
            from decimal import Decimal, getcontext
            getcontext().prec = 50
            f = load(src).reshape(-1)
            n, s1, s2 = f.size, int(f.sum()), 0
            for i in range(0, n, 1 << 24):
                b = f[i:i + (1 << 24)]
                s2 += int((b * b).sum())
            mean = Decimal(s1) / n
            std = (Decimal(n * s2 - s1 * s1) / (n * n)).sqrt()

            def ex_err(v, ref):
                return float(abs((Decimal(float(v)) - ref) / ref))
            line += ("; vs the exact values (from integer sums): mean NumPy %.1e / chunkctl %.1e, "
                     "std NumPy %.1e / chunkctl %.1e" % (
                         ex_err(want[0], mean), ex_err(got[0], mean), ex_err(want[2], std), ex_err(got[2], std)))
        return ok, line
    if ex in SHAPES:
        want = load(src).reshape(SHAPES[ex])
        got = read_out(outs[0])
        ok = got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
        return ok, "%s reshape to %s: chunkctl's output %s NumPy's x.reshape (%s, %s)" % (
            ex, SHAPES[ex], "is bit-identical to" if ok else "DIFFERS from", got.shape, got.dtype)
    raise SystemExit("pipeline_bench_peers: unknown exercise " + ex)


def main(argv):
    mode, ex, src = argv[1], argv[2], argv[3]
    if mode == "numpy":
        run_numpy(ex, src, argv[4] if len(argv) > 4 else None)
    elif mode == "dask":
        run_dask(ex, src, argv[4] if len(argv) > 4 else None)
    elif mode == "dask-fails":
        try:
            run_dask(ex, src, argv[4] if len(argv) > 4 else None)
            print("ok")
        except Exception as e:          # what failed is the result here
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print("fails: %s: %s" % (type(e).__name__, msg[:160]))
    elif mode == "check":
        ok, line = check(ex, src, argv[4:])
        print(("PASS " if ok else "FAIL ") + line)
        return 0 if ok else 1
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
