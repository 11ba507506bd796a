"""unique and bincount against NumPy 1.24 on h5py- and zarr-written arrays
with edge chunks and several chunkings: numpy.unique(x, return_counts=True)
(the step's values, and its "u.counts" result) of ints, floats with NaN
(collapsed into one) and bools; numpy.bincount(x.ravel(), weights,
minlength) with weighted sums bit for bit; empty inputs; negative values
and float input as clear errors; results whose length is known only after
the run used by later steps, written and printed; the same bits for
--threads 1, 2 and 7; --memory; the one-step commands.
"""
import json
import unittest

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(77)

I32 = RNG.integers(-50, 50, size=(1003,), dtype=np.int32)
I64 = RNG.integers(-2**63, 2**63 - 1, size=(40, 7), dtype=np.int64,
                   endpoint=True)
I64[0, :4] = [-2**63, 2**63 - 1, 0, -1]
I64[1, :4] = [-2**63, 2**63 - 1, 0, -1]
U64 = np.array([2**64 - 1, 0, 2**63, 2**63 - 1, 5, 2**64 - 1, 5],
               dtype=np.uint64)
I8 = RNG.integers(-128, 127, size=(9, 11, 5), dtype=np.int8, endpoint=True)
F64 = np.round(RNG.normal(size=(61, 13)) * 3, 1)
F64.flat[::17] = np.nan
F64.flat[5] = np.inf
F64.flat[6] = -np.inf
F64.flat[7] = -0.0
F64.flat[8] = 0.0
F32 = np.round(RNG.normal(size=(300,)) * 2, 1).astype(np.float32)
F32[::31] = np.nan
B = RNG.integers(0, 2, size=(17, 4)).astype(bool)
N16 = RNG.integers(0, 40, size=(501,), dtype=np.int16)  # bincount
N2D = RNG.integers(0, 30, size=(23, 19), dtype=np.uint8)
W = RNG.normal(size=(501,))
W2D = RNG.normal(size=(23, 19)).astype(np.float32)
WI = RNG.integers(-5, 5, size=(501,), dtype=np.int32)
NEG = np.array([4, 0, 2, -3, 1], dtype=np.int64)
BIG = RNG.normal(size=(20000,)).round(3)  # many distinct values
DISTINCT = RNG.permutation(600000).astype(np.int64)

ARRAYS = {"i32": (I32, (100,), (64,)), "i64": (I64, (7, 3), (16, 7)),
          "u64": (U64, (3,), (2,)), "i8": (I8, (4, 5, 2), (9, 3, 5)),
          "f64": (F64, (16, 5), (20, 13)), "f32": (F32, (64,), (50,)),
          "b": (B, (5, 3), (17, 4)), "n16": (N16, (64,), (100,)),
          "n2d": (N2D, (6, 7), (5, 19)), "w": (W, (50,), (128,)),
          "w2d": (W2D, (4, 19), (23, 5)), "wi": (WI, (64,), (64,)),
          "neg": (NEG, (2,), (2,)), "big": (BIG, (1000,), (777,)),
          "empty": (np.zeros((0,), np.int32), (4,), (4,)),
          "empty2": (np.zeros((3, 0), np.float64), (2, 2), (2, 2))}


