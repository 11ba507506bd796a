"""Edge cases found by the audits of 2026-11-28 (NumPy, zarr-python and
bad input), each checked against the independent tool or the documented
contract:

- nanvar/nanstd of integers with ddof >= n is inf, as NumPy's (whose
  nanvar of an array that cannot hold NaN is var), while of floats it is
  NaN;
- a histogram written to a Zarr store alone keeps its counts and edges
  side by side (/histogram, /histogram_edges), as in HDF5;
- gen --dist integers refuses bounds NumPy's Generator.integers refuses
  (outside the dtype, not whole) instead of clipping the values;
- verify reports a Zarr array whose .zattrs is not JSON, which info and
  copy refuse;
- --compress NAME:shuffle keeps the default level (the usage says each
  codec "may add :shuffle");
- copied attributes keep their Python types and exact values both ways
  between HDF5 and Zarr: a NaN or inf float stays a float (not the string
  "NaN"), integers past 2^53 stay exact, uint64 past INT64_MAX stays
  uint64, a float 1.0 stays a float, and a string "NaN" stays a string;
- histogram2d prints its counts as a one-step command, as NumPy counts;
- svd --shards shards U and Vt and writes the 1-D S without shards;
- glm-fit says that no maximum-likelihood fit exists (converged false, a
  warning) where statsmodels raises PerfectSeparationError: separated
  classes, y all 0 for logistic and poisson; not for data that overlap;
  --tol 0 is refused, not replaced by the default;
- glm-fit says so too where only some rows are separated (quasi-complete
  separation), for which statsmodels answers a coefficient in the
  thousands as converged, and newton failed on a singular Hessian;
- glm-fit's standard errors of a rank-deficient X are null with every
  solver (three printed millions), a saturated normal fit says it has no
  residual degrees of freedom (not "rank deficient"), a penalised fit of
  y all 0 or all 1 says there is nothing to fit (its intercept grew), and
  bad data is named by its file and dataset, not "X ('X')";
- a netCDF attribute of one element copies to Zarr as one value, as
  netCDF4 reads it, not a list of one (a listed _Unsigned was not seen),
  and a 0-d array in a Zarr v2 store has _ARRAY_DIMENSIONS [];
- svd of data far from 1 in magnitude: randomized svd (whose passes
  square the magnitude) matches NumPy from 1e-250 to 1e300, where 1e155
  overflowed and 1e-200 gave zeros; values near the smallest doubles are
  refused by both methods rather than answered with NaN;
- a step that names an svd or glm_fit step itself (not one of its
  results) is refused when the pipeline is read, naming the results,
  where it failed at run time with "g is not evaluated by box";
- a whole-store copy keeps every group, with its attributes: empty ones
  and those that hold only attributes (h5py's metadata groups) were
  dropped; a store of one array with such a group stays a store;
- a Zarr lz4 compressor with an acceleration above 1000 (zarr-python
  writes any, chunkctl up to 65537) is read, and a copy of it to HDF5
  (which has no lz4) is written with gzip unless --compress says else;
- a Zarr v3 array with a metadata field chunkctl does not know is
  refused unless the field says "must_understand": false, as the spec
  requires of readers;
- HDF5-to-HDF5 copies keep numeric attributes' types (netCDF4 decodes a
  variable with a float32 scale_factor as float32), and a file of one
  array keeps its root's attributes (a Zarr copy becomes a store);
- an array named like one of its own dimensions copies to HDF5 with
  that name as a dimension label (a netCDF output refuses it by name);
- a dangling HDF5 soft or external link is named as such, not "no
  array";
- gaussian_filter of a constant integer image keeps it (42 became 41);
- a -0.0 literal keeps its sign, and argwhere of a 0-d array has NumPy's
  shape (1, 0);
- --force replaces a file or a Zarr store, not a directory that is not
  a store (or one named *.h5): that is refused, not dropped;
- HDF5-to-HDF5 copies keep the numeric types of every group's
  attributes, not only the root's and the arrays';
- copies keep an HDF5 axis that may grow (netCDF's unlimited dimension,
  h5py's maxshape None) growable;
- a randomized svd refused for memory names all it needs at once: the
  first refusal counted the range matrices only ("raise --memory above
  73.2 MiB"), and at that the row blocks were refused ("need 126.5 MiB");
- a pipeline whose output's chunks do not fit --memory is refused before
  its reductions read their input, not after;
- Zarr v2 attributes past ASCII (units in micrometres) are written as \\u
  escapes, which zarr-python 2 (reading metadata as ASCII) can open;
- --filters delta on booleans (whose numcodecs decoding loses the values:
  all came back True) and shuffle with an element size that does not
  divide the chunk (which zarr-python cannot decode) are refused;
- nanargmin/nanargmax take NaN for +inf/-inf as NumPy does, so a NaN
  before the infinity is the answer (2026-11-29 audit);
- a number written with a fraction or an exponent (2.0, 1e0) is a float
  to NumPy's promotion, in a pipeline and on a one-step command line;
- compress takes a condition array of any dtype, nonzero true, as
  numpy.compress (audit 2 of 2026-11-29).
- a uniform range whose width high - low is past the largest double is
  refused by gen and the random step, as NumPy's Generator.uniform
  raises OverflowError, where every value was inf (audit 3 of
  2026-11-29);
- a pipeline string or key holding a NUL (json.dumps writes \\u0000) is
  refused, naming where, where cJSON cut it there: "sum\\u0000zz" ran as
  sum and "in.h5\\u0000zz:/f" read in.h5;
- an input or output target refused for its form (no file name, no
  format, "PATH:") names the pipeline file and inputs.NAME or
  outputs.NAME, as every other input and output error does;
- an axis list element that is not a whole number ([[1]], true, 1.5)
  is said to be no integer, where it was "axis nan out of range" (NumPy
  raises TypeError for it, not AxisError);
"""
import math
import json
import os

import _common as C
from _common import np, h5py, zarr


