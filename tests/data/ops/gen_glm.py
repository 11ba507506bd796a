#!/usr/bin/python3
"""Writes glm_cases.txt: a small GLM dataset and the optima of every
family x regulariser on it, for tests/ops/test_glm.c.  Run with Debian's
/usr/bin/python3 (numpy 1.24, scipy 1.10, statsmodels 0.13, sklearn 1.2);
seed 20240610.  chunkctl computes none of it.

The objective is ops/glm.h's:

  f(b) = (1/n) sum_i loss(y_i, x_i . w + c) + lambda * P(w)

with b = [w..., c] (c only when fit_intercept, never penalised).

References, each cross-checked by an independent method (the script stops
if they disagree):
  none          statsmodels GLM (Gaussian) / Logit / Poisson, Newton to
                tol 1e-14; checked against a damped Newton in numpy.
  l2            damped Newton in numpy to a gradient of 1e-14 (exact
                Hessian); checked against scipy.optimize.minimize
                trust-exact (gtol 1e-13), sklearn Ridge (alpha =
                n lambda), LogisticRegression (C = 1 / (n lambda)) and
                PoissonRegressor (alpha = lambda).
  l1, elastic   FISTA in numpy to a subgradient residual of 1e-10, then
  net           the support it finds is polished by Newton on the smooth
                problem restricted to it (signs fixed), so the answer is
                exact to rounding; the script checks the subgradient
                conditions (and a margin on the zero coefficients).
                Checked against sklearn ElasticNet / Lasso (normal,
                alpha = lambda), LogisticRegression saga (C = 1 / (n
                lambda)), and scipy L-BFGS-B on the split w = w+ - w-.

Format, one record per line, whitespace separated, floats as repr():
  data <name> <n> <p>             followed by n lines:
  row <x_1 .. x_p> <y_normal> <y_logistic> <y_poisson>
  case <data> <family> <reg> <lambda> <l1_ratio> <fit_intercept> <d> <b..>
  pass <data> <family> <fit_intercept> <d> <b..> <mean loss> <grad..>
       <hess.. (d x d row-major)>         (means over the n rows)
  block <family> <fit_intercept> <rows> <p> <b (d)> <x (rows x p)>
        <y (rows)> <loss> <grad (d)> <hess (d x d)>   (sums, not means)
  predict <family> <rows> <p> <c> <w (p)> <x (rows x p)> <mean (rows)>

Data "dup" is "main" with column 0 appended again as column p (p + 1
features: X rank deficient); the C test builds it from "main".
"""
import warnings

import numpy as np
import scipy.optimize as so
import scipy.special as sp
import statsmodels.api as sm
from sklearn.linear_model import (ElasticNet, Lasso, LogisticRegression,
                                  PoissonRegressor, Ridge)

rng = np.random.default_rng(20240610)
N, P = 400, 5
FAMILIES = ["normal", "logistic", "poisson"]

# Correlated, not centred features (so the intercept matters); rounded to
# 4 decimals so the file is short and the C parser sees exactly these.
Z = rng.standard_normal((N, P))
mix = np.eye(P) + 0.3 * np.tri(P, P, -1)
X = np.round(Z @ mix.T * 0.8 + np.array([0.5, -0.3, 0.0, 0.2, 0.1]), 4)
w_true = np.array([1.0, -0.5, 0.0, 0.3, 0.0])
Y = {
    "normal": np.round(X @ w_true + 0.5 + rng.standard_normal(N), 4),
    "logistic": (rng.random(N) < sp.expit(0.8 * X @ w_true + 0.2))
    .astype(float),
    "poisson": rng.poisson(np.exp(0.4 * X @ w_true + 0.3)).astype(float),
}


def design(x, fi):
    return np.hstack([x, np.ones((len(x), 1))]) if fi else x


def mean_eval(fam, x1, y, b):
    """Mean loss, gradient, Hessian at b over design matrix x1."""
    eta = x1 @ b
    if fam == "normal":
        loss, mu, w = 0.5 * (y - eta) ** 2, eta, np.ones_like(eta)
    elif fam == "logistic":
        mu = sp.expit(eta)
        loss, w = np.logaddexp(0, eta) - y * eta, mu * (1 - mu)
    else:
        mu = np.exp(eta)
        loss, w = mu - y * eta, mu
    n = len(y)
    return (loss.sum() / n, x1.T @ (mu - y) / n,
            (x1 * w[:, None]).T @ x1 / n)


