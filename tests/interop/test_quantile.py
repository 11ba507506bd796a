"""quantile, nanquantile, percentile, nanpercentile, median and nanmedian
against NumPy 1.24 (method "linear"), bit for bit, on h5py- and
zarr-written arrays with edge chunks: every axis, lists of axes, all axes,
keepdims, lists of q; ties, NaN (all-NaN slices too), inf; float32 and
integer data (the result dtype is NumPy's); the two ways chunkctl finds
the values out of core (blocks of gathered values, and refining
histograms when one result's values do not fit --memory), each giving the
same bytes for --threads 1, 2 and 7; printing, the one-step commands, and
clear errors.
"""
import json
import re
import unittest
import warnings

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(1024)
X = RNG.normal(size=(37, 23, 5))
F32 = RNG.normal(size=(31, 17)).astype(np.float32)
INTS = RNG.integers(-3, 4, size=(29, 13)).astype(np.int16)  # many ties
U8 = RNG.integers(0, 256, size=(50, 3)).astype(np.uint8)
I64 = RNG.integers(-2**40, 2**40, size=(19, 6))
NANS = RNG.normal(size=(21, 11))
NANS[RNG.random(NANS.shape) < 0.15] = np.nan
NANS[:, 3] = np.nan
NANS[4, :] = np.nan
NANS[7, 2] = np.inf
NANS[9, 5] = -np.inf
INF = RNG.normal(size=(12, 7))
INF[2, :3] = np.inf
INF[5, 4] = -np.inf
INF[:, 6] = [np.inf] * 6 + [-np.inf] * 6
# Bigger than what --memory 32M leaves for gathering (chunkctl itself
# takes 24 MiB of it): every-axis results refine histograms, kept-axis
# results take several blocks.
BIG = RNG.normal(size=(1000, 1000))
BIGI = RNG.integers(0, 10, size=(1000, 1000))
BIGI[0, 0], BIGI[5, 5] = -2**62, 2**62  # keys span nearly 2^64

QS = [0, 1, 0.5, 0.05, 0.95, 1 / 3]
OPS = ["quantile", "nanquantile", "percentile", "nanpercentile", "median",
       "nanmedian"]
AXES = [None, 0, 1, 2, -1, [0, 2], [1, 2], [0, 1, 2]]


def numpy_of(op, a, q=None, axis=None, keepdims=False):
    """NumPy's answer for a step; q is a quantile (percentiles: * 100)."""
    f = getattr(np, op)
    ax = tuple(axis) if isinstance(axis, list) else axis
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if op.endswith("median"):
            return np.asarray(f(a, axis=ax, keepdims=keepdims))
        qq = np.asarray(q, dtype=float)
        if "percentile" in op:
            qq = qq * 100
        return np.asarray(f(a, qq, axis=ax, keepdims=keepdims))


def step(name, op, arg, q=None, axis=None, keepdims=False):
    s = {"name": name, "op": op, "args": [arg]}
    if not op.endswith("median"):
        qq = np.asarray(q, dtype=float) * (100 if "percentile" in op else 1)
        s["q"] = qq.tolist()
    if axis is not None:
        s["axis"] = axis
    if keepdims:
        s["keepdims"] = True
    return s