class EdgeCases(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("i", data=np.array([1, 2, 3], "i4"))
            f.create_dataset("f", data=np.array([1.0, 2.0, 3.0]))
            f.create_dataset("x", data=np.arange(40.0).reshape(8, 5),
                             chunks=(3, 5))

    def test_nanvar_of_integers_with_ddof_past_n(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for op in ("nanvar", "nanstd", "var"):
                for name, data in (("i", np.array([1, 2, 3], "i4")),
                                   ("f", np.array([1.0, 2.0, 3.0]))):
                    with self.subTest(op=op, dtype=name):
                        want = getattr(np, op)(data, ddof=3)
                        got = C.run(op, self.path("in.h5") + ":/" + name,
                                    "--ddof", "3", "--quiet").stdout.strip()
                        if np.isnan(want):
                            self.assertEqual(got, "nan")
                        else:
                            self.assertEqual(float(got), float(want), got)

    def test_histogram_alone_in_a_zarr_store(self):
        out = self.fresh("h.zarr")
        C.run("histogram", "--quiet", self.path("in.h5") + ":/x",
              "--bins", "4", "-o", out)
        g = zarr.open_group(out, mode="r")
        counts, edges = np.histogram(np.arange(40.0), 4)
        self.assertSameArray(g["histogram"][...], counts)
        self.assertSameArray(g["histogram_edges"][...], edges)

    def test_gen_integers_refuses_what_numpy_refuses(self):
        for opts, needle in (
                (("--low", "0", "--high", "1000", "--dtype", "uint8"),
                 "outside uint8's range"),
                (("--low", "-1", "--high", "5", "--dtype", "uint16"),
                 "outside uint16's range"),
                (("--low", "0.5", "--high", "2.5"), "whole --low and --high")):
            with self.subTest(opts=opts):
                out = self.fresh("g.zarr")
                p = C.gen(out, "--shape", "10", "--dist", "integers", *opts,
                          expect=2)
                self.assertCleanError(p, 2, needle)
                self.assertFalse(os.path.exists(out))
        out = self.fresh("g.zarr")
        C.gen(out, "--shape", "1000", "--dist", "integers", "--low", "0",
              "--high", "256", "--dtype", "uint8")
        a = zarr.open(out, mode="r")[...]
        self.assertEqual(a.dtype, np.uint8)
        self.assertGreater(len(np.unique(a)), 200)  # not clipped

    def test_verify_reports_unreadable_zattrs(self):
        out = self.fresh("v.zarr")
        C.copy(self.path("in.h5") + ":/x", out)
        with open(os.path.join(out, ".zattrs"), "w") as f:
            f.write('{"a": [1,')
        p = C.run("verify", "--quiet", out, expect=None)
        self.assertCleanError(p, 1, "v.zarr/.zattrs", "invalid JSON")

    def test_compress_shuffle_without_a_level(self):
        for spec, want in (("zstd:shuffle", "zstd:3:shuffle"),
                           ("gzip:shuffle", "gzip:4:shuffle")):
            with self.subTest(spec=spec):
                out = self.fresh("c.h5")
                C.copy(self.path("in.h5") + ":/x", out, "--compress", spec)
                with h5py.File(out, "r") as f:
                    self.assertSameArray(f["x"][()],
                                         np.arange(40.0).reshape(8, 5))
                info = C.info(out + ":/x")
                self.assertEqual(info["arrays"][0]["compressor"], want)

    def assertSameAttrs(self, got, want):
        self.assertEqual(sorted(got), sorted(want))
        for k, w in want.items():
            g = got[k]
            if isinstance(g, np.ndarray):
                g = g.tolist()
            elif isinstance(g, np.generic):
                g = g.item()
            with self.subTest(attr=k):
                if isinstance(w, float) and math.isnan(w):
                    self.assertIsInstance(g, float)
                    self.assertTrue(math.isnan(g))
                else:
                    self.assertEqual(repr(g), repr(w))

    def test_attributes_keep_types_and_values(self):
        attrs = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf,
                 "big": 2**62 + 1, "neg": -2**62 - 1, "one": 1.0,
                 "third": 1.0 / 3.0, "s": "NaN", "lst": [1, 2**60 + 3],
                 "fl": [1.0, 2.5]}
        z = self.fresh("a.zarr")
        zarr.open(z, mode="w", shape=(4,), chunks=(2,), dtype="f8")[:] = 1
        zarr.open(z, mode="r+").attrs.update(attrs)
        h = self.fresh("a.h5")
        C.copy(z, h)
        with h5py.File(h, "r") as f:
            self.assertSameAttrs(dict(f["data"].attrs), attrs)
        back = self.fresh("b.zarr")
        C.copy(h + ":/data", back)
        self.assertSameAttrs(dict(zarr.open(back, mode="r").attrs), attrs)
        # HDF5 -> Zarr: h5py's NumPy values as zarr-python reads them
        h2 = self.fresh("u.h5")
        with h5py.File(h2, "w") as f:
            d = f.create_dataset("x", data=np.arange(4.0))
            d.attrs["u"] = np.uint64(2**64 - 1)
            d.attrs["nan"] = np.nan
            d.attrs["one"] = 1.0
            d.attrs["v"] = np.array([0.5, np.inf])
        z2 = self.fresh("u.zarr")
        C.copy(h2, z2)
        self.assertSameAttrs(
            dict(zarr.open(z2, mode="r").attrs),
            {"u": 2**64 - 1, "nan": math.nan, "one": 1.0,
             "v": [0.5, math.inf]})
        # info --json stays JSON: non-finite floats are spelled as strings
        a = C.info(z2)["arrays"][0]["attrs"]
        self.assertEqual(a["nan"], "NaN")
        self.assertEqual(a["u"], 2**64 - 1)

    def test_histogram2d_prints(self):
        x = np.arange(40.0).reshape(8, 5)
        p = C.run("histogram2d", self.path("in.h5") + ":/x",
                  self.path("in.h5") + ":/x", "--bins", "4", "--range",
                  "[[0,40],[0,20]]", "--json")
        got = json.loads(p.stdout)["histogram2d"]
        want = np.histogram2d(x.ravel(), x.ravel(), bins=4,
                              range=[[0, 40], [0, 20]])[0]
        self.assertEqual(got["shape"], [4, 4])
        self.assertEqual(got["values"], want.astype(int).ravel().tolist())

    def test_svd_shards_apply_to_the_2d_results(self):
        out = self.fresh("s.zarr")
        p = C.run("svd", self.path("in.h5") + ":/x", "--zarr-format", "3",
                  "--shards", "8,5", "-o", out)
        self.assertIn("/S: written without shards", p.stderr)
        arrays = {a["name"]: a for a in C.info(out)["arrays"]}
        self.assertEqual(arrays["/U"]["shards"], [8, 5])
        self.assertEqual(arrays["/Vt"]["shards"], [8, 5])
        self.assertIsNone(arrays["/S"]["shards"])
        s = np.linalg.svd(np.arange(40.0).reshape(8, 5), compute_uv=False)
        p = C.run("svd", self.path("in.h5") + ":/x", "--no-u", "-o",
                  self.fresh("n.h5"))
        self.assertIn(": S, Vt\n", p.stdout)
        with h5py.File(self.path("n.h5"), "r") as f:
            self.assertNotIn("U", f)
            np.testing.assert_allclose(f["S"][()], s, rtol=1e-12, atol=1e-12)

    def test_glm_without_a_maximum_likelihood_fit(self):
        import statsmodels.api as sm
        from statsmodels.tools.sm_exceptions import PerfectSeparationError
        rng = np.random.default_rng(2)
        x = rng.normal(size=(200, 2))
        ys = {"sep": (x[:, 0] > 0) * 1.0, "zero": np.zeros(200)}
        over = ys["sep"].copy()
        over[[5, 17, 40]] = 1 - over[[5, 17, 40]]
        path = self.fresh("g.h5")
        with h5py.File(path, "w") as f:
            f["X"] = x
            for k, v in dict(ys, over=over).items():
                f[k] = v
        cases = [("sep", "logistic", sm.families.Binomial()),
                 ("zero", "logistic", sm.families.Binomial()),
                 ("zero", "poisson", sm.families.Poisson())]
        for y, fam, smfam in cases:
            with self.subTest(y=y, family=fam):
                # (y all 0: statsmodels' first deviance is already nan)
                with self.assertRaises((PerfectSeparationError, ValueError)):
                    sm.GLM(ys[y], sm.add_constant(x), family=smfam).fit()
                for solver in ("newton", "lbfgs", "admm"):
                    p = C.run("glm-fit", path + ":/X", path + ":/" + y,
                              "--family", fam, "--solver", solver)
                    self.assertFalse(json.loads(p.stdout)["converged"])
                    self.assertIn("no maximum-likelihood fit exists",
                                  p.stderr)
        ref = sm.GLM(over, sm.add_constant(x),
                     family=sm.families.Binomial()).fit(tol=1e-12)
        p = C.run("glm-fit", path + ":/X", path + ":/over", "--tol", "1e-12")
        got = json.loads(p.stdout)
        self.assertTrue(got["converged"])
        self.assertEqual(p.stderr, "")
        np.testing.assert_allclose([got["intercept"]] + got["coef"],
                                   ref.params, rtol=1e-6)
        p = C.run("glm-fit", path + ":/X", path + ":/over", "--tol", "0",
                  expect=None)
        self.assertCleanError(p, 2, "tol must be a number in (0, 1]")

    def test_glm_quasi_complete_separation(self):
        import statsmodels.api as sm
        # rows with x0 != 0 are separated by x0's sign (logistic), or are
        # y = 0 where x0 < 0 (poisson); the rows with x0 = 0 overlap: the
        # coefficient of x0 has no finite maximum-likelihood value.
        # statsmodels does not say so (a "converged" coefficient in the
        # thousands with a standard error a thousand times larger, or no
        # convergence); chunkctl did the same.  Moving the overlap rows off
        # x0 = 0 makes the fit exist: then no warning, statsmodels' fit.
        import warnings
        rng = np.random.default_rng(5)
        x = rng.normal(size=(300, 2))
        x[:60, 0] = 0.0
        yl = (x[:, 0] > 0) * 1.0
        yl[:60] = rng.integers(0, 2, 60)
        xp = x.copy()
        xp[60:, 0] = -np.abs(xp[60:, 0])
        yp = np.zeros(300)
        yp[:60] = rng.poisson(2.0, 60)
        xn = x.copy()
        xn[:60, 0] = rng.normal(size=60) * 0.05
        path = self.fresh("q.h5")
        with h5py.File(path, "w") as f:
            for k, v in dict(x=x, yl=yl, xp=xp, yp=yp, xn=xn).items():
                f[k] = v
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for X, y, fam in ((x, yl, sm.families.Binomial()),
                              (xp, yp, sm.families.Poisson())):
                r = sm.GLM(y, sm.add_constant(X), family=fam).fit()
                self.assertTrue(not r.converged or
                                r.bse[1] > 100 * abs(r.params[1]))
        for X, y, fam in (("x", "yl", "logistic"), ("xp", "yp", "poisson")):
            for solver in ("newton", "lbfgs", "admm", "proximal_grad"):
                with self.subTest(family=fam, solver=solver):
                    p = C.run("glm-fit", path + ":/" + X, path + ":/" + y,
                              "--family", fam, "--solver", solver,
                              "--std-errors")
                    got = json.loads(p.stdout)
                    self.assertFalse(got["converged"])
                    self.assertIsNone(got["stderr"][0])
                    self.assertIn("quasi-complete separation", p.stderr)
                    self.assertIn("led by column 0", p.stderr)
        ref = sm.GLM(yl, sm.add_constant(xn),
                     family=sm.families.Binomial()).fit(tol=1e-12)
        for solver in ("newton", "lbfgs"):
            p = C.run("glm-fit", path + ":/xn", path + ":/yl", "--solver",
                      solver, "--tol", "1e-10")
            got = json.loads(p.stdout)
            self.assertTrue(got["converged"])
            self.assertEqual(p.stderr, "")
            np.testing.assert_allclose([got["intercept"]] + got["coef"],
                                       ref.params, rtol=1e-6)

    def test_glm_fits_without_standard_errors_or_without_a_fit(self):
        import warnings
        import statsmodels.api as sm
        from sklearn.linear_model import LogisticRegression
        rng = np.random.default_rng(3)
        n = 200
        x = rng.normal(size=(n, 3))
        eta = x @ [1, -1, .5] + .2
        yl = (rng.random(n) < 1 / (1 + np.exp(-eta))) * 1.0
        yp = rng.poisson(np.exp(.3 * eta)) * 1.0
        xconst = np.c_[x, np.full(n, 2.0)]
        xdup = np.c_[x, x[:, 0]]
        xsat = rng.normal(size=(n, n - 1))
        yn = eta + rng.normal(size=n)
        path = self.fresh("se.h5")
        with h5py.File(path, "w") as f:
            for k, v in dict(xconst=xconst, xdup=xdup, xsat=xsat, yn=yn,
                             yl=yl, yp=yp, ones=np.ones(n),
                             zeros=np.zeros(n)).items():
                f[k] = v
        # rank-deficient X (with the intercept): null standard errors
        # whatever the solver (admm, proximal_grad and gradient_descent
        # printed ones in the millions, Cholesky passing on pivots of
        # rounding size)
        for X in ("xconst", "xdup"):
            self.assertLess(
                np.linalg.matrix_rank(sm.add_constant(
                    xconst if X == "xconst" else xdup, has_constant="add")),
                5)
            for y, fam in (("yl", "logistic"), ("yp", "poisson")):
                for solver in ("lbfgs", "admm", "proximal_grad",
                               "gradient_descent"):
                    with self.subTest(X=X, family=fam, solver=solver):
                        p = C.run("glm-fit", path + ":/" + X,
                                  path + ":/" + y, "--family", fam,
                                  "--solver", solver, "--std-errors")
                        got = json.loads(p.stdout)
                        self.assertEqual(got["stderr"], [None] * 4)
                        self.assertIsNone(got["intercept_stderr"])
                        self.assertIn("information matrix is singular",
                                      p.stderr)
        # a saturated normal fit (n = p + 1) has full rank but no residual
        # degrees of freedom: statsmodels' df_resid is 0 and its bse not
        # finite
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = sm.OLS(yn, sm.add_constant(xsat)).fit()
        self.assertEqual(ref.df_resid, 0)
        self.assertFalse(np.isfinite(ref.bse).all())
        p = C.run("glm-fit", path + ":/xsat", path + ":/yn", "--family",
                  "normal", "--std-errors")
        self.assertIsNone(json.loads(p.stdout)["stderr"][0])
        self.assertIn("no residual degrees of freedom (200 rows for 200 "
                      "parameters)", p.stderr)
        # y of one class has no fit even with a penalty, which does not
        # reach the intercept (scikit-learn refuses such y)
        with self.assertRaises(ValueError):
            LogisticRegression().fit(x, np.ones(n))
        for y, fam, solver in (("ones", "logistic", "newton"),
                               ("ones", "logistic", "lbfgs"),
                               ("zeros", "logistic", "newton"),
                               ("zeros", "poisson", "admm")):
            with self.subTest(y=y, family=fam, solver=solver):
                p = C.run("glm-fit", path + ":/xconst", path + ":/" + y,
                          "--family", fam, "--solver", solver,
                          "--regularizer", "l2", "--lambda", "0.1")
                self.assertFalse(json.loads(p.stdout)["converged"])
                self.assertIn("no fit exists: y is all 0", p.stderr)
        # and a penalised fit of two classes is no such thing
        p = C.run("glm-fit", path + ":/xconst", path + ":/yl",
                  "--regularizer", "l2", "--lambda", "0.1")
        self.assertTrue(json.loads(p.stdout)["converged"])
        self.assertEqual(p.stderr, "")

    def test_glm_errors_name_the_data(self):
        path = self.fresh("bad.h5")
        x = np.random.default_rng(0).random((50, 3))
        xnan = x.copy()
        xnan[33, 1] = np.nan
        with h5py.File(path, "w") as f:
            f["x"], f["xnan"], f["x4"] = x, xnan, np.c_[x, x[:, 0]]
            f["y"] = (x[:, 0] > .5) * 1.0
            f["y40"], f["y2"] = np.zeros(40), np.full(50, 2.0)
        model = self.fresh("m.h5")
        C.run("glm-fit", path + ":/x", path + ":/y", "-o", model)
        for args, code, needles in (
                ((":/xnan", ":/y"), 1, ("bad.h5:/xnan", "row 33 column 1")),
                ((":/x", ":/y2"), 1, ("bad.h5:/y2", "row 0 is 2")),
                ((":/x", ":/y40"), 2, ("bad.h5:/x", "bad.h5:/y40"))):
            with self.subTest(args=args):
                p = C.run("glm-fit", *[path + a for a in args], expect=None)
                self.assertCleanError(p, code, *needles)
        p = C.run("glm-predict", model, path + ":/x4", "-o",
                  self.fresh("p.h5") + ":/p", expect=None)
        self.assertCleanError(p, 2, "bad.h5:/x4", "m.h5", "4 columns")

    def test_netcdf_attributes_and_scalars_in_zarr(self):
        # netCDF-C writes every attribute as a 1-D array: one of one
        # element is one value to netCDF4 (and to xarray, which reads
        # Zarr attributes as they are); a copy made them lists
        # (["days since ..."], [0.5]), so that a Zarr _Unsigned ["true"]
        # was not seen.  A 0-d variable's dimensions are () to netCDF4:
        # xarray needs _ARRAY_DIMENSIONS [] on it too.
        import netCDF4
        src = self.fresh("a.nc")
        d = netCDF4.Dataset(src, "w")
        d.createDimension("x", 4)
        b = d.createVariable("b", "i1", ("x",))
        b.setncattr_string("_Unsigned", "true")
        b.set_auto_maskandscale(False)
        b[:] = [-2, 5, -128, 100]
        t = d.createVariable("t", "f8", ("x",))
        t.setncattr_string("units", "days since 2000-01-01")
        t.scale_factor = 0.5
        t.valid_range = np.array([0, 10.0])
        t[:] = [1, 2, 3, 4]
        crs = d.createVariable("crs", "i4", ())
        crs.grid_mapping_name = "latitude_longitude"
        d.close()
        out = self.fresh("a.zarr")
        C.run("copy", "--quiet", src, out)
        g = zarr.open_group(out, mode="r")
        with netCDF4.Dataset(src) as d:
            for name in ("b", "t", "crs"):
                v = d[name]
                attrs = dict(g[name].attrs)
                self.assertEqual(attrs.pop("_ARRAY_DIMENSIONS"),
                                 list(v.dimensions))
                self.assertEqual(sorted(attrs), sorted(v.ncattrs()))
                for k in v.ncattrs():
                    want = v.getncattr(k)
                    if isinstance(want, np.ndarray):
                        self.assertEqual(attrs[k], want.tolist(), k)
                    else:
                        self.assertEqual(attrs[k], want, k)
                        self.assertNotIsInstance(attrs[k], list, k)
            d.set_auto_maskandscale(False)
            want = int(d["b"][:].astype("u1").sum())
        self.assertEqual(C.run("sum", out + ":/b", "--quiet").stdout.strip(),
                         str(want))

    def test_svd_of_data_far_from_one(self):
        rng = np.random.default_rng(0)
        a = rng.normal(size=(200, 10))
        ref = np.linalg.svd(a, compute_uv=False)
        path = self.fresh("scale.h5")
        with h5py.File(path, "w") as f:
            for e in (-250, -200, -160, 155, 200, 300, -300, -310):
                f["e%d" % e] = a * 10.0 ** e
            # the largest singular value 1.7e308, and finite values whose
            # singular values overflow (NumPy: inf)
            f["e307"] = a * 1e307
            f["e307t"] = (a * 1e307).T
            f["o307"] = a * 1.5e307
            f["o307t"] = (a * 1.5e307).T
        for e in (-250, -200, -160, 155, 200, 300):
            for method in (("--randomized", "--k", "3"), ()):
                with self.subTest(e=e, method=method):
                    p = C.run("svd", path + ":/e%d" % e, *method, "--json",
                              "-o", self.fresh("o.h5"))
                    got = np.array(json.loads(p.stdout)["S"])
                    np.testing.assert_allclose(
                        got, ref[:len(got)] * 10.0 ** e, rtol=1e-12)
                    with h5py.File(self.path("o.h5"), "r") as f:
                        u = f["U"][()]
                    np.testing.assert_allclose(u.T @ u, np.eye(len(got)),
                                               atol=1e-12)
        for e in (-300, -310):
            for method in (("--randomized", "--k", "3"), ()):
                with self.subTest(e=e, method=method):
                    p = C.run("svd", path + ":/e%d" % e, *method, "-o",
                              self.fresh("o.h5"), expect=None)
                    self.assertCleanError(p, 1, "e%d" % e,
                                          "too close to the smallest doubles")
                    self.assertFalse(os.path.exists(self.path("o.h5")))
        want = np.linalg.svd(a * 1e307, compute_uv=False)
        self.assertTrue(np.isfinite(want[0]))
        for name in ("e307", "e307t"):
            for method in (("--randomized", "--k", "3"), ()):
                with self.subTest(name=name, method=method):
                    p = C.run("svd", path + ":/" + name, *method, "--json",
                              "-o", self.fresh("o.h5"))
                    got = np.array(json.loads(p.stdout)["S"])
                    np.testing.assert_allclose(got, want[:len(got)],
                                               rtol=1e-12)
                    with h5py.File(self.path("o.h5"), "r") as f:
                        u = f["U"][()]
                    np.testing.assert_allclose(u.T @ u, np.eye(len(got)),
                                               atol=1e-12)
        self.assertFalse(np.isfinite(np.linalg.svd(a * 1.5e307,
                                                   compute_uv=False)[0]))
        for name in ("o307", "o307t"):
            for method in (("--randomized", "--k", "3"), ()):
                with self.subTest(name=name, method=method):
                    p = C.run("svd", path + ":/" + name, *method, "-o",
                              self.fresh("o.h5"), expect=None)
                    self.assertCleanError(p, 1, name,
                                          "singular values overflow")
                    self.assertFalse(os.path.exists(self.path("o.h5")))

    def test_steps_name_results_not_svd_or_glm_fit(self):
        pj = self.path("g.json")
        with open(pj, "w") as f:
            json.dump({"inputs": {"x": self.path("in.h5") + ":/x"},
                       "steps": [{"name": "d", "op": "svd", "args": ["x"]},
                                 {"name": "t", "op": "multiply",
                                  "args": ["d", 2]}],
                       "outputs": {"t": self.fresh("t.h5")}}, f)
        p = C.run("run", pj, expect=None)
        self.assertCleanError(p, 2, "steps[1]: args[0]: 'd' is a svd step",
                              "'d.U', 'd.S', 'd.Vt'")

    def test_copy_keeps_groups_without_arrays(self):
        src = self.fresh("groups.h5")
        with h5py.File(src, "w") as f:
            f["a"] = np.arange(4.0)
            f["g/b"] = np.arange(3)
            f.create_group("meta").attrs.update({"author": "me", "n": 3})
            f.create_group("empty")
            f.create_group("deep/er").attrs["x"] = 1.5
        want = {"meta": {"author": "me", "n": 3}, "empty": {},
                "deep": {}, "deep/er": {"x": 1.5}, "g": {}}

        def h5_groups(path):
            got = {}
            with h5py.File(path, "r") as f:
                f.visititems(lambda n, o: got.update(
                    {n: {k: (v.item() if hasattr(v, "item") else v)
                         for k, v in o.attrs.items()}})
                    if isinstance(o, h5py.Group) else None)
            return got

        for fmt in ("2", "3"):
            with self.subTest(zarr_format=fmt):
                z = self.fresh("groups%s.zarr" % fmt)
                C.copy(src, z, "--zarr-format", fmt)
                back = self.fresh("back%s.h5" % fmt)
                C.copy(z, back)
                self.assertEqual(h5_groups(back), want)
                if fmt == "2":
                    g = zarr.open(z, mode="r")
                    self.assertEqual(dict(g["meta"].attrs), want["meta"])
                    self.assertIn("empty", g.group_keys())
        out = self.fresh("groups2.h5")
        C.copy(src, out)
        self.assertEqual(h5_groups(out), want)
        one = self.fresh("one.h5")
        with h5py.File(one, "w") as f:
            f["a"] = np.arange(4.0)
            f.create_group("meta").attrs["k"] = "v"
        z = self.fresh("one.zarr")
        C.copy(one, z)
        g = zarr.open(z, mode="r")
        self.assertEqual(g["a"][...].tolist(), [0.0, 1.0, 2.0, 3.0])
        self.assertEqual(dict(g["meta"].attrs), {"k": "v"})

    def test_lz4_acceleration_past_1000(self):
        # zarr-python writes any acceleration and chunkctl wrote up to
        # 65537, but read none above 1000 ("not a small integer")
        import numcodecs
        z = self.fresh("lz4.zarr")
        zarr.array(np.arange(10.0), chunks=4, store=z,
                   compressor=numcodecs.LZ4(acceleration=100000))
        self.assertEqual(C.run("reduce", "sum", z).stdout.strip(), "45")
        mine = self.fresh("lz4mine.zarr")
        C.copy(self.path("in.h5") + ":/x", mine, "--compress", "lz4:65537")
        self.assertEqual(zarr.open(mine, "r").compressor.acceleration, 65537)
        self.assertEqual(C.run("reduce", "sum", mine).stdout.strip(), "780")
        # to HDF5, which has no lz4 filter, by default: gzip, with a note
        # (it was a usage error asking for --compress)
        h5 = self.fresh("lz4.h5")
        p = C.run("copy", z, h5)
        self.assertIn("written with gzip (hdf5 has no lz4 filter", p.stderr)
        with h5py.File(h5, "r") as f:
            self.assertEqual(f["data"].compression, "gzip")
            self.assertEqual(f["data"][...].tolist(), list(range(10)))

    def test_zarr3_unknown_fields_need_must_understand_false(self):
        # the v3 spec: a reader fails on metadata it does not know unless
        # the field says "must_understand": false (it read them all)
        z = self.fresh("ext.zarr")
        C.copy(self.path("in.h5") + ":/f", z, "--zarr-format", "3")
        meta_path = os.path.join(z, "zarr.json")
        with open(meta_path) as f:
            meta = json.load(f)
        for ext, ok in (({"must_understand": False, "x": 1}, True),
                        ({"must_understand": True}, False), ({}, False),
                        (7, False)):
            with self.subTest(ext=ext):
                meta["my_extension"] = ext
                with open(meta_path, "w") as f:
                    json.dump(meta, f)
                p = C.run("reduce", "sum", z, expect=None)
                if ok:
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(p.stdout.strip(), "6")
                else:
                    self.assertNotEqual(p.returncode, 0)
                    self.assertIn("unknown field 'my_extension'", p.stderr)
                    self.assertEqual(len(p.stderr.splitlines()), 1)

    def test_info_prints_filter_numbers_as_python(self):
        # 3.3 was printed as 3.2999999999999998 (17 digits)
        z = self.fresh("fso.zarr")
        C.copy(self.path("in.h5") + ":/f", z, "--filters",
               "fixedscaleoffset:-5.5:3.3:int32")
        self.assertEqual(zarr.open(z, "r").filters[0].scale, 3.3)
        self.assertIn("fixedscaleoffset:-5.5:3.3:int32", C.run("info", z).stdout)

    def test_hdf5_copies_keep_attribute_types_and_globals(self):
        # JSON widened every number (a float32 scale_factor made netCDF4
        # decode float64; an int16 flag_values became int64), and a file
        # of one array lost its root (global) attributes
        import netCDF4
        src = self.fresh("types.nc")
        with netCDF4.Dataset(src, "w") as d:
            d.createDimension("n", 3)
            v = d.createVariable("p", "i2", ("n",))
            v.scale_factor = np.float32(0.01)
            v.add_offset = np.float32(250)
            v.flag_values = np.array([0, 1], "i2")
            v[:] = [250.01, 250.02, 250.03]
            d.title = "t"
            d.version = np.int8(3)
        out = self.fresh("types2.nc")
        C.copy(src, out)
        with netCDF4.Dataset(src) as a, netCDF4.Dataset(out) as b:
            self.assertEqual(b["p"][:].dtype, a["p"][:].dtype)  # float32
            for k in ("scale_factor", "add_offset", "flag_values"):
                self.assertEqual(np.asarray(b["p"].getncattr(k)).dtype,
                                 np.asarray(a["p"].getncattr(k)).dtype, k)
            self.assertEqual(b.title, "t")
            self.assertEqual(np.asarray(b.version).dtype, np.int8)
        h5 = self.fresh("root.h5")
        with h5py.File(h5, "w") as f:
            f["x"] = np.arange(3.0)
            f.attrs["title"] = "kept"
        z = self.fresh("root.zarr")
        C.copy(h5, z)
        g = zarr.open(z, "r")
        self.assertEqual(g.attrs["title"], "kept")
        self.assertEqual(g["x"][...].tolist(), [0.0, 1.0, 2.0])

    def test_array_named_like_its_own_dimension_to_hdf5(self):
        # Zarr /x with dimensions (y, x): an HDF5 copy refused it ("/x is
        # not a 1-d dataset of that length"); the name is a label now
        z = self.fresh("dn.zarr")
        g = zarr.open_group(z, "w")
        g.create_dataset("x", data=np.arange(6.0).reshape(2, 3))
        g["x"].attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
        out = self.fresh("dn.h5")
        C.copy(z, out)
        with h5py.File(out, "r") as f:
            self.assertEqual([d.label for d in f["x"].dims], ["y", "x"])
            self.assertEqual(f["x"][...].tolist(), g["x"][...].tolist())

    def test_broken_links_are_named(self):
        # a dangling soft link or an external link to a missing file was
        # "no array '/d'", as if the name were wrong
        src = self.fresh("links.h5")
        with h5py.File(src, "w") as f:
            f["a"] = np.arange(3.0)
            f["d"] = h5py.SoftLink("/missing")
            f["e"] = h5py.ExternalLink("nofile.h5", "/x")
        for name, why in (("d", "'/d' is a soft link to '/missing', which "
                           "does not exist"),
                          ("e", "'/e' is an external link to nofile.h5:/x, "
                           "which cannot be opened")):
            with self.subTest(link=name):
                p = C.run("reduce", "sum", src + ":/" + name, expect=1)
                self.assertIn(why, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1)

    def test_gaussian_filter_of_a_constant_integer_image(self):
        # a constant 42 (uint8) came out 41 and a constant 3 (int16) 2:
        # the sums fell just below the integer, and the cast truncates
        from scipy import ndimage
        src = self.fresh("const.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("g", data=np.full(11, 42, np.uint8), chunks=(3,))
            f.create_dataset("h", data=np.full((9, 7), 3, np.int16),
                             chunks=(4, 4))
        for name, keys in (("g", ["--sigma", "0.5", "--truncate", "1.5"]),
                           ("h", ["--sigma", "1"])):
            with self.subTest(name=name):
                out = self.fresh("const_%s.h5" % name)
                C.run("gaussian_filter", src + ":/" + name, *keys, "-o",
                      out + ":/f", "--quiet")
                with h5py.File(src, "r") as f:
                    x = f[name][...]
                want = ndimage.gaussian_filter(
                    x, float(keys[1]),
                    truncate=float(keys[3]) if len(keys) > 2 else 4.0)
                with h5py.File(out, "r") as f:
                    got = f["f"][...]
                self.assertEqual(got.dtype, x.dtype)
                self.assertEqual(got.tolist(), want.tolist())
                self.assertEqual(got.tolist(), x.tolist())

    def test_negative_zero_literal_and_argwhere_of_0d(self):
        # -0.0 was read as the integer 0 (x / -0.0 gave +inf for x > 0),
        # and argwhere of a 0-d array had shape (1, 1), not NumPy's (1, 0)
        src = self.fresh("nz.h5")
        f64 = np.array([1.0, -2.0, 0.5])
        with h5py.File(src, "w") as f:
            f.create_dataset("f", data=f64, chunks=(2,))
            f["s"] = np.array(-7, np.int32)
        for op, want in (("divide", f64 / -0.0), ("multiply", f64 * -0.0)):
            with self.subTest(op=op):
                out = self.fresh(op + ".h5")
                C.run(op, src + ":/f", "-0.0", "-o", out + ":/r", "--quiet")
                with h5py.File(out, "r") as f:
                    got = f["r"][...]
                self.assertEqual(got.tolist(), want.tolist())
                self.assertEqual(np.signbit(got).tolist(),
                                 np.signbit(want).tolist())
        out = self.fresh("aw0.h5")
        C.run("argwhere", src + ":/s", "-o", out + ":/w", "--quiet")
        with h5py.File(out, "r") as f:
            self.assertEqual(f["w"].shape, np.argwhere(np.array(-7)).shape)

    def test_force_replaces_only_what_chunkctl_writes(self):
        # --force dropped a user's directory named *.zarr or *.h5 whole
        src = self.path("in.h5") + ":/f"
        mine = self.fresh("mine.zarr")
        os.makedirs(os.path.join(mine, "important"))
        with open(os.path.join(mine, "important", "f"), "w") as f:
            f.write("precious")
        d = self.fresh("dir.h5")
        os.makedirs(d)
        for out, why in ((mine, "is a directory but not a Zarr store"),
                         (d, "is a directory, not an HDF5 file")):
            with self.subTest(out=out):
                p = C.run("copy", "--force", src, out, expect=1)
                self.assertIn(why, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(mine, "important", "f")))
        # a store (or an empty directory) is replaced as before
        store = self.fresh("store.zarr")
        C.copy(src, store)
        C.run("copy", "--force", "--quiet", self.path("in.h5") + ":/i", store)
        self.assertEqual(zarr.open(store, "r")[...].tolist(), [1, 2, 3])

    def test_hdf5_copies_keep_group_attribute_types(self):
        # the attributes of groups other than the root went through JSON
        # and came out int64/float64 (a netCDF group's float32 attribute
        # as a double)
        src = self.fresh("gtypes.h5")
        with h5py.File(src, "w") as f:
            g = f.create_group("g/h")
            g["x"] = np.arange(3.0)
            g.attrs["f4"] = np.float32(0.1)
            g.attrs["i2"] = np.array([1, -2], "i2")
            f["g"].attrs["u1"] = np.uint8(200)
            f.create_group("empty")
        out = self.fresh("gtypes2.h5")
        C.copy(src, out)
        with h5py.File(src, "r") as a, h5py.File(out, "r") as b:
            for grp, k in (("g/h", "f4"), ("g/h", "i2"), ("g", "u1")):
                with self.subTest(attr=grp + "." + k):
                    want = np.asarray(a[grp].attrs[k])
                    got = np.asarray(b[grp].attrs[k])
                    self.assertEqual(got.dtype, want.dtype)
                    self.assertEqual(got.tolist(), want.tolist())
            self.assertIn("empty", b)
            self.assertEqual(b["g/h/x"][...].tolist(), [0.0, 1.0, 2.0])

    def test_copies_keep_unlimited_dimensions(self):
        # a netCDF record dimension (and h5py's maxshape None) became a
        # fixed one in every copy: netCDF4 said isunlimited() False
        import netCDF4
        src = self.fresh("unl.nc")
        with netCDF4.Dataset(src, "w") as d:
            d.createDimension("time", None)
            d.createDimension("x", 3)
            d.createDimension("rec", None)  # no coordinate variable
            d.createVariable("time", "f8", ("time",))[:] = np.arange(5.0)
            v = d.createVariable("v", "f4", ("time", "x"))
            v[:] = np.arange(15.0).reshape(5, 3)
            d.createVariable("w", "i4", ("rec",))[:] = [1, 2]
        out = self.fresh("unl2.nc")
        C.copy(src, out)
        with netCDF4.Dataset(src) as a, netCDF4.Dataset(out) as b:
            for k, dim in a.dimensions.items():
                with self.subTest(dim=k):
                    self.assertEqual(b.dimensions[k].isunlimited(),
                                     dim.isunlimited())
                    self.assertEqual(len(b.dimensions[k]), len(dim))
            self.assertEqual(b["v"][:].tolist(), a["v"][:].tolist())
        h5 = self.fresh("unl.h5")
        with h5py.File(h5, "w") as f:
            f.create_dataset("a", data=np.arange(6.0).reshape(2, 3),
                             maxshape=(None, 3), chunks=(1, 3))
            f["b"] = np.arange(4)
        out = self.fresh("unl2.h5")
        C.copy(h5, out)
        with h5py.File(h5, "r") as a, h5py.File(out, "r") as b:
            for k in ("a", "b"):
                self.assertEqual(b[k].maxshape, a[k].maxshape, k)
        info = json.loads(C.run("info", "--json", out).stdout)
        got = {a["name"]: a["maxshape"] for a in info["arrays"]}
        self.assertEqual(got, {"/a": [None, 3], "/b": [4]})


    def test_randomized_svd_memory_advice_is_enough(self):
        import re
        # rank 20 plus noise: the top 20 of a randomized svd are NumPy's
        rng = np.random.default_rng(4)
        m, n, r = 50000, 400, 20
        a = (rng.standard_normal((m, r)) * np.geomspace(100, 1, r)) @ \
            rng.standard_normal((r, n)) + 1e-6 * rng.standard_normal((m, n))
        src = self.path("tall.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("a", data=a, chunks=(5000, n))
        out = self.fresh("tall.svd.h5")
        args = ["svd", "--quiet", "--randomized", "-k", "20", src + ":/a",
                "-o", out]
        p = C.run(*args, "--memory", "32M", expect=1)
        # what the message says to raise --memory to
        need = (re.search(r"above ([0-9.]+) MiB", p.stderr) or
                re.search(r"need ([0-9.]+) MiB", p.stderr))
        self.assertIsNotNone(need, p.stderr)
        C.run(*args, "--memory", "%dM" % math.ceil(float(need.group(1))))
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(
                f["S"][...], np.linalg.svd(a, compute_uv=False)[:20],
                rtol=1e-8)


    def test_pipeline_refused_for_memory_before_its_reductions_run(self):
        import re
        # a damaged chunk: a run that reads the data stops on it, so the
        # memory refusal must come first to be seen
        store = self.path("dmg.zarr")
        z = zarr.open(store, mode="w", shape=(2048, 2048),
                      chunks=(1024, 1024), dtype="f8", compressor=None)
        z[:] = np.arange(2048.0 * 2048).reshape(2048, 2048)
        with open(os.path.join(store, "1.1"), "wb") as f:
            f.write(b"not a chunk")
        out = self.fresh("centered.zarr")
        pj = self.path("center.json")
        with open(pj, "w") as f:
            json.dump({"inputs": {"x": store},
                       "steps": [{"name": "m", "op": "mean", "args": ["x"],
                                  "axis": 0},
                                 {"name": "c", "op": "subtract",
                                  "args": ["x", "m"]}],
                       "outputs": {"c": out}}, f)
        p = C.run("run", "--quiet", "--memory", "40M", pj, expect=1)
        self.assertRegex(p.stderr, r"too small: one worker needs [0-9.]+ "
                         r"MiB for chunks of .*centered\.zarr")
        self.assertNotIn("1.1", p.stderr)
        self.assertFalse(os.path.exists(out))
        # the advice is enough to get to the data (and to its damage)
        need = re.search(r"needs ([0-9.]+) MiB", p.stderr).group(1)
        p = C.run("run", "--quiet", "--memory",
                  "%dM" % math.ceil(float(need)), pj, expect=1)
        self.assertIn("1.1", p.stderr)
        self.assertNotIn("too small", p.stderr)

    def test_zarr_attributes_past_ascii_open_in_zarr_python(self):
        src = self.fresh("u8.h5")
        with h5py.File(src, "w") as f:
            d = f.create_dataset("x", data=np.arange(4.0))
            d.attrs["units"] = "\u00b5m"
            d.attrs["long_name"] = "\U0001d6c2 \u00e9t\u00e9"
        out = self.fresh("u8.zarr")
        C.copy(src, out)
        z = zarr.open(out, "r")
        self.assertEqual(dict(z.attrs), {"units": "\u00b5m",
                                         "long_name": "\U0001d6c2 \u00e9t\u00e9"})
        with open(os.path.join(out, ".zattrs"), "rb") as f:
            self.assertTrue(f.read().isascii())

    def test_filters_that_lose_or_cannot_be_decoded_are_refused(self):
        src = self.fresh("fb.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("b", data=np.array([True, False, True, False]))
            f.create_dataset("x", data=np.arange(10.0), chunks=(5,))
        for ds, flt in (("b", "delta"), ("b", "delta:int8"),
                        ("x", "shuffle:3")):
            with self.subTest(filters=flt):
                out = self.fresh("fb.zarr")
                p = C.run("copy", "--quiet", src + ":/" + ds, out,
                          "--filters", flt, "--compress", "none", expect=1)
                self.assertIn("filter " + flt.split(":")[0], p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1)
                self.assertFalse(os.path.exists(out))
        # a divisor of the chunk's bytes is what numcodecs takes
        out = self.fresh("fb.zarr")
        C.copy(src + ":/x", out, "--filters", "shuffle:4", "--chunks", "5")
        np.testing.assert_array_equal(zarr.open(out, "r")[...],
                                      np.arange(10.0))


    def test_nanargmin_nanargmax_count_nan_as_infinity(self):
        # NumPy's nanargmax takes NaN for -inf (nanargmin: +inf) and gives
        # the first of a tie: [nan, -inf, nan] is 0, where chunkctl gave
        # the -inf's 1; the chunks (3, 4) split every tie across them.
        rng = np.random.default_rng(5)
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0])
        for trial in range(6):
            x = pool[rng.integers(0, 5, size=(7, 6))]
            if trial < 3:  # only NaN and one infinity in places
                x[rng.random((7, 6)) < 0.6] = np.nan
            src = self.fresh("nanarg%d.h5" % trial)
            with h5py.File(src, "w") as f:
                f.create_dataset("x", data=x, chunks=(3, 4))
            for op in ("nanargmin", "nanargmax"):
                for axis in (None, 0, 1):
                    with self.subTest(trial=trial, op=op, axis=axis):
                        try:
                            want = getattr(np, op)(x, axis=axis)
                        except ValueError:
                            want = None  # an all-NaN slice
                        args = [op, src + ":/x", "--quiet", "--json"]
                        if axis is not None:
                            args += ["--axis", str(axis)]
                        p = C.run(*args, expect=None if want is None else 0)
                        if want is None:
                            self.assertCleanError(p, 2, "only NaN")
                            continue
                        got = json.loads(p.stdout)[op]["values"]
                        self.assertEqual(got, np.ravel(want).tolist())

    def test_numbers_written_as_floats_are_floats(self):
        # 2.0 and 1e0 are Python floats to NumPy's promotion: an int8 array
        # plus 2.0 is float64 (129.0), where chunkctl took 2.0 for the int
        # 2 and wrapped to -127; 2 stays an int.  Numbers elsewhere in the
        # text (a name with digits, a key's number, a string "3.5") must
        # not shift which number is which.
        x = np.array([127, -128, 3], "i1")
        src = self.fresh("lit.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("x1", data=x, chunks=(2,))
        out = self.fresh("lit_out.h5")
        text = ('{"inputs": {"x1": "%s:/x1"}, "steps": ['
                '{"name": "a", "op": "add", "args": ["x1", 2.0]},'
                '{"name": "b", "op": "add", "args": ["x1", 2]},'
                '{"name": "h", "op": "histogram", "args": ["x1"], "bins": 3,'
                ' "range": [0, 3.5]},'
                '{"name": "c", "op": "multiply", "args": [1e0, "x1"]},'
                '{"name": "d", "op": "subtract", "args": ["x1", -3]},'
                '{"name": "e", "op": "where", "args": ["x1", 1.5E1, 7]}],'
                '"outputs": {"a": "%s:/a", "b": "%s:/b", "c": "%s:/c",'
                ' "d": "%s:/d", "e": "%s:/e"}}' % (src, out, out, out, out,
                                                   out))
        pipe = self.fresh("lit.json")
        with open(pipe, "w") as f:
            f.write(text)
        C.run("run", "--quiet", pipe)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # int8 overflow, as chunkctl's
            want = {"a": x + 2.0, "b": x + 2, "c": 1e0 * x, "d": x - (-3),
                    "e": np.where(x, 1.5e1, 7)}
        with h5py.File(out, "r") as f:
            for k, w in want.items():
                with self.subTest(step=k):
                    self.assertSameArray(f[k][...], w)
        for lit, w in (("2.0", x + 2.0), ("2", want["b"]), ("1e0", x + 1.0)):
            one = self.fresh("lit_one.h5")
            C.run("add", src + ":/x1", lit, "-o", one + ":/a", "--quiet")
            with h5py.File(one, "r") as f, self.subTest(command=lit):
                self.assertSameArray(f["a"][...], w)

    def test_compress_condition_of_any_dtype(self):
        # numpy.compress takes any array as the condition, nonzero (NaN
        # too) as true; chunkctl refused all but bool ("the condition
        # must be bool, not int32").
        x = np.arange(30.0).reshape(5, 6)
        conds = {"i4": np.array([1, 0, 2, 0, -1], "i4"),
                 "u1": np.array([0, 3, 0, 1], "u1"),
                 "f8": np.array([0.0, np.nan, 0.5, 0.0, -0.0], "f8"),
                 "b": np.array([True, False, True])}
        src = self.fresh("compress.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("x", data=x, chunks=(2, 4))
            for k, c in conds.items():
                f.create_dataset(k, data=c)
        for k, c in conds.items():
            with self.subTest(condition=k):
                out = self.fresh("compress_out.h5")
                C.run("compress", src + ":/x", src + ":/" + k, "--axis", "0",
                      "-o", out + ":/y", "--quiet")
                with h5py.File(out, "r") as f:
                    self.assertSameArray(f["y"][...],
                                         np.compress(c, x, axis=0))

    def test_uniform_range_past_the_largest_double(self):
        # NumPy's Generator.uniform raises OverflowError where high - low
        # is not finite; chunkctl wrote inf everywhere with exit 0.  A wide
        # range whose width is finite still draws.
        rng = np.random.default_rng(0)
        for lo, hi in ((-1e308, 1e308), (-1e308, 0.0), (0.0, 1e308)):
            try:
                rng.uniform(lo, hi, 4)
                numpy_refuses = False
            except OverflowError:
                numpy_refuses = True
            with self.subTest(low=lo, high=hi):
                out = self.fresh("wide.h5")
                p = C.gen(out + ":/x", "--shape", "4", "--low", repr(lo),
                          "--high", repr(hi),
                          expect=2 if numpy_refuses else 0)
                if not numpy_refuses:
                    with h5py.File(out, "r") as f:
                        self.assertTrue(np.isfinite(f["x"][...]).all())
                    continue
                self.assertCleanError(p, 2, "high - low", "--low")
                self.assertFalse(os.path.exists(out))
                pipe = self.fresh("wide.json")
                with open(pipe, "w") as f:
                    json.dump({"steps": [{"name": "y", "op": "random",
                                          "shape": [4], "low": lo,
                                          "high": hi}], "print": ["y"]}, f)
                p = C.run("run", "--quiet", pipe, expect=2)
                self.assertCleanError(p, 2, "wide.json: steps[0]:",
                                      "high - low")

    def test_pipeline_strings_holding_nul_are_refused(self):
        # json.dumps writes "\x00" as \u0000, which cJSON decoded into a
        # C string that ended there: the step ran as "sum", on "in.h5".
        src = self.path("in.h5")
        for what, pipe in (
                ("steps[0].op", {"inputs": {"x": src + ":/f"},
                                 "steps": [{"name": "r", "op": "sum\x00zz",
                                            "args": ["x"]}],
                                 "print": ["r"]}),
                ("inputs.x", {"inputs": {"x": src + "\x00zz:/f"},
                              "steps": [{"name": "r", "op": "sum",
                                         "args": ["x"]}],
                              "print": ["r"]}),
                ("steps[0].name", {"inputs": {"x": src + ":/f"},
                                   "steps": [{"name": "r\x00zz", "op": "sum",
                                              "args": ["x"]}],
                                   "print": ["r"]})):
            with self.subTest(where=what):
                path = self.fresh("nul.json")
                with open(path, "w") as f:
                    json.dump(pipe, f)
                p = C.run("run", "--quiet", path, expect=2)
                self.assertCleanError(p, 2, "nul.json: " + what + ":",
                                      "\\u0000")

    def test_pipeline_target_errors_name_the_place(self):
        src = self.path("in.h5")
        step = [{"name": "s", "op": "negative", "args": ["x"]}]
        for where, needle, pipe in (
                ("inputs.x", "no file name",
                 {"inputs": {"x": ""}, "steps": step, "print": ["s"]}),
                ("outputs.s", "cannot tell the output format",
                 {"inputs": {"x": src + ":/f"}, "steps": step,
                  "outputs": {"s": self.fresh("o.txt")}}),
                ("outputs.s", "no dataset name",
                 {"inputs": {"x": src + ":/f"}, "steps": step,
                  "outputs": {"s": self.fresh("n.h5") + ":"}})):
            with self.subTest(where=where, error=needle):
                path = self.fresh("target.json")
                with open(path, "w") as f:
                    json.dump(pipe, f)
                p = C.run("run", "--quiet", path, expect=2)
                self.assertCleanError(p, 2, "target.json: " + where + ": ",
                                      needle)
                self.assertFalse(os.path.exists(self.path("o.txt")))

    def test_axis_elements_must_be_integers(self):
        # NumPy's sum(axis=([1],)) and sum(axis=(1.5,)) raise TypeError
        # (not an integer), not AxisError; chunkctl said "axis nan out of
        # range" for [[1]] and "axis 1.5 out of range" for 1.5.
        x = np.arange(6.0).reshape(3, 2)
        for bad in ([1],), (1.5,):
            with self.assertRaises(TypeError):
                np.sum(x, axis=bad)
        src = self.path("in.h5")
        for axis, k in (([[1]], 0), ([0, 1.5], 1), ([True], 0)):
            with self.subTest(axis=axis):
                pipe = self.fresh("axis.json")
                with open(pipe, "w") as f:
                    json.dump({"inputs": {"x": src + ":/x"},
                               "steps": [{"name": "s", "op": "sum",
                                          "args": ["x"], "axis": axis}],
                               "print": ["s"]}, f)
                p = C.run("run", "--quiet", pipe, expect=2)
                self.assertCleanError(
                    p, 2, "axis.json: steps[0]: axis[%d]: expected an "
                    "integer" % k)
                p = C.run("sum", "--quiet", src + ":/x", "--axis",
                          json.dumps(axis), expect=2)
                self.assertCleanError(
                    p, 2, "sum: axis[%d]: expected an integer" % k)

if __name__ == "__main__":
    C.main()
