"""Shared helpers for the interop suite: chunkctl against h5py, zarr-python
and NumPy (Debian's, run by /usr/bin/python3).

Every test file imports this module BEFORE h5py: HDF5 reads
HDF5_PLUGIN_PATH once, when the library loads, and chunkctl's zstd files
(filter 32015) and blosc files (filter 32001) are readable by h5py only
through the plugins found there.

Environment (set by ctest, see tests/CMakeLists.txt):
  CHUNKCTL       the binary (default: /work/main/build/cli/chunkctl)
  CK_PLUGIN_DIR  the folder holding libh5zstd.so (default: the binary's
                 build tree, build/plugins)
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHUNKCTL = os.environ.get("CHUNKCTL", "/work/main/build/cli/chunkctl")
PLUGIN_DIR = os.environ.get(
    "CK_PLUGIN_DIR",
    os.path.join(os.path.dirname(os.path.dirname(CHUNKCTL)), "plugins"))
# Debian's hdf5-filter-plugin-blosc-serial (filter 32001).
BLOSC_PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins"
os.environ["HDF5_PLUGIN_PATH"] = ":".join(
    d for d in (PLUGIN_DIR, BLOSC_PLUGIN_DIR) if d)
# A test file that must decode chunks with no HDF5 plugin at all (its own
# decoder, never chunkctl's filter) sets CK_H5_NO_PLUGINS=1 before it
# imports this module: HDF5 then searches only a folder that does not
# exist, and h5py cannot decode a zstd chunk by itself.
NO_PLUGINS = os.environ.get("CK_H5_NO_PLUGINS") == "1"
if NO_PLUGINS:
    os.environ["HDF5_PLUGIN_PATH"] = os.path.join(HERE, "no-such-folder")

import numpy as np  # noqa: E402  (after HDF5_PLUGIN_PATH, on purpose)
import h5py  # noqa: E402,F401
import zarr  # noqa: E402,F401

# Every dtype chunkctl knows, in native (little-endian) order, plus the
# big-endian spellings of the multi-byte ones.
NATIVE_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8",
                 "uint16", "uint32", "uint64", "float32", "float64"]
BIG_DTYPES = [">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">f4", ">f8"]
ALL_DTYPES = NATIVE_DTYPES + BIG_DTYPES

# Default run time limit for one chunkctl call; the suite uses tiny arrays.
TIMEOUT = 60


def dtype_tag(dt):
    """'>f8' -> 'f8_be', 'int16' -> 'i2_le': a name usable in paths."""
    dt = np.dtype(dt)
    if dt.itemsize == 1:
        return dt.str[1:]
    return dt.str[1:] + ("_be" if dt.byteorder == ">" else "_le")


def native(dt):
    """The same type in this machine's byte order."""
    return np.dtype(dt).newbyteorder("=")


