"""A small Zarr v3 writer and reader built straight from the specification
(https://zarr-specs.readthedocs.io/en/latest/v3/core/v3.0.html and the
codec specs under v3/codecs/), with NumPy, numcodecs (GZip, Zstd, Blosc),
python3-zstandard (zstd frames with a checksum) and python3-crc32c.  It
knows nothing of chunkctl: test_zarr3.py uses it as a second independent
implementation beside zarrita, to write fixtures chunkctl must read and
to decode what chunkctl writes.

Stores are directories: node "/g/x" of store S is the folder S/g/x holding
zarr.json; chunk keys are files below it ("c/0/1").

Writer: write_group, write_array (any codec chain below, sharding nested
in sharding included; chunks left out by a predicate; empty inner chunks
as offset = nbytes = 2^64-1), consolidate.
Reader: read_meta, read_array, walk.  Strict: a crc32c mismatch, a shard
index entry outside its shard or overlapping another, an unknown codec or
data type raise SpecError.  check_array_meta / check_group_meta list what
a zarr.json does wrong against the spec.

Codecs (name: configuration):
  bytes {"endian": "little"|"big"} (endian optional for 1-byte types)
  transpose {"order": [permutation]}
  gzip {"level": 0..9}
  zstd {"level": -131072..22, "checksum": bool}
  blosc {"cname", "clevel": 0..9, "shuffle": "noshuffle"|"shuffle"|
         "bitshuffle", "typesize", "blocksize"}
  crc32c {} (4 bytes, little-endian CRC-32C of what precedes, appended)
  numcodecs.shuffle {"elementsize": N} (numcodecs' Shuffle: byte planes)
  sharding_indexed {"chunk_shape", "codecs", "index_codecs",
                    "index_location": "start"|"end"}
"""

import json
import math
import os

import numpy as np
import crc32c as _crc32c
import zstandard
from numcodecs import Blosc, GZip, Shuffle, Zstd

# v3 core data types and their NumPy equivalents (native order; the bytes
# codec decides the order on disk).
DTYPES = {"bool": "?", "int8": "i1", "int16": "i2", "int32": "i4",
          "int64": "i8", "uint8": "u1", "uint16": "u2", "uint32": "u4",
          "uint64": "u8", "float16": "f2", "float32": "f4", "float64": "f8",
          "complex64": "c8", "complex128": "c16"}
ARRAY_KEYS = {"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
              "chunk_key_encoding", "fill_value", "codecs", "attributes",
              "dimension_names", "storage_transformers"}
ARRAY_REQUIRED = ARRAY_KEYS - {"attributes", "dimension_names",
                               "storage_transformers"}
GROUP_KEYS = {"zarr_format", "node_type", "attributes",
              "consolidated_metadata"}
KIND = {"transpose": "aa", "bytes": "ab", "sharding_indexed": "ab",
        "gzip": "bb", "zstd": "bb", "blosc": "bb", "crc32c": "bb",
        "numcodecs.shuffle": "bb"}
SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
BLOSC_CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")
EMPTY = 2 ** 64 - 1


class SpecError(ValueError):
    pass


def v3_name(dtype):
    """'>f8' -> 'float64'."""
    dt = np.dtype(dtype)
    for name, code in DTYPES.items():
        if np.dtype(code) == dt.newbyteorder("="):
            return name
    raise SpecError("no v3 data type for %s" % dt)


def np_dtype(name):
    if name not in DTYPES:
        raise SpecError("unknown data_type %r" % (name,))
    return np.dtype(DTYPES[name])


