"""h5py writes, chunkctl reads: every dtype in both byte orders, the three
layouts, HDF5's built-in filters, fill values over missing chunks, groups
and attributes.  Each array is copied by chunkctl to HDF5 (--compress none)
and to Zarr, read back by h5py / zarr-python and compared bit for bit with
the NumPy original."""

import os

import _common as C
from _common import np, h5py, zarr

SHAPE = (37, 53)   # 4 x 4 chunks of 10 x 16, the last row and column partial
CHUNKS = (10, 16)
FILTERS = {
    # name: h5py create_dataset keywords
    "gzip1": dict(compression="gzip", compression_opts=1),
    "gzip4": dict(compression="gzip", compression_opts=4),
    "gzip9": dict(compression="gzip", compression_opts=9),
    "gzip4_shuffle": dict(compression="gzip", compression_opts=4,
                          shuffle=True),
    "shuffle": dict(shuffle=True),
    "fletcher32": dict(fletcher32=True),
    "fletcher32_gzip_shuffle": dict(fletcher32=True, compression="gzip",
                                    shuffle=True),
}
FILTER_DTYPES = ["float64", "int32", ">i2", "uint8"]
CONTIGUOUS_DTYPES = ["float64", ">i4", "uint8", "bool", ">f4"]
ATTRS = {
    "int": 42,
    "neg": -7,
    "float": 2.5,
    "str": "hello, world",
    "arr_i4": np.arange(5, dtype=np.int32),
    "arr_f8": np.array([1.5, -2.25, 1e300]),
}
# Less common attribute kinds, kept apart so a gap here shows on its own.
ATTRS_MORE = {
    "flag": True,                          # h5py: an enum of int8
    "fixed": np.bytes_(b"fixed str"),      # fixed-length, not variable
    "strs": ["a", "bc"],                   # variable-length string array
    "f4": np.float32(1.5),
    "arr_2d": np.arange(6, dtype=np.int64).reshape(2, 3),
}


