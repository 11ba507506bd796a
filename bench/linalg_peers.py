"""The data, the peers (NumPy, dask, SciPy, scikit-learn, statsmodels) and the
correctness checks of linalg_bench.sh.

usage: python3 linalg_peers.py gen KIND PATH --shape R,C --chunks r,c
                               [--seed S] [--name NAME] [--tau T] [--rank N]
       python3 linalg_peers.py run TOOL CASE IN [OUT]
       python3 linalg_peers.py check CASE IN CHUNKCTL_OUT [REFERENCE]
       python3 linalg_peers.py describe

gen writes one HDF5 file with h5py (uncompressed, chunked as asked, row block
by row block so that no more than a block is in memory besides the factors):
  normal    PATH:/NAME  normal(0, 1) float64 (NAME: --name, default A)
  decay     PATH:/C     U diag(s) V^T with s_i = exp(-i / tau), i = 0 .. rank-1,
            U (R x rank) and V (C x rank) orthonormal, the Q factors of
            random normal matrices; rank defaults to min(R, C, 40 tau)
            (s_i < 5e-18 beyond it, below float64 resolution of s_0 = 1)
  logistic  PATH:/X (R x C, normal(0, 1)), PATH:/y (R, 0/1 float64) drawn
            from P(y = 1) = 1 / (1 + exp(-(X w + c))), w_j ~ normal(0, 1.5 /
            sqrt(C)), c = -0.5; w and c kept as attributes coef, intercept of /y

run times nothing itself and prints nothing: linalg_bench.sh times the whole
process.  When LINALG_PHASES names a file, one line is appended to it:
"import load compute write" seconds inside the process ("-" where a phase is
not separate, e.g. dask's lazy load).  CASE and TOOL:
  svd1, svd2  numpy: h5py load, np.linalg.svd(full_matrices=False), h5py
              writes /U /S /Vt;  dask: da.linalg.svd of
              da.from_array(dset, chunks=dset.chunks), da.to_hdf5(U, S, Vt)
  rsvd3       dask: da.linalg.svd_compressed(x, k=10, n_power_iter=2, seed=0),
              da.to_hdf5;  scipy: h5py load, scipy.sparse.linalg.svds(x, k=10,
              random_state=0) (ARPACK), sorted descending, h5py writes U S Vt
  dot4        numpy: h5py load, a @ (a + a.T), h5py writes /C;  dask:
              a.dot(a + a.T) over dset.chunks, da.to_hdf5 /C
  glm         sklearn: h5py load of /X and /y, LogisticRegression(penalty=None,
              solver="lbfgs", max_iter=1000).fit;  statsmodels:
              Logit(y, add_constant(X)).fit(method="newton", disp=0)
dask runs on the threaded scheduler with num_workers=2.

check compares chunkctl's output with NumPy / the reference and prints one
line "PASS ..." or "FAIL ..." (exit 1 on FAIL):
  svd1, svd2  S vs the exact singular values (NumPy's SVD of the R factor of a
              blockwise QR of the input, max rel diff <= 1e-10),
              max |A - U diag(S) Vt| / max |A| <= 1e-10, max |U^T U - I| <= 1e-10
  rsvd3       top-10 S vs NumPy's exact np.linalg.svd(C, compute_uv=False)
              (computed once, cached next to the input as C.S_exact.npy),
              max rel diff <= 1e-6; also dask's and SciPy's, for comparison
  dot4        max |C - a @ (a + a.T)| / max |a @ (a + a.T)| <= 1e-12
  glm         CHUNKCTL_OUT is chunkctl glm-fit's stdout (JSON with "coef" and
              "intercept"); REFERENCE is "statsmodels" (Newton) or "sklearn"
              (lbfgs, tol 1e-10, max_iter 10000; it still stops on SciPy's
              ftol, 64 eps of relative change in the loss: at 10^4 rows it
              was 2e-6 from statsmodels' Newton); max |coef diff| over the
              coefficients and the intercept <= 1e-4 (the benchmark's limit,
              not the issue's); the difference of sklearn with the timed
              settings (tol 1e-4) from the same reference is shown too
"""
import time

