"""chunkctl glm-fit / glm-predict and the glm_fit / glm_predict pipeline
ops against statsmodels, scikit-learn and SciPy.

Unpenalised fits of each family (logistic, normal, poisson) by each solver
(newton, lbfgs, gradient_descent, proximal_grad, admm) match statsmodels'
GLM fitted by IRLS to a tight tolerance; L2 fits match a SciPy
trust-region minimisation of the same objective; L1 and elastic-net fits
(proximal_grad, admm) satisfy the subgradient optimality conditions and
match scikit-learn's Lasso / ElasticNet (normal) or a NumPy proximal
gradient reference polished by Newton on the support (logistic, poisson).
Data are written by h5py and zarr-python from fixed seeds; chunkctl never
computes an expected value.

The objective (chunkctl-glm(1)):
  (1/n) sum loss(y_i, x_i.w + c) + lambda * P(w)
  loss: normal (y - eta)^2 / 2; logistic log(1 + exp(eta)) - y eta;
        poisson exp(eta) - y eta
  P: l2 |w|^2 / 2; l1 |w|_1; elastic_net a |w|_1 + (1 - a) |w|^2 / 2
"""
import json
import os
import warnings

import _common as C
from _common import np, h5py, zarr

import scipy.optimize  # noqa: E402
import statsmodels.api as sm  # noqa: E402
from sklearn.linear_model import ElasticNet, Lasso  # noqa: E402

FAMILIES = ("logistic", "normal", "poisson")
SOLVERS = ("newton", "lbfgs", "gradient_descent", "proximal_grad", "admm")
N, P = 2000, 5
W_TRUE = np.array([0.8, -0.5, 0.25, 0.0, 0.05])
C_TRUE = -0.3
# X's columns in other units: tiny and huge values (coefficients near 1e8
# and 1e-6), and a milder spread for the penalised fits
UNITS = np.array([1e-8, 1, 1e6, 1, 1])
UNITS2 = np.array([1e-2, 1, 1e2, 1, 1])
# X's columns shifted far from 0 beside their spread (a year, a
# timestamp): the same fit, its intercept moved by -OFFSET.w
OFFSET = np.array([0, 1e3, 1e7, -1e6, 0])


# ---- the objective, in NumPy ----

def mean_fn(family, eta):
    if family == "normal":
        return eta
    if family == "logistic":
        return 1.0 / (1.0 + np.exp(-eta))
    return np.exp(eta)


def loss(family, y, eta):
    """Mean loss and its gradient with respect to eta (per row, / n)."""
    n = len(y)
    if family == "normal":
        return np.sum((y - eta) ** 2) / 2 / n, (eta - y) / n
    if family == "logistic":
        return np.sum(np.logaddexp(0, eta) - y * eta) / n, \
            (mean_fn(family, eta) - y) / n
    return np.sum(np.exp(eta) - y * eta) / n, (np.exp(eta) - y) / n


def penalty(reg, lam, a, w):
    if reg == "none":
        return 0.0
    if reg == "l2":
        return lam * (w @ w) / 2
    if reg == "l1":
        return lam * np.sum(np.abs(w))
    return lam * (a * np.sum(np.abs(w)) + (1 - a) * (w @ w) / 2)


def objective(family, reg, lam, a, x, y, w, c):
    f, _ = loss(family, y, x @ w + c)
    return f + penalty(reg, lam, a, w)


def smooth_grad(family, x, y, w, c):
    """Gradient of the mean loss: (d/dw, d/dc)."""
    _, g = loss(family, y, x @ w + c)
    return x.T @ g, np.sum(g)


def hessian(family, x, w, c):
    """Hessian of the mean loss over (w, c), (p+1) x (p+1)."""
    eta = x @ w + c
    if family == "normal":
        d = np.ones_like(eta)
    elif family == "logistic":
        mu = mean_fn(family, eta)
        d = mu * (1 - mu)
    else:
        d = np.exp(eta)
    xa = np.column_stack([x, np.ones(len(x))])
    return (xa * d[:, None]).T @ xa / len(x)


# ---- references ----

def statsmodels_glm(family, x, y, intercept=True):
    """statsmodels' GLM fitted by IRLS to 1e-14 (the intercept last)."""
    fam = {"logistic": sm.families.Binomial(),
           "normal": sm.families.Gaussian(),
           "poisson": sm.families.Poisson()}[family]
    xa = np.column_stack([x, np.ones(len(x))]) if intercept else x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.GLM(y, xa, family=fam).fit(method="IRLS", tol=1e-14,
                                              maxiter=200)


def statsmodels_fit(family, x, y, intercept=True):
    """statsmodels' GLM by IRLS to 1e-14; returns (w, c)."""
    b = np.asarray(statsmodels_glm(family, x, y, intercept).params)
    return (b[:-1], b[-1]) if intercept else (b, 0.0)


def statsmodels_bse(family, x, y, intercept=True):
    """statsmodels' GLM standard errors (bse: coefficients, then the
    intercept) at its IRLS fit to 1e-14."""
    return np.asarray(statsmodels_glm(family, x, y, intercept).bse)


def scipy_l2_fit(family, lam, x, y):
    """The L2-penalised objective minimised by SciPy's trust-exact with the
    exact gradient and Hessian, then Newton steps to a gradient of 1e-13."""
    p = x.shape[1]

    def f(b):
        return objective(family, "l2", lam, 0, x, y, b[:p], b[p])

    def g(b):
        gw, gc = smooth_grad(family, x, y, b[:p], b[p])
        return np.r_[gw + lam * b[:p], gc]

    def h(b):
        hh = hessian(family, x, b[:p], b[p])
        hh[:p, :p] += lam * np.eye(p)
        return hh

    r = scipy.optimize.minimize(f, np.zeros(p + 1), jac=g, hess=h,
                                method="trust-exact",
                                options={"gtol": 1e-13, "maxiter": 1000})
    b = r.x
    for _ in range(20):  # trust-exact may stop at ~1e-10: polish
        d = np.linalg.solve(h(b), g(b))
        b = b - d
        if np.max(np.abs(d)) < 1e-15:
            break
    return b[:p], b[p]


