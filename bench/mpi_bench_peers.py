"""The dask.distributed side of mpi_bench.sh, and its correctness checks.

usage: python3 mpi_bench_peers.py dask ROW DATA [RESULT.npz]
       python3 mpi_bench_peers.py check ROW DATA CHECKDIR

DATA is mpi_bench.sh's data directory (A.h5:/x, H.h5:/x, D.h5:/x, E.h5:/X,
Ey.h5:/y).  The rows (see mpi_bench.sh):

  a  x.sum(axis=0) of A
  b  x.mean() and x.std() of A (one compute)
  c  da.histogram(x, bins=100, range=(HIST_LOW, HIST_HIGH)) of H (env,
     default -4, 4)
  d  da.linalg.svd(x) of D (tsqr: D has one chunk column); s and v computed,
     u not
  e  logistic regression of y on X (E, Ey) with an intercept, no penalty, by
     Newton's method written with dask.array: per iteration one compute of the
     gradient and the Hessian of the mean loss (X.T @ (p - y), X.T @ (X * w),
     their intercept parts), the step solved with NumPy; until the largest
     gradient entry is below GLM_TOL (env, default 1e-12: chunkctl's --tol
     measure, given to chunkctl too) or 50 steps.  X and y are persisted in the workers first (chunkctl's
     glm-fit likewise keeps X in memory when it fits).
  none  the cluster starts and stops, nothing is computed (the floor)

dask: a distributed.LocalCluster(n_workers=2, threads_per_worker=1,
processes=True) and its Client, started inside this process (whose wall time
mpi_bench.sh measures).  The arrays are dask.array.from_array over a small
reader that opens the HDF5 file with h5py in the worker and reads the block
asked for (h5py datasets cannot be sent to other processes), with the
file's chunks.  When the environment names MPIB_PHASE, one line goes there:
start_s (process start to cluster up, imports included), compute_s (graph
built + computed, results in this process), stop_s (shut-down),
rss_sum_kib (peak of the summed RSS of this process and all its
descendants, sampled every 0.1 s with psutil), rss_max_worker_kib (the
largest worker's own peak, getrusage), rss_client_kib (this process's).
With RESULT.npz the results are saved there for check.

check compares, for ROW, chunkctl's outputs under CHECKDIR/{r1t1,r2t1,r1t2}
(files as mpi_bench.sh's check runs write them) and dask's RESULT.npz
(CHECKDIR/dask.ROW.npz): 2 ranks and 2 threads against 1 rank x 1 thread
(the same bytes, or the largest relative difference when not), and dask
against chunkctl 1 x 1 (relative difference <= 1e-9: the largest absolute
difference over the largest magnitude of chunkctl's values; histogram counts
exactly).  It prints one line, "PASS ..." or "FAIL ...".
"""
import json
import os
import sys
import time

T_START = time.time()

import h5py  # noqa: E402
import numpy as np  # noqa: E402

HIST = dict(bins=100, range=(float(os.environ.get("HIST_LOW", "-4")), float(os.environ.get("HIST_HIGH", "4"))))
TOL = 1e-9
GLM_TOL = float(os.environ.get("GLM_TOL", "1e-12"))   # chunkctl glm-fit --tol, the same
CONFIGS = ("r1t1", "r2t1", "r1t2")


class H5Block:
    """What dask.array.from_array needs of an HDF5 dataset (shape, dtype,
    ndim, __getitem__), picklable: each read opens the file in the process
    that reads."""

    def __init__(self, path, name):
        with h5py.File(path, "r") as f:
            d = f[name]
            self.shape, self.dtype, self.chunks = d.shape, d.dtype, d.chunks
        self.ndim = len(self.shape)
        self.path, self.name = path, name

    def __getitem__(self, idx):
        with h5py.File(self.path, "r") as f:
            return f[self.name][idx]


def from_h5(da, path, name):
    src = H5Block(path, name)
    return da.from_array(src, chunks=src.chunks, lock=False, asarray=True, name="h5-" + os.path.basename(path) + name)