T0 = time.perf_counter()

import json      # noqa: E402
import os        # noqa: E402
import sys       # noqa: E402

import h5py      # noqa: E402
import numpy as np  # noqa: E402

DASK = dict(scheduler="threads", num_workers=2)
K3, POWER3 = 10, 2
DSET = {"svd1": "A", "svd2": "B", "rsvd3": "C", "dot4": "A"}

# One-line descriptions of what each peer runs (for the report).
DESCRIBE = {
    "numpy:svd": "x = h5py load; U, S, Vt = np.linalg.svd(x, full_matrices=False); h5py writes /U /S /Vt",
    "dask:svd": "x = da.from_array(dset, chunks=dset.chunks); U, S, Vt = da.linalg.svd(x); "
                "da.to_hdf5(OUT, {'/U': U, '/S': S, '/Vt': Vt}) (threads, 2 workers)",
    "dask:rsvd3": "x = da.from_array(dset, chunks=dset.chunks); U, S, Vt = da.linalg.svd_compressed(x, k=10, "
                  "n_power_iter=2, seed=0); da.to_hdf5(OUT, ...) (threads, 2 workers)",
    "scipy:rsvd3": "x = h5py load; U, S, Vt = scipy.sparse.linalg.svds(x, k=10, random_state=0) (ARPACK); "
                   "sorted descending; h5py writes /U /S /Vt",
    "numpy:dot4": "a = h5py load; c = a @ (a + a.T); h5py writes /C",
    "dask:dot4": "a = da.from_array(dset, chunks=dset.chunks); da.to_hdf5(OUT, '/C', a.dot(a + a.T)) (threads, 2 workers)",
    "sklearn:glm": "X, y = h5py load; LogisticRegression(penalty=None, solver='lbfgs', max_iter=1000).fit(X, y)",
    "statsmodels:glm": "X, y = h5py load; Logit(y, add_constant(X)).fit(method='newton', disp=0)",
}


# ---------------------------------------------------------------- data
def parse_opts(args):
    o = {}
    for i in range(0, len(args), 2):
        o[args[i].lstrip("-")] = args[i + 1]
    return o


def ints(s):
    return tuple(int(v) for v in s.split(","))


def gen(kind, path, opts):
    shape = ints(opts["shape"])
    chunks = ints(opts["chunks"])
    seed = int(opts.get("seed", 0))
    rows, cols = shape
    br = chunks[0]                       # write one chunk row at a time
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        if kind == "normal":
            d = f.create_dataset(opts.get("name", "A"), shape=shape, chunks=chunks, dtype="f8")
            rng = np.random.default_rng(seed)
            for r0 in range(0, rows, br):
                d[r0:r0 + br] = rng.standard_normal((min(br, rows - r0), cols))
        elif kind == "decay":
            tau = float(opts.get("tau", 5))
            rank = int(opts.get("rank", 0)) or min(rows, cols, int(np.ceil(40 * tau)))
            rng = np.random.default_rng(seed)
            u, _ = np.linalg.qr(rng.standard_normal((rows, rank)))
            v, _ = np.linalg.qr(rng.standard_normal((cols, rank)))
            s = np.exp(-np.arange(rank) / tau)
            us = u * s
            d = f.create_dataset("C", shape=shape, chunks=chunks, dtype="f8")
            for r0 in range(0, rows, br):
                d[r0:r0 + br] = us[r0:r0 + br] @ v.T
            d.attrs["s"] = s
            d.attrs["tau"] = tau
        elif kind == "logistic":
            rng = np.random.default_rng(seed)
            w = rng.standard_normal(cols) * 1.5 / np.sqrt(cols)
            c = -0.5
            dx = f.create_dataset("X", shape=shape, chunks=chunks, dtype="f8")
            dy = f.create_dataset("y", shape=(rows,), chunks=(br,), dtype="f8")
            for r0 in range(0, rows, br):
                x = rng.standard_normal((min(br, rows - r0), cols))
                p = 1.0 / (1.0 + np.exp(-(x @ w + c)))
                dx[r0:r0 + br] = x
                dy[r0:r0 + br] = (rng.random(x.shape[0]) < p).astype("f8")
            dy.attrs["coef"] = w
            dy.attrs["intercept"] = c
        else:
            raise SystemExit("linalg_peers: unknown data kind " + kind)
    os.replace(tmp, path)