class H5Read(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.src = cls.path("fixture.h5")
        cls.want = {}            # dataset name -> numpy array as written
        seed = 100
        with h5py.File(cls.src, "w") as f:
            for dt in C.ALL_DTYPES:
                seed += 1
                name = "/dtypes/" + C.dtype_tag(dt)
                a = C.make_data(dt, SHAPE, seed)
                f.create_dataset(name, data=a, chunks=CHUNKS)
                cls.want[name] = a
            for dt in CONTIGUOUS_DTYPES:
                seed += 1
                name = "/layout/contiguous_" + C.dtype_tag(dt)
                a = C.make_data(dt, SHAPE, seed)
                f.create_dataset(name, data=a)          # contiguous
                cls.want[name] = a
            cls.want["/layout/compact"] = cls.compact(
                f.require_group("layout"), b"compact", "<i2", (6, 7), seed)
            cls.want["/layout/compact_be"] = cls.compact(
                f["layout"], b"compact_be", ">f8", (3, 5), seed + 1)
            for fname, kw in FILTERS.items():
                for dt in FILTER_DTYPES:
                    seed += 1
                    name = "/filters/%s_%s" % (fname, C.dtype_tag(dt))
                    a = C.make_data(dt, SHAPE, seed)
                    f.create_dataset(name, data=a, chunks=CHUNKS, **kw)
                    cls.want[name] = a
            # Fill values: only some chunks are ever written.
            for name, dt, fill in (("/fill/i4", "int32", 7),
                                   ("/fill/f8", "float64", -1.5),
                                   ("/fill/be_i2", ">i2", 7),
                                   ("/fill/f4_nan", "float32", np.nan)):
                d = f.create_dataset(name, shape=(40, 50), chunks=(16, 16),
                                     dtype=dt, fillvalue=fill)
                a = np.full((40, 50), fill, dtype=dt)
                part = C.make_data(dt, (40, 50), seed)
                a[0:16, 0:16] = part[0:16, 0:16]       # one whole chunk
                a[33:40, 48:50] = part[33:40, 48:50]   # a corner edge chunk
                d[0:16, 0:16] = a[0:16, 0:16]
                d[33:40, 48:50] = a[33:40, 48:50]
                cls.want[name] = a
            # Raw, with rows long enough that rechunked reads take their
            # runs straight from the file (>= 2 KB), one with missing chunks
            for name, shape, chunks, dt in (
                    ("/raw/f8_wide", (40, 3000), (16, 1000), "float64"),
                    ("/raw/f4_be_wide", (40, 3000), (16, 1000), ">f4"),
                    ("/raw/i8_3d", (7, 40, 600), (3, 40, 600), "<i8")):
                seed += 1
                a = C.make_data(dt, shape, seed)
                f.create_dataset(name, data=a, chunks=chunks)
                cls.want[name] = a
            d = f.create_dataset("/raw/fill_wide", shape=(40, 3000),
                                 chunks=(16, 1000), dtype="f8",
                                 fillvalue=2.5)
            a = np.full((40, 3000), 2.5)
            a[0:16, 1000:2000] = C.make_data("f8", (16, 1000), seed)
            d[0:16, 1000:2000] = a[0:16, 1000:2000]
            cls.want["/raw/fill_wide"] = a
            d = f.create_dataset("/fill/never_written", shape=(20, 30),
                                 chunks=(8, 8), dtype="int16", fillvalue=7)
            cls.want["/fill/never_written"] = np.full((20, 30), 7, "int16")
            # Groups, attributes, other ranks.
            g = f.create_group("g")
            g.attrs["title"] = "group g"
            g.attrs["version"] = 3
            a = C.make_data("float32", SHAPE, 7)
            d = f.create_dataset("/g/sub/x", data=a, chunks=CHUNKS)
            for k, v in ATTRS.items():
                d.attrs[k] = v
            cls.want["/g/sub/x"] = a
            a = C.make_data("int16", (4, 5), 9)
            d = f.create_dataset("/g/more", data=a)
            for k, v in ATTRS_MORE.items():
                d.attrs[k] = v
            cls.want["/g/more"] = a
            for name, shape, chunks, dt in (
                    ("/dims/d1", (1001,), (64,), "int64"),
                    ("/dims/d3", (5, 13, 7), (2, 4, 3), ">f8")):
                a = C.make_data(dt, shape, 8)
                f.create_dataset(name, data=a, chunks=chunks)
                cls.want[name] = a
        # A filter chunkctl is not required to know, alone in its own file.
        cls.lzf = cls.path("lzf.h5")
        with h5py.File(cls.lzf, "w") as f:
            f.create_dataset("/z", data=np.arange(600.0).reshape(20, 30),
                             chunks=(8, 8), compression="lzf")

    @staticmethod
    def compact(group, name, dt, shape, seed):
        """h5py's high-level API has no compact layout: go through h5d."""
        a = C.make_data(dt, shape, seed)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple(shape)
        tid = h5py.h5t.py_create(np.dtype(dt))
        dsid = h5py.h5d.create(group.id, name, tid, space, dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, a)
        return a

    # -- helpers --------------------------------------------------------

    def to_h5(self, name, *opts):
        """Copies fixture.h5:NAME to a new .h5 (no compression); returns
        what h5py reads at the same NAME (the source name is kept)."""
        out = self.fresh("out_%s.h5" % name.strip("/").replace("/", "_"))
        C.copy("%s:%s" % (self.src, name), out, "--compress", "none", *opts)
        with h5py.File(out, "r") as f:
            self.assertIn(name, f, "copy to %s keeps the name" % out)
            d = f[name]
            self.assertEqual(C.h5_filter_ids(d), [],
                             "--compress none: no filters")
            return d[()], d.dtype

    def to_zarr(self, name, *opts):
        """Copies fixture.h5:NAME to a new .zarr, whose root is then the
        array; returns (values, zarr array)."""
        out = self.fresh("out_%s.zarr" % name.strip("/").replace("/", "_"))
        C.copy("%s:%s" % (self.src, name), out, *opts)
        z = zarr.open(out, mode="r")
        self.assertIsInstance(z, zarr.Array, "%s: root is an array" % out)
        return z[...], z

    def check_both(self, name):
        got, _ = self.to_h5(name)
        self.assertSameArray(got, self.want[name], name + " -> h5")
        got, _ = self.to_zarr(name)
        self.assertSameArray(got, self.want[name], name + " -> zarr")

    # -- cases ----------------------------------------------------------

    def test_dtypes_chunked(self):
        for dt in C.ALL_DTYPES:
            name = "/dtypes/" + C.dtype_tag(dt)
            with self.subTest(dtype=dt):
                self.check_both(name)

    def test_zarr_keeps_chunk_shape(self):
        _, z = self.to_zarr("/dtypes/f8_le")
        self.assertEqual(z.chunks, CHUNKS)
        self.assertEqual(z.shape, SHAPE)

    def test_contiguous(self):
        for dt in CONTIGUOUS_DTYPES:
            with self.subTest(dtype=dt):
                self.check_both("/layout/contiguous_" + C.dtype_tag(dt))

    def test_compact(self):
        for name in ("/layout/compact", "/layout/compact_be"):
            with self.subTest(name=name):
                with h5py.File(self.src, "r") as f:   # the fixture is right
                    layout = f[name].id.get_create_plist().get_layout()
                    self.assertEqual(layout, h5py.h5d.COMPACT)
                self.check_both(name)

    def test_filters(self):
        for fname in FILTERS:
            for dt in FILTER_DTYPES:
                name = "/filters/%s_%s" % (fname, C.dtype_tag(dt))
                with self.subTest(filter=fname, dtype=dt):
                    self.check_both(name)

    def test_default_keeps_gzip_shuffle(self):
        name = "/filters/gzip4_shuffle_f8_le"
        out = self.fresh("keep.h5")
        C.copy("%s:%s" % (self.src, name), out)
        with h5py.File(out, "r") as f:
            d = f[name]
            self.assertSameArray(d[()], self.want[name])
            self.assertEqual(d.compression, "gzip")
            self.assertEqual(d.compression_opts, 4)
            self.assertTrue(d.shuffle)
            self.assertEqual(d.chunks, CHUNKS)

    def test_fill_value_missing_chunks(self):
        with h5py.File(self.src, "r") as f:   # the fixture is right
            self.assertEqual(f["/fill/i4"].id.get_num_chunks(), 2)
            self.assertEqual(f["/fill/never_written"].id.get_num_chunks(), 0)
        for name in ("/fill/i4", "/fill/f8", "/fill/be_i2", "/fill/f4_nan",
                     "/fill/never_written"):
            with self.subTest(name=name):
                self.check_both(name)

    def test_rechunked_and_converted_regions(self):
        """A copy to other chunks reads regions of the source: raw chunks
        (no filters) straight from the file, as stored or converted (big-
        endian, missing chunks, 1-D and 3-D), filtered ones decoded."""
        cases = [("/dtypes/" + C.dtype_tag(dt), "7,9")
                 for dt in C.ALL_DTYPES]
        cases += [(n, "13,11") for n in ("/fill/i4", "/fill/f8",
                                         "/fill/be_i2", "/fill/f4_nan",
                                         "/fill/never_written")]
        cases += [("/dims/d1", "100"), ("/dims/d3", "3,5,2"),
                  ("/filters/gzip4_shuffle_f8_le", "7,9"),
                  ("/raw/f8_wide", "7,700"), ("/raw/f4_be_wide", "7,700"),
                  ("/raw/i8_3d", "2,40,600"), ("/raw/fill_wide", "13,900")]
        for name, chunks in cases:
            for dt in (None, "float64", "int8"):
                want = self.want[name]
                if dt == "int8" and want.dtype.kind == "f":
                    continue  # float -> int of NaN and inf is undefined
                opts = ("--chunks", chunks) + (("--dtype", dt) if dt else ())
                with self.subTest(name=name, dtype=dt):
                    got, _ = self.to_h5(name, *opts)
                    self.assertSameArray(got, want.astype(dt) if dt else want)

    def test_strided_slices_of_raw_chunks(self):
        """Slices with steps read every step-th element of raw chunks,
        through a small buffer, also across missing chunks."""
        out = self.fresh("slices.h5")
        pj = self.path("slices.json")
        index = {"/fill/be_i2": [[1, None, 3], [None, None, 4]],
                 "/dims/d3": [[None, None, 2], [1, 12, 5], [None, None, 2]],
                 "/dims/d1": [[3, None, 7]],
                 "/fill/f8": [[None, None, 5], [2, 49, 2]]}
        steps = [{"name": "s%d" % k, "op": "slice", "args": ["x%d" % k],
                  "index": ix} for k, ix in enumerate(index.values())]
        with open(pj, "w") as f:
            f.write(C.json.dumps({
                "inputs": {"x%d" % k: "%s:%s" % (self.src, n)
                           for k, n in enumerate(index)},
                "steps": steps,
                "outputs": {s["name"]: "%s:/%s" % (out, s["name"])
                            for s in steps}}))
        C.run("run", "--quiet", pj)
        with h5py.File(out, "r") as f:
            for k, (name, ix) in enumerate(index.items()):
                sl = tuple(slice(*i) for i in ix)
                with self.subTest(name=name):
                    self.assertSameArray(f["s%d" % k][()], self.want[name][sl])

    def test_group_path_kept_in_h5(self):
        out = self.fresh("grp.h5")
        C.copy(self.src + ":/g/sub/x", out, "--compress", "none")
        with h5py.File(out, "r") as f:
            self.assertEqual(list(C.h5_datasets(f)), ["/g/sub/x"])
            self.assertSameArray(f["/g/sub/x"][()], self.want["/g/sub/x"])

    def test_named_destination(self):
        out = self.fresh("named.h5")
        C.copy(self.src + ":/g/sub/x", out + ":/renamed/y")
        with h5py.File(out, "r") as f:
            self.assertEqual(list(C.h5_datasets(f)), ["/renamed/y"])
            self.assertSameArray(f["/renamed/y"][()], self.want["/g/sub/x"])

    def test_attrs_to_h5(self):
        out = self.fresh("attrs.h5")
        C.copy(self.src + ":/g/sub/x", out)
        with h5py.File(out, "r") as f:
            C.attrs_equal(self, f["/g/sub/x"].attrs, ATTRS, "h5")

    def test_attrs_to_zarr(self):
        out = self.fresh("attrs.zarr")
        C.copy(self.src + ":/g/sub/x", out)
        self.assertTrue(os.path.exists(os.path.join(out, ".zattrs")),
                        ".zattrs written")
        C.attrs_equal(self, zarr.open(out, mode="r").attrs.asdict(), ATTRS,
                      "zarr")

    def test_group_attrs_whole_file(self):
        """Group attributes travel with a whole-file copy too."""
        want = {"title": "group g", "version": 3}
        out = self.fresh("gattrs.h5")
        C.copy(self.src, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            C.attrs_equal(self, f["/g"].attrs, want, "h5 /g")
        out = self.fresh("gattrs.zarr")
        C.copy(self.src, out)
        C.attrs_equal(self, zarr.open_group(out, "r")["g"].attrs.asdict(),
                      want, "zarr /g")

    def test_attrs_more_kinds(self):
        """bool, fixed-length string, string array, float32 scalar and a
        2-D array: HDF5 and Zarr (nested JSON lists) both hold them."""
        for ext in ("h5", "zarr"):
            with self.subTest(to=ext):
                out = self.fresh("more." + ext)
                C.copy(self.src + ":/g/more", out)
                if ext == "h5":
                    with h5py.File(out, "r") as f:
                        got = dict(f["/g/more"].attrs)
                else:
                    got = zarr.open(out, "r").attrs.asdict()
                C.attrs_equal(self, got, ATTRS_MORE, ext)

    def test_whole_file_to_h5(self):
        out = self.fresh("all.h5")
        C.copy(self.src, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            got = C.h5_datasets(f)
            self.assertEqual(sorted(got), sorted(self.want))
            for name, want in sorted(self.want.items()):
                with self.subTest(name=name):
                    self.assertSameArray(got[name][()], want, name)
            C.attrs_equal(self, f["/g/sub/x"].attrs, ATTRS, "/g/sub/x")

    def test_whole_file_to_zarr(self):
        out = self.fresh("all.zarr")
        C.copy(self.src, out)
        root = zarr.open(out, mode="r")
        self.assertIsInstance(root, zarr.Group)
        got = C.zarr_arrays(root)
        self.assertEqual(sorted(got), sorted(self.want))
        for name, want in sorted(self.want.items()):
            with self.subTest(name=name):
                self.assertSameArray(got[name][...], want, name)
        C.attrs_equal(self, got["/g/sub/x"].attrs.asdict(), ATTRS,
                      "/g/sub/x")

    def test_external_links(self):
        """A dataset reached through an external link lives in another
        file: its chunks and its contiguous bytes are read from there, not
        from the same offsets of the linking file (which here holds other
        data at them)."""
        src, top = self.fresh("ext_src.h5"), self.fresh("ext_top.h5")
        want = {"chunked": np.arange(10.0),
                "contiguous": np.arange(10.0) + 100,
                "gzip": np.arange(1000.0)}
        with h5py.File(src, "w") as f:
            f.create_dataset("chunked", data=want["chunked"], chunks=(4,))
            f.create_dataset("contiguous", data=want["contiguous"])
            f.create_dataset("gzip", data=want["gzip"], chunks=(100,),
                             compression="gzip")
        with h5py.File(top, "w") as f:
            f.create_dataset("pad", data=np.full(20000, 7.0))
            for k in want:
                f[k] = h5py.ExternalLink(os.path.basename(src), "/" + k)
        for k, w in want.items():
            with self.subTest(name=k):
                out = self.fresh("ext_%s.h5" % k)
                C.copy("%s:/%s" % (top, k), out, "--compress", "none")
                with h5py.File(out, "r") as f:
                    self.assertSameArray(f["/" + k][()], w, k)

    def test_whole_store_skips_unsupported_arrays_aloud(self):
        """A whole-store copy, info or verify leaves out the arrays chunkctl
        cannot hold (float16, complex, strings, a null dataspace), each
        with a warning naming it, and handles the rest; a store with
        nothing readable is an error naming the first."""
        h5 = self.fresh("mixed.h5")
        with h5py.File(h5, "w") as f:
            f["ok"] = np.arange(3.0)
            f["ok2"] = np.arange(4, dtype="i2")
            f["f2"] = np.ones(3, "f2")
            f["c8"] = np.ones(3, "c8")
            f["s"] = np.array([b"ab"] * 3)
            f["nul"] = h5py.Empty("f8")
            f["soft"] = h5py.SoftLink("/ok")
        zs = self.fresh("mixed.zarr")
        g = zarr.open_group(zs, "w")
        g["ok"] = np.arange(3.0)
        g["ok2"] = np.arange(4, dtype="i2")
        g["c"] = np.ones(3, "c8")
        g["h"] = np.ones(3, "f2")
        g["u"] = np.array(["ab", "cd"], dtype="U2")
        skipped = {h5: ["/c8", "/f2", "/nul", "/s"], zs: ["/c", "/h", "/u"]}
        for src, names in skipped.items():
            for out in (self.fresh("mixed_out.h5"), self.fresh("mixed_out.zarr")):
                with self.subTest(src=src, out=out):
                    p = C.run("copy", src, out, "--compress", "zstd")
                    lines = p.stderr.strip().splitlines()
                    self.assertEqual(len(lines), len(names), p.stderr)
                    for line, name in zip(lines, names):
                        self.assertTrue(line.startswith("chunkctl: warning: "),
                                        line)
                        self.assertIn(name, line)
                        self.assertTrue(line.endswith("; skipped"), line)
                    if out.endswith(".zarr"):
                        got = C.zarr_arrays(zarr.open(out, "r"))
                    else:
                        with h5py.File(out, "r") as f:
                            got = {k: v[()] for k, v in
                                   C.h5_datasets(f).items()}
                    self.assertEqual(sorted(got), ["/ok", "/ok2"])
                    self.assertSameArray(np.asarray(got["/ok"][...]),
                                         np.arange(3.0))
                    self.assertSameArray(np.asarray(got["/ok2"][...]),
                                         np.arange(4, dtype="i2"))
            with self.subTest(src=src, cmd="info"):
                p = C.run("info", "--json", src)
                self.assertEqual(len(p.stderr.strip().splitlines()),
                                 len(names))
        only = self.fresh("only_f2.h5")
        with h5py.File(only, "w") as f:
            f["f2"] = np.ones(3, "f2")
        p = C.run("copy", only, self.fresh("only_out.zarr"), expect=None)
        self.assertCleanError(p, 1, "/f2", "2-byte float")

    def test_lzf_fails_cleanly(self):
        """LZF (filter 32000) is not required; if chunkctl lacks it, it
        must say so: exit 1, one line naming the filter or the dataset,
        and no output left behind."""
        for ext in ("h5", "zarr"):
            with self.subTest(to=ext):
                out = self.fresh("lzf_out." + ext)
                p = C.copy(self.lzf + ":/z", out, expect=None)
                if p.returncode == 0:      # supported after all: must be right
                    with h5py.File(self.lzf, "r") as f:
                        want = f["/z"][()]
                    if ext == "h5":
                        with h5py.File(out, "r") as f:
                            self.assertSameArray(f["/z"][()], want)
                    else:
                        self.assertSameArray(zarr.open(out, "r")[...], want)
                    continue
                # 'lzf' and '/z' are in the path given: the cause must be
                # named, with the chunk it stopped at
                self.assertCleanError(
                    p, 1, ("filter 'lzf'", "filter 32000"),
                    ("not registered", "not available", "not supported"),
                    "chunk (")
                self.assertFalse(os.path.exists(out),
                                 "no partial output at %s" % out)


if __name__ == "__main__":
    C.main()
