"""netCDF and CF through a pipeline (issue 15; man chunkctl-pipeline(5),
"netCDF and CF"), against independent tools only: Debian's python3-netcdf4
and ncdump (netcdf-bin), CDO (`cdo timmean`), NCO (`ncwa -a time`),
zarr-python and NumPy.  The fixture is written by netCDF4-python, never by
chunkctl.

- CF decoding: `chunkctl mean F.nc:/tas --axis time` equals CDO's timmean,
  NCO's ncwa and netCDF4's masked mean; a packed int16 decodes as
  netCDF4's auto mask-and-scale does, its valid_range, valid_min and
  valid_max unpacked with it; --raw and "decode": false see the stored
  integers; reductions skip missing values (argmin, argmax, prod and
  count_nonzero too, and coarsen's windows);
- what the output keeps: dimensions, coordinate variables (sliced with the
  data), the attribute rule op by op, _FillValue NaN in the variable's
  type, history and provenance;
- dimension names through ops (transpose, slice, reductions, expand_dims,
  squeeze, matmul, "dims") and axes named by dimension;
- the same in Zarr v2 (_ARRAY_DIMENSIONS) and v3 (dimension_names).

Tolerances.  Every tool here reads the same float32 values, and the values
are positive (200..330 K), so a sum of n <= 6 of them has no cancellation:
summed in float64 (CDO keeps fields in double) and rounded once to float32
the mean is within 1 ulp of the exact mean (0.5 ulp when correctly
rounded); summed in float32 (NumPy's masked mean of a float32 array, and
NCO when it does not promote floats to double: its --flt/--dbl switch)
each of the n - 1 additions and the division round once, a relative error
of at most n * 2**-24 = 3.6e-7.  So chunkctl and CDO are held to 1 ulp of
the float64 mean (and to 2 ulps of each other), NCO and netCDF4's masked
mean to rtol 1e-6 (8 ulps at these magnitudes), and missing results (NaN
/ _FillValue) must be in exactly the same places.
"""

import json
import os
import re
import shutil
import subprocess
import unittest
import warnings

import _common as C
from _common import np, h5py, zarr

try:
    import netCDF4
except ImportError:  # python3-netcdf4 (.ci/install-deps ORACLES)
    netCDF4 = None

NCDUMP = shutil.which("ncdump")
CDO = shutil.which("cdo")
NCWA = shutil.which("ncwa")  # NCO (.ci/install-deps ORACLES)

NT, NY, NX = 6, 5, 7
DEAD = (1, 2)       # (lat, lon) of a column missing at every time
ONE = (3, 4)        # a column with one value only
HISTORY = "Mon Jan 01 00:00:00 2024: written by netCDF4-python"
# "Wed Nov 25 00:14:56 2026: " as NCO and CDO date their history lines
DATED = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4}: "
PROVENANCE = {"chunkctl_version", "chunkctl_pipeline"}


def tool(*argv):
    return subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, check=True,
                          timeout=60)


def nc_read(path, name):
    """A variable as netCDF4-python decodes it: (masked values, attrs,
    dims)."""
    with netCDF4.Dataset(path) as d:
        v = d.variables[name]
        return v[:], {k: v.getncattr(k) for k in v.ncattrs()}, \
            v.dimensions


def filled(m):
    """A masked float array with NaN where masked."""
    return np.ma.filled(np.ma.asarray(m).astype(np.float32), np.nan)


def ulps(a, ref):
    """|a - ref| in float32 ulps of ref (ref: float64), NaN in both -> 0."""
    a = np.asarray(a, np.float64)
    both = np.isnan(a) & np.isnan(ref)
    sp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.where(both, 0, np.abs(a - ref) / sp)


@unittest.skipIf(netCDF4 is None or NCDUMP is None,
                 "python3-netcdf4 and netcdf-bin are needed")