class Quantile(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("x", data=X, chunks=(8, 6, 5))
            f.create_dataset("x2", data=X, chunks=(5, 23, 1))
            f.create_dataset("f32", data=F32, chunks=(10, 5))
            f.create_dataset("ints", data=INTS, chunks=(7, 4))
            f.create_dataset("u8", data=U8, chunks=(16, 2))
            f.create_dataset("i64", data=I64, chunks=(4, 4))
            f.create_dataset("nans", data=NANS, chunks=(6, 4))
            f.create_dataset("inf", data=INF, chunks=(5, 3))
            f.create_dataset("empty", shape=(0, 4), dtype="f8")
            f.create_dataset("bools", data=INTS > 0, chunks=(7, 4))
            f.create_dataset("big", data=BIG, chunks=(256, 300))
            f.create_dataset("bigi", data=BIGI, chunks=(256, 300))
        z = zarr.open(cls.path("x.zarr"), mode="w", shape=X.shape,
                      chunks=(10, 7, 2), dtype=X.dtype)
        z[...] = X

    def run_steps(self, inputs, steps, *opts, threads="2"):
        """Runs the steps with every step an output; {name: array}."""
        out = self.fresh("out.h5")
        doc = {"inputs": inputs, "steps": steps,
               "outputs": {s["name"]: out + ":/" + s["name"]
                           for s in steps}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", "--quiet", "--threads", threads, *opts, path)
        with h5py.File(out, "r") as f:
            got = {s["name"]: f[s["name"]][()] for s in steps}
        return got, p

    def check_all(self, inputs, cases, *opts, threads="2"):
        """cases: (op, input name, array, q, axis, keepdims)."""
        steps = [step("s%d" % k, op, arg, q, axis, kd)
                 for k, (op, arg, _a, q, axis, kd) in enumerate(cases)]
        got, _ = self.run_steps(inputs, steps, *opts, threads=threads)
        for k, (op, arg, a, q, axis, kd) in enumerate(cases):
            with self.subTest(op=op, arg=arg, q=q, axis=axis, keepdims=kd):
                self.assertSameArray(got["s%d" % k],
                                     numpy_of(op, a, q, axis, kd))
        return got

    def test_every_op_axis_and_q_on_h5_and_zarr(self):
        for src in ["in.h5:/x", "in.h5:/x2", "x.zarr"]:
            cases = []
            # every axis form on one chunking, a few on the others
            axes = AXES if src == "in.h5:/x" else [None, 1, [0, 2]]
            for op in OPS:
                for axis in axes:
                    for q in (0.5, QS):
                        if op.endswith("median") and q != 0.5:
                            continue
                        cases.append((op, "x", X, q, axis, False))
                cases.append((op, "x", X, QS, [0, 2], True))
                cases.append((op, "x", X, 0.25, None, True))
                cases.append((op, "x", X, [0.25], 1, True))
            with self.subTest(src=src):
                self.check_all({"x": self.path(src)}, cases)

    def test_dtypes_ties_and_the_result_dtype(self):
        # quantile computes in float64 even for float32 data (NumPy
        # 1.24); median keeps float32; integers give float64
        cases = []
        for name, a in [("f32", F32), ("ints", INTS), ("u8", U8),
                        ("i64", I64)]:
            for op in OPS:
                for axis in [None, 0, 1]:
                    cases.append((op, name, a, QS, axis, False))
                    cases.append((op, name, a, 0.5, axis, False))
        inputs = {n: self.path("in.h5") + ":/" + n
                  for n in ["f32", "ints", "u8", "i64"]}
        got = self.check_all(inputs, cases)
        self.assertEqual(got["s0"].dtype, np.float64)  # quantile of f32
        med = [k for k, c in enumerate(cases)
               if c[0] == "median" and c[1] == "f32"]
        self.assertEqual(got["s%d" % med[0]].dtype, np.float32)

    def test_nan_and_inf(self):
        # quantile and median: NaN wherever a NaN is among the values;
        # the nan forms skip them (an all-NaN slice gives NaN); inf as
        # NumPy's arithmetic makes it (inf - inf is NaN)
        cases = []
        for name, a in [("nans", NANS), ("inf", INF)]:
            for op in OPS:
                for axis in [None, 0, 1]:
                    cases.append((op, name, a, QS, axis, False))
                    cases.append((op, name, a, 0.5, axis, True))
        inputs = {n: self.path("in.h5") + ":/" + n for n in ["nans", "inf"]}
        got = self.check_all(inputs, cases)
        k = cases.index(("quantile", "nans", NANS, QS, 0, False))
        self.assertTrue(np.isnan(got["s%d" % k]).all())
        k = cases.index(("nanquantile", "nans", NANS, QS, 0, False))
        self.assertTrue(np.isnan(got["s%d" % k][:, 3]).all())
        self.assertFalse(np.isnan(got["s%d" % k][:, 0]).any())

    def test_empty_reductions(self):
        src = self.path("in.h5") + ":/empty"
        for op in ["median", "nanmedian", "nanquantile"]:
            with self.subTest(op=op):
                got, _ = self.run_steps({"e": src},
                                        [step("s", op, "e", 0.5, 0)])
                self.assertSameArray(got["s"], np.full(4, np.nan))
        got, _ = self.run_steps({"e": src}, [step("s", "median", "e", None,
                                                  1)])
        self.assertSameArray(got["s"], np.zeros((0,)))
        p = C.run("quantile", src, "--q", "0.5", "--axis", "0", expect=2)
        self.assertCleanError(p, 2, "empty axis")

    def test_warns_where_numpy_warns(self):
        """NumPy's RuntimeWarning ("All-NaN slice encountered", "Mean of
        empty slice") is a chunkctl warning, and the other cases none."""
        cases = [("nans", NANS, op, axis)
                 for op in ["nanmedian", "nanquantile", "nanpercentile",
                            "median"] for axis in [0, 1]]
        cases += [("empty", np.zeros((0, 4)), op, 0)
                  for op in ["median", "nanmedian", "nanquantile"]]
        for name, a, op, axis in cases:
            with self.subTest(op=op, name=name, axis=axis):
                q = [] if op.endswith("median") else \
                    ["--q", "50" if "percentile" in op else "0.5"]
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    if op.endswith("median"):
                        getattr(np, op)(a, axis=axis)
                    else:
                        getattr(np, op)(a, 50 if "percentile" in op else
                                        0.5, axis=axis)
                np_warned = any(issubclass(x.category, RuntimeWarning)
                                for x in w)
                p = C.run(op, self.path("in.h5") + ":/" + name, *q,
                          "--axis", str(axis))
                self.assertEqual("warning:" in p.stderr, np_warned,
                                 p.stderr)

    def test_refining_when_one_result_does_not_fit(self):
        inputs = {"b": self.path("in.h5") + ":/big",
                  "i": self.path("in.h5") + ":/bigi"}
        steps = [step("q", "quantile", "b", QS),
                 step("p", "nanpercentile", "b", [0.001, 0.999]),
                 step("m", "median", "b"),
                 step("qi", "quantile", "i", QS)]
        first = None
        for t in ["1", "2", "7"]:
            got, p = self.run_steps(inputs, steps, "--memory", "32M",
                                    "--verbose", threads=t)
            passes = [int(n) for n in re.findall(
                r"in (\d+) pass(?:es)? over the data, refining", p.stderr)]
            self.assertEqual(len(passes), 4, p.stderr)
            # float data: range, bins, collect; integers spread over 2^63
            # with all but two values in ten keys: bins four times
            self.assertEqual(passes, [3, 3, 3, 5], p.stderr)
            if first is None:
                first = got
                self.assertSameArray(got["q"], numpy_of("quantile", BIG, QS))
                self.assertSameArray(got["p"], numpy_of("nanpercentile", BIG,
                                                        [0.001, 0.999]))
                self.assertSameArray(got["m"], numpy_of("median", BIG))
                self.assertSameArray(got["qi"], numpy_of("quantile", BIGI,
                                                         QS))
            for k in first:
                self.assertEqual(got[k].tobytes(), first[k].tobytes(), k)

    def test_blocks_when_kept_axes_do_not_fit_at_once(self):
        inputs = {"b": self.path("in.h5") + ":/big"}
        steps = [step("q", "quantile", "b", [0.1, 0.5, 0.9], 0),
                 step("m", "nanmedian", "b", None, 1, True)]
        first = None
        for t in ["1", "2", "7"]:
            got, p = self.run_steps(inputs, steps, "--memory", "32M",
                                    "--verbose", threads=t)
            blocks = re.findall(r"in (\d+) pass(?:es)? over the data \(the "
                                r"values of (\d+) output", p.stderr)
            self.assertEqual(len(blocks), 2, p.stderr)
            for passes, per in blocks:
                self.assertGreater(int(passes), 1, p.stderr)
            if first is None:
                first = got
                self.assertSameArray(got["q"], numpy_of(
                    "quantile", BIG, [0.1, 0.5, 0.9], 0))
                self.assertSameArray(got["m"], numpy_of(
                    "nanmedian", BIG, None, 1, True))
            for k in first:
                self.assertEqual(got[k].tobytes(), first[k].tobytes(), k)

    def test_threads_give_the_same_bytes(self):
        cases = [(op, "n", NANS, QS, axis, False)
                 for op in OPS for axis in [None, 0, 1]]
        inputs = {"n": self.path("in.h5") + ":/nans"}
        first = self.check_all(inputs, cases, threads="1")
        for t in ["2", "7"]:
            got = self.check_all(inputs, cases, threads=t)
            for k in first:
                self.assertEqual(got[k].tobytes(), first[k].tobytes(), k)

    def test_print_json_and_one_step_commands(self):
        src = self.path("in.h5") + ":/x"
        doc = {"inputs": {"x": src},
               "steps": [step("q", "quantile", "x", [0.1, 0.9]),
                         step("m", "median", "x", None, [0, 1])],
               "print": ["q", "m"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        got = json.loads(C.run("run", "--quiet", "--json", path).stdout)
        self.assertEqual(got["q"]["dtype"], "float64")
        self.assertEqual(got["q"]["shape"], [2])
        self.assertEqual(got["q"]["values"],
                         numpy_of("quantile", X, [0.1, 0.9]).tolist())
        self.assertEqual(got["m"]["shape"], [5])
        self.assertEqual(got["m"]["values"],
                         numpy_of("median", X, None, [0, 1]).tolist())
        # chunkctl quantile x.h5:/x --q 0.1,0.9
        p = C.run("quantile", "--quiet", src, "--q", "0.1,0.9", "--json")
        self.assertEqual(json.loads(p.stdout)["quantile"]["values"],
                         numpy_of("quantile", X, [0.1, 0.9]).tolist())
        p = C.run("percentile", "--quiet", src, "--q", "25")
        self.assertEqual(float(p.stdout), float(np.percentile(X, 25)))
        # chunkctl median x.h5:/x --axis 0 -o out.h5:/m
        out = self.fresh("m.h5")
        C.run("median", "--quiet", src, "--axis", "0", "-o", out + ":/m")
        with h5py.File(out, "r") as f:
            self.assertSameArray(f["m"][...], np.median(X, axis=0))
        out = self.fresh("n.zarr")
        C.run("nanquantile", "--quiet", self.path("in.h5") + ":/nans",
              "--q", "0.2,0.7", "--axis", "1", "--keepdims", "true", "-o", out)
        self.assertSameArray(zarr.open(out, mode="r")[...],
                             numpy_of("nanquantile", NANS, [0.2, 0.7], 1,
                                      True))

    def test_bad_keys_are_one_clear_line(self):
        src = self.path("in.h5") + ":/x"
        for args, needles in [
                (["quantile", src, "--q", "0.5,1.5"], ("q[1]", "[0, 1]")),
                (["quantile", src, "--q", "-0.1"], ("q:", "[0, 1]")),
                (["percentile", src, "--q", "101"], ("q:", "[0, 100]")),
                (["quantile", src], ("q:", "required")),
                (["quantile", src, "--q", "a"], ("q:",)),
                (["quantile", src, "--q", "0.5", "--method", "nearest"],
                 ("method", "linear", "nearest")),
                (["median", src, "--method", "midpoint"], ("method",)),
                (["median", src, "--q", "0.5"], ("q:", "no q")),
                (["quantile", src, "--q", "0.5", "--axis", "3"], ("axis",)),
                (["quantile", src, "--q", "0.5", "--keepdims", "2"],
                 ("keepdims",)),
                (["quantile", self.path("in.h5") + ":/bools", "--q", "0.5"],
                 ("bool",))]:
            with self.subTest(args=args[0:1] + args[2:]):
                p = C.run(*args, expect=2)
                self.assertCleanError(p, 2, *needles)
        # a bool median is NumPy's mean of the middle pair
        got, _ = self.run_steps({"b": self.path("in.h5") + ":/bools"},
                                [step("m", "median", "b", None, 0)])
        self.assertSameArray(got["m"], np.median(INTS > 0, axis=0))


if __name__ == "__main__":
    unittest.main()
