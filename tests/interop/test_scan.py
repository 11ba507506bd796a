"""cumsum and cumprod against NumPy 1.24 on h5py- and zarr-written arrays
with edge chunks and several chunkings: every axis (negative ones too) and
none (the flattened array), the result dtypes NumPy picks (and "dtype"),
integer overflow and wraparound, NaN and infinities, zeros and negative
numbers, the same bits for any --threads, a scan fed into other steps and
fed by a computed step, boxes that start inside a chunk (a slice of the
scan), the one-step command, a small --memory over a larger array, and
clean errors for bad keys.  Floats are compared bit for bit: chunkctl
accumulates in NumPy's sequential order.
"""
import json
import unittest

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(29)
X3 = RNG.normal(size=(37, 23, 5))
X1 = RNG.normal(size=101)
SHAPE2 = (29, 17)
CHUNKS2 = (6, 5)


def dtype_data(name):
    """A (29, 17) array of dtype 'name' over its whole range (floats: a
    spread of magnitudes, no NaN)."""
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    if name == "bool":
        return rng.integers(0, 2, SHAPE2).astype(bool)
    dt = np.dtype(name)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, SHAPE2, dtype=dt,
                            endpoint=True)
    return (rng.standard_normal(SHAPE2) * 1e3).astype(dt)


DTYPES = ["bool", "int8", "int32", "uint16", "int64", "float32", "float64"]
# int32 near 2^31: the int64 sums pass 2^31 at once
BIG32 = np.random.default_rng(3).integers(2**31 - 1000, 2**31 - 1, SHAPE2,
                                          dtype=np.int32)
# small values with zeros and negative numbers, for cumprod
SMALL_I = np.random.default_rng(4).integers(-3, 4, SHAPE2, dtype=np.int32)
SMALL_F = np.random.default_rng(5).choice(
    [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0], SHAPE2)
SMALL_F[0, 0] = 1.25  # a first row without a zero, along both axes
SPECIAL = np.random.default_rng(6).normal(size=SHAPE2)
SPECIAL[3, 4] = np.nan
SPECIAL[10, 2] = np.inf
SPECIAL[20, 2] = -np.inf  # inf + -inf: NaN from there on
SPECIAL[7, 11] = np.inf
SPECIAL[25, 16] = -np.inf


def axis_key(ax):
    return "none" if ax is None else str(ax).replace("-", "m")