class CfCase(C.InteropCase):
    """A CF netCDF-4 file written by netCDF4-python: tas(time, lat, lon)
    float32, zlib + shuffle, chunks 4 x 3 x 4 (edge chunks on every axis),
    units, long_name, standard_name, valid_range, _FillValue -999 with
    about 20% missing (a whole column at DEAD); pr(time, lat, lon) int16
    packed with scale_factor 0.01 and add_offset 5, _FillValue -32767;
    coordinate variables time/lat/lon with units; a global history."""

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(15)
        cls.nc = cls.path("f.nc")
        cls.time = np.arange(NT) + 0.5
        cls.lat = np.linspace(-60, 60, NY).astype(np.float32)
        cls.lon = np.linspace(0, 300, NX).astype(np.float32)
        x = (265 + 20 * rng.standard_normal((NT, NY, NX))).astype("f4")
        miss = rng.random((NT, NY, NX)) < 0.2
        miss[:, DEAD[0], DEAD[1]] = True
        miss[:, ONE[0], ONE[1]] = True
        miss[2, ONE[0], ONE[1]] = False
        cls.tas = np.where(miss, np.float32(np.nan), x)  # decoded
        raw = rng.integers(-30000, 30000, (NT, NY, NX)).astype(np.int16)
        raw[rng.random((NT, NY, NX)) < 0.2] = -32767
        cls.pr_raw = raw
        with netCDF4.Dataset(cls.nc, "w", format="NETCDF4") as d:
            for n, size in (("time", NT), ("lat", NY), ("lon", NX)):
                d.createDimension(n, size)
            t = d.createVariable("time", "f8", ("time",))
            t.units = "days since 2000-01-01 00:00:00"
            t[:] = cls.time
            for n, v, u in (("lat", cls.lat, "degrees_north"),
                            ("lon", cls.lon, "degrees_east")):
                c = d.createVariable(n, "f4", (n,))
                c.units = u
                c[:] = v
            v = d.createVariable("tas", "f4", ("time", "lat", "lon"),
                                 zlib=True, shuffle=True,
                                 chunksizes=(4, 3, 4),
                                 fill_value=np.float32(-999))
            v.units = "K"
            v.standard_name = "air_temperature"
            v.long_name = "near-surface air temperature"
            v.valid_range = np.array([150, 350], np.float32)
            v[:] = np.ma.array(x, mask=miss)
            p = d.createVariable("pr", "i2", ("time", "lat", "lon"),
                                 zlib=True, shuffle=True,
                                 chunksizes=(4, 5, 7),
                                 fill_value=np.int16(-32767))
            p.scale_factor = np.float32(0.01)
            p.add_offset = np.float32(5)
            p.units = "mm"
            p.long_name = "precipitation"
            p.set_auto_maskandscale(False)
            p[:] = raw
            # missing_value alone (no _FillValue), as older CF files have
            m = d.createVariable("ts", "f4", ("time", "lat", "lon"),
                                 fill_value=False)
            m.missing_value = np.float32(1e20)
            m.units = "K"
            m[:] = np.where(miss, np.float32(1e20), x[::-1])
            d.history = HISTORY

    def ck(self, out, *args, expect=0):
        """chunkctl ARGS -o OUT (one-step form), OUT removed first."""
        self.fresh(out.split(":")[0])
        return C.run(*args, "--quiet", "-o", self.path(out), expect=expect)

    def pipeline(self, steps, outputs, extra=None, name="p.json"):
        doc = {"inputs": {"x": self.nc + ":/tas"}, "steps": steps,
               "outputs": {k: self.path(v) for k, v in outputs.items()}}
        doc.update(extra or {})
        for v in outputs.values():
            self.fresh(v.split(":")[0])
        path = self.path(name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return C.run("run", "--quiet", path)


class TimeMean(CfCase):
    """chunkctl mean --axis time against CDO, NCO and netCDF4-python."""

    @classmethod
    def make_fixtures(cls):
        super().make_fixtures()
        cls.ref = np.nanmean(cls.tas.astype(np.float64), axis=0)  # f64
        cls.out = cls.path("mean.nc")
        C.run("mean", cls.nc + ":/tas", "--axis", "time", "--quiet", "-o",
              cls.out + ":/tas")

    def test_decoded_input_is_netcdf4s(self):
        m, _, _ = nc_read(self.nc, "tas")
        self.assertSameArray(filled(m), self.tas, "fixture")

    def test_equals_float64_mean_within_1_ulp(self):
        got, _, _ = nc_read(self.out, "tas")
        got = filled(got)
        self.assertEqual(got.dtype, np.float32)
        self.assertTrue(np.isnan(got[DEAD]), "all-missing column -> NaN")
        self.assertEqual(got[ONE], self.tas[2][ONE], "one value: itself")
        self.assertLessEqual(float(np.max(ulps(got, self.ref))), 1.0)

    def test_equals_cdo_timmean(self):
        if CDO is None:
            self.skipTest("cdo is not installed (.ci/install-deps)")
        out = self.fresh("cdo.nc")
        tool(CDO, "-s", "timmean", "-selvar,tas", self.nc, out)
        cdo, _, _ = nc_read(out, "tas")
        cdo = filled(cdo)[0]  # CDO keeps a time axis of length 1
        self.assertLessEqual(float(np.max(ulps(cdo, self.ref))), 1.0,
                             "the oracle itself")
        got = filled(nc_read(self.out, "tas")[0])
        np.testing.assert_array_equal(np.isnan(got), np.isnan(cdo))
        self.assertLessEqual(float(np.max(ulps(got, cdo))), 2.0)

    def test_equals_ncwa(self):
        if NCWA is None:
            self.skipTest("NCO's ncwa is not installed: apt-get install nco "
                          "(.ci/install-deps ORACLES)")
        out = self.fresh("ncwa.nc")
        tool(NCWA, "-O", "-a", "time", self.nc, out)
        nco, _, dims = nc_read(out, "tas")
        self.assertEqual(dims, ("lat", "lon"))
        nco = filled(nco)
        got = filled(nc_read(self.out, "tas")[0])
        np.testing.assert_array_equal(np.isnan(got), np.isnan(nco))
        ok = ~np.isnan(nco)
        np.testing.assert_allclose(nco[ok], self.ref[ok], rtol=1e-6, atol=0)
        np.testing.assert_allclose(got[ok], nco[ok], rtol=1e-6, atol=0)

    def test_equals_netcdf4_masked_mean(self):
        m, _, _ = nc_read(self.nc, "tas")
        want = filled(m.mean(axis=0))
        got = filled(nc_read(self.out, "tas")[0])
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6, atol=0)

    def test_threads_bit_identical(self):
        outs = []
        for t in (1, 2, 7):
            out = self.fresh("t%d.h5" % t)
            C.run("mean", self.nc + ":/tas", "--axis", "time", "--threads",
                  t, "--quiet", "-o", out + ":/m")
            with h5py.File(out, "r") as f:
                outs.append(f["m"][()])
        self.assertSameArray(outs[1], outs[0], "threads 2 vs 1")
        self.assertSameArray(outs[2], outs[0], "threads 7 vs 1")

    def test_dims_and_coordinates(self):
        with netCDF4.Dataset(self.out) as d:
            self.assertEqual(d.variables["tas"].dimensions, ("lat", "lon"))
            self.assertEqual(dict((k, len(v)) for k, v in
                                  d.dimensions.items()), {"lat": NY,
                                                          "lon": NX})
            for n, want, u in (("lat", self.lat, "degrees_north"),
                               ("lon", self.lon, "degrees_east")):
                c = d.variables[n]
                self.assertEqual(c.dimensions, (n,))
                self.assertSameArray(c[:].data, want, n)
                self.assertEqual(c.units, u)
            self.assertNotIn("time", d.variables, "a reduced axis has no "
                             "coordinate")

    def test_attributes(self):
        _, a, _ = nc_read(self.out, "tas")
        self.assertEqual(a["units"], "K")
        self.assertEqual(a["standard_name"], "air_temperature")
        self.assertEqual(a["long_name"], "near-surface air temperature")
        self.assertNotIn("valid_range", a, "computed values")
        self.assertTrue(PROVENANCE <= set(a), sorted(a))
        self.assertEqual(json.loads(a["chunkctl_pipeline"])["inputs"],
                         {"a0": self.nc + ":/tas"})
        v = C.run("--version").stdout.split()[-1]
        self.assertEqual(a["chunkctl_version"], v)

    def test_fill_value_is_nan_float32(self):
        with netCDF4.Dataset(self.out) as d:
            f = d.variables["tas"].getncattr("_FillValue")
        self.assertEqual(np.asarray(f).dtype, np.float32)
        self.assertTrue(np.isnan(f))
        head = tool(NCDUMP, "-h", self.out).stdout
        self.assertIn("tas:_FillValue = NaNf ;", head)

    def test_history_dated_command_then_inputs(self):
        with netCDF4.Dataset(self.out) as d:
            h = d.getncattr("history")
        first, _, rest = h.partition("\n")
        self.assertRegex(first, "^" + DATED + re.escape(
            "chunkctl mean %s:/tas --axis time --quiet -o %s:/tas" %
            (self.nc, self.out)) + "$")
        self.assertEqual(rest, HISTORY)


class AttributeRule(CfCase):
    """Each clause of the attribute paragraph of the man page, with an op
    that exercises it; the 'valid_range', 'units' and 'long_name' columns
    say whether each stays."""

    # op args -> (valid_range, units/standard_name, long_name, fill NaN)
    CASES = [
        ("slice", ["--index", "[[0,4],[1,null,2]]"], (1, 1, 1)),
        ("transpose", [], (1, 1, 1)),
        ("add", ["1.5"], (0, 1, 1)),
        ("max", ["--axis", "time"], (0, 1, 1)),
        ("std", ["--axis", "lat"], (0, 1, 1)),
        ("multiply", ["2"], (0, 0, 1)),
        ("var", ["--axis", "time"], (0, 0, 1)),
        ("exp", [], (0, 0, 1)),
    ]

    def check(self, a, keep, what):
        vr, units, ln = keep
        self.assertEqual("valid_range" in a, bool(vr), what)
        self.assertEqual("units" in a, bool(units), what)
        self.assertEqual("standard_name" in a, bool(units), what)
        self.assertEqual("long_name" in a, bool(ln), what)
        if vr:
            self.assertSameArray(a["valid_range"],
                                 np.array([150, 350], np.float32), what)
        if units:
            self.assertEqual(a["units"], "K", what)
        for k in ("scale_factor", "add_offset", "missing_value",
                  "coordinates", "DIMENSION_LIST", "_Netcdf4Dimid"):
            self.assertNotIn(k, a, what)
        self.assertTrue(PROVENANCE <= set(a), what)

    def test_ops(self):
        for op, args, keep in self.CASES:
            with self.subTest(op=op):
                out = "%s.nc" % op
                self.ck(out + ":/y", op, self.nc + ":/tas", *args)
                _, a, _ = nc_read(self.path(out), "y")
                self.check(a, keep, op)
                f = a["_FillValue"]
                self.assertTrue(np.isnan(f), "%s: _FillValue %r" % (op, f))
                self.assertEqual(np.asarray(f).dtype, np.float32, op)

    def test_comparison_keeps_none(self):
        # A bool result: written to HDF5 (read with h5py)
        self.ck("gt.h5:/g", "greater", self.nc + ":/tas", "260")
        with h5py.File(self.path("gt.h5"), "r") as f:
            a = dict(f["g"].attrs)
            self.assertSameArray(f["g"][()], self.tas > 260, "values")
        self.assertEqual(set(a) - {"DIMENSION_LIST"}, PROVENANCE)

    def test_comparison_to_nc_is_a_netcdf_variable(self):
        # netCDF has no bool: whatever chunkctl writes for one in a *.nc
        # (an enum, or int8 as xarray does), netCDF-C must see a variable
        self.ck("gt.nc:/g", "greater", self.nc + ":/tas", "260")
        with netCDF4.Dataset(self.path("gt.nc")) as d:
            self.assertIn("g", d.variables, "netCDF-C skips the bool array")
            v = d.variables["g"]
            self.assertEqual(v.dimensions, ("time", "lat", "lon"))
            self.assertSameArray(np.asarray(v[:]).astype(bool),
                                 self.tas > 260)

    def test_histogram_keeps_none(self):
        self.ck("h.nc:/h", "histogram", self.nc + ":/tas", "--bins", "4")
        with netCDF4.Dataset(self.path("h.nc")) as d:
            a = set(d.variables["h"].ncattrs())
            counts = d.variables["h"][:]
            edges = d.variables["h_edges"][:]
        self.assertEqual(a, PROVENANCE)
        ok = self.tas[~np.isnan(self.tas)]
        want, wedges = np.histogram(ok, bins=4)
        self.assertSameArray(np.asarray(counts), want.astype(counts.dtype))
        np.testing.assert_allclose(edges, wedges, rtol=1e-6)

    def test_where_takes_the_values_attrs(self):
        # where(cond, x, y): the values are x's; units stay (man page)
        self.pipeline([{"name": "c", "op": "greater", "args": ["x", 260]},
                       {"name": "w", "op": "where",
                        "args": ["c", "x", 0]}],
                      {"w": "where.nc:/w"})
        _, a, _ = nc_read(self.path("where.nc"), "w")
        self.check(a, (0, 1, 1), "where")


