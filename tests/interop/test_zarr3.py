"""Zarr v3 both ways, against two implementations that know nothing of
chunkctl: zarrita 0.7.5 under Node (tests/interop/node/zarrita_tool.mjs)
and zarr3_spec.py (a writer and reader built from the v3 spec with NumPy,
numcodecs, python3-zstandard and python3-crc32c).

- V3Oracles: the spec writer's stores read back by zarrita and by the spec
  reader (the two oracles agree before chunkctl is asked anything).
- V3Read: spec- and zarrita-written stores (every dtype, both endians,
  transpose, gzip, zstd with and without checksum, blosc, crc32c,
  sharding with the index at the start and at the end, empty inner
  chunks, missing chunks and shards, '/' '.' and v2 chunk keys, fill
  values as numbers, NaN, +-Infinity and hex, dimension names,
  attributes, groups, consolidated metadata) copied by chunkctl to HDF5
  (--compress none) and compared bit for bit with h5py; info --json;
  one-step ops and run on v3 input.  Valid but rare chains (two
  compressors, a codec after sharding_indexed, sharding in sharding) have
  a test of their own.
- V3Write: chunkctl copy/gen/run/one-step --zarr-format 3, each
  compressor, sharded and not: zarr.json checked against the spec and the
  values read back by the spec reader and by zarrita; copies between
  HDF5, v2 and v3 in every direction; the same pipeline on HDF5, v2, v3
  and v3-sharded gives the same results.
- V3BadInput: each refusal is one line naming the node and the fault, exit
  1, no output left; verify lists the chunks of a damaged shard only.
- V3ShardReads (needs strace): reading one inner chunk of a shard reads
  that chunk's bytes and the index, nothing more.

The zarrita parts skip (visibly) when node or tests/interop/node/
node_modules is missing; .ci/install-deps installs both.
"""

import json
import os
import re
import shutil
import subprocess
import unittest

import _common as C
from _common import np, h5py, zarr
import zarr3_spec as S

NODE = shutil.which("node")
NODE_DIR = os.path.join(C.HERE, "node")
ZARRITA_TOOL = os.path.join(NODE_DIR, "zarrita_tool.mjs")
HAVE_ZARRITA = bool(NODE) and os.path.isdir(
    os.path.join(NODE_DIR, "node_modules", "zarrita"))
NO_ZARRITA = "node or tests/interop/node/node_modules missing " \
    "(run .ci/install-deps)"
STRACE = shutil.which("strace")

SHAPE = (11, 13)          # edge chunks and edge shards both ways
CHUNKS = (4, 5)
SHARDS = (8, 10)
SHAPE3 = (5, 7, 6)
CHUNKS3 = (2, 3, 4)
SHARDS3 = (4, 6, 4)


# -- codec spellings (v3 JSON) -------------------------------------------

def b_(endian="little"):
    return {"name": "bytes", "configuration": {"endian": endian}}


def gzip_(level):
    return {"name": "gzip", "configuration": {"level": level}}


def zstd_(level, checksum=False):
    return {"name": "zstd",
            "configuration": {"level": level, "checksum": checksum}}


def blosc_(cname, clevel, shuffle, typesize):
    return {"name": "blosc", "configuration": {
        "cname": cname, "clevel": clevel, "shuffle": shuffle,
        "typesize": typesize, "blocksize": 0}}


CRC = {"name": "crc32c"}


def transpose_(order):
    return {"name": "transpose", "configuration": {"order": list(order)}}


def shard_(inner, codecs, index_codecs=None, loc="end"):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner), "codecs": codecs,
        "index_codecs": index_codecs or [b_(), CRC],
        "index_location": loc}}


# -- oracles -------------------------------------------------------------

def zarrita_read_many(items):
    """{(store, path): ndarray} read by zarrita, for items [(store, path)],
    in one Node process."""
    argv = [NODE, ZARRITA_TOOL, "read"]
    outs = []
    for i, (store, path) in enumerate(items):
        outs.append(store + ".zr-%d.bin" % i)
        argv += [store, path, outs[-1]]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("zarrita read %s: %s" % (items,
                                                      r.stderr.strip()))
    got = {}
    for item, o, line in zip(items, outs, r.stdout.splitlines()):
        meta = json.loads(line)
        dt = S.np_dtype(meta["data_type"]).newbyteorder("<")
        with open(o, "rb") as f:
            got[item] = np.frombuffer(f.read(), dt).reshape(meta["shape"])
        os.remove(o)
    return got


def zarrita_read(store, *paths):
    """{path: ndarray} of one store, read by zarrita."""
    got = zarrita_read_many([(store, p) for p in paths])
    return {p: got[(store, p)] for p in paths}


def zarrita_write_many(items):
    """Writes [(store, path, ndarray, chunks, codec)] with zarrita, in one
    Node process; codec: bytes or zstd[:LEVEL]."""
    argv = [NODE, ZARRITA_TOOL, "write"]
    raws = []
    for i, (store, path, a, chunks, codec) in enumerate(items):
        raws.append(store + ".in-%d.bin" % i)
        os.makedirs(os.path.dirname(raws[-1]), exist_ok=True)
        a.astype(a.dtype.newbyteorder("<")).tofile(raws[-1])
        argv += [store, path, raws[-1], S.v3_name(a.dtype),
                 ",".join(map(str, a.shape)), ",".join(map(str, chunks)),
                 codec]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    for raw in raws:
        os.remove(raw)
    if r.returncode != 0:
        raise AssertionError("zarrita write: %s" % r.stderr.strip())


def h5_read(path, name):
    with h5py.File(path, "r") as f:
        return f[name][()]


def h5_write(path, arrays):
    """arrays: {name: (ndarray, chunks)}."""
    with h5py.File(path, "w") as f:
        for name, (a, ch) in arrays.items():
            f.create_dataset(name, data=a, chunks=ch)