class Scan(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("x3.h5"), "w") as f:
            f.create_dataset("a", data=X3, chunks=(8, 6, 2))
            f.create_dataset("b", data=X3, chunks=(1, 23, 5))
            f.create_dataset("c", data=X3, chunks=(37, 23, 5))
        z = zarr.open(cls.path("x3.zarr"), mode="w", shape=X3.shape,
                      chunks=(10, 7, 3), dtype=X3.dtype)
        z[...] = X3
        with h5py.File(cls.path("x1.h5"), "w") as f:
            f.create_dataset("x", data=X1, chunks=(10,))
        with h5py.File(cls.path("x2.h5"), "w") as f:
            for name in DTYPES:
                f.create_dataset(name, data=dtype_data(name), chunks=CHUNKS2)
            f.create_dataset("big32", data=BIG32, chunks=CHUNKS2)
            f.create_dataset("small_i", data=SMALL_I, chunks=CHUNKS2)
            f.create_dataset("small_f", data=SMALL_F, chunks=CHUNKS2)
            f.create_dataset("special", data=SPECIAL, chunks=CHUNKS2)
            f.create_dataset("empty", shape=(0, 5), dtype="i4",
                             chunks=(4, 5), maxshape=(None, 5))
        for name in ["int8", "float32"]:
            z = zarr.open(cls.path("x2_%s.zarr" % name), mode="w",
                          shape=SHAPE2, chunks=(7, 4), dtype=name)
            z[...] = dtype_data(name)

    def run_steps(self, inputs, steps, names, threads="2", opts=()):
        """Runs the steps, writes the named ones to one HDF5 file and
        returns {name: array}."""
        out = self.fresh("out.h5")
        doc = {"inputs": inputs, "steps": steps,
               "outputs": {n: out + ":/" + n for n in names}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, *opts, path)
        with h5py.File(out, "r") as f:
            return {n: f[n][...] for n in names}

    def scans(self, src, arg, axes, ops=("cumsum", "cumprod"), dtype=None,
              pre=()):
        """Every op over every axis of input src: {name: (op, axis,
        array)}."""
        steps, want = list(pre), {}
        for op in ops:
            for ax in axes:
                name = "%s_%s" % (op, axis_key(ax))
                st = {"name": name, "op": op, "args": [arg]}
                if ax is not None or len(want) % 2:  # null and absent
                    st["axis"] = ax
                if dtype:
                    st["dtype"] = dtype
                steps.append(st)
                want[name] = (op, ax)
        got = self.run_steps({"x": src}, steps, list(want))
        return {n: (op, ax, got[n]) for n, (op, ax) in want.items()}

    def check(self, src, data, axes, arg="x", dtype=None, pre=(),
              ops=("cumsum", "cumprod")):
        for name, (op, ax, got) in self.scans(src, arg, axes, ops, dtype,
                                              pre).items():
            with self.subTest(src=src, op=op, axis=ax, dtype=dtype), \
                    np.errstate(over="ignore", invalid="ignore"):
                want = getattr(np, op)(data, axis=ax, dtype=dtype)
                self.assertSameArray(got, want, name)

    def test_every_axis_of_every_chunking_matches_numpy(self):
        axes = [0, 1, 2, -1, -2, -3, None]
        for src in [self.path("x3.h5") + ":/a", self.path("x3.h5") + ":/b",
                    self.path("x3.h5") + ":/c", self.path("x3.zarr")]:
            self.check(src, X3, axes)

    def test_one_dimension(self):
        self.check(self.path("x1.h5") + ":/x", X1, [0, -1, None])

    def test_result_dtypes_are_numpys(self):
        src = self.path("x2.h5")
        for name in DTYPES:
            self.check(src + ":/" + name, dtype_data(name), [0, 1, None])
        for name in ["int8", "float32"]:
            self.check(self.path("x2_%s.zarr" % name), dtype_data(name),
                       [0, -1, None])

    def test_a_given_dtype(self):
        src = self.path("x2.h5")
        for name, dt in [("int32", "float32"), ("int8", "int8"),
                         ("int8", "uint8"), ("float64", "float32"),
                         ("uint16", "int16"), ("bool", "bool"),
                         ("int64", "float64"), ("small_f", "int32")]:
            data = SMALL_F if name == "small_f" else dtype_data(name)
            self.check(src + ":/" + name, data, [0, 1, None], dtype=dt)

    def test_int32_sums_pass_2_to_the_31_in_int64(self):
        got = self.scans(self.path("x2.h5") + ":/big32", "x", [0, 1, None],
                         ops=("cumsum",))
        for name, (op, ax, a) in got.items():
            want = np.cumsum(BIG32, axis=ax)
            self.assertEqual(a.dtype, np.int64)
            self.assertGreater(int(a.max()), 2**31)
            self.assertSameArray(a, want, name)

    def test_nan_and_infinities_propagate(self):
        self.check(self.path("x2.h5") + ":/special", SPECIAL, [0, 1, None])

    def test_cumprod_with_zeros_and_negatives(self):
        src = self.path("x2.h5")
        self.check(src + ":/small_i", SMALL_I, [0, 1, -1, None])
        self.check(src + ":/small_f", SMALL_F, [0, 1, -1, None])

    def test_empty(self):
        empty = np.zeros((0, 5), np.int32)
        self.check(self.path("x2.h5") + ":/empty", empty, [0, 1, None])

    def test_the_same_bits_for_any_thread_count(self):
        pre = [{"name": "y", "op": "multiply", "args": ["x", 1.5]}]
        steps = pre + [
            {"name": "s0", "op": "cumsum", "args": ["y"], "axis": 0},
            {"name": "s1", "op": "cumprod", "args": ["y"], "axis": 1},
            {"name": "sn", "op": "cumsum", "args": ["y"]}]
        src = {"x": self.path("x3.h5") + ":/a"}
        first = self.run_steps(src, steps, ["s0", "s1", "sn"], "1")
        self.assertSameArray(first["s0"], np.cumsum(X3 * 1.5, axis=0))
        self.assertSameArray(first["sn"], np.cumsum(X3 * 1.5))
        for t in ["2", "7"]:
            got = self.run_steps(src, steps, ["s0", "s1", "sn"], t)
            for n in first:
                self.assertEqual(got[n].tobytes(), first[n].tobytes(),
                                 "%s with --threads %s" % (n, t))

    def test_a_computed_operand(self):
        pre = [{"name": "y", "op": "multiply", "args": ["x", 2]}]
        self.check(self.path("x3.zarr"), X3 * 2, [0, 1, 2, None], arg="y",
                   pre=pre)

    def test_fed_into_other_steps(self):
        # slices start their boxes inside the scan's chunks
        index = [[3, None, 2], [None, None, -3], 1]
        key = (slice(3, None, 2), slice(None, None, -3), 1)
        steps = [
            {"name": "c", "op": "cumsum", "args": ["x"], "axis": 0},
            {"name": "s", "op": "slice", "args": ["c"], "index": index},
            {"name": "t", "op": "slice", "args": ["c"],
             "index": [[5, 30], [2, 21], [1, 4]]},
            {"name": "f", "op": "cumprod", "args": ["x"]},
            {"name": "fs", "op": "slice", "args": ["f"],
             "index": [[17, 3000, 7]]},
            {"name": "r", "op": "rechunk", "args": ["c"],
             "chunks": [13, 23, 5]},
            {"name": "cc", "op": "cumsum", "args": ["c"], "axis": 1},
            {"name": "m", "op": "mean", "args": ["c"], "axis": 0}]
        got = self.run_steps({"x": self.path("x3.h5") + ":/a"}, steps,
                             ["s", "t", "fs", "r", "cc", "m"])
        c = np.cumsum(X3, axis=0)
        self.assertSameArray(got["s"], c[key])
        self.assertSameArray(got["t"], c[5:30, 2:21, 1:4])
        self.assertSameArray(got["fs"], np.cumprod(X3)[17:3000:7])
        self.assertSameArray(got["r"], c)
        self.assertSameArray(got["cc"], np.cumsum(c, axis=1))
        np.testing.assert_allclose(got["m"], c.mean(axis=0), rtol=1e-12)

    def test_printed(self):
        doc = {"inputs": {"x": self.path("x1.h5") + ":/x"},
               "steps": [{"name": "c", "op": "cumsum", "args": ["x"]},
                         {"name": "m", "op": "max", "args": ["c"]}],
               "print": ["c", "m"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        got = json.loads(C.run("run", "--quiet", "--json", path).stdout)
        self.assertSameArray(np.array(got["c"]["values"]), np.cumsum(X1))
        self.assertEqual(got["m"]["values"], [np.cumsum(X1).max()])

    def test_one_step_command(self):
        src = self.path("x3.h5") + ":/a"
        for op, opts, want in [
                ("cumsum", ["--axis", "0"], np.cumsum(X3, axis=0)),
                ("cumprod", ["--axis", "-1", "--dtype", "float32"],
                 np.cumprod(X3, axis=-1, dtype=np.float32)),
                ("cumsum", [], np.cumsum(X3))]:
            out = self.fresh("one.h5")
            C.run(op, src, *opts, "-o", out + ":/y", "--quiet")
            with h5py.File(out, "r") as f:
                self.assertSameArray(f["y"][...], want, op)

    def test_small_memory_over_a_larger_array(self):
        # 2500 x 2500 float64 is 48 MiB; --memory 32M leaves 8 MiB beside
        # chunkctl's own 24 MiB
        big = self.path("big.h5")
        rng = np.random.default_rng(8)
        data = np.empty((2500, 2500))
        with h5py.File(big, "w") as f:
            d = f.create_dataset("x", shape=data.shape, dtype="f8",
                                 chunks=(200, 200))
            for i in range(0, 2500, 500):
                data[i:i + 500] = rng.normal(size=(500, 2500))
                d[i:i + 500] = data[i:i + 500]
        for ax in [0, 1, None]:
            out = self.fresh("big_out.h5")
            opts = [] if ax is None else ["--axis", ax]
            C.run("cumsum", big + ":/x", *opts, "--memory", "32M", "-o",
                  out + ":/y", "--quiet")
            with h5py.File(out, "r") as f:
                self.assertSameArray(f["y"][...], np.cumsum(data, axis=ax),
                                     "axis %s" % ax)

    def test_carries_over_the_budget_say_so(self):
        # chunks of one row: the carries are the whole 16 MB array
        doc = {"steps": [
            {"name": "x", "op": "random", "shape": [4000, 500],
             "chunks": [1, 500], "dtype": "float64"},
            {"name": "c", "op": "cumsum", "args": ["x"], "axis": 0},
            {"name": "m", "op": "sum", "args": ["c"]}],
            "print": ["m"]}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", "--quiet", "--memory", "32M", path, expect=None)
        self.assertCleanError(p, 1, "--memory", "cumsum", "'c'", "rechunk")

    def test_bad_keys(self):
        src = self.path("x3.h5") + ":/a"
        for step, needles in [
                ({"axis": 3}, ("axis", "out of range")),
                ({"axis": -4}, ("axis", "out of range")),
                ({"axis": 1.5}, ("axis",)),
                ({"axis": [0, 1]}, ("axis",)),
                ({"axis": "0"}, ("axis",)),
                ({"dtype": "float128"}, ("dtype",)),
                ({"dtype": 4}, ("dtype",))]:
            for op in ["cumsum", "cumprod"]:
                with self.subTest(op=op, step=step):
                    st = dict(step, name="c", op=op, args=["x"])
                    doc = {"inputs": {"x": src}, "steps": [st],
                           "outputs": {"c": self.fresh("bad.h5")}}
                    path = self.fresh("p.json")
                    with open(path, "w") as f:
                        json.dump(doc, f)
                    p = C.run("run", "--quiet", path, expect=None)
                    self.assertCleanError(p, 2, "steps[0]", *needles)
        p = C.run("cumsum", src, "--axis", "7", "-o",
                  self.fresh("bad.h5"), expect=None)
        self.assertCleanError(p, 2, "cumsum", "axis 7")
        p = C.run("cumprod", src, "--dtype", "complex64", "-o",
                  self.fresh("bad.h5"), expect=None)
        self.assertCleanError(p, 2, "cumprod", "dtype")


if __name__ == "__main__":
    unittest.main()