def prox_reference(family, lam, a, x, y):
    """Proximal gradient with backtracking on the smooth part (loss plus
    the l2 share of the penalty), run until the step changes nothing to
    1e-13, then Newton on the support with the signs fixed, to 1e-15."""
    n, p = x.shape
    lam1, lam2 = lam * a, lam * (1 - a)

    def smooth(w, c):
        f, _ = loss(family, y, x @ w + c)
        gw, gc = smooth_grad(family, x, y, w, c)
        return f + lam2 * (w @ w) / 2, gw + lam2 * w, gc

    w, c, step = np.zeros(p), 0.0, 1.0
    for _ in range(200000):
        f, gw, gc = smooth(w, c)
        while True:
            zw = w - step * gw
            nw = np.sign(zw) * np.maximum(np.abs(zw) - step * lam1, 0)
            nc = c - step * gc
            dw, dc = nw - w, nc - c
            fn = smooth(nw, nc)[0]
            if fn <= f + gw @ dw + gc * dc + (dw @ dw + dc * dc) / 2 / step:
                break
            step /= 2
        w, c = nw, nc
        if max(np.max(np.abs(dw)), abs(dc)) < 1e-13 * step:
            break
        step *= 1.5
    # Newton on the support (the objective is smooth there, signs fixed)
    act = np.flatnonzero(w)
    sg = np.sign(w[act])
    idx = np.r_[act, p]
    for _ in range(50):
        gw, gc = smooth(w, c)[1:]
        g = np.r_[gw[act] + lam1 * sg, gc]
        hh = hessian(family, x, w, c)[np.ix_(idx, idx)]
        hh[:len(act), :len(act)] += lam2 * np.eye(len(act))
        d = np.linalg.solve(hh, g)
        w[act] -= d[:-1]
        c -= d[-1]
        if np.max(np.abs(d)) < 1e-15:
            break
    assert np.all(np.sign(w[act]) == sg), "reference: support moved"
    return w, c


