"""chunkctl info --json on stores written by h5py and zarr-python: shape,
dtype, chunks, chunk counts (stored ones too, for partly written arrays),
byte counts, compressor names, layout, order, byte order, fill value.
The expected values come from h5py / zarr-python / NumPy, never from
chunkctl."""

import json
import math
import os

import _common as C
from _common import np, h5py, zarr
from numcodecs import Blosc, Zstd, GZip, Zlib

SHAPE = (37, 53)
CHUNKS = (10, 16)


def nchunks(shape, chunks):
    return math.prod(math.ceil(s / c) for s, c in zip(shape, chunks))


def deflate4_names(shuffle):
    """How chunkctl spells HDF5 deflate level 4 (+ shuffle): as --compress
    takes it."""
    return ("gzip:4:shuffle",) if shuffle else ("gzip:4",)


class Info(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(1)
        cls.h5 = cls.path("info.h5")
        with h5py.File(cls.h5, "w") as f:
            f.create_dataset("a", data=rng.random(SHAPE), chunks=CHUNKS,
                             compression="gzip", compression_opts=4,
                             shuffle=True)
            f.create_dataset("be", data=rng.random(SHAPE).astype(">f8"),
                             chunks=CHUNKS)
            d = f.create_dataset("partial", shape=(40, 50), chunks=(16, 16),
                                 dtype="<i4", fillvalue=7)
            d[0:16, 0:16] = 1           # chunk (0, 0)
            d[16:32, 32:48] = 2         # chunk (1, 2)
            d[32:40, 48:50] = 3         # chunk (2, 3), an edge chunk
            f.create_dataset("contig", data=np.arange(600, dtype="<u2")
                             .reshape(20, 30))
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            dsid = h5py.h5d.create(f.id, b"compact",
                                   h5py.h5t.py_create(np.dtype("<i2")),
                                   h5py.h5s.create_simple((6, 7)), dcpl=dcpl)
            dsid.write(h5py.h5s.ALL, h5py.h5s.ALL,
                       np.arange(42, dtype="<i2").reshape(6, 7))
            f.create_dataset("g/sub/x", data=np.array([True, False] * 3),
                             chunks=(4,))
        cls.zs = cls.path("info.zarr")
        root = zarr.open_group(cls.zs, mode="w")
        for name, dt, kw in (
                ("a", "<f8", dict(compressor=Blosc("lz4", 5, 1))),
                ("bs", "<f4", dict(compressor=Blosc("zstd", 3, 2))),
                ("z", "<i2", dict(compressor=Zstd(level=3))),
                ("n", "<u4", dict(compressor=None)),
                ("be", ">f8", dict(compressor=None)),
                ("gz", "<i8", dict(compressor=GZip(level=4))),
                ("zl", "|u1", dict(compressor=Zlib(level=4))),
                ("F", "<f4", dict(order="F")),
                ("g/sub/x", "|b1", dict())):
            z = root.create_dataset(name, shape=SHAPE, chunks=CHUNKS,
                                    dtype=dt, **kw)
            z[...] = C.make_data(dt, SHAPE, 3)
        z = root.create_dataset("partial", shape=(40, 50), chunks=(16, 16),
                                dtype="<i4", fill_value=7)
        z[0:16, 0:16] = 1
        z[16:32, 32:48] = 2
        z[32:40, 48:50] = 3

    def info_arrays(self, target):
        j = C.info(target)
        for key in ("path", "format", "arrays"):
            self.assertIn(key, j)
        return j, {a["name"]: a for a in j["arrays"]}

    def check_common(self, a, shape, dtype):
        """Fields whose expected value follows from shape, dtype, chunks."""
        dt = np.dtype(dtype)
        self.assertEqual(a["shape"], list(shape), "shape")
        self.assertEqual(a["dtype"], C.native(dt).name, "dtype")
        # Contiguous and compact HDF5 datasets have no chunks of their own
        # (chunks and nchunks null, see test_info_attrs.py).
        if a["layout"] == "chunked":
            self.assertEqual(len(a["chunks"]), len(shape), "chunks rank")
            self.assertEqual(a["nchunks"], nchunks(shape, a["chunks"]),
                             "nchunks")
        else:
            self.assertIsNone(a["chunks"], "chunks")
            self.assertIsNone(a["nchunks"], "nchunks")
        self.assertEqual(a["raw_bytes"], math.prod(shape) * dt.itemsize,
                         "raw_bytes")
        if dt.itemsize > 1:
            self.assertEqual(a["byteorder"],
                             "big" if dt.byteorder == ">" else "little",
                             "byteorder")
        if a["ratio"] is not None:
            self.assertGreater(a["stored_bytes"], 0)
            self.assertAlmostEqual(a["ratio"],
                                   a["raw_bytes"] / a["stored_bytes"],
                                   delta=0.01 * a["ratio"] + 0.01)

    # -- HDF5 -------------------------------------------------------------

    def test_h5_file(self):
        j, arrays = self.info_arrays(self.h5)
        self.assertEqual(j["format"], "hdf5")
        self.assertEqual(os.path.basename(j["path"].rstrip("/")),
                         "info.h5")
        self.assertEqual(sorted(arrays), ["/a", "/be", "/compact", "/contig",
                                          "/g/sub/x", "/partial"])
        with h5py.File(self.h5, "r") as f:
            for name, a in sorted(arrays.items()):
                with self.subTest(name=name):
                    d = f[name]
                    self.check_common(a, d.shape, d.dtype)
                    self.assertEqual(a["order"], "C")
                    self.assertEqual(a["stored_bytes"],
                                     d.id.get_storage_size(), "stored_bytes")
                    if d.chunks:
                        self.assertEqual(a["layout"], "chunked")
                        self.assertEqual(a["chunks"], list(d.chunks))
                        self.assertEqual(a["chunks_stored"],
                                         d.id.get_num_chunks(),
                                         "chunks_stored")

    def test_h5_fields(self):
        _, arrays = self.info_arrays(self.h5)
        a = arrays["/a"]
        self.assertIn(a["compressor"], deflate4_names(True))
        self.assertEqual(a["nchunks"], 16)
        self.assertEqual(a["chunks_stored"], 16)
        self.assertLess(a["stored_bytes"], a["raw_bytes"])
        self.assertEqual(arrays["/be"]["byteorder"], "big")
        self.assertEqual(arrays["/be"]["dtype"], "float64")
        self.assertEqual(arrays["/be"]["compressor"], "none")
        p = arrays["/partial"]
        self.assertEqual((p["nchunks"], p["chunks_stored"]), (12, 3))
        self.assertEqual(p["fill_value"], 7)
        self.assertEqual(p["dtype"], "int32")
        self.assertEqual(arrays["/contig"]["layout"], "contiguous")
        self.assertEqual(arrays["/contig"]["dtype"], "uint16")
        self.assertEqual(arrays["/compact"]["layout"], "compact")
        self.assertEqual(arrays["/compact"]["shape"], [6, 7])
        self.assertEqual(arrays["/g/sub/x"]["dtype"], "bool")
        self.assertEqual(arrays["/g/sub/x"]["chunks"], [4])
        self.assertEqual(arrays["/g/sub/x"]["nchunks"], 2)

    def test_h5_one_dataset(self):
        _, arrays = self.info_arrays(self.h5 + ":/g/sub/x")
        self.assertEqual(list(arrays), ["/g/sub/x"])

    # -- Zarr -------------------------------------------------------------

    def test_zarr_store(self):
        j, arrays = self.info_arrays(self.zs)
        self.assertEqual(j["format"], "zarr")
        self.assertEqual(sorted(arrays),
                         ["/F", "/a", "/be", "/bs", "/g/sub/x", "/gz", "/n",
                          "/partial", "/z", "/zl"])
        root = zarr.open_group(self.zs, "r")
        for name, a in sorted(arrays.items()):
            with self.subTest(name=name):
                z = root[name.lstrip("/")]
                self.check_common(a, z.shape, z.dtype)
                self.assertEqual(a["chunks"], list(z.chunks))
                self.assertEqual(a["layout"], "chunked")
                self.assertEqual(a["order"], z.order)
                folder = os.path.join(self.zs, name.lstrip("/"))
                files = C.chunk_files(folder)
                self.assertEqual(a["chunks_stored"], len(files),
                                 "chunks_stored")
                self.assertEqual(a["stored_bytes"], sum(
                    os.path.getsize(os.path.join(folder, k)) for k in files),
                    "stored_bytes (chunk files only)")

    def test_zarr_fields(self):
        _, arrays = self.info_arrays(self.zs)
        want = {"/a": "blosc:lz4:5:shuffle", "/bs": "blosc:zstd:3:bitshuffle",
                "/z": "zstd:3", "/n": "none", "/be": "none",
                "/gz": "gzip:4", "/zl": "zlib:4"}
        for name, comp in want.items():
            with self.subTest(name=name):
                self.assertEqual(arrays[name]["compressor"], comp)
        self.assertEqual(arrays["/be"]["byteorder"], "big")
        self.assertEqual(arrays["/be"]["dtype"], "float64")
        self.assertEqual(arrays["/F"]["order"], "F")
        self.assertEqual(arrays["/a"]["order"], "C")
        self.assertEqual(arrays["/a"]["nchunks"], 16)
        self.assertEqual(arrays["/g/sub/x"]["dtype"], "bool")
        p = arrays["/partial"]
        self.assertEqual((p["nchunks"], p["chunks_stored"]), (12, 3))
        self.assertEqual(p["fill_value"], 7)
        self.assertEqual(arrays["/a"]["fill_value"], 0)

    def test_zarr_one_array(self):
        _, arrays = self.info_arrays(self.zs + ":/g/sub/x")
        self.assertEqual(list(arrays), ["/g/sub/x"])

    # -- chunkctl's own outputs: the spec comes back as written -----------

    def test_compressor_round_trip(self):
        for spec in ("none", "zstd:3", "blosc:lz4:5:shuffle",
                     "blosc:zstd:3:bitshuffle", "blosc:blosclz:5:noshuffle"):
            for ext in ("h5", "zarr"):
                with self.subTest(compress=spec, to=ext):
                    out = self.fresh("rt_%s.%s" % (spec.replace(":", "_"),
                                                   ext))
                    C.gen(out + (":/x" if ext == "h5" else ""), "--shape",
                          "30,40", "--chunks", "16,16", "--compress", spec)
                    _, arrays = self.info_arrays(out)
                    self.assertEqual(len(arrays), 1)
                    a = list(arrays.values())[0]
                    self.assertEqual(a["compressor"], spec)
                    self.assertEqual(a["nchunks"], 6)
                    self.assertEqual(a["chunks_stored"], 6)
                    self.assertEqual(a["chunks"], [16, 16])

    def test_plain_text(self):
        p = C.run("info", self.h5)
        self.assertIn("/partial", p.stdout)

    # -- chunks, nchunks, chunks_stored: JSON as the table (audit B #3) ----

    def test_zero_d_zarr_has_one_chunk(self):
        """A 0-d Zarr array (v2 by zarr-python, v3 as the spec lays it out:
        chunk_shape [] and the one chunk key "c") is chunked: chunks [],
        nchunks 1, as its one chunk file and the table say."""
        v2 = self.fresh("zero_d_v2.zarr")
        z = zarr.open(v2, mode="w", shape=(), dtype="<f8")
        z[()] = 2.5
        self.assertEqual(z.nchunks, 1)
        v3 = self.fresh("zero_d_v3.zarr")
        os.makedirs(v3)
        with open(os.path.join(v3, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "array", "shape": [],
                       "data_type": "float64",
                       "chunk_grid": {"name": "regular", "configuration":
                                      {"chunk_shape": []}},
                       "chunk_key_encoding": {"name": "default"},
                       "fill_value": 0.0,
                       "codecs": [{"name": "bytes",
                                   "configuration": {"endian": "little"}}]},
                      f)
        with open(os.path.join(v3, "c"), "wb") as f:
            f.write(np.float64(3.5).tobytes())
        for store in (v2, v3):
            with self.subTest(store=os.path.basename(store)):
                _, arrays = self.info_arrays(store)
                a = arrays["/"]
                self.assertEqual(a["shape"], [])
                self.assertEqual(a["layout"], "chunked")
                self.assertEqual(a["chunks"], [])
                self.assertEqual(a["nchunks"], 1)
                self.assertEqual(a["chunks_stored"], 1)
                row = C.run("info", store).stdout.splitlines()[2].split()
                self.assertEqual(row[:5], ["/", "()", "float64", "()", "1"],
                                 "table row")

    def test_chunks_stored_null_without_file_chunks(self):
        """h5py's get_num_chunks() refuses a contiguous, compact or scalar
        dataset: the file keeps no chunks, and chunks_stored is null like
        chunks and nchunks (not -1, which only a sharded array has)."""
        h5 = self.fresh("unchunked.h5")
        with h5py.File(h5, "w") as f:
            f.create_dataset("contig", data=np.arange(6.0))
            f.create_dataset("scalar", data=np.float64(1.5))
            f.create_dataset("chunked", data=np.arange(6.0), chunks=(4,))
        _, arrays = self.info_arrays(h5)
        with h5py.File(h5, "r") as f:
            for name in ("/contig", "/scalar"):
                with self.subTest(name=name):
                    self.assertIsNone(f[name].chunks)
                    with self.assertRaises(Exception):
                        f[name].id.get_num_chunks()
                    self.assertIsNone(arrays[name]["chunks"])
                    self.assertIsNone(arrays[name]["nchunks"])
                    self.assertIsNone(arrays[name]["chunks_stored"])
            self.assertEqual(arrays["/chunked"]["chunks_stored"],
                             f["chunked"].id.get_num_chunks())

    # -- errors -------------------------------------------------------------

    def test_errors(self):
        missing = self.path("missing.h5")
        p = C.run("info", "--json", missing, expect=None)
        # the path, and the cause: words the path itself does not hold
        self.assertCleanError(p, 1, "missing.h5", "no such file")
        junk = self.path("junk.h5")
        with open(junk, "w") as f:
            f.write("not hdf5\n")
        p = C.run("info", "--json", junk, expect=None)
        self.assertCleanError(p, 1, "junk.h5", "not an HDF5 file")
        for target in (self.h5 + ":/nope", self.zs + ":/nope"):
            with self.subTest(target=target):
                p = C.run("info", "--json", target, expect=None)
                self.assertCleanError(p, 2, "no array '/nope'")
        p = C.run("info", expect=None)
        self.assertCleanError(p, 2, "expected one PATH")


if __name__ == "__main__":
    C.main()
