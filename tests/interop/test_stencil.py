"""The stencil ops (convolve, correlate, uniform_filter, gaussian_filter,
gradient, diff) against scipy.ndimage and NumPy on h5py- and zarr-written
arrays with edge chunks and several chunkings: every boundary mode across
chunk edges, kernels larger than a chunk and than the array, even kernels
and origins, float32/float64/int16 inputs, NaN, the same bits for any
--threads, a pipeline feeding an elementwise step into convolve, the
one-step command form, --memory, and the usage errors.
"""
import json

import _common as C
from _common import np, h5py, zarr

import scipy.ndimage as ndi

RNG = np.random.default_rng(7)
X = RNG.normal(size=(37, 23))
X3 = RNG.normal(size=(9, 11, 7))
XI = RNG.integers(-300, 300, size=(37, 23)).astype(np.int16)
XF = X.astype(np.float32)
XN = X.copy()
XN[3, 4] = np.nan
XN[20, 0] = np.nan
XN[36, 22] = np.inf
X1 = np.array([3.0, -1.0, 4.0, 1.5, -5.0])
# diff: integer extremes (wraparound), bool, float32 with NaN
XD = C.make_data("int16", (37, 23), 11)
XU = C.make_data("uint8", (37, 23), 12)
XB = C.make_data("bool", (37, 23), 13)
XDF = C.make_data("float32", (37, 23), 14)
MODES = ["reflect", "nearest", "mirror", "constant", "wrap"]
W33 = RNG.normal(size=(3, 3)).round(3)
W33[0, 1] = 0.0  # a zero weight: SciPy leaves it out of the sum


def write_h5(path, name, data, chunks):
    with h5py.File(path, "a") as f:
        f.create_dataset(name, data=data, chunks=chunks)


def write_zarr(path, data, chunks):
    z = zarr.open(path, mode="w", shape=data.shape, chunks=chunks,
                  dtype=data.dtype)
    z[...] = data