def fill_value(fill, dtype):
    """The fill_value of zarr.json as a NumPy scalar of 'dtype' (native):
    numbers, true/false, "NaN", "Infinity", "-Infinity" and "0x..." (the
    IEEE 754 bits of a float as an unsigned integer, core spec
    section fill_value)."""
    dt = np.dtype(dtype).newbyteorder("=")
    if isinstance(fill, str):
        if dt.kind not in "fc":
            raise SpecError("fill_value %r for %s" % (fill, dt))
        if fill.startswith("0x"):
            bits = np.array([int(fill, 16)], "u%d" % dt.itemsize)
            return bits.view(dt)[0]
        special = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
        if fill not in special:
            raise SpecError("fill_value %r" % fill)
        return dt.type(special[fill])
    if isinstance(fill, bool):
        if dt.kind != "b":
            raise SpecError("fill_value %r for %s" % (fill, dt))
        return dt.type(fill)
    if isinstance(fill, (int, float)):
        if dt.kind == "b":
            raise SpecError("fill_value %r for bool" % fill)
        if dt.kind in "iu" and not isinstance(fill, int):
            raise SpecError("fill_value %r for %s" % (fill, dt))
        if dt.kind in "iu":
            info = np.iinfo(dt)
            if not info.min <= fill <= info.max:
                raise SpecError("fill_value %r out of range" % fill)
        return np.array(fill).astype(dt)[()]
    raise SpecError("fill_value %r" % (fill,))


