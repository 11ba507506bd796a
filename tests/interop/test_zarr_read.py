"""zarr-python writes, chunkctl reads: every dtype in both byte orders, the
numcodecs compressors chunkctl knows (Blosc with each cname and shuffle,
Zstd, Zlib, GZip, none), C and F order, '.' and '/' key separators, fill
values over chunks that were never written, groups and attributes.  Each
array is copied by chunkctl to HDF5 (--compress none) and to Zarr, read
back by h5py / zarr-python and compared bit for bit with the NumPy
original."""

import os

import _common as C
from _common import np, h5py, zarr
import numcodecs
from numcodecs import Blosc, Zstd, Zlib, GZip, Delta

SHAPE = (37, 53)   # 4 x 4 chunks of 10 x 16, the last row and column partial
CHUNKS = (10, 16)
BLOSC_CNAMES = ["lz4", "lz4hc", "zstd", "blosclz", "zlib"]
SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
COMPRESSORS = {}
for _cn in BLOSC_CNAMES:
    for _sh, _shname in SHUFFLES.items():
        COMPRESSORS["blosc_%s_%s" % (_cn, _shname)] = Blosc(
            cname=_cn, clevel=5, shuffle=_sh)
COMPRESSORS.update({"zstd3": Zstd(level=3), "zlib4": Zlib(level=4),
                    "gzip4": GZip(level=4), "none": None})
COMP_DTYPES = ["float64", ">i2", "uint8"]
ORDER_F_DTYPES = ["float64", ">i4", "uint8", "bool", "<f4"]
# (name, dtype, fill_value); missing chunks read as fill, or 0 for None.
FILLS = [("i4_7", "<i4", 7), ("be_i2_7", ">i2", 7), ("f8_1.5", "<f8", 1.5),
         ("f8_nan", "<f8", np.nan), ("f4_nan", "<f4", np.nan),
         ("f8_inf", "<f8", np.inf), ("f4_ninf", "<f4", -np.inf),
         ("f8_none", "<f8", None), ("i4_none", "<i4", None),
         ("u1_none", "|u1", None)]
ATTRS = {"int": 42, "float": 2.5, "str": "hello, world",
         "list_i": [1, 2, 3], "list_f": [1.5, -2.25]}


def partial_write(arr, fill, seed):
    """Writes only chunks (0, 0) and the corner edge chunk (3, 3) of a
    SHAPE/CHUNKS array; returns what the whole array should read as."""
    dt = arr.dtype
    want = np.zeros(arr.shape, dt) if fill is None else \
        np.full(arr.shape, fill, dt)
    part = C.make_data(dt, arr.shape, seed)
    for sel in (np.s_[0:10, 0:16], np.s_[30:37, 48:53]):
        want[sel] = part[sel]
        arr[sel] = part[sel]
    return want


