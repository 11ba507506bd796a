"""chunkctl writes, h5py and zarr-python read: copies with each --compress
into HDF5 and Zarr for every dtype, `gen` outputs, --dtype conversion,
--chunks rechunking, and refusing to overwrite without --force.  HDF5 zstd
and blosc outputs are read through the filter plugins (HDF5_PLUGIN_PATH is
set by _common before h5py loads)."""

import os

import _common as C
from _common import np, h5py, zarr
from numcodecs import Blosc, Zstd, GZip

SHAPE = (45, 67)   # 3 x 5 chunks of 16 x 16, the last row and column partial
CHUNKS = (16, 16)
H5_DEFLATE, H5_SHUFFLE = 1, 2
H5_BLOSC, H5_ZSTD = 32001, 32015
BLOSC_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
BLOSC_COMPCODE = {"blosclz": 0, "lz4": 1, "lz4hc": 2, "zlib": 4, "zstd": 5}

# --compress SPEC -> (HDF5 filter ids in pipeline order, Zarr compressor).
SPECS = {
    "none": ([], None),
    "zstd:3": ([H5_ZSTD], Zstd(level=3)),
    "gzip:4": ([H5_DEFLATE], GZip(level=4)),
    "gzip:4:shuffle": ([H5_SHUFFLE, H5_DEFLATE], GZip(level=4)),
    "zstd:1:shuffle": ([H5_SHUFFLE, H5_ZSTD], Zstd(level=1)),
    "blosc:lz4:5:shuffle": ([H5_BLOSC], Blosc("lz4", 5, 1)),
    "blosc:zstd:3:bitshuffle": ([H5_BLOSC], Blosc("zstd", 3, 2)),
    "blosc:blosclz:5:noshuffle": ([H5_BLOSC], Blosc("blosclz", 5, 0)),
}
# ':shuffle' after a non-blosc codec is HDF5's shuffle filter, and in a Zarr
# output a numcodecs Shuffle filter of the element size: nothing refuses.
ZARR_REFUSES = set()


def spec_tag(spec):
    return spec.replace(":", "_")