def sklearn_reference(reg, lam, a, x, y):
    if reg == "l1":
        m = Lasso(alpha=lam, tol=1e-14, max_iter=1000000)
    else:
        m = ElasticNet(alpha=lam, l1_ratio=a, tol=1e-14, max_iter=1000000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(x, y)
    return m.coef_.copy(), float(m.intercept_)


def subgradient_gaps(family, reg, lam, a, x, y, w, c):
    """The violations of the optimality conditions at (w, c): for each
    coefficient the distance from 0 to its subdifferential, and the
    intercept's gradient."""
    if reg == "l1":
        a = 1.0
    gw, gc = smooth_grad(family, x, y, w, c)
    gw = gw + lam * (1 - a) * w
    viol = np.where(w != 0, np.abs(gw + lam * a * np.sign(w)),
                    np.maximum(np.abs(gw) - lam * a, 0))
    return viol, gc


def subgradient_gap(family, reg, lam, a, x, y, w, c, intercept=True):
    """The largest violation of the optimality conditions at (w, c)."""
    viol, gc = subgradient_gaps(family, reg, lam, a, x, y, w, c)
    return max(float(np.max(viol)), abs(gc) if intercept else 0.0)


class Glm(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261205)
        x = rng.standard_normal((N, P)) * [1, 0.5, 1.5, 1, 1] + \
            [0, 1, 0, -0.5, 0]
        eta = x @ W_TRUE + C_TRUE
        cls.x = x
        cls.y = {
            "logistic": (rng.random(N) < mean_fn("logistic", eta)) * 1.0,
            "normal": eta + rng.standard_normal(N),
            "poisson": rng.poisson(np.exp(eta)) * 1.0,
        }
        cls.xnew = rng.standard_normal((777, P))
        with h5py.File(cls.path("glm.h5"), "w") as f:
            f.create_dataset("X", data=x, chunks=(300, P))
            for k, v in cls.y.items():
                f.create_dataset(k, data=v, chunks=(300,))
            f.create_dataset("Xnew", data=cls.xnew, chunks=(100, 2))
            f.create_dataset("X4", data=x[:, :4], chunks=(300, 4))
            # bad inputs
            f.create_dataset("y012", data=np.where(np.arange(N) == 1500, 2,
                                                   cls.y["logistic"]))
            f.create_dataset("yneg", data=np.where(np.arange(N) == 1700,
                                                   -1.0, cls.y["poisson"]))
            xn = x.copy()
            xn[1234, 2] = np.nan
            f.create_dataset("Xnan", data=xn, chunks=(300, P))
            f.create_dataset("yshort", data=cls.y["normal"][:N - 1])
            # the same columns in other units
            f.create_dataset("Xunits", data=x * UNITS, chunks=(300, P))
            f.create_dataset("Xunits2", data=x * UNITS2, chunks=(300, P))
            f.create_dataset("Xoff", data=x + OFFSET, chunks=(300, P))
            # and a constant column beside them (the intercept's twin)
            f.create_dataset("Xoffc", data=np.column_stack(
                [x + OFFSET, np.full(N, 0.1)]), chunks=(300, P + 1))
        z = zarr.open_group(cls.path("glm.zarr"), "w")
        z.create_dataset("X", data=x, chunks=(512, 3))
        for k, v in cls.y.items():
            z.create_dataset(k, data=v, chunks=(700,))
        z.create_dataset("Xnew", data=cls.xnew.astype(np.float32),
                         chunks=(128, P))
        cls.ref = {f: statsmodels_fit(f, x, cls.y[f]) for f in FAMILIES}

    def src(self, ds, store="glm.h5"):
        return self.path(store) + ":/" + ds

    def fit(self, family, *opts, x="X", store="glm.h5", expect=0):
        p = C.run("glm-fit", "--quiet", self.src(x, store),
                  self.src(family, store), "--family", family, *opts,
                  expect=expect)
        if expect != 0:
            return p
        lines = p.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stdout)
        doc = json.loads(lines[0])
        self.assertEqual(sorted(doc), ["aic", "coef", "converged",
                                       "deviance", "intercept",
                                       "iterations", "llf", "objective"])
        doc["coef"] = np.array(doc["coef"], dtype=np.float64)
        doc["stderr"] = p.stderr
        return doc

    def assertCoef(self, doc, w, c, tol, what):
        np.testing.assert_allclose(doc["coef"], w, rtol=0, atol=tol,
                                   err_msg=what + ": coef")
        self.assertLessEqual(abs(doc["intercept"] - c), tol,
                             "%s: intercept %r vs %r"
                             % (what, doc["intercept"], c))

    def assertObjective(self, doc, family, reg, lam, a, what, x=None):
        x = self.x if x is None else x
        want = objective(family, reg, lam, a, x, self.y[family],
                         doc["coef"], doc["intercept"])
        self.assertAlmostEqual(doc["objective"], want, delta=1e-12 * want,
                               msg=what + ": objective")

    def test_unpenalised_matches_statsmodels(self):
        for family in FAMILIES:
            w, c = self.ref[family]
            for solver in SOLVERS:
                what = "%s/%s" % (family, solver)
                with self.subTest(family=family, solver=solver):
                    doc = self.fit(family, "--solver", solver)
                    self.assertTrue(doc["converged"], what)
                    self.assertGreaterEqual(doc["iterations"], 1, what)
                    self.assertEqual(doc["stderr"], "", what)
                    self.assertCoef(doc, w, c, 1e-6, what)
                    self.assertObjective(doc, family, "none", 0, 0, what)

    def test_zarr_input_with_column_chunks(self):
        for family in FAMILIES:
            with self.subTest(family=family):
                w, c = self.ref[family]
                doc = self.fit(family, "--solver", "lbfgs", store="glm.zarr")
                self.assertCoef(doc, w, c, 1e-6, "zarr " + family)

    def test_l2_matches_scipy(self):
        lam = 0.05
        for family in FAMILIES:
            w, c = scipy_l2_fit(family, lam, self.x, self.y[family])
            gw, gc = smooth_grad(family, self.x, self.y[family], w, c)
            self.assertLess(np.max(np.abs(np.r_[gw + lam * w, gc])), 1e-13,
                            "the reference did not converge")
            for solver in SOLVERS:
                what = "%s/%s/l2" % (family, solver)
                with self.subTest(family=family, solver=solver):
                    doc = self.fit(family, "--solver", solver,
                                   "--regularizer", "l2", "--lambda",
                                   str(lam))
                    self.assertTrue(doc["converged"], what)
                    self.assertCoef(doc, w, c, 1e-6, what)
                    self.assertObjective(doc, family, "l2", lam, 0, what)

    def test_elastic_net_without_l1_share_is_smooth(self):
        # l1_ratio 0 is a pure l2 penalty: smooth solvers take it
        lam = 0.05
        w, c = scipy_l2_fit("logistic", lam, self.x, self.y["logistic"])
        for solver in ("newton", "lbfgs"):
            with self.subTest(solver=solver):
                doc = self.fit("logistic", "--solver", solver,
                               "--regularizer", "elastic_net", "--lambda",
                               str(lam), "--l1-ratio", "0")
                self.assertCoef(doc, w, c, 1e-6, solver)

    def check_sparse(self, family, reg, lam, a):
        x, y = self.x, self.y[family]
        if family == "normal":
            w, c = sklearn_reference(reg, lam, a, x, y)
        else:
            w, c = prox_reference(family, lam, 1.0 if reg == "l1" else a,
                                  x, y)
        gap = subgradient_gap(family, reg, lam, a, x, y, w, c)
        self.assertLess(gap, 1e-10, "the reference is not optimal")
        nz = np.count_nonzero(w)
        self.assertTrue(1 <= nz < P, "fixture: want a sparse fit, got %r"
                        % w)
        for solver in ("proximal_grad", "admm"):
            what = "%s/%s/%s" % (family, solver, reg)
            with self.subTest(family=family, solver=solver, reg=reg):
                opts = ["--solver", solver, "--regularizer", reg,
                        "--lambda", repr(lam)]
                if reg == "elastic_net":
                    opts += ["--l1-ratio", repr(a)]
                doc = self.fit(family, *opts)
                self.assertTrue(doc["converged"], what)
                got_gap = subgradient_gap(family, reg, lam, a, x, y,
                                          doc["coef"], doc["intercept"])
                self.assertLessEqual(got_gap, 1e-6, what + ": optimality")
                self.assertCoef(doc, w, c, 1e-5, what)
                self.assertEqual(list(np.flatnonzero(doc["coef"])),
                                 list(np.flatnonzero(w)),
                                 what + ": support %r vs %r"
                                 % (doc["coef"], w))
                self.assertObjective(doc, family, reg, lam, a, what)

    def test_l1_and_elastic_net(self):
        cases = [("normal", "l1", 0.05, 1.0),
                 ("normal", "elastic_net", 0.08, 0.6),
                 ("logistic", "l1", 0.02, 1.0),
                 ("logistic", "elastic_net", 0.03, 0.5),
                 ("poisson", "l1", 0.03, 1.0),
                 ("poisson", "elastic_net", 0.05, 0.7)]
        for family, reg, lam, a in cases:
            self.check_sparse(family, reg, lam, a)

    def test_no_intercept(self):
        for family, solver in (("logistic", "newton"), ("normal", "lbfgs"),
                               ("poisson", "admm")):
            with self.subTest(family=family):
                w, _ = statsmodels_fit(family, self.x, self.y[family],
                                       intercept=False)
                out = self.fresh("noint.h5")
                doc = self.fit(family, "--solver", solver, "--no-intercept",
                               "-o", out)
                self.assertEqual(doc["intercept"], 0.0)
                self.assertCoef(doc, w, 0.0, 1e-6, family)
                with h5py.File(out, "r") as f:
                    self.assertEqual(f["intercept"][()].tolist(), [0.0])
                    self.assertFalse(f["coef"].attrs["fit_intercept"])
                    self.assertEqual(f["coef"].attrs["intercept"], 0.0)
                pred = self.fresh("noint_pred.h5")
                C.run("glm-predict", "--quiet", out, self.src("Xnew"),
                      "-o", pred)
                mw = read_h5(out, "coef")
                np.testing.assert_allclose(
                    read_h5(pred, "pred"), mean_fn(family, self.xnew @ mw),
                    rtol=1e-12)

    def test_model_file_attributes(self):
        out = self.fresh("model.h5")
        doc = self.fit("poisson", "--solver", "admm", "--regularizer",
                       "elastic_net", "--lambda", "0.05", "--l1-ratio",
                       "0.7", "-o", out)
        with h5py.File(out, "r") as f:
            coef, ic = f["coef"], f["intercept"]
            self.assertEqual(coef.dtype, np.float64)
            self.assertEqual(coef.shape, (P,))
            self.assertEqual(ic.shape, (1,))
            # bit for bit what was printed (%.17g round-trips)
            self.assertEqual(coef[()].tolist(), doc["coef"].tolist())
            self.assertEqual(float(ic[0]), doc["intercept"])
            at = coef.attrs
            want = {"family": "poisson", "solver": "admm",
                    "regularizer": "elastic_net"}
            for k, v in want.items():
                self.assertIsInstance(at[k], str, k)
                self.assertEqual(at[k], v, k)
            self.assertEqual(float(at["lambda"]), 0.05)
            self.assertEqual(float(at["l1_ratio"]), 0.7)
            self.assertTrue(at["fit_intercept"])
            self.assertEqual(float(at["intercept"]), doc["intercept"])
            self.assertEqual(int(at["iterations"]), doc["iterations"])
            self.assertEqual(bool(at["converged"]), doc["converged"])
            self.assertEqual(float(at["objective"]), doc["objective"])
            for k in ("deviance", "llf", "aic"):
                self.assertEqual(float(at[k]), doc[k], k)
        # and a Zarr model: attributes in .zattrs
        outz = self.fresh("model.zarr")
        doc = self.fit("logistic", "-o", outz)
        g = zarr.open_group(outz, "r")
        self.assertEqual(g["coef"][...].tolist(), doc["coef"].tolist())
        at = g["coef"].attrs
        self.assertEqual(at["family"], "logistic")
        self.assertEqual(at["solver"], "newton")
        self.assertEqual(at["regularizer"], "none")
        self.assertEqual(at["intercept"], doc["intercept"])

    def test_predict_matches_numpy(self):
        for family, store in (("logistic", "model_l.h5"),
                              ("normal", "model_n.zarr"),
                              ("poisson", "model_p.h5")):
            with self.subTest(family=family):
                model = self.fresh(store)
                self.fit(family, "-o", model)
                if store.endswith(".zarr"):
                    g = zarr.open_group(model, "r")
                    w, c = g["coef"][...], float(g["intercept"][0])
                else:
                    with h5py.File(model, "r") as f:
                        w, c = f["coef"][()], float(f["intercept"][0])
                for xs, xv in ((self.src("Xnew"), self.xnew),
                               (self.src("Xnew", "glm.zarr"),
                                self.xnew.astype(np.float32))):
                    out = self.fresh("pred.h5")
                    C.run("glm-predict", "--quiet", model, xs, "-o",
                          out + ":/p")
                    got = read_h5(out, "p")
                    self.assertEqual(got.shape, (777,))
                    self.assertEqual(got.dtype, np.float64)
                    want = mean_fn(family, xv.astype(np.float64) @ w + c)
                    np.testing.assert_allclose(got, want, rtol=1e-12,
                                               atol=1e-14)
                    if family == "logistic":
                        self.assertTrue(np.all((got > 0) & (got < 1)))

    def test_pipeline_fit_then_predict(self):
        out = self.fresh("pipe.h5")
        pj = self.path("glm.json")
        with open(pj, "w") as f:
            json.dump({
                "inputs": {"X": self.src("X", "glm.zarr"),
                           "y": self.src("poisson", "glm.zarr"),
                           "Xn": self.src("Xnew")},
                "steps": [
                    {"name": "m", "op": "glm_fit", "args": ["X", "y"],
                     "family": "poisson", "solver": "lbfgs",
                     "regularizer": "l2", "lambda": 0.05,
                     "fit_intercept": True, "max_iter": 500, "tol": 1e-10},
                    {"name": "p", "op": "glm_predict",
                     "args": ["Xn", "m.coef"]},
                    {"name": "q", "op": "glm_predict", "args": ["X"],
                     "model": self.path("pmodel.h5")}],
                "outputs": {"m.coef": out + ":/coef",
                            "m.intercept": out + ":/intercept",
                            "p": out + ":/p", "q": out + ":/q"}}, f)
        # the model file for step q, by glm-fit
        model = self.fresh("pmodel.h5")
        self.fit("logistic", "--solver", "lbfgs", "-o", model)
        C.run("run", "--quiet", pj)
        w, c = scipy_l2_fit("poisson", 0.05, self.x, self.y["poisson"])
        with h5py.File(out, "r") as f:
            gw, gc = f["coef"][()], f["intercept"][()]
            p, q = f["p"][()], f["q"][()]
        self.assertEqual(gc.shape, (1,))
        np.testing.assert_allclose(gw, w, rtol=0, atol=1e-6)
        self.assertLessEqual(abs(gc[0] - c), 1e-6)
        np.testing.assert_allclose(p, np.exp(self.xnew @ gw + gc[0]),
                                   rtol=1e-12)
        with h5py.File(model, "r") as f:
            mw, mc = f["coef"][()], float(f["intercept"][0])
        np.testing.assert_allclose(q, mean_fn("logistic", self.x @ mw + mc),
                                   rtol=1e-12)

    def test_bad_input_is_refused_and_leaves_nothing(self):
        X, Xnan = self.src("X"), self.src("Xnan")
        cases = [
            ((X, self.src("y012"), "--family", "logistic"),
             ("0 or 1",)),
            ((X, self.src("yneg"), "--family", "poisson"),
             (">= 0",)),
            ((Xnan, self.src("normal"), "--family", "normal"),
             ("nan",)),
            ((X, self.src("yshort"), "--family", "normal"),
             ("2000", "1999")),
            ((X, self.src("logistic"), "--solver", "lbfgs",
              "--regularizer", "l1", "--lambda", "0.1"),
             ("lbfgs", "l1")),
            ((X, self.src("logistic"), "--solver", "newton",
              "--regularizer", "elastic_net", "--lambda", "0.1"),
             ("newton", "elastic_net")),
            ((X, self.src("logistic"), "--solver", "gradient_descent",
              "--regularizer", "l1", "--lambda", "0.1"),
             ("gradient_descent", "l1")),
        ]
        for args, needles in cases:
            with self.subTest(args=args):
                out = self.fresh("bad_model.h5")
                p = C.run("glm-fit", "--quiet", *args, "-o", out,
                          expect=None)
                self.assertNotEqual(p.returncode, 0)
                self.assertCleanError(p, p.returncode, *needles)
                self.assertEqual(p.stdout, "")
                self.assertFalse(os.path.exists(out), "left " + out)
        # the smooth-only solvers refuse l1 with a usage error
        p = C.run("glm-fit", "--quiet", X, self.src("logistic"), "--solver",
                  "lbfgs", "--regularizer", "l1", "--lambda", "0.1",
                  expect=None)
        self.assertCleanError(p, 2, "proximal_grad")
        # predicting with a model of another width
        model = self.fresh("m5.h5")
        self.fit("normal", "-o", model)
        out = self.fresh("bad_pred.h5")
        p = C.run("glm-predict", "--quiet", model, self.src("X4"), "-o", out,
                  expect=None)
        self.assertNotEqual(p.returncode, 0)
        # '4' and '5' are in the paths given (X4, m5.h5): name the cause
        self.assertCleanError(p, p.returncode, "4 columns", "5 coefficients")
        self.assertFalse(os.path.exists(out))

    def test_std_errors_match_statsmodels(self):
        # --std-errors: statsmodels' bse, for every family, with and
        # without the intercept, from newton's Hessian and from the pass
        # the other solvers add for it
        for family in FAMILIES:
            for solver in ("newton", "lbfgs", "proximal_grad"):
                for intercept in (True, False):
                    what = "%s/%s/%s" % (family, solver, intercept)
                    want = statsmodels_bse(family, self.x, self.y[family],
                                           intercept)
                    with self.subTest(what=what):
                        p = C.run("glm-fit", "--quiet", self.src("X"),
                                  self.src(family), "--family", family,
                                  "--solver", solver, "--std-errors",
                                  *(() if intercept else ("--no-intercept",)))
                        doc = json.loads(p.stdout)
                        got = doc["stderr"] + ([doc["intercept_stderr"]]
                                               if intercept else [])
                        self.assertEqual("intercept_stderr" in doc,
                                         intercept)
                        np.testing.assert_allclose(got, want, rtol=1e-6,
                                                   err_msg=what)

    def test_deviance_llf_aic_match_statsmodels(self):
        # statsmodels' GLM results' deviance, llf and aic: at its own fit
        # for unpenalised ones, and at chunkctl's coefficients for a
        # penalised fit (the model's loglike and family's deviance there)
        fams = {"logistic": sm.families.Binomial(),
                "normal": sm.families.Gaussian(),
                "poisson": sm.families.Poisson()}
        for family in FAMILIES:
            for intercept in (True, False):
                what = "%s/%s" % (family, intercept)
                ref = statsmodels_glm(family, self.x, self.y[family],
                                      intercept)
                with self.subTest(what=what):
                    doc = self.fit(family,
                                   *(() if intercept else
                                     ("--no-intercept",)))
                    for k in ("deviance", "llf", "aic"):
                        self.assertAlmostEqual(
                            doc[k], getattr(ref, k),
                            delta=1e-10 * abs(getattr(ref, k)),
                            msg=what + ": " + k)
            with self.subTest(what=family + "/l2"):
                doc = self.fit(family, "--regularizer", "l2", "--lambda",
                               "0.3")
                y = self.y[family]
                xa = np.column_stack([self.x, np.ones(len(y))])
                b = np.append(doc["coef"], doc["intercept"])
                model = sm.GLM(y, xa, family=fams[family])
                mu = model.predict(b)
                dev = fams[family].deviance(y, mu)
                # statsmodels' normal llf with the scale SSR / n, as its
                # results give it
                llf = model.loglike(b, scale=dev / len(y)
                                    if family == "normal" else 1.0)
                self.assertAlmostEqual(doc["deviance"], dev,
                                       delta=1e-10 * dev)
                self.assertAlmostEqual(doc["llf"], llf,
                                       delta=1e-10 * abs(llf))
                self.assertAlmostEqual(doc["aic"], -2 * llf + 2 * (P + 1),
                                       delta=1e-10 * abs(llf))

    def test_std_errors_in_the_model_file(self):
        want = statsmodels_bse("poisson", self.x, self.y["poisson"])
        for store in ("se.h5", "se.zarr"):
            with self.subTest(store=store):
                out = self.fresh(store)
                C.run("glm-fit", "--quiet", self.src("X"),
                      self.src("poisson"), "--family", "poisson",
                      "--std-errors", "-o", out)
                f = h5py.File(out, "r") if store.endswith(".h5") \
                    else zarr.open_group(out, "r")
                a = f["coef"].attrs
                np.testing.assert_allclose(a["stderr"], want[:-1], rtol=1e-6)
                self.assertAlmostEqual(a["intercept_stderr"] / want[-1], 1,
                                       delta=1e-6)
                self.assertEqual(a["family"], "poisson")
                self.assertEqual(a["converged"], 1)
                # glm-predict reads the model as before
                pred = self.fresh("se_pred.h5")
                C.run("glm-predict", "--quiet", out, self.src("Xnew"),
                      "-o", pred)
                if store.endswith(".h5"):
                    f.close()
        # without the option none are printed (fit() checks the keys)
        self.fit("poisson")
        # a penalised fit has no maximum-likelihood standard errors
        p = C.run("glm-fit", self.src("X"), self.src("normal"),
                  "--family", "normal", "--regularizer", "l2",
                  "--lambda", "0.1", "--std-errors", expect=2)
        self.assertIn("standard errors are the maximum-likelihood fit's",
                      p.stderr)

    def test_column_units_do_not_matter(self):
        # the convergence test is scale-free: a column of values near 1e-8
        # is fitted as well as one near 1 (an absolute gradient test
        # passes near the start there), and every solver reaches
        # statsmodels' fit to 1e-6 in the units where the columns are
        # near 1, as on the unscaled X
        x = self.x * UNITS
        for family in FAMILIES:
            w, c = statsmodels_fit(family, x, self.y[family])
            for solver in SOLVERS:
                what = "%s/%s" % (family, solver)
                with self.subTest(family=family, solver=solver):
                    doc = self.fit(family, "--solver", solver, x="Xunits")
                    self.assertTrue(doc["converged"], what)
                    self.assertEqual(doc["stderr"], "", what)
                    np.testing.assert_allclose(
                        doc["coef"] * UNITS, w * UNITS, rtol=0, atol=1e-6,
                        err_msg=what)
                    self.assertLessEqual(abs(doc["intercept"] - c), 1e-6,
                                         what)

    def test_std_errors_in_other_units(self):
        # statsmodels' bse on the unscaled X, over the columns' units
        # (on X in those units statsmodels finds X's rank by absolute
        # singular values and takes the tiny column as dependent: its
        # residual degrees of freedom for normal are then one too many)
        for family in FAMILIES:
            want = statsmodels_bse(family, self.x, self.y[family]) / \
                np.r_[UNITS, 1]
            for solver in ("newton", "lbfgs"):
                with self.subTest(family=family, solver=solver):
                    p = C.run("glm-fit", "--quiet", self.src("Xunits"),
                              self.src(family), "--family", family,
                              "--solver", solver, "--std-errors")
                    doc = json.loads(p.stdout)
                    got = doc["stderr"] + [doc["intercept_stderr"]]
                    np.testing.assert_allclose(got, want, rtol=1e-5)

    def test_offset_columns(self):
        # columns at 1e3..1e7 beside a spread of ~1: every solver reaches
        # statsmodels' fit of the unshifted X (the intercept moved by
        # -OFFSET.w) and newton/lbfgs its standard errors; uncentered
        # sums lost 12 digits of 16 here (newton: "rank deficient";
        # lbfgs "converged" 0.1 away; the others stalled)
        for family in FAMILIES:
            ref = statsmodels_glm(family, self.x, self.y[family])
            b = np.asarray(ref.params)
            w, c = b[:-1], b[-1] - OFFSET @ b[:-1]
            a = np.r_[-OFFSET, 1]
            se = np.r_[np.asarray(ref.bse)[:-1],
                       np.sqrt(a @ np.asarray(ref.cov_params()) @ a)]
            for solver in SOLVERS:
                what = "%s/%s" % (family, solver)
                with self.subTest(family=family, solver=solver):
                    opts = ["--solver", solver]
                    if solver in ("newton", "lbfgs"):
                        opts.append("--std-errors")
                    p = C.run("glm-fit", "--quiet", self.src("Xoff"),
                              self.src(family), "--family", family, *opts)
                    self.assertEqual(p.stderr, "", what)
                    doc = json.loads(p.stdout)
                    self.assertTrue(doc["converged"], what)
                    np.testing.assert_allclose(doc["coef"], w, rtol=0,
                                               atol=1e-6, err_msg=what)
                    self.assertLessEqual(abs(doc["intercept"] - c),
                                         1e-6 * max(1, abs(c)), what)
                    if "--std-errors" in opts:
                        np.testing.assert_allclose(
                            doc["stderr"] + [doc["intercept_stderr"]], se,
                            rtol=1e-6, err_msg=what)
        # a constant column is the intercept's twin, not a column to
        # center and scale up (its centered values are a few ulps of 0.1):
        # newton calls X rank deficient, the others leave it near 0 and
        # fit the rest as statsmodels fits X without it
        for family in FAMILIES:
            w, c = statsmodels_fit(family, self.x, self.y[family])
            for solver in SOLVERS:
                with self.subTest(family=family, solver=solver, x="Xoffc"):
                    p = C.run("glm-fit", "--quiet", self.src("Xoffc"),
                              self.src(family), "--family", family,
                              "--solver", solver, expect=None)
                    if solver == "newton":
                        self.assertCleanError(p, 1, "rank deficient")
                        continue
                    self.assertEqual(p.returncode, 0, p.stderr)
                    doc = json.loads(p.stdout)
                    self.assertTrue(doc["converged"])
                    self.assertLess(abs(doc["coef"][P]), 1e-6)
                    np.testing.assert_allclose(doc["coef"][:P], w, rtol=0,
                                               atol=1e-6)
                    c0 = c - OFFSET @ w
                    self.assertLessEqual(
                        abs(doc["intercept"] + 0.1 * doc["coef"][P] - c0),
                        1e-6 * max(1, abs(c0)))
        # an l2 penalty is on w, which the shift leaves as it is
        lam = 0.05
        for family in FAMILIES:
            w, c = scipy_l2_fit(family, lam, self.x, self.y[family])
            for solver in ("newton", "proximal_grad"):
                with self.subTest(family=family, solver=solver, reg="l2"):
                    doc = self.fit(family, "--solver", solver,
                                   "--regularizer", "l2", "--lambda",
                                   str(lam), x="Xoff")
                    self.assertTrue(doc["converged"])
                    np.testing.assert_allclose(doc["coef"], w, rtol=0,
                                               atol=1e-6)
                    self.assertLessEqual(abs(doc["intercept"] -
                                             (c - OFFSET @ w)), 1e-6 * 1e7)

    def test_penalty_is_on_the_coefficients_as_given(self):
        # the solvers work on scaled columns, but lambda weighs the
        # user's coefficients (chunkctl-glm-fit(1), the objective): the
        # l2 fit of X in other units is SciPy's of that X, and l1 and
        # elastic-net fits meet their optimality conditions there, each
        # entry over its column's root mean square (--tol's measure)
        x = self.x * UNITS2
        y = self.y["logistic"]
        rms = np.sqrt(np.mean(x * x, axis=0))
        lam = 0.01
        w, c = scipy_l2_fit("logistic", lam, x, y)
        for solver in ("newton", "lbfgs", "proximal_grad", "admm"):
            with self.subTest(reg="l2", solver=solver):
                doc = self.fit("logistic", "--solver", solver,
                               "--regularizer", "l2", "--lambda", str(lam),
                               x="Xunits2")
                self.assertTrue(doc["converged"], solver)
                np.testing.assert_allclose(doc["coef"] * UNITS2, w * UNITS2,
                                           rtol=0, atol=1e-6, err_msg=solver)
                self.assertLessEqual(abs(doc["intercept"] - c), 1e-6)
                self.assertAlmostEqual(
                    doc["objective"],
                    objective("logistic", "l2", lam, 0, x, y, doc["coef"],
                              doc["intercept"]), delta=1e-12)
        for reg in ("l1", "elastic_net"):
            for solver in ("proximal_grad", "admm"):
                with self.subTest(reg=reg, solver=solver):
                    doc = self.fit("logistic", "--solver", solver,
                                   "--regularizer", reg, "--lambda", "0.02",
                                   x="Xunits2")
                    self.assertTrue(doc["converged"], solver)
                    wv, gc = subgradient_gaps("logistic", reg, 0.02, 0.5,
                                              x, y, doc["coef"],
                                              doc["intercept"])
                    gap = max(np.max(wv / rms), abs(gc))
                    self.assertLessEqual(gap, 1e-8, (reg, solver, wv, gc))

    def test_non_convergence_warns(self):
        out = self.fresh("nc.h5")
        doc = self.fit("logistic", "--solver", "gradient_descent",
                       "--max-iter", "1", "-o", out)
        self.assertFalse(doc["converged"])
        self.assertEqual(doc["iterations"], 1)
        lines = doc["stderr"].strip().splitlines()
        self.assertEqual(len(lines), 1, doc["stderr"])
        self.assertIn("warning", lines[0])
        self.assertIn("converge", lines[0])
        with h5py.File(out, "r") as f:
            self.assertFalse(f["coef"].attrs["converged"])
        # and the iterate it returns is not the optimum
        w, c = self.ref["logistic"]
        self.assertGreater(np.max(np.abs(doc["coef"] - w)), 1e-3)