class ZarrRead(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.src = cls.path("fixture.zarr")
        cls.want = {}
        root = zarr.open_group(cls.src, mode="w")
        seed = 200

        def put(name, dt, shape=SHAPE, chunks=CHUNKS, **kw):
            nonlocal seed
            seed += 1
            a = C.make_data(dt, shape, seed)
            z = root.create_dataset(name, shape=shape, chunks=chunks,
                                    dtype=dt, **kw)
            z[...] = a
            cls.want["/" + name] = a
            return z

        for dt in C.ALL_DTYPES:
            put("dtypes/" + C.dtype_tag(dt), dt)
        for cname, comp in COMPRESSORS.items():
            for dt in COMP_DTYPES:
                put("comp/%s_%s" % (cname, C.dtype_tag(dt)), dt,
                    compressor=comp)
        for dt in ORDER_F_DTYPES:
            put("order/F_" + C.dtype_tag(dt), dt, order="F")
        put("order/F_3d", ">f8", shape=(5, 13, 7), chunks=(2, 4, 3),
            order="F")
        for dt in ("float64", ">i2"):
            put("sep/slash_" + C.dtype_tag(dt), dt, dimension_separator="/")
        put("sep/slash_F_zstd", "<u4", dimension_separator="/", order="F",
            compressor=Zstd(level=1))
        for name, dt, fill in FILLS:
            seed += 1
            z = root.create_dataset("fill/" + name, shape=SHAPE,
                                    chunks=CHUNKS, dtype=dt, fill_value=fill)
            cls.want["/fill/" + name] = partial_write(z, fill, seed)
        root.create_dataset("fill/never_written", shape=(20, 30),
                            chunks=(8, 8), dtype="<i2", fill_value=7)
        cls.want["/fill/never_written"] = np.full((20, 30), 7, "<i2")
        root.require_group("g").attrs.update({"title": "group g",
                                              "version": 3})
        z = put("g/sub/x", "<f4")
        z.attrs.update(ATTRS)
        put("dims/d1", "<i8", shape=(1001,), chunks=(64,))
        put("dims/d3", ">f8", shape=(5, 13, 7), chunks=(2, 4, 3))

        # A store whose root is an array.
        cls.root_array = cls.path("root.zarr")
        cls.root_want = C.make_data("<i4", SHAPE, 300)
        z = zarr.open_array(cls.root_array, mode="w", shape=SHAPE,
                            chunks=CHUNKS, dtype="<i4")
        z[...] = cls.root_want
        z.attrs["units"] = "m"

        # A filter chunkctl need not know (bonus: must fail cleanly).
        cls.delta = cls.path("delta.zarr")
        cls.delta_want = np.arange(600, dtype="<i4").reshape(20, 30)
        z = zarr.open_array(cls.delta, mode="w", shape=(20, 30),
                            chunks=(8, 8), dtype="<i4",
                            filters=[Delta(dtype="<i4")])
        z[...] = cls.delta_want

    # -- helpers --------------------------------------------------------

    def to_h5(self, name, *opts):
        out = self.fresh("out_%s.h5" % name.strip("/").replace("/", "_"))
        C.copy("%s:%s" % (self.src, name), out, "--compress", "none", *opts)
        with h5py.File(out, "r") as f:
            self.assertIn(name, f, "copy to %s keeps the name" % out)
            self.assertEqual(C.h5_filter_ids(f[name]), [],
                             "--compress none: no filters")
            return f[name][()]

    def to_zarr(self, name, *opts):
        out = self.fresh("out_%s.zarr" % name.strip("/").replace("/", "_"))
        C.copy("%s:%s" % (self.src, name), out, *opts)
        z = zarr.open(out, mode="r")
        self.assertIsInstance(z, zarr.Array, "%s: root is an array" % out)
        return z[...]

    def check_both(self, name):
        want = self.want[name]
        self.assertSameArray(self.to_h5(name), want, name + " -> h5")
        self.assertSameArray(self.to_zarr(name), want, name + " -> zarr")

    # -- cases ----------------------------------------------------------

    def test_dtypes(self):
        for dt in C.ALL_DTYPES:
            with self.subTest(dtype=dt):
                self.check_both("/dtypes/" + C.dtype_tag(dt))

    def test_compressors(self):
        for cname in COMPRESSORS:
            for dt in COMP_DTYPES:
                with self.subTest(compressor=cname, dtype=dt):
                    self.check_both("/comp/%s_%s" % (cname, C.dtype_tag(dt)))

    def test_order_f(self):
        names = ["/order/F_" + C.dtype_tag(dt) for dt in ORDER_F_DTYPES]
        for name in names + ["/order/F_3d"]:
            with self.subTest(name=name):
                self.check_both(name)

    def test_slash_separator(self):
        self.assertTrue(os.path.isdir(os.path.join(
            self.src, "sep", "slash_f8_le", "0")), "fixture uses '/' keys")
        for name in ("/sep/slash_f8_le", "/sep/slash_i2_be",
                     "/sep/slash_F_zstd"):
            with self.subTest(name=name):
                self.check_both(name)

    def test_zero_d_array_with_a_dtype_change(self):
        # a 0-d array read as another dtype goes through the region read
        # (its one chunk is not "whole" then): once a division by zero
        src = self.path("scalar.zarr")
        zarr.save_array(src, np.array(2.5, dtype="<f4"))
        for ext in ("zarr", "h5"):
            with self.subTest(to=ext):
                out = self.fresh("scalar64." + ext)
                C.copy(src, out, "--dtype", "float64")
                if ext == "h5":
                    with h5py.File(out, "r") as f:
                        got = f["data"][()]
                else:
                    got = zarr.open(out, "r")[...]
                self.assertEqual(got.shape, ())
                self.assertEqual(got.dtype, np.float64)
                self.assertEqual(float(got), 2.5)

    def test_fill_values_missing_chunks(self):
        # The fixture really lacks chunks: 2 of 16 written.
        self.assertEqual(len(C.chunk_files(
            os.path.join(self.src, "fill", "i4_7"))), 2)
        self.assertEqual(len(C.chunk_files(
            os.path.join(self.src, "fill", "never_written"))), 0)
        for name, _dt, fill in FILLS + [("never_written", "", 7)]:
            with self.subTest(name=name, fill=fill):
                self.check_both("/fill/" + name)

    def test_group_array_named_destination(self):
        out = self.fresh("named.h5")
        C.copy(self.src + ":/g/sub/x", out + ":/y")
        with h5py.File(out, "r") as f:
            self.assertEqual(list(C.h5_datasets(f)), ["/y"])
            self.assertSameArray(f["/y"][()], self.want["/g/sub/x"])

    def test_attrs_to_h5(self):
        out = self.fresh("attrs.h5")
        C.copy(self.src + ":/g/sub/x", out)
        with h5py.File(out, "r") as f:
            C.attrs_equal(self, f["/g/sub/x"].attrs, ATTRS, "h5")

    def test_attrs_to_zarr(self):
        out = self.fresh("attrs.zarr")
        C.copy(self.src + ":/g/sub/x", out)
        C.attrs_equal(self, zarr.open(out, "r").attrs.asdict(), ATTRS,
                      "zarr")

    def test_json_attrs(self):
        """Zarr -> Zarr keeps any JSON attribute verbatim; Zarr -> HDF5
        stores what HDF5 can hold and names each attribute it cannot on
        stderr (never a silent loss)."""
        src = self.fresh("jattrs.zarr")
        z = zarr.open_array(src, mode="w", shape=(4,), chunks=(2,),
                            dtype="<i4")
        z[...] = 1
        attrs = {"nested": [[1, 2, 3], [4, 5, 6]], "flag": True,
                 "none": None, "obj": {"a": 1, "b": [1.5]},
                 "mixed": [1, "a"], "s": "text", "i": -3}
        z.attrs.update(attrs)
        out = self.fresh("jattrs_out.zarr")
        C.copy(src, out)
        self.assertEqual(zarr.open(out, "r").attrs.asdict(), attrs)
        out = self.fresh("jattrs_out.h5")
        p = C.run("copy", src, out)
        with h5py.File(out, "r") as f:
            got = dict(f["/data"].attrs)
        for k, v in attrs.items():
            with self.subTest(attr=k):
                if k in got:
                    C.attrs_equal(self, {k: got[k]}, {k: v}, "h5")
                else:
                    self.assertIn("'%s'" % k, p.stderr,
                                  "attribute %s dropped without a word" % k)
        for k in ("flag", "s", "i"):
            self.assertIn(k, got, "HDF5 holds attribute %s" % k)

    def test_root_array_becomes_data(self):
        out = self.fresh("root.h5")
        C.copy(self.root_array, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            self.assertEqual(list(C.h5_datasets(f)), ["/data"])
            self.assertSameArray(f["/data"][()], self.root_want)
            C.attrs_equal(self, f["/data"].attrs, {"units": "m"}, "/data")

    def test_root_array_to_zarr(self):
        out = self.fresh("root_copy.zarr")
        C.copy(self.root_array, out)
        z = zarr.open(out, "r")
        self.assertIsInstance(z, zarr.Array)
        self.assertSameArray(z[...], self.root_want)
        self.assertEqual(z.chunks, CHUNKS)

    def test_group_attrs_whole_store(self):
        """Group attributes travel with a whole-store copy too."""
        want = {"title": "group g", "version": 3}
        out = self.fresh("gattrs.h5")
        C.copy(self.src, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            C.attrs_equal(self, f["/g"].attrs, want, "h5 /g")
        out = self.fresh("gattrs.zarr")
        C.copy(self.src, out)
        C.attrs_equal(self, zarr.open_group(out, "r")["g"].attrs.asdict(),
                      want, "zarr /g")

    def test_whole_store_to_h5(self):
        out = self.fresh("all.h5")
        C.copy(self.src, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            got = C.h5_datasets(f)
            self.assertEqual(sorted(got), sorted(self.want))
            for name, want in sorted(self.want.items()):
                with self.subTest(name=name):
                    self.assertSameArray(got[name][()], want, name)
            C.attrs_equal(self, f["/g/sub/x"].attrs, ATTRS, "/g/sub/x")

    def test_whole_store_to_zarr(self):
        out = self.fresh("all.zarr")
        C.copy(self.src, out)
        root = zarr.open(out, mode="r")
        self.assertIsInstance(root, zarr.Group)
        got = C.zarr_arrays(root)
        self.assertEqual(sorted(got), sorted(self.want))
        for name, want in sorted(self.want.items()):
            with self.subTest(name=name):
                self.assertSameArray(got[name][...], want, name)

    def test_default_keeps_compressor(self):
        """Without --compress a Zarr -> Zarr copy keeps the compressor."""
        for cname in ("blosc_zstd_bitshuffle", "zstd3", "gzip4", "none"):
            with self.subTest(compressor=cname):
                out = self.fresh("keep_%s.zarr" % cname)
                C.copy("%s:/comp/%s_f8_le" % (self.src, cname), out)
                z = zarr.open(out, "r")
                self.assertEqual(z.compressor, COMPRESSORS[cname])
                self.assertSameArray(z[...],
                                     self.want["/comp/%s_f8_le" % cname])

    def test_delta_filter_fails_cleanly(self):
        """numcodecs filters are not required; an unknown one must give
        exit 1 and one line naming it or the array, and no output."""
        for ext in ("h5", "zarr"):
            with self.subTest(to=ext):
                out = self.fresh("delta_out." + ext)
                p = C.copy(self.delta, out, expect=None)
                if p.returncode == 0:
                    if ext == "h5":
                        with h5py.File(out, "r") as f:
                            self.assertSameArray(f["/data"][()],
                                                 self.delta_want)
                    else:
                        self.assertSameArray(zarr.open(out, "r")[...],
                                             self.delta_want)
                    continue
                # 'delta' is in the path given: the cause must be named
                self.assertCleanError(p, 1, "filters [delta]",
                                      "not supported")
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    numcodecs.blosc.use_threads = False
    C.main()
