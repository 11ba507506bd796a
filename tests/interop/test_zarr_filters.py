"""Zarr v2 filters and the lz4, lzma and bz2 compressors against
zarr-python 2.13 / numcodecs 0.11 (Debian), both directions.

zarr-python writes arrays with each numcodecs filter and compressor (and
combinations); chunkctl copies them to HDF5 (--compress none), which h5py
reads and compares bit for bit with what zarr-python itself reads, and
reduces them.  chunkctl writes the same with --filters / --compress, and
zarr-python reads those back identically and sees the filter configs
numcodecs would have written.  HDF5 shuffle+gzip keeps its shuffle as a
numcodecs Shuffle filter and gets it back as HDF5's shuffle filter.  Bad
input (unknown ids, configs out of range, damaged chunks) fails with one
line, exit 1, and writes nothing."""

import json
import os

import _common as C
from _common import np, h5py, zarr
import numcodecs
from numcodecs import (Delta, Shuffle, FixedScaleOffset, Quantize, BitRound,
                       AsType, PackBits, Categorize, LZ4, LZMA, BZ2, Zstd,
                       GZip, Blosc)
import lzma as pylzma

SHAPE = (37, 53)   # 4 x 4 chunks of 10 x 16, the last row and column partial
CHUNKS = (10, 16)