class Count(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("in.h5"), "w") as f:
            for name, (a, hch, _) in ARRAYS.items():
                f.create_dataset(name, data=a, chunks=hch,
                                 maxshape=(None,) * a.ndim)
            f.create_dataset("distinct", data=DISTINCT, chunks=(10000,))
        for name, (a, _, zch) in ARRAYS.items():
            z = zarr.open(cls.path(name + ".zarr"), mode="w", shape=a.shape,
                          chunks=zch, dtype=a.dtype)
            z[...] = a

    def src(self, kind, name):
        if kind == "h5":
            return self.path("in.h5") + ":/" + name
        return self.path(name + ".zarr")

    def run_doc(self, doc, *opts, expect=0):
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return C.run("run", "--quiet", *opts, path, expect=expect)

    def assertBits(self, got, want, what):
        got, want = np.asarray(got), np.asarray(want)
        self.assertEqual(got.shape, want.shape, what)
        self.assertEqual(got.dtype, want.dtype, what)
        np.testing.assert_array_equal(got, want, err_msg=what)

    def test_unique_and_counts_match_numpy(self):
        names = ["i32", "i64", "u64", "i8", "f64", "f32", "b", "empty",
                 "empty2"]
        for kind in ("h5", "zarr"):
            out = self.fresh("u-%s.h5" % kind)
            steps, outs = [], {}
            for nm in names:
                steps.append({"name": "u_" + nm, "op": "unique",
                              "args": [nm]})
                outs["u_" + nm] = out + ":/u_" + nm
                outs["u_%s.counts" % nm] = out + ":/c_" + nm
            self.run_doc({"inputs": {nm: self.src(kind, nm) for nm in names},
                          "steps": steps, "outputs": outs})
            with h5py.File(out, "r") as f:
                for nm in names:
                    with self.subTest(kind=kind, name=nm):
                        vals, cnts = np.unique(ARRAYS[nm][0],
                                               return_counts=True)
                        self.assertBits(f["u_" + nm][...], vals, nm)
                        self.assertBits(f["c_" + nm][...], cnts, nm)

    def test_bincount_matches_numpy(self):
        cases = [("n16", None, 0), ("n16", None, 10), ("n16", None, 100),
                 ("n16", "w", 0), ("n16", "wi", 45), ("n2d", None, 0),
                 ("n2d", "w2d", 3), ("b", None, 0), ("empty", None, 0),
                 ("empty", None, 4)]
        for kind in ("h5", "zarr"):
            out = self.fresh("b-%s.h5" % kind)
            inputs, steps, outs = {}, [], {}
            for k, (nm, w, ml) in enumerate(cases):
                inputs[nm] = self.src(kind, nm)
                step = {"name": "b%d" % k, "op": "bincount", "args": [nm]}
                if w:
                    inputs[w] = self.src(kind, w)
                    step["weights"] = w
                if ml:
                    step["minlength"] = ml
                steps.append(step)
                outs["b%d" % k] = out + ":/b%d" % k
            self.run_doc({"inputs": inputs, "steps": steps, "outputs": outs},
                         "--threads", "3")
            with h5py.File(out, "r") as f:
                for k, (nm, w, ml) in enumerate(cases):
                    with self.subTest(kind=kind, case=(nm, w, ml)):
                        x = ARRAYS[nm][0].ravel()
                        wv = ARRAYS[w][0].ravel() if w else None
                        want = np.bincount(x, wv, minlength=ml or 0)
                        # weighted sums: NumPy's own sequential order
                        self.assertEqual(f["b%d" % k][...].tobytes(),
                                         want.tobytes())
                        self.assertBits(f["b%d" % k][...], want, nm)

    def test_print_json_and_later_steps(self):
        doc = {"inputs": {"x": self.src("zarr", "f64"),
                          "n": self.src("h5", "n16")},
               "steps": [{"name": "u", "op": "unique", "args": ["x"]},
                         {"name": "s", "op": "sum", "args": ["u.counts"]},
                         {"name": "mx", "op": "nanmax", "args": ["u"]},
                         {"name": "b", "op": "bincount", "args": ["n"],
                          "minlength": 50},
                         {"name": "h", "op": "histogram", "args": ["b"],
                          "bins": 4, "range": [0, 40]},
                         {"name": "c", "op": "less", "args": ["n", 5]},
                         {"name": "m", "op": "mask", "args": ["n", "c"]},
                         {"name": "um", "op": "unique", "args": ["m"]},
                         {"name": "uu", "op": "unique", "args": ["u.counts"]}],
               "print": ["u", "u.counts", "s", "mx", "b", "h", "um", "uu",
                         "um.counts"]}
        got = json.loads(self.run_doc(doc, "--json").stdout)
        vals, cnts = np.unique(F64, return_counts=True)
        self.assertEqual(got["u"]["dtype"], "float64")
        self.assertEqual(got["u"]["shape"], [len(vals)])
        np.testing.assert_array_equal([float(v) for v in got["u"]["values"]],
                                      vals)
        self.assertEqual(got["u.counts"]["values"], cnts.tolist())
        self.assertEqual(got["s"]["values"], [F64.size])
        self.assertEqual(got["mx"]["values"], ["Infinity"])
        b = np.bincount(N16, minlength=50)
        self.assertEqual(got["b"]["values"], b.tolist())
        self.assertEqual(got["h"]["counts"],
                         np.histogram(b, 4, (0, 40))[0].tolist())
        um, umc = np.unique(N16[N16 < 5], return_counts=True)
        self.assertEqual(got["um"]["values"], um.tolist())
        self.assertEqual(got["um.counts"]["values"], umc.tolist())
        self.assertEqual(got["uu"]["values"], np.unique(cnts).tolist())

    def test_written_to_zarr(self):
        out = self.fresh("u.zarr")
        doc = {"inputs": {"x": self.src("h5", "i8")},
               "steps": [{"name": "u", "op": "unique", "args": ["x"]}],
               "outputs": {"u": out + ":/u", "u.counts": out + ":/counts"}}
        self.run_doc(doc)
        vals, cnts = np.unique(I8, return_counts=True)
        g = zarr.open(out, mode="r")
        self.assertBits(g["u"][...], vals, "values")
        self.assertBits(g["counts"][...], cnts, "counts")

    def test_the_same_bits_for_any_thread_count(self):
        doc = {"inputs": {"x": self.src("h5", "big"),
                          "n": self.src("h5", "n2d"),
                          "w": self.src("zarr", "w2d")},
               "steps": [{"name": "u", "op": "unique", "args": ["x"]},
                         {"name": "b", "op": "bincount", "args": ["n"],
                          "weights": "w"}]}
        res = []
        for t in ("1", "2", "7"):
            out = self.fresh("t%s.h5" % t)
            doc["outputs"] = {"u": out + ":/u", "u.counts": out + ":/c",
                              "b": out + ":/b"}
            self.run_doc(doc, "--threads", t)
            with h5py.File(out, "r") as f:
                res.append([f[k][...].tobytes() for k in ("u", "c", "b")])
        self.assertEqual(res[0], res[1])
        self.assertEqual(res[0], res[2])
        with h5py.File(self.path("t7.h5"), "r") as f:
            vals, cnts = np.unique(BIG, return_counts=True)
            self.assertBits(f["u"][...], vals, "values")
            self.assertBits(f["c"][...], cnts, "counts")
            self.assertEqual(f["b"][...].tobytes(),
                             np.bincount(N2D.ravel(), W2D.ravel()).tobytes())

    def test_one_step_commands(self):
        p = C.run("unique", "--quiet", self.src("h5", "i32"))
        self.assertEqual([int(v) for v in p.stdout.split()],
                         np.unique(I32).tolist())
        p = C.run("unique", "--quiet", "--json", self.src("zarr", "f32"))
        got = json.loads(p.stdout)["unique"]
        self.assertEqual(got["dtype"], "float32")
        np.testing.assert_array_equal(
            np.array([float(v) for v in got["values"]], np.float32),
            np.unique(F32))
        p = C.run("bincount", "--quiet", self.src("h5", "n16"))
        self.assertEqual([int(v) for v in p.stdout.split()],
                         np.bincount(N16).tolist())
        p = C.run("bincount", "--quiet", "--json", "--minlength", "45",
                  self.src("zarr", "n16"))
        self.assertEqual(json.loads(p.stdout)["bincount"]["values"],
                         np.bincount(N16, minlength=45).tolist())
        out = self.fresh("one.h5")
        C.run("unique", "--quiet", self.src("h5", "b"), "-o", out + ":/u")
        with h5py.File(out, "r") as f:
            self.assertBits(f["u"][...], np.unique(B), "bool")

    def test_memory(self):
        # 600000 distinct values: 9.6 MiB of runs while unique runs, more
        # than the 8 MiB a 32 MiB budget leaves beside chunkctl's own
        src = self.path("in.h5") + ":/distinct"
        p = C.run("unique", "--quiet", "--memory", "32M", src, expect=None)
        self.assertCleanError(p, 1, "distinct values", "--memory")
        out = self.fresh("distinct.h5")
        C.run("unique", "--quiet", "--memory", "80M", src, "-o", out + ":/u")
        with h5py.File(out, "r") as f:
            self.assertBits(f["u"][...], np.arange(600000), "distinct")
        # one bin per value up to the largest: 2**36 bins do not fit
        with h5py.File(self.path("huge.h5"), "w") as f:
            f.create_dataset("x", data=np.array([1, 2**36], np.int64))
        p = C.run("bincount", "--quiet", "--memory", "1G",
                  self.path("huge.h5") + ":/x", expect=None)
        self.assertCleanError(p, 1, "bincount", "68719476737 bins",
                              "--memory")

    def test_clear_errors(self):
        p = C.run("bincount", "--quiet", self.src("h5", "neg"), expect=None)
        self.assertCleanError(p, 1, "bincount", "negative", "-3")
        doc = {"inputs": {"x": self.src("zarr", "neg")},
               "steps": [{"name": "counts", "op": "bincount", "args": ["x"]}],
               "print": ["counts"]}
        p = self.run_doc(doc, expect=None)
        self.assertCleanError(p, 1, "steps[0]", "negative")
        p = C.run("bincount", "--quiet", self.src("h5", "f64"), expect=None)
        self.assertCleanError(p, 2, "bincount", "args[0]", "float64")
        p = C.run("bincount", "--quiet", self.src("h5", "n16"),
                  "--minlength", "-1", expect=None)
        self.assertCleanError(p, 2, "minlength")
        p = C.run("unique", "--quiet", self.src("h5", "n16"),
                  "--minlength", "3", expect=None)
        self.assertCleanError(p, 2, "unique", "minlength")
        base = {"inputs": {"n": self.src("h5", "n16"),
                           "w": self.src("h5", "w2d")}}
        for steps, needles in [
                ([{"name": "b", "op": "bincount", "args": ["n"],
                   "weights": "w"}], ("weights", "(23, 19)", "(501,)")),
                ([{"name": "b", "op": "bincount", "args": ["n"],
                   "weights": "nope"}], ("weights", "nope")),
                ([{"name": "u", "op": "unique", "args": ["n"]},
                  {"name": "a", "op": "add", "args": ["u", 1]}],
                 ("steps[1]", "'u'", "only after the run")),
                ([{"name": "u", "op": "unique", "args": ["n"]},
                  {"name": "a", "op": "negative", "args": ["u.counts"]}],
                 ("'u.counts'", "only after the run"))]:
            with self.subTest(steps=steps):
                p = self.run_doc(dict(base, steps=steps,
                                      print=[steps[-1]["name"]]),
                                 expect=None)
                self.assertCleanError(p, 2, *needles)


if __name__ == "__main__":
    unittest.main()