def worker_maxrss():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class TreeRSS:
    """The peak of the summed RSS of this process and its descendants."""

    def __init__(self, period=0.1):
        import threading
        import psutil
        self.psutil, self.me, self.peak, self.period = psutil, psutil.Process(), 0, period
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            total = 0
            for p in [self.me] + self.me.children(recursive=True):
                try:
                    total += p.memory_info().rss
                except self.psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self.stop.wait(self.period)

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.peak // 1024


def newton_logistic(da, X, y, tol=GLM_TOL, max_iter=50):
    """Logistic regression with an intercept by Newton's method on the mean
    loss; every pass over X computes the gradient and the Hessian together.
    Stops, as chunkctl glm-fit does, when the largest gradient entry is
    below tol; returns the coefficients, the intercept and the steps taken."""
    n, p = X.shape
    w, c = np.zeros(p), 0.0
    steps = 0
    while True:
        eta = X @ w + c
        pr = 1.0 / (1.0 + da.exp(-eta))
        r = pr - y
        wt = pr * (1.0 - pr)
        g_w, g_c, h_ww, h_wc, h_cc = da.compute(X.T @ r, r.sum(), (X * wt[:, None]).T @ X, X.T @ wt, wt.sum())
        g = np.concatenate([g_w, [g_c]]) / n
        if np.max(np.abs(g)) < tol or steps == max_iter:
            break
        h = np.empty((p + 1, p + 1))
        h[:p, :p], h[:p, p], h[p, :p], h[p, p] = h_ww, h_wc, h_wc, h_cc
        h /= n
        step = np.linalg.solve(h, g)
        w, c = w - step[:p], c - step[p]
        steps += 1
    return w, c, steps


def run_dask(row, data, result=None):
    import dask.array as da
    from distributed import Client, LocalCluster
    rss = TreeRSS()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    t_up = time.time()
    out = {}
    if row == "a":
        x = from_h5(da, os.path.join(data, "A.h5"), "x")
        out["s"] = x.sum(axis=0).compute()
    elif row == "b":
        x = from_h5(da, os.path.join(data, "A.h5"), "x")
        out["mean"], out["std"] = da.compute(x.mean(), x.std())
    elif row == "c":
        x = from_h5(da, os.path.join(data, "H.h5"), "x")
        out["h"] = da.histogram(x, **HIST)[0].compute()
    elif row == "d":
        x = from_h5(da, os.path.join(data, "D.h5"), "x")
        _, s, v = da.linalg.svd(x)
        out["S"], out["Vt"] = da.compute(s, v)
    elif row == "e":
        X = from_h5(da, os.path.join(data, "E.h5"), "X")
        y = from_h5(da, os.path.join(data, "Ey.h5"), "y").rechunk((X.chunks[0],))
        X, y = client.persist([X, y])
        out["coef"], out["intercept"], out["iterations"] = newton_logistic(da, X, y)
    elif row != "none":
        raise SystemExit("mpi_bench_peers: unknown row " + row)
    t_done = time.time()
    workers = client.run(worker_maxrss)
    client.close()
    cluster.close()
    t_end = time.time()
    tree = rss.finish()
    if result:
        np.savez(result, **{k: np.asarray(v) for k, v in out.items()})
    phase = os.environ.get("MPIB_PHASE")
    if phase:
        with open(phase, "a") as f:
            f.write("start_s=%.3f compute_s=%.3f stop_s=%.3f rss_sum_kib=%d rss_max_worker_kib=%d rss_client_kib=%d\n" % (
                t_up - T_START, t_done - t_up, t_end - t_done, tree, max(workers.values()), worker_maxrss()))


# ---------------------------------------------------------------- checks

