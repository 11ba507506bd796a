#!/usr/bin/python3
"""tests/fuzz/make_corpus.py - writes the seed corpora in tests/fuzz/corpus/.

Every seed is made by an independent implementation: zarr-python 2 and
numcodecs (Debian's python3-zarr, python3-numcodecs) for .zarray texts,
chunk files and compressed buffers, python-zstandard and crc32c for Zarr v3
chunks and shards, NumPy for the bytes; zarr.json texts follow the Zarr v3
core spec's examples.  None is made by chunkctl.  The header bytes in front
of a seed are the ones each fuzz_<target>.c reads (see its comment).
Deterministic: run it again and the files come out the same.

    /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import base64
import gzip
import json
import lzma
import os
import shutil
import struct
import tempfile

import crc32c
import numcodecs
import numpy as np
import zarr
import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gz(b, level):
    """A gzip member with no time stamp (numcodecs' GZip writes the time,
    which would make the seeds differ from run to run)."""
    return gzip.compress(bytes(b), compresslevel=level, mtime=0)


def crc(b):
    return b + struct.pack("<I", crc32c.crc32c(b))


def data(dtype, shape, seed=1):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if np.dtype(dtype) == np.bool_:
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if np.dtype(dtype).kind == "f":
        return np.round(rng.normal(10, 5, n), 2).astype(dtype).reshape(shape)
    return (np.arange(n) % 50 + rng.integers(0, 3, n)).astype(dtype).reshape(
        shape)


# ---- fuzz_zarr_meta: .zarray, .zgroup, .zattrs as zarr-python writes them


def zarr_meta():
    tmp = tempfile.mkdtemp()
    try:
        cases = {
            "blosc_f8": dict(shape=(100, 30), chunks=(10, 30), dtype="<f8"),
            "zstd_i2_F": dict(shape=(7, 5), chunks=(3, 2), dtype=">i2",
                              order="F", compressor=numcodecs.Zstd(3),
                              fill_value=-7),
            "none_bool": dict(shape=(9,), chunks=(4,), dtype="|b1",
                              compressor=None, fill_value=True),
            "filters_u1": dict(shape=(50,), chunks=(50,), dtype="|u1",
                               compressor=numcodecs.Zlib(1),
                               filters=[numcodecs.Delta(dtype="u1")]),
            "nan_slash": dict(shape=(4, 4, 4), chunks=(2, 2, 2), dtype="<f4",
                              fill_value=float("nan"),
                              dimension_separator="/",
                              compressor=numcodecs.GZip(5)),
            "lz4_scaleoffset": dict(
                shape=(20,), chunks=(8,), dtype="<f8",
                compressor=numcodecs.LZ4(),
                filters=[numcodecs.FixedScaleOffset(offset=10, scale=100,
                                                    dtype="<f8",
                                                    astype="<i4")]),
            "bz2_u8_big": dict(shape=(3,), chunks=(3,), dtype="<u8",
                               compressor=numcodecs.BZ2(1),
                               fill_value=18446744073709551615),
        }
        for name, kw in cases.items():
            p = os.path.join(tmp, name + ".zarr")
            zarr.open_array(p, mode="w", **kw)
            with open(os.path.join(p, ".zarray")) as f:
                put("fuzz_zarr_meta", name + ".zarray", f.read())
        g = zarr.open_group(os.path.join(tmp, "g.zarr"), mode="w")
        g.attrs.update({"title": "t\u00e9st", "n": 3, "x": 1.5,
                        "flag": True, "list": [1, 2], "nested": {"a": None}})
        with open(os.path.join(tmp, "g.zarr", ".zgroup")) as f:
            put("fuzz_zarr_meta", "group.zgroup", f.read())
        with open(os.path.join(tmp, "g.zarr", ".zattrs")) as f:
            put("fuzz_zarr_meta", "attrs.zattrs", f.read())
    finally:
        shutil.rmtree(tmp)
    # zarr-python writes non-finite floats bare
    put("fuzz_zarr_meta", "nonfinite.zattrs",
        '{\n    "scale_factor": NaN,\n    "max": Infinity,\n'
        '    "min": -Infinity,\n    "units": "K"\n}')


# ---- fuzz_zarr3_meta: zarr.json after the Zarr v3 core spec's examples

Z3_ARRAY = {
    "zarr_format": 3, "node_type": "array", "shape": [10000, 1000],
    "data_type": "float64",
    "chunk_grid": {"name": "regular",
                   "configuration": {"chunk_shape": [1000, 100]}},
    "chunk_key_encoding": {"name": "default",
                           "configuration": {"separator": "/"}},
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
               {"name": "gzip", "configuration": {"level": 1}}],
    "fill_value": "NaN", "attributes": {"foo": 42, "bar": "apples",
                                        "baz": [1, 2, 3, 4]},
    "dimension_names": ["rows", "columns"],
}


def zarr3_meta():
    put("fuzz_zarr3_meta", "spec_array.json", json.dumps(Z3_ARRAY, indent=4))
    sh = dict(Z3_ARRAY)
    sh["codecs"] = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [100, 10],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes",
                          "configuration": {"endian": "little"}},
                         {"name": "crc32c"}],
        "index_location": "end"}}]
    sh["dimension_names"] = ["rows", None]
    put("fuzz_zarr3_meta", "spec_sharded.json", json.dumps(sh, indent=4))
    put("fuzz_zarr3_meta", "group.json", json.dumps(
        {"zarr_format": 3, "node_type": "group",
         "attributes": {"spam": "ham", "eggs": 42}}))
    t = {"zarr_format": 3, "node_type": "array", "shape": [5, 4, 3],
         "data_type": "float32",
         "chunk_grid": {"name": "regular",
                        "configuration": {"chunk_shape": [2, 4, 3]}},
         "chunk_key_encoding": {"name": "v2",
                                "configuration": {"separator": "."}},
         "codecs": [{"name": "transpose",
                     "configuration": {"order": [2, 0, 1]}},
                    {"name": "bytes", "configuration": {"endian": "big"}},
                    {"name": "numcodecs.shuffle",
                     "configuration": {"elementsize": 4}},
                    {"name": "zstd",
                     "configuration": {"level": 0, "checksum": True}},
                    {"name": "crc32c"}],
         "fill_value": "0x7fc00000"}
    put("fuzz_zarr3_meta", "transpose_zstd.json", json.dumps(t))
    b = {"zarr_format": 3, "node_type": "array", "shape": [],
         "data_type": "bool",
         "chunk_grid": {"name": "regular",
                        "configuration": {"chunk_shape": []}},
         "chunk_key_encoding": {"name": "default"},
         "codecs": [{"name": "bytes"},
                    {"name": "blosc", "configuration": {
                        "cname": "zstd", "clevel": 5, "shuffle": "bitshuffle",
                        "typesize": 1, "blocksize": 0}}],
         "fill_value": False}
    put("fuzz_zarr3_meta", "scalar_blosc.json", json.dumps(b))


# ---- fuzz_codec: byte 0 the codec, bytes 1-3 the decoded size

K = dict(none=0, zstd=1, zlib=2, gzip=3, blosc=4, lz4=5, lzma=6,
         lzma_spec=7, bz2=8, unshuffle=9)


def codec_seed(name, kind, raw, enc, extra=b""):
    n = len(raw)
    put("fuzz_codec", name,
        bytes([K[kind], n & 255, n >> 8 & 255, n >> 16]) + extra + enc)


def codec():
    raw = data("<f4", (256,)).tobytes()
    codec_seed("none", "none", raw, raw)
    codec_seed("zstd", "zstd", raw, numcodecs.Zstd(3).encode(raw))
    codec_seed("zstd_checksum", "zstd", raw, zstandard.ZstdCompressor(
        level=1, write_checksum=True).compress(raw))
    codec_seed("zlib", "zlib", raw, numcodecs.Zlib(5).encode(raw))
    codec_seed("gzip", "gzip", raw, gz(raw, 5))
    codec_seed("blosc_lz4_shuffle", "blosc", raw,
               numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE).encode(
                   np.frombuffer(raw, "<f4")))
    codec_seed("blosc_zstd_bitshuffle", "blosc", raw,
               numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE).encode(
                   np.frombuffer(raw, "<f4")))
    codec_seed("lz4", "lz4", raw, numcodecs.LZ4().encode(raw))
    codec_seed("lzma_xz", "lzma", raw, numcodecs.LZMA().encode(raw))
    codec_seed("lzma_alone", "lzma", raw,
               numcodecs.LZMA(format=lzma.FORMAT_ALONE, preset=1).encode(
                   raw))
    # raw format: byte 4 = format 3 | LZMA2 << 2 | preset 1 << 4
    codec_seed("lzma_raw", "lzma_spec", raw,
               numcodecs.LZMA(format=lzma.FORMAT_RAW, filters=[
                   dict(id=lzma.FILTER_LZMA2, preset=1)]).encode(raw),
               bytes([3 | 2 << 2 | 1 << 4]))
    codec_seed("bz2", "bz2", raw, numcodecs.BZ2(1).encode(raw))
    put("fuzz_codec", "unshuffle_4", bytes([K["unshuffle"], 4]) +
        numcodecs.Shuffle(4).encode(raw[:200]).tobytes())


# ---- fuzz_filter: header (see fuzz_filter.c), then the encoded bytes

DT = {"bool": 1, "i1": 2, "i2": 3, "i4": 4, "i8": 5, "u1": 6, "u2": 7,
      "u4": 8, "u8": 9, "f4": 10, "f8": 11}
FID = dict(delta=1, shuffle=2, fso=3, quantize=4, bitround=5, astype=6,
           packbits=7, categorize=8)


def stage(fid, dtype=0, astype=0, es=0, digits=0, keep=0, off=0, scale=0):
    return bytes([FID[fid] - 1, dtype, astype, es, digits & 255, keep,
                  off & 255, scale & 255])


def filter_seed(name, dt, n, stages, enc):
    b0 = (DT[dt] - 1) | (len(stages) - 1) << 4
    put("fuzz_filter", name, bytes([b0, n]) + b"".join(stages) + enc)


def filters():
    n = 40
    x4 = data("<i4", (n,))
    filter_seed("delta_i4_i2", "i4", n,
                [stage("delta", DT["i4"], DT["i2"])],
                numcodecs.Delta("<i4", "<i2").encode(x4).tobytes())
    f8 = data("<f8", (n,))
    filter_seed("fso_f8_u1", "f8", n,
                [stage("fso", DT["f8"], DT["u1"], off=5, scale=40)],
                numcodecs.FixedScaleOffset(5, 10, "<f8", "u1").encode(
                    f8 / 10).tobytes())
    filter_seed("quantize_f8_f4", "f8", n,
                [stage("quantize", DT["f8"], DT["f4"], digits=2)],
                numcodecs.Quantize(2, "<f8", "<f4").encode(f8).tobytes())
    f4 = data("<f4", (n,))
    filter_seed("bitround_f4", "f4", n, [stage("bitround", keep=7)],
                numcodecs.BitRound(7).encode(f4).tobytes())
    filter_seed("astype_f8_f4", "f8", n,
                [stage("astype", DT["f8"], DT["f4"])],
                numcodecs.AsType("<f4", "<f8").encode(f8).tobytes())
    b = data("bool", (n,))
    filter_seed("packbits", "bool", n, [stage("packbits")],
                numcodecs.PackBits().encode(b).tobytes())
    filter_seed("shuffle_8", "f8", n, [stage("shuffle", es=8)],
                numcodecs.Shuffle(8).encode(f8.tobytes()).tobytes())
    # categorize: labels are the fuzzer's own (l * 1.5 - 3), stored as u1
    cats = (np.arange(n) % 4).astype("u1")
    filter_seed("categorize_u1", "f8", n,
                [stage("categorize", DT["f8"], DT["u1"], es=3)],
                cats.tobytes())
    filter_seed("delta_shuffle", "i4", n,
                [stage("delta", DT["i4"], DT["i4"]), stage("shuffle", es=4)],
                numcodecs.Shuffle(4).encode(
                    numcodecs.Delta("<i4").encode(x4)).tobytes())


# ---- fuzz_z3_chain: byte 0 the chain (CHAINS in fuzz_z3_chain.c)


def z3_chain():
    def s(i, name, b):
        put("fuzz_z3_chain", "%02d_%s" % (i, name), bytes([i]) + b)

    zc = zstandard.ZstdCompressor(level=0, write_checksum=True)
    s(0, "bytes_le", data("<u2", (4, 6)).tobytes())
    s(1, "bytes_be_crc", crc(data(">f8", (3, 5)).tobytes()))
    s(2, "transpose_zstd", zc.compress(
        np.ascontiguousarray(data("<i4", (4, 6)).T).tobytes()))
    s(3, "transpose_be_gzip_crc", crc(gz(
        np.ascontiguousarray(data(">f4", (5, 3)).T).tobytes(), 1)))
    s(4, "blosc", numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE).encode(
        data("<f4", (8, 8))))
    t = np.ascontiguousarray(data(">i2", (2, 3, 4)).transpose(2, 0, 1))
    s(5, "transpose3_be_shuffle_zlib", numcodecs.Zlib(1).encode(
        numcodecs.Shuffle(2).encode(t.tobytes())))
    s(6, "lz4", numcodecs.LZ4().encode(data("u1", (64,)).tobytes()))
    s(7, "lzma_crc", crc(numcodecs.LZMA().encode(
        data("<i8", (3, 4)).tobytes())))
    s(8, "bz2", numcodecs.BZ2(1).encode(data("<f8", (3, 4)).tobytes()))
    s(9, "shuffle", numcodecs.Shuffle(4).encode(
        data("<u4", (6, 2)).tobytes()).tobytes())
    s(10, "transpose_crc_shuffle", crc(np.ascontiguousarray(
        data("bool", (5, 7)).T).tobytes()))
    s(11, "gzip_crc_crc", crc(crc(gz(data("i1", (9,)).tobytes(), 1))))
    s(12, "crc_shuffle", numcodecs.Shuffle(2).encode(
        crc(data("<u2", (3, 5)).tobytes())).tobytes())
    s(13, "crc_zstd", numcodecs.Zstd(1).encode(
        crc(data("<f4", (4, 2)).tobytes())))


# ---- fuzz_h5_filters: the HDF5 pipeline's filters on raw chunk bytes

H5F = dict(deflate=0, shuffle=1, zstd=2, blosc=3)


def h5_seed(name, filts, shuf, raw, enc, mask=0):
    b0 = len(filts) | (shuf - 1) << 2
    n = len(raw)
    put("fuzz_h5_filters", name, bytes([b0, n & 255, n >> 8, mask]) +
        bytes(H5F[f] for f in filts) + enc)


def h5_filters():
    raw = data("<f8", (30, 4)).tobytes()
    sh = numcodecs.Shuffle(8).encode(raw).tobytes()
    h5_seed("deflate", ["deflate"], 8, raw, numcodecs.Zlib(4).encode(raw))
    h5_seed("shuffle_deflate", ["shuffle", "deflate"], 8, raw,
            numcodecs.Zlib(4).encode(sh))
    h5_seed("shuffle_zstd", ["shuffle", "zstd"], 8, raw,
            numcodecs.Zstd(3).encode(sh))
    h5_seed("blosc", ["blosc"], 8, raw, numcodecs.Blosc(
        "blosclz", 5, numcodecs.Blosc.SHUFFLE).encode(
            np.frombuffer(raw, "<f8")))
    # the writer skipped deflate (mask bit 1): only the shuffle is undone
    h5_seed("shuffle_deflate_skipped", ["shuffle", "deflate"], 8, raw, sh,
            mask=2)
    h5_seed("none", [], 1, raw[:40], raw[:40])


# ---- fuzz_h5_chunks: byte 0 the dataset (DATASETS in fuzz_h5_chunks.c),
# then per chunk a u16 length, a filter mask byte and the stored bytes


def h5_chunks():
    v = np.array([(i * 7) % 23 - 5 + i / 10.0 for i in range(120)])
    v = v.reshape(12, 10)
    zc = zstandard.ZstdCompressor(level=3, write_content_size=True)

    def shuf(b, es):
        return numcodecs.Shuffle(es).encode(b).tobytes()

    sets = [  # dtype, encode (HDF5 runs the filters in this order)
        ("<f4", lambda b: zc.compress(shuf(b, 4))),
        ("<i2", lambda b: numcodecs.Zlib(4).encode(shuf(b, 2))),
        ("<f8", lambda b: numcodecs.Blosc("blosclz", 5, 1).encode(
            np.frombuffer(b, "<f8"))),
        ("<u2", lambda b: b),
    ]
    for k, (dt, enc) in enumerate(sets):
        out = bytes([k])
        x = v.astype(dt)
        for i in range(9):
            r, c = i // 3 * 5, i % 3 * 4
            ch = np.zeros((5, 4), dt)  # edge chunks padded, as HDF5 does
            part = x[r:r + 5, c:c + 4]
            ch[:part.shape[0], :part.shape[1]] = part
            e = enc(ch.tobytes())
            out += struct.pack("<HB", len(e), 0) + e
        put("fuzz_h5_chunks", "%d_%s" % (k, dt[1:]), out)
    # shuffle+deflate with deflate skipped (mask bit 1), and a short file
    x = np.arange(20, dtype="<i2").tobytes()
    e = shuf(x, 2)
    put("fuzz_h5_chunks", "1_mask", bytes([1]) + struct.pack("<HB", len(e),
                                                              2) + e)


# ---- fuzz_zarr_store: byte 0 the store (STORES in fuzz_zarr_store.c)


def shard(chunks, index_at_start, big_endian, with_crc, missing=()):
    """A shard of encoded inner chunks (C order), as zarr-python 3 lays
    it out: chunks back to back, the index of (offset, nbytes) pairs."""
    n = len(chunks)
    ib = 16 * n + (4 if with_crc else 0)
    at = ib if index_at_start else 0
    body, idx = b"", []
    for i, c in enumerate(chunks):
        if i in missing:
            idx += [2**64 - 1, 2**64 - 1]
            continue
        idx += [at + len(body), len(c)]
        body += c
    index = struct.pack((">" if big_endian else "<") + "%dQ" % (2 * n), *idx)
    if with_crc:
        index = crc(index)
    return index + body if index_at_start else body + index


def zarr_store():
    def s(i, name, b):
        put("fuzz_zarr_store", "%d_%s" % (i, name), bytes([i]) + b)

    # 0: uint16 [7,6], shards [4,6], inner [2,3]: 4 inner chunks
    ch = [data("<u2", (2, 3), k).tobytes() for k in range(4)]
    s(0, "end_crc", shard(ch, False, False, True))
    s(0, "end_crc_missing", shard(ch, False, False, True, missing=(2,)))
    ch = [data("i1", (2, 3), k).tobytes() for k in range(4)]
    s(1, "start_be", shard(ch, True, True, False, missing=(1,)))
    ch = [crc(gz(data("<f4", (2, 3), k).tobytes(), 1)) for k in range(4)]
    s(2, "gzip_crc", shard(ch, False, False, False))
    tmp = tempfile.mkdtemp()
    try:
        a = zarr.open_array(os.path.join(tmp, "v2.zarr"), mode="w",
                            shape=(5, 7), chunks=(3, 4), dtype="<i4",
                            compressor=numcodecs.Zlib(1), fill_value=-1,
                            order="F",
                            filters=[numcodecs.Delta("<i4", "<i2")])
        a[:] = data("<i4", (5, 7))
        with open(os.path.join(tmp, "v2.zarr", "0.0"), "rb") as f:
            s(3, "v2_delta_zlib_F", f.read())
        a = zarr.open_array(os.path.join(tmp, "v2s.zarr"), mode="w",
                            shape=(6,), chunks=(6,), dtype=">f8",
                            compressor=numcodecs.Zstd(1),
                            fill_value=float("nan"),
                            filters=[numcodecs.Shuffle(8)])
        a[:] = data(">f8", (6,))
        with open(os.path.join(tmp, "v2s.zarr", "0"), "rb") as f:
            s(4, "v2_shuffle_zstd", f.read())
    finally:
        shutil.rmtree(tmp)


# ---- fuzz_plan: pipelines over fuzz_plan.c's a.h5, b.zarr, c.zarr

PLANS = {
    "tutorial": {
        "inputs": {"x": "a.h5:/x"},
        "steps": [
            {"name": "y", "op": "add", "args": ["x", 1.0]},
            {"name": "lt", "op": "less", "args": ["y", 10.0]},
            {"name": "low", "op": "mask", "args": ["y", "lt"]},
            {"name": "hist", "op": "histogram", "args": ["low"], "bins": 8,
             "range": [6, 10]},
            {"name": "m0", "op": "mean", "args": ["x"], "axis": 0},
            {"name": "c", "op": "subtract", "args": ["x", "m0"]}],
        "outputs": {"m0": "out.h5:/mean0", "c": "centered.zarr"},
        "print": ["hist"]},
    "zarr_reduce": {
        "inputs": {"b": "b.zarr", "v": "c.zarr:/v"},
        "steps": [
            {"name": "s", "op": "sum", "args": ["b"], "axis": [0, 1]},
            {"name": "t", "op": "transpose", "args": ["v"]},
            {"name": "q", "op": "quantile", "args": ["v"], "q": [0.1, 0.9],
             "axis": 1}],
        "outputs": {"t": "t.zarr"}, "print": ["s", "q"]},
    "cf_slice": {
        "inputs": {"s": "a.h5:/s", "y": "a.h5:/g/y"},
        "steps": [
            {"name": "sl", "op": "slice", "args": ["s"],
             "index": [[1, 5, 2], None]},
            {"name": "st", "op": "std", "args": ["sl"], "axis": 0,
             "keepdims": True},
            {"name": "cs", "op": "cumsum", "args": ["y"], "axis": 0}],
        "outputs": {"st": "o.h5:/st"}, "print": ["cs"], "decode": True},
    "glm": {
        "inputs": {"x": "a.h5:/x"},
        "steps": [
            {"name": "p", "op": "glm_predict", "args": ["x"],
             "model": "a.h5:/coef"},
            {"name": "w", "op": "where", "args": ["p", "p", 0.0]}],
        "outputs": {"p": "p.zarr"}},
    "linalg": {
        "inputs": {"x": "a.h5:/x", "b": "b.zarr"},
        "steps": [
            {"name": "xt", "op": "transpose", "args": ["x"]},
            {"name": "g", "op": "matmul", "args": ["xt", "x"]},
            {"name": "u", "op": "svd", "args": ["x"], "k": 2},
            {"name": "n", "op": "nanmean", "args": ["b"]},
            {"name": "cnt", "op": "count_nonzero", "args": ["b"], "axis": 1}],
        "outputs": {"g": "g.h5:/g"}, "print": ["n"], "backend": "cpu"},
    "stencil": {
        "inputs": {"x": "a.h5:/x"},
        "steps": [
            {"name": "k", "op": "convolve", "args": ["x"],
             "weights": [[0, 1, 0], [1, -4, 1], [0, 1, 0]],
             "mode": "reflect"},
            {"name": "c", "op": "coarsen", "args": ["k"], "window": [2, 2],
             "reduction": "mean"},
            {"name": "i", "op": "take", "args": ["c"], "indices": [0, 2],
             "axis": 0},
            {"name": "a", "op": "astype", "args": ["i"], "dtype": "int16"}],
        "outputs": {"a": "a.zarr"}},
}


def plan():
    for name, p in PLANS.items():
        put("fuzz_plan", name + ".json", json.dumps(p, indent=2))


# ---- fuzz_options: option values


def options():
    for i, s in enumerate([
            "data.h5:/group/x", "store.zarr", "c:/windows/a.h5:/x", "256M",
            "1.5GiB", "64k", "1000,1000", "1,2,3,4,5,6,7,8,9",
            "blosc:lz4hc:5:bitshuffle", "zstd:-5:shuffle", "gzip:9", "lz4:17",
            "lzma:9", "bz2:1", "none",
            "delta:int16,shuffle:4,fixedscaleoffset:1000:10:uint8",
            "quantize:3:float32,bitround:7,astype:float32,packbits",
            "float32", "u8", "bool"]):
        put("fuzz_options", "%02d" % i, s)


# ---- regressions: inputs the fuzzers found (README.md, "Findings")


def regressions():
    # an lzma-alone header asking for a 3 GiB dictionary (io/codec.c)
    put("fuzz_codec", "regress-lzma-dict-3gib", base64.b64decode(
        "JUoywMbGxsbGxsbGxsbGxsbGxsbGxsbGxsbGxsZB"))
    # a stored chunk longer than the chunk under numcodecs.shuffle, and one
    # under crc32c + shuffle (io/zarr/chain3.c wrote past the chunk)
    put("fuzz_z3_chain", "regress-shuffle-long", bytes([9]) +
        bytes(range(60)))
    put("fuzz_z3_chain", "regress-crc-shuffle-long", bytes([12]) +
        bytes(range(40)))


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    zarr_meta()
    zarr3_meta()
    codec()
    filters()
    z3_chain()
    h5_filters()
    h5_chunks()
    zarr_store()
    plan()
    options()
    regressions()
