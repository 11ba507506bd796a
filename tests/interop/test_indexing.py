"""Indexing forms of issue 13, against NumPy on h5py- and zarr-written
arrays with edge chunks: slices with negative steps (x[::-3, ::2]) read
straight from a file and from a computed step, with every start/stop
form (null, negative, out of range), alone and beside integer indices.
"""
import itertools
import json
import unittest

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(13)
X = RNG.normal(size=(37, 23, 5))


class NegativeSteps(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("x.h5"), "w") as f:
            f.create_dataset("x", data=X, chunks=(8, 6, 5))
        z = zarr.open(cls.path("x.zarr"), mode="w", shape=X.shape,
                      chunks=(10, 7, 2), dtype=X.dtype)
        z[...] = X

    def run_index(self, src, index, computed=False, threads="2"):
        steps = []
        arg = "x"
        if computed:
            steps.append({"name": "y", "op": "multiply", "args": ["x", 2]})
            arg = "y"
        steps.append({"name": "s", "op": "slice", "args": [arg],
                      "index": index})
        out = self.fresh("out.h5")
        doc = {"inputs": {"x": src}, "steps": steps,
               "outputs": {"s": out + ":/s"}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, path)
        with h5py.File(out, "r") as f:
            return f["s"][...]

    @staticmethod
    def np_index(index):
        key = []
        for e in index:
            if e is None:
                key.append(slice(None))
            elif isinstance(e, int):
                key.append(e)
            else:
                key.append(slice(*e))
        return tuple(key)

    def test_negative_steps_match_numpy(self):
        bounds = [None, 0, 3, -1, -5, 30, 100, -100]
        cases = [[[None, None, -3], [None, None, 2]],
                 [[None, None, -1]],
                 [None, [None, None, -1], [None, None, -2]]]
        for a, b, st in itertools.product(bounds[:6], bounds[::2], [-1, -4]):
            cases.append([[a, b, st], [None, None, -7], 2])
        for src in [self.path("x.h5") + ":/x", self.path("x.zarr")]:
            for index in cases:
                for computed in (False, True):
                    with self.subTest(src=src, index=index,
                                      computed=computed):
                        want = (X * 2 if computed else X)[self.np_index(index)]
                        got = self.run_index(src, index, computed)
                        np.testing.assert_array_equal(got, want)

    def test_the_same_bits_for_any_thread_count(self):
        index = [[None, None, -3], [20, 2, -2], None]
        src = self.path("x.h5") + ":/x"
        first = self.run_index(src, index, True, "1")
        np.testing.assert_array_equal(first, (X * 2)[self.np_index(index)])
        for t in ["2", "7"]:
            np.testing.assert_array_equal(self.run_index(src, index, True, t),
                                          first)

    def test_a_zero_step_is_refused_with_its_place(self):
        doc = {"inputs": {"x": self.path("x.h5") + ":/x"},
               "steps": [{"name": "s", "op": "slice", "args": ["x"],
                          "index": [[None, None, 0]]}],
               "print": ["s"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", path, expect=2)
        self.assertRegex(p.stderr, r"steps\[0\]: index\[0\]: the step cannot "
                         r"be zero\n$")


if __name__ == "__main__":
    unittest.main()