def rel(a, b):
    """max |a - b| / max |b| (0 when both are all zeros)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    d = float(np.max(np.abs(a - b))) if a.size else 0.0
    return d / scale if scale > 0 else d


def read_h5(path, name):
    with h5py.File(path, "r") as f:
        return f[name][()]


def load_ck(row, d):
    """chunkctl's results for ROW from check directory d, as a dict of arrays."""
    if row == "a":
        return {"s": read_h5(os.path.join(d, "a.h5"), "s")}
    if row == "b":
        j = json.load(open(os.path.join(d, "b.stdout")))
        return {k: np.asarray(j[k]["values"], np.float64).reshape(j[k]["shape"]) for k in ("mean", "std")}
    if row == "c":
        return {"h": read_h5(os.path.join(d, "c.h5"), "h")}
    if row == "d":
        return {"S": read_h5(os.path.join(d, "d.h5"), "S"), "Vt": read_h5(os.path.join(d, "d.h5"), "Vt")}
    if row == "e":
        j = json.load(open(os.path.join(d, "e.stdout")))
        return {"coef": np.asarray(j["coef"], np.float64), "intercept": np.asarray(j["intercept"], np.float64),
                "iterations": np.asarray(j.get("iterations", -1))}
    raise SystemExit("mpi_bench_peers: unknown row " + row)


def same_bytes(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check(row, chk):
    keys = {"a": ["s"], "b": ["mean", "std"], "c": ["h"], "d": ["S", "Vt"], "e": ["coef", "intercept"]}[row]
    parts, ok = [], True
    try:
        ck = {c: load_ck(row, os.path.join(chk, c)) for c in CONFIGS}
    except (OSError, ValueError, KeyError) as e:
        return False, "row %s: chunkctl's outputs missing or unreadable (%s)" % (row, e)
    for c in CONFIGS[1:]:
        same = all(same_bytes(ck[c][k], ck["r1t1"][k]) for k in keys)
        if same:
            parts.append("%s vs 1x1: bit-identical" % c)
        else:
            worst = max(rel(ck[c][k], ck["r1t1"][k]) for k in keys)
            parts.append("%s vs 1x1: NOT bit-identical (max rel diff %.1e)" % (c, worst))
            # (a)-(c) must be bit-identical across ranks; d and e are BLAS
            # sums, which the brief does not require to be
            if row in "abc":
                ok = False
    try:
        dk = dict(np.load(os.path.join(chk, "dask.%s.npz" % row)))
    except OSError as e:
        return False, "row %s: %s; dask's results missing (%s)" % (row, "; ".join(parts), e)
    ref = ck["r1t1"]
    if row == "c":
        diff = int(np.count_nonzero(dk["h"] != ref["h"]))
        parts.append("dask vs chunkctl: %s (%d of %d bins differ, %d values counted)" % (
            "identical counts" if diff == 0 else "DIFFERENT counts", diff, ref["h"].size, int(ref["h"].sum())))
        ok = ok and diff == 0
    else:
        if row == "d":
            # signs: chunkctl makes each row of Vt sum to >= 0; do so for dask
            sg = np.where(dk["Vt"].sum(axis=1) < 0, -1.0, 1.0)
            dk["Vt"] = dk["Vt"] * sg[:, None]
        if row == "e":      # one vector: relative to the largest coefficient
            both = "coef+intercept"
            dk[both] = np.concatenate([dk["coef"], np.atleast_1d(dk["intercept"])])
            ref = dict(ref, **{both: np.concatenate([ref["coef"], np.atleast_1d(ref["intercept"])])})
            keys = [both]
        errs = {k: rel(dk[k], ref[k]) for k in keys}
        worst = max(errs.values())
        parts.append("dask vs chunkctl: max rel diff %s (limit %.0e)" % (
            ", ".join("%s %.1e" % (k, v) for k, v in errs.items()), TOL))
        if row == "e":
            parts.append("Newton iterations: chunkctl %s, dask %s" % (int(ref["iterations"]), int(dk["iterations"])))
        ok = ok and worst <= TOL
    return ok, "row %s: %s" % (row, "; ".join(parts))


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    mode, row, data = argv[1], argv[2], argv[3]
    if mode == "dask":
        run_dask(row, data, argv[4] if len(argv) > 4 else None)
        return 0
    if mode == "check":
        ok, line = check(row, argv[4])
        print(("PASS " if ok else "FAIL ") + line)
        return 0 if ok else 1
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