# ---------------------------------------------------------------- peers
class Phases:
    def __init__(self):
        self.t = time.perf_counter()
        self.v = {"import": "-", "load": "-", "compute": "-", "write": "-"}

    def mark(self, name):
        now = time.perf_counter()
        self.v[name] = "%.6f" % (now - self.t)
        self.t = now

    def save(self):
        path = os.environ.get("LINALG_PHASES")
        if path:
            with open(path, "a") as f:
                f.write(" ".join(self.v[k] for k in ("import", "load", "compute", "write")) + "\n")


def load(path, name):
    with h5py.File(path, "r") as f:
        return f[name][:]


def write(path, **arrays):
    with h5py.File(path, "w") as f:
        for k, a in arrays.items():
            f.create_dataset(k, data=a)      # contiguous, no filters


def run(tool, case, src, dst=None):
    ph = Phases()
    ph.t = T0
    if tool == "numpy" and case in ("svd1", "svd2"):
        ph.mark("import")
        x = load(src, DSET[case])
        ph.mark("load")
        u, s, vt = np.linalg.svd(x, full_matrices=False)
        ph.mark("compute")
        write(dst, U=u, S=s, Vt=vt)
        ph.mark("write")
    elif tool == "numpy" and case == "dot4":
        ph.mark("import")
        a = load(src, "A")
        ph.mark("load")
        c = a @ (a + a.T)
        ph.mark("compute")
        write(dst, C=c)
        ph.mark("write")
    elif tool == "dask" and case in ("svd1", "svd2", "rsvd3", "dot4"):
        import dask
        import dask.array as da
        ph.mark("import")
        f = h5py.File(src, "r")
        d = f[DSET[case]]
        x = da.from_array(d, chunks=d.chunks)
        with dask.config.set(**DASK):
            if case == "dot4":
                da.to_hdf5(dst, "/C", x.dot(x + x.T))
            else:
                if case == "rsvd3":
                    u, s, vt = da.linalg.svd_compressed(x, k=K3, n_power_iter=POWER3, seed=0)
                else:
                    u, s, vt = da.linalg.svd(x)
                da.to_hdf5(dst, {"/U": u, "/S": s, "/Vt": vt})
        ph.mark("compute")
    elif tool == "scipy" and case == "rsvd3":
        from scipy.sparse.linalg import svds
        ph.mark("import")
        x = load(src, "C")
        ph.mark("load")
        u, s, vt = svds(x, k=K3, random_state=0)
        order = np.argsort(s)[::-1]
        u, s, vt = u[:, order], s[order], vt[order]
        ph.mark("compute")
        write(dst, U=u, S=s, Vt=vt)
        ph.mark("write")
    elif tool in ("sklearn", "statsmodels") and case == "glm":
        if tool == "sklearn":
            from sklearn.linear_model import LogisticRegression
        else:
            from statsmodels.discrete.discrete_model import Logit
            from statsmodels.tools import add_constant
        ph.mark("import")
        x, y = load(src, "X"), load(src, "y")
        ph.mark("load")
        if tool == "sklearn":
            m = LogisticRegression(penalty=None, solver="lbfgs", max_iter=1000).fit(x, y)
            coef, icpt = m.coef_[0], m.intercept_[0]
        else:
            r = Logit(y, add_constant(x)).fit(method="newton", disp=0)
            coef, icpt = r.params[1:], r.params[0]
        ph.mark("compute")
        ph.save()
        return np.asarray(coef), float(icpt)
    else:
        raise SystemExit("linalg_peers: no peer %s for %s" % (tool, case))
    ph.save()
    return None