class GlmExtremeScales(C.InteropCase):
    """Data whose magnitudes sit far from 1: columns near 1e160, counts
    near e^16 and y near 1e10 (audit E).  The expected values are
    statsmodels'."""

    @classmethod
    def make_fixtures(cls):
        r = np.random.default_rng(8)
        x = r.standard_normal((300, 3))
        y = (r.random(300) < 1 / (1 + np.exp(-(x @ [1, -2, .5])))) * 1.0
        xbig = x.copy()
        xbig[:, 2] *= 1e160
        r = np.random.default_rng(9)
        n = 1000
        xp = r.standard_normal((n, 2))
        mu = np.exp(16 + 0.01 * xp[:, 0])
        yp = np.round(mu + r.standard_normal(n) * np.sqrt(mu) * 0.01)
        r = np.random.default_rng(9)
        xn = r.standard_normal((n, 2))
        yn = 1e10 * (1 + xn @ [0.1, 0.2] + 0.01 * r.standard_normal(n))
        r = np.random.default_rng(10)
        yp2 = r.poisson(np.exp(20 + 0.1 * xn[:, 0])) * 1.0
        with h5py.File(cls.path("s.h5"), "w") as f:
            f["xbig"], f["ybig"] = xbig, y
            f["xp"], f["yp"] = xp, yp
            f["xn"], f["yn"], f["yp2"] = xn, yn, yp2
        cls.xp, cls.yp, cls.xn, cls.yn, cls.yp2 = xp, yp, xn, yn, yp2

    def fit(self, x, y, family, *opts, expect=0):
        p = C.run("glm-fit", self.path("s.h5") + ":/" + x,
                  self.path("s.h5") + ":/" + y, "--family", family, *opts,
                  expect=expect)
        if expect != 0:
            return p
        doc = json.loads(p.stdout.strip().splitlines()[-1])
        doc["log"] = p.stderr
        return doc

    def test_overflowing_column_is_a_data_error(self):
        # its squares overflow: a one-line data error naming the column,
        # not an internal fault
        for family in ("logistic", "normal"):
            with self.subTest(family=family):
                p = self.fit("xbig", "ybig", family, expect=None)
                self.assertCleanError(p, 1, "column 2")

    def test_poisson_deviance_for_large_counts(self):
        ref = sm.GLM(self.yp, sm.add_constant(self.xp),
                     family=sm.families.Poisson()).fit(tol=1e-14)
        doc = self.fit("xp", "yp", "poisson")
        self.assertTrue(doc["converged"], doc["log"])
        # the deviance is ~0.1 beside counts ~9e6: statsmodels' own
        # rounding in mu (exp of eta ~ 16) limits the agreement
        self.assertAlmostEqual(doc["deviance"], ref.deviance,
                               delta=1e-6 * ref.deviance)
        self.assertAlmostEqual(doc["llf"], ref.llf, delta=1e-9 * abs(ref.llf))

    def test_large_y_converges(self):
        ref = sm.OLS(self.yn, sm.add_constant(self.xn)).fit()
        doc = self.fit("xn", "yn", "normal", "--std-errors", "--quiet")
        self.assertTrue(doc["converged"], doc["log"])
        self.assertEqual(doc["log"], "")
        b = np.append(doc["coef"], doc["intercept"])
        np.testing.assert_allclose(b, np.roll(ref.params, -1), rtol=1e-9)
        np.testing.assert_allclose(doc["stderr"] + [doc["intercept_stderr"]],
                                   np.roll(ref.bse, -1), rtol=1e-6)
        ref = sm.GLM(self.yp2, sm.add_constant(self.xn),
                     family=sm.families.Poisson()).fit()
        doc = self.fit("xn", "yp2", "poisson", "--quiet")
        self.assertTrue(doc["converged"], doc["log"])
        b = np.append(doc["coef"], doc["intercept"])
        np.testing.assert_allclose(b, np.roll(ref.params, -1), rtol=1e-8,
                                   atol=1e-9)


    def test_stop_short_of_max_iter_says_why(self):
        # no tol this small can be met: the solver stops where no step
        # lowers the objective, well before max_iter, and says so
        for solver in ("newton", "lbfgs"):
            with self.subTest(solver=solver):
                doc = self.fit("xn", "yn", "normal", "--solver", solver,
                               "--tol", "1e-300", "--quiet")
                self.assertFalse(doc["converged"])
                lines = doc["log"].strip().splitlines()
                self.assertEqual(len(lines), 1, doc["log"])
                self.assertIn("warning", lines[0])
                self.assertIn("raise tol", lines[0])
                self.assertNotIn("max_iter", lines[0])

