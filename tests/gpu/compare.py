"""tests/gpu/compare.py MODE CPU.h5 CUDA.h5 WORK - the GPU suite's checks of
issue 12's cases (tests/gpu/run.sh): the --backend cuda result against the
--backend cpu one and both against NumPy, with that issue's bounds.  WORK
holds the suite's inputs (f8.h5, b.h5, glm.h5, row.h5).  Exit 0, or 1 with
one line saying what differs.

MODE: svd (U S Vt of f8.h5's x), svd-s (S alone), rsvd (randomized, k=10),
matmul (f8.h5 x @ b.h5 x), glm (logistic fit of glm.h5), rowadd (the
sample kernel: x + y of row.h5).
"""
import sys

import h5py
import numpy as np

mode, cpu_path, cuda_path, work = sys.argv[1:5]
cpu, cuda = h5py.File(cpu_path, "r"), h5py.File(cuda_path, "r")


def fail(what):
    print(what)
    sys.exit(1)


def near(name, a, b, rel):
    scale = max(np.abs(b).max(), np.finfo(float).tiny)
    err = np.abs(a - b).max() / scale
    if not err <= rel:
        fail("%s: %.3g relative, bound %.0e" % (name, err, rel))


def orthonormal(name, q, tol=1e-10):
    err = np.abs(q.T @ q - np.eye(q.shape[1])).max()
    if not err <= tol:
        fail("%s: columns not orthonormal (%.3g)" % (name, err))


def x_of(name):
    return h5py.File("%s/%s" % (work, name), "r")


if mode in ("svd", "svd-s", "rsvd"):
    x = x_of("f8.h5")["x"][...]
    s_np = np.linalg.svd(x, compute_uv=False)
    for name, f in (("cpu", cpu), ("cuda", cuda)):
        s = f["S"][...]
        if mode == "rsvd":
            # a randomized range: the top 10 close to the exact ones
            near(name + " S (vs NumPy, randomized)", s, s_np[:10], 1e-1)
        else:
            near(name + " S (vs NumPy)", s, s_np, 1e-10)
        if mode == "svd-s":
            if "U" in f:
                fail(name + ": U written under --no-u")
            continue
        u, vt = f["U"][...], f["Vt"][...]
        orthonormal(name + " U", u)
        orthonormal(name + " Vt^T", vt.T)
        if mode == "svd":
            near(name + " U S Vt (vs x)", (u * s) @ vt, x, 1e-10)
        if (vt.sum(axis=1) < 0).any():
            fail(name + ": a row of Vt sums below 0 (the sign rule)")
    near("cuda S (vs cpu)", cuda["S"][...], cpu["S"][...],
         1e-8 if mode == "rsvd" else 1e-10)
elif mode == "matmul":
    ref = x_of("f8.h5")["x"][...] @ x_of("b.h5")["x"][...]
    near("cpu matmul (vs NumPy)", cpu["matmul"][...], ref, 1e-12)
    near("cuda matmul (vs NumPy)", cuda["matmul"][...], ref, 1e-12)
elif mode == "glm":
    g = x_of("glm.h5")
    X, y = g["X"][...], g["y"][...]
    for name, f in (("cpu", cpu), ("cuda", cuda)):
        w, c = f["coef"][...], float(f["intercept"][()])
        mu = 1 / (1 + np.exp(-(X @ w + c)))
        grad = np.concatenate([X.T @ (mu - y), [np.sum(mu - y)]]) / len(y)
        if not np.abs(grad).max() <= 1e-6:
            fail("%s: the mean loss's gradient at the fit is %.3g" %
                 (name, np.abs(grad).max()))
    near("cuda coef (vs cpu)", cuda["coef"][...], cpu["coef"][...], 1e-6)
elif mode == "rowadd":
    r = x_of("row.h5")
    ref = r["x"][...] + r["y"][...]
    for name, f in (("cpu", cpu), ("cuda", cuda)):
        if not np.array_equal(f["kernel"][...], ref):
            fail(name + ": the row-add kernel differs from x + y")
else:
    fail("compare.py: unknown mode " + mode)
