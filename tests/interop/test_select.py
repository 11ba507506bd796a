"""Selection and shape ops of issue 13 against NumPy, on h5py- and
zarr-written arrays with edge chunks: take (a list, an integer array on
disk, a computed one), compress (a list, a boolean array on disk, a
computed mask: x[:, m]), isin, clip, squeeze, expand_dims, moveaxis,
swapaxes and broadcast_to; each as a pipeline step and as a one-step
command, bit-identical for --threads 1/2/7, with one-line errors.
"""
import json
import subprocess
import unittest

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(1313)
X = RNG.normal(size=(37, 23, 5))
X[3, 4, 1] = np.nan
X[10, 0, 0] = np.inf
I = RNG.integers(-50, 50, size=(29, 11)).astype(np.int32)
IDX = np.array([3, 1, 7, 36, -1, 0, 0, 20, 19, 18], dtype=np.int64)
COND = RNG.random(37) < 0.4
V = RNG.normal(size=(1, 23, 1, 5))


class Select(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("x.h5"), "w") as f:
            f.create_dataset("x", data=X, chunks=(8, 6, 5))
            f.create_dataset("i", data=I, chunks=(7, 4))
            f.create_dataset("idx", data=IDX, chunks=(4,))
            f.create_dataset("cond", data=COND, chunks=(10,))
            f.create_dataset("v", data=V, chunks=(1, 6, 1, 2))
        z = zarr.open(cls.path("x.zarr"), mode="w", shape=X.shape,
                      chunks=(10, 7, 2), dtype=X.dtype)
        z[...] = X

    def pipeline(self, steps, result, inputs=None, threads="2", extra=()):
        if inputs is None:
            inputs = {"x": self.path("x.h5") + ":/x"}
        out = self.fresh("out.h5")
        doc = {"inputs": inputs, "steps": steps,
               "outputs": {result: out + ":/r"}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, *extra, path)
        with h5py.File(out, "r") as f:
            return f["r"][...]

    def check(self, steps, result, want, inputs=None, exact=True):
        got = None
        for t in ("1", "2", "7"):
            g = self.pipeline(steps, result, inputs, threads=t)
            if got is None:
                got = g
            else:
                self.assertEqual(g.tobytes(), got.tobytes(), "threads " + t)
        self.assertEqual(got.shape, want.shape)
        self.assertEqual(got.dtype, want.dtype)
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-15)
        return got

    def bad(self, steps, inputs=None):
        doc = {"inputs": inputs or {"x": self.path("x.h5") + ":/x"},
               "steps": steps,
               "outputs": {steps[-1]["name"]: self.fresh("o.h5") + ":/r"}}
        path = self.fresh("bad.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = subprocess.run([C.CHUNKCTL, "run", "--quiet", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        return p.stderr

    # ---- take ----

    def test_take_list_every_axis(self):
        for src in ("x.h5:/x", "x.zarr"):
            for axis in (0, 1, 2, -1):
                n = X.shape[axis]
                idx = [n - 1, 0, 2, 2, -2, 1][: n + 1]
                self.check([{"name": "t", "op": "take", "args": ["x"],
                             "indices": idx, "axis": axis}], "t",
                           np.take(X, idx, axis=axis),
                           inputs={"x": self.path(src)})

    def test_take_from_int_array_on_disk(self):
        self.check([{"name": "t", "op": "take", "args": ["x", "idx"],
                     "axis": 0}], "t", np.take(X, IDX, axis=0),
                   inputs={"x": self.path("x.h5") + ":/x",
                           "idx": self.path("x.h5") + ":/idx"})

    def test_take_from_computed_indices(self):
        # indices made by steps: idx[0:3] * 2 = [6, 2, 14], along axis 1
        self.check([{"name": "ix", "op": "slice", "args": ["idx"],
                     "index": [[0, 3]]},
                    {"name": "j", "op": "multiply", "args": ["ix", 2]},
                    {"name": "t", "op": "take", "args": ["x", "j"],
                     "axis": 1}],
                   "t", np.take(X, IDX[:3] * 2, axis=1),
                   inputs={"x": self.path("x.h5") + ":/x",
                           "idx": self.path("x.h5") + ":/idx"})

    def test_take_then_reduce_and_computed_operand(self):
        got = self.pipeline(
            [{"name": "y", "op": "multiply", "args": ["x", 3]},
             {"name": "t", "op": "take", "args": ["y"], "indices": [5, 2, 30],
              "axis": 0},
             {"name": "s", "op": "nansum", "args": ["t"], "axis": 0}], "s")
        np.testing.assert_allclose(
            got, np.nansum(np.take(X * 3, [5, 2, 30], axis=0), axis=0),
            rtol=1e-14)

    def test_take_errors(self):
        err = self.bad([{"name": "t", "op": "take", "args": ["x"],
                         "indices": [0, 37], "axis": 0}])
        self.assertIn("indices[1]", err)
        self.assertIn("out of bounds", err)
        err = self.bad([{"name": "t", "op": "take", "args": ["x"],
                         "indices": [0]}])
        self.assertIn("axis", err)
        err = self.bad([{"name": "t", "op": "take", "args": ["x", "idx"],
                         "axis": 1}],
                       inputs={"x": self.path("x.h5") + ":/x",
                               "idx": self.path("x.h5") + ":/idx"})
        self.assertIn("out of bounds", err)
        err = self.bad([{"name": "t", "op": "take", "args": ["x", "x"],
                         "axis": 0}])
        self.assertIn("1-D", err)

    # ---- compress ----

    def test_compress_list_and_disk_and_computed(self):
        cond = [True, False, True, True, False]
        self.check([{"name": "c", "op": "compress", "args": ["x"],
                     "condition": cond, "axis": 2}], "c",
                   np.compress(cond, X, axis=2))
        self.check([{"name": "c", "op": "compress", "args": ["x", "m"],
                     "axis": 0}], "c", X[COND, :, :],
                   inputs={"x": self.path("x.h5") + ":/x",
                           "m": self.path("x.h5") + ":/cond"})
        # x[:, m] with m computed from the data: the columns whose first
        # row is positive
        m = X[0, :, 0] > 0
        self.check([{"name": "row", "op": "slice", "args": ["x"],
                     "index": [0, None, 0]},
                    {"name": "m", "op": "greater", "args": ["row", 0]},
                    {"name": "c", "op": "compress", "args": ["x", "m"],
                     "axis": 1}], "c", X[:, m, :],
                   inputs={"x": self.path("x.zarr")})

    def test_compress_empty_and_errors(self):
        got = self.pipeline([{"name": "c", "op": "compress", "args": ["x"],
                              "condition": [False] * 5, "axis": 2}], "c")
        self.assertEqual(got.shape, (37, 23, 0))
        err = self.bad([{"name": "c", "op": "compress", "args": ["x"],
                         "condition": [True] * 6, "axis": 2}])
        self.assertIn("condition", err)
        # an integer condition: nonzero is true, as numpy.compress takes it
        # (a condition longer than the axis is refused above)
        got = self.pipeline([{"name": "c", "op": "compress",
                              "args": ["x", "idx"], "axis": 1}], "c",
                            inputs={"x": self.path("x.h5") + ":/x",
                                    "idx": self.path("x.h5") + ":/idx"})
        self.assertSameArray(got, np.compress(IDX, X, axis=1))

    # ---- argwhere, nonzero, flatnonzero ----

    def test_nonzero_forms(self):
        # of a computed mask and of an int array, and an empty selection
        inputs = {"x": self.path("x.zarr"), "i": self.path("x.h5") + ":/i"}
        mask = X > 0.5
        for op, want in (("argwhere", np.argwhere(mask)),
                         ("nonzero", np.array(np.nonzero(mask))),
                         ("flatnonzero", np.flatnonzero(mask))):
            self.check([{"name": "m", "op": "greater", "args": ["x", 0.5]},
                        {"name": "w", "op": op, "args": ["m"]}], "w", want,
                       inputs=inputs)
        self.check([{"name": "w", "op": "argwhere", "args": ["i"]}], "w",
                   np.argwhere(I), inputs=inputs)
        self.check([{"name": "m", "op": "greater", "args": ["i", 1000]},
                    {"name": "w", "op": "nonzero", "args": ["m"]}], "w",
                   np.array(np.nonzero(I > 1000)), inputs=inputs)
        # the indices feed take: x[np.nonzero(m)[0]] of a 1-D mask
        inputs["c"] = self.path("x.h5") + ":/cond"
        self.check([{"name": "w", "op": "flatnonzero", "args": ["c"]},
                    {"name": "t", "op": "take", "args": ["x", "w"],
                     "axis": 0}], "t", X[COND], inputs=inputs)

    # ---- isin, clip ----

    def test_isin(self):
        inputs = {"i": self.path("x.h5") + ":/i"}
        vals = [3, -7, 0, 49, 2.5, True]
        for invert in (False, True):
            self.check([{"name": "b", "op": "isin", "args": ["i"],
                         "values": vals, "invert": invert}], "b",
                       np.isin(I, vals, invert=invert), inputs=inputs)
        self.check([{"name": "b", "op": "isin", "args": ["x"],
                     "values": [X[1, 2, 3], 0.5]}], "b",
                   np.isin(X, [X[1, 2, 3], 0.5]))

    def test_clip(self):
        self.check([{"name": "c", "op": "clip", "args": ["x", -0.5, 0.7]}],
                   "c", np.clip(X, -0.5, 0.7))
        inputs = {"i": self.path("x.h5") + ":/i"}
        self.check([{"name": "c", "op": "clip", "args": ["i", -10, 20]}], "c",
                   np.clip(I, -10, 20), inputs=inputs)
        # array bounds broadcast; lo > hi gives hi, as NumPy
        inputs["v"] = self.path("x.h5") + ":/v"
        self.check([{"name": "lo", "op": "slice", "args": ["i"],
                     "index": [0]},
                    {"name": "c", "op": "clip", "args": ["i", "lo", 5]}], "c",
                   np.clip(I, I[0], 5), inputs=inputs)

    # ---- shape ops ----

    def test_squeeze_expand_dims(self):
        inputs = {"v": self.path("x.h5") + ":/v"}
        self.check([{"name": "s", "op": "squeeze", "args": ["v"]}], "s",
                   np.squeeze(V), inputs=inputs)
        self.check([{"name": "s", "op": "squeeze", "args": ["v"],
                     "axis": [0, -2]}], "s", np.squeeze(V, axis=(0, 2)),
                   inputs=inputs)
        for ax in (0, 2, -1, [0, 4]):
            want = np.expand_dims(X, axis=tuple(ax) if isinstance(ax, list)
                                  else ax)
            self.check([{"name": "e", "op": "expand_dims", "args": ["x"],
                         "axis": ax}], "e", want)
        err = self.bad([{"name": "s", "op": "squeeze", "args": ["v"],
                         "axis": 1}], inputs=inputs)
        self.assertIn("length 1", err)

    def test_moveaxis_swapaxes(self):
        for s, d in ((0, -1), ([0, 1], [2, 0]), (2, 0)):
            self.check([{"name": "m", "op": "moveaxis", "args": ["x"],
                         "source": s, "destination": d}], "m",
                       np.moveaxis(X, s, d))
        self.check([{"name": "w", "op": "swapaxes", "args": ["x"],
                     "axis1": 0, "axis2": 2}], "w", np.swapaxes(X, 0, 2))
        err = self.bad([{"name": "m", "op": "moveaxis", "args": ["x"],
                         "source": [0, 1], "destination": [2]}])
        self.assertIn("same number", err)

    def test_broadcast_to(self):
        inputs = {"v": self.path("x.h5") + ":/v"}
        self.check([{"name": "b", "op": "broadcast_to", "args": ["v"],
                     "shape": [3, 4, 23, 6, 5]}], "b",
                   np.broadcast_to(V, (3, 4, 23, 6, 5)), inputs=inputs)
        err = self.bad([{"name": "b", "op": "broadcast_to", "args": ["v"],
                         "shape": [4, 22, 6, 5]}], inputs=inputs)
        self.assertIn("cannot broadcast", err)

    # ---- one-step commands ----

    def test_one_step_commands(self):
        out = self.fresh("t.h5")
        C.run("take", "--quiet", self.path("x.h5") + ":/x", "--indices",
              "3,1,7", "--axis", "0", "-o", out + ":/t")
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["t"][...], X[[3, 1, 7]])
        out = self.fresh("c.h5")
        C.run("clip", "--quiet", self.path("x.h5") + ":/i", "0", "9", "-o",
              out + ":/c")
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["c"][...], np.clip(I, 0, 9))
        out = self.fresh("m.h5")
        C.run("moveaxis", "--quiet", self.path("x.zarr"), "--source", "0",
              "--destination", "2", "-o", out + ":/m")
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["m"][...], np.moveaxis(X, 0, 2))


if __name__ == "__main__":
    unittest.main()
