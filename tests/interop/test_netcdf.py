"""netCDF-4 through chunkctl's HDF5 store (issue 15), against Debian's
netCDF-C tools: python3-netcdf4 and ncdump (netcdf-bin), plus h5py and
h5dump.

- chunkctl reads what netCDF4-python writes: dimension names in info
  --json are netCDF's, coordinate variables are arrays, dimensions without
  a variable are not listed;
- netCDF4-python and ncdump read what chunkctl writes to *.nc: real
  dimensions (no phony_dim), coordinate variables with their values,
  attributes as NC_CHAR text, _FillValue in the variable's type, a file
  netCDF-C opens for writing too;
- the zstd plugin, installed with `cmake --install` into a staging root
  (DESTDIR) that mirrors the system, lands in the directory HDF5 searches
  by default, and h5dump, h5py and ncdump read chunkctl's zstd files
  through it alone.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import _common as C
from _common import np, h5py, zarr

try:
    import netCDF4
except ImportError:  # python3-netcdf4 (.ci/install-deps ORACLES)
    netCDF4 = None

NCDUMP = shutil.which("ncdump")
H5DUMP = shutil.which("h5dump")
PY = "/usr/bin/python3"


def ncdump_h(path):
    return subprocess.run([NCDUMP, "-h", path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, check=True,
                          timeout=60).stdout


@unittest.skipIf(netCDF4 is None or NCDUMP is None,
                 "python3-netcdf4 and netcdf-bin are needed")
class NetcdfRead(C.InteropCase):
    """netCDF4-python writes, chunkctl reads."""

    @classmethod
    def make_fixtures(cls):
        cls.nc = cls.path("in.nc")
        with netCDF4.Dataset(cls.nc, "w") as d:
            d.createDimension("time", None)
            d.createDimension("lat", 3)
            d.createDimension("lon", 5)
            d.createDimension("nv", 2)
            t = d.createVariable("time", "f8", ("time",))
            t[:] = [0.0, 1.0]
            lat = d.createVariable("lat", "f4", ("lat",))
            lat[:] = [-10, 0, 10]
            lat.units = "degrees_north"
            v = d.createVariable("tas", "f4", ("time", "lat", "lon"),
                                 zlib=True, chunksizes=(1, 2, 5),
                                 fill_value=np.float32(-999))
            v[:] = np.arange(30, dtype="f4").reshape(2, 3, 5)
            v.units = "K"
            v.long_name = "air temperature"
            d.createVariable("bnds", "i2", ("lat", "nv"))[:] = \
                np.arange(6).reshape(3, 2)
            g = d.createGroup("sub")
            g.createDimension("x", 4)
            g.createVariable("y", "i4", ("x",))[:] = np.arange(4)
            g.createVariable("w", "u1", ("x", "lon"))[:] = \
                np.ones((4, 5), "u1")
            d.history = "written by netCDF4-python"

    def test_dims_are_netcdfs(self):
        arrays = {a["name"]: a for a in C.info(self.nc)["arrays"]}
        with netCDF4.Dataset(self.nc) as d:
            want = {"/" + n: list(v.dimensions)
                    for n, v in d.variables.items()}
            for n, v in d["sub"].variables.items():
                want["/sub/" + n] = list(v.dimensions)
        self.assertEqual(sorted(arrays), sorted(want),
                         "variables, and only those: lon, nv and x are "
                         "dimensions without data")
        for name, dims in want.items():
            with self.subTest(name=name):
                self.assertEqual(arrays[name]["dims"], dims)

    def test_attrs_are_netcdfs(self):
        arrays = {a["name"]: a for a in C.info(self.nc)["arrays"]}
        with netCDF4.Dataset(self.nc) as d:
            for n, v in d.variables.items():
                want = {k: C.np.asarray(v.getncattr(k)).tolist()
                        for k in v.ncattrs()}
                got = dict(arrays["/" + n]["attrs"])
                # netCDF writes _FillValue as an array of one.
                if "_FillValue" in got and isinstance(got["_FillValue"],
                                                      list):
                    got["_FillValue"] = got["_FillValue"][0]
                with self.subTest(name=n):
                    self.assertEqual(got, want)

    def test_coordinate_values_read(self):
        p = C.run("copy", "--quiet", self.nc + ":/lat",
                  self.fresh("lat.h5") + ":/lat")
        self.assertEqual(p.returncode, 0)
        with h5py.File(self.path("lat.h5"), "r") as f, \
                netCDF4.Dataset(self.nc) as d:
            self.assertSameArray(f["lat"][:], d["lat"][:].data)

    def test_dimension_without_data_is_not_an_array(self):
        p = C.run("info", self.nc + ":/lon", expect=2)
        self.assertCleanError(p, 2, "no array '/lon'")


@unittest.skipIf(netCDF4 is None or NCDUMP is None,
                 "python3-netcdf4 and netcdf-bin are needed")
class NetcdfWrite(C.InteropCase):
    """chunkctl writes *.nc, netCDF-C reads."""

    @classmethod
    def make_fixtures(cls):
        cls.src = cls.path("src.nc")
        with netCDF4.Dataset(cls.src, "w") as d:
            d.createDimension("time", 2)
            d.createDimension("lat", 3)
            d.createDimension("lon", 4)
            d.createDimension("z", 6)
            lat = d.createVariable("lat", "f8", ("lat",))
            lat[:] = [-45.0, 0.0, 45.0]
            lat.units = "degrees_north"
            v = d.createVariable("tas", "f4", ("time", "lat", "lon"),
                                 fill_value=np.float32(1e20))
            data = np.arange(24, dtype="f4").reshape(2, 3, 4)
            data[1, 2, 3] = np.nan
            v[:] = np.ma.masked_equal(data, 6)  # 6 is written as 1e20
            v.units = "K"
            v.long_name = "near-surface air temperature"
            v.valid_min = np.float32(0)
            # Variables named before their coordinate variable ("a" < "z"):
            # chunkctl copies in name order, so z is written last.
            a = d.createVariable("a", "i2", ("z",), fill_value=np.int16(-1))
            a[:] = np.arange(6, dtype="i2")
            a.missing_value = np.int16(-2)
            d.createVariable("z", "i4", ("z",))[:] = np.arange(6) * 10
            d.title = "a CF file"
        cls.out = cls.path("out.nc")
        C.copy(cls.src, cls.out)
        cls.h5 = cls.path("plain.h5")
        with h5py.File(cls.h5, "w") as f:
            f.create_dataset("m", data=np.arange(12.0).reshape(3, 4),
                             chunks=(2, 2))

    def test_ncdump_shows_real_dimensions(self):
        text = ncdump_h(self.out)
        self.assertNotIn("phony_dim", text)
        self.assertIn("float tas(time, lat, lon) ;", text)
        self.assertIn("double lat(lat) ;", text)
        self.assertIn("short a(z) ;", text)
        self.assertIn("int z(z) ;", text)

    def test_netcdf4_reads_dims_coords_attrs(self):
        with netCDF4.Dataset(self.src) as s, netCDF4.Dataset(self.out) as o:
            self.assertEqual(dict((k, len(v)) for k, v in o.dimensions.items()),
                             dict((k, len(v)) for k, v in s.dimensions.items()))
            self.assertEqual(sorted(o.variables), sorted(s.variables))
            for n, v in s.variables.items():
                w = o[n]
                with self.subTest(name=n):
                    self.assertEqual(w.dimensions, v.dimensions)
                    self.assertEqual(w.dtype, v.dtype)
                    self.assertEqual(sorted(w.ncattrs()), sorted(v.ncattrs()))
                    for k in v.ncattrs():
                        gv, wv = w.getncattr(k), v.getncattr(k)
                        self.assertEqual(np.asarray(gv).dtype,
                                         np.asarray(wv).dtype, k)
                        self.assertEqual(np.asarray(gv).tolist(),
                                         np.asarray(wv).tolist(), k)
                    # Masked where the source is: _FillValue and
                    # missing_value mean the same to netCDF-C.
                    gm, wm = w[:], v[:]
                    self.assertTrue(np.array_equal(np.ma.getmaskarray(gm),
                                                   np.ma.getmaskarray(wm)))
                    self.assertTrue(np.array_equal(gm.filled(0),
                                                   wm.filled(0),
                                                   equal_nan=True))
            self.assertEqual(o.title, s.title)
            self.assertEqual(o["lat"][:].tolist(), [-45.0, 0.0, 45.0])

    def test_text_attributes_are_nc_char(self):
        text = ncdump_h(self.out)
        self.assertIn('tas:units = "K" ;', text)
        self.assertIn(':title = "a CF file" ;', text)
        self.assertNotIn("string ", text)

    def test_fill_value_has_the_variable_type(self):
        # h5dump -H shows the attribute's HDF5 type.
        p = subprocess.run([H5DUMP, "-H", "-a", "/a/_FillValue", self.out],
                           stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertIn("H5T_STD_I16LE", p.stdout)
        with netCDF4.Dataset(self.out) as o:
            self.assertEqual(o["a"].getncattr("_FillValue").dtype, np.int16)
            self.assertEqual(o["a"].missing_value.dtype, np.int16)
            self.assertEqual(o["tas"].valid_min.dtype, np.float32)

    def test_netcdf_c_opens_it_for_writing(self):
        out = self.fresh("append.nc")
        shutil.copy(self.out, out)
        with netCDF4.Dataset(out, "a") as d:
            d.comment = "netCDF-C needs creation order tracked to write"
            d["tas"].note = "x"
        with netCDF4.Dataset(out) as d:
            self.assertEqual(d["tas"].note, "x")

    def test_unnamed_axes_get_dim_k(self):
        out = self.fresh("plain.nc")
        C.copy(self.h5, out)
        text = ncdump_h(out)
        self.assertNotIn("phony_dim", text)
        with netCDF4.Dataset(out) as d:
            self.assertEqual(d["m"].dimensions, ("dim_0", "dim_1"))
            self.assertEqual(len(d.dimensions["dim_0"]), 3)
            self.assertEqual(len(d.dimensions["dim_1"]), 4)
            self.assertNotIn("dim_0", d.variables)
        self.assertEqual(C.info(out)["arrays"][0]["dims"],
                         ["dim_0", "dim_1"])

    def test_h5_output_keeps_dims_for_h5py(self):
        # Outside *.nc: coordinate variables become scales, the other
        # names labels, and no data-less dataset is added.
        out = self.fresh("dims.h5")
        C.copy(self.src, out)
        with h5py.File(out, "r") as f, netCDF4.Dataset(self.src) as d:
            self.assertEqual(sorted(f), sorted(d.variables))
            tas = f["tas"]
            self.assertEqual(tas.dims[1][0].name, "/lat")
            self.assertTrue(np.array_equal(tas.dims[1][0][:],
                                           [-45.0, 0.0, 45.0]))
            self.assertEqual([tas.dims[0].label, tas.dims[2].label],
                             ["time", "lon"])
            self.assertEqual(len(tas.dims[0]), 0)
            self.assertEqual(f["a"].dims[0][0].name, "/z")
        self.assertEqual(C.info(out + ":/tas")["arrays"][0]["dims"],
                         ["time", "lat", "lon"])
        text = ncdump_h(out)
        self.assertIn("double lat(lat) ;", text)
        self.assertIn("short a(z) ;", text)

    def test_reduction_output_has_no_phony_dims(self):
        out = self.fresh("mean.nc")
        C.run("reduce", "mean", self.src + ":/tas", "--axis", "0",
              "-o", out + ":/tas", "--quiet")
        text = ncdump_h(out)
        self.assertNotIn("phony_dim", text)
        with netCDF4.Dataset(out) as d:
            self.assertEqual(len(d["tas"].dimensions), 2)
            self.assertEqual(d["tas"].shape, (3, 4))


def default_plugin_dir():
    """Where HDF5 looks for plugins when HDF5_PLUGIN_PATH is unset, as the
    library itself says (h5py.h5pl.get), not as chunkctl's build thinks."""
    env = dict(os.environ)
    env.pop("HDF5_PLUGIN_PATH", None)
    p = subprocess.run([PY, "-c", "import h5py; print(h5py.h5pl.get(0)"
                        ".decode())"], env=env, stdout=subprocess.PIPE,
                       text=True, check=True, timeout=60)
    return p.stdout.strip()


