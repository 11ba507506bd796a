"""Attributes (ck_store_set_attr / ck_store_get_attr) against h5py and
zarr-python, both ways.

chunkctl has no command that writes attributes yet, so the C side is the
Criterion suite tests/io/test_attrs.c, run here as a program:

  - attrs/interop_write writes ck.h5 and ck.zarr into $CK_ATTRS_OUT; h5py and
    zarr-python must read each value back with the right Python type
    (str, float, int: h5py hands back NumPy scalars, zarr JSON values);
  - h5py and zarr-python write py.h5 and py.zarr, and attrs/interop_read
    (with $CK_ATTRS_IN) checks that chunkctl reads them.

The values are fixed on both sides (model_attrs() and interop_read in the C
file): change them together.  CK_TEST_ATTRS_BIN names the test binary
(tests/CMakeLists.txt sets it); without it every test here is skipped,
visibly.
"""

import _common  # noqa: F401  (sets HDF5_PLUGIN_PATH before h5py loads)

import json
import math
import numbers
import os
import re
import shutil
import struct
import subprocess
import tempfile
import unittest

import h5py
import numpy as np
import zarr

BIN = os.environ.get("CK_TEST_ATTRS_BIN", "")
SKIP = "CK_TEST_ATTRS_BIN not set (ctest sets it to the test_attrs binary)"

UTF8 = "na\u00efve \u2014 \u00fc"

# What attrs/interop_write writes: (object, key) -> (value, Python type).
WRITTEN = {
    ("/", "family"): ("logistic", str),
    ("/", "iterations"): (12, int),
    ("/", "converged"): (1, int),
    ("/", "objective"): (0.31, float),
    ("/", "lambda"): (0.1, float),
    ("/", "one"): (1.0, float),
    ("/", "negzero"): (-0.0, float),
    ("/", "nan"): (math.nan, float),
    ("/", "inf"): (math.inf, float),
    ("/", "ninf"): (-math.inf, float),
    ("/", "tiny"): (5e-324, float),
    ("/", "huge"): (1e300, float),
    ("/", "third"): (1.0 / 3.0, float),
    ("/", "imax"): (2**63 - 1, int),
    ("/", "imin"): (-2**63, int),
    ("/", "empty"): ("", str),
    ("/", "utf8"): (UTF8, str),
    ("/", "quote"): ('a "b" \\c\td\n', str),
    ("/", "long"): ("x" * 255, str),
    ("/coef", "units"): ("log-odds", str),
    ("/coef", "index"): (-3, int),
}

# What interop_read expects in py.h5 and py.zarr.
TO_READ = {
    "/": {"family": "logistic", "iterations": 12, "converged": True,
          "objective": 0.31, "lambda": 0.1, "one": 1.0, "nan": math.nan,
          "ninf": -math.inf, "imin": -2**63, "utf8": UTF8},
    "/coef": {"units": "log-odds", "index": -3},
}
# h5py only: NumPy scalars, and bytes (np.bytes_: a fixed-length ASCII
# string; bytes: a variable-length one).
H5_ONLY = {"f32": np.float32(0.5), "u8": np.uint8(200),
           "ascii": np.bytes_(b"bytes"), "vascii": b"vbytes"}


def run_case(test, env):
    """Runs one test of the Criterion suite; asserts it ran and passed."""
    full = dict(os.environ)
    full.update(env)
    p = subprocess.run([BIN, "--jobs", "1", "--filter", "attrs/" + test],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120, env=full)
    out = p.stdout
    if p.returncode != 0 or not re.search(r"Tested: 1 \| Passing: 1\b",
                                          out):
        raise AssertionError("%s attrs/%s failed (exit %d):\n%s" %
                             (BIN, test, p.returncode, out[-4000:]))


def same_float(a, b):
    """Equal, NaN to NaN, and -0.0 apart from 0.0."""
    if math.isnan(b):
        return math.isnan(a)
    return struct.pack("<d", a) == struct.pack("<d", b)


class TmpCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ck-interop-%s-" % cls.__name__)

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("CK_KEEP_TMP"):
            print("kept", cls.tmp)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)