# ---------------------------------------------------------------- checks
def read_out(path, name):
    with h5py.File(path, "r") as f:
        if name not in f:
            raise KeyError("%s has no dataset /%s (it has: %s)" % (path, name, ", ".join(sorted(f.keys()))))
        return f[name][()]


def blockwise_r(d, br):
    """R factor of the whole dataset d, by QR of [R; next block] (TSQR)."""
    r = np.zeros((0, d.shape[1]))
    for r0 in range(0, d.shape[0], br):
        r = np.linalg.qr(np.vstack([r, d[r0:r0 + br]]), mode="r")
    return r


def rel_max(got, want):
    return float(np.max(np.abs(np.asarray(got) - want) / np.abs(want)))


def check_svd(case, src, out):
    with h5py.File(src, "r") as f:
        d = f[DSET[case]]
        br = max(d.chunks[0], 1)
        exact = np.linalg.svd(blockwise_r(d, br), compute_uv=False)
        s = read_out(out, "S")
        with h5py.File(out, "r") as g:
            for name in ("U", "S", "Vt"):
                if name not in g:
                    raise KeyError("%s has no dataset /%s (it has: %s)" % (out, name, ", ".join(sorted(g.keys()))))
            u, vt = g["U"], g["Vt"][()]
            shapes = "U %s, S %s, Vt %s" % (u.shape, s.shape, vt.shape)
            n = d.shape[1]
            ok_shape = u.shape == d.shape and s.shape == (n,) and vt.shape == (n, n)
            if not ok_shape:
                return False, "%s: chunkctl's output has shapes %s, want U %s, S (%d,), Vt (%d, %d)" % (
                    case, shapes, d.shape, n, n, n)
            err_s = rel_max(s, exact)
            amax, rec, gram = 0.0, 0.0, np.zeros((n, n))
            svt = s[:, None] * vt
            for r0 in range(0, d.shape[0], br):
                a, ub = d[r0:r0 + br], u[r0:r0 + br]
                amax = max(amax, float(np.max(np.abs(a))))
                rec = max(rec, float(np.max(np.abs(a - ub @ svt))))
                gram += ub.T @ ub
            orth = float(np.max(np.abs(gram - np.eye(n))))
            desc = bool(np.all(np.diff(s) <= 0))
    ok = err_s <= 1e-10 and rec / amax <= 1e-10 and orth <= 1e-10 and desc
    return ok, ("%s: %s; S vs exact max rel diff %.1e, max|A - U S Vt|/max|A| %.1e, max|U^T U - I| %.1e "
                "(limits 1e-10); S %s" % (case, shapes, err_s, rec / amax, orth,
                                          "descending" if desc else "NOT descending"))


def exact_s3(src):
    cache = os.path.join(os.path.dirname(os.path.abspath(src)), "C.S_exact.npy")
    if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(src):
        return np.load(cache)
    s = np.linalg.svd(load(src, "C"), compute_uv=False)
    np.save(cache, s)
    return s


def check_rsvd3(src, out):
    exact = exact_s3(src)[:K3]
    with h5py.File(src, "r") as f:
        gen_s = f["C"].attrs["s"][:K3]
    s = read_out(out, "S")
    if s.shape != (K3,):
        return False, "rsvd3: chunkctl's S has shape %s, want (%d,)" % (s.shape, K3)
    err = rel_max(s, exact)
    line = ("rsvd3: top-%d singular values, chunkctl vs NumPy's exact SVD: max rel diff %.2e (limit 1e-6); "
            "NumPy's exact vs the generating s_i: %.1e" % (K3, err, rel_max(exact, gen_s)))
    peers = []
    tmp = out + ".peer.h5"
    for tool in ("dask", "scipy"):
        try:
            run(tool, "rsvd3", src, tmp)
            peers.append("%s %.1e" % (tool, rel_max(read_out(tmp, "S"), exact)))
        except Exception as e:        # a peer's failure is reported, not fatal
            peers.append("%s failed (%s)" % (tool, type(e).__name__))
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return err <= 1e-6, line + "; the peers' max rel diff: " + ", ".join(peers)


