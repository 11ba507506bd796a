"""chunkctl info: attributes, dimension names, byte order in the dtype and
chunks null for unchunked datasets (issue 15), on files written by h5py
and stores written by zarr-python.  The expected values are what h5py and
zarr-python say (attrs, dims, dtype.str, chunks), never chunkctl."""

import json
import math

import _common as C
from _common import np, h5py, zarr


# The attributes HDF5's dimension scale API keeps on a dataset (H5DS).
SCALE_ATTRS = {"DIMENSION_LIST", "DIMENSION_LABELS"}


def jsonable(v):
    """An h5py / zarr attribute value as the JSON chunkctl prints: arrays
    as (nested) lists, NaN and infinities as Zarr's strings."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return [jsonable(x) for x in v.tolist()] if v.ndim else \
            jsonable(v.item())
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return jsonable(v.item())
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, float) and math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


class InfoAttrs(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.h5 = cls.path("attrs.h5")
        with h5py.File(cls.h5, "w") as f:
            x = f.create_dataset("x", data=np.arange(12.0).reshape(3, 4),
                                 chunks=(2, 2))
            x.attrs["units"] = "K"
            x.attrs["long_name"] = 'air "2 m" temperature'
            x.attrs["scale_factor"] = np.float32(0.5)
            x.attrs["count"] = np.int64(2) ** 60 + 1
            x.attrs["valid_range"] = np.array([0, 400], "i2")
            x.attrs["nan"] = np.nan
            x.attrs["flag"] = np.bool_(True)
            # h5py's dimension scales: y's axis 0 is "lat", axis 1 is
            # labelled only.
            lat = f.create_dataset("lat", data=np.array([1.0, 2.0, 3.0]))
            lat.attrs["units"] = "degrees_north"
            lat.make_scale("lat")
            x.dims[0].attach_scale(lat)
            x.dims[1].label = "lon"
            f.create_dataset("contig", data=np.arange(6, dtype=">f8"))
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            h5py.h5d.create(f.id, b"compact",
                            h5py.h5t.py_create(np.dtype("<i2")),
                            h5py.h5s.create_simple((2, 3)), dcpl=dcpl)
            f.create_dataset("scalar", data=np.float32(1.5))
            f.create_dataset("bool", data=np.array([True, False]))
            f.attrs["title"] = "root attrs are not an array's"
        cls.zs = cls.path("attrs.zarr")
        root = zarr.open_group(cls.zs, mode="w")
        z = root.create_dataset("t", shape=(3, 4), chunks=(2, 2), dtype=">i4")
        z.attrs.update({"_ARRAY_DIMENSIONS": ["time", "x"], "units": "m",
                        "nested": {"a": [1, 2]}, "pi": 3.25})
        root.create_dataset("u", shape=(2,), chunks=(2,), dtype="<u2")

    def arrays(self, target):
        return {a["name"]: a for a in C.info(target)["arrays"]}

    def test_h5_attrs_are_h5pys(self):
        a = self.arrays(self.h5)
        with h5py.File(self.h5, "r") as f:
            want = {k: jsonable(v) for k, v in f["x"].attrs.items()
                    if k not in SCALE_ATTRS}
            self.assertEqual(a["/x"]["attrs"], want)
            self.assertEqual(a["/lat"]["attrs"],
                             {"units": "degrees_north"},
                             "CLASS, NAME and REFERENCE_LIST are the "
                             "scale's bookkeeping, not attributes")
        self.assertEqual(a["/contig"]["attrs"], {})

    def test_big_integers_stay_exact(self):
        out = C.run("info", "--json", self.h5 + ":/x").stdout
        self.assertIn('"count":%d' % (2 ** 60 + 1), out.replace(" ", ""))
        self.assertEqual(json.loads(out)["arrays"][0]["attrs"]["count"],
                         2 ** 60 + 1)

    def test_h5_dims_from_scales_and_labels(self):
        a = self.arrays(self.h5)
        with h5py.File(self.h5, "r") as f:
            x = f["x"]
            want = [x.dims[0][0].name.rsplit("/", 1)[-1], x.dims[1].label]
        self.assertEqual(a["/x"]["dims"], want)
        self.assertEqual(a["/x"]["dims"], ["lat", "lon"])
        self.assertEqual(a["/lat"]["dims"], ["lat"])
        self.assertIsNone(a["/contig"]["dims"])
        self.assertIsNone(a["/scalar"]["dims"])

    def test_typestr_is_numpys(self):
        a = self.arrays(self.h5)
        with h5py.File(self.h5, "r") as f:
            for name in ("/x", "/contig", "/compact", "/scalar", "/bool"):
                with self.subTest(name=name):
                    self.assertEqual(a[name]["typestr"], f[name].dtype.str)
        self.assertEqual(a["/contig"]["typestr"], ">f8")
        self.assertEqual(a["/contig"]["byteorder"], "big")
        self.assertEqual(a["/contig"]["dtype"], "float64")
        z = self.arrays(self.zs)
        g = zarr.open_group(self.zs, mode="r")
        self.assertEqual(z["/t"]["typestr"], g["t"].dtype.str)
        self.assertEqual(z["/u"]["typestr"], "<u2")

    def test_chunks_null_unless_the_file_has_chunks(self):
        a = self.arrays(self.h5)
        with h5py.File(self.h5, "r") as f:
            for name, d in (("/x", f["x"]), ("/contig", f["contig"]),
                            ("/compact", f["compact"]),
                            ("/scalar", f["scalar"])):
                with self.subTest(name=name):
                    if d.chunks is None:
                        self.assertIsNone(a[name]["chunks"])
                        self.assertIsNone(a[name]["nchunks"])
                    else:
                        self.assertEqual(a[name]["chunks"], list(d.chunks))
        self.assertEqual(a["/compact"]["layout"], "compact")
        self.assertEqual(a["/scalar"]["shape"], [])

    def test_zarr_attrs_and_array_dimensions(self):
        z = self.arrays(self.zs)
        g = zarr.open_group(self.zs, mode="r")
        want = dict(g["t"].attrs)
        dims = want.pop("_ARRAY_DIMENSIONS")
        self.assertEqual(z["/t"]["dims"], dims)
        self.assertEqual(z["/t"]["attrs"], want,
                         "_ARRAY_DIMENSIONS is shown as dims, as xarray does")
        self.assertEqual(z["/u"]["attrs"], {})
        self.assertIsNone(z["/u"]["dims"])

    def test_one_dataset_table_lists_attrs_like_ncdump(self):
        out = C.run("info", self.h5 + ":/x").stdout.splitlines()
        self.assertIn("/x: dims (lat, lon)", out)
        self.assertIn('    x:units = "K" ;', out)
        self.assertIn('    x:long_name = "air \\"2 m\\" temperature" ;', out)
        self.assertIn("    x:valid_range = 0, 400 ;", out)
        self.assertIn("    x:scale_factor = 0.5 ;", out)
        attr_lines = [line for line in out if line.startswith("    x:")]
        with h5py.File(self.h5, "r") as f:
            self.assertEqual(len(attr_lines),
                             len(set(f["x"].attrs) - SCALE_ATTRS))

    def test_whole_file_table_has_dims_but_no_attrs(self):
        out = C.run("info", self.h5).stdout.splitlines()
        self.assertIn("/x: dims (lat, lon)", out)
        self.assertIn("/lat: dims (lat)", out)
        self.assertFalse([line for line in out if line.startswith("    ")])



class NotUtf8Attrs(C.InteropCase):
    """A legacy HDF5 string attribute that is not UTF-8 (Latin-1 "\xb0C",
    fixed-length or variable-length, in a value or a name) reads as
    Python's bytes.decode("utf-8", "replace") does, so that every JSON
    chunkctl writes is UTF-8: info --json, .zattrs, v3 zarr.json.  The v3
    writer and info once wrote the raw bytes (invalid JSON)."""

    # Latin-1, a surrogate and a sequence cut short: all invalid
    LATIN = b"\xb0C \xe9t\xe9 \xed\xa0\x80 \xe2\x82x \xf0\x9f"

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("l.h5"), "w") as f:
            d = f.create_dataset("t", data=np.arange(4.0), chunks=(2,))
            d.attrs["units"] = np.bytes_(cls.LATIN)
            tid = h5py.h5t.C_S1.copy()
            tid.set_size(h5py.h5t.VARIABLE)
            aid = h5py.h5a.create(d.id, b"vlen", tid,
                                  h5py.h5s.create(h5py.h5s.SCALAR))
            aid.write(np.array(cls.LATIN, dtype=h5py.string_dtype("ascii")))
            d.attrs.create(b"k\xe9y", 1)

    def test_every_json_is_utf8(self):
        want = self.LATIN.decode("utf-8", "replace")
        doc = json.loads(C.run("info", "--json",
                               self.path("l.h5")).stdout.encode())
        at = doc["arrays"][0]["attrs"]
        self.assertEqual(at["units"], want)
        self.assertEqual(at["vlen"], want)
        self.assertEqual(at["k\ufffdy"], 1)
        for fmt, meta in (("2", ".zattrs"), ("3", "zarr.json")):
            out = self.fresh("o%s.zarr" % fmt)
            C.copy(self.path("l.h5"), out, "--zarr-format", fmt)
            with open("%s/%s" % (out, meta), "rb") as f:
                doc = json.loads(f.read())
            at = doc["attributes"] if fmt == "3" else doc
            self.assertEqual(at["units"], want, fmt)
            self.assertEqual(at["vlen"], want, fmt)

if __name__ == "__main__":
    C.main()