def fill_json(value, dtype):
    """A NumPy value as zarr.json spells it."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return bool(value)
    if dt.kind in "iu":
        return int(value)
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def crc32c(data):
    return _crc32c.crc32c(bytes(data))


# -- codec chains ----------------------------------------------------------

def split_chain(codecs):
    """(array->array list, the array->bytes codec, bytes->bytes list), with
    the order the spec requires checked."""
    aa, ab, bb = [], None, []
    for c in codecs:
        if not isinstance(c, dict) or "name" not in c:
            raise SpecError("codec %r has no name" % (c,))
        kind = KIND.get(c["name"])
        if kind is None:
            raise SpecError("unknown codec %r" % c["name"])
        if kind == "aa":
            if ab is not None:
                raise SpecError("%s after the array->bytes codec" % c["name"])
            aa.append(c)
        elif kind == "ab":
            if ab is not None:
                raise SpecError("two array->bytes codecs")
            ab = c
        else:
            if ab is None:
                raise SpecError("%s before the array->bytes codec" %
                                c["name"])
            bb.append(c)
    if ab is None:
        raise SpecError("no array->bytes codec")
    return aa, ab, bb


def _cfg(c):
    return c.get("configuration") or {}


def _encode_bb(c, data, itemsize):
    name, cfg = c["name"], _cfg(c)
    if name == "gzip":
        return GZip(level=cfg["level"]).encode(data)
    if name == "zstd":
        if cfg.get("checksum"):
            return zstandard.ZstdCompressor(
                level=cfg["level"], write_checksum=True).compress(data)
        return Zstd(level=cfg["level"]).encode(data)
    if name == "blosc":
        ts = cfg.get("typesize", itemsize)
        arr = np.frombuffer(data, "u%d" % ts) if ts in (1, 2, 4, 8) and \
            len(data) % ts == 0 else np.frombuffer(data, "u1")
        return Blosc(cname=cfg["cname"], clevel=cfg["clevel"],
                     shuffle=SHUFFLES[cfg["shuffle"]],
                     blocksize=cfg.get("blocksize", 0)).encode(arr)
    if name == "crc32c":
        return bytes(data) + crc32c(data).to_bytes(4, "little")
    if name == "numcodecs.shuffle":
        return bytes(Shuffle(elementsize=cfg.get("elementsize",
                                                 itemsize)).encode(data))
    raise SpecError("unknown codec %r" % name)


def _decode_bb(c, data):
    name, cfg = c["name"], _cfg(c)
    if name == "gzip":
        if not 0 <= cfg.get("level", -1) <= 9:
            raise SpecError("gzip level %r" % cfg.get("level"))
        return bytes(GZip().decode(data))
    if name == "zstd":
        # zstandard checks the frame's checksum when there is one
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if name == "blosc":
        if cfg.get("shuffle") not in SHUFFLES or \
                cfg.get("cname") not in BLOSC_CNAMES:
            raise SpecError("blosc configuration %r" % cfg)
        return bytes(Blosc().decode(data))
    if name == "crc32c":
        if len(data) < 4:
            raise SpecError("crc32c: %d bytes" % len(data))
        body, tail = bytes(data[:-4]), bytes(data[-4:])
        if crc32c(body) != int.from_bytes(tail, "little"):
            raise SpecError("crc32c mismatch")
        return body
    if name == "numcodecs.shuffle":
        if not isinstance(cfg.get("elementsize"), int) or \
                cfg["elementsize"] < 1:
            raise SpecError("numcodecs.shuffle configuration %r" % cfg)
        return bytes(Shuffle(elementsize=cfg["elementsize"]).decode(data))
    raise SpecError("unknown codec %r" % name)


def _endian(c, dt):
    e = _cfg(c).get("endian")
    if e is None:
        if dt.itemsize > 1:
            raise SpecError("bytes: endian required for %s" % dt)
        return "<"
    if e not in ("little", "big"):
        raise SpecError("bytes: endian %r" % e)
    return "<" if e == "little" else ">"


def encode_chunk(a, codecs, fill, skip_empty_inner=True):
    """Encodes chunk 'a' (an ndarray of the chunk's shape) with 'codecs'."""
    aa, ab, bb = split_chain(codecs)
    for c in aa:
        a = np.transpose(a, _cfg(c)["order"])
    itemsize = a.dtype.itemsize
    if ab["name"] == "bytes":
        dt = a.dtype.newbyteorder(_endian(ab, a.dtype))
        data = np.ascontiguousarray(a.astype(dt)).tobytes()
    else:
        data = _encode_shard(a, _cfg(ab), fill, skip_empty_inner)
    for c in bb:
        data = _encode_bb(c, data, itemsize)
    return bytes(data)


def decode_chunk(data, codecs, shape, dtype, fill):
    """Decodes one encoded chunk of 'shape' and 'dtype' (inner chunks a
    shard marks empty read as 'fill'); returns a native-order ndarray."""
    return _decode(data, codecs, shape, dtype, fill)


def _decode(data, codecs, shape, dtype, fill):
    aa, ab, bb = split_chain(codecs)
    shapes = [tuple(shape)]
    for c in aa:
        order = _cfg(c).get("order")
        if sorted(order or []) != list(range(len(shape))):
            raise SpecError("transpose order %r" % (order,))
        shapes.append(tuple(shapes[-1][i] for i in order))
    for c in reversed(bb):
        data = _decode_bb(c, data)
    inner_shape = shapes[-1]
    if ab["name"] == "bytes":
        dt = np.dtype(dtype).newbyteorder(_endian(ab, np.dtype(dtype)))
        n = int(np.prod(inner_shape, dtype=np.int64))
        if len(data) != n * dt.itemsize:
            raise SpecError("chunk: %d bytes, expected %d" %
                            (len(data), n * dt.itemsize))
        a = np.frombuffer(data, dt).reshape(inner_shape)
        a = a.astype(np.dtype(dtype).newbyteorder("="))
    else:
        a = _decode_shard(data, _cfg(ab), inner_shape, dtype, fill)
    for c in reversed(aa):
        a = np.transpose(a, np.argsort(_cfg(c)["order"]))
    return np.ascontiguousarray(a)


def _index_nbytes(index_codecs, n):
    """Encoded size of a shard index of n entries (fixed-size codecs)."""
    aa, ab, bb = split_chain(index_codecs)
    if aa or ab["name"] != "bytes":
        raise SpecError("index_codecs must be bytes (+ crc32c)")
    size = 16 * n
    for c in bb:
        if c["name"] != "crc32c":
            raise SpecError("index codec %s is not fixed-size" % c["name"])
        size += 4
    return size


def _inner_grid(shape, cfg):
    cs = cfg.get("chunk_shape")
    if not isinstance(cs, list) or len(cs) != len(shape) or \
            any(c <= 0 or s % c for s, c in zip(shape, cs)):
        raise SpecError("sharding: chunk_shape %r does not divide %r" %
                        (cs, list(shape)))
    return tuple(s // c for s, c in zip(shape, cs)), tuple(cs)


def _encode_shard(a, cfg, fill, skip_empty):
    grid, cs = _inner_grid(a.shape, cfg)
    n = int(np.prod(grid, dtype=np.int64))
    index = np.full(grid + (2,), EMPTY, np.uint64)
    at_start = cfg.get("index_location", "end") == "start"
    isize = _index_nbytes(cfg["index_codecs"], n)
    pos = isize if at_start else 0
    body = []
    for coords in np.ndindex(*grid):
        sel = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, cs))
        inner = a[sel]
        if skip_empty and _all_fill(inner, fill):
            continue
        enc = encode_chunk(inner, cfg["codecs"], fill, skip_empty)
        index[coords] = (pos, len(enc))
        body.append(enc)
        pos += len(enc)
    idx = encode_chunk(index, cfg["index_codecs"], 0)
    assert len(idx) == isize
    body = b"".join(body)
    return idx + body if at_start else body + idx