class Stencil(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        h5 = cls.path("x.h5")
        write_h5(h5, "x", X, (8, 6))
        write_h5(h5, "rows", X, (5, 23))
        write_h5(h5, "x3", X3, (4, 5, 3))
        write_h5(h5, "xi", XI, (8, 6))
        write_h5(h5, "xf", XF, (8, 6))
        write_h5(h5, "xn", XN, (8, 6))
        write_h5(h5, "x1", X1, (2,))
        write_h5(h5, "xd", XD, (8, 6))
        write_h5(h5, "xu", XU, (5, 7))
        write_h5(h5, "xb", XB, (8, 6))
        write_h5(h5, "xdf", XDF, (6, 8))
        write_zarr(cls.path("x.zarr"), X, (10, 7))
        write_zarr(cls.path("x4.zarr"), X, (4, 4))
        write_zarr(cls.path("x3.zarr"), X3, (2, 4, 7))

    # -- helpers --

    def src(self, name):
        if name.endswith(".zarr"):
            return self.path(name)
        return self.path("x.h5") + ":/" + name

    def run_steps(self, src, steps, threads="2", extra=()):
        out = self.fresh("out.h5")
        doc = {"inputs": {"x": src}, "steps": steps,
               "outputs": {steps[-1]["name"]: out + ":/y"}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, *extra, path)
        with h5py.File(out, "r") as f:
            return f["y"][...]

    def run_op(self, src, op, threads="2", extra=(), **keys):
        step = {"name": "y", "op": op, "args": ["x"]}
        step.update(keys)
        return self.run_steps(src, [step], threads, extra)

    def run_many(self, src, steps, threads="2"):
        """Each of steps ({"op": ..., keys}) on x, in one pipeline run:
        their results, in order."""
        out = self.fresh("many.h5")
        doc = {"inputs": {"x": src}, "steps": [], "outputs": {}}
        for k, keys in enumerate(steps):
            step = {"name": "y%d" % k, "args": ["x"]}
            step.update(keys)
            doc["steps"].append(step)
            doc["outputs"]["y%d" % k] = out + ":/y%d" % k
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, path)
        with h5py.File(out, "r") as f:
            return [f["y%d" % k][...] for k in range(len(steps))]

    def bad(self, src, op, *needles, **keys):
        step = {"name": "y", "op": op, "args": ["x"]}
        step.update(keys)
        doc = {"inputs": {"x": src}, "steps": [step],
               "outputs": {"y": self.fresh("bad.h5") + ":/y"}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", "--quiet", path, expect=None)
        self.assertCleanError(p, 2, "steps[0]", *needles)

    # -- convolve and correlate --

    def test_every_mode_across_chunk_edges(self):
        ops = [("convolve", ndi.convolve), ("correlate", ndi.correlate)]
        cases = [(op, fn, mode) for op, fn in ops for mode in MODES]
        for name in ["x", "rows", "x.zarr", "x4.zarr"]:
            got = self.run_many(self.src(name), [
                dict(op=op, weights=W33.tolist(), mode=mode, cval=1.5)
                for op, _, mode in cases])
            for (op, fn, mode), g in zip(cases, got):
                with self.subTest(src=name, op=op, mode=mode):
                    self.assertSameArray(g, fn(X, W33, mode=mode, cval=1.5))

    def test_kernels_larger_than_a_chunk_and_even_ones(self):
        w11 = RNG.normal(size=(11, 11)).round(2)
        cases = [(w11, 0), (RNG.normal(size=(4, 2)), 0),
                 (RNG.normal(size=(2, 5)), [-1, 2]),
                 (RNG.normal(size=(6, 3)), [2, -1]),
                 (RNG.normal(size=(4, 4)), [-2, 1])]
        ops = [("convolve", ndi.convolve), ("correlate", ndi.correlate)]
        runs = [(w, origin, op, fn, mode) for w, origin in cases
                for op, fn in ops for mode in MODES]
        got = self.run_many(self.src("x4.zarr"), [
            dict(op=op, weights=w.tolist(), mode=mode, origin=origin)
            for w, origin, op, _, mode in runs])
        for (w, origin, op, fn, mode), g in zip(runs, got):
            with self.subTest(shape=w.shape, origin=origin, op=op, mode=mode):
                self.assertSameArray(g, fn(X, w, mode=mode, origin=origin))

    def test_kernels_larger_than_the_array(self):
        w = np.arange(17.0) - 5
        runs = [(op, fn, mode) for op, fn in [("convolve", ndi.convolve),
                                               ("correlate", ndi.correlate)]
                for mode in MODES]
        got = self.run_many(self.src("x1"), [
            dict(op=op, weights=w.tolist(), mode=mode, cval=-2)
            for op, _, mode in runs])
        for (op, fn, mode), g in zip(runs, got):
            with self.subTest(op=op, mode=mode):
                self.assertSameArray(g, fn(X1, w, mode=mode, cval=-2))

    def test_dtypes_cast_as_scipy(self):
        w = np.array([[0.5, -0.25, 0.1], [0.3, 1.0, 0.2]])
        for name, data in [("xf", XF), ("xi", XI)]:
            for op, fn in [("convolve", ndi.convolve),
                           ("correlate", ndi.correlate)]:
                with self.subTest(dtype=data.dtype, op=op):
                    got = self.run_op(self.src(name), op, weights=w.tolist(),
                                      mode="mirror", origin=[0, -1])
                    self.assertSameArray(got, fn(data, w, mode="mirror",
                                                 origin=[0, -1]))

    def test_nan_and_inf(self):
        for op, fn in [("convolve", ndi.convolve),
                       ("correlate", ndi.correlate)]:
            for mode in ["reflect", "wrap"]:
                with self.subTest(op=op, mode=mode):
                    got = self.run_op(self.src("xn"), op,
                                      weights=W33.tolist(), mode=mode)
                    self.assertSameArray(got, fn(XN, W33, mode=mode))

    def test_three_dimensions(self):
        w = RNG.normal(size=(3, 2, 4)).round(2)
        for name in ["x3", "x3.zarr"]:
            for mode in ["reflect", "constant", "wrap"]:
                with self.subTest(src=name, mode=mode):
                    got = self.run_op(self.src(name), "convolve",
                                      weights=w.tolist(), mode=mode)
                    self.assertSameArray(got, ndi.convolve(X3, w, mode=mode))
                    got = self.run_op(self.src(name), "gaussian_filter",
                                      sigma=[1.0, 0.8, 1.3], mode=mode)
                    np.testing.assert_allclose(
                        got, ndi.gaussian_filter(X3, [1.0, 0.8, 1.3],
                                                 mode=mode),
                        rtol=1e-13, atol=1e-14)

    # -- uniform_filter and gaussian_filter --

    def test_uniform_filter(self):
        cases = [dict(size=3), dict(size=[4, 2]), dict(size=5, origin=[1, -2]),
                 dict(size=[1, 6], origin=[0, 2]), dict(size=12)]
        runs = [(keys, mode) for keys in cases for mode in MODES]
        for name in ["x", "x4.zarr"]:
            got = self.run_many(self.src(name), [
                dict(op="uniform_filter", mode=mode, cval=0.5, **keys)
                for keys, mode in runs])
            for (keys, mode), g in zip(runs, got):
                with self.subTest(src=name, keys=keys, mode=mode):
                    want = ndi.uniform_filter(X, mode=mode, cval=0.5, **keys)
                    # SciPy keeps a running sum along each line: the same
                    # values within rounding
                    np.testing.assert_allclose(g, want, rtol=1e-12,
                                               atol=1e-13)

    def test_uniform_filter_dtypes(self):
        got = self.run_op(self.src("xf"), "uniform_filter", size=[3, 4])
        want = ndi.uniform_filter(XF, size=[3, 4])
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        got = self.run_op(self.src("xi"), "uniform_filter", size=3,
                          mode="wrap")
        want = ndi.uniform_filter(XI, size=3, mode="wrap")
        self.assertEqual(got.dtype, np.int16)
        # cast to int16 after each axis as SciPy does; a running sum a
        # rounding away from an integer may truncate to the next one
        self.assertLessEqual(np.abs(got.astype(int) - want).max(), 1)
        self.assertGreater((got == want).mean(), 0.99)

    def test_uniform_filter_nan_stays_in_its_windows(self):
        got = self.run_op(self.src("xn"), "uniform_filter", size=3)
        # the direct windows: correlate1d with equal weights per axis
        want = XN
        for axis in range(2):
            want = ndi.correlate1d(want, np.full(3, 1 / 3), axis=axis)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)

    def test_gaussian_filter(self):
        cases = [dict(sigma=1.5), dict(sigma=[2.0, 0.7]),
                 dict(sigma=[0, 1.2]), dict(sigma=3, truncate=2.5),
                 dict(sigma=0.3)]
        runs = [(keys, mode) for keys in cases for mode in MODES]
        for name in ["x", "rows", "x4.zarr"]:
            got = self.run_many(self.src(name), [
                dict(op="gaussian_filter", mode=mode, cval=-1, **keys)
                for keys, mode in runs])
            for (keys, mode), g in zip(runs, got):
                with self.subTest(src=name, keys=keys, mode=mode):
                    want = ndi.gaussian_filter(X, mode=mode, cval=-1, **keys)
                    np.testing.assert_allclose(g, want, rtol=1e-13,
                                               atol=1e-14)

    def test_gaussian_filter_dtypes_and_nan(self):
        got = self.run_op(self.src("xf"), "gaussian_filter", sigma=1.2)
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_allclose(got, ndi.gaussian_filter(XF, 1.2),
                                   rtol=1e-6, atol=1e-6)
        got = self.run_op(self.src("xi"), "gaussian_filter", sigma=2,
                          mode="nearest")
        want = ndi.gaussian_filter(XI, 2, mode="nearest")
        self.assertEqual(got.dtype, np.int16)
        self.assertLessEqual(np.abs(got.astype(int) - want).max(), 1)
        got = self.run_op(self.src("xn"), "gaussian_filter", sigma=1)
        np.testing.assert_allclose(got, ndi.gaussian_filter(XN, 1),
                                   rtol=1e-13, atol=1e-14)

    # -- gradient and diff --

    def test_gradient_on_each_axis(self):
        for name, data in [("x", X), ("xf", XF), ("xi", XI), ("x3", X3),
                           ("x3.zarr", X3), ("x4.zarr", X)]:
            runs = [(axis, edge) for axis in range(data.ndim)
                    for edge in (1, 2)]
            got = self.run_many(self.src(name), [
                dict(op="gradient", axis=axis - data.ndim * (edge - 1),
                     edge_order=edge) for axis, edge in runs])
            for (axis, edge), g in zip(runs, got):
                with self.subTest(src=name, axis=axis, edge=edge):
                    self.assertSameArray(
                        g, np.gradient(data, axis=axis, edge_order=edge))
        got = self.run_op(self.src("x1"), "gradient")
        self.assertSameArray(got, np.gradient(X1))

    def test_diff_on_each_axis(self):
        for name, data in [("x", X), ("xd", XD), ("xu", XU), ("xb", XB),
                           ("xdf", XDF), ("x3", X3), ("x4.zarr", X)]:
            runs = [(axis, n) for axis in range(data.ndim) for n in (1, 2)]
            got = self.run_many(self.src(name), [
                dict(op="diff", n=n, axis=axis) for axis, n in runs])
            for (axis, n), g in zip(runs, got):
                with self.subTest(src=name, axis=axis, n=n):
                    with np.errstate(over="ignore"):
                        want = np.diff(data, n=n, axis=axis)
                    self.assertSameArray(g, want)
        ns = (0, 4, 22, 23, 30)
        got = self.run_many(self.src("xd"), [dict(op="diff", n=n)
                                             for n in ns])
        for n, g in zip(ns, got):
            with self.subTest(n=n):
                with np.errstate(over="ignore"):
                    self.assertSameArray(g, np.diff(XD, n=n))

    # -- the executor --

    def test_the_same_bits_for_any_thread_count(self):
        w11 = RNG.normal(size=(11, 11))
        steps = [
            dict(op="convolve", weights=w11.tolist(), mode="wrap"),
            dict(op="gaussian_filter", sigma=[2.5, 1], mode="mirror"),
            dict(op="uniform_filter", size=[7, 3], mode="constant"),
            dict(op="diff", n=2, axis=0),
        ]
        for keys in steps:
            with self.subTest(op=keys["op"]):
                first = self.run_op(self.src("x4.zarr"), threads="1", **keys)
                for t in ["2", "7"]:
                    got = self.run_op(self.src("x4.zarr"), threads=t, **keys)
                    self.assertEqual(got.tobytes(), first.tobytes())

    def test_an_elementwise_step_into_convolve_and_a_slice_after(self):
        steps = [{"name": "a", "op": "multiply", "args": ["x", 2.0]},
                 {"name": "b", "op": "add", "args": ["a", 1.0]},
                 {"name": "c", "op": "convolve", "args": ["b"],
                  "weights": W33.tolist(), "mode": "wrap"},
                 {"name": "s", "op": "slice", "args": ["c"],
                  "index": [[None, None, -3], [2, 20, 2]]}]
        want = ndi.convolve(X * 2.0 + 1.0, W33, mode="wrap")
        got = self.run_steps(self.src("x"), steps[:3])
        self.assertSameArray(got, want)
        got = self.run_steps(self.src("x"), steps)
        self.assertSameArray(got, want[::-3, 2:20:2])

    def test_one_step_command_form(self):
        out = self.fresh("one.h5")
        C.run("convolve", self.src("x"), "--weights",
              json.dumps(W33.tolist()), "--mode", "wrap", "-o",
              out + ":/y", "--quiet")
        with h5py.File(out, "r") as f:
            self.assertSameArray(f["y"][...],
                                 ndi.convolve(X, W33, mode="wrap"))
        out = self.fresh("one.zarr")
        C.run("diff", self.src("x.zarr"), "--n", "2", "--axis", "0", "-o",
              out, "--quiet")
        self.assertSameArray(zarr.open(out, mode="r")[...],
                             np.diff(X, n=2, axis=0))
        out = self.fresh("one2.h5")
        C.run("gaussian_filter", self.src("x"), "--sigma", "1,2", "--mode",
              "constant", "-o", out + ":/y", "--quiet")
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(
                f["y"][...], ndi.gaussian_filter(X, [1, 2], mode="constant"),
                rtol=1e-13, atol=1e-14)

    def test_memory_limit_holds(self):
        big = RNG.normal(size=(700, 600))
        path = self.fresh("big.h5")
        write_h5(path, "b", big, (100, 120))
        src = path + ":/b"
        got = self.run_op(src, "gaussian_filter", threads="2",
                          extra=("--memory", "64M"), sigma=4)
        np.testing.assert_allclose(got, ndi.gaussian_filter(big, 4),
                                   rtol=1e-13, atol=1e-14)
        w = RNG.normal(size=(15, 15))
        got = self.run_op(src, "correlate", threads="2",
                          extra=("--memory", "64M"), weights=w.tolist(),
                          mode="wrap")
        self.assertSameArray(got, ndi.correlate(big, w, mode="wrap"))

    # -- usage errors --

    def test_bad_input_names_the_key(self):
        src = self.src("x")
        self.bad(src, "convolve", "weights")
        self.bad(src, "convolve", "weights", weights=[1, 2, 3])
        self.bad(src, "correlate", "weights", weights=[[1, 2], [3]])
        self.bad(src, "correlate", "weights", weights=[[]])
        self.bad(src, "correlate", "weights",
                 weights=np.ones((70, 70)).tolist())
        self.bad(src, "convolve", "mode", "blur", weights=[[1]], mode="blur")
        self.bad(src, "correlate", "origin", weights=[[1, 2, 3]],
                 origin=[0, 2])
        self.bad(src, "uniform_filter", "size", size=[3, 3, 3])
        self.bad(src, "uniform_filter", "origin", size=3, origin=2)
        self.bad(src, "gaussian_filter", "sigma")
        self.bad(src, "gaussian_filter", "order", sigma=1, order=1)
        self.bad(src, "gradient", "axis", "list")
        self.bad(src, "gradient", "axis", axis=2)
        self.bad(src, "gradient", "edge_order", axis=0, edge_order=3)
        self.bad(src, "diff", "n", n=-1)
        self.bad(self.src("xb"), "gradient", "bool", axis=0)
        self.bad(self.src("xb"), "uniform_filter", "bool")
        p = C.run("convolve", src, "--mode", "wrap", "-o",
                  self.fresh("e.h5") + ":/y", expect=None)
        self.assertCleanError(p, 2, "convolve", "weights")


if __name__ == "__main__":
    C.main()