@unittest.skipIf(netCDF4 is None, "python3-netcdf4 is needed")
class CopyKeepsMissing(C.InteropCase):
    """A copy means what its source means: the values CF decoding takes as
    missing stay missing in every output format, and no others become
    missing (audit of 2026-11-29)."""

    @classmethod
    def make_fixtures(cls):
        # a float variable without _FillValue, half written: netCDF4 masks
        # netCDF's default fill in the rest
        with netCDF4.Dataset(cls.path("nf.nc"), "w") as d:
            d.createDimension("x", 4)
            d.createVariable("v", "f4", ("x",))[0:2] = 1.5
        # an HDF5 array with dimension scales and no _FillValue, holding
        # zeros that are data
        cls.d = np.array([[0.0, 1, 2], [3, 0, 5]])
        with h5py.File(cls.path("ds.h5"), "w") as f:
            y = f.create_dataset("y", data=np.arange(2.0))
            y.make_scale("y")
            x = f.create_dataset("x", data=np.arange(3.0))
            x.make_scale("x")
            d = f.create_dataset("d", data=cls.d, chunks=(1, 3))
            d.dims[0].attach_scale(y)
            d.dims[1].attach_scale(x)

    def mean(self, target):
        return float(C.run("reduce", "--quiet", "mean", target).stdout)

    def test_default_fill_stays_missing_in_h5_and_zarr(self):
        with netCDF4.Dataset(self.path("nf.nc")) as d:
            want = float(d["v"][:].mean())
        self.assertEqual(want, 1.5)
        outs = {"nf.h5": (), "nf.zarr": (), "nf3.zarr": ("--zarr-format",
                                                         "3")}
        for name, opts in outs.items():
            with self.subTest(out=name):
                out = self.fresh(name)
                C.run("copy", "--quiet", self.path("nf.nc"), out, *opts)
                target = out + (":/v" if name.endswith(".h5") else "")
                self.assertEqual(self.mean(target), want)
        # netCDF-C reads the .h5 copy as netCDF4-python reads the source
        with netCDF4.Dataset(self.path("nf.h5")) as d:
            self.assertEqual(float(d["v"][:].mean()), want)

    def test_int64_fill_value_stays_exact(self):
        # a v2 fill_value past 2^53 (with dimension names: the missing
        # value) becomes the HDF5 copy's _FillValue exactly, not rounded
        # through a double
        src = self.fresh("i64.zarr")
        fill = 2 ** 53 + 1
        a = zarr.open_array(src, "w", shape=(4,), chunks=(2,), dtype="i8",
                            fill_value=fill)
        a[:] = [1, fill, 3, 4]
        a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
        out = self.fresh("i64.h5")
        C.run("copy", "--quiet", src, out + ":/v")
        with h5py.File(out, "r") as f:
            self.assertEqual(int(f["v"].attrs["_FillValue"]), fill)

    def test_dimension_names_do_not_make_zeros_missing(self):
        for fmt in ("2", "3"):
            with self.subTest(zarr_format=fmt):
                out = self.fresh("ds%s.zarr" % fmt)
                C.run("copy", "--quiet", self.path("ds.h5") + ":/d", out,
                      "--zarr-format", fmt)
                self.assertEqual(self.mean(out), self.d.mean())
                if fmt == "2":
                    a = zarr.open_array(out, "r")
                    self.assertIsNone(a.fill_value)
                    self.assertSameArray(a[...], self.d)
        # and a v3 array with dimension names and fill_value 0, copied to
        # v2, whose fill_value would then be xarray's mask
        v2 = self.fresh("back.zarr")
        C.run("copy", "--quiet", self.path("ds3.zarr"), v2,
              "--zarr-format", "2")
        self.assertEqual(self.mean(v2), self.d.mean())