class Problem:
    def __init__(self, fam, x, y, reg, lam, l1r, fi):
        self.fam, self.x, self.y, self.fi = fam, x, y, fi
        self.x1 = design(x, fi)
        self.p = x.shape[1]
        self.d = self.p + fi
        self.lam1 = {"none": 0, "l2": 0, "l1": lam,
                     "elastic_net": lam * l1r}[reg]
        self.lam2 = {"none": 0, "l2": lam, "l1": 0,
                     "elastic_net": lam * (1 - l1r)}[reg]
        self.pen = np.r_[np.ones(self.p), np.zeros(fi)]  # 1: penalised

    def smooth(self, b):
        """S(b) + lam2 |w|^2 / 2: value, gradient, Hessian."""
        f, g, h = mean_eval(self.fam, self.x1, self.y, b)
        wp = b * self.pen
        return (f + 0.5 * self.lam2 * wp @ wp, g + self.lam2 * wp,
                h + self.lam2 * np.diag(self.pen))

    def objective(self, b):
        return self.smooth(b)[0] + self.lam1 * np.abs(b * self.pen).sum()

    def kkt(self, b):
        """Largest entry of the least-norm subgradient (ops/glm.h)."""
        g = self.smooth(b)[1]
        m = np.where(b > 0, g + self.lam1, np.where(
            b < 0, g - self.lam1, np.maximum(np.abs(g) - self.lam1, 0)))
        m = np.where(self.pen > 0, m, g)
        return np.abs(m).max()


def newton(fun, b0, tol=1e-14, iters=100):
    """Damped Newton on a smooth convex fun -> (f, g, H)."""
    b = b0.copy()
    f, g, h = fun(b)
    for _ in range(iters):
        if np.abs(g).max() <= tol:
            break
        step = np.linalg.solve(h, -g)
        t = 1.0
        while True:
            fn, gn, hn = fun(b + t * step)
            if np.isfinite(fn) and (fn <= f + 1e-4 * t * g @ step
                                    or (fn <= f + 1e-13 * (1 + abs(f)) and
                                        np.abs(gn).max() <
                                        np.abs(g).max())):
                break
            t /= 2
            if t < 1e-20:
                return b
        b, f, g, h = b + t * step, fn, gn, hn
    return b


def soft(v, a):
    return np.sign(v) * np.maximum(np.abs(v) - a, 0)


def fista(pr, tol=1e-10, iters=50000):
    """Accelerated proximal gradient with restart on S + R (numpy): finds
    the support, which polish() then solves exactly."""
    L = np.linalg.eigvalsh(pr.smooth(np.zeros(pr.d))[2]).max()
    if pr.fam == "poisson":
        L *= 20  # exp's curvature grows away from 0
    t = 1 / L
    x = np.zeros(pr.d)
    xp, mom = x, 1.0

    def prox(v):
        z = soft(v, t * pr.lam1) / (1 + t * pr.lam2)
        return np.where(pr.pen > 0, z, v)

    def S(b):
        return mean_eval(pr.fam, pr.x1, pr.y, b)[:2]

    Fx = pr.objective(x)
    for _ in range(iters):
        if pr.kkt(x) <= tol:
            break
        mn = (1 + np.sqrt(1 + 4 * mom * mom)) / 2
        yv = x + (mom - 1) / mn * (x - xp)
        g = S(yv)[1]
        z = prox(yv - t * g)
        Fz = pr.objective(z)
        xp = x
        if Fz > Fx + 1e-14 * abs(Fx):  # beyond rounding: restart
            mom = 1.0
            continue
        x, Fx, mom = z, Fz, mn
    return x


def polish(pr, b):
    """Newton on the support of b with its signs fixed: exact optimum."""
    keep = (b != 0) | (pr.pen == 0)
    sgn = np.sign(b) * pr.pen

    def fun(bs):
        full = np.zeros(pr.d)
        full[keep] = bs
        f, g, h = pr.smooth(full)
        f += pr.lam1 * sgn @ full
        g = g + pr.lam1 * sgn
        return f, g[keep], h[np.ix_(keep, keep)]

    bs = newton(fun, b[keep])
    out = np.zeros(pr.d)
    out[keep] = bs
    assert np.all(np.sign(out[keep & (pr.pen > 0)]) ==
                  sgn[keep & (pr.pen > 0)]), "polish changed a sign"
    return out