class Write(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.src = cls.path("src.h5")
        cls.want = {}          # dataset name -> numpy array as written
        cls.src_chunks = {}    # dataset name -> chunk shape in src.h5
        with h5py.File(cls.src, "w") as f:
            for i, dt in enumerate(C.ALL_DTYPES):
                name = "/d/" + C.dtype_tag(dt)
                a = C.make_data(dt, SHAPE, 400 + i)
                f.create_dataset(name, data=a, chunks=CHUNKS)
                cls.want[name] = a
                cls.src_chunks[name] = CHUNKS
            a = C.make_data("<f8", (5, 13, 7), 499)
            f.create_dataset("/d3", data=a, chunks=(2, 4, 3))
            cls.want["/d3"] = a
            cls.src_chunks["/d3"] = (2, 4, 3)
            # Values every dtype holds exactly, for --dtype to each type.
            rng = np.random.default_rng(498)
            a = rng.integers(0, 128, SHAPE).astype(">i2")
            f.create_dataset("/small", data=a, chunks=CHUNKS)
            cls.want["/small"] = a
            cls.src_chunks["/small"] = CHUNKS

    # -- copies with each --compress -----------------------------------

    def check_h5_filters(self, d, spec):
        ids = C.h5_filter_ids(d)
        want = SPECS[spec][0]
        if d.dtype.itemsize == 1 and H5_SHUFFLE in want:
            # Shuffling 1-byte elements changes nothing: either is fine.
            self.assertIn(ids, (want, [i for i in want if i != H5_SHUFFLE]),
                          "HDF5 filter pipeline")
        else:
            self.assertEqual(ids, want, "HDF5 filter pipeline")
        if spec.startswith("gzip"):
            self.assertEqual(d.compression_opts, 4, "deflate level")
        if spec.startswith("blosc"):
            # PyTables blosc cd_values: [filter version, format version,
            # typesize, chunk bytes, clevel, shuffle, compressor code]
            cd = d.id.get_create_plist().get_filter(0)[2]
            _, cname, level, shuffle = spec.split(":")
            self.assertGreaterEqual(len(cd), 7, "blosc cd_values %r" % (cd,))
            self.assertEqual(cd[4], int(level), "blosc clevel in cd_values")
            self.assertEqual(cd[5], BLOSC_SHUFFLE[shuffle],
                             "blosc shuffle in cd_values")
            self.assertEqual(cd[6], BLOSC_COMPCODE[cname],
                             "blosc compressor code in cd_values")

    def check_zarr_codecs(self, z, spec):
        self.assertEqual(z.compressor, SPECS[spec][1], "zarr compressor")
        if spec.endswith(":shuffle") and not spec.startswith("blosc"):
            # zstd/gzip :shuffle is a numcodecs Shuffle of the element size
            self.assertEqual([f.get_config() for f in z.filters],
                             [{"id": "shuffle",
                               "elementsize": z.dtype.itemsize}],
                             "zarr filters")
        else:
            self.assertIsNone(z.filters, "zarr filters")

    def check_zarr_refuses(self, p, out):
        self.assertCleanError(p, 1, "shuffle")
        self.assertFalse(os.path.exists(out), "no output at %s" % out)

    def test_copy_each_compress_to_h5(self):
        for spec in SPECS:
            with self.subTest(compress=spec):
                out = self.fresh("c_%s.h5" % spec_tag(spec))
                C.copy(self.src, out, "--compress", spec)
                with h5py.File(out, "r") as f:
                    got = C.h5_datasets(f)
                    self.assertEqual(sorted(got), sorted(self.want))
                    for name, want in sorted(self.want.items()):
                        with self.subTest(compress=spec, name=name):
                            self.assertSameArray(got[name][()], want,
                                                 "%s %s" % (spec, name))
                            self.assertEqual(got[name].chunks,
                                             self.src_chunks[name],
                                             "chunks kept")
                            self.check_h5_filters(got[name], spec)

    def test_copy_each_compress_to_zarr(self):
        for spec in SPECS:
            with self.subTest(compress=spec):
                out = self.fresh("c_%s.zarr" % spec_tag(spec))
                if spec in ZARR_REFUSES:
                    self.check_zarr_refuses(C.copy(
                        self.src, out, "--compress", spec, expect=None), out)
                    continue
                C.copy(self.src, out, "--compress", spec)
                got = C.zarr_arrays(zarr.open_group(out, mode="r"))
                self.assertEqual(sorted(got), sorted(self.want))
                for name, want in sorted(self.want.items()):
                    with self.subTest(compress=spec, name=name):
                        self.assertSameArray(got[name][...], want,
                                             "%s %s" % (spec, name))
                        self.check_zarr_codecs(got[name], spec)

    def test_zarr_to_h5_round_trip(self):
        """h5 -> zarr (blosc) -> h5 (gzip) gives the original back."""
        mid = self.fresh("rt.zarr")
        out = self.fresh("rt.h5")
        C.copy(self.src, mid, "--compress", "blosc:zstd:3:bitshuffle")
        C.copy(mid, out, "--compress", "gzip:4:shuffle")
        with h5py.File(out, "r") as f:
            got = C.h5_datasets(f)
            self.assertEqual(sorted(got), sorted(self.want))
            for name, want in sorted(self.want.items()):
                with self.subTest(name=name):
                    self.assertSameArray(got[name][()], want, name)

    # -- --dtype and --chunks ---------------------------------------------

    def test_dtype_float32(self):
        for src_dt in ("float64", ">f8", "int32", "int64", "uint64",
                       ">i2", "bool", "float32"):
            name = "/d/" + C.dtype_tag(src_dt)
            with np.errstate(over="ignore"):     # 1.8e308 -> inf, on purpose
                want = self.want[name].astype(np.float32)
            for ext in ("h5", "zarr"):
                with self.subTest(src=src_dt, to=ext):
                    out = self.fresh("f32_%s.%s" % (C.dtype_tag(src_dt), ext))
                    C.copy(self.src + ":" + name, out, "--dtype", "float32",
                           "--compress", "none")
                    if ext == "h5":
                        with h5py.File(out, "r") as f:
                            got = f[name][()]
                    else:
                        got = zarr.open(out, "r")[...]
                    self.assertSameArray(got, want,
                                         "%s -> float32" % src_dt)

    def test_dtype_every_target(self):
        """--dtype T for every T, on values 0..127 that each type holds
        exactly (bool: nonzero is True), to both formats."""
        for dt in C.NATIVE_DTYPES:
            want = self.want["/small"].astype(dt)
            for ext in ("h5", "zarr"):
                with self.subTest(dtype=dt, to=ext):
                    out = self.fresh("to_%s.%s" % (dt, ext))
                    C.copy(self.src + ":/small", out, "--dtype", dt,
                           "--compress", "blosc:lz4:5:shuffle")
                    if ext == "h5":
                        with h5py.File(out, "r") as f:
                            got = f["/small"][()]
                    else:
                        got = zarr.open(out, "r")[...]
                    self.assertSameArray(got, want, "int16 -> " + dt)

    def test_rechunk(self):
        for new in ((7, 30), (45, 1), (1, 67), (45, 67), (10, 11)):
            arg = ",".join(map(str, new))
            for ext in ("h5", "zarr"):
                with self.subTest(chunks=new, to=ext):
                    out = self.fresh("rc_%s.%s" % (arg.replace(",", "x"),
                                                   ext))
                    C.copy(self.src + ":/d/f8_le", out, "--chunks", arg,
                           "--compress", "gzip:1")
                    if ext == "h5":
                        with h5py.File(out, "r") as f:
                            d = f["/d/f8_le"]
                            self.assertEqual(d.chunks, new)
                            got = d[()]
                    else:
                        z = zarr.open(out, "r")
                        self.assertEqual(z.chunks, new)
                        got = z[...]
                    self.assertSameArray(got, self.want["/d/f8_le"])

    def test_rechunk_zarr_to_h5(self):
        mid = self.fresh("rc_mid.zarr")
        out = self.fresh("rc_out.h5")
        C.copy(self.src + ":/d/i2_be", mid, "--chunks", "9,13")
        C.copy(mid, out + ":/x", "--chunks", "20,64", "--compress", "gzip:4")
        with h5py.File(out, "r") as f:
            self.assertEqual(f["/x"].chunks, (20, 64))
            self.assertSameArray(f["/x"][()], self.want["/d/i2_be"])

    # -- gen outputs ------------------------------------------------------

    def test_gen_each_compress(self):
        """Same seed: every compression, both formats, the same values."""
        args = ("--shape", "120,90", "--chunks", "50,40", "--seed", "11",
                "--dist", "normal")
        ref_path = self.fresh("gen_ref.h5")
        C.gen(ref_path + ":/x", *args, "--compress", "none")
        with h5py.File(ref_path, "r") as f:
            ref = f["/x"][()]
        self.assertEqual(ref.dtype, np.float64)
        self.assertEqual(ref.shape, (120, 90))
        for spec in SPECS:
            with self.subTest(compress=spec, to="h5"):
                out = self.fresh("gen_%s.h5" % spec_tag(spec))
                C.gen(out + ":/x", *args, "--compress", spec)
                with h5py.File(out, "r") as f:
                    self.assertEqual(f["/x"].chunks, (50, 40))
                    self.check_h5_filters(f["/x"], spec)
                    self.assertSameArray(f["/x"][()], ref)
            with self.subTest(compress=spec, to="zarr"):
                out = self.fresh("gen_%s.zarr" % spec_tag(spec))
                if spec in ZARR_REFUSES:
                    self.check_zarr_refuses(C.gen(
                        out, *args, "--compress", spec, expect=None), out)
                    continue
                C.gen(out, *args, "--compress", spec)
                z = zarr.open(out, "r")
                self.assertEqual(z.chunks, (50, 40))
                self.check_zarr_codecs(z, spec)
                self.assertSameArray(z[...], ref)

    def test_gen_every_dtype(self):
        for dt in C.NATIVE_DTYPES:
            kind = np.dtype(dt).kind
            if kind == "b":
                dist = ("--dist", "integers", "--low", "0", "--high", "2")
            elif kind == "i":
                dist = ("--dist", "integers", "--low", "-100", "--high",
                        "100")
            elif kind == "u":
                dist = ("--dist", "integers", "--low", "0", "--high", "250")
            else:
                dist = ("--dist", "uniform", "--low", "-5", "--high", "5")
            args = ("--shape", "60,70", "--chunks", "16,32", "--seed", "5",
                    "--dtype", dt, "--compress", "blosc:lz4:5:shuffle") + dist
            with self.subTest(dtype=dt):
                h5 = self.fresh("gd_%s.h5" % dt)
                zs = self.fresh("gd_%s.zarr" % dt)
                C.gen(h5 + ":/x", *args)
                C.gen(zs, *args)
                with h5py.File(h5, "r") as f:
                    a = f["/x"][()]
                b = zarr.open(zs, "r")[...]
                self.assertEqual(C.native(a.dtype), np.dtype(dt))
                self.assertSameArray(b, a, "zarr vs h5")
                lo, hi = float(dist[-3]), float(dist[-1])
                if kind == "b":
                    self.assertTrue(a.any() and not a.all(), "both values")
                else:
                    self.assertTrue(a.min() >= lo and a.max() < hi,
                                    "range [%g, %g): %r..%r" %
                                    (lo, hi, a.min(), a.max()))
                    self.assertGreater(len(np.unique(a)), 50,
                                       "values vary")

    # -- overwrite ----------------------------------------------------------

    def test_no_overwrite_without_force(self):
        for ext in ("h5", "zarr"):
            with self.subTest(to=ext):
                out = self.fresh("keep." + ext)
                C.copy(self.src + ":/d/i4_le", out)
                before = C.info(out)
                p = C.copy(self.src + ":/d/f8_le", out, expect=None)
                self.assertCleanError(p, 1, ("exist", "--force"))
                self.assertEqual(C.info(out)["arrays"][0]["dtype"],
                                 before["arrays"][0]["dtype"],
                                 "target left alone")
                C.copy(self.src + ":/d/f8_le", out, "--force")
                if ext == "h5":
                    with h5py.File(out, "r") as f:
                        self.assertEqual(list(C.h5_datasets(f)),
                                         ["/d/f8_le"])
                        got = f["/d/f8_le"][()]
                else:
                    got = zarr.open(out, "r")[...]
                self.assertSameArray(got, self.want["/d/f8_le"])


if __name__ == "__main__":
    C.main()
