"""tests/gpu/compare.py MODE CPU.h5 CUDA.h5 WORK - the GPU suite's checks of
issue 12's cases (tests/gpu/run.sh): the --backend cuda result against the
--backend cpu one and both against NumPy, with that issue's bounds.  WORK
holds the suite's inputs (f8.h5, b.h5, glm.h5, row.h5).  Exit 0, or 1 with
one line saying what differs.

MODE: svd (U S Vt of f8.h5's x; svd:FILE for another file's x), svd-s (S
alone), rsvd (randomized, k=10), matmul (f8.h5 x @ b.h5 x), matmul-f4
(m4.h5 a @ b in float32), glm (logistic fit of glm.h5;
glm:FAMILY:REG:LAMBDA[:FILE] for another family, penalty or file: the fit's
optimality conditions, gradient or subgradient, to 1e-6), rowadd (the sample kernel: x + y of row.h5).
"""
import sys

import h5py
import numpy as np

mode, cpu_path, cuda_path, work = sys.argv[1:5]
mode, _, spec = mode.partition(":")
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
    x = x_of(spec or "f8.h5")["x"][...]
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
elif mode == "matmul-f4":
    m = x_of("m4.h5")
    ref = m["a"][...].astype("f8") @ m["b"][...].astype("f8")
    for name, f in (("cpu", cpu), ("cuda", cuda)):
        if f["matmul"].dtype != np.float32:
            fail(name + ": float32 @ float32 is not float32")
        near(name + " matmul (vs NumPy, float64)", f["matmul"][...], ref,
             1e-5)
elif mode == "glm":
    # (1/n) sum loss + lambda P(w), chunkctl-glm-fit(1): at the optimum the
    # mean loss's gradient g (and the penalty's) satisfy, per coefficient,
    # g + lambda (l2 share) w + lambda (l1 share) sign(w) = 0 where w != 0
    # and |g + lambda (l2 share) w| <= lambda (l1 share) where w = 0
    family, reg, lam, *data = (spec or "logistic:none:0").split(":")
    lam = float(lam)
    l1 = {"none": 0, "l2": 0, "l1": 1, "elastic_net": 0.5}[reg]
    l2 = {"none": 0, "l2": 1, "l1": 0, "elastic_net": 0.5}[reg]
    g = x_of(data[0] if data else "glm.h5")
    X, y = g["X"][...], g["y" if family == "logistic" else "y_" + family][...]
    for name, f in (("cpu", cpu), ("cuda", cuda)):
        w, c = f["coef"][...], float(f["intercept"][()])
        eta = X @ w + c
        mu = {"logistic": lambda e: 1 / (1 + np.exp(-e)), "poisson": np.exp,
              "normal": lambda e: e}[family](eta)
        gw = X.T @ (mu - y) / len(y) + lam * l2 * w
        gc = np.sum(mu - y) / len(y)
        nz = w != 0
        kkt = np.concatenate([
            [gc], gw[nz] + lam * l1 * np.sign(w[nz]),
            np.maximum(np.abs(gw[~nz]) - lam * l1, 0)])
        if not np.abs(kkt).max() <= 1e-6:
            fail("%s: the fit's optimality conditions miss by %.3g" %
                 (name, np.abs(kkt).max()))
    near("cuda coef (vs cpu)", cuda["coef"][...], cpu["coef"][...], 1e-6)
elif mode == "rowadd":
    r = x_of("row.h5")
    ref = r["x"][...] + r["y"][...]
    for name, f in (("cpu", cpu), ("cuda", cuda)):
        if not np.array_equal(f["kernel"][...], ref):
            fail(name + ": the row-add kernel differs from x + y")
else:
    fail("compare.py: unknown mode " + mode)