def data(dtype, seed):
    """Finite data (the lossy filters are not defined on NaN/inf)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, SHAPE).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -10000), min(info.max, 10000)
        return rng.integers(lo, hi, SHAPE, dtype=dt)
    return (rng.standard_normal(SHAPE) * 100).astype(dt)


# name -> (dtype, filters, compressor, data maker)
CASES = {
    "delta_i4_zstd": ("<i4", [Delta(dtype="<i4")], Zstd(level=3), None),
    "delta_i8_as_i2": ("<i8", [Delta(dtype="<i8", astype="<i2")], None,
                       lambda: np.cumsum(data("<i2", 1), axis=1)
                       .astype("<i8") % 100),
    "delta_f8": ("<f8", [Delta(dtype="<f8")], None, None),
    "delta_u2_lz4": ("<u2", [Delta(dtype="<u2")], LZ4(), None),
    "shuffle_f8_lz4": ("<f8", [Shuffle(elementsize=8)], LZ4(), None),
    "shuffle_i2_blosc": ("<i2", [Shuffle(elementsize=2)],
                         Blosc(cname="zstd", clevel=3, shuffle=0), None),
    "shuffle_f4_zstd": ("<f4", [Shuffle(elementsize=4)], Zstd(level=1), None),
    "fso_f8_bz2": ("<f8", [FixedScaleOffset(offset=1000, scale=10,
                                            dtype="<f8", astype="<u2")],
                   BZ2(level=5),
                   lambda: 1000 + np.round(data("<f8", 3), 1)),
    "fso_f4_u1": ("<f4", [FixedScaleOffset(offset=0.5, scale=100,
                                           dtype="<f4", astype="|u1")],
                  None,
                  lambda: (np.random.default_rng(4).random(SHAPE) * 2)
                  .astype("<f4")),
    "quantize_f8_lzma": ("<f8", [Quantize(digits=2, dtype="<f8")], LZMA(),
                         None),
    "quantize_f4_as_f4": ("<f4", [Quantize(digits=3, dtype="<f4")],
                          Zstd(level=3), None),
    "bitround_f4": ("<f4", [BitRound(keepbits=7)], Zstd(level=3), None),
    "bitround_f8_lz4": ("<f8", [BitRound(keepbits=20)], LZ4(acceleration=5),
                        None),
    "astype_f8_f4": ("<f8", [AsType(encode_dtype="<f4", decode_dtype="<f8")],
                     None,
                     lambda: data("<f4", 6).astype("<f8")),
    "astype_i4_i2_bz2": ("<i4", [AsType(encode_dtype="<i2",
                                        decode_dtype="<i4")], BZ2(), None),
    "packbits_bool": ("|b1", [PackBits()], None, None),
    "packbits_bool_zstd": ("|b1", [PackBits()], Zstd(level=3), None),
    "delta_shuffle_gzip": ("<i4", [Delta(dtype="<i4"),
                                   Shuffle(elementsize=4)], GZip(level=4),
                           None),
    "lz4_u1": ("|u1", None, LZ4(), None),
    "lzma_i2": ("<i2", None, LZMA(preset=1), None),
    "lzma_alone": ("<f4", None, LZMA(format=pylzma.FORMAT_ALONE), None),
    "lzma_raw": ("<i4", None, LZMA(format=pylzma.FORMAT_RAW, filters=[
        {"id": pylzma.FILTER_LZMA2, "preset": 3}]), None),
    "bz2_i8": ("<i8", None, BZ2(level=9), None),
}

# chunkctl writes: name -> (dtype, --filters, --compress, the numcodecs
# filters zarr-python must see)
WRITES = {
    "delta_zstd": ("int32", "delta", "zstd:3", [Delta(dtype="<i4")]),
    "delta_astype": ("int64", "delta:int16", "none",
                     [Delta(dtype="<i8", astype="<i2")]),
    "shuffle_lz4": ("float64", "shuffle", "lz4", [Shuffle(elementsize=8)]),
    "fso_bz2": ("float64", "fixedscaleoffset:1000:10:uint16", "bz2:5",
                [FixedScaleOffset(offset=1000, scale=10, dtype="<f8",
                                  astype="<u2")]),
    "quantize_lzma": ("float64", "quantize:2", "lzma",
                      [Quantize(digits=2, dtype="<f8")]),
    "quantize_f4": ("float32", "quantize:3", "lzma:1",
                    [Quantize(digits=3, dtype="<f4")]),
    "bitround_f4": ("float32", "bitround:9", "zstd:1", [BitRound(9)]),
    "astype": ("float64", "astype:float32", "none",
               [AsType(encode_dtype="<f4", decode_dtype="<f8")]),
    "packbits": ("bool", "packbits", "none", [PackBits()]),
    "packbits_lz4": ("bool", "packbits", "lz4:3", [PackBits()]),
    "delta_shuffle_gzip": ("int16", "delta,shuffle", "gzip:4",
                           [Delta(dtype="<i2"), Shuffle(elementsize=2)]),
    "lz4_only": ("uint8", "none", "lz4:2", None),
    "bz2_only": ("int64", "none", "bz2", None),
    "lzma_only": ("float32", "none", "lzma:0", None),
}


class ZarrFilters(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.want = {}
        for i, (name, (dt, filters, comp, maker)) in enumerate(CASES.items()):
            arr = maker() if maker else data(dt, 100 + i)
            arr = np.asarray(arr).astype(dt)
            p = cls.path("in_%s.zarr" % name)
            z = zarr.open_array(p, mode="w", shape=SHAPE, chunks=CHUNKS,
                                dtype=dt, filters=filters, compressor=comp,
                                fill_value=0)
            z[...] = arr
            # what zarr-python itself reads (lossy filters applied)
            cls.want[name] = zarr.open_array(p, mode="r")[...]

    # -- zarr-python writes, chunkctl reads ------------------------------

    def test_read_every_filter_and_compressor(self):
        for name in CASES:
            with self.subTest(case=name):
                src = self.path("in_%s.zarr" % name)
                out = self.fresh("r_%s.h5" % name)
                C.copy(src, out, "--compress", "none")
                with h5py.File(out, "r") as f:
                    self.assertSameArray(f["/data"][()], self.want[name],
                                         name)

    def test_reduce_over_filtered_arrays(self):
        for name in ("delta_i4_zstd", "fso_f8_bz2", "quantize_f8_lzma",
                     "shuffle_f8_lz4", "astype_i4_i2_bz2"):
            with self.subTest(case=name):
                src = self.path("in_%s.zarr" % name)
                p = C.run("reduce", "--quiet", "sum", src)
                want = self.want[name].astype("f8").sum()
                got = float(p.stdout.split()[-1])
                self.assertTrue(np.isclose(got, want, rtol=1e-9),
                                "%s: %r vs %r" % (name, got, want))

    def test_info_shows_filters(self):
        i = C.info(self.path("in_delta_shuffle_gzip.zarr"))
        comp = json.dumps(i)
        self.assertIn("delta", comp)
        i = C.info(self.path("in_fso_f8_bz2.zarr"))
        comp = json.dumps(i)
        self.assertIn("fixedscaleoffset", comp)
        self.assertIn("bz2", comp)

    def test_zarr_to_zarr_keeps_filters(self):
        for name in ("delta_i4_zstd", "fso_f8_bz2", "packbits_bool",
                     "bitround_f4", "lzma_alone"):
            with self.subTest(case=name):
                out = self.fresh("zz_%s.zarr" % name)
                C.copy(self.path("in_%s.zarr" % name), out)
                z = zarr.open_array(out, mode="r")
                src = zarr.open_array(self.path("in_%s.zarr" % name), "r")
                self.assertEqual([f.codec_id for f in (z.filters or [])],
                                 [f.codec_id for f in (src.filters or [])])
                self.assertSameArray(z[...], self.want[name], name)

    # -- chunkctl writes, zarr-python reads ------------------------------

    def test_write_filters_and_compressors(self):
        for i, (name, (dt, filt, comp, expect)) in enumerate(WRITES.items()):
            with self.subTest(case=name):
                arr = data(dt, 300 + i)
                if name == "fso_bz2":  # inside uint16 once encoded
                    arr = 1000 + np.round(np.abs(arr), 1)
                h5 = self.fresh("w_%s.h5" % name)
                with h5py.File(h5, "w") as f:
                    f.create_dataset("x", data=arr, chunks=CHUNKS)
                out = self.fresh("w_%s.zarr" % name)
                C.copy(h5 + ":/x", out, "--filters", filt, "--compress", comp)
                z = zarr.open_array(out, mode="r")
                got_f = [f.get_config() for f in (z.filters or [])]
                want_f = [f.get_config() for f in (expect or [])]
                self.assertEqual(got_f, want_f, name)
                # what numcodecs makes of the same data with the same codecs
                ref = zarr.open_array(self.fresh("ref_%s.zarr" % name),
                                      mode="w", shape=arr.shape,
                                      chunks=CHUNKS, dtype=arr.dtype,
                                      filters=expect,
                                      compressor=z.compressor, fill_value=0)
                ref[...] = arr
                self.assertSameArray(z[...], ref[...], name)
                # and back through chunkctl into HDF5
                back = self.fresh("wb_%s.h5" % name)
                C.copy(out, back, "--compress", "none")
                with h5py.File(back, "r") as f:
                    self.assertSameArray(f["/data"][()], ref[...], name)

    def test_compressor_configs_are_numcodecs(self):
        cfg = {}
        for name in ("lz4_only", "bz2_only", "lzma_only"):
            dt, filt, comp, _ = WRITES[name]
            out = self.fresh("cfg_%s.zarr" % name)
            C.copy(self.path("in_lz4_u1.zarr"), out, "--dtype", dt,
                   "--filters", filt, "--compress", comp)
            cfg[name] = zarr.open_array(out, mode="r").compressor.get_config()
        self.assertEqual(cfg["lz4_only"], {"id": "lz4", "acceleration": 2})
        self.assertEqual(cfg["bz2_only"], {"id": "bz2", "level": 1})
        self.assertEqual(cfg["lzma_only"], {"id": "lzma", "format": 1,
                                            "check": -1, "preset": 0,
                                            "filters": None})

    # -- HDF5 shuffle <-> numcodecs Shuffle ----------------------------

    def test_h5_shuffle_gzip_to_zarr_and_back(self):
        for dt, comp in (("<f8", "gzip"), ("<i2", "gzip"), ("<f4", "zstd")):
            with self.subTest(dtype=dt, comp=comp):
                arr = data(dt, 7)
                h5 = self.fresh("sh_%s_%s.h5" % (dt[1:], comp))
                if comp == "gzip":
                    with h5py.File(h5, "w") as f:
                        f.create_dataset("x", data=arr, chunks=CHUNKS,
                                         shuffle=True, compression="gzip",
                                         compression_opts=4)
                else:
                    src = self.fresh("sh_src.zarr")
                    z = zarr.open_array(src, mode="w", shape=SHAPE,
                                        chunks=CHUNKS, dtype=dt)
                    z[...] = arr
                    C.copy(src, h5 + ":/x", "--compress", "zstd:3:shuffle")
                out = self.fresh("sh_%s_%s.zarr" % (dt[1:], comp))
                p = C.copy(h5 + ":/x", out)
                self.assertNotIn("without", p.stderr)
                z = zarr.open_array(out, mode="r")
                self.assertEqual([f.get_config() for f in z.filters],
                                 [{"id": "shuffle",
                                   "elementsize": np.dtype(dt).itemsize}])
                # HDF5's deflate is a zlib stream: numcodecs Zlib
                self.assertEqual(z.compressor.codec_id,
                                 "zlib" if comp == "gzip" else comp)
                self.assertSameArray(z[...], arr)
                back = self.fresh("sh_back_%s_%s.h5" % (dt[1:], comp))
                C.copy(out, back)
                with h5py.File(back, "r") as f:
                    d = f["/data"]
                    self.assertTrue(d.shuffle, "h5py sees the shuffle")
                    self.assertSameArray(d[()], arr)

    def test_zarr_shuffle_written_by_numcodecs_to_h5(self):
        out = self.fresh("shuf_to_h5.h5")
        C.copy(self.path("in_shuffle_f4_zstd.zarr"), out)
        with h5py.File(out, "r") as f:
            self.assertTrue(f["/data"].shuffle)
            self.assertSameArray(f["/data"][()], self.want["shuffle_f4_zstd"])

    # -- refusals ------------------------------------------------------

    def edited(self, name, src, edit):
        """A copy of zarr array src whose .zarray went through edit()."""
        import shutil
        dst = self.fresh(name)
        shutil.copytree(src, dst)
        with open(os.path.join(dst, ".zarray")) as f:
            meta = json.load(f)
        edit(meta)
        with open(os.path.join(dst, ".zarray"), "w") as f:
            json.dump(meta, f)
        return dst

    def refused(self, src, *needles, to="h5"):
        out = self.fresh("refused_out." + to)
        p = C.copy(src, out, "--compress", "none", expect=None)
        self.assertCleanError(p, 1, *needles)
        self.assertFalse(os.path.exists(out), "nothing written")

    def test_unknown_filter_id(self):
        src = self.edited("bad_id.zarr", self.path("in_delta_f8.zarr"),
                          lambda m: m["filters"][0].update(id="wavelet"))
        self.refused(src, "wavelet", "not supported", "bad_id.zarr")

    def test_unknown_compressor(self):
        src = self.edited("bad_comp.zarr", self.path("in_lz4_u1.zarr"),
                          lambda m: m.update(compressor={"id": "zfpy"}))
        self.refused(src, "zfpy", "not supported")

    def test_bad_keepbits(self):
        src = self.edited("bad_keep.zarr", self.path("in_bitround_f4.zarr"),
                          lambda m: m["filters"][0].update(keepbits=30))
        self.refused(src, "keepbits 30", "bad_keep.zarr")

    def test_bad_lzma_format(self):
        src = self.edited("bad_lzma.zarr", self.path("in_lzma_i2.zarr"),
                          lambda m: m["compressor"].update(format=7))
        self.refused(src, "lzma format 7")

    def test_quantize_of_integers(self):
        src = self.edited("bad_q.zarr", self.path("in_delta_i4_zstd.zarr"),
                          lambda m: m.update(filters=[
                              {"id": "quantize", "digits": 2,
                               "dtype": "<i4", "astype": "<i4"}]))
        self.refused(src, "quantize", "float")

    def test_categorize_of_strings(self):
        p = self.fresh("cat.zarr")
        z = zarr.open_array(p, mode="w", shape=(6,), chunks=(4,),
                            dtype="<U6",
                            filters=[Categorize(labels=["a", "bb"],
                                                dtype="<U6")])
        z[...] = np.array(["a", "bb", "a", "", "bb", "a"])
        self.refused(p, "string")

    def test_categorize_numeric_labels_read(self):
        # numcodecs itself takes only string labels; chunkctl reads the
        # numeric form (labels numbers) should a writer produce it.
        src = self.fresh("cat_num.zarr")
        os.makedirs(src)
        meta = {"zarr_format": 2, "shape": [5], "chunks": [5],
                "dtype": "<f8", "compressor": None, "fill_value": 0,
                "order": "C", "filters": [
                    {"id": "categorize", "labels": [1.5, -2.0],
                     "dtype": "<f8", "astype": "|u1"}]}
        with open(os.path.join(src, ".zarray"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(src, "0"), "wb") as f:
            f.write(bytes([1, 2, 0, 2, 1]))
        out = self.fresh("cat_num.h5")
        C.copy(src, out)
        with h5py.File(out, "r") as f:
            self.assertSameArray(f["/data"][()],
                                 np.array([1.5, -2.0, 0, -2.0, 1.5]))

    def test_lz4_size_header_too_large(self):
        import shutil
        src = self.fresh("bad_lz4.zarr")
        shutil.copytree(self.path("in_lz4_u1.zarr"), src)
        with open(os.path.join(src, "1.1"), "r+b") as f:
            f.write((1 << 30).to_bytes(4, "little"))
        self.refused(src, "1.1", "lz4 size header")
        p = C.run("verify", src, expect=None)
        self.assertEqual(p.returncode, 1)
        self.assertIn("1.1", p.stdout + p.stderr)

    def test_corrupt_chunks(self):
        import shutil
        for name in ("bz2_i8", "lzma_i2", "delta_u2_lz4", "packbits_bool"):
            with self.subTest(case=name):
                src = self.fresh("corrupt_%s.zarr" % name)
                shutil.copytree(self.path("in_%s.zarr" % name), src)
                key = os.path.join(src, "2.3")
                with open(key, "rb") as f:
                    raw = f.read()
                # packbits unpacked: the padding header byte is checked
                bad = raw[:len(raw) // 2] if name != "packbits_bool" else \
                    bytes([7]) + raw[1:]
                with open(key, "wb") as f:
                    f.write(bad)
                self.refused(src, "2.3")
                p = C.run("verify", src, expect=None)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn("2.3", p.stdout + p.stderr)

    def test_hdf5_output_refuses_zarr_codecs(self):
        for comp in ("lz4", "lzma", "bz2"):
            with self.subTest(comp=comp):
                out = self.fresh("lz.h5")
                p = C.copy(self.path("in_lz4_u1.zarr"), out, "--compress",
                           comp, expect=None)
                # a usage error: the option asks HDF5 for what it lacks
                self.assertCleanError(p, 2, comp, "zarr")
                self.assertFalse(os.path.exists(out))
        out = self.fresh("delta.h5")
        p = C.copy(self.path("in_lz4_u1.zarr"), out, "--filters", "delta",
                   "--compress", "zstd", expect=None)
        self.assertCleanError(p, 2, "delta")
        self.assertFalse(os.path.exists(out))

    def test_bad_filters_option(self):
        out = self.fresh("opt.zarr")
        p = C.copy(self.path("in_lz4_u1.zarr"), out, "--filters", "wavelet",
                   expect=None)
        self.assertCleanError(p, 2, "--filters")
        p = C.copy(self.path("in_delta_f8.zarr"), out, "--filters",
                   "bitround:60", expect=None)
        self.assertCleanError(p, 1, "keepbits 60")
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    numcodecs.blosc.use_threads = False
    C.main()