@unittest.skipUnless(BIN, SKIP)
class WeWriteTheyRead(TmpCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        run_case("interop_write", {"CK_ATTRS_OUT": cls.tmp})

    def check(self, got, key, want, typ, what):
        tag = "%s %s: %r" % (what, key, got)
        if typ is str:
            self.assertIs(type(got), str, tag)
            self.assertEqual(got, want, tag)
        elif typ is float:
            self.assertIsInstance(got, float, tag)  # np.float64 is one
            self.assertTrue(same_float(float(got), want), tag)
        else:
            self.assertIsInstance(got, numbers.Integral, tag)
            self.assertNotIsInstance(got, (bool, np.bool_), tag)
            self.assertEqual(int(got), want, tag)

    def test_h5py_reads(self):
        with h5py.File(os.path.join(self.tmp, "ck.h5"), "r") as f:
            for (obj, key), (want, typ) in WRITTEN.items():
                attrs = f[obj].attrs
                self.check(attrs[key], key, want, typ, "h5py " + obj)
                # Scalars, of the width we promise.
                aid = attrs.get_id(key)
                self.assertEqual(aid.shape, (), key)
                if typ is str:
                    info = h5py.check_string_dtype(aid.dtype)
                    self.assertEqual(info.encoding, "utf-8", key)
                    self.assertIsNone(info.length, key + ": variable length")
                else:
                    self.assertEqual(aid.dtype,
                                     np.dtype("<f8" if typ is float
                                              else "<i8"), key)
            self.assertEqual(f["coef"].shape, (3,))

    def test_zarr_reads(self):
        g = zarr.open_group(os.path.join(self.tmp, "ck.zarr"), mode="r")
        for (obj, key), (want, typ) in WRITTEN.items():
            node = g if obj == "/" else g[obj.lstrip("/")]
            got = node.attrs[key]
            self.assertIs(type(got), typ, "zarr %s %s: %r" % (obj, key, got))
            self.check(got, key, want, typ, "zarr " + obj)
        self.assertEqual(g["coef"].shape, (3,))

    def test_zattrs_is_json_with_python_floats(self):
        # Apart from the bare NaN/Infinity that Python's json also writes,
        # .zattrs is JSON; json.loads gives the same types zarr does.
        with open(os.path.join(self.tmp, "ck.zarr", ".zattrs"), "rb") as fh:
            d = json.loads(fh.read().decode("utf-8"))
        self.assertIs(type(d["one"]), float)
        self.assertIs(type(d["imax"]), int)


@unittest.skipUnless(BIN, SKIP)
class TheyWriteWeRead(TmpCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with h5py.File(os.path.join(cls.tmp, "py.h5"), "w") as f:
            f.create_dataset("coef", data=np.zeros(3))
            for obj, attrs in TO_READ.items():
                for k, v in attrs.items():
                    f[obj].attrs[k] = v
            for k, v in H5_ONLY.items():
                f.attrs[k] = v
        g = zarr.open_group(os.path.join(cls.tmp, "py.zarr"), mode="w")
        g.zeros("coef", shape=(3,), chunks=(3,), dtype="f8")
        for obj, attrs in TO_READ.items():
            node = g if obj == "/" else g[obj.lstrip("/")]
            node.attrs.update(attrs)

    def test_fixtures_are_what_we_think(self):
        # The h5py defaults the C side relies on: str -> variable-length
        # UTF-8, bytes -> fixed-length ASCII, bool -> enum.
        with h5py.File(os.path.join(self.tmp, "py.h5"), "r") as f:
            info = h5py.check_string_dtype(f.attrs.get_id("family").dtype)
            self.assertEqual((info.encoding, info.length), ("utf-8", None))
            info = h5py.check_string_dtype(f.attrs.get_id("ascii").dtype)
            self.assertEqual((info.encoding, info.length), ("ascii", 5))
            info = h5py.check_string_dtype(f.attrs.get_id("vascii").dtype)
            self.assertEqual((info.encoding, info.length), ("ascii", None))
            self.assertEqual(f.attrs.get_id("converged").dtype, np.bool_)
        with open(os.path.join(self.tmp, "py.zarr", ".zattrs")) as fh:
            text = fh.read()
        self.assertIn('"nan": NaN', text)
        self.assertIn('"one": 1.0', text)

    def test_chunkctl_reads(self):
        run_case("interop_read", {"CK_ATTRS_IN": self.tmp})


if __name__ == "__main__":
    _common.main()
