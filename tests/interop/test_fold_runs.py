"""Reductions over a chunked axis (issue 13): a time x lat x lon array
chunked one step per chunk folds runs of chunks into one partial, read as
one box; the results equal NumPy's and are bit-identical for --threads
1/2/7, whether or not --memory leaves room to read a run whole.
"""
import json
import unittest

import _common as C
from _common import np, h5py

RNG = np.random.default_rng(365)
T = (280 + RNG.normal(size=(53, 30, 40))).astype(np.float32)
T[7, 3, 4] = np.nan
I = RNG.integers(-1000, 1000, size=(45, 6, 7)).astype(np.int32)


class FoldRuns(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("t.h5"), "w") as f:
            f.create_dataset("t", data=T, chunks=(1, 30, 40),
                             compression="gzip", shuffle=True)
            f.create_dataset("i", data=I, chunks=(1, 6, 7))
            f.create_dataset("c", data=T, chunks=(5, 30, 40))

    def run_all(self, name, threads, extra=()):
        steps = [{"name": "mean0", "op": "mean", "args": ["x"], "axis": 0},
                 {"name": "nanmean0", "op": "nanmean", "args": ["x"],
                  "axis": 0},
                 {"name": "std0", "op": "nanstd", "args": ["x"], "axis": 0},
                 {"name": "max0", "op": "nanmax", "args": ["x"], "axis": 0},
                 {"name": "sum", "op": "nansum", "args": ["x"]},
                 {"name": "amax", "op": "argmax", "args": ["x"], "axis": 0}]
        out = self.fresh("o.h5")
        doc = {"inputs": {"x": self.path("t.h5") + ":/" + name},
               "steps": steps,
               "outputs": {s["name"]: out + ":/" + s["name"] for s in steps}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, *extra, path)
        with h5py.File(out, "r") as f:
            return {k: f[k][...] for k in f}

    def test_numpy_and_threads(self):
        for name, a in (("t", T), ("i", I), ("c", T)):
            got = self.run_all(name, "1")
            for t in ("2", "7"):
                other = self.run_all(name, t)
                for k in got:
                    self.assertEqual(got[k].tobytes(), other[k].tobytes(),
                                     (name, k, t))
            a64 = a.astype(np.float64)
            with np.errstate(invalid="ignore"):
                np.testing.assert_allclose(got["mean0"], a64.mean(axis=0),
                                           rtol=1e-6)
                np.testing.assert_allclose(got["nanmean0"],
                                           np.nanmean(a64, axis=0), rtol=1e-6)
                np.testing.assert_allclose(got["std0"], np.nanstd(a64, axis=0),
                                           rtol=1e-5)
            np.testing.assert_array_equal(got["max0"], np.nanmax(a, axis=0))
            np.testing.assert_allclose(got["sum"], np.nansum(a64), rtol=1e-6)
            np.testing.assert_array_equal(got["amax"], np.argmax(a, axis=0))


if __name__ == "__main__":
    unittest.main()