def make_data(dtype, shape, seed):
    """A deterministic array of 'dtype' that exercises the whole range:
    extremes for integers; NaN, +-inf, -0.0 and subnormals for floats."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, n, dtype=native(dt),
                            endpoint=True)
        specials = [info.min, info.max, 0, 1]
        flat[:len(specials)] = specials[:n]
    else:
        flat = (rng.standard_normal(n) * 1e3).astype(native(dt))
        fi = np.finfo(native(dt))
        specials = [np.nan, np.inf, -np.inf, -0.0, fi.tiny / 4, fi.max,
                    -fi.max, fi.eps]
        k = min(n, len(specials))
        idx = rng.choice(n, size=k, replace=False)
        flat[idx] = np.array(specials[:k], dtype=native(dt))
    return flat.reshape(shape).astype(dt)


class ChunkctlError(AssertionError):
    pass


def run(*args, expect=0, env=None):
    """Runs chunkctl with args; asserts its exit status is 'expect' (None:
    any).  Returns the CompletedProcess (text mode)."""
    argv = [CHUNKCTL] + [str(a) for a in args]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=TIMEOUT, env=full_env)
    if expect is not None and p.returncode != expect:
        raise ChunkctlError(
            "`%s` exited %d, expected %d\nstderr: %s" %
            (" ".join(_quote(a) for a in argv), p.returncode, expect,
             p.stderr.strip()))
    return p


def _quote(a):
    return a if a and all(c.isalnum() or c in "/._:,=-+" for c in a) \
        else repr(a)


def info(target):
    """chunkctl info --json TARGET, parsed."""
    p = run("info", "--json", target)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise ChunkctlError("info --json %s: not JSON (%s): %r" %
                            (target, e, p.stdout[:500]))


def copy(src, dst, *opts, expect=0):
    return run("copy", "--quiet", *opts, src, dst, expect=expect)


def gen(dst, *opts, expect=0):
    return run("gen", "--quiet", *opts, dst, expect=expect)


class InteropCase(unittest.TestCase):
    """A TestCase with a temporary folder per class (self.tmp) and helpers
    to compare arrays bit for bit."""

    maxDiff = 4000

    @classmethod
    def setUpClass(cls):
        # A missing binary is an error, not a skip: a suite that ran
        # nothing must not look green.
        if not os.access(CHUNKCTL, os.X_OK):
            raise RuntimeError("no chunkctl binary at %s (set CHUNKCTL)" %
                               CHUNKCTL)
        cls.tmp = tempfile.mkdtemp(prefix="ck-interop-%s-" % cls.__name__)
        cls.make_fixtures()

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("CK_KEEP_TMP"):
            print("kept", cls.tmp)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def make_fixtures(cls):
        pass

    @classmethod
    def path(cls, *parts):
        return os.path.join(cls.tmp, *parts)

    def fresh(self, name):
        """A path in the temp folder that does not exist yet."""
        p = self.path(name)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)
        return p

    def assertSameArray(self, got, want, what=""):
        """Equal shape, equal dtype (byte order aside: chunkctl may write
        native order) and equal bits, NaN payloads and -0.0 included."""
        got = np.asarray(got)
        want = np.asarray(want)
        tag = (what + ": ") if what else ""
        self.assertEqual(got.shape, want.shape, tag + "shape")
        self.assertEqual(native(got.dtype), native(want.dtype),
                         tag + "dtype %s vs %s" % (got.dtype, want.dtype))
        g = np.ascontiguousarray(got.astype(native(got.dtype)))
        w = np.ascontiguousarray(want.astype(native(want.dtype)))
        if np.array_equal(g.view(np.uint8), w.view(np.uint8)):
            return
        equal_nan = g.dtype.kind == "f"
        if np.array_equal(g, w, equal_nan=equal_nan):
            self.fail(tag + "values equal but bits differ (NaN payload or "
                      "sign of zero)")
        if equal_nan:
            bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
        else:
            bad = g != w
        idx = np.argwhere(bad)
        first = tuple(int(i) for i in idx[0])
        self.fail("%s%d of %d elements differ; first at %s: got %r, want %r"
                  % (tag, len(idx), g.size, first, g[first], w[first]))

    def assertCleanError(self, p, code, *needles):
        """chunkctl failed with exit 'code' and one line 'chunkctl: ...'
        naming each of needles (case-insensitive, any of a tuple)."""
        self.assertEqual(p.returncode, code,
                         "exit status; stderr: %r" % p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, "one line on stderr: %r" % p.stderr)
        self.assertTrue(lines[0].startswith("chunkctl: "), lines[0])
        for n in needles:
            alts = n if isinstance(n, tuple) else (n,)
            self.assertTrue(any(a.lower() in lines[0].lower() for a in alts),
                            "%r does not name %r" % (lines[0], alts))


def chunk_files(zarr_array_dir):
    """Chunk file keys of a Zarr v2 array folder ('0.1', '0/1'), metadata
    files excluded."""
    keys = []
    for root, _dirs, files in os.walk(zarr_array_dir):
        for f in files:
            if f.startswith("."):
                continue
            rel = os.path.relpath(os.path.join(root, f), zarr_array_dir)
            keys.append(rel)
    return sorted(keys)


def h5_filter_ids(dset):
    """The HDF5 filter ids of an h5py dataset, in pipeline order."""
    plist = dset.id.get_create_plist()
    return [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]


def h5_datasets(f):
    """{'/g/x': dataset} for every dataset in an open h5py File."""
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            out["/" + name] = obj
    f.visititems(visit)
    return out


def zarr_arrays(g):
    """{'/g/x': array} for every array under a zarr group."""
    out = {}

    def visit(name, obj):
        if isinstance(obj, zarr.Array):
            out["/" + name] = obj
    g.visititems(visit)
    return out


def attrs_equal(case, got, want, what):
    """Compares attribute mappings: numbers, strings and arrays; h5py may
    hand back numpy scalars or bytes, zarr hands back JSON values."""
    # HDF5 keeps dimension names (scales, labels) in attributes of its
    # own, which h5py lists with the others: they are not the data's.
    got = {k: v for k, v in dict(got).items()
           if k not in ("DIMENSION_LIST", "DIMENSION_LABELS")}
    want = dict(want)
    case.assertEqual(sorted(got), sorted(want), what + ": attribute names")
    for k, w in want.items():
        g = got[k]
        if isinstance(g, bytes):
            g = g.decode()
        if isinstance(w, bytes):
            w = w.decode()
        if isinstance(w, str) or isinstance(g, str):
            case.assertEqual(str(g), str(w), "%s: attr %s" % (what, k))
            continue
        ga, wa = np.asarray(g), np.asarray(w)
        case.assertEqual(ga.shape, wa.shape, "%s: attr %s shape" % (what, k))
        case.assertTrue(np.array_equal(ga, wa),
                        "%s: attr %s: %r vs %r" % (what, k, g, w))


def main():
    unittest.main(verbosity=2)


def without_history(doc):
    """A copy of an attributes document (or a zarr.json, whose attributes
    are a member) without the history attribute, which records the
    command line and time of each run."""
    if isinstance(doc, dict):
        doc = dict(doc)
        doc.pop("history", None)
        if isinstance(doc.get("attributes"), dict):
            doc["attributes"] = without_history(doc["attributes"])
    return doc


def zarr_files(path):
    """{relative path: bytes} of every file of a Zarr store, attribute
    files (.zattrs, zarr.json) as sorted JSON without history: what two
    runs of one command must write alike."""
    out = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                data = f.read()
            if name in (".zattrs", "zarr.json"):
                data = json.dumps(without_history(json.loads(data)),
                                  sort_keys=True).encode()
            out[os.path.relpath(p, path)] = data
    return out
