"""chunkctl run against NumPy: elementwise chains with broadcasting and
scalars, reductions over every axis set, histograms, astype, on several
chunkings (edge chunks included) and dtypes; thread-count determinism bit
for bit; validation errors with their JSON locations.

Inputs are written by h5py and zarr-python; NumPy computes the expected
results from the same arrays in memory.
"""
import json
import os
import warnings

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(20261122)


def pipeline(case, name, doc):
    path = case.path(name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def read(target):
    path, _, ds = target.partition(":")
    if path.endswith(".zarr"):
        g = zarr.open(path, "r")
        return g[ds][...] if ds else g[...]
    with h5py.File(path, "r") as f:
        return f[ds or "/"][()]


class Pipeline(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.f8 = RNG.normal(9, 1, size=(37, 23))
        cls.f8[3, 4] = np.nan
        cls.f8_clean = RNG.normal(9, 1, size=(37, 23))
        cls.f4 = RNG.normal(0, 3, size=(37, 23)).astype(np.float32)
        cls.i4 = RNG.integers(-1000, 1000, size=(11, 7, 5)).astype(np.int32)
        cls.u1 = RNG.integers(0, 255, size=(37, 23)).astype(np.uint8)
        cls.vec = RNG.normal(size=23)
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("f8", data=cls.f8, chunks=(10, 6))
            f.create_dataset("clean", data=cls.f8_clean, chunks=(8, 23))
            f.create_dataset("f4", data=cls.f4, chunks=(16, 16))
            f.create_dataset("i4", data=cls.i4, chunks=(4, 3, 5))
            f.create_dataset("vec", data=cls.vec, chunks=(5,))
        z = zarr.open_group(cls.path("in.zarr"), "w")
        z.create_dataset("u1", data=cls.u1, chunks=(9, 9))
        z.create_dataset("f8", data=cls.f8_clean, chunks=(37, 5))

    def run_ok(self, doc, *opts):
        p = pipeline(self, self.id().split(".")[-1], doc)
        C.run("run", "--quiet", "--force", *opts, p)

    def out(self, name):
        return self.fresh(name)

    def test_elementwise_chain_with_broadcast(self):
        out = self.out("ew.h5")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/clean",
                       "v": self.path("in.h5") + ":/vec"},
            "steps": [
                {"name": "a", "op": "add", "args": ["x", "v"]},
                {"name": "b", "op": "multiply", "args": ["a", 2.5]},
                {"name": "c", "op": "sqrt", "args": ["b"]},
                {"name": "d", "op": "maximum", "args": ["c", 4.5]},
            ],
            "outputs": {"d": out + ":/d", "a": out + ":/a"}})
        want = np.maximum(np.sqrt((self.f8_clean + self.vec) * 2.5), 4.5)
        self.assertSameArray(read(out + ":/d"), want)
        self.assertSameArray(read(out + ":/a"), self.f8_clean + self.vec)

    def test_scalar_promotion_follows_numpy(self):
        out = self.out("promo.zarr")
        self.run_ok({
            "inputs": {"i": self.path("in.h5") + ":/i4",
                       "u": self.path("in.zarr") + ":/u1"},
            "steps": [
                {"name": "a", "op": "add", "args": ["i", 1]},
                {"name": "b", "op": "add", "args": ["u", 300]},
                {"name": "c", "op": "divide", "args": ["i", 7]},
                {"name": "d", "op": "less", "args": ["u", 100]},
            ],
            "outputs": {"a": out + ":/a", "b": out + ":/b", "c": out + ":/c",
                        "d": out + ":/d"}})
        self.assertSameArray(read(out + ":/a"), self.i4 + 1)
        self.assertSameArray(read(out + ":/b"), self.u1 + 300)
        self.assertSameArray(read(out + ":/c"), self.i4 / 7)
        self.assertSameArray(read(out + ":/d"), self.u1 < 100)

    def test_where_and_astype(self):
        out = self.out("where.h5")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/f4"},
            "steps": [
                {"name": "neg", "op": "less", "args": ["x", 0]},
                {"name": "w", "op": "where", "args": ["neg", 0, "x"]},
                {"name": "f8", "op": "astype", "args": ["w"],
                 "dtype": "float64"},
            ],
            "outputs": {"w": out + ":/w", "f8": out + ":/f8"}})
        w = np.where(self.f4 < 0, 0, self.f4)
        self.assertSameArray(read(out + ":/w"), w)
        self.assertSameArray(read(out + ":/f8"), w.astype(np.float64))

    def check_reduce(self, src, arr, op, axis, tol, **kw):
        out = self.out("red.h5")
        step = {"name": "r", "op": op, "args": ["x"]}
        if axis is not None:
            step["axis"] = axis
        step.update(kw)
        self.run_ok({"inputs": {"x": src}, "steps": [step],
                     "outputs": {"r": out + ":/r"}})
        fn = getattr(np, op)
        npkw = {k: v for k, v in kw.items()}
        if axis is not None:
            npkw["axis"] = tuple(axis) if isinstance(axis, list) else axis
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(fn(arr, **npkw))
        got = read(out + ":/r")
        self.assertEqual(got.shape, want.shape, (op, axis))
        self.assertEqual(got.dtype, want.dtype, (op, axis))
        if tol == 0:
            self.assertTrue(np.array_equal(got, want, equal_nan=True),
                            "%s axis=%s: %r vs %r" % (op, axis, got, want))
        else:
            np.testing.assert_allclose(got, want, rtol=tol, equal_nan=True,
                                       err_msg="%s axis=%s" % (op, axis))

    def test_reductions_float64(self):
        src = self.path("in.h5") + ":/f8"
        for op in ("sum", "mean", "std", "var", "nansum", "nanmean",
                   "nanstd", "nanvar", "prod"):
            for axis in (None, 0, 1, [0, 1]):
                with self.subTest(op=op, axis=axis):
                    self.check_reduce(src, self.f8, op, axis, 1e-12)
        for op in ("min", "max", "nanmin", "nanmax", "argmin", "argmax",
                   "count_nonzero", "any", "all"):
            for axis in (None, 0, 1):
                with self.subTest(op=op, axis=axis):
                    self.check_reduce(src, self.f8, op, axis, 0)

    def test_reductions_int_and_keepdims(self):
        src = self.path("in.h5") + ":/i4"
        for op in ("sum", "min", "max", "argmax", "prod"):
            for axis in (None, 0, 2, [0, 2]):
                if op == "argmax" and isinstance(axis, list):
                    continue
                with self.subTest(op=op, axis=axis):
                    self.check_reduce(src, self.i4, op, axis, 0)
        self.check_reduce(src, self.i4, "mean", [1, 2], 1e-12,
                          keepdims=True)
        self.check_reduce(src, self.i4, "var", 1, 1e-12, ddof=1)

    def test_integer_mean_and_std_across_magnitudes(self):
        # int64 rows of small values (int64 lanes), values near 2^30 (exact
        # 128-bit sums) and near 2^45 (float route), each 10000 long so
        # variance blocks of all three kinds occur; against the exact
        # values from Python integers
        from fractions import Fraction
        x = np.stack([RNG.integers(-100, 100, 10000),
                      RNG.integers(2**30 - 5000, 2**30 + 5000, 10000),
                      RNG.integers(-2**45, 2**45, 10000)]).astype(np.int64)
        with h5py.File(self.path("mag.h5"), "w") as f:
            f.create_dataset("x", data=x, chunks=(1, 10000))
        out = self.out("mag_out.h5")
        self.run_ok({
            "inputs": {"x": self.path("mag.h5") + ":/x"},
            "steps": [{"name": "m", "op": "mean", "args": ["x"], "axis": 1},
                      {"name": "v", "op": "var", "args": ["x"], "axis": 1},
                      {"name": "s", "op": "std", "args": ["x"]}],
            "outputs": {k: out + ":/" + k for k in "mvs"}})
        for r in range(3):
            row = [int(v) for v in x[r]]
            mean = Fraction(sum(row), len(row))
            var = sum((Fraction(v) - mean) ** 2 for v in row) / len(row)
            self.assertAlmostEqual(read(out + ":/m")[r] / float(mean), 1,
                                   delta=1e-15)
            self.assertAlmostEqual(read(out + ":/v")[r] / float(var), 1,
                                   delta=1e-12)
        allv = [int(v) for v in x.ravel()]
        mean = Fraction(sum(allv), len(allv))
        var = sum((Fraction(v) - mean) ** 2 for v in allv) / len(allv)
        np.testing.assert_allclose(read(out + ":/s"), float(var) ** 0.5,
                                   rtol=1e-12)

    def test_histogram_matches_numpy(self):
        out = self.out("hist.zarr")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/f4",
                       "y": self.path("in.h5") + ":/clean"},
            "steps": [
                {"name": "h", "op": "histogram", "args": ["x"], "bins": 17,
                 "range": [-5, 5]},
                {"name": "g", "op": "histogram", "args": ["y"],
                 "edges": [5, 8, 8.5, 9, 12]},
                {"name": "d", "op": "histogram", "args": ["y"], "bins": 10,
                 "range": [6, 12], "density": True},
            ],
            "outputs": {"h": out + ":/h", "g": out + ":/g",
                        "d": out + ":/d"}})
        h, _ = np.histogram(self.f4, bins=17, range=(-5, 5))
        g, _ = np.histogram(self.f8_clean, bins=[5, 8, 8.5, 9, 12])
        d, _ = np.histogram(self.f8_clean, bins=10, range=(6, 12),
                            density=True)
        self.assertSameArray(read(out + ":/h"), h)
        self.assertSameArray(read(out + ":/g"), g)
        np.testing.assert_allclose(read(out + ":/d"), d, rtol=1e-14)

    def test_centered_uses_a_reduction_result(self):
        out = self.out("center.h5")
        self.run_ok({
            "inputs": {"x": self.path("in.zarr") + ":/f8"},
            "steps": [
                {"name": "m", "op": "mean", "args": ["x"], "axis": 0},
                {"name": "c", "op": "subtract", "args": ["x", "m"]},
            ],
            "outputs": {"c": out + ":/c"}})
        want = self.f8_clean - self.f8_clean.mean(axis=0)
        np.testing.assert_allclose(read(out + ":/c"), want, rtol=0,
                                   atol=1e-12)

    def test_slicing_like_numpy(self):
        out = self.out("slice.h5")
        src = self.path("in.h5") + ":/i4"
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/f8", "c": src},
            "steps": [
                {"name": "a", "op": "slice", "args": ["x"],
                 "index": [[None, None, 2], [3, -4]]},
                {"name": "b", "op": "slice", "args": ["x"],
                 "index": [5, [None, None, 3]]},
                {"name": "c3", "op": "slice", "args": ["c"],
                 "index": [[1, 10, 4], None, -1]},
                {"name": "y", "op": "add", "args": ["x", 1]},
                {"name": "d", "op": "slice", "args": ["y"],
                 "index": [[-30, 35, 3], [2, None, 5]]},
                {"name": "s", "op": "sum", "args": ["d"], "axis": 0},
                {"name": "e", "op": "slice", "args": ["x"],
                 "index": [[40, 50]]},
            ],
            "outputs": {"a": out + ":/a", "b": out + ":/b",
                        "c3": out + ":/c3", "d": out + ":/d",
                        "s": out + ":/s", "e": out + ":/e"}})
        x, c = self.f8, self.i4
        self.assertSameArray(read(out + ":/a"), x[::2, 3:-4])
        self.assertSameArray(read(out + ":/b"), x[5, ::3])
        self.assertSameArray(read(out + ":/c3"), c[1:10:4, :, -1])
        self.assertSameArray(read(out + ":/d"), (x + 1)[-30:35:3, 2::5])
        np.testing.assert_allclose(read(out + ":/s"),
                                   (x + 1)[-30:35:3, 2::5].sum(axis=0),
                                   rtol=1e-12)
        self.assertEqual(read(out + ":/e").shape, (0, 23))

    def test_transpose_like_numpy(self):
        out = self.out("tr.zarr")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/clean",
                       "c": self.path("in.h5") + ":/i4"},
            "steps": [
                {"name": "t", "op": "transpose", "args": ["x"]},
                {"name": "u", "op": "transpose", "args": ["c"],
                 "axes": [1, 2, 0]},
                {"name": "w", "op": "multiply", "args": ["t", 2]},
                {"name": "m", "op": "max", "args": ["u"], "axis": 2},
            ],
            "outputs": {"t": out + ":/t", "u": out + ":/u", "w": out + ":/w",
                        "m": out + ":/m"}})
        self.assertSameArray(read(out + ":/t"), self.f8_clean.T)
        self.assertSameArray(read(out + ":/u"),
                             np.transpose(self.i4, (1, 2, 0)))
        self.assertSameArray(read(out + ":/w"), self.f8_clean.T * 2)
        self.assertSameArray(read(out + ":/m"),
                             np.transpose(self.i4, (1, 2, 0)).max(axis=2))

    def test_reshape_to_any_shape_in_c_order(self):
        out = self.out("reshape.h5")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/clean",
                       "c": self.path("in.h5") + ":/i4"},
            "steps": [
                # 37*23 = 851 = 23*37: not a merge or split of axes
                {"name": "a", "op": "reshape", "args": ["x"],
                 "shape": [23, 37]},
                {"name": "b", "op": "reshape", "args": ["c"],
                 "shape": [5, -1, 11]},
                {"name": "t", "op": "transpose", "args": ["x"]},
                {"name": "d", "op": "reshape", "args": ["t"],
                 "shape": [851]},
                {"name": "e", "op": "sum", "args": ["b"], "axis": 1},
            ],
            "outputs": {"a": out + ":/a", "b": out + ":/b", "d": out + ":/d",
                        "e": out + ":/e"}})
        self.assertSameArray(read(out + ":/a"), self.f8_clean.reshape(23, 37))
        b = self.i4.reshape(5, -1, 11)
        self.assertSameArray(read(out + ":/b"), b)
        self.assertSameArray(read(out + ":/d"), self.f8_clean.T.reshape(851))
        self.assertSameArray(read(out + ":/e"), b.sum(axis=1))

    def test_rechunk_concatenate_stack(self):
        out = self.out("cat.zarr")
        f8 = self.path("in.h5") + ":/clean"
        self.run_ok({
            "inputs": {"x": f8, "u": self.path("in.zarr") + ":/u1",
                       "f": self.path("in.h5") + ":/f4"},
            "steps": [
                {"name": "r", "op": "rechunk", "args": ["x"],
                 "chunks": [7, 5]},
                {"name": "c0", "op": "concatenate", "args": ["x", "u", "f"]},
                {"name": "c1", "op": "concatenate", "args": ["u", "x"],
                 "axis": -1},
                {"name": "s", "op": "stack", "args": ["u", "f", "x"],
                 "axis": 1},
                # one array: NumPy's copy of it (and a new axis)
                {"name": "c2", "op": "concatenate", "args": ["u"]},
                {"name": "s2", "op": "stack", "args": ["f"], "axis": -1},
            ],
            "outputs": {"r": out + ":/r", "c0": out + ":/c0",
                        "c1": out + ":/c1", "s": out + ":/s",
                        "c2": out + ":/c2", "s2": out + ":/s2"}})
        z = zarr.open(out, "r")
        self.assertEqual(z["r"].chunks, (7, 5))
        self.assertSameArray(z["r"][...], self.f8_clean)
        self.assertSameArray(
            z["c0"][...], np.concatenate([self.f8_clean, self.u1, self.f4]))
        self.assertSameArray(
            z["c1"][...], np.concatenate([self.u1, self.f8_clean], axis=-1))
        self.assertSameArray(
            z["s"][...], np.stack([self.u1, self.f4, self.f8_clean], axis=1))
        self.assertSameArray(z["c2"][...], np.concatenate([self.u1]))
        self.assertSameArray(z["s2"][...], np.stack([self.f4], axis=-1))

    def test_random_source_is_reproducible(self):
        out = self.out("rnd.h5")
        doc = {"inputs": {"x": self.path("in.h5") + ":/clean"},
               "steps": [
                   {"name": "g", "op": "random", "dist": "normal",
                    "mean": 9, "std": 1, "seed": 5, "shape": [300, 200],
                    "chunks": [70, 30]},
                   {"name": "h", "op": "random", "dist": "normal",
                    "mean": 9, "std": 1, "seed": 5, "shape": [300, 200]},
                   {"name": "i", "op": "random", "dist": "integers",
                    "low": -3, "high": 4, "seed": 1, "shape": [1000],
                    "dtype": "int16"},
                   {"name": "m", "op": "mean", "args": ["g"]}],
               "outputs": {"g": out + ":/g", "h": out + ":/h",
                           "i": out + ":/i", "m": out + ":/m"}}
        self.run_ok(doc)
        g, h, i = read(out + ":/g"), read(out + ":/h"), read(out + ":/i")
        self.assertTrue(np.array_equal(g, h), "chunking changed the values")
        self.assertLess(abs(g.mean() - 9), 0.02)
        self.assertLess(abs(g.std() - 1), 0.02)
        self.assertAlmostEqual(float(read(out + ":/m")), g.mean(), 12)
        self.assertEqual(i.dtype, np.int16)
        self.assertEqual(set(np.unique(i)), set(range(-3, 4)))

    def test_mask_selection_the_seed_exercise(self):
        out = self.out("mask.h5")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/f8"},
            "steps": [
                {"name": "y", "op": "add", "args": ["x", 1.0]},
                {"name": "lt", "op": "less", "args": ["y", 10.0]},
                {"name": "low", "op": "mask", "args": ["y", "lt"]},
                {"name": "hist", "op": "histogram", "args": ["low"],
                 "bins": 100, "range": [-9, 11]},
                {"name": "n", "op": "count_nonzero", "args": ["low"]},
                {"name": "m", "op": "mean", "args": ["low"]},
            ],
            "outputs": {"low": out + ":/low", "hist": out + ":/hist",
                        "n": out + ":/n", "m": out + ":/m"}})
        y = self.f8 + 1.0
        low = y[y < 10]
        self.assertSameArray(read(out + ":/low"), low)
        self.assertSameArray(read(out + ":/hist"),
                             np.histogram(low, bins=100, range=(-9, 11))[0])
        self.assertEqual(int(read(out + ":/n")), np.count_nonzero(low))
        np.testing.assert_allclose(read(out + ":/m"), low.mean(), rtol=1e-12)

    def test_folds_over_one_operand_share_a_pass(self):
        # mean, sum over axis 0, std, argmax and a histogram of one 3-D
        # int32 array with edge chunks on two axes (11 x 7 x 5 in 4 x 3 x
        # 5): one pass reads each chunk once, in place, for all of them
        out = self.out("shared.h5")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/i4"},
            "steps": [
                {"name": "m", "op": "mean", "args": ["x"]},
                {"name": "s", "op": "sum", "args": ["x"], "axis": 0},
                {"name": "d", "op": "std", "args": ["x"]},
                {"name": "a", "op": "argmax", "args": ["x"], "axis": 1},
                {"name": "h", "op": "histogram", "args": ["x"], "bins": 7,
                 "range": [-900, 900]}],
            "outputs": {k: out + ":/" + k for k in "msdah"}})
        x = self.i4
        np.testing.assert_allclose(read(out + ":/m"), x.mean(), rtol=1e-12)
        self.assertSameArray(read(out + ":/s"), x.sum(axis=0))
        np.testing.assert_allclose(read(out + ":/d"), x.std(), rtol=1e-12)
        self.assertSameArray(read(out + ":/a"), x.argmax(axis=1))
        self.assertSameArray(read(out + ":/h"),
                             np.histogram(x, bins=7, range=(-900, 900))[0])

    def test_shared_passes_fold_big_chunks_in_slabs(self):
        # chunks of 9.6 MB are folded in slabs (8 MB) along axis 0 by all
        # the pass's steps: a kept axis 0 (sum over axis 1, argmax over
        # axis 1), a reduced one (std over axis 0), all axes (mean,
        # argmin) and a histogram, with an edge chunk, against NumPy
        x = RNG.normal(size=(2500, 1001))
        with h5py.File(self.path("slabs.h5"), "w") as f:
            f.create_dataset("x", data=x, chunks=(1200, 1001))
        out = self.out("slabs_out.h5")
        self.run_ok({
            "inputs": {"x": self.path("slabs.h5") + ":/x"},
            "steps": [
                {"name": "m", "op": "mean", "args": ["x"]},
                {"name": "s1", "op": "sum", "args": ["x"], "axis": 1},
                {"name": "a1", "op": "argmax", "args": ["x"], "axis": 1},
                {"name": "d0", "op": "std", "args": ["x"], "axis": 0},
                # a mean read from the std's states (the same axes)
                {"name": "m0", "op": "mean", "args": ["x"], "axis": 0},
                {"name": "am", "op": "argmin", "args": ["x"]},
                {"name": "h", "op": "histogram", "args": ["x"], "bins": 30,
                 "range": [-3, 3]}],
            "outputs": {k: out + ":/" + k
                        for k in ("m", "s1", "a1", "d0", "m0", "am", "h")}})
        np.testing.assert_allclose(read(out + ":/m"), x.mean(), rtol=1e-12,
                                   atol=1e-15)
        np.testing.assert_allclose(read(out + ":/s1"), x.sum(axis=1),
                                   rtol=1e-12, atol=1e-12)
        self.assertSameArray(read(out + ":/a1"), x.argmax(axis=1))
        np.testing.assert_allclose(read(out + ":/d0"), x.std(axis=0),
                                   rtol=1e-12)
        np.testing.assert_allclose(read(out + ":/m0"), x.mean(axis=0),
                                   rtol=1e-12, atol=1e-15)
        self.assertEqual(int(read(out + ":/am")), int(x.argmin()))
        self.assertSameArray(read(out + ":/h"),
                             np.histogram(x, bins=30, range=(-3, 3))[0])

    def test_mean_beside_var_comes_from_its_states(self):
        # nanmean with nanvar and mean with var over the same axes share
        # the var's fold; NaN skipped or propagated as NumPy does
        out = self.out("twins.h5")
        src = self.path("in.h5") + ":/f8"
        self.run_ok({
            "inputs": {"x": src},
            "steps": [
                {"name": "nm", "op": "nanmean", "args": ["x"], "axis": 1},
                {"name": "nv", "op": "nanvar", "args": ["x"], "axis": 1},
                {"name": "m", "op": "mean", "args": ["x"], "axis": 0},
                {"name": "v", "op": "var", "args": ["x"], "axis": 0,
                 "ddof": 1}],
            "outputs": {k: out + ":/" + k for k in ("nm", "nv", "m", "v")}})
        x = self.f8
        np.testing.assert_allclose(read(out + ":/nm"), np.nanmean(x, axis=1),
                                   rtol=1e-12)
        np.testing.assert_allclose(read(out + ":/nv"), np.nanvar(x, axis=1),
                                   rtol=1e-12)
        np.testing.assert_allclose(read(out + ":/m"), x.mean(axis=0),
                                   rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(read(out + ":/v"), x.var(axis=0, ddof=1),
                                   rtol=1e-12, equal_nan=True)

    def test_a_mask_only_folded_is_never_held(self):
        # x[x < 10] feeding only a histogram and reductions is folded chunk
        # by chunk, never held: NumPy's answers, the same bits for any
        # --threads, and a budget that could not hold the selection
        big = RNG.normal(9, 1, size=(1203, 1001))
        with h5py.File(self.path("maskbig.h5"), "w") as f:
            f.create_dataset("x", data=big, chunks=(400, 300))
        doc = {
            "inputs": {"x": self.path("maskbig.h5") + ":/x",
                       "w": self.path("in.h5") + ":/f4"},
            "steps": [
                {"name": "y", "op": "add", "args": ["x", 1.0]},
                {"name": "lt", "op": "less", "args": ["y", 10.0]},
                {"name": "low", "op": "mask", "args": ["y", "lt"]},
                {"name": "h", "op": "histogram", "args": ["low"],
                 "bins": 100, "range": [-9, 11]},
                {"name": "m", "op": "mean", "args": ["low"]},
                {"name": "v", "op": "var", "args": ["low"], "ddof": 1},
                {"name": "n", "op": "count_nonzero", "args": ["low"]},
                # a condition that is not the values themselves
                {"name": "pos", "op": "greater", "args": ["w", 0.0]},
                {"name": "wp", "op": "mask", "args": ["w", "pos"]},
                {"name": "ws", "op": "sum", "args": ["wp"]}]}
        y = big + 1.0
        low = y[y < 10]
        wp = self.f4[self.f4 > 0]
        got = []
        for t in ("1", "2"):
            out = self.out("maskfold%s.h5" % t)
            doc["outputs"] = {k: out + ":/" + k for k in ("h", "m", "v", "n",
                                                          "ws")}
            # the selection alone is 9.6 MB (about 80% of the values)
            self.run_ok(doc, "--threads", t, "--memory", "32M")
            self.assertSameArray(
                read(out + ":/h"),
                np.histogram(low, bins=100, range=(-9, 11))[0])
            np.testing.assert_allclose(read(out + ":/m"), low.mean(),
                                       rtol=1e-12)
            np.testing.assert_allclose(read(out + ":/v"), low.var(ddof=1),
                                       rtol=1e-12)
            self.assertEqual(int(read(out + ":/n")), np.count_nonzero(low))
            np.testing.assert_allclose(read(out + ":/ws"), wp.sum(),
                                       rtol=1e-6)
            self.assertEqual(read(out + ":/ws").dtype, np.float32)
            got.append(b"".join(read(out + ":/" + k).tobytes()
                                for k in ("h", "m", "v", "n", "ws")))
        self.assertEqual(got[0], got[1])

    def test_empty_mask_gives_zero_counts_and_nan_mean(self):
        out = self.out("empty.h5")
        p = pipeline(self, "empty", {
            "inputs": {"x": self.path("in.h5") + ":/clean"},
            "steps": [
                {"name": "never", "op": "less", "args": ["x", -1e300]},
                {"name": "none", "op": "mask", "args": ["x", "never"]},
                {"name": "h", "op": "histogram", "args": ["none"],
                 "bins": 4, "range": [0, 1]},
                {"name": "m", "op": "mean", "args": ["none"]}],
            "outputs": {"h": out + ":/h", "m": out + ":/m",
                        "none": out + ":/none"}})
        r = C.run("run", "--quiet", "--force", p)
        self.assertIn("mean of an empty selection is NaN", r.stderr)
        self.assertSameArray(read(out + ":/h"), np.zeros(4, np.int64))
        self.assertTrue(np.isnan(read(out + ":/m")))
        self.assertEqual(read(out + ":/none").shape, (0,))

    def test_reduce_and_histogram_commands_print_numpy_results(self):
        src = self.path("in.h5") + ":/f8"
        r = C.run("reduce", "nanmean", src, "--axis", "0", "--quiet")
        got = np.array([float(v) for v in r.stdout.split()])
        np.testing.assert_allclose(got, np.nanmean(self.f8, axis=0),
                                   rtol=1e-12)
        r = C.run("reduce", "argmax", src, "--json", "--quiet")
        self.assertEqual(json.loads(r.stdout)["result"]["values"],
                         [int(np.argmax(self.f8))])
        r = C.run("histogram", self.path("in.h5") + ":/f4", "--bins", "7",
                  "--range=-4,4", "--json", "--quiet")
        h = json.loads(r.stdout)["histogram"]
        want, edges = np.histogram(self.f4, bins=7, range=(-4, 4))
        self.assertEqual(h["counts"], want.tolist())
        np.testing.assert_array_equal(np.array(h["edges"], np.float32),
                                      edges)
        out = self.out("cmd.h5")
        C.run("reduce", "std", src, "--axis", "1", "--ddof", "1",
              "-o", out + ":/s", "--quiet")
        np.testing.assert_allclose(read(out + ":/s"),
                                   np.std(self.f8, axis=1, ddof=1),
                                   rtol=1e-12, equal_nan=True)
        r = C.run("reduce", "mean", src, "--axis", "5", expect=2)
        self.assertIn("reduce: axis 5 out of range for a 2-D array",
                      r.stderr)

    def test_histogram2d_matches_numpy(self):
        out = self.out("h2.h5")
        self.run_ok({
            "inputs": {"x": self.path("in.h5") + ":/clean",
                       "y": self.path("in.h5") + ":/f4"},
            "steps": [
                {"name": "h", "op": "histogram2d", "args": ["x", "y"],
                 "bins": [6, 4], "range": [[7, 11], [-5, 5]]},
                {"name": "d", "op": "histogram2d", "args": ["x", "y"],
                 "bins": 3, "range": [[6, 12], [-6, 6]], "density": True},
            ],
            "outputs": {"h": out + ":/h", "d": out + ":/d"}})
        h, _, _ = np.histogram2d(self.f8_clean.ravel(), self.f4.ravel(),
                                 bins=[6, 4], range=[[7, 11], [-5, 5]])
        d, _, _ = np.histogram2d(self.f8_clean.ravel(), self.f4.ravel(),
                                 bins=3, range=[[6, 12], [-6, 6]],
                                 density=True)
        self.assertSameArray(read(out + ":/h"), h)  # float64, as NumPy
        np.testing.assert_allclose(read(out + ":/d"), d, rtol=1e-14)

    def test_every_op_is_a_command(self):
        src = self.path("in.h5") + ":/clean"
        out = self.out("opcmd.zarr")
        C.run("reshape", src, "--shape", "23,37", "-o", out, "--quiet")
        self.assertSameArray(zarr.open(out, "r")[...],
                             self.f8_clean.reshape(23, 37))
        out = self.out("opcmd.h5")
        C.run("subtract", src, 2, "-o", out + ":/d", "--quiet")
        self.assertSameArray(read(out + ":/d"), self.f8_clean - 2)
        r = C.run("nanmax", self.path("in.h5") + ":/f8", "--axis", "1",
                  "--json", "--quiet")
        self.assertEqual(json.loads(r.stdout)["nanmax"]["values"],
                         np.nanmax(self.f8, axis=1).tolist())
        r = C.run("transpose", src, expect=2)
        self.assertIn("transpose: give -o", r.stderr)

    def test_threads_give_identical_bits(self):
        doc = {"inputs": {"x": self.path("in.h5") + ":/f8"},
               "steps": [{"name": "s", "op": "nansum", "args": ["x"],
                          "axis": 1},
                         {"name": "t", "op": "nanstd", "args": ["x"]}]}
        got = []
        for t in ("1", "2", "3"):
            out = self.out("thr%s.h5" % t)
            doc["outputs"] = {"s": out + ":/s", "t": out + ":/t"}
            self.run_ok(doc, "--threads", t)
            got.append((read(out + ":/s").tobytes(),
                        read(out + ":/t").tobytes()))
        self.assertEqual(got[0], got[1])
        self.assertEqual(got[0], got[2])

    def test_validation_errors_name_their_place(self):
        src = self.path("in.h5") + ":/f8"
        cases = [
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "frobnicate", "args": ["x"]}],
              "outputs": {"y": "o.h5"}}, "steps[0]: unknown op 'frobnicate'"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "add", "args": ["x"]}],
              "outputs": {"y": "o.h5"}}, "steps[0]: takes 2 arguments"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "sum", "args": ["x"], "axis": 3}],
              "outputs": {"y": "o.h5"}},
             "steps[0]: axis 3 out of range for a 2-D array"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "add", "args": ["x", "z"]}],
              "outputs": {"y": "o.h5"}},
             "steps[0]: args[1]: no input or step named 'z'"),
            ({"inputs": {"x": src, "v": self.path("in.h5") + ":/i4"},
              "steps": [{"name": "y", "op": "add", "args": ["x", "v"]}],
              "outputs": {"y": "o.h5"}}, "do not broadcast"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "a", "op": "add", "args": ["b", 1]},
                {"name": "b", "op": "add", "args": ["a", 1]}],
              "outputs": {"a": "o.h5"}}, "depends on itself"),
            ({"inputs": {"x": src}, "steps": [],
              "outputs": {"q": "o.h5"}}, "outputs.q: no step named 'q'"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "slice", "args": ["x"],
                 "index": [40]}],
              "outputs": {"y": "o.h5"}},
             "steps[0]: index[0]: 40 is out of range for length 37"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "transpose", "args": ["x"],
                 "axes": [0, 0]}],
              "outputs": {"y": "o.h5"}}, "axes must list each of the 2"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "reshape", "args": ["x"],
                 "shape": [10, 10]}],
              "outputs": {"y": "o.h5"}},
             "cannot reshape (37, 23) (851 elements) into (10, 10) (100)"),
            ({"inputs": {"x": src, "c": self.path("in.h5") + ":/i4"},
              "steps": [{"name": "y", "op": "concatenate",
                         "args": ["x", "c"]}],
              "outputs": {"y": "o.h5"}}, "args[1] has 3 dimensions"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "c", "op": "less", "args": ["x", 9]},
                {"name": "m", "op": "mask", "args": ["x", "c"]},
                {"name": "y", "op": "add", "args": ["m", 1]}],
              "outputs": {"y": "o.h5"}},
             "steps[2]: args[0]: 'm' is a mask"),
            ({"inputs": {"x": src}, "steps": [
                {"name": "m", "op": "mask", "args": ["x", "x"]}],
              "outputs": {"m": "o.h5"}},
             "args[1] must be a boolean array"),
            ({"inputs": {"x": src}, "steps": [],
              "outputs": {"x": src}}, "never writes into its input"),
            # a key no parser reads: a typo, or a key of another op; the
            # message names the keys the op does read
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "sum", "args": ["x"], "keepdim": True}],
              "outputs": {"y": "o.h5"}},
             'steps[0]: sum takes no key "keepdim" here (it reads "axis"'),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "histogram", "args": ["x"], "bin": 5}],
              "outputs": {"y": "o.h5"}},
             'steps[0]: histogram takes no key "bin" here'),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": "add", "args": ["x", 1]}],
              "output": {"y": "o.h5"}, "print": ["y"]},
             'top level: unknown key "output"'),
            ({"inputs": {"x": src}, "steps": [
                {"name": "y", "op": 3, "args": ["x"]}],
              "outputs": {"y": "o.h5"}},
             'steps[0]: "op" must be a string'),
        ]
        for doc, needle in cases:
            with self.subTest(needle=needle):
                p = pipeline(self, "bad", doc)
                r = C.run("run", "--quiet", p, expect=2)
                self.assertIn(needle, r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)

    def test_invalid_json_reports_line_and_column(self):
        p = self.path("broken.json")
        with open(p, "w") as f:
            f.write('{\n  "inputs": {"x": "a.h5"},\n  "steps": [,]\n}\n')
        r = C.run("plan", p, expect=2)
        self.assertIn("line 3 column", r.stderr)

    def test_plan_reads_no_data_and_dot_draws_the_graph(self):
        p = pipeline(self, "plan", {
            "inputs": {"x": self.path("in.h5") + ":/f8"},
            "steps": [{"name": "y", "op": "add", "args": ["x", 1]},
                      {"name": "m", "op": "mean", "args": ["y"], "axis": 0}],
            "outputs": {"m": self.path("never.h5") + ":/m"}})
        r = C.run("plan", p)
        self.assertIn("(37, 23)", r.stdout)
        self.assertIn("estimated peak memory", r.stdout)
        self.assertFalse(os.path.exists(self.path("never.h5")))
        r = C.run("plan", "--dot", p)
        self.assertIn('"y" -> "m"', r.stdout)

    def test_steps_used_twice_are_evaluated_once(self):
        # y = x + x, 40 times; diamonds (b = a * 0.5, c = a + 1, a = b + c)
        # 20 deep; a step used by an add, a slice, two reductions, and a
        # slice used twice.  Evaluated as a tree each is 2^steps evaluations
        # of x: the run would not end within C.run's 60 s.
        out = self.out("dag.h5")
        steps = []
        for i in range(1, 41):
            y = "y%d" % (i - 1) if i > 1 else "x"
            steps.append({"name": "y%d" % i, "op": "add", "args": [y, y]})
        for i in range(1, 21):
            a = "a%d" % (i - 1) if i > 1 else "x"
            steps += [{"name": "b%d" % i, "op": "multiply", "args": [a, 0.5]},
                      {"name": "c%d" % i, "op": "add", "args": [a, 1.0]},
                      {"name": "a%d" % i, "op": "add",
                       "args": ["b%d" % i, "c%d" % i]}]
        steps += [
            {"name": "s", "op": "slice", "args": ["a20"],
             "index": [[1, None], [None, None]]},
            {"name": "t", "op": "subtract", "args": ["y40", "a20"]},
            {"name": "sum", "op": "sum", "args": ["t"]},
            {"name": "max", "op": "max", "args": ["t"]},
            {"name": "q", "op": "slice", "args": ["t"],
             "index": [[None, None], [None, None]]},
            {"name": "u", "op": "multiply", "args": ["q", "q"]},
        ]
        self.run_ok({"inputs": {"x": self.path("in.h5") + ":/clean"},
                     "steps": steps,
                     "outputs": {k: out + ":/" + k
                                 for k in ("y40", "a20", "s", "u", "sum",
                                           "max")}})
        x = self.f8_clean
        y = x
        for _ in range(40):
            y = y + y
        a = x
        for _ in range(20):
            a = a * 0.5 + (a + 1.0)
        t = y - a
        self.assertSameArray(read(out + ":/y40"), y)
        self.assertSameArray(read(out + ":/a20"), a)
        self.assertSameArray(read(out + ":/s"), a[1:])
        self.assertSameArray(read(out + ":/u"), t * t)
        self.assertSameArray(read(out + ":/max"), np.max(t))
        np.testing.assert_allclose(read(out + ":/sum"), np.sum(t),
                                   rtol=1e-12)


if __name__ == "__main__":
    C.main()