def lbfgsb_split(pr):
    """min S(w+ - w-) + lam1 sum(w+ + w-) + lam2/2 |w|^2, w+-, >= 0."""
    p, fi = pr.p, pr.fi

    def unpack(v):
        return np.r_[v[:p] - v[p:2 * p], v[2 * p:]]

    def fun(v):
        b = unpack(v)
        f, g, _ = pr.smooth(b)
        f += pr.lam1 * v[:2 * p].sum()
        gv = np.r_[g[:p] + pr.lam1, -g[:p] + pr.lam1, g[p:]]
        return f, gv

    bounds = [(0, None)] * (2 * p) + [(None, None)] * fi
    r = so.minimize(fun, np.zeros(2 * p + fi), jac=True, method="L-BFGS-B",
                    bounds=bounds,
                    options={"ftol": 0, "gtol": 1e-13, "maxiter": 100000,
                             "maxcor": 30})
    return unpack(r.x)


def check(name, a, b, tol):
    err = np.abs(a - b).max()
    assert err <= tol, "%s: cross-check off by %.3g" % (name, err)
    return err


def reference(fam, data, reg, lam, l1r, fi):
    x = X if data == "main" else np.hstack([X, X[:, :1]])
    y = Y[fam]
    pr = Problem(fam, x, y, reg, lam, l1r, fi)
    n = len(y)
    smooth_ref = newton(pr.smooth, np.zeros(pr.d))
    if reg == "none":
        x1 = pr.x1
        if fam == "normal":
            r = sm.GLM(y, x1, family=sm.families.Gaussian()).fit(
                method="newton", tol=1e-14, maxiter=100)
        elif fam == "logistic":
            r = sm.Logit(y, x1).fit(method="newton", tol=1e-14, maxiter=100,
                                    disp=0)
        else:
            r = sm.Poisson(y, x1).fit(method="newton", tol=1e-14,
                                      maxiter=100, disp=0)
        b = np.asarray(r.params)
        check("numpy newton", b, smooth_ref, 1e-9)
    elif reg == "l2" or (reg == "elastic_net" and l1r == 0):
        r = so.minimize(lambda v: pr.smooth(v)[0], np.zeros(pr.d),
                        jac=lambda v: pr.smooth(v)[1],
                        hess=lambda v: pr.smooth(v)[2], method="trust-exact",
                        options={"gtol": 1e-13})
        b = smooth_ref
        check("scipy trust-exact", r.x, b, 1e-8)
        if fam == "normal":
            sk = Ridge(alpha=n * lam, fit_intercept=bool(fi), tol=1e-14,
                       solver="cholesky").fit(x, y)
        elif fam == "logistic":
            sk = LogisticRegression(C=1 / (n * lam), fit_intercept=bool(fi),
                                    tol=1e-12, max_iter=10000,
                                    solver="newton-cg").fit(x, y)
        else:
            sk = PoissonRegressor(alpha=lam, fit_intercept=bool(fi),
                                  tol=1e-12, max_iter=10000,
                                  solver="newton-cholesky").fit(x, y)
        coef = np.ravel(sk.coef_)
        icpt = np.ravel(sk.intercept_)[:1] if fi else np.zeros(0)
        check("sklearn", np.r_[coef, icpt], b, 1e-6)
    else:
        b = polish(pr, fista(pr))
        check("l-bfgs-b split", lbfgsb_split(pr), b, 1e-6)
        if fam == "normal":
            sk = (Lasso(alpha=lam, fit_intercept=bool(fi), tol=1e-14,
                        max_iter=1000000) if reg == "l1" else
                  ElasticNet(alpha=lam, l1_ratio=l1r, fit_intercept=bool(fi),
                             tol=1e-14, max_iter=1000000)).fit(x, y)
            tol = 1e-8
        elif fam == "logistic":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sk = LogisticRegression(
                    penalty="elasticnet", solver="saga", C=1 / (n * lam),
                    l1_ratio=1.0 if reg == "l1" else l1r,
                    fit_intercept=bool(fi), tol=1e-10,
                    max_iter=200000).fit(x, y)
            tol = 1e-5
        else:
            sk = None
        if sk is not None:
            coef = np.ravel(sk.coef_)
            icpt = np.ravel(sk.intercept_)[:1] if fi else np.zeros(0)
            check("sklearn", np.r_[coef, icpt], b, tol)
        # the zero coefficients must be zero with room to spare, or a
        # solver's answer could flip them within its tolerance
        g = pr.smooth(b)[1]
        zero = (b == 0) & (pr.pen > 0)
        if zero.any():
            assert np.abs(g[zero]).max() < 0.95 * pr.lam1, "thin margin"
    assert pr.kkt(b) < 1e-11, "%s %s: kkt %.3g" % (fam, reg, pr.kkt(b))
    return b