class PackedInt16(CfCase):
    """scale_factor / add_offset / _FillValue on an int16 variable."""

    def test_decoded_as_netcdf4_does(self):
        self.ck("p.nc:/pr", "slice", self.nc + ":/pr", "--index",
                "[[null,null]]")
        got, a, dims = nc_read(self.path("p.nc"), "pr")
        want, _, _ = nc_read(self.nc, "pr")  # auto mask-and-scale
        self.assertEqual(np.asarray(want).dtype, np.float32)
        self.assertEqual(np.asarray(got).dtype, np.float32)
        self.assertEqual(dims, ("time", "lat", "lon"))
        got = filled(got)
        self.assertSameArray(np.isnan(got), self.pr_raw == -32767,
                             "missing")
        self.assertSameArray(got, filled(want), "values")
        self.assertEqual(a["units"], "mm")
        for k in ("scale_factor", "add_offset"):
            self.assertNotIn(k, a, "the output is not packed")

    def test_mean_of_packed(self):
        self.ck("pm.h5:/m", "mean", self.nc + ":/pr", "--axis", "time")
        want, _, _ = nc_read(self.nc, "pr")
        ref = np.nanmean(filled(want).astype(np.float64), axis=0)
        with h5py.File(self.path("pm.h5"), "r") as f:
            got = f["m"][()]
        self.assertEqual(got.dtype, np.float32)
        self.assertLessEqual(float(np.max(ulps(got, ref))), 1.0)

    def test_valid_range_unpacked_with_the_values(self):
        # CF 8.1: valid_range, valid_min and valid_max of packed data are
        # in the packed type.  Left so on the unpacked output they masked
        # every value (98800..104000 against [-5000, 5000]).
        src = self.fresh("vr.nc")
        with netCDF4.Dataset(src, "w") as d:
            d.createDimension("x", 4)
            v = d.createVariable("psl", "i2", ("x",))
            v.scale_factor = np.float32(1)
            v.add_offset = np.float32(1e5)
            v.valid_range = np.array([-5000, 5000], "i2")
            v.set_auto_maskandscale(False)
            v[:] = [-1200, 0, 300, 6000]
            u = d.createVariable("u", "i1", ("x",))
            u._Unsigned = "true"
            u.scale_factor = np.float32(0.5)
            u.valid_min = np.int8(1)
            u.valid_max = np.int8(-3)
            u.set_auto_maskandscale(False)
            u[:] = [-1, 0, 1, -3]
        for name in ("psl", "u"):
            with self.subTest(name=name):
                want, wa, _ = nc_read(src, name)
                out = "vr_%s.nc" % name
                self.ck(out + ":/" + name, "slice", src + ":/" + name,
                        "--index", "[[null,null]]")
                got, a, _ = nc_read(self.path(out), name)
                # netCDF4 masks what is out of range in both, alike
                self.assertSameArray(np.ma.getmaskarray(got),
                                     np.ma.getmaskarray(want), "mask")
                self.assertSameArray(filled(got), filled(want), "values")
                self.assertGreater(np.ma.count(got), 0)
                for k in ("valid_range", "valid_min", "valid_max"):
                    if k not in wa:
                        continue
                    self.assertEqual(np.asarray(a[k]).dtype, np.float32, k)
                    stored = np.asarray(wa[k])
                    if name == "u":
                        stored = stored.view(np.uint8)
                    self.assertSameArray(
                        np.asarray(a[k]),
                        (stored.astype(np.float32) * np.float32(
                            wa["scale_factor"]) +
                         np.float32(wa.get("add_offset", 0))), k)

    def test_missing_value_alone(self):
        self.ck("mv.h5:/m", "mean", self.nc + ":/ts", "--axis", "lat")
        m, a, _ = nc_read(self.nc, "ts")
        self.assertNotIn("_FillValue", a)
        ref = np.nanmean(filled(m).astype(np.float64), axis=1)
        with h5py.File(self.path("mv.h5"), "r") as f:
            got = f["m"][()]
        self.assertLessEqual(float(np.max(ulps(got, ref))), 1.0)
        self.assertTrue(np.isfinite(got).all(), "1e20 counted as missing")

        self.ck("r.h5:/r", "slice", self.nc + ":/pr", "--index",
                "[[null,null]]", "--raw")
        with h5py.File(self.path("r.h5"), "r") as f:
            self.assertSameArray(f["r"][()], self.pr_raw, "--raw")
        C.run("mean", self.nc + ":/tas", "--axis", "time", "--raw",
              "--quiet", "-o", self.fresh("rt.h5") + ":/m")
        with h5py.File(self.path("rt.h5"), "r") as f:
            got = f["m"][()]
            self.assertNotIn("_FillValue", f["m"].attrs)
        with netCDF4.Dataset(self.nc) as d:
            d.set_auto_maskandscale(False)
            stored = d.variables["tas"][:]
        self.assertLessEqual(
            float(np.max(ulps(got, stored.astype(np.float64).mean(0)))),
            1.0, "-999 counted as a value")

    def test_decode_false_in_pipeline(self):
        doc = {"inputs": {"p": self.nc + ":/pr"}, "decode": False,
               "steps": [{"name": "s", "op": "slice", "args": ["p"],
                          "index": [[None, None]]}],
               "outputs": {"s": self.fresh("d.h5") + ":/s"}}
        path = self.path("decode.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", path)
        with h5py.File(self.path("d.h5"), "r") as f:
            self.assertSameArray(f["s"][()], self.pr_raw, "decode false")


