"""coarsen: dask.array.coarsen(reduction, x, {axis: window}, trim_excess)
against NumPy's reshape-and-reduce formula
x.reshape(a // 4, 4, b // 4, 4).mean(axis=(1, 3)) (dask need not be
installed) on h5py- and zarr-written arrays with edge chunks and several
chunkings: every reduction, 1-D/2-D/3-D, windows that do and do not divide
the chunks, trim_excess both ways, NaN, NumPy's result dtypes and integer
wrap-around; the same bits for --threads 1, 2 and 7; clear errors; the
one-step command.
"""
import json
import unittest
import warnings

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(51)

F64 = RNG.normal(size=(37, 24)) * 100
F64[3, 4] = np.nan
F64[20:24, 9:12] = np.nan  # a window of NaN only, for the nan* forms
F64[30, 0] = np.inf
F32 = (RNG.normal(size=(12, 10, 9)) * 10).astype(np.float32)
F32[1, 2, 3] = np.nan
I32 = RNG.integers(-2**31, 2**31 - 1, size=(100,), dtype=np.int32)
I8 = RNG.integers(-128, 127, size=(16, 18), dtype=np.int8)
I64 = RNG.integers(2**62, 2**63 - 1, size=(8, 8), dtype=np.int64)  # wraps
U8 = RNG.integers(0, 255, size=(30,), dtype=np.uint8)
U64 = RNG.integers(2**63, 2**64 - 1, size=(12,), dtype=np.uint64)
B = RNG.integers(0, 2, size=(20, 6)).astype(bool)

ARRAYS = {"f64": (F64, (8, 6), (10, 7)), "f32": (F32, (5, 4, 3), (4, 6, 9)),
          "i32": (I32, (16,), (30,)), "i8": (I8, (5, 6), (16, 4)),
          "i64": (I64, (3, 3), (8, 8)), "u8": (U8, (7,), (30,)),
          "u64": (U64, (5,), (4,)), "b": (B, (6, 4), (5, 5))}

REDS = ["sum", "prod", "mean", "min", "max", "nansum", "nanmean", "nanmin",
        "nanmax"]

# (array, window, trim_excess)
CASES = [("f64", [1, 4], True), ("f64", [4, 3], True), ("f64", [37, 8], False),
         ("f64", [5, 5], True), ("f32", [2, 5, 3], False),
         ("f32", [4, 2, 3], True), ("f32", [12, 1, 9], False),
         ("i32", [4], False), ("i32", [3], True), ("i32", [7], True),
         ("i8", [4, 6], False), ("i8", [16, 18], False), ("i8", [5, 4], True),
         ("i64", [2, 4], False), ("u8", [5], False), ("u8", [4], True),
         ("u64", [3], False), ("b", [2, 3], False), ("b", [3, 4], True)]