def _decode_shard(data, cfg, shape, dtype, fill):
    grid, cs = _inner_grid(shape, cfg)
    n = int(np.prod(grid, dtype=np.int64))
    isize = _index_nbytes(cfg.get("index_codecs"), n)
    loc = cfg.get("index_location", "end")
    if loc not in ("start", "end"):
        raise SpecError("index_location %r" % (loc,))
    if len(data) < isize:
        raise SpecError("shard: %d bytes, index needs %d" % (len(data),
                                                            isize))
    raw = data[:isize] if loc == "start" else data[len(data) - isize:]
    index = _decode(raw, cfg["index_codecs"], grid + (2,), np.uint64, 0)
    out = np.full(shape, fill, np.dtype(dtype).newbyteorder("="))
    spans = []
    for coords in np.ndindex(*grid):
        off, nb = (int(v) for v in index[coords])
        if off == EMPTY and nb == EMPTY:
            continue
        if off == EMPTY or nb == EMPTY or off + nb > len(data):
            raise SpecError("shard index entry %s: [%d, +%d) outside %d "
                            "bytes" % (coords, off, nb, len(data)))
        spans.append((off, off + nb, coords))
        sel = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, cs))
        out[sel] = _decode(data[off:off + nb], cfg["codecs"], cs, dtype,
                           fill)
    spans.sort()
    ilo, ihi = (0, isize) if loc == "start" else (len(data) - isize,
                                                  len(data))
    for (lo, hi, c), nxt in zip(spans, spans[1:] + [None]):
        if nxt is not None and nxt[0] < hi and hi > lo:
            raise SpecError("shard index entries %s and %s overlap" %
                            (c, nxt[2]))
        if lo < ihi and hi > ilo and hi > lo:
            raise SpecError("shard index entry %s overlaps the index" % (c,))
    return out


def _all_fill(a, fill):
    f = np.asarray(fill, a.dtype)
    if a.dtype.kind in "fc":
        same = (a == f) | (np.isnan(a) & np.isnan(f))
        return bool(np.all(same)) and not np.any(np.signbit(a) !=
                                                 np.signbit(f))
    return bool(np.all(a == f))


# -- chunk keys ------------------------------------------------------------

def chunk_key(coords, encoding):
    name = encoding.get("name")
    sep = (encoding.get("configuration") or {}).get(
        "separator", "/" if name == "default" else ".")
    if sep not in ("/", "."):
        raise SpecError("chunk key separator %r" % sep)
    if name == "default":
        return sep.join(["c"] + [str(i) for i in coords])
    if name == "v2":
        return sep.join(str(i) for i in coords) if coords else "0"
    raise SpecError("unknown chunk_key_encoding %r" % (name,))


# -- writer ----------------------------------------------------------------

def _node_dir(store, path):
    return os.path.join(store, *[p for p in path.split("/") if p])


def _dump(folder, meta):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "zarr.json"), "w") as f:
        json.dump(meta, f, indent=2)


def write_group(store, path="/", attributes=None):
    meta = {"zarr_format": 3, "node_type": "group"}
    if attributes is not None:
        meta["attributes"] = attributes
    _dump(_node_dir(store, path), meta)
    return meta


def default_codecs(dtype, endian="little"):
    return [{"name": "bytes", "configuration": {"endian": endian}}]