def read_h5(path, ds):
    with h5py.File(path, "r") as f:
        return f[ds][()]


class GlmFromDisk(C.InteropCase):
    """X larger than --memory, read from disk on every pass (in chunks
    mapped in place, or decoded): newton and lbfgs then start from a newton
    fit on a sample of the rows (the first rows of each chunk) and take a
    kept Hessian for their last steps.  The optimum must be the same:
    statsmodels' IRLS fit of all the rows, to 1e-6.  A value glm_fit
    refuses is reported by the first pass whether or not the sample holds
    it."""

    N, P = 240000, 8
    MEMORY = "32M"  # X is 15 MB: read on every pass, one chunk a block
    UNITS = np.array([1e-8, 1, 1e10, 1, 1, 1, 1, 1])
    OFFSET = np.array([0, 2e3, 0, 1e7, 0, 0, -1e5, 0])

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261207)
        n, p = cls.N, cls.P
        x = rng.standard_normal((n, p)) * np.linspace(0.5, 2, p)
        w = np.linspace(-0.4, 0.4, p)
        eta = x @ w - 0.2
        cls.x = x
        cls.y = {
            "logistic": (rng.random(n) < mean_fn("logistic", eta)) * 1.0,
            "normal": eta + rng.standard_normal(n),
            "poisson": rng.poisson(np.exp(eta)) * 1.0,
        }
        with h5py.File(cls.path("big.h5"), "w") as f:
            f.create_dataset("X", data=x, chunks=(40000, p))
            for k, v in cls.y.items():
                f.create_dataset(k, data=v, chunks=(40000,))
            # compressed, and float32: the sample is read through the
            # chunk decoder and converted
            f.create_dataset("Xz", data=x, chunks=(40000, p),
                             compression="gzip")
            f.create_dataset("X4", data=x.astype(np.float32),
                             chunks=(40000, p))
            f.create_dataset("Xunits", data=x * cls.UNITS,
                             chunks=(40000, p))
            f.create_dataset("Xoff", data=x + cls.OFFSET, chunks=(40000, p))
            # NaN outside the sample (chunk 4, row 10000 of it) and inside
            # it (chunk 1, its row 10)
            for name, row in (("Xnan_late", 170000), ("Xnan_sample", 40010)):
                xn = x.copy()
                xn[row, 3] = np.nan
                f.create_dataset(name, data=xn, chunks=(40000, p))
        cls.ref = {f: statsmodels_fit(f, x, cls.y[f]) for f in FAMILIES}

    def fit(self, family, *opts, x="X"):
        src = self.path("big.h5")
        p = C.run("glm-fit", "--quiet", src + ":/" + x, src + ":/" + family,
                  "--family", family, "--memory", self.MEMORY, *opts)
        return json.loads(p.stdout)

    def test_newton_and_lbfgs_reach_statsmodels_optimum(self):
        for family in FAMILIES:
            w, c = self.ref[family]
            for solver in ("newton", "lbfgs"):
                with self.subTest(family=family, solver=solver):
                    doc = self.fit(family, "--solver", solver)
                    self.assertTrue(doc["converged"])
                    np.testing.assert_allclose(doc["coef"], w, rtol=0,
                                               atol=1e-6)
                    self.assertLessEqual(abs(doc["intercept"] - c), 1e-6)

    def test_column_units_from_disk(self):
        # the sample's fit, its start and its Hessian, in other units (a
        # column near 1e10, where rounding alone keeps the gradient's
        # entry above an absolute 1e-8): statsmodels' fit of the unscaled
        # X over the units, to 1e-6 where the columns are near 1
        for family in FAMILIES:
            w, c = self.ref[family]
            for solver in ("newton", "lbfgs"):
                with self.subTest(family=family, solver=solver):
                    doc = self.fit(family, "--solver", solver, x="Xunits")
                    self.assertTrue(doc["converged"])
                    np.testing.assert_allclose(
                        np.array(doc["coef"]) * self.UNITS, w, rtol=0,
                        atol=1e-6)
                    self.assertLessEqual(abs(doc["intercept"] - c), 1e-6)

    def test_offset_columns_from_disk(self):
        # the sample's fit centers on the sample's means, the full fit on
        # all rows': the sample's Hessian is carried to the full fit's
        # center, and the optimum is statsmodels' on the unshifted X
        for family in FAMILIES:
            w, c = self.ref[family]
            for solver in ("newton", "lbfgs"):
                with self.subTest(family=family, solver=solver):
                    doc = self.fit(family, "--solver", solver, x="Xoff")
                    self.assertTrue(doc["converged"])
                    np.testing.assert_allclose(doc["coef"], w, rtol=0,
                                               atol=1e-6)
                    self.assertLessEqual(
                        abs(doc["intercept"] - (c - self.OFFSET @ w)),
                        1e-6 * max(1, abs(c - self.OFFSET @ w)))

    def test_std_errors_from_disk(self):
        # newton keeps a Hessian for its last steps here: the standard
        # errors take one at the optimum itself
        for family in FAMILIES:
            want = statsmodels_bse(family, self.x, self.y[family])
            for solver in ("newton", "lbfgs"):
                with self.subTest(family=family, solver=solver):
                    doc = self.fit(family, "--solver", solver, "--std-errors")
                    got = doc["stderr"] + [doc["intercept_stderr"]]
                    np.testing.assert_allclose(got, want, rtol=1e-6)

    def test_compressed_and_float32_x(self):
        w, c = self.ref["logistic"]
        x4 = self.x.astype(np.float32).astype(np.float64)
        w4, c4 = statsmodels_fit("logistic", x4, self.y["logistic"])
        for x, (wr, cr) in (("Xz", (w, c)), ("X4", (w4, c4))):
            for solver in ("newton", "lbfgs"):
                with self.subTest(x=x, solver=solver):
                    doc = self.fit("logistic", "--solver", solver, x=x)
                    self.assertTrue(doc["converged"])
                    np.testing.assert_allclose(doc["coef"], wr, rtol=0,
                                               atol=1e-6)
                    self.assertLessEqual(abs(doc["intercept"] - cr), 1e-6)

    def test_poisson_start_too_far_out_is_dropped(self):
        # the sample (the first rows of each chunk) misses 10 rows per
        # chunk with x0 = 800: its b0 makes exp(800 b0) overflow there, so
        # the fit must start again from 0 rather than blame the data
        rng = np.random.default_rng(20261209)
        n = 700000  # 11 MB of X: read on every pass under --memory 32M
        x = rng.standard_normal((n, 2))
        y = rng.poisson(np.exp(x[:, 0] + 0.5 * x[:, 1])) * 1.0
        for c in range(10):
            r = c * 70000 + 60000
            x[r:r + 10, 0] = 800
            y[r:r + 10] = 0
        src = self.path("pois.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("X", data=x, chunks=(70000, 2))
            f.create_dataset("y", data=y, chunks=(70000,))
        w, c = statsmodels_fit("poisson", x, y)
        for solver in ("newton", "lbfgs"):
            with self.subTest(solver=solver):
                p = C.run("glm-fit", "--quiet", src + ":/X", src + ":/y",
                          "--family", "poisson", "--solver", solver,
                          "--memory", self.MEMORY)
                doc = json.loads(p.stdout)
                self.assertTrue(doc["converged"])
                np.testing.assert_allclose(doc["coef"], w, rtol=0, atol=1e-6)
                self.assertLessEqual(abs(doc["intercept"] - c), 1e-6)

    def test_l2_matches_scipy(self):
        lam = 0.01
        w, c = scipy_l2_fit("logistic", lam, self.x, self.y["logistic"])
        for solver in ("newton", "lbfgs"):
            with self.subTest(solver=solver):
                doc = self.fit("logistic", "--solver", solver,
                               "--regularizer", "l2", "--lambda", str(lam))
                np.testing.assert_allclose(doc["coef"], w, rtol=0, atol=1e-6)
                self.assertLessEqual(abs(doc["intercept"] - c), 1e-6)

    def test_nan_is_named_in_or_out_of_the_sample(self):
        src = self.path("big.h5")
        for x, row in (("Xnan_late", 170000), ("Xnan_sample", 40010)):
            for solver in ("newton", "lbfgs"):
                with self.subTest(x=x, solver=solver):
                    p = C.run("glm-fit", "--quiet", src + ":/" + x,
                              src + ":/logistic", "--family", "logistic",
                              "--solver", solver, "--memory", self.MEMORY,
                              expect=None)
                    self.assertCleanError(p, p.returncode, "row %d" % row,
                                          "column 3", "nan")
                    self.assertNotEqual(p.returncode, 0)


if __name__ == "__main__":
    C.main()