def reference(x, red, win, trim):
    """NumPy's reshape-and-reduce: what dask.array.coarsen computes."""
    if trim:
        x = x[tuple(slice(0, (s // w) * w) for s, w in zip(x.shape, win))]
    shape = []
    for s, w in zip(x.shape, win):
        shape += [s // w, w]
    axes = tuple(range(1, 2 * x.ndim, 2))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(np, red)(x.reshape(shape), axis=axes)


class Coarsen(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("in.h5"), "w") as f:
            for name, (a, hch, _) in ARRAYS.items():
                f.create_dataset(name, data=a, chunks=hch)
        for name, (a, _, zch) in ARRAYS.items():
            z = zarr.open(cls.path(name + ".zarr"), mode="w", shape=a.shape,
                          chunks=zch, dtype=a.dtype)
            z[...] = a

    def src(self, kind, name):
        if kind == "h5":
            return self.path("in.h5") + ":/" + name
        return self.path(name + ".zarr")

    def pipeline(self, kind, cases, threads="2", extra_steps=(),
                 extra_out=None):
        inputs, steps, outs = {}, [], {}
        for k, (name, win, trim) in enumerate(cases):
            inputs[name] = self.src(kind, name)
            for red in REDS:
                s = "c%d_%s" % (k, red)
                step = {"name": s, "op": "coarsen", "args": [name],
                        "reduction": red, "window": win}
                if trim:
                    step["trim_excess"] = True
                steps.append(step)
        steps += list(extra_steps)
        out = self.fresh("out-%s-%s.h5" % (kind, threads))
        for st in steps:
            outs[st["name"]] = out + ":/" + st["name"]
        doc = {"inputs": inputs, "steps": steps, "outputs": outs}
        if extra_out:
            doc.update(extra_out)
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, path)
        return out

    def check(self, got, want, red, what, want64=None):
        self.assertEqual(got.shape, want.shape, what)
        self.assertEqual(got.dtype, want.dtype, what)
        exact = got.dtype.kind in "iub" or red in (
            "min", "max", "nanmin", "nanmax")
        if exact:
            np.testing.assert_array_equal(got, want, err_msg=what)
        elif got.dtype == np.float32:
            # float32 sums are made in float64 and rounded once: within an
            # ulp of the float64 formula, and within NumPy's own float32
            # rounding of its float32 sums
            np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=what)
            with np.errstate(over="ignore"):
                want32 = want64.astype(np.float32)
            np.testing.assert_allclose(got, want32, rtol=2.5e-7, err_msg=what)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=what)

    def test_every_reduction_matches_numpy(self):
        for kind in ("h5", "zarr"):
            out = self.pipeline(kind, CASES)
            with h5py.File(out, "r") as f:
                for k, (name, win, trim) in enumerate(CASES):
                    for red in REDS:
                        what = "%s %s %s %s trim=%s" % (kind, name, red, win,
                                                        trim)
                        with self.subTest(what=what):
                            x = ARRAYS[name][0]
                            want = reference(x, red, win, trim)
                            want64 = reference(x.astype(np.float64), red,
                                               win, trim)
                            got = f["c%d_%s" % (k, red)][...]
                            self.check(got, want, red, what, want64)

    def test_the_same_bits_for_any_thread_count(self):
        cases = [c for c in CASES if c[0] in ("f64", "f32", "i8")]
        outs = [self.pipeline("h5", cases, t) for t in ("1", "2", "7")]
        files = [h5py.File(o, "r") for o in outs]
        try:
            for name in files[0]:
                first = files[0][name][...].tobytes()
                for f in files[1:]:
                    self.assertEqual(f[name][...].tobytes(), first, name)
        finally:
            for f in files:
                f.close()

    def test_chunks_are_the_operands_divided_by_the_window(self):
        out = self.pipeline("h5", [("f64", [4, 3], True),
                                   ("f32", [2, 5, 3], False),
                                   ("i32", [3], True)])
        with h5py.File(out, "r") as f:
            self.assertEqual(f["c0_sum"].chunks, (2, 2))
            self.assertEqual(f["c1_mean"].chunks, (2, 1, 1))
            self.assertEqual(f["c2_max"].chunks, (5,))

    def test_dict_window_computed_operand_and_users(self):
        y = F64 * 2 + 1
        steps = [{"name": "y", "op": "multiply", "args": ["x", 2]},
                 {"name": "y1", "op": "add", "args": ["y", 1]},
                 {"name": "c", "op": "coarsen", "args": ["y1"],
                  "reduction": "nanmean", "window": {"0": 4, "-1": 3},
                  "trim_excess": True},
                 {"name": "s", "op": "nansum", "args": ["c"], "axis": 0},
                 {"name": "t", "op": "transpose", "args": ["c"]},
                 {"name": "z", "op": "coarsen", "args": ["x"],
                  "reduction": "max", "window": 4, "trim_excess": True}]
        out = self.fresh("dict.h5")
        doc = {"inputs": {"x": self.path("in.h5") + ":/f64"},
               "steps": steps,
               "outputs": {"c": out + ":/c", "t": out + ":/t",
                           "z": out + ":/z"},
               "print": ["s"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", "--quiet", "--json", path)
        want = reference(y, "nanmean", [4, 3], True)
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(f["c"][...], want, rtol=1e-12)
            np.testing.assert_allclose(f["t"][...], want.T, rtol=1e-12)
            np.testing.assert_array_equal(
                f["z"][...], reference(F64, "max", [4, 4], True))
        got = json.loads(p.stdout)["s"]
        np.testing.assert_allclose([float(v) for v in got["values"]],
                                   np.nansum(want, axis=0),
                                   rtol=1e-12)

    def test_print_json(self):
        doc = {"inputs": {"x": self.path("in.h5") + ":/i8"},
               "steps": [{"name": "c", "op": "coarsen", "args": ["x"],
                          "reduction": "sum", "window": [4, 6]}],
               "print": ["c"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        got = json.loads(C.run("run", "--quiet", "--json", path).stdout)["c"]
        want = reference(I8, "sum", [4, 6], False)
        self.assertEqual(got["dtype"], "int64")
        self.assertEqual(got["shape"], list(want.shape))
        np.testing.assert_array_equal(got["values"], want)

    def test_one_step_command(self):
        out = self.fresh("one.h5")
        C.run("coarsen", "--quiet", self.path("in.h5") + ":/f64",
              "--reduction", "mean", "--window", "4,4", "--trim_excess", "true",
              "-o", out + ":/c")
        out2 = self.fresh("one.zarr")
        C.run("coarsen", "--quiet", self.path("i32.zarr"), "--reduction",
              "min", "--window", "5", "-o", out2)
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(f["c"][...],
                                       reference(F64, "mean", [4, 4], True),
                                       rtol=1e-12)
        np.testing.assert_array_equal(zarr.open(out2, mode="r")[...],
                                      reference(I32, "min", [5], False))

    def test_clear_errors(self):
        src = self.path("in.h5") + ":/f64"
        for opts, needles in [
                (["--reduction", "mean", "--window", "4,4"],
                 ("axis 0", "37", "trim_excess")),
                (["--reduction", "median", "--window", "1,4"],
                 ("reduction",)),
                (["--window", "1,4"], ("reduction",)),
                (["--reduction", "sum"], ("window",)),
                (["--reduction", "sum", "--window", "1,2,3"], ("window",)),
                (["--reduction", "sum", "--window", "1,0"], ("window[1]",)),
                (["--reduction", "sum", "--window", '{"2": 3}'],
                 ("window", "'2'")),
                (["--reduction", "sum", "--window", "1,4", "--trim_excess",
                  "yes"], ("trim_excess",))]:
            with self.subTest(opts=opts):
                p = C.run("coarsen", src, *opts, "-o",
                          self.fresh("e.h5") + ":/c", expect=None)
                self.assertCleanError(p, 2, "coarsen", *needles)


if __name__ == "__main__":
    unittest.main()