class DimsThroughOps(CfCase):
    """Dimension names and coordinates carried as NumPy carries axes."""

    def dims(self, out, name):
        with netCDF4.Dataset(self.path(out)) as d:
            v = d.variables[name]
            coords = {n: d.variables[n][:].data for n in v.dimensions
                      if n in d.variables}
            return v.dimensions, coords, v[:]

    def test_transpose_permutes(self):
        self.ck("t.nc:/t", "transpose", self.nc + ":/tas")
        dims, co, vals = self.dims("t.nc", "t")
        self.assertEqual(dims, ("lon", "lat", "time"))
        self.assertSameArray(co["lon"], self.lon)
        self.assertSameArray(co["time"], self.time)
        self.assertSameArray(filled(vals), self.tas.T)

    def test_moveaxis_by_name(self):
        self.pipeline([{"name": "m", "op": "moveaxis", "args": ["x"],
                        "source": "time", "destination": 2}],
                      {"m": "mv.nc:/m"})
        dims, _, vals = self.dims("mv.nc", "m")
        self.assertEqual(dims, ("lat", "lon", "time"))
        self.assertSameArray(filled(vals), np.moveaxis(self.tas, 0, 2))

    def test_slice_with_step_slices_coordinates(self):
        self.ck("s.nc:/s", "slice", self.nc + ":/tas", "--index",
                "[[null,null,2],[1,null],[null,null,-2]]")
        dims, co, vals = self.dims("s.nc", "s")
        self.assertEqual(dims, ("time", "lat", "lon"))
        self.assertSameArray(co["time"], self.time[::2], "time")
        self.assertSameArray(co["lat"], self.lat[1:], "lat")
        self.assertSameArray(co["lon"], self.lon[::-2], "lon")
        self.assertSameArray(filled(vals), self.tas[::2, 1:, ::-2])
        with netCDF4.Dataset(self.path("s.nc")) as d:
            self.assertEqual(d.variables["lat"].units, "degrees_north")
            self.assertEqual(d.variables["time"].units,
                             "days since 2000-01-01 00:00:00")

    def test_integer_index_drops_the_axis(self):
        self.ck("i.nc:/i", "slice", self.nc + ":/tas", "--index", "[2]")
        dims, co, _ = self.dims("i.nc", "i")
        self.assertEqual(dims, ("lat", "lon"))
        with netCDF4.Dataset(self.path("i.nc")) as d:
            self.assertNotIn("time", d.variables)

    def test_axis_by_name(self):
        # --axis takes a name, a comma-separated list of names (as of
        # numbers: "1,2 is a list", chunkctl OP --help) or a JSON list
        for axis, want_dims, ax in (("lat", ("time", "lon"), 1),
                                    ('["lat","lon"]', ("time",), (1, 2)),
                                    ("lat,lon", ("time",), (1, 2)),
                                    ("time,lon", ("lat",), (0, 2))):
            with self.subTest(axis=axis):
                self.ck("a.nc:/a", "mean", self.nc + ":/tas", "--axis",
                        axis)
                dims, co, vals = self.dims("a.nc", "a")
                self.assertEqual(dims, want_dims)
                ref = np.nanmean(self.tas.astype(np.float64), axis=ax)
                self.assertLessEqual(float(np.max(ulps(filled(vals), ref))),
                                     1.0)
                for d in want_dims:
                    self.assertIn(d, co)

    def test_reduce_command_axis_by_name(self):
        self.ck("rd.nc:/r", "reduce", "mean", self.nc + ":/tas", "--axis",
                "lat,lon")
        dims, co, vals = self.dims("rd.nc", "r")
        self.assertEqual(dims, ("time",))
        self.assertSameArray(co["time"], self.time)
        ref = np.nanmean(self.tas.astype(np.float64), axis=(1, 2))
        self.assertLessEqual(float(np.max(ulps(filled(vals), ref))), 1.0)

    def test_axis_name_in_pipeline(self):
        self.pipeline([{"name": "m", "op": "max", "args": ["x"],
                        "axis": "lat"},
                       {"name": "s", "op": "sum", "args": ["x"],
                        "axis": ["lat", "lon"], "keepdims": True}],
                      {"m": "pa.nc:/m", "s": "pk.nc:/s"})
        dims, co, vals = self.dims("pa.nc", "m")
        self.assertEqual(dims, ("time", "lon"))
        self.assertSameArray(filled(vals), np.nanmax(self.tas, axis=1))
        dims, _, vals = self.dims("pk.nc", "s")
        self.assertEqual(dims, ("time", "lat", "lon"))
        self.assertEqual(vals.shape, (NT, 1, 1))

    def test_unknown_dimension_fails_in_one_line(self):
        self.fresh("u.nc")
        p = C.run("mean", self.nc + ":/tas", "--axis", "depth", "-o",
                  self.path("u.nc:/u"), expect=None)
        self.assertCleanError(p, 2, "depth", "axis")
        self.assertFalse(os.path.exists(self.path("u.nc")))
        doc = {"inputs": {"x": self.nc + ":/tas"},
               "steps": [{"name": "m", "op": "mean", "args": ["x"],
                          "axis": ["lat", "level"]}],
               "outputs": {"m": self.path("u.nc:/u")}}
        path = self.path("bad.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", path, expect=None)
        self.assertCleanError(p, 2, "level", "axis")

    def test_reduction_drops_and_keepdims_keeps(self):
        self.ck("k.nc:/k", "mean", self.nc + ":/tas", "--axis", "lon",
                "--keepdims", "true")
        dims, co, _ = self.dims("k.nc", "k")
        self.assertEqual(dims[:2], ("time", "lat"))
        self.assertEqual(len(dims), 3)
        self.assertSameArray(co["lat"], self.lat)

    def test_expand_dims_and_squeeze(self):
        self.pipeline([{"name": "e", "op": "expand_dims", "args": ["x"],
                        "axis": 1},
                       {"name": "s", "op": "slice", "args": ["x"],
                        "index": [[None, None], [2, 3]]},
                       {"name": "q", "op": "squeeze", "args": ["s"]}],
                      {"e": "eq.nc:/e", "q": "eq.nc:/q"})
        dims, co, _ = self.dims("eq.nc", "e")
        self.assertEqual(len(dims), 4)
        self.assertEqual((dims[0], dims[2], dims[3]), ("time", "lat",
                                                       "lon"))
        self.assertNotIn(dims[1], ("time", "lat", "lon"))
        dims, co, vals = self.dims("eq.nc", "q")
        self.assertEqual(dims, ("time", "lon"))
        self.assertSameArray(co["lon"], self.lon)
        self.assertSameArray(filled(vals), self.tas[:, 2, :])

    def test_matmul_rows_and_columns(self):
        # (lat, lon) @ (lon, time) -> (lat, time)
        self.pipeline([{"name": "a", "op": "slice", "args": ["x"],
                        "index": [0]},
                       {"name": "b0", "op": "slice", "args": ["x"],
                        "index": [[None, None], 0]},
                       {"name": "b", "op": "transpose", "args": ["b0"]},
                       {"name": "m", "op": "matmul", "args": ["a", "b"]}],
                      {"m": "mm.nc:/m"}, extra={"decode": False})
        dims, co, vals = self.dims("mm.nc", "m")
        self.assertEqual(dims, ("lat", "time"))
        self.assertSameArray(co["lat"], self.lat)
        self.assertSameArray(co["time"], self.time)
        with netCDF4.Dataset(self.nc) as d:
            d.set_auto_maskandscale(False)
            s = d.variables["tas"][:].astype(np.float64)
        ref = s[0] @ s[:, 0, :].T
        np.testing.assert_allclose(np.asarray(vals), ref, rtol=1e-5)

    def test_dims_key_names_new_axes(self):
        self.pipeline([{"name": "r", "op": "reshape", "args": ["x"],
                        "shape": [NT, NY * NX], "dims": ["time", "cell"]},
                       {"name": "t", "op": "transpose", "args": ["x"],
                        "dims": ["a", "b", "c"]}],
                      {"r": "d.nc:/r", "t": "d.nc:/t"})
        dims, _, vals = self.dims("d.nc", "r")
        self.assertEqual(dims, ("time", "cell"))
        self.assertSameArray(filled(vals), self.tas.reshape(NT, NY * NX))
        dims, co, _ = self.dims("d.nc", "t")
        self.assertEqual(dims, ("a", "b", "c"))
        self.assertEqual(co, {}, "renamed axes have no coordinates")

    def test_bad_dims_key(self):
        doc = {"inputs": {"x": self.nc + ":/tas"},
               "steps": [{"name": "t", "op": "transpose", "args": ["x"],
                          "dims": ["a", "b"]}],
               "outputs": {"t": self.path("bd.nc:/t")}}
        path = self.path("bd.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", path, expect=None)
        self.assertCleanError(p, 2, "dims")