@unittest.skipIf(shutil.which("cmake") is None or H5DUMP is None,
                 "cmake and h5dump are needed")
class PluginInstall(C.InteropCase):
    """cmake --install into a staging root that mirrors the system."""

    @classmethod
    def make_fixtures(cls):
        build = os.path.dirname(os.path.dirname(C.CHUNKCTL))
        cls.stage = cls.path("stage")
        env = dict(os.environ, DESTDIR=cls.stage)
        subprocess.run(["cmake", "--install", build, "--prefix", "/usr",
                        "--component", "hdf5-plugin"],
                       env=env, stdout=subprocess.DEVNULL, check=True,
                       timeout=120)
        cls.default = default_plugin_dir()
        cls.plugins = cls.stage + cls.default
        cls.zst = cls.path("zstd.h5")
        cls.data = np.arange(2000, dtype="f8").reshape(40, 50) / 7
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("x", data=cls.data, chunks=(16, 16))
        C.copy(cls.path("in.h5"), cls.zst, "--compress", "zstd:3")

    def env(self, plugin_dir):
        return dict(os.environ, HDF5_PLUGIN_PATH=plugin_dir)

    def test_installed_where_hdf5_looks_by_default(self):
        self.assertTrue(self.default.startswith("/"), self.default)
        self.assertTrue(os.path.isfile(os.path.join(self.plugins,
                                                    "libh5zstd.so")),
                        "libh5zstd.so not in %s" % self.plugins)

    def read_with_h5py(self, plugin_dir, path=None):
        return subprocess.run(
            [PY, "-c", "import sys, h5py, numpy as np; "
             "f = h5py.File(sys.argv[1], 'r'); "
             "np.save(sys.stdout.buffer, f['x'][:])", path or self.zst],
            env=self.env(plugin_dir), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=60)

    def test_h5py_reads_through_the_installed_plugin_only(self):
        import io
        p = self.read_with_h5py(self.plugins)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertSameArray(np.load(io.BytesIO(p.stdout)), self.data)
        # Without it h5py cannot: the staged plugin is what reads.
        empty = tempfile.mkdtemp(dir=self.tmp)
        self.assertNotEqual(self.read_with_h5py(empty).returncode, 0)

    def test_h5dump_reads_through_the_installed_plugin(self):
        p = subprocess.run([H5DUMP, "-d", "/x", "-s", "0,0", "-c", "1,3",
                            self.zst], env=self.env(self.plugins),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        vals = [float(v) for v in p.stdout.split("(0,0):")[1]
                .split("}")[0].replace(",", " ").split()]
        np.testing.assert_allclose(vals, self.data[0, :3], rtol=1e-6)

    @unittest.skipIf(NCDUMP is None, "netcdf-bin is needed")
    def test_ncdump_reads_through_the_installed_plugin(self):
        p = subprocess.run([NCDUMP, "-v", "x", self.zst],
                           env=self.env(self.plugins), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        body = p.stdout.split("x =")[1].split(";")[0]
        vals = np.array([float(v) for v in body.replace(",", " ").split()])
        np.testing.assert_allclose(vals, self.data.ravel(), rtol=1e-12)

    def test_chunkctl_reads_zstd_written_by_h5py_with_the_plugin(self):
        out = self.fresh("by_h5py.h5")
        p = subprocess.run(
            [PY, "-c", "import sys, h5py, numpy as np; "
             "f = h5py.File(sys.argv[1], 'w'); "
             "f.create_dataset('x', data=np.arange(300.).reshape(10, 30), "
             "chunks=(4, 8), compression=32015, compression_opts=(5,))",
             out], env=self.env(self.plugins), stderr=subprocess.PIPE,
            text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        a = C.info(out)["arrays"][0]
        self.assertTrue(a["compressor"].startswith("zstd"), a["compressor"])
        got = C.run("copy", "--quiet", out + ":/x",
                    self.fresh("back.h5") + ":/x")
        self.assertEqual(got.returncode, 0)
        with h5py.File(self.path("back.h5"), "r") as f:
            self.assertSameArray(f["x"][:], np.arange(300.).reshape(10, 30))


if __name__ == "__main__":
    C.main()