def fmt(v):
    return " ".join(repr(float(t)) for t in np.ravel(v))


lines = ["# made by gen_glm.py (seed 20240610); see tests/data/ops/README.md",
         "data main %d %d" % (N, P)]
for i in range(N):
    lines.append("row %s %s" % (fmt(X[i]), fmt([Y[f][i] for f in FAMILIES])))

# lambda for l1 / elastic net per family: large enough that the true zero
# coefficients are exactly zero at the optimum, small enough that others
# are not
L1 = {"normal": 0.1, "logistic": 0.02, "poisson": 0.03}
for fam in FAMILIES:
    cases = [("main", "none", 0.0, 0.0, 1), ("main", "none", 0.0, 0.0, 0),
             ("main", "l2", 0.05, 0.0, 1), ("main", "l2", 0.05, 0.0, 0),
             ("main", "elastic_net", 0.05, 0.0, 1),
             ("main", "l1", L1[fam], 0.0, 1), ("main", "l1", L1[fam], 0.0, 0),
             ("main", "elastic_net", L1[fam] * 1.5, 0.5, 1),
             ("main", "elastic_net", L1[fam], 1.0, 1),
             ("dup", "l2", 0.05, 0.0, 1), ("dup", "elastic_net",
                                            L1[fam] * 1.5, 0.5, 1)]
    for data, reg, lam, l1r, fi in cases:
        b = reference(fam, data, reg, lam, l1r, fi)
        lines.append("case %s %s %s %r %r %d %d %s" % (
            data, fam, reg, lam, l1r, fi, len(b), fmt(b)))

# loss, gradient and Hessian at a point away from the optimum
for fam in FAMILIES:
    for fi in (1, 0):
        b = np.r_[0.3, -0.2, 0.1, 0.05, -0.1, [0.2] * fi]
        f, g, h = mean_eval(fam, design(X, fi), Y[fam], b)
        lines.append("pass main %s %d %d %s %s %s %s" % (
            fam, fi, len(b), fmt(b), fmt(f), fmt(g), fmt(h)))

# Blocks with extreme linear predictors: the logistic loss must not
# overflow (log(1 + exp(800))) nor lose the small ones (exp(-40)).
xb = np.array([[400.0, 0.0], [-400.0, 0.0], [20.0, 0.5], [-20.0, -0.5],
               [0.0, 1e-8], [1.5, -2.0]])
for fam, b, y in [
        ("logistic", np.array([2.0, 1.0, 0.0]),
         np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])),
        ("logistic", np.array([-2.0, 0.5, 0.25]),
         np.array([1.0, 1.0, 1.0, 0.0, 0.0, 1.0])),
        ("poisson", np.array([0.5, 1.0, -0.5]),
         np.array([0.0, 3.0, 7.0, 0.0, 1.0, 2.0])),
        ("normal", np.array([0.1, -1.0, 0.5]),
         np.array([1.0, -2.0, 0.0, 3.5, 1.0, 0.0]))]:
    x1 = design(xb, 1)
    f, g, h = mean_eval(fam, x1, y, b)
    n = len(y)
    lines.append("block %s 1 %d 2 %s %s %s %s %s %s" % (
        fam, n, fmt(b), fmt(xb), fmt(y), fmt(f * n), fmt(g * n),
        fmt(h * n)))

xp = np.array([[1.0, 2.0], [-3.0, 0.5], [300.0, 100.0], [-300.0, -100.0],
               [0.0, 0.0]])
for fam, w, c in [("normal", [0.5, -1.0], 0.25),
                  ("logistic", [1.5, 0.5], -0.5),
                  ("poisson", [1.0, -1.5], 0.1),
                  ("poisson", [0.7, 0.8], -1.0)]:
    eta = xp @ np.array(w) + c
    mean = {"normal": eta, "logistic": sp.expit(eta),
            "poisson": np.exp(eta)}[fam]
    assert np.all(np.isfinite(mean))
    lines.append("predict %s %d 2 %r %s %s %s" % (
        fam, len(xp), c, fmt(w), fmt(xp), fmt(mean)))

with open("glm_cases.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