class MissingValues(CfCase):
    """Reductions of decoded data skip missing values (NumPy's nan*
    reductions; CDO's and NCO's way); a reduction over only missing
    values gives NaN (man page)."""

    def reduce(self, op, *extra):
        out = self.fresh("%s.h5" % op)
        C.run(op, self.nc + ":/tas", "--axis", "time", *extra, "--quiet",
              "-o", out + ":/r")
        with h5py.File(out, "r") as f:
            return f["r"][()]

    def test_nan_reductions(self):
        x = self.tas.astype(np.float64)
        refs = {"sum": np.nansum(x, 0), "mean": np.nanmean(x, 0),
                "min": np.nanmin(x, 0), "max": np.nanmax(x, 0),
                "var": np.nanvar(x, 0), "std": np.nanstd(x, 0)}
        with np.errstate(all="ignore"):
            refs["var1"] = np.nanvar(x, 0, ddof=1)
        for op, ref in refs.items():
            with self.subTest(op=op):
                if op == "var1":
                    got = self.reduce("var", "--ddof", "1")
                else:
                    got = self.reduce(op)
                ok = ~np.isnan(self.tas).all(axis=0)
                if op == "var1":
                    ok &= (~np.isnan(self.tas)).sum(axis=0) > 1
                u = ulps(got[ok], ref[ok])
                # var/std: two passes of rounding; sums of squares
                self.assertLessEqual(float(np.max(u)),
                                     4.0 if op in ("var", "std", "var1")
                                     else 1.0, op)
                # Over only missing values NumPy's nan-reductions give
                # NaN, except nansum, which gives 0 (the man page says so;
                # CDO's timsum writes a missing value there instead).
                if op == "sum":
                    self.assertEqual(got[DEAD], 0.0, "sum over only missing")
                else:
                    self.assertTrue(np.isnan(got[DEAD]),
                                    "%s over only missing values: %r, not "
                                    "NaN" % (op, got[DEAD]))

    def test_arg_prod_and_count_skip_missing(self):
        # argmin/argmax gave the index of a missing value (NaN wins in
        # NumPy's argmin), prod gave NaN and count_nonzero counted missing
        # values (NaN is nonzero): decoded, they are NumPy's nanargmin,
        # nanargmax, nanprod and a count of the values that are there.
        x = self.tas.astype(np.float64)
        have = ~np.isnan(x)
        refs = {"argmin": np.nanargmin(x, 1), "argmax": np.nanargmax(x, 1),
                "prod": np.nanprod(x, 1),
                "count_nonzero": np.count_nonzero(have & (x != 0), 1)}
        for op, ref in refs.items():
            with self.subTest(op=op):
                out = self.fresh("%s_lat.h5" % op)
                C.run(op, self.nc + ":/tas", "--axis", "lat", "--quiet",
                      "-o", out + ":/r")
                with h5py.File(out, "r") as f:
                    got = f["r"][()]
                if op == "prod":
                    self.assertEqual(got.dtype, np.float32)
                    np.testing.assert_allclose(got, ref, rtol=1e-6)
                else:
                    self.assertSameArray(got, ref.astype(np.int64), op)
        # NumPy's nanargmin raises on a slice of only NaN (DEAD, over time)
        p = C.run("argmin", self.nc + ":/tas", "--axis", "time", expect=None)
        self.assertCleanError(p, 2, "nanargmin", "only NaN")

    def test_coarsen_skips_missing(self):
        # coarsen's windows skip missing values as reductions do: an
        # all-missing window (DEAD) gives NaN, 0 for sum, 1 for prod
        x = self.tas.astype(np.float64).reshape(NT // 2, 2, NY, NX)
        refs = {"mean": np.nanmean, "sum": np.nansum, "prod": np.nanprod,
                "min": np.nanmin, "max": np.nanmax}
        for op, fn in refs.items():
            with self.subTest(op=op):
                out = "co_%s.nc" % op
                self.ck(out + ":/c", "coarsen", self.nc + ":/tas",
                        "--reduction", op, "--window", "2,1,1")
                with h5py.File(self.path(out), "r") as f:
                    got = f["c"][()]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    ref = fn(x, axis=1)
                self.assertSameArray(np.isnan(got), np.isnan(ref), "missing")
                np.testing.assert_allclose(got, ref, rtol=1e-6)

    def test_sum_matches_cdo_where_cdo_has_values(self):
        if CDO is None:
            self.skipTest("cdo is not installed (.ci/install-deps)")
        out = self.fresh("cdosum.nc")
        tool(CDO, "-s", "timsum", "-selvar,tas", self.nc, out)
        cdo = filled(nc_read(out, "tas")[0])[0]
        got = self.reduce("sum")
        have = ~np.isnan(cdo)
        self.assertTrue(np.array_equal(got[~have], np.zeros((~have).sum())))
        self.assertLessEqual(float(np.max(ulps(got[have], cdo[have]))), 1.0)


class MissingValueForms(CfCase):
    """The other ways CF says what is missing, each decoded as
    netCDF4-python decodes it: missing_value as a list, _Unsigned "true"
    on an int8 (with a _FillValue given in the stored type, and alone),
    and a _FillValue that copies to Zarr v2 and v3 keep (a v3 copy lost
    it: -999 counted as data), in the type copy --dtype gives (a NaN one
    that int16 cannot hold is refused)."""

    @classmethod
    def make_fixtures(cls):
        super().make_fixtures()
        cls.mv = cls.path("mv.nc")
        with netCDF4.Dataset(cls.mv, "w", format="NETCDF4") as d:
            d.createDimension("n", 6)
            v = d.createVariable("list", "i2", ("n",))
            v.set_auto_maskandscale(False)
            v.missing_value = np.array([-1, -2], "i2")
            v[:] = [-1, -2, 3, 4, 5, 6]
            u = d.createVariable("ubyte", "i1", ("n",), fill_value=-1)
            u.set_auto_maskandscale(False)
            u._Unsigned = "true"
            u.scale_factor = 0.5
            u[:] = [-1, -128, 0, 1, 2, -2]
            b = d.createVariable("bare", "i1", ("n",))
            b.set_auto_maskandscale(False)
            b._Unsigned = "true"
            b[:] = [-1, -128, 0, 1, 2, 3]

    def decoded(self, name):
        with netCDF4.Dataset(self.mv) as d:
            return d.variables[name][:]

    def test_missing_value_list_and_unsigned(self):
        for name in ("list", "ubyte"):
            with self.subTest(name=name):
                want = self.decoded(name)
                out = self.fresh(name + ".h5")
                self.ck(out + ":/s", "slice", self.mv + ":/" + name,
                        "--index", "[[null,null]]")
                with h5py.File(out, "r") as f:
                    got = f["s"][()]
                self.assertSameArray(np.isnan(got), np.ma.getmaskarray(want),
                                     "missing")
                ok = ~np.ma.getmaskarray(want)
                self.assertSameArray(got[ok], want.data[ok].astype(got.dtype),
                                     "values")
                p = C.run("mean", self.mv + ":/" + name)
                self.assertAlmostEqual(float(p.stdout), float(want.mean()),
                                       places=12)

    def test_unsigned_alone_keeps_an_unsigned_type(self):
        want = self.decoded("bare")
        self.assertEqual(want.dtype, np.uint8)
        out = self.fresh("bare.h5")
        self.ck(out + ":/s", "slice", self.mv + ":/bare", "--index",
                "[[null,null]]")
        with h5py.File(out, "r") as f:
            self.assertEqual(f["s"].dtype, np.uint8)
            self.assertSameArray(f["s"][()], np.asarray(want), "values")
            self.assertNotIn("_Unsigned", f["s"].attrs)

    def test_copies_keep_fill_value(self):
        want = float(np.nanmean(self.tas.astype(np.float64)))
        for fmt in ("2", "3"):
            with self.subTest(zarr_format=fmt):
                z = self.fresh("c%s.zarr" % fmt)
                C.run("copy", "--quiet", self.nc, z, "--zarr-format", fmt)
                p = C.run("mean", z + ":/tas")
                self.assertAlmostEqual(float(p.stdout), want, delta=1e-3)
                back = self.fresh("c%s.h5" % fmt)
                C.run("copy", "--quiet", z, back)
                p = C.run("mean", back + ":/tas")
                self.assertAlmostEqual(float(p.stdout), want, delta=1e-3)
        # v3's fill_value fills unwritten chunks only: the attribute says
        # what is missing there, as xarray writes v3 (one value, as
        # netCDF4 reads an attribute of one element; a float's as the
        # base64 text of a little-endian float64, xarray's FillValueCoder)
        with open(self.path("c3.zarr", "tas", "zarr.json")) as f:
            fv = json.load(f)["attributes"]["_FillValue"]
        import base64
        import struct
        self.assertEqual(struct.unpack("<d", base64.b64decode(fv))[0],
                         -999.0)

    def test_copy_dtype_fill_value_in_the_new_type(self):
        # netCDF wants _FillValue in the variable's type: -999 becomes
        # int16 -999 with the data; NaN (a mean's) has no int16 value,
        # and was written as a float64 NaN beside int16 data, which
        # netCDF4 ignores with a warning: refused, nothing written
        out = self.fresh("dt_ok.nc")
        C.run("copy", "--quiet", self.nc + ":/tas", out, "--dtype", "int16")
        got, a, _ = nc_read(out, "tas")
        self.assertEqual(np.asarray(a["_FillValue"]).dtype, np.int16)
        self.assertEqual(a["_FillValue"], -999)
        self.assertSameArray(np.ma.getmaskarray(got), np.isnan(self.tas),
                             "missing")
        m = self.fresh("dt_mean.nc")
        self.ck("dt_mean.nc:/tas", "mean", self.nc + ":/tas", "--axis",
                "time")
        for fmt in ("dt_nan.nc", "dt_nan.zarr"):
            with self.subTest(out=fmt):
                bad = self.fresh(fmt)
                p = C.run("copy", m + ":/tas", bad, "--dtype", "int16",
                          expect=None)
                self.assertCleanError(p, 2, "_FillValue", "int16",
                                      "dt_mean.nc:/tas")
                self.assertFalse(os.path.exists(bad), "output left behind")

    def test_plain_hdf5_fill_value_to_zarr_v2(self):
        # no dimension names: a v2 fill_value means nothing missing, so
        # the attribute stays
        src = self.fresh("plain.h5")
        with h5py.File(src, "w") as f:
            f["x"] = np.array([1, 2, -999, 3.0])
            f["x"].attrs["_FillValue"] = -999.0
        z = self.fresh("plain.zarr")
        C.run("copy", "--quiet", src, z)
        self.assertEqual(float(C.run("mean", z).stdout), 2.0)
        self.assertEqual(zarr.open(z, "r").attrs["_FillValue"], -999.0)


class ZarrOutputs(CfCase):
    """The same outputs to Zarr.  xarray's documentation ("Zarr Encoding
    Specification", docs.xarray.dev internals/zarr-encoding-spec) says a
    Zarr v2 array names its dimensions in the attribute _ARRAY_DIMENSIONS
    (a list of names), which xarray needs on every array of the group it
    opens, and that Zarr v3 uses the array's dimension_names field
    instead; a coordinate is a 1-D array named as its dimension (the
    netCDF data model).  For v2, xarray reads the array's fill_value as
    _FillValue (the mask; xarray's use_zarr_fill_value_as_mask, on by
    default for v2, see pydata/xarray#10269), so missing float data needs
    fill_value NaN, and no _FillValue attribute (xarray refuses a clash)."""

    def meta(self, *parts):
        with open(self.path(*parts)) as f:
            return json.load(f)

    def test_store_without_a_dataset_name(self):
        # a store that receives one output is the array itself, but not
        # when coordinate variables go beside it: "the store is the array
        # '/'; it cannot hold '/lat' too"
        self.ck("bare.zarr", "mean", self.nc + ":/tas", "--axis", "time")
        g = zarr.open_group(self.path("bare.zarr"), mode="r")
        self.assertEqual(sorted(g.array_keys()), ["lat", "lon", "mean"])
        ref = np.nanmean(self.tas.astype(np.float64), axis=0)
        self.assertLessEqual(float(np.max(ulps(g["mean"][:], ref))), 1.0)
        self.assertSameArray(g["lat"][:], self.lat, "lat")

    def test_v2_mean(self):
        self.ck("o.zarr:/tas", "mean", self.nc + ":/tas", "--axis", "time")
        za = self.meta("o.zarr", "tas", ".zattrs")
        self.assertEqual(za["_ARRAY_DIMENSIONS"], ["lat", "lon"])
        self.assertEqual(za["units"], "K")
        self.assertNotIn("valid_range", za)
        self.assertNotIn("_FillValue", za)
        self.assertTrue(PROVENANCE <= set(za))
        self.assertEqual(self.meta("o.zarr", "tas", ".zarray")["fill_value"],
                         "NaN")
        g = zarr.open_group(self.path("o.zarr"), mode="r")
        self.assertTrue(np.isnan(g["tas"].fill_value))
        ref = np.nanmean(self.tas.astype(np.float64), axis=0)
        self.assertLessEqual(float(np.max(ulps(g["tas"][:], ref))), 1.0)
        for n, want in (("lat", self.lat), ("lon", self.lon)):
            self.assertEqual(g[n].attrs["_ARRAY_DIMENSIONS"], [n])
            self.assertSameArray(g[n][:], want, n)
        self.assertEqual(g["lat"].attrs["units"], "degrees_north")
        self.assertNotIn("time", g)
        h = g.attrs["history"]
        self.assertRegex(h.split("\n")[0], "^" + DATED + "chunkctl mean ")
        self.assertEqual(h.split("\n", 1)[1], HISTORY)

    def test_v2_every_array_names_its_dims(self):
        # xarray opens a group only when every array has _ARRAY_DIMENSIONS
        self.pipeline([{"name": "s", "op": "slice", "args": ["x"],
                        "index": [[None, None], [None, None],
                                  [None, None, 2]]},
                       {"name": "m", "op": "mean", "args": ["x"],
                        "axis": "lon"}],
                      {"s": "all.zarr:/s", "m": "all.zarr:/m"})
        g = zarr.open_group(self.path("all.zarr"), mode="r")
        self.one_length_per_dimension(g)
        self.assertEqual(g["s"].attrs["_ARRAY_DIMENSIONS"],
                         ["time", "lat", "lon"])
        self.assertEqual(g["m"].attrs["_ARRAY_DIMENSIONS"], ["time", "lat"])
        self.assertSameArray(g["time"][:], self.time)
        self.assertSameArray(g["lat"][:], self.lat)
        self.assertSameArray(g["lon"][:], self.lon[::2])
        self.assertSameArray(g["s"][:], self.tas[:, :, ::2])

    def one_length_per_dimension(self, g):
        seen = {}
        for name, a in C.zarr_arrays(g).items():
            dims = a.attrs.get("_ARRAY_DIMENSIONS")
            self.assertIsNotNone(dims, name)
            self.assertEqual(len(dims), a.ndim, name)
            for d, n in zip(dims, a.shape):
                self.assertEqual(seen.setdefault(d, n), n,
                                 "%s: dimension %s: one length per store "
                                 "(xarray: conflicting sizes)" % (name, d))

    def test_v2_one_length_per_dimension(self):
        # s keeps every other time, m all of them: one store cannot name
        # both axes "time" (netCDF-4 output refuses this with exit 2; so
        # must Zarr, or name them apart)
        doc = {"inputs": {"x": self.nc + ":/tas"},
               "steps": [{"name": "s", "op": "slice", "args": ["x"],
                          "index": [[None, None, 2]]},
                         {"name": "m", "op": "mean", "args": ["x"],
                          "axis": "lon"}],
               "outputs": {"s": self.fresh("two.zarr") + ":/s",
                           "m": self.path("two.zarr") + ":/m"}}
        path = self.path("two.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = C.run("run", "--quiet", path, expect=None)
        if p.returncode != 0:
            self.assertCleanError(p, 2, "time")
            return
        self.one_length_per_dimension(
            zarr.open_group(self.path("two.zarr"), mode="r"))

    def test_v2_input_names_its_axes(self):
        # a store as xarray writes it (zarr-python here): dimension names
        # in _ARRAY_DIMENSIONS, a coordinate array per dimension
        src = self.fresh("in.zarr")
        full = np.nan_to_num(self.tas, nan=250)
        g = zarr.open_group(src, mode="w")
        t = g.create_dataset("tas", data=full, chunks=(4, 2, 7))
        t.attrs.update({"_ARRAY_DIMENSIONS": ["time", "lat", "lon"],
                        "units": "K"})
        for n, v in (("time", self.time), ("lat", self.lat),
                     ("lon", self.lon)):
            g.create_dataset(n, data=v).attrs["_ARRAY_DIMENSIONS"] = [n]
        self.ck("fz.nc:/tas", "mean", src + ":/tas", "--axis", "lat")
        got, a, dims = nc_read(self.path("fz.nc"), "tas")
        self.assertEqual(dims, ("time", "lon"))
        self.assertEqual(a["units"], "K")
        ref = full.astype(np.float64).mean(axis=1)
        self.assertLessEqual(float(np.max(ulps(filled(got), ref))), 1.0)
        with netCDF4.Dataset(self.path("fz.nc")) as d:
            self.assertSameArray(d.variables["time"][:].data, self.time)
            self.assertSameArray(d.variables["lon"][:].data, self.lon)

    def test_v2_nan_fill_value_marks_missing(self):
        # chunkctl writes missing float data to Zarr v2 as fill_value NaN
        # (no _FillValue attribute), which xarray reads as _FillValue;
        # read back, the NaN must still mean missing: a mean skips them
        self.ck("rt.zarr:/tas", "slice", self.nc + ":/tas", "--index",
                "[[null,null]]")
        self.ck("rt.h5:/m", "mean", self.path("rt.zarr") + ":/tas",
                "--axis", "lat")
        with h5py.File(self.path("rt.h5"), "r") as f:
            got = f["m"][()]
        ref = np.nanmean(self.tas.astype(np.float64), axis=1)
        self.assertSameArray(np.isnan(got), np.isnan(ref), "NaN places")
        self.assertLessEqual(float(np.max(ulps(got, ref))), 1.0)

    def test_v2_copy_keeps_missing_and_packing(self):
        # copy moves _FillValue into fill_value, where xarray reads it (the
        # array names its dimensions), and writes scale_factor as a list of
        # one number: a mean of the copy is the mean of the netCDF file
        src = self.fresh("cp.zarr")
        C.copy(self.nc, src)
        za = self.meta("cp.zarr", "tas", ".zarray")
        self.assertEqual(za["fill_value"], -999.0)
        for v in ("tas", "pr"):
            with self.subTest(var=v):
                self.ck("nc_%s.h5:/m" % v, "mean", self.nc + ":/" + v,
                        "--axis", "time")
                self.ck("z_%s.h5:/m" % v, "mean", src + ":/" + v,
                        "--axis", "time")
                with h5py.File(self.path("nc_%s.h5" % v), "r") as f:
                    want = f["m"][()]
                with h5py.File(self.path("z_%s.h5" % v), "r") as f:
                    got = f["m"][()]
                self.assertSameArray(got, want, v)
        want, _, _ = nc_read(self.nc, "pr")
        ref = np.nanmean(filled(want).astype(np.float64), axis=0)
        self.assertLessEqual(float(np.max(ulps(got, ref))), 1.0)
        # and back to netCDF: the dimensions are dimension scales, not a
        # leftover _ARRAY_DIMENSIONS attribute
        back = self.fresh("back.nc")
        C.copy(src, back)
        _, a, dims = nc_read(back, "tas")
        self.assertEqual(dims, ("time", "lat", "lon"))
        self.assertNotIn("_ARRAY_DIMENSIONS", a)

    def test_plain_zarr_fill_value_is_not_missing(self):
        # zarr-python's default fill_value 0 on an array that names no
        # dimensions (xarray cannot open it) only fills unwritten chunks:
        # zeros are values, and a mean is NumPy's
        src = self.fresh("plain.zarr")
        a = np.arange(24, dtype="f4").reshape(4, 6) % 3
        z = zarr.open(src, mode="w", shape=a.shape, chunks=(2, 3),
                      dtype="f4", fill_value=0)
        z[:] = a
        self.ck("pl.h5:/m", "mean", src, "--axis", "0")
        with h5py.File(self.path("pl.h5"), "r") as f:
            got = f["m"][()]
        ref = a.astype(np.float64).mean(axis=0)
        self.assertLessEqual(float(np.max(ulps(got, ref))), 1.0)

    def test_v3_dimension_names(self):
        self.ck("o3.zarr:/tas", "mean", self.nc + ":/tas", "--axis", "time",
                "--zarr-format", "3")
        m = self.meta("o3.zarr", "tas", "zarr.json")
        self.assertEqual(m["dimension_names"], ["lat", "lon"])
        self.assertEqual(m["fill_value"], "NaN")
        self.assertEqual(m["attributes"]["units"], "K")
        self.assertNotIn("_ARRAY_DIMENSIONS", m["attributes"])
        for n, want in (("lat", self.lat), ("lon", self.lon)):
            c = self.meta("o3.zarr", n, "zarr.json")
            self.assertEqual(c["dimension_names"], [n])
            self.assertEqual(c["shape"], [len(want)])
            if [x["name"] for x in c["codecs"]] == ["bytes"]:
                raw = np.fromfile(self.path("o3.zarr", n, "c", "0"), "<f4")
                self.assertSameArray(raw, want, n)
        root = self.meta("o3.zarr", "zarr.json")
        self.assertRegex(root["attributes"]["history"], "^" + DATED)


class NetcdfRules(CfCase):
    """netCDF's own rules, each as netCDF4-python reads the same file:
    the variables of an unlimited dimension may end at different lengths
    (the dimension is the longest: netCDF-C nc4_find_dim_len); a variable
    with no _FillValue has netCDF's default fill where nothing was
    written, which netCDF4 masks (for a byte variable only when it was
    written with fill: Variable._toma); and x(x, y), a variable named
    like its first dimension, is a dimension scale of two axes whose
    dimensions are in _Netcdf4Coordinates."""

    @classmethod
    def make_fixtures(cls):
        cls.un = cls.path("unlim.nc")
        with netCDF4.Dataset(cls.un, "w", format="NETCDF4") as d:
            d.createDimension("time", None)
            d.createDimension("x", 3)
            d.createVariable("a", "f4", ("time", "x"))[:] = \
                np.arange(15, dtype="f4").reshape(5, 3)
            d.createVariable("b", "f4", ("time",))[:] = [0, 1]
            d.createVariable("time", "f8", ("time",))[:] = np.arange(4.0)
        cls.df = cls.path("deffill.nc")
        with netCDF4.Dataset(cls.df, "w", format="NETCDF4") as d:
            d.createDimension("n", 6)
            d.createVariable("n", "f8", ("n",))[:] = np.arange(6.0)
            d.createVariable("v", "f4", ("n",))[:4] = [1, 2, 3, 4]
            d.createVariable("w", "f8", ("n",))[1:] = [0, 1, 2, 3, 4]
            for name, t, fill in (("f_nofill", "f4", False),
                                  ("i_nofill", "i4", False),
                                  ("b_nofill", "i1", False)):
                v = d.createVariable(name, t, ("n",), fill_value=fill)
                v.set_auto_maskandscale(False)
                dfl = netCDF4.default_fillvals[np.dtype(t).str[1:]]
                v[:] = np.array([0, 1, dfl, 2, 0, 3]).astype(t)
        cls.xx = cls.path("xxy.nc")
        with netCDF4.Dataset(cls.xx, "w", format="NETCDF4") as d:
            d.createDimension("x", 3)
            d.createDimension("y", 4)
            d.createVariable("x", "f4", ("x", "y"))[:] = \
                np.arange(12, dtype="f4").reshape(3, 4)
            d.createVariable("z", "f4", ("x",))[:] = [1, 2, 3]

    def netcdf4(self, path):
        """{name: (masked values, dims, attribute names)} as netCDF4
        reads path."""
        with netCDF4.Dataset(path) as d:
            return {n: (v[:], v.dimensions, set(v.ncattrs()))
                    for n, v in d.variables.items()}

    def assertSameMasked(self, got, want, what):
        self.assertSameArray(np.ma.getmaskarray(got),
                             np.ma.getmaskarray(want), what + " mask")
        ok = ~np.ma.getmaskarray(want)
        self.assertSameArray(np.asarray(got)[ok], np.asarray(want)[ok],
                             what + " values")

    def test_unlimited_dimension_length_in_info(self):
        # info said /time was 4 long, as its coordinate variable is;
        # netCDF says 5, the longest variable's length
        with netCDF4.Dataset(self.un) as d:
            want = len(d.dimensions["time"])
        j = C.info(self.un)
        self.assertEqual(j["dimensions"]["/time"],
                         {"length": want, "unlimited": True})
        self.assertEqual(j["dimensions"]["/x"],
                         {"length": 3, "unlimited": False})
        shapes = {a["name"]: a["shape"] for a in j["arrays"]}
        self.assertEqual(shapes, {"/a": [5, 3], "/b": [2], "/time": [4]})
        p = C.run("info", self.un)
        self.assertIn("dimension /time: %d, unlimited" % want, p.stdout)

    def test_unlimited_dimension_copies_to_netcdf(self):
        # refused before ("dimension 'time' is 2 long, but 5 in /a")
        out = self.fresh("unlim_copy.nc")
        C.copy(self.un, out)
        want, got = self.netcdf4(self.un), self.netcdf4(out)
        self.assertEqual(sorted(got), sorted(want))
        for n in want:
            with self.subTest(var=n):
                self.assertEqual(got[n][1], want[n][1])
                self.assertSameMasked(got[n][0], want[n][0], n)
        with netCDF4.Dataset(out) as d:
            self.assertTrue(d.dimensions["time"].isunlimited())
            self.assertEqual(len(d.dimensions["time"]), 5)

    def test_unlimited_dimension_to_zarr_is_refused(self):
        # xarray opens no group whose arrays give a dimension two lengths
        # (it was written so anyway): one line naming the variables, exit
        # 1 (a data error), nothing written
        out = self.fresh("unlim.zarr")
        p = C.copy(self.un, out, expect=None)
        self.assertCleanError(p, 1, "unlim.nc:/", "'time'", "netcdf")
        self.assertFalse(os.path.exists(out), "output left behind")
        # one variable at a time is fine
        C.copy(self.un + ":/b", out)
        self.assertEqual(zarr.open(out, "r").shape, (2,))

    def test_default_fill_is_missing_as_netcdf4_says(self):
        # v and w were partly written (netCDF's default fill in the rest,
        # no _FillValue): chunkctl summed 9.97e36 into them; the
        # *_nofill variables were written without fill, whose HDF5 fill
        # value 0 went to Zarr as fill_value, so zeros became missing,
        # and an f8 default fill lost digits in .zarray and marked nothing
        want = self.netcdf4(self.df)
        z = self.fresh("deffill.zarr")
        C.copy(self.df, z)
        for n in ("v", "w", "f_nofill", "i_nofill", "b_nofill", "n"):
            ref = float(want[n][0].sum())
            with self.subTest(var=n, where="zarr copy"):
                got = float(C.run("sum", z + ":/" + n).stdout)
                self.assertAlmostEqual(got, ref, places=6)
            if want[n][0].dtype.kind == "f":
                with self.subTest(var=n, where="original"):
                    got = float(C.run("sum", self.df + ":/" + n).stdout)
                    self.assertAlmostEqual(got, ref, places=6)
        self.assertIsNone(zarr.open(z, "r")["b_nofill"].fill_value)

    def test_round_trip_adds_no_fill_value(self):
        # nc -> zarr -> nc gave every variable (coordinate n too) a
        # _FillValue it did not have; netCDF's default needs none
        z = self.fresh("rt_fill.zarr")
        back = self.fresh("rt_fill.nc")
        C.copy(self.df, z)
        C.copy(z, back)
        want, got = self.netcdf4(self.df), self.netcdf4(back)
        for n in want:
            with self.subTest(var=n):
                self.assertNotIn("_FillValue", got[n][2])
                self.assertEqual(got[n][1], want[n][1])
                self.assertSameMasked(got[n][0], want[n][0], n)

    def test_variable_named_like_its_first_dimension(self):
        # x(x, y) lost its dimensions: a Zarr copy named none, and a
        # netCDF copy called them dim_0 and dim_1
        j = {a["name"]: a for a in C.info(self.xx)["arrays"]}
        self.assertEqual(j["/x"]["dims"], ["x", "y"])
        want = self.netcdf4(self.xx)
        out = self.fresh("xxy_copy.nc")
        C.copy(self.xx, out)
        got = self.netcdf4(out)
        for n in ("x", "z"):
            with self.subTest(var=n):
                self.assertEqual(got[n][1], want[n][1])
                self.assertSameMasked(got[n][0], want[n][0], n)
        z = self.fresh("xxy.zarr")
        C.copy(self.xx, z)
        g = zarr.open_group(z, mode="r")
        self.assertEqual(g["x"].attrs["_ARRAY_DIMENSIONS"], ["x", "y"])
        self.assertEqual(g["z"].attrs["_ARRAY_DIMENSIONS"], ["x"])
        back = self.fresh("xxy_back.nc")
        C.copy(z, back)
        self.assertEqual(self.netcdf4(back)["x"][1], ("x", "y"))


if __name__ == "__main__":
    C.main()
