"""Pipelines that only print, and arrays printed as NumPy prints them
(issue 13): "inputs" and "outputs" are optional (random-only pipelines,
print-only pipelines), "print" takes any step up to CK_PRINT_MAX elements
(the text is NumPy's str() of the same values, --json nested lists), and
larger ones are refused before anything runs.
"""
import json
import unittest

import _common as C
from _common import np, h5py

RNG = np.random.default_rng(1124)

# name -> array: dtypes, magnitudes (positional and scientific), NaN/inf,
# wrapping rows, 1-D to 3-D, empty
CASES = {
    "i8": RNG.integers(-128, 127, size=(4, 6), dtype=np.int8),
    "u16": RNG.integers(0, 60000, size=(30,), dtype=np.uint16),
    "i64": RNG.integers(-2**62, 2**62, size=(3, 4), dtype=np.int64),
    "u64": np.array([0, 1, 2**64 - 1], dtype=np.uint64),
    "bool": RNG.random((3, 5)) < 0.5,
    "bool_true": np.ones((4,), dtype=bool),
    "f64_simple": np.array([[1.0, 2.5, -3.25], [0.0, 10.0, 100.125]]),
    "f64_random": RNG.normal(size=(3, 4, 5)),
    "f64_sci": np.array([1e-5, 1.0, 123456.0]),
    "f64_big": np.array([1e8, -2.5e10, 3.0]),
    "f64_nonfinite": np.array([np.nan, 1.5, np.inf, -np.inf, 0.0]),
    "f64_all_nan": np.array([np.nan, np.nan]),
    "f32": RNG.normal(size=(5, 3)).astype(np.float32),
    "f32_tenths": np.array([0.1, 0.2, 0.3, 1.7], dtype=np.float32),
    "f64_wide": RNG.normal(scale=1000, size=(2, 40)),
    "f64_zeros": np.zeros((2, 3)),
}


class Print(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("in.h5"), "w") as f:
            for name, a in CASES.items():
                f.create_dataset(name, data=a,
                                 chunks=tuple(max(1, s // 2) for s in a.shape))

    def pipeline(self, doc):
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def print_one(self, name, steps=(), step=None, *opts):
        doc = {"inputs": {"x": self.path("in.h5") + ":/" + name},
               "steps": list(steps), "print": [step or "x"]}
        return C.run("run", "--quiet", self.pipeline(doc), *opts).stdout

    def test_every_dtype_prints_as_numpy_does(self):
        for name, a in CASES.items():
            with self.subTest(name=name):
                self.assertEqual(self.print_one(name), str(a) + "\n")

    def test_json_gives_nested_lists(self):
        for name in ["i8", "f64_random", "bool", "f64_nonfinite"]:
            with self.subTest(name=name):
                a = CASES[name]
                got = json.loads(self.print_one(name, (), None, "--json"))
                v = got["x"]["values"]
                self.assertEqual(got["x"]["shape"], list(a.shape))
                self.assertEqual(np.array(v).shape, a.shape)
                if a.dtype.kind == "f":
                    v = np.array([[np.nan if x == "NaN" else
                                   np.inf if x == "Infinity" else
                                   -np.inf if x == "-Infinity" else x
                                   for x in row] for row in
                                  np.array(v, dtype=object).reshape(1, -1)])
                    np.testing.assert_array_equal(v.reshape(a.shape), a)
                else:
                    np.testing.assert_array_equal(np.array(v), a)

    def test_slices_and_zero_d_arrays(self):
        a = CASES["f64_random"]
        steps = [{"name": "s", "op": "slice", "args": ["x"],
                  "index": [1, [0, 2], 3]}]
        self.assertEqual(self.print_one("f64_random", steps, "s"),
                         str(a[1, 0:2, 3]) + "\n")
        steps = [{"name": "s", "op": "slice", "args": ["x"],
                  "index": [1, 2, 3]}]
        self.assertEqual(self.print_one("f64_random", steps, "s"),
                         str(a[1, 2, 3]) + "\n")
        for name, index in [("f64_sci", [0]), ("f64_sci", [2]),
                            ("f64_big", [1]), ("f32_tenths", [0]),
                            ("f64_simple", [0, 0]), ("i64", [1, 1]),
                            ("bool", [0, 0]), ("f64_nonfinite", [3])]:
            with self.subTest(name=name, index=index):
                steps = [{"name": "s", "op": "slice", "args": ["x"],
                          "index": index}]
                self.assertEqual(self.print_one(name, steps, "s"),
                                 str(CASES[name][tuple(index)]) + "\n")
        steps = [{"name": "s", "op": "slice", "args": ["x"],
                  "index": [[0, 0]]}]
        self.assertEqual(self.print_one("f64_random", steps, "s"), "[]\n")

    def test_the_seed_example_runs_from_random_alone(self):
        # x = random(...); y = x.T.dot(log(x) + 1); z = y - y.mean(axis=0);
        # print(z[:5]): no inputs, no outputs.  The values are checked
        # against NumPy on the same x, written out by a second run.
        steps = [
            {"name": "x", "op": "random", "shape": [200, 12],
             "chunks": [50, 12], "seed": 7, "dist": "uniform"},
            {"name": "l", "op": "log", "args": ["x"]},
            {"name": "l1", "op": "add", "args": ["l", 1]},
            {"name": "xt", "op": "transpose", "args": ["x"]},
            {"name": "y", "op": "matmul", "args": ["xt", "l1"]},
            {"name": "m", "op": "mean", "args": ["y"], "axis": 0},
            {"name": "z", "op": "subtract", "args": ["y", "m"]},
            {"name": "z5", "op": "slice", "args": ["z"], "index": [[0, 5]]}]
        p = C.run("run", "--quiet", "--json",
                  self.pipeline({"steps": steps, "print": ["z5"]}))
        got = np.array(json.loads(p.stdout)["z5"]["values"])
        out = self.fresh("x.h5")
        C.run("run", "--quiet", self.pipeline(
            {"steps": steps[:1], "outputs": {"x": out + ":/x"}}))
        with h5py.File(out, "r") as f:
            x = f["x"][...]
        y = x.T.dot(np.log(x) + 1)
        np.testing.assert_allclose(got, (y - y.mean(axis=0))[:5], rtol=1e-12,
                                   atol=1e-12)
        text = C.run("run", "--quiet",
                     self.pipeline({"steps": steps, "print": ["z5"]})).stdout
        self.assertEqual(text, str(got) + "\n")

    def test_a_pipeline_needs_an_output_or_a_print(self):
        p = C.run("run", self.pipeline(
            {"steps": [{"name": "x", "op": "random", "shape": [3]}]}),
            expect=2)
        self.assertIn("outputs: a pipeline needs at least one output or "
                      "print", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1)

    def test_too_large_to_print_is_refused_before_running(self):
        p = C.run("run", self.pipeline(
            {"steps": [{"name": "x", "op": "random", "shape": [1000, 1000]}],
             "print": ["x"]}), expect=2)
        self.assertRegex(p.stderr, r"print\[0\]: 'x' has 1000000 elements, "
                         r"too many to print \(at most 100000\); write it "
                         r"to an output instead\n$")


if __name__ == "__main__":
    unittest.main()