def with_missing(a, fill_np, chunks, skip):
    """What 'a' reads as when the chunks where skip(coords) holds are
    missing and read as fill."""
    want = a.copy()
    grid = [-(-s // c) for s, c in zip(a.shape, chunks)]
    for coords in np.ndindex(*grid):
        if skip(coords):
            sel = tuple(slice(i * c, (i + 1) * c)
                        for i, c in zip(coords, chunks))
            want[sel] = fill_np
    return want


# -- the spec fixture ----------------------------------------------------
# (path, data, chunks, codecs, fill, extra write_array kwargs, zarrita?)

def spec_fixtures():
    fx = []
    seed = [300]

    def add(path, dt, codecs=None, shape=SHAPE, chunks=CHUNKS, fill=0,
            zarrita_ok=True, data=None, **kw):
        seed[0] += 1
        a = C.make_data(dt, shape, seed[0]) if data is None else data
        fx.append((path, a, chunks, codecs, fill, kw, zarrita_ok))

    for dt in C.NATIVE_DTYPES:
        add("/dtypes/" + C.dtype_tag(dt), dt, [b_("little")],
            fill=False if dt == "bool" else 0)
    for dt in C.BIG_DTYPES:
        add("/dtypes/" + C.dtype_tag(dt), dt, [b_("big")])
    add("/dtypes/u1_noendian", "uint8", [{"name": "bytes"}])
    for tag, codecs in [
            ("gzip1", [b_(), gzip_(1)]), ("gzip9", [b_(), gzip_(9)]),
            ("zstd3", [b_(), zstd_(3)]),
            ("zstd5_checksum", [b_(), zstd_(5, True)]),
            ("zstd_neg", [b_(), zstd_(-5)]),
            ("crc32c", [b_(), CRC]),
            ("gzip_crc32c", [b_(), gzip_(4), CRC]),
            ("transpose", [transpose_((1, 0)), b_()]),
            ("transpose_big_zstd", [transpose_((1, 0)), b_("big"),
                                    zstd_(3, True)])]:
        for dt in ("<f8", ">i2", "uint8"):
            add("/codecs/%s_%s" % (tag, C.dtype_tag(dt)), dt, codecs)
    for cname in S.BLOSC_CNAMES:
        for shuffle in S.SHUFFLES:
            for dt in ("<f8", "<i2"):
                add("/blosc/%s_%s_%s" % (cname, shuffle, C.dtype_tag(dt)),
                    dt, [b_(), blosc_(cname, 5, shuffle,
                                      np.dtype(dt).itemsize)])
    add("/codecs/transpose3d", ">f4",
        [transpose_((2, 0, 1)), b_("big"), gzip_(3)], shape=SHAPE3,
        chunks=CHUNKS3)
    # sharding
    add("/shard/end", "<f8", [shard_(CHUNKS, [b_(), zstd_(3)])],
        chunks=SHARDS)
    add("/shard/end_i2", "<i2",
        [shard_(CHUNKS, [b_("big"), blosc_("lz4", 5, "shuffle", 2)])],
        chunks=SHARDS)
    # zarrita 0.7.5 reads the index from the end only, and knows no
    # sharding inside sharding
    add("/shard/start", "<f8", [shard_(CHUNKS, [b_(), zstd_(3)],
                                       loc="start")],
        chunks=SHARDS, zarrita_ok=False)
    add("/shard/index_nocrc", "<i4", [shard_(CHUNKS, [b_(), gzip_(2)],
                                             index_codecs=[b_()])],
        chunks=SHARDS)
    add("/shard/index_big", "<u2", [shard_(CHUNKS, [b_()],
                                           index_codecs=[b_("big"), CRC])],
        chunks=SHARDS)
    add("/shard/inner_chain", "<f4",
        [shard_(CHUNKS, [transpose_((1, 0)), b_("big"), gzip_(5), CRC])],
        chunks=SHARDS)
    add("/shard/three_d", "<f8",
        [shard_(CHUNKS3, [b_(), zstd_(2, True)])], shape=SHAPE3,
        chunks=SHARDS3)
    add("/shard/one_inner", "<f8", [shard_(SHARDS, [b_()])], chunks=SHARDS)
    # empty inner chunks (offset = nbytes = 2^64-1) and a missing shard
    sparse = np.full(SHAPE, -1.0)
    sparse[0:4, 5:10] = np.arange(20).reshape(4, 5)
    sparse[8:11, 10:13] = 7.5
    add("/shard/empty_inner", "<f8", [shard_(CHUNKS, [b_(), gzip_(1)])],
        chunks=SHARDS, fill=-1.0, data=sparse)
    add("/shard/missing_shard", ">i4", [shard_(CHUNKS, [b_("big")])],
        chunks=SHARDS, skip=lambda c: c == (1, 0))
    # chunk key encodings
    for tag, enc in [("default_dot", {"name": "default",
                                      "configuration": {"separator": "."}}),
                     ("v2_dot", {"name": "v2",
                                 "configuration": {"separator": "."}}),
                     ("v2_slash", {"name": "v2",
                                   "configuration": {"separator": "/"}}),
                     ("v2_noconf", {"name": "v2"}),
                     ("default_noconf", {"name": "default"})]:
        add("/keys/" + tag, "<i4", [b_()], key_encoding=enc)
        add("/keys/%s_shard" % tag, "<u2", [shard_(CHUNKS, [b_()])],
            chunks=SHARDS, key_encoding=enc)
    # fill values over missing chunks
    odd = lambda c: (c[0] + c[1]) % 2 == 1  # noqa: E731
    for tag, dt, fill in [
            ("i4_7", "<i4", 7), ("i2_neg", ">i2", -3),
            ("u8_max", "<u8", 18446744073709551615),
            ("i8_min", "<i8", -9223372036854775808),
            ("bool_true", "bool", True), ("f8_1.5", "<f8", 1.5),
            ("f8_nan", "<f8", "NaN"), ("f4_inf", "<f4", "Infinity"),
            ("f8_ninf", ">f8", "-Infinity"),
            ("f4_hex", "<f4", "0x3fc00000"),
            ("f8_hex_negnan", "<f8", "0xfff8000000000000")]:
        # zarrita 0.7.5 takes "0x..." fills as numbers and 2^64-1
        # through a double (2^64): the spec reader alone checks those
        z = "hex" not in tag and tag != "u8_max"
        add("/fill/" + tag, dt, [b_()], fill=fill, skip=odd, zarrita_ok=z)
        add("/fill/%s_shard" % tag, dt, [shard_(CHUNKS, [b_()])],
            chunks=SHARDS, fill=fill, skip=lambda c: c == (0, 1),
            zarrita_ok=z)
    add("/named", "<f8", [b_(), zstd_(3)], dimension_names=["y", None],
        attributes={"units": "m", "scale": 2.5, "list": [1, 2, 3]})
    return fx


def rare_fixtures():
    """Valid chains that are rare in the wild: two compressors, a codec
    after sharding_indexed, sharding inside sharding (zarrita reads only
    the first)."""
    fx = []
    for i, (path, dt, codecs, chunks, z) in enumerate([
            ("/zstd_gzip", "<f8", [b_(), zstd_(1), gzip_(1)], CHUNKS, True),
            ("/shard_outer_crc", "<f8", [shard_(CHUNKS, [b_()]), CRC],
             SHARDS, False),
            ("/shard_nested", "<i8", [shard_((4, 10), [shard_(
                (2, 5), [b_(), zstd_(1)], loc="start")])], SHARDS,
             False)]):
        fx.append((path, C.make_data(dt, SHAPE, 900 + i), chunks, codecs,
                   0, {}, z))
    return fx


def want_of(a, chunks, codecs, fill, kw):
    """What the fixture array reads as."""
    skip = kw.get("skip")
    if skip is None:
        return a
    return with_missing(a, S.fill_value(fill, a.dtype), chunks, skip)


class V3Case(C.InteropCase):

    def needs_zarrita(self):
        if not HAVE_ZARRITA:
            self.skipTest(NO_ZARRITA)

    def copy_to_h5(self, src, name="x"):
        out = self.fresh("out_%s.h5" % name)
        C.copy(src, out + ":/x", "--compress", "none")
        return h5_read(out, "/x")


class V3Oracles(V3Case):
    """The two oracles agree on the spec writer's stores."""

    @classmethod
    def make_fixtures(cls):
        cls.store = cls.path("spec.zarr")
        S.write_group(cls.store, "/", {"title": "spec fixture"})
        cls.fx = spec_fixtures()
        for path, a, chunks, codecs, fill, kw, _z in cls.fx:
            S.write_array(cls.store, path, a, chunks, codecs, fill, **kw)
        cls.rare = cls.path("rare.zarr")
        S.write_group(cls.rare, "/")
        for path, a, chunks, codecs, fill, kw, _z in rare_fixtures():
            S.write_array(cls.rare, path, a, chunks, codecs, fill, **kw)

    def test_rare_chains(self):
        for path, a, chunks, codecs, fill, kw, z in rare_fixtures():
            with self.subTest(path=path):
                self.assertSameArray(S.read_array(self.rare, path), a)
                if z and HAVE_ZARRITA:
                    self.assertSameArray(zarrita_read(self.rare, path)[path],
                                         a)

    def test_spec_reader_reads_spec_writer(self):
        for path, a, chunks, codecs, fill, kw, _z in self.fx:
            with self.subTest(path=path):
                self.assertEqual(S.check_array_meta(
                    S.read_meta(self.store, path)), [])
                self.assertSameArray(S.read_array(self.store, path),
                                     want_of(a, chunks, codecs, fill, kw),
                                     path)

    def test_zarrita_reads_spec_writer(self):
        self.needs_zarrita()
        paths = [f[0] for f in self.fx if f[6]]
        got = zarrita_read(self.store, *paths)
        for path, a, chunks, codecs, fill, kw, z in self.fx:
            if not z:
                continue
            with self.subTest(path=path):
                self.assertSameArray(got[path], want_of(a, chunks, codecs,
                                                        fill, kw), path)

    def test_empty_inner_chunks_are_marked_empty(self):
        index, _key, _size, _isize = S.shard_index(
            self.store, "/shard/empty_inner", (0, 0))
        # of shard (0, 0)'s 2 x 2 inner chunks only (0, 1) holds data
        empty = (index[..., 0] == S.EMPTY) & (index[..., 1] == S.EMPTY)
        self.assertEqual(empty.tolist(), [[True, False], [True, True]])

    def test_spec_reader_refuses_what_it_must(self):
        store = self.fresh("bad.zarr")
        a = np.arange(20, dtype="<i4").reshape(4, 5)
        S.write_array(store, "/c", a, (4, 5), [b_(), CRC])
        key = os.path.join(store, "c", "c", "0", "0")
        with open(key, "r+b") as f:
            f.write(b"\x01")
        with self.assertRaisesRegex(S.SpecError, "crc32c"):
            S.read_array(store, "/c")


class V3Read(V3Case):
    """chunkctl reads what the spec writer and zarrita write."""

    @classmethod
    def make_fixtures(cls):
        cls.store = cls.path("spec.zarr")
        S.write_group(cls.store, "/", {"title": "spec fixture"})
        cls.fx = spec_fixtures()
        for path, a, chunks, codecs, fill, kw, _z in cls.fx:
            S.write_array(cls.store, path, a, chunks, codecs, fill, **kw)
        cls.want = {f[0]: want_of(f[1], f[2], f[3], f[4], f[5])
                    for f in cls.fx}
        # zarrita writes every dtype, bytes and bytes + zstd, 2-D and 3-D
        cls.zw = cls.path("zw.zarr")
        cls.zw_want = {}
        items = []
        for i, dt in enumerate(C.NATIVE_DTYPES):
            for codec in ("bytes", "zstd:3"):
                for shape, chunks in ((SHAPE, CHUNKS), (SHAPE3, CHUNKS3)):
                    a = C.make_data(dt, shape, 60 + i + 7 * len(shape))
                    path = "/%s/%s_%dd" % (codec.split(":")[0], dt,
                                           len(shape))
                    items.append((cls.zw, path, a, chunks, codec))
                    cls.zw_want[path] = a
        if HAVE_ZARRITA:
            zarrita_write_many(items)

    def test_every_fixture_array_copied_to_hdf5(self):
        # the whole store in one copy; should that fail, one copy per array
        # says which arrays are at fault
        out = self.fresh("every.h5")
        p = C.copy(self.store, out, "--compress", "none", expect=None)
        for path in self.want:
            with self.subTest(path=path):
                if p.returncode == 0:
                    got = h5_read(out, path)
                else:
                    got = self.copy_to_h5(self.store + ":" + path)
                self.assertSameArray(got, self.want[path], path)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_rare_but_valid_chains_are_refused_by_name(self):
        # Deliberate limits (man chunkctl-copy(1)): one compressor per
        # chain, sharding_indexed as the only codec and not nested.  The
        # spec reader reads these fixtures; chunkctl says what it does not
        # support, in one line, and writes nothing.
        store = self.fresh("rare.zarr")
        S.write_group(store, "/")
        why = {"/zstd_gzip": "a second compressor in one chain",
               "/shard_outer_crc": "codecs around sharding_indexed",
               "/shard_nested": "sharding inside a shard"}
        for path, a, chunks, codecs, fill, kw, _z in rare_fixtures():
            S.write_array(store, path, a, chunks, codecs, fill, **kw)
            with self.subTest(path=path):
                self.assertSameArray(S.read_array(store, path), a)
                out = self.fresh("rare_out.h5")
                p = C.copy(store + ":" + path, out, "--compress", "none",
                           expect=None)
                self.assertCleanError(p, 1, why[path], "not supported")
                self.assertFalse(os.path.exists(out), "output left behind")

    def test_whole_store_to_hdf5_keeps_names_and_attributes(self):
        out = self.fresh("all.h5")
        C.copy(self.store, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            got = C.h5_datasets(f)
            self.assertEqual(sorted(got), sorted(self.want))
            for path, want in self.want.items():
                self.assertSameArray(got[path][()], want, path)
            C.attrs_equal(self, f["/named"].attrs,
                          {"units": "m", "scale": 2.5, "list": [1, 2, 3]},
                          "/named")

    def test_zarrita_written_stores(self):
        self.needs_zarrita()
        # the spec reader agrees with zarrita's writer
        for path, a in self.zw_want.items():
            with self.subTest(oracle="spec", path=path):
                self.assertEqual(S.check_array_meta(
                    S.read_meta(self.zw, path)), [])
                self.assertSameArray(S.read_array(self.zw, path), a)
        # chunkctl reads the whole store and one array by path
        out = self.fresh("zw.h5")
        C.copy(self.zw, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            for path, a in self.zw_want.items():
                with self.subTest(path=path):
                    self.assertSameArray(f[path][()], a, path)
        path = "/zstd/float32_3d"
        self.assertSameArray(self.copy_to_h5(self.zw + ":" + path),
                             self.zw_want[path])

    def test_info_json(self):
        doc = C.info(self.store)
        self.assertEqual(doc.get("zarr_format"), 3)
        arrays = {a["name"]: a for a in doc["arrays"]}
        self.assertEqual(sorted(arrays), sorted(self.want))
        for path, a, chunks, codecs, fill, kw, _z in self.fx:
            with self.subTest(path=path):
                got = arrays[path]
                self.assertEqual(got["shape"], list(a.shape))
                self.assertEqual(got["dtype"], S.v3_name(a.dtype))
                self.assertIn("codecs", got)
                self.assertIsInstance(got["codecs"], str)
                names = [c["name"] for c in codecs]
                for n in names:
                    self.assertIn(n, got["codecs"])
                if names[0] == "sharding_indexed":
                    cfg = codecs[0]["configuration"]
                    self.assertEqual(got["shards"], list(chunks))
                    self.assertEqual(got["chunks"], cfg["chunk_shape"])
                    for c in cfg["codecs"] + cfg["index_codecs"]:
                        self.assertIn(c["name"], got["codecs"])
                else:
                    self.assertIsNone(got["shards"])
                    self.assertEqual(got["chunks"], list(chunks))
        self.assertIn("zstd", arrays["/codecs/zstd3_f8_le"]["compressor"])
        # plain info names the format version
        p = C.run("info", self.store)
        self.assertRegex(p.stdout, r"(?i)(zarr[ _-]?v3|format[: ]*3|"
                         r"zarr_format[\": ]*3)")
        # a v2 store says 2
        v2 = self.fresh("v2.zarr")
        zarr.open_group(v2, mode="w").create_dataset(
            "x", data=np.arange(10.0), chunks=(4,))
        self.assertEqual(C.info(v2).get("zarr_format"), 2)

    def test_one_array_by_path(self):
        for path in ("/shard/start", "/keys/v2_slash", "/fill/f4_hex"):
            with self.subTest(path=path):
                out = self.fresh("one.h5")
                C.copy(self.store + ":" + path, out + ":/y", "--compress",
                       "none")
                self.assertSameArray(h5_read(out, "/y"), self.want[path])

    def test_one_step_ops_and_run_read_v3(self):
        # chunkctl OP on a sharded v3 array (index at the start, big-endian
        # inner chunks, zstd with checksums), against NumPy and the same op
        # on an HDF5 copy with the same chunks; --threads 1/2/7 alike
        a = np.random.default_rng(12).normal(size=SHAPE) * 100
        store = self.fresh("op.zarr")
        S.write_group(store, "/")
        S.write_array(store, "/g/x", a, SHARDS, [shard_(
            CHUNKS, [b_("big"), zstd_(3, True)], loc="start")])
        h5 = self.fresh("op.h5")
        h5_write(h5, {"/x": (a, CHUNKS)})
        ref = self.fresh("op_ref.h5")
        C.run("sum", h5 + ":/x", "--axis", "0", "-o", ref + ":/s",
              "--quiet")
        want = h5_read(ref, "/s")
        np.testing.assert_allclose(want, a.sum(axis=0), rtol=1e-12)
        for t in ("1", "2", "7"):
            with self.subTest(threads=t):
                out = self.fresh("op_%s.h5" % t)
                C.run("sum", store + ":/g/x", "--axis", "0", "-o",
                      out + ":/s", "--quiet", "--threads", t)
                self.assertSameArray(h5_read(out, "/s"), want)
        doc = {"inputs": {"x": store + ":/g/x"},
               "steps": [{"name": "t", "op": "transpose", "args": ["x"]},
                         {"name": "h", "op": "histogram", "args": ["x"],
                          "bins": 7, "range": [-300, 300]}],
               "outputs": {"t": self.path("op_run.h5") + ":/t"},
               "print": ["h"]}
        pj = self.fresh("op.json")
        self.fresh("op_run.h5")
        with open(pj, "w") as f:
            json.dump(doc, f)
        got = json.loads(C.run("run", "--quiet", "--json", pj).stdout)
        self.assertEqual(got["h"]["counts"],
                         np.histogram(a, 7, (-300, 300))[0].tolist())
        self.assertSameArray(h5_read(self.path("op_run.h5"), "/t"), a.T)

    def test_consolidated_metadata(self):
        store = self.fresh("cons.zarr")
        S.write_group(store, "/", {"k": 1})
        S.write_group(store, "/g", {"sub": "yes"})
        a = C.make_data("<f8", SHAPE, 5)
        b = C.make_data("<i2", SHAPE3, 6)
        S.write_array(store, "/g/a", a, SHARDS,
                      [shard_(CHUNKS, [b_(), zstd_(3)])])
        S.write_array(store, "/b", b, CHUNKS3, [b_(), gzip_(4)])
        root = S.consolidate(store)
        self.assertEqual(S.check_group_meta(root), [])
        self.assertEqual(sorted(root["consolidated_metadata"]["metadata"]),
                         ["b", "g", "g/a"])
        out = self.fresh("cons.h5")
        C.copy(store, out, "--compress", "none")
        with h5py.File(out, "r") as f:
            self.assertSameArray(f["/g/a"][()], a)
            self.assertSameArray(f["/b"][()], b)
        names = sorted(x["name"] for x in C.info(store)["arrays"])
        self.assertEqual(names, ["/b", "/g/a"])

    def test_consolidated_metadata_is_what_is_read(self):
        # the root's consolidated metadata is read when present: the
        # arrays it lists open with their own zarr.json gone, as
        # zarr-python 3's open_consolidated opens them
        store = self.fresh("cons_only.zarr")
        S.write_group(store, "/")
        a = C.make_data("<f8", SHAPE, 7)
        S.write_array(store, "/g/a", a, CHUNKS, [b_(), zstd_(3)])
        S.consolidate(store)
        os.remove(os.path.join(store, "g", "a", "zarr.json"))
        os.remove(os.path.join(store, "g", "zarr.json"))
        self.assertSameArray(self.copy_to_h5(store + ":/g/a", "cons_only"),
                             a)
        self.assertEqual([x["name"] for x in C.info(store)["arrays"]],
                         ["/g/a"])


# -- chunkctl writes -----------------------------------------------------

WRITE_COMPRESS = {
    "none": [],
    "zstd:3": [("zstd", {"level": 3})],
    "gzip:4": [("gzip", {"level": 4})],
    "blosc:lz4:5:shuffle": [("blosc", {"cname": "lz4", "clevel": 5,
                                       "shuffle": "shuffle"})],
    "blosc:zstd:3:bitshuffle": [("blosc", {"cname": "zstd", "clevel": 3,
                                           "shuffle": "bitshuffle"})],
    "blosc:blosclz:5:noshuffle": [("blosc", {"cname": "blosclz",
                                             "clevel": 5,
                                             "shuffle": "noshuffle"})],
}
# name: (dtype, shape, chunks, shards)
WRITE_ARRAYS = {
    "/f8": ("<f8", SHAPE, CHUNKS, SHARDS),
    "/g/i2_be": (">i2", SHAPE, CHUNKS, SHARDS),
    "/g/u1": ("uint8", SHAPE, CHUNKS, SHARDS),
    "/bool": ("bool", SHAPE, CHUNKS, SHARDS),
    "/i8": ("<i8", (23,), (5,), (10,)),
    "/f4_3d": ("<f4", SHAPE3, CHUNKS3, SHARDS3),
}


class V3Write(V3Case):
    """chunkctl writes Zarr v3; the spec reader and zarrita read it."""

    @classmethod
    def make_fixtures(cls):
        cls.src = cls.path("src.h5")
        cls.data = {}
        with h5py.File(cls.src, "w") as f:
            for i, (name, (dt, shape, ch, _sh)) in enumerate(
                    WRITE_ARRAYS.items()):
                a = C.make_data(dt, shape, 500 + i)
                cls.data[name] = a
                f.create_dataset(name, data=a, chunks=ch)
            f["/g"].attrs["title"] = "group attr"
            f["/f8"].attrs["units"] = "K"
        # the same arrays by rank, one file each: one copy per rank takes
        # one --chunks/--shards
        cls.by_rank = {}
        for name, (dt, shape, ch, sh) in WRITE_ARRAYS.items():
            path, _c, _s, names = cls.by_rank.setdefault(
                len(shape), (cls.path("src%dd.h5" % len(shape)), ch, sh,
                             []))
            names.append(name)
            with h5py.File(path, "a") as f:
                f.create_dataset(name, data=cls.data[name], chunks=ch)

    def write_v3(self, name, *opts, src=None, array=None):
        out = self.fresh(name)
        s = src or self.src
        if array:
            s, out = s + ":" + array, out + ":" + array
        C.copy(s, out, "--zarr-format", "3", *opts)
        return self.path(name)

    def check_meta(self, store, path, chunks, shards, comp):
        """zarr.json of 'path' against the spec and the write contract."""
        meta = S.read_meta(store, path)
        self.assertEqual(S.check_array_meta(meta), [], path)
        self.assertEqual(meta["chunk_key_encoding"],
                         {"name": "default",
                          "configuration": {"separator": "/"}}, path)
        one_byte = np.dtype(S.np_dtype(meta["data_type"])).itemsize == 1

        def check_bytes(c):
            self.assertEqual(c["name"], "bytes")
            e = (c.get("configuration") or {}).get("endian")
            if not one_byte or e is not None:
                self.assertEqual(e, "little", path)

        def check_chain(codecs):
            check_bytes(codecs[0])
            self.assertEqual(len(codecs), 1 + len(comp),
                             "%s: codecs %r" % (path, codecs))
            for c, (name, cfg) in zip(codecs[1:], comp):
                self.assertEqual(c["name"], name, path)
                for k, v in cfg.items():
                    self.assertEqual(c["configuration"][k], v,
                                     "%s: %s.%s" % (path, name, k))

        grid = meta["chunk_grid"]["configuration"]["chunk_shape"]
        if shards is None:
            self.assertEqual(grid, list(chunks), path)
            check_chain(meta["codecs"])
        else:
            self.assertEqual(grid, list(shards), path)
            self.assertEqual(len(meta["codecs"]), 1, path)
            sh = meta["codecs"][0]
            self.assertEqual(sh["name"], "sharding_indexed", path)
            cfg = sh["configuration"]
            self.assertEqual(cfg["chunk_shape"], list(chunks), path)
            check_chain(cfg["codecs"])
            self.assertEqual(cfg["index_codecs"], [b_(), CRC], path)
            self.assertEqual(cfg["index_location"], "end", path)
        # chunk keys c/i/j, nothing else below the array but zarr.json
        shape = meta["shape"]
        keys = set()
        for root, _d, files in os.walk(S._node_dir(store, path)):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f),
                                      S._node_dir(store, path))
                if os.sep in rel and not rel.startswith("c" + os.sep):
                    continue  # a child node's files
                keys.add(rel.replace(os.sep, "/"))
        want = {"zarr.json"} | {
            S.chunk_key(c, meta["chunk_key_encoding"]) for c in np.ndindex(
                *[-(-s // g) for s, g in zip(shape, grid)])}
        self.assertEqual(keys, want, path)
        return meta

    def test_each_compressor_sharded_and_not(self):
        zr = []
        for comp, want_codecs in WRITE_COMPRESS.items():
            for sharded in (False, True):
                with self.subTest(compress=comp, sharded=sharded):
                    store = "w_%s_%d.zarr" % (comp.replace(":", "_"),
                                              sharded)
                    # one store per rank: --chunks and --shards are per copy
                    out = {}
                    for rank, (src, ch, sh, names) in self.by_rank.items():
                        opts = ["--compress", comp, "--chunks",
                                ",".join(map(str, ch))]
                        if sharded:
                            opts += ["--shards", ",".join(map(str, sh))]
                        out[rank] = self.fresh("%dd_%s" % (rank, store))
                        # a file of one array copies to a store whose root
                        # is that array, as for v2: name it instead
                        s, d = (src, out[rank]) if len(names) > 1 else \
                            (src + ":" + names[0], out[rank] + ":" + names[0])
                        C.copy(s, d, "--zarr-format", "3", *opts)
                        for name in names:
                            out[name] = out[rank]
                    for rank in self.by_rank:
                        self.assertEqual(S.check_group_meta(
                            S.read_meta(out[rank], "/")), [])
                        self.assertFalse(any(
                            f in (".zarray", ".zgroup", ".zattrs")
                            for _r, _d, fs in os.walk(out[rank])
                            for f in fs))
                    for name, (dt, shape, ch, sh) in WRITE_ARRAYS.items():
                        self.check_meta(out[name], name, ch,
                                        sh if sharded else None, want_codecs)
                        self.assertSameArray(S.read_array(out[name], name),
                                             self.data[name], name)
                    for name in WRITE_ARRAYS:
                        zr.append(((comp, sharded), out[name], name))
        # zarrita reads them all, in one Node process
        if not HAVE_ZARRITA:
            self.skipTest(NO_ZARRITA)
        got = zarrita_read_many([(o, n) for _k, o, n in zr])
        for key, o, name in zr:
            with self.subTest(zarrita=key, name=name):
                self.assertSameArray(got[(o, name)], self.data[name])

    def test_whole_file_keeps_groups_and_attributes(self):
        out = self.write_v3("whole.zarr", "--compress", "zstd:3")
        nodes = S.walk(out)
        self.assertEqual(sorted(nodes), sorted(
            ["/", "/g"] + list(WRITE_ARRAYS)))
        self.assertEqual(nodes["/g"]["node_type"], "group")
        self.assertEqual(S.check_group_meta(nodes["/g"]), [])
        self.assertEqual(nodes["/g"].get("attributes"),
                         {"title": "group attr"})
        self.assertEqual(nodes["/f8"].get("attributes"), {"units": "K"})
        for name in WRITE_ARRAYS:
            self.assertSameArray(S.read_array(out, name), self.data[name])

    def test_shards_must_be_multiples_of_chunks(self):
        out = self.fresh("badshard.zarr")
        p = C.copy(self.src + ":/f8", out + ":/f8", "--zarr-format", "3",
                   "--chunks", "4,5", "--shards", "6,10", expect=None)
        self.assertCleanError(p, 2, "shard", "multiple")
        self.assertFalse(os.path.exists(out))

    def test_chunks_and_shards_longer_than_the_array(self):
        """--chunks longer than the array are cut to it (as documented);
        --shards is checked against the chunks given, then cut to the
        smallest multiple of the cut chunk that covers the array, so the
        store stays valid by the sharding spec (audit B #8: 13x7 with
        --chunks 20,20 --shards 20,20 was refused, naming chunks 13)."""
        src = self.fresh("small.h5")
        a = np.arange(91.0).reshape(13, 7)
        b = np.arange(13, dtype="<i4")
        with h5py.File(src, "w") as f:
            f.create_dataset("x", data=a, chunks=(4, 3))
            f.create_dataset("y", data=b, chunks=(4,))
        for name, data, chunks, shards, want_ch, want_sh in (
                ("/x", a, "20,20", "20,20", [13, 7], [13, 7]),
                ("/x", a, "20,5", "40,10", [13, 5], [13, 10]),
                ("/y", b, "5", "20", [5], [15]),
                ("/y", b, "5", "10", [5], [10])):
            with self.subTest(array=name, chunks=chunks, shards=shards):
                out = self.fresh("cut.zarr")
                C.copy(src + ":" + name, out + ":" + name, "--zarr-format",
                       "3", "--chunks", chunks, "--shards", shards)
                meta = S.read_meta(out, name)
                self.assertEqual(S.check_array_meta(meta), [])
                grid = meta["chunk_grid"]["configuration"]["chunk_shape"]
                inner = meta["codecs"][0]["configuration"]["chunk_shape"]
                self.assertEqual((inner, grid), (want_ch, want_sh))
                self.assertSameArray(S.read_array(out, name), data, name)
        # a shard shape the chunks given do not divide is refused in the
        # values given, before any is cut
        out = self.fresh("cut.zarr")
        p = C.copy(src + ":/x", out + ":/x", "--zarr-format", "3",
                   "--chunks", "20,20", "--shards", "30,20", expect=None)
        self.assertCleanError(p, 2, "multiple", "axis 0: shards 30, "
                              "chunks 20")
        self.assertFalse(os.path.exists(out))

    def test_threads_do_not_change_the_bytes(self):
        outs = []
        for t in ("1", "2", "7"):
            name = "thr%s.zarr" % t
            out = self.fresh(name)
            C.copy(self.src + ":/f8", out + ":/f8", "--zarr-format", "3",
                   "--compress", "zstd:3", "--shards", "8,10", "--chunks",
                   "4,5", "--threads", t)
            files = {}
            for root, _d, fs in os.walk(out):
                for f in fs:
                    p = os.path.join(root, f)
                    with open(p, "rb") as fh:
                        files[os.path.relpath(p, out)] = fh.read()
            # The root's history holds the command line (and the time):
            # everything else must be the same bytes.
            root = json.loads(files.pop("zarr.json"))
            self.assertIn("--threads %s" % t,
                          root["attributes"].pop("history"))
            outs.append((files, root))
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(outs[0], outs[2])

    def test_copies_in_every_direction(self):
        a = self.data["/f8"]
        b = self.data["/g/i2_be"]
        src = self.by_rank[2][0]      # the 2-D arrays: one --chunks fits

        def v3(src, name, *opts):
            out = self.fresh(name)
            C.copy(src, out, "--zarr-format", "3", *opts)
            return out

        def v2(src, name, *opts):
            out = self.fresh(name)
            C.copy(src, out, "--zarr-format", "2", *opts)
            self.assertTrue(os.path.exists(os.path.join(out, "f8",
                                                        ".zarray")))
            self.assertFalse(os.path.exists(os.path.join(out, "f8",
                                                         "zarr.json")))
            return out

        def to_h5(src, name):
            out = self.fresh(name)
            C.copy(src, out, "--compress", "none")
            return out

        def check_v3(store):
            self.assertSameArray(S.read_array(store, "/f8"), a, store)
            self.assertSameArray(S.read_array(store, "/g/i2_be"), b, store)

        def check_v2(store):
            g = zarr.open_group(store, mode="r")
            self.assertSameArray(g["f8"][...], a, store)
            self.assertSameArray(g["g/i2_be"][...], b, store)

        def check_h5(path):
            with h5py.File(path, "r") as f:
                self.assertSameArray(f["/f8"][()], a, path)
                self.assertSameArray(f["/g/i2_be"][()], b, path)

        x3 = v3(src, "d_h5_v3.zarr", "--compress", "gzip:2")
        check_v3(x3)
        x3s = v3(src, "d_h5_v3s.zarr", "--compress", "zstd:1", "--chunks",
                 "2,5", "--shards", "4,10")
        check_v3(x3s)
        x2 = v2(x3, "d_v3_v2.zarr", "--compress", "blosc:lz4:5:shuffle")
        check_v2(x2)
        check_v2(v2(x3s, "d_v3s_v2.zarr", "--compress", "zstd:3"))
        check_v3(v3(x2, "d_v2_v3.zarr", "--compress", "blosc:zstd:3:"
                    "bitshuffle"))
        check_v3(v3(x2, "d_v2_v3s.zarr", "--shards", "8,10", "--chunks",
                    "4,5"))
        check_h5(to_h5(x3, "d_v3_h5.h5"))
        check_h5(to_h5(x3s, "d_v3s_h5.h5"))
        # v3 -> v3: reshard, unshard, rechunk, recompress
        check_v3(v3(x3s, "d_v3s_v3.zarr", "--compress", "none", "--chunks",
                    "4,5"))
        check_v3(v3(x3, "d_v3_v3.zarr", "--compress", "none", "--chunks",
                    "3,13"))
        check_v3(v3(x3, "d_v3_v3s.zarr", "--compress", "gzip:9", "--chunks",
                    "1,13", "--shards", "11,13"))
        # without --zarr-format: 2 from HDF5, else the input's (copy --help)
        for src_, want in ((src, 2), (x2, 2), (x3, 3), (x3s, 3)):
            with self.subTest(default_from=src_):
                out = self.fresh("d_default.zarr")
                C.copy(src_, out)
                self.assertEqual(C.info(out)["zarr_format"], want)

    def test_gen_run_and_one_step_write_v3(self):
        # gen: the same values as to HDF5, whatever the layout
        ref = self.fresh("gen.h5")
        C.gen(ref + ":/x", "--shape", "11,13", "--seed", "9", "--chunks",
              "4,5", "--compress", "none")
        want = h5_read(ref, "/x")
        out = self.fresh("gen.zarr")
        C.gen(out + ":/x", "--shape", "11,13", "--seed", "9", "--chunks",
              "4,5", "--shards", "8,10", "--zarr-format", "3")
        self.check_meta(out, "/x", (4, 5), (8, 10), [("zstd", {})])
        self.assertSameArray(S.read_array(out, "/x"), want)
        # run: a pipeline's outputs to v3, sharded
        src3 = self.write_v3("run_in.zarr", "--compress", "zstd:3",
                             "--shards", "8,10", "--chunks", "4,5",
                             array="/f8")
        out = self.fresh("run_out.zarr")
        doc = {"inputs": {"x": src3 + ":/f8"},
               "steps": [{"name": "y", "op": "multiply", "args": ["x", 2]},
                         {"name": "m", "op": "mean", "args": ["x"],
                          "axis": 0}],
               "outputs": {"y": out + ":/y", "m": out + ":/m"}}
        pj = self.fresh("run.json")
        with open(pj, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--zarr-format", "3", pj)
        a = self.data["/f8"]
        with np.errstate(over="ignore"):
            self.assertSameArray(S.read_array(out, "/y"), a * 2)
        self.assertEqual(S.check_array_meta(S.read_meta(out, "/y")), [])
        np.testing.assert_allclose(S.read_array(out, "/m"),
                                   np.mean(a, axis=0), rtol=1e-12)
        # one-step op with a v3 output
        out = self.fresh("sum.zarr")
        C.run("sum", src3 + ":/f8", "--axis", "0", "-o", out + ":/s",
              "--zarr-format", "3", "--quiet")
        self.assertEqual(S.read_meta(out, "/s")["zarr_format"], 3)
        ref = self.fresh("sum.h5")
        C.run("sum", self.src + ":/f8", "--axis", "0", "-o", ref + ":/s",
              "--quiet")
        self.assertSameArray(S.read_array(out, "/s"), h5_read(ref, "/s"))
        if HAVE_ZARRITA:
            self.assertSameArray(zarrita_read(out, "/s")["/s"],
                                 h5_read(ref, "/s"))

    def test_same_pipeline_same_results_in_every_format(self):
        # no NaN or inf here: the printed results are compared as JSON
        a = np.random.default_rng(8).normal(size=SHAPE) * 1000
        h5 = self.fresh("p.h5")
        h5_write(h5, {"/f8": (a, CHUNKS)})
        stores = {"h5": h5 + ":/f8"}
        v2 = self.fresh("p_v2.zarr")
        C.copy(h5 + ":/f8", v2 + ":/f8", "--compress", "zstd:3")
        stores["v2"] = v2 + ":/f8"
        stores["v3"] = self.write_v3("p_v3.zarr", "--compress", "gzip:3",
                                     src=h5, array="/f8") + ":/f8"
        stores["v3_sharded"] = self.write_v3(
            "p_v3s.zarr", "--compress", "blosc:lz4:5:shuffle", "--shards",
            "8,10", "--chunks", "4,5", src=h5, array="/f8") + ":/f8"
        spec = self.fresh("p_spec.zarr")
        # the same chunks everywhere: sums over chunks in the same order
        S.write_array(spec, "/f8", a, SHARDS, [shard_(
            CHUNKS, [b_("big"), zstd_(2, True)], loc="start")])
        stores["v3_spec_sharded_start"] = spec + ":/f8"
        results = {}
        for kind, arr in stores.items():
            doc = {"inputs": {"x": arr},
                   "steps": [{"name": "m", "op": "mean", "args": ["x"],
                              "axis": 0},
                             {"name": "h", "op": "histogram", "args": ["x"],
                              "bins": 10, "range": [-3000, 3000]},
                             {"name": "s", "op": "sum", "args": ["x"]}],
                   "print": ["m", "h", "s"]}
            pj = self.fresh("p_%s.json" % kind)
            with open(pj, "w") as f:
                json.dump(doc, f)
            with self.subTest(kind=kind):
                out = C.run("run", "--quiet", "--json", "--threads", "2",
                            pj).stdout
                results[kind] = json.loads(out)
        ref = results.pop("h5")
        counts, _edges = np.histogram(a, 10, (-3000, 3000))
        self.assertEqual(ref["h"]["counts"], counts.tolist())
        for kind, got in results.items():
            self.assertEqual(got, ref, kind)


# -- bad input -----------------------------------------------------------

class V3BadInput(V3Case):

    @classmethod
    def make_fixtures(cls):
        cls.a = np.arange(SHAPE[0] * SHAPE[1], dtype="<f8").reshape(SHAPE)

    def store_with(self, name, path, codecs, chunks=CHUNKS, data=None,
                   **kw):
        store = self.fresh(name + ".zarr")
        S.write_group(store, "/")
        S.write_array(store, path, self.a if data is None else data,
                      chunks, codecs, **kw)
        return store

    def refused(self, store, *needles, info=False):
        out = self.fresh("refused.h5")
        p = C.copy(store, out, "--compress", "none", expect=None)
        self.assertCleanError(p, 1, *needles)
        self.assertFalse(os.path.exists(out), "output left behind")
        out = self.fresh("refused.zarr")
        p = C.copy(store, out, "--zarr-format", "3", expect=None)
        self.assertCleanError(p, 1, *needles)
        self.assertFalse(os.path.exists(out), "output left behind")
        if info:
            self.assertCleanError(C.run("info", store, expect=None), 1,
                                  *needles)

    def edit_meta(self, store, path, fn):
        f = os.path.join(S._node_dir(store, path), "zarr.json")
        with open(f) as fh:
            meta = json.load(fh)
        fn(meta)
        with open(f, "w") as fh:
            json.dump(meta, fh)

    def test_unknown_codec(self):
        store = self.store_with("codec", "/unk", [b_()])
        self.edit_meta(store, "/unk", lambda m: m["codecs"].append(
            {"name": "lzfoo", "configuration": {}}))
        self.refused(store, "/unk", "lzfoo", info=True)
        # inside a shard too
        store = self.store_with("codec2", "/unk_inner",
                                [shard_(CHUNKS, [b_()])], chunks=SHARDS)
        self.edit_meta(store, "/unk_inner", lambda m: m["codecs"][0][
            "configuration"]["codecs"].append({"name": "lzbar"}))
        self.refused(store, "/unk_inner", "lzbar", info=True)

    def test_unsupported_data_types(self):
        for dt in ("complex64", "complex128", "float16", "string",
                   "int4", "r16"):
            with self.subTest(dtype=dt):
                store = self.fresh("dt.zarr")
                S.write_group(store, "/")
                S.write_array(store, "/t_" + dt,
                              np.zeros((4, 5), "u1"), (4, 5),
                              [b_()], data_type=dt)
                self.refused(store, "/t_" + dt, dt, info=True)

    def test_codec_configuration_out_of_range(self):
        for name, codecs, needle in [
                ("zstd99", [b_(), zstd_(99)], "zstd"),
                ("gzip12", [b_(), gzip_(12)], "gzip"),
                ("gzip_neg", [b_(), gzip_(-1)], "gzip"),
                ("blosc_foo", [b_(), blosc_("lz4", 5, "foo", 8)], "blosc"),
                ("blosc_cname", [b_(), blosc_("snappyx", 5, "shuffle", 8)],
                 "blosc"),
                ("blosc_clevel", [b_(), blosc_("lz4", 10, "shuffle", 8)],
                 "blosc"),
                ("endian", [b_("middle")], "endian"),
                ("transpose_bad", [transpose_((0, 0)), b_()], "transpose"),
                ("shard_not_divisor", [shard_((3, 5), [b_()])], "shard")]:
            with self.subTest(case=name):
                store = self.fresh(name + ".zarr")
                S.write_group(store, "/")
                # written with a valid chain, then the metadata edited: the
                # writer itself refuses out-of-range settings
                S.write_array(store, "/" + name, self.a,
                              SHARDS if name.startswith("shard") else CHUNKS,
                              [b_()])
                self.edit_meta(store, "/" + name,
                               lambda m, c=codecs: m.update(codecs=c))
                self.refused(store, "/" + name, needle, info=True)

    def sharded_store(self, name):
        return self.store_with(name, "/s", [shard_(CHUNKS, [b_()])],
                               chunks=SHARDS)

    def rewrite_index(self, store, fn, coords=(0, 0)):
        index, key, size, isize = S.shard_index(store, "/s", coords)
        index = index.copy()
        fn(index, size, isize)
        with open(key, "rb") as f:
            data = f.read()
        idx = S.encode_chunk(index, [b_(), CRC], 0)
        with open(key, "wb") as f:
            f.write(data[:len(data) - isize] + idx)

    def test_shard_index_outside_the_shard(self):
        store = self.sharded_store("outside")

        def fn(index, size, isize):
            index[1, 1] = (size - 8, 160)   # runs past the end
        self.rewrite_index(store, fn)
        self.refused(store, "/s", ("index", "shard"))

    def test_shard_index_entries_overlap(self):
        store = self.sharded_store("overlap")

        def fn(index, size, isize):
            index[0, 1, 0] = index[0, 0, 0] + 8   # into chunk (0, 0)
        self.rewrite_index(store, fn)
        self.refused(store, "/s", "overlap")

    def test_crc32c_mismatch_in_a_chunk(self):
        store = self.store_with("crc", "/c", [b_(), CRC])
        key = os.path.join(store, "c", "c", "1", "2")
        with open(key, "r+b") as f:
            f.seek(3)
            f.write(b"\xff")
        self.refused(store, "/c", "crc32c")
        p = C.run("verify", store, expect=None)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        damaged = [ln for ln in p.stdout.splitlines()
                   if ln.startswith("damaged:")]
        self.assertEqual(len(damaged), 1, p.stdout)
        self.assertIn("c/1/2", damaged[0])

    def test_crc32c_mismatch_in_a_shard_index(self):
        store = self.sharded_store("crcidx")
        _i, key, size, isize = S.shard_index(store, "/s", (1, 0))
        with open(key, "r+b") as f:
            f.seek(size - isize + 2)
            f.write(b"\x7f")
        self.refused(store, "/s", "crc32c")

    def test_node_type_neither_array_nor_group(self):
        store = self.store_with("nodetype", "/odd", [b_()])
        self.edit_meta(store, "/odd", lambda m: m.update(node_type="table"))
        self.refused(store, "/odd", ("node_type", "table"), info=True)

    def test_mixed_v2_and_v3_in_one_folder(self):
        store = self.store_with("mixed", "/mix", [b_()])
        with open(os.path.join(store, "mix", ".zarray"), "w") as f:
            json.dump({"zarr_format": 2, "shape": list(SHAPE),
                       "chunks": list(CHUNKS), "dtype": "<f8",
                       "compressor": None, "fill_value": 0, "order": "C",
                       "filters": None}, f)
        self.refused(store, "/mix", (".zarray", "v2", "mixed", "both"),
                     info=True)

    def test_verify_lists_only_the_damaged_shards_chunks(self):
        store = self.store_with("vshard", "/s", [shard_(CHUNKS, [b_(),
                                                                 zstd_(3)])],
                                chunks=SHARDS, data=C.make_data(
                                    "<f8", SHAPE, 77))
        # garble inner chunk (1, 1) of shard (1, 0): its zstd frame only
        index, key, _size, _isize = S.shard_index(store, "/s", (1, 0))
        off, nb = (int(v) for v in index[0, 1])
        with open(key, "r+b") as f:
            f.seek(off)
            f.write(b"\0" * min(nb, 8))
        p = C.run("verify", store, expect=None)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        damaged = [ln for ln in p.stdout.splitlines()
                   if ln.startswith("damaged:")]
        self.assertEqual(len(damaged), 1, p.stdout)
        self.assertIn("c/1/0", damaged[0])
        # array coordinates of that inner chunk: (2 + 0, 0 + 1)
        self.assertIn("(2, 1)", damaged[0])
        # garble shard (0, 1)'s index: its chunks (not the others) fail
        _i, key, size, isize = S.shard_index(store, "/s", (0, 1))
        with open(key, "r+b") as f:
            f.seek(size - 3)
            f.write(b"\0\0\0")
        p = C.run("verify", store, expect=None)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        damaged = [ln for ln in p.stdout.splitlines()
                   if ln.startswith("damaged:")]
        for ln in damaged:
            self.assertTrue("c/0/1" in ln or "c/1/0" in ln, ln)
        self.assertEqual(sum("c/1/0" in ln for ln in damaged), 1, p.stdout)
        self.assertTrue(any("c/0/1" in ln for ln in damaged), p.stdout)


# -- partial reads of a shard ---------------------------------------------

SYSCALL = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
RESULT = re.compile(r"\)\s+=\s+(-?\d+)")


def bytes_read_per_file(log, cwd):
    """{path: bytes} read by read/pread64/readv/preadv from each opened
    file, from an `strace -f` log (unfinished/resumed calls joined; openat
    relative to a folder's fd resolved)."""
    fds = {}        # fd -> path (one process; threads share the table)
    pending = {}    # pid -> (call, args) of an unfinished call
    got = {}

    def done(call, args, rest):
        m = RESULT.search(rest)
        if not m:
            return
        ret = int(m.group(1))
        if call in ("openat", "open") and ret >= 0:
            q = re.search(r'"([^"]*)"', args)
            if q:
                base = cwd
                first = args.split(",")[0].strip()
                if call == "openat" and first.isdigit():
                    base = fds.get(int(first), cwd)
                fds[ret] = os.path.normpath(os.path.join(base, q.group(1)))
        elif call == "close":
            fd = args.split(")")[0].strip()
            if fd.isdigit():
                fds.pop(int(fd), None)
        elif call in ("read", "pread64", "readv", "preadv", "preadv2") \
                and ret > 0:
            fd = args.split(",")[0].strip()
            if fd.isdigit() and int(fd) in fds:
                path = fds[int(fd)]
                got[path] = got.get(path, 0) + ret

    for line in log.splitlines():
        m = RESUMED.match(line)
        if m:
            pid, call, rest = m.groups()
            call0, args = pending.pop(pid, (call, ""))
            done(call0, args + rest, rest)
            continue
        m = SYSCALL.match(line)
        if not m:
            continue
        pid, call, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = (call, rest)
            continue
        done(call, rest, rest)
    return got


@unittest.skipUnless(STRACE, "strace missing")
class V3ShardReads(V3Case):

    @classmethod
    def make_fixtures(cls):
        cls.a = C.make_data("<f8", (40, 60), 91)
        cls.store = cls.path("big.zarr")
        # 1 shard of 40 x 60 holding 4 x 6 inner chunks of 10 x 10
        S.write_group(cls.store, "/")
        S.write_array(cls.store, "/x", cls.a, (40, 60),
                      [shard_((10, 10), [b_(), zstd_(3)])])

    def test_one_inner_chunk_reads_its_bytes_and_the_index(self):
        index, key, size, isize = S.shard_index(self.store, "/x", (0, 0))
        off, nb = (int(v) for v in index[1, 2])
        out = self.fresh("one.h5")
        log = self.fresh("strace.log")
        doc = {"inputs": {"x": self.store + ":/x"},
               "steps": [{"name": "y", "op": "slice", "args": ["x"],
                          "index": [[12, 18], [23, 27]]}],
               "outputs": {"y": out + ":/y"}}
        pj = self.fresh("slice.json")
        with open(pj, "w") as f:
            json.dump(doc, f)
        # LeakSanitizer cannot run under ptrace (an ASan build)
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(
            o for o in (env.get("ASAN_OPTIONS"), "detect_leaks=0") if o)
        subprocess.run([STRACE, "-f", "-qq", "-o", log, "-e",
                        "trace=openat,open,close,read,pread64,readv,preadv,"
                        "preadv2", os.path.abspath(C.CHUNKCTL), "run",
                        "--quiet", "--threads", "1", pj], check=True,
                       cwd=self.tmp, env=env,
                       stdout=subprocess.DEVNULL, timeout=C.TIMEOUT)
        self.assertSameArray(h5_read(out, "/y"), self.a[12:18, 23:27])
        with open(log) as f:
            got = bytes_read_per_file(f.read(), self.tmp)
        shard = os.path.realpath(key)
        read = sum(n for p, n in got.items()
                   if os.path.realpath(p) == shard)
        self.assertGreater(read, 0, "no read() of the shard seen (mmap?)")
        self.assertLessEqual(read, nb + isize,
                             "read %d bytes of a %d-byte shard; the chunk "
                             "is %d bytes and the index %d" %
                             (read, size, nb, isize))


class V3NonFiniteAttrs(V3Case):
    """Attributes holding NaN and +-Infinity: Python's json, and so
    zarr-python 3, writes them as the bare words in zarr.json.  chunkctl
    reads such a store and writes them the same way (it once wrote the
    words and then refused its own output).  A NaN fill value other than
    the canonical one is hex, as the spec says."""

    ATTRS = {"missing_value": float("nan"), "valid_max": float("inf"),
             "valid_min": float("-inf"), "units": "K"}

    @classmethod
    def make_fixtures(cls):
        cls.a = np.arange(12.0).reshape(3, 4)
        S.write_group(cls.path("py.zarr"), attributes={"title": "t",
                                                       "bad": float("nan")})
        S.write_array(cls.path("py.zarr"), "/t", cls.a, (2, 2),
                      attributes=cls.ATTRS)
        with h5py.File(cls.path("f.h5"), "w") as f:
            d = f.create_dataset("t", data=cls.a, chunks=(2, 2))
            for k, v in cls.ATTRS.items():
                d.attrs[k] = v

    def check_h5(self, path):
        with h5py.File(path, "r") as f:
            at = f["t"].attrs
            self.assertTrue(np.isnan(at["missing_value"]))
            self.assertEqual(float(at["valid_max"]), np.inf)
            self.assertEqual(float(at["valid_min"]), -np.inf)
            self.assertSameArray(f["t"][()], self.a)

    def test_zarr_python_style_store_is_read(self):
        C.info(self.path("py.zarr"))
        out = self.fresh("back.h5")
        C.copy(self.path("py.zarr"), out, "--compress", "none")
        self.check_h5(out)

    def test_written_and_read_back(self):
        out = self.fresh("o.zarr")
        C.copy(self.path("f.h5"), out, "--zarr-format", "3")
        at = S.read_meta(out)["attributes"]
        self.assertTrue(np.isnan(at["missing_value"]))
        self.assertEqual(at["valid_max"], np.inf)
        self.assertEqual(at["valid_min"], -np.inf)
        self.assertSameArray(S.read_array(out, "/"), self.a)
        back = self.fresh("back2.h5")
        C.copy(out, back + ":/t", "--compress", "none")
        self.check_h5(back)

    def test_nan_fill_with_a_payload_kept_as_hex(self):
        """v3's "NaN" is the canonical NaN; another keeps its bits."""
        for dt, hexbits in (("<f8", "7ff8000000000001"),
                            ("<f8", "fff8000000000000"),
                            ("<f4", "7fc00001")):
            src = self.fresh("nan%s.h5" % hexbits)
            nan = np.frombuffer(bytes.fromhex(hexbits)[::-1], dt)[0]
            with h5py.File(src, "w") as f:
                f.create_dataset("v", shape=(4,), dtype=dt, chunks=(2,),
                                 fillvalue=nan)
            out = self.fresh("nan%s.zarr" % hexbits)
            C.copy(src, out, "--zarr-format", "3")
            self.assertEqual(S.read_meta(out)["fill_value"], "0x" + hexbits)
            back = self.fresh("back%s.h5" % hexbits)
            C.copy(out, back + ":/v")
            with h5py.File(back, "r") as f:
                got = np.array(f["v"].fillvalue, dt).tobytes()[::-1].hex()
            self.assertEqual(got, hexbits)


class V3ShuffleCodec(V3Case):
    """A numcodecs.shuffle of whole elements before gzip or zstd (what
    chunkctl writes for gzip:4:shuffle) is that compressor's shuffle: info
    says so and copies keep it, to HDF5 (h5py sees the shuffle filter) and
    to v3 (the chain keeps the codec).  It was once dropped."""

    @classmethod
    def make_fixtures(cls):
        cls.a = np.random.default_rng(5).integers(
            0, 100, (13, 7)).astype(np.float32)
        S.write_array(cls.path("s.zarr"), "/", cls.a, (4, 3),
                      codecs=[b_(), {"name": "numcodecs.shuffle",
                                     "configuration": {"elementsize": 4}},
                              gzip_(4)])

    def test_info_names_the_shuffle(self):
        doc = json.loads(C.run("info", "--json",
                               self.path("s.zarr")).stdout)
        self.assertEqual(doc["arrays"][0]["compressor"], "gzip:4:shuffle")

    def test_copies_keep_it(self):
        h5 = self.fresh("o.h5")
        C.copy(self.path("s.zarr"), h5 + ":/x")
        with h5py.File(h5, "r") as f:
            self.assertTrue(f["x"].shuffle)
            self.assertEqual(f["x"].compression, "gzip")
            self.assertSameArray(f["x"][()], self.a)
        v3 = self.fresh("o.zarr")
        C.copy(self.path("s.zarr"), v3, "--zarr-format", "3")
        names = [c["name"] for c in S.read_meta(v3)["codecs"]]
        self.assertEqual(names, ["bytes", "numcodecs.shuffle", "gzip"])
        self.assertSameArray(S.read_array(v3, "/"), self.a)


class V3XarrayFill(V3Case):
    """xarray's Zarr v3 convention for a float array's _FillValue
    attribute: the base64 text of the value as a little-endian float64
    (xarray.backends.zarr.FillValueCoder, which reads no other form).
    chunkctl reads it as the missing value and writes it so."""

    @staticmethod
    def coded(v):
        import base64
        import struct
        return base64.standard_b64encode(struct.pack("<d", v)).decode()

    @classmethod
    def make_fixtures(cls):
        cls.a = np.arange(24.0).reshape(4, 6)
        cls.a[1, 2] = cls.a[3, 5] = -9999.0
        S.write_group(cls.path("x.zarr"))
        S.write_array(cls.path("x.zarr"), "/t", cls.a, (2, 3),
                      dimension_names=["y", "x"],
                      attributes={"_FillValue": cls.coded(-9999.0),
                                  "units": "K"})
        with h5py.File(cls.path("f.h5"), "w") as f:
            d = f.create_dataset("t", data=cls.a.astype(np.float32),
                                 chunks=(2, 3))
            d.attrs["_FillValue"] = np.float32(-9999.0)

    def test_read_as_the_missing_value(self):
        want = self.a[self.a != -9999.0].mean()
        p = C.run("reduce", "--quiet", "mean", self.path("x.zarr") + ":/t")
        self.assertAlmostEqual(float(p.stdout), want, delta=1e-12)

    def test_written_as_xarray_writes_it(self):
        out = self.fresh("o.zarr")
        C.run("copy", "--quiet", self.path("f.h5") + ":/t", out,
              "--zarr-format", "3")
        at = S.read_meta(out)["attributes"]
        self.assertEqual(at["_FillValue"], self.coded(-9999.0))
        want = self.a[self.a != -9999.0].mean()
        p = C.run("reduce", "--quiet", "mean", out)
        self.assertAlmostEqual(float(p.stdout), want, delta=1e-5)

    def test_back_to_hdf5_as_a_number(self):
        out = self.fresh("back.h5")
        C.run("copy", "--quiet", self.path("x.zarr") + ":/t", out + ":/t")
        with h5py.File(out, "r") as f:
            self.assertEqual(float(f["t"].attrs["_FillValue"]), -9999.0)
            self.assertEqual(f["t"].attrs["units"], "K")


if __name__ == "__main__":
    C.main()