def write_array(store, path, data, chunks, codecs=None, fill=0,
                key_encoding=None, dimension_names=None, attributes=None,
                skip=None, write_empty_chunks=True, skip_empty_inner=True,
                data_type=None, groups=True):
    """Writes 'data' (any byte order) as array 'path' of 'store'.

    chunks: the chunk grid's chunk_shape (the shard shape when sharded);
    codecs: the codec list (default bytes little); fill: fill_value as
    zarr.json spells it; key_encoding: chunk_key_encoding (default
    "default" with "/"); skip(coords) -> True leaves that chunk out;
    write_empty_chunks=False leaves out chunks that are all fill;
    data_type overrides the name written (for refusal fixtures); groups
    writes a group zarr.json in every folder above that lacks one.
    Returns the metadata written."""
    data = np.asarray(data)
    if codecs is None:
        codecs = default_codecs(data.dtype)
    if key_encoding is None:
        key_encoding = {"name": "default",
                        "configuration": {"separator": "/"}}
    meta = {"zarr_format": 3, "node_type": "array",
            "shape": list(data.shape),
            "data_type": data_type or v3_name(data.dtype),
            "chunk_grid": {"name": "regular",
                           "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": key_encoding,
            "fill_value": fill, "codecs": codecs}
    if attributes is not None:
        meta["attributes"] = attributes
    if dimension_names is not None:
        meta["dimension_names"] = dimension_names
    folder = _node_dir(store, path)
    if groups:
        parts = [p for p in path.split("/") if p]
        for i in range(len(parts)):
            up = _node_dir(store, "/".join(parts[:i]))
            if not os.path.exists(os.path.join(up, "zarr.json")):
                write_group(store, "/".join(parts[:i]))
    _dump(folder, meta)
    native_dt = data.dtype.newbyteorder("=")
    fv = fill_value(fill, native_dt) if data_type is None else 0
    a = data.astype(native_dt)
    grid = [math.ceil(s / c) for s, c in zip(data.shape, chunks)]
    for coords in np.ndindex(*grid):
        if skip is not None and skip(coords):
            continue
        block = np.full(chunks, fv, native_dt)
        sel = tuple(slice(i * c, min((i + 1) * c, s))
                    for i, c, s in zip(coords, chunks, data.shape))
        part = a[sel]
        block[tuple(slice(0, n) for n in part.shape)] = part
        if not write_empty_chunks and _all_fill(block, fv):
            continue
        key = os.path.join(folder, *chunk_key(coords, key_encoding)
                           .split("/"))
        os.makedirs(os.path.dirname(key), exist_ok=True)
        with open(key, "wb") as f:
            f.write(encode_chunk(block, codecs, fv, skip_empty_inner))
    return meta


def consolidate(store):
    """Adds zarr-python 3's inline consolidated metadata to the root
    group's zarr.json: every node below, keyed by its path without the
    leading "/"."""
    nodes = walk(store)
    root = nodes.pop("/")
    if root["node_type"] != "group":
        raise SpecError("consolidate: the root is not a group")
    root["consolidated_metadata"] = {
        "kind": "inline", "must_understand": False,
        "metadata": {p.lstrip("/"): m for p, m in sorted(nodes.items())}}
    _dump(store, root)
    return root


# -- reader ----------------------------------------------------------------

def read_meta(store, path="/"):
    with open(os.path.join(_node_dir(store, path), "zarr.json")) as f:
        meta = json.load(f)
    if meta.get("zarr_format") != 3:
        raise SpecError("%s: zarr_format %r" % (path,
                                                meta.get("zarr_format")))
    if meta.get("node_type") not in ("array", "group"):
        raise SpecError("%s: node_type %r" % (path, meta.get("node_type")))
    return meta


def walk(store):
    """{"/", "/g", "/g/x": metadata} for every node (zarr.json) in store."""
    out = {}
    for root, dirs, files in os.walk(store):
        dirs.sort()
        if "zarr.json" in files:
            rel = os.path.relpath(root, store)
            path = "/" if rel == "." else "/" + rel.replace(os.sep, "/")
            out[path] = read_meta(store, path)
    return out


def read_array(store, path, meta=None):
    """The whole array 'path' as a native-order ndarray."""
    if meta is None:
        meta = read_meta(store, path)
    if meta["node_type"] != "array":
        raise SpecError("%s is a group" % path)
    problems = check_array_meta(meta)
    if problems:
        raise SpecError("%s: %s" % (path, "; ".join(problems)))
    dt = np_dtype(meta["data_type"])
    shape = tuple(meta["shape"])
    chunks = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    fv = fill_value(meta["fill_value"], dt)
    out = np.full(shape, fv, dt)
    folder = _node_dir(store, path)
    grid = [math.ceil(s / c) for s, c in zip(shape, chunks)]
    for coords in np.ndindex(*grid):
        key = os.path.join(folder, *chunk_key(
            coords, meta["chunk_key_encoding"]).split("/"))
        if not os.path.isfile(key):
            continue
        with open(key, "rb") as f:
            raw = f.read()
        try:
            block = _decode(raw, meta["codecs"], chunks, dt, fv)
        except SpecError as e:
            raise SpecError("%s: chunk %s: %s" % (path, coords, e))
        sel = tuple(slice(i * c, min((i + 1) * c, s))
                    for i, c, s in zip(coords, chunks, shape))
        out[sel] = block[tuple(slice(0, s.stop - s.start) for s in sel)]
    return out


def shard_index(store, path, coords, meta=None):
    """The decoded index (grid + (2,) uint64) of one shard, and the shard's
    file name and size."""
    if meta is None:
        meta = read_meta(store, path)
    cfg = _cfg(meta["codecs"][0])
    shape = meta["chunk_grid"]["configuration"]["chunk_shape"]
    grid, _cs = _inner_grid(shape, cfg)
    isize = _index_nbytes(cfg["index_codecs"], int(np.prod(grid)))
    key = os.path.join(_node_dir(store, path), *chunk_key(
        coords, meta["chunk_key_encoding"]).split("/"))
    with open(key, "rb") as f:
        data = f.read()
    start = cfg.get("index_location", "end") == "start"
    raw = data[:isize] if start else data[len(data) - isize:]
    index = _decode(raw, cfg["index_codecs"], grid + (2,), np.uint64, 0)
    return index, key, len(data), isize


# -- metadata checks ---------------------------------------------------------

def _is_int_list(v, positive=False):
    return isinstance(v, list) and all(
        isinstance(i, int) and not isinstance(i, bool) and
        (i > 0 if positive else i >= 0) for i in v)


def _check_chain(codecs, shape, dt, where, problems):
    if not isinstance(codecs, list) or not codecs:
        problems.append("%s: codecs must be a non-empty list" % where)
        return
    try:
        aa, ab, bb = split_chain(codecs)
    except SpecError as e:
        problems.append("%s: %s" % (where, e))
        return
    for c in codecs:
        extra = set(c) - {"name", "configuration"}
        if extra:
            problems.append("%s: codec %s has keys %s" % (where, c["name"],
                                                         sorted(extra)))
    for c in aa:
        order = _cfg(c).get("order")
        if sorted(order or []) != list(range(len(shape))):
            problems.append("%s: transpose order %r" % (where, order))
        else:
            shape = [shape[i] for i in order]
    if ab["name"] == "bytes":
        e = _cfg(ab).get("endian")
        if (e is None and dt.itemsize > 1) or \
                (e is not None and e not in ("little", "big")):
            problems.append("%s: bytes endian %r" % (where, e))
    else:
        cfg = _cfg(ab)
        try:
            _grid, cs = _inner_grid(shape, cfg)
        except SpecError as e:
            problems.append("%s: %s" % (where, e))
            return
        if cfg.get("index_location", "end") not in ("start", "end"):
            problems.append("%s: index_location %r" %
                            (where, cfg.get("index_location")))
        _check_chain(cfg.get("codecs"), list(cs), dt,
                     where + "/sharding_indexed.codecs", problems)
        _check_chain(cfg.get("index_codecs"), list(cs) + [2],
                     np.dtype("u8"), where + "/sharding_indexed.index_codecs",
                     problems)
        try:
            _index_nbytes(cfg.get("index_codecs"), 1)
        except SpecError as e:
            problems.append("%s: %s" % (where, e))
    for c in bb:
        cfg = _cfg(c)
        if c["name"] == "gzip" and not (isinstance(cfg.get("level"), int) and
                                        0 <= cfg["level"] <= 9):
            problems.append("%s: gzip level %r" % (where, cfg.get("level")))
        if c["name"] == "zstd":
            if not isinstance(cfg.get("level"), int) or \
                    not -131072 <= cfg["level"] <= 22:
                problems.append("%s: zstd level %r" %
                                (where, cfg.get("level")))
            if not isinstance(cfg.get("checksum"), bool):
                problems.append("%s: zstd checksum %r" %
                                (where, cfg.get("checksum")))
        if c["name"] == "blosc":
            if cfg.get("cname") not in BLOSC_CNAMES or \
                    cfg.get("shuffle") not in SHUFFLES or \
                    not isinstance(cfg.get("clevel"), int) or \
                    not 0 <= cfg["clevel"] <= 9 or \
                    not isinstance(cfg.get("blocksize"), int) or \
                    not isinstance(cfg.get("typesize"), int) or \
                    cfg["typesize"] < 1:
                problems.append("%s: blosc configuration %r" % (where, cfg))


def check_array_meta(meta):
    """What array metadata 'meta' does wrong against the core spec; []
    when nothing."""
    p = []
    missing = ARRAY_REQUIRED - set(meta)
    if missing:
        p.append("missing keys %s" % sorted(missing))
        return p
    extra = set(meta) - ARRAY_KEYS
    if extra:
        p.append("unknown keys %s" % sorted(extra))
    if meta["zarr_format"] != 3 or meta["node_type"] != "array":
        p.append("zarr_format/node_type %r/%r" % (meta["zarr_format"],
                                                  meta["node_type"]))
    shape = meta["shape"]
    if not _is_int_list(shape):
        p.append("shape %r" % (shape,))
        return p
    if meta["data_type"] not in DTYPES:
        p.append("data_type %r" % (meta["data_type"],))
        return p
    dt = np_dtype(meta["data_type"])
    g = meta["chunk_grid"]
    if not isinstance(g, dict) or g.get("name") != "regular" or \
            not _is_int_list((g.get("configuration") or {})
                             .get("chunk_shape"), positive=True) or \
            len(g["configuration"]["chunk_shape"]) != len(shape):
        p.append("chunk_grid %r" % (g,))
        return p
    k = meta["chunk_key_encoding"]
    try:
        if not isinstance(k, dict):
            raise SpecError("not an object")
        chunk_key([0] * len(shape), k)
    except SpecError as e:
        p.append("chunk_key_encoding %r: %s" % (k, e))
    try:
        fill_value(meta["fill_value"], dt)
    except SpecError as e:
        p.append(str(e))
    _check_chain(meta["codecs"], list(g["configuration"]["chunk_shape"]),
                 dt, "codecs", p)
    if "dimension_names" in meta:
        dn = meta["dimension_names"]
        if not isinstance(dn, list) or len(dn) != len(shape) or \
                not all(n is None or isinstance(n, str) for n in dn):
            p.append("dimension_names %r" % (dn,))
    if "attributes" in meta and not isinstance(meta["attributes"], dict):
        p.append("attributes is not an object")
    if meta.get("storage_transformers") not in (None, []):
        p.append("storage_transformers %r" % (meta["storage_transformers"],))
    return p


def check_group_meta(meta):
    p = []
    extra = set(meta) - GROUP_KEYS
    if extra:
        p.append("unknown keys %s" % sorted(extra))
    if meta.get("zarr_format") != 3 or meta.get("node_type") != "group":
        p.append("zarr_format/node_type %r/%r" % (meta.get("zarr_format"),
                                                  meta.get("node_type")))
    if "attributes" in meta and not isinstance(meta["attributes"], dict):
        p.append("attributes is not an object")
    return p