def check_dot4(src, out):
    a = load(src, "A")
    want = a @ (a + a.T)
    del a
    got = read_out(out, "C")
    if got.shape != want.shape:
        return False, "dot4: chunkctl's C has shape %s, want %s" % (got.shape, want.shape)
    err = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
    return err <= 1e-12, "dot4: C %s %s; max|C - a @ (a + a.T)| / max|a @ (a + a.T)| = %.1e (limit 1e-12)" % (
        got.shape, got.dtype, err)


def reference_glm(src, ref):
    x, y = load(src, "X"), load(src, "y")
    if ref == "statsmodels":
        from statsmodels.discrete.discrete_model import Logit
        from statsmodels.tools import add_constant
        r = Logit(y, add_constant(x)).fit(method="newton", disp=0)
        return np.asarray(r.params[1:]), float(r.params[0]), "statsmodels Logit (Newton)"
    from sklearn.linear_model import LogisticRegression
    m = LogisticRegression(penalty=None, solver="lbfgs", tol=1e-10, max_iter=10000).fit(x, y)
    return m.coef_[0], float(m.intercept_[0]), "sklearn lbfgs (tol 1e-10, max_iter 10000)"


def check_glm(case, src, out, ref):
    with open(out) as f:
        text = f.read()
    try:
        j = json.loads(text)
        coef, icpt = np.asarray(j["coef"], np.float64), float(j["intercept"])
    except (ValueError, KeyError, TypeError) as e:
        return False, "%s: chunkctl's stdout is not JSON with coef and intercept (%s: %s): %r" % (
            case, type(e).__name__, e, text[:200])
    rc, ri, rname = reference_glm(src, ref)
    if coef.shape != rc.shape:
        return False, "%s: chunkctl's coef has %d entries, want %d" % (case, coef.size, rc.size)
    diff = max(float(np.max(np.abs(coef - rc))), abs(icpt - ri))
    sc, si = run("sklearn", "glm", src)
    sk = max(float(np.max(np.abs(sc - rc))), abs(si - ri))
    extra = ", ".join("%s %s" % (k, j[k]) for k in ("iterations", "converged") if k in j)
    return diff <= 1e-4, ("%s: max |coef diff| (coefficients and intercept) chunkctl vs %s: %.2e (limit 1e-4)%s; "
                          "sklearn with the timed settings vs the same: %.2e" % (
                              case, rname, diff, " (chunkctl: %s)" % extra if extra else "", sk))


def check(case, src, out, ref=None):
    try:
        if case in ("svd1", "svd2"):
            return check_svd(case, src, out)
        if case == "rsvd3":
            return check_rsvd3(src, out)
        if case == "dot4":
            return check_dot4(src, out)
        if case.startswith("glm"):
            return check_glm(case, src, out, ref or "sklearn")
    except (OSError, KeyError) as e:
        return False, "%s: cannot read chunkctl's output: %s: %s" % (case, type(e).__name__, e)
    raise SystemExit("linalg_peers: unknown case " + case)


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    mode = argv[1]
    if mode == "gen":
        gen(argv[2], argv[3], parse_opts(argv[4:]))
    elif mode == "run":
        tool, case, src = argv[2], argv[3], argv[4]
        run(tool, "glm" if case.startswith("glm") else case, src, argv[5] if len(argv) > 5 else None)
    elif mode == "check":
        ok, line = check(argv[2], argv[3], argv[4], argv[5] if len(argv) > 5 else None)
        print(("PASS " if ok else "FAIL ") + line)
        return 0 if ok else 1
    elif mode == "describe":
        json.dump(DESCRIBE, sys.stdout)
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
