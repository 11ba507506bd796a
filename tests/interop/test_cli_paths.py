"""Paths and option values the user types reach the one-step commands
(reduce, histogram, svd, glm-fit, glm-predict and ops as commands) as they
were typed: no fixed buffer, no JSON text between the command line and the
plan (issue 18).

- A 64 KiB path, given as an input or as -o, is refused with one clean
  line naming what was too long (exit 2), never a crash or a JSON column.
- Files whose names hold quotes, backslashes, a newline and non-ASCII
  (UTF-8) work, as inputs and as outputs, and give NumPy's results.
"""
import json
import os

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(20261124)

# one file name of each awkward kind (no ':', which splits PATH:DATASET)
ODD = ['q"uo\'te', "back\\slash", "new\nline", "n\u00efce-\u00fcn\u00ef\u2014c\u00f8d\u00e9"]


def read(path, ds):
    with h5py.File(path, "r") as f:
        return f[ds][()]


class LongPaths(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.x = RNG.normal(size=(30, 4))
        cls.y = cls.x @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.25 + \
            RNG.normal(scale=0.1, size=30)
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("x", data=cls.x, chunks=(7, 4))
            f.create_dataset("y", data=cls.y, chunks=(7,))
        C.run("glm-fit", "--quiet", "--family", "normal",
              cls.path("in.h5") + ":/x", cls.path("in.h5") + ":/y", "-o",
              cls.path("model.h5"))
        # 64 KiB: longer than PATH_MAX and than any buffer the CLI had
        cls.long = cls.path("d" * (65536 - len(cls.tmp) - 4) + ".h5")
        assert len(cls.long.encode()) == 65536

    def check_refused(self, args, what):
        p = C.run(*args, expect=None)
        self.assertCleanError(p, 2, "%s: a path of " % what,
                              "(at most 4095)")
        self.assertNotIn("JSON", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_a_64k_path_is_refused_cleanly(self):
        x, y = self.path("in.h5") + ":/x", self.path("in.h5") + ":/y"
        model, out, L = self.path("model.h5"), self.fresh("o.h5"), self.long
        cases = [
            (("reduce", "sum", L), "reduce: SRC"),
            (("reduce", "sum", L + ":/x"), "reduce: SRC"),
            (("reduce", "sum", x, "-o", L), "reduce: -o"),
            (("histogram", L, "--range", "0,1"), "histogram: SRC"),
            (("histogram", x, "--range", "0,1", "--weights", L),
             "histogram: --weights"),
            (("histogram", x, "--range", "0,1", "-o", L), "histogram: -o"),
            (("svd", L), "svd: SRC"),
            (("svd", x, "-o", L), "svd: -o"),
            (("glm-fit", L, y), "glm-fit: X"),
            (("glm-fit", x, L), "glm-fit: Y"),
            (("glm-fit", x, y, "-o", L), "glm-fit: -o"),
            (("glm-predict", L, x, "-o", out), "glm-predict: MODEL"),
            (("glm-predict", model, L, "-o", out), "glm-predict: X"),
            (("glm-predict", model, x, "-o", L), "glm-predict: -o"),
            (("add", L, "1", "-o", out), "add: argument 1"),
            (("add", "1", L, "-o", out), "add: argument 2"),
            (("add", x, "1", "-o", L), "add: -o"),
            (("reshape", L, "--shape", "4,30", "-o", out),
             "reshape: argument 1"),
            (("sum", L), "sum: argument 1"),
        ]
        for args, what in cases:
            with self.subTest(args=(args[0], what)):
                self.check_refused(args, what)
                self.assertFalse(os.path.exists(out))

    def test_long_option_values(self):
        x = self.path("in.h5") + ":/x"
        # a 64 KiB list of edges works: no buffer holds it
        edges = np.linspace(-3, 3, 6001)
        text = ",".join("%.17g" % e for e in edges)
        self.assertGreater(len(text), 65536)
        p = C.run("histogram", "--quiet", x, "--edges", text, "--json")
        got = json.loads(p.stdout)["histogram"]["counts"]
        self.assertEqual(got, np.histogram(self.x, bins=edges)[0].tolist())
        # bad values are named by their option, whatever their length
        junk = "x" * 65536
        for args, needles in [
                (("histogram", x, "--edges", "1," + junk),
                 ("histogram: --edges '1,xxx", "expected numbers")),
                (("histogram", x, "--range", junk),
                 ("histogram: --range 'xxx", "expected LO,HI")),
                (("reduce", "sum", x, "--axis", "0," + junk),
                 ("reduce: --axis '0,xxx", "expected axes like")),
                (("glm-fit", x, x, "--lambda", junk),
                 ("glm-fit: --lambda 'xxx", "expected a number")),
                (("glm-fit", x, x, "--family", junk), ("glm-fit",)),
                (("svd", x, "--k", junk), ("svd: --k 'xxx",)),
                (("reshape", x, "--shape", "4," + junk, "-o", "o.h5"),
                 ("reshape: --shape '4,xxx", "expected numbers")),
                (("slice", x, "--index", "[" + junk, "-o", "o.h5"),
                 ("slice: --index '[xxx", "not valid JSON")),
                (("astype", x, "--dtype", junk, "-o", "o.h5"), ("astype",)),
                (("reduce", "sum", x, "--" + junk),
                 ("reduce: unknown or incomplete option '--xxx",)),
        ]:
            with self.subTest(args=args[:2], needles=needles):
                p = C.run(*args, expect=None)
                self.assertIn(p.returncode, (1, 2), p.stderr[:300])
                self.assertCleanError(p, p.returncode, *needles)
                self.assertNotIn("column", p.stderr)
                self.assertLess(len(p.stderr), 512)
        # a long key of an op reaches the plan, which refuses keys the op
        # does not read, in one short line, and writes nothing
        out = self.fresh("key.h5")
        p = C.run("add", "--quiet", x, "1", "--" + junk, "1", "-o",
                  out + ":/y", expect=None)
        self.assertCleanError(p, 2, 'add takes no key "xxx')
        self.assertLess(len(p.stderr), 512)
        self.assertFalse(os.path.exists(out))


class OddNames(C.InteropCase):
    """Each command reads a file named with quotes, a backslash, a newline
    or UTF-8 and writes one named the same way."""

    @classmethod
    def make_fixtures(cls):
        cls.x = RNG.normal(size=(30, 4))
        cls.w = np.array([0.5, -1.0, 2.0, 0.25])
        cls.y = cls.x @ cls.w - 0.75 + RNG.normal(scale=0.01, size=30)
        os.mkdir(cls.path("odd"))
        for name in ODD:
            with h5py.File(cls.src(name), "w") as f:
                f.create_dataset("x", data=cls.x, chunks=(7, 4))
                f.create_dataset("y", data=cls.y, chunks=(7,))

    @classmethod
    def src(cls, name):
        return cls.path("odd", name + ".h5")

    def out(self, name, tag):
        return self.fresh(os.path.join("odd", name + " out-" + tag + ".h5"))

    def test_reduce(self):
        for name in ODD:
            with self.subTest(name=name):
                x = self.src(name) + ":/x"
                p = C.run("reduce", "--quiet", "sum", x)
                np.testing.assert_allclose(float(p.stdout), self.x.sum(),
                                           rtol=1e-12)
                out = self.out(name, "reduce")
                C.run("reduce", "--quiet", "mean", x, "--axis", "0", "-o",
                      out + ":/m")
                np.testing.assert_allclose(read(out, "/m"),
                                           self.x.mean(axis=0), rtol=1e-12)

    def test_histogram(self):
        want = np.histogram(self.x, bins=6, range=(-3, 3))[0]
        wsum = np.histogram(self.x, bins=6, range=(-3, 3), weights=self.x)[0]
        for name in ODD:
            with self.subTest(name=name):
                x = self.src(name) + ":/x"
                p = C.run("histogram", "--quiet", x, "--bins", "6",
                          "--range", "-3,3", "--json")
                self.assertEqual(json.loads(p.stdout)["histogram"]["counts"],
                                 want.tolist())
                out = self.out(name, "hist")
                C.run("histogram", "--quiet", x, "--bins", "6", "--range",
                      "-3,3", "--weights", x, "-o", out)
                np.testing.assert_allclose(read(out, "/histogram"), wsum,
                                           rtol=1e-12)

    def test_svd(self):
        s = np.linalg.svd(self.x, compute_uv=False)
        for name in ODD:
            with self.subTest(name=name):
                x = self.src(name) + ":/x"
                out = self.out(name, "svd")
                p = C.run("svd", "--quiet", "--json", x, "-o", out)
                doc = json.loads(p.stdout)
                self.assertEqual(doc["output"], out)
                np.testing.assert_allclose(doc["S"], s, rtol=1e-10)
                np.testing.assert_allclose(read(out, "/S"), s, rtol=1e-10)
                # the default output sits beside the input
                dflt = self.fresh(os.path.join("odd", name + ".svd.h5"))
                C.run("svd", "--quiet", x)
                np.testing.assert_allclose(read(dflt, "/S"), s, rtol=1e-10)

    def test_glm_fit_and_predict(self):
        a = np.column_stack([self.x, np.ones(len(self.x))])
        sol = np.linalg.lstsq(a, self.y, rcond=None)[0]
        for name in ODD:
            with self.subTest(name=name):
                x, y = self.src(name) + ":/x", self.src(name) + ":/y"
                model = self.out(name, "model")
                p = C.run("glm-fit", "--quiet", "--family", "normal", x, y,
                          "-o", model)
                doc = json.loads(p.stdout)
                np.testing.assert_allclose(doc["coef"], sol[:4], atol=1e-8)
                np.testing.assert_allclose(doc["intercept"], sol[4],
                                           atol=1e-8)
                np.testing.assert_allclose(read(model, "/coef"), sol[:4],
                                           atol=1e-8)
                pred = self.out(name, "pred")
                C.run("glm-predict", "--quiet", model, x, "-o", pred + ":/p")
                np.testing.assert_allclose(read(pred, "/p"), a @ sol,
                                           rtol=1e-10, atol=1e-8)

    def test_ops_as_commands(self):
        for name in ODD:
            with self.subTest(name=name):
                x = self.src(name) + ":/x"
                out = self.out(name, "add")
                C.run("add", "--quiet", x, "1.5", "-o", out + ":/y")
                self.assertSameArray(read(out, "/y"), self.x + 1.5)
                out = self.out(name, "reshape")
                C.run("reshape", "--quiet", x, "--shape", "4,30", "-o", out)
                self.assertSameArray(read(out, "/reshape"),
                                     self.x.reshape(4, 30))
                p = C.run("sum", "--quiet", x, "--axis", "1", "--json")
                np.testing.assert_allclose(
                    json.loads(p.stdout)["sum"]["values"],
                    self.x.sum(axis=1), rtol=1e-12)


class ColonNames(C.InteropCase):
    """A ':' in a dataset name or a file name: PATH[:DATASET] splits after
    the longest prefix that exists, or for a new output after the first
    prefix with a store's extension (h5py and zarr allow ':' in names)."""

    @classmethod
    def make_fixtures(cls):
        cls.a = np.arange(12.0).reshape(3, 4)
        with h5py.File(cls.path("c.h5"), "w") as f:
            f.create_dataset("t:0", data=cls.a, chunks=(2, 4))
            f.create_dataset("g:1/x:y", data=cls.a * 2)
        with h5py.File(cls.path("d:e.h5"), "w") as f:
            f.create_dataset("x", data=cls.a * 3)

    def test_dataset_names_with_colons(self):
        for name, want in (("/t:0", self.a), ("t:0", self.a),
                           ("/g:1/x:y", self.a * 2)):
            with self.subTest(name=name):
                p = C.run("reduce", "--quiet", "sum",
                          self.path("c.h5") + ":" + name)
                self.assertEqual(float(p.stdout), want.sum())

    def test_file_names_with_colons(self):
        p = C.run("reduce", "--quiet", "sum", self.path("d:e.h5") + ":/x")
        self.assertEqual(float(p.stdout), (self.a * 3).sum())
        p = C.run("reduce", "--quiet", "sum", self.path("d:e.h5"))
        self.assertEqual(float(p.stdout), (self.a * 3).sum())

    def test_new_outputs_named_with_colons(self):
        src = self.path("c.h5") + ":/t:0"
        out = self.fresh("n.h5")
        C.run("copy", "--quiet", src, out + ":/q:r")
        with h5py.File(out, "r") as f:
            self.assertSameArray(f["q:r"][()], self.a)
        outz = self.fresh("n.zarr")
        C.run("copy", "--quiet", src, outz + ":/g:1/q:r")
        self.assertSameArray(zarr.open_group(outz, "r")["g:1/q:r"][...],
                             self.a)

    def test_new_files_named_with_colons(self):
        # a new output whose whole name has the extension, no part of it
        # before a ':' existing or having one, is that file (chunkctl(1))
        src = self.path("c.h5") + ":/t:0"
        for name in ("k:l.h5", "k:l.zarr"):
            with self.subTest(name=name):
                out = self.fresh(name)
                C.run("copy", "--quiet", src, out)
                self.assertTrue(os.path.exists(out))
                self.assertFalse(os.path.exists(self.path("k")))
                if name.endswith(".h5"):
                    with h5py.File(out, "r") as f:
                        self.assertSameArray(f["t:0"][()], self.a)
                else:
                    self.assertSameArray(zarr.open(out, "r")[...], self.a)
        out = self.fresh("m:n.h5")
        C.run("add", "--quiet", src, "1", "-o", out)
        with h5py.File(out, "r") as f:
            self.assertSameArray(f[list(f)[0]][()], self.a + 1)

    def test_missing_file_is_named_as_the_file(self):
        p = C.run("reduce", "sum", self.path("none.h5") + ":/a:b",
                  expect=1)
        self.assertIn("none.h5: No such file", p.stderr)
        self.assertNotIn("none.h5:/a", p.stderr)


if __name__ == "__main__":
    C.main()
