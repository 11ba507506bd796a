"""Histograms without a range (issue 13): the edges come from the data's
minimum and maximum, found by a first pass (NaN ignored), with NumPy's
rules (equal ends widened by 0.5, float32 data binned in float32), as
numpy.histogram gives them for the same values; an all-NaN, empty or
infinite range is one clear line.
"""
import json
import unittest

import _common as C
from _common import np, h5py

RNG = np.random.default_rng(24)
F64 = RNG.normal(9, 1, size=(300, 70))
F32 = RNG.normal(size=(123, 45)).astype(np.float32)
F32[5, 6] = np.nan
INTS = RNG.integers(-5, 20, size=(1000,))


class HistogramRange(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("f64", data=F64, chunks=(64, 16))
            f.create_dataset("f32", data=F32, chunks=(50, 20))
            f.create_dataset("ints", data=INTS, chunks=(128,))
            f.create_dataset("const", data=np.full((10,), 3.0))
            f.create_dataset("const32", data=np.full((10,), 0.1, "f4"))
            f.create_dataset("third32", data=np.full((10,), 1 / 3, "f4"))
            f.create_dataset("nan", data=np.full((10,), np.nan))
            f.create_dataset("inf", data=np.array([1.0, np.inf]))
            f.create_dataset("empty", shape=(0,), dtype="f8")

    def hist(self, name, *opts, expect=0):
        return C.run("histogram", "--quiet", "--json",
                     self.path("in.h5") + ":/" + name, *opts, expect=expect)

    def check(self, got, counts, edges):
        np.testing.assert_array_equal(got["counts"], counts)
        np.testing.assert_array_equal(got["edges"], edges)

    def test_the_datas_range_as_numpy_takes_it(self):
        for name, a, bins in [("f64", F64, 10), ("f64", F64, 37),
                              ("f32", F32[~np.isnan(F32)], 7),
                              ("ints", INTS, 5), ("const", np.full(10, 3.0), 4),
                              ("const32", np.full(10, 0.1, "f4"), 3),
                              # equal ends are widened in float64 (NumPy
                              # 1.x: np.float32(x) - 0.5 is a float64), and
                              # only the edges are float32: these put the
                              # values a bin too low when the ends were
                              # rounded to float32 first
                              ("const32", np.full(10, 0.1, "f4"), 4),
                              ("third32", np.full(10, 1 / 3, "f4"), 2),
                              ("third32", np.full(10, 1 / 3, "f4"), 10)]:
            with self.subTest(name=name, bins=bins):
                got = json.loads(self.hist(name, "--bins", str(bins)).stdout)
                counts, edges = np.histogram(a, bins)
                self.check(got["histogram"], counts, edges)

    def test_density_weights_and_a_mask_in_a_pipeline(self):
        steps = [{"name": "y", "op": "add", "args": ["x", 1]},
                 {"name": "c", "op": "less", "args": ["y", 10]},
                 {"name": "m", "op": "mask", "args": ["y", "c"]},
                 {"name": "h", "op": "histogram", "args": ["m"], "bins": 20},
                 {"name": "d", "op": "histogram", "args": ["x"], "bins": 9,
                  "density": True, "weights": "w"},
                 {"name": "s", "op": "sum", "args": ["x"]}]
        doc = {"inputs": {"x": self.path("in.h5") + ":/f64",
                          "w": self.path("in.h5") + ":/f64"},
               "steps": steps, "print": ["h", "d", "s"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        got = json.loads(C.run("run", "--quiet", "--json", path).stdout)
        y = F64 + 1
        self.check(got["h"], *np.histogram(y[y < 10], 20))
        counts, edges = np.histogram(F64, 9, density=True, weights=F64)
        np.testing.assert_array_equal(got["d"]["edges"], edges)
        np.testing.assert_allclose(got["d"]["counts"], counts, rtol=1e-12)
        np.testing.assert_allclose(got["s"]["values"], F64.sum(), rtol=1e-12)

    def test_no_range_to_take_is_one_clear_line(self):
        for name, code, pattern in [
                ("nan", 1, r"all values are NaN, so there is no range"),
                ("inf", 1, r"autodetected range of \[1, inf\] is not finite"),
                ("empty", 2, r"is empty, so there is no range")]:
            with self.subTest(name=name):
                p = self.hist(name, expect=code)
                self.assertRegex(p.stderr, "^chunkctl: histogram: .*" +
                                 pattern + r".*give (a range|one)\n$")

    def test_bins_by_name_as_numpy_counts_them(self):
        # NumPy's estimators (auto, fd, scott, rice, sturges, sqrt) on the
        # values that are not NaN: the same number of bins, edges, counts
        for name, a in [("f64", F64), ("f32", F32[~np.isnan(F32)]),
                        ("ints", INTS), ("const", np.full(10, 3.0))]:
            for rule in ("auto", "fd", "scott", "rice", "sturges", "sqrt"):
                with self.subTest(name=name, rule=rule):
                    got = json.loads(self.hist(name, "--bins", rule).stdout)
                    counts, edges = np.histogram(a, rule)
                    self.assertEqual(len(got["histogram"]["counts"]),
                                     len(counts))
                    np.testing.assert_array_equal(
                        got["histogram"]["counts"], counts)
                    np.testing.assert_allclose(got["histogram"]["edges"],
                                               edges, rtol=1e-6)
        # in a pipeline, over a computed step
        doc = {"inputs": {"x": self.path("in.h5") + ":/f64"},
               "steps": [{"name": "y", "op": "multiply", "args": ["x", 2]},
                         {"name": "h", "op": "histogram", "args": ["y"],
                          "bins": "auto"}],
               "print": ["h"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        got = json.loads(C.run("run", "--quiet", "--json", path).stdout)
        self.check(got["h"], *np.histogram(F64 * 2, "auto"))

    def test_bins_by_name_within_a_range(self):
        # NumPy estimates from the values inside the range (widened by 0.5
        # each way when its ends are equal); none inside: one bin
        for name, a in [("f64", F64), ("f32", F32[~np.isnan(F32)]),
                        ("ints", INTS)]:
            for lo, hi in [(8, 10), (-1.5, 0.25), (3, 3), (100, 200)]:
                for rule in ("auto", "fd", "scott", "sturges"):
                    with self.subTest(name=name, rule=rule, range=(lo, hi)):
                        got = json.loads(self.hist(
                            name, "--bins", rule, "--range",
                            "%g,%g" % (lo, hi)).stdout)["histogram"]
                        counts, edges = np.histogram(a, rule, (lo, hi))
                        np.testing.assert_array_equal(got["counts"], counts)
                        np.testing.assert_allclose(got["edges"], edges,
                                                   rtol=1e-6)

    def test_bins_by_name_refusals(self):
        for opts, pattern in [
                (("--bins", "stone"), r"one of auto, fd"),
                (("--bins", "fd", "--weights", self.path("in.h5") + ":/f64"),
                 r"weighted data")]:
            with self.subTest(opts=opts):
                p = self.hist("f64", *opts, expect=2)
                self.assertRegex(p.stderr, "^chunkctl: histogram: .*" +
                                 pattern + ".*\n$")
        p = self.hist("nan", "--bins", "auto", expect=2)
        self.assertIn("no values", p.stderr)


if __name__ == "__main__":
    unittest.main()
