"""chunkctl gen: element i depends only on --seed, the distribution and i,
never on chunking or threads; the distributions have the promised range
and moments.  Read back with h5py and zarr-python."""

import os

import _common as C
from _common import np, h5py, zarr

SHAPE = (400, 250)   # 1e5 samples


def read(path):
    """The one array of an .h5 (at /x) or a .zarr (the root)."""
    if path.endswith(".h5"):
        with h5py.File(path, "r") as f:
            return f["/x"][()]
    return zarr.open(path, "r")[...]


class Gen(C.InteropCase):

    def gen_read(self, name, *opts, shape=SHAPE, compress="none"):
        """gen into NAME (.h5 at /x, or a .zarr), read it back.  No
        compression unless asked (compress=None: gen's default, zstd:3);
        test_write checks the codecs."""
        out = self.fresh(name)
        if compress is not None and "--compress" not in opts:
            opts += ("--compress", compress)
        C.gen(out + (":/x" if name.endswith(".h5") else ""),
              "--shape", ",".join(map(str, shape)), *opts)
        return read(out)

    def test_same_seed_any_chunks_threads_format(self):
        base = ("--seed", "42", "--dist", "normal", "--compress", "none")
        ref = self.gen_read("det_ref.h5", *base, "--chunks", "400,250",
                            "--threads", "1")
        self.assertEqual(ref.shape, SHAPE)
        self.assertEqual(ref.dtype, np.float64)
        for i, (chunks, threads, ext) in enumerate((
                ("17,23", "2", "h5"), ("64,64", "0", "zarr"),
                ("1,250", "2", "h5"), ("400,1", "1", "zarr"),
                ("128,128", "2", "zarr"), ("399,249", "2", "h5"))):
            with self.subTest(chunks=chunks, threads=threads, to=ext):
                got = self.gen_read("det_%d.%s" % (i, ext), *base,
                                    "--chunks", chunks, "--threads", threads)
                self.assertSameArray(got, ref)

    def test_default_chunks_and_compression_same_values(self):
        """gen's defaults (zstd:3, about 8 MiB chunks) read by h5py through
        chunkctl's zstd plugin."""
        ref = self.gen_read("dc_ref.zarr", "--seed", "3", "--chunks",
                            "33,77")
        got = self.gen_read("dc.h5", "--seed", "3", compress=None)
        self.assertSameArray(got, ref)

    def test_element_depends_on_linear_index(self):
        """'Element i depends only on --seed, the distribution and i':
        the same seed under another shape gives the same flat values."""
        ref = self.gen_read("flat_ref.h5", "--seed", "9", "--chunks",
                            "50,50")
        for shape in ((100000,), (200, 500), (10, 100, 100)):
            with self.subTest(shape=shape):
                got = self.gen_read("flat_%d.zarr" % len(shape), "--seed",
                                    "9", shape=shape)
                self.assertSameArray(got.reshape(-1), ref.reshape(-1))

    def test_seed_changes_values(self):
        a = self.gen_read("s1.h5", "--seed", "1")
        b = self.gen_read("s2.h5", "--seed", "2")
        d = self.gen_read("s0.h5")
        z = self.gen_read("s0x.h5", "--seed", "0")
        self.assertFalse(np.array_equal(a, b), "seeds 1 and 2 differ")
        self.assertSameArray(d, z, "default seed is 0")

    def test_uniform_range(self):
        for dt in ("float64", "float32"):
            with self.subTest(dtype=dt):
                a = self.gen_read("u_%s.zarr" % dt, "--dist", "uniform",
                                  "--low", "-3", "--high", "5", "--seed",
                                  "4", "--dtype", dt)
                self.assertEqual(a.dtype, np.dtype(dt))
                self.assertGreaterEqual(a.min(), -3.0)
                self.assertLess(a.max(), 5.0)
                self.assertLess(a.min(), -2.99, "reaches near low")
                self.assertGreater(a.max(), 4.99, "reaches near high")
                self.assertLess(abs(a.mean() - 1.0), 0.05, "mean")
                # Variance of U(-3, 5) is 64/12.
                self.assertLess(abs(a.var() - 64 / 12) / (64 / 12), 0.02)
        a = self.gen_read("u_default.h5", "--seed", "4")
        self.assertTrue(a.min() >= 0.0 and a.max() < 1.0, "default [0, 1)")

    def test_uniform_float32_stays_below_high(self):
        """Rounding a double sample to float32 must not reach --high: in
        [16777216, 16777218) float32 holds only 16777216.  Compared as
        float64, so that high is not itself rounded to float32."""
        for low, high in (("16777216", "16777218"), ("0", "1e-30"),
                          ("1000", "1000.001")):
            with self.subTest(low=low, high=high):
                a = self.gen_read("u32_%s.h5" % low, "--dist", "uniform",
                                  "--low", low, "--high", high, "--dtype",
                                  "float32", shape=(10000,))
                self.assertEqual(a.dtype, np.float32)
                a = a.astype(np.float64)
                self.assertEqual(int((a >= float(high)).sum()), 0,
                                 "samples >= high (max %r)" % a.max())
                self.assertGreaterEqual(a.min(), float(low))

    def test_normal_moments(self):
        a = self.gen_read("n01.h5", "--dist", "normal", "--seed", "5")
        self.assertLess(abs(a.mean()), 0.02, "mean %r" % a.mean())
        self.assertLess(abs(a.std() - 1.0), 0.02, "std %r" % a.std())
        b = self.gen_read("n103.zarr", "--dist", "normal", "--mean", "10",
                          "--std", "3", "--seed", "6")
        self.assertLess(abs(b.mean() - 10.0), 0.06, "mean %r" % b.mean())
        self.assertLess(abs(b.std() - 3.0), 0.06, "std %r" % b.std())
        # Tails: about 0.27% beyond 3 sigma.
        frac = float((np.abs(a) > 3).mean())
        self.assertTrue(0.0015 < frac < 0.004, "P(|x|>3) = %g" % frac)

    def test_integers(self):
        a = self.gen_read("i.zarr", "--dist", "integers", "--low", "-5",
                          "--high", "5", "--dtype", "int32", "--seed", "7")
        self.assertEqual(a.dtype, np.int32)
        values, counts = np.unique(a, return_counts=True)
        self.assertEqual(values.tolist(), list(range(-5, 5)))
        self.assertLess(np.abs(counts / a.size - 0.1).max(), 0.01,
                        "about uniform: %r" % counts.tolist())
        b = self.gen_read("i_default.h5", "--dist", "integers", "--seed", "7")
        self.assertEqual(b.dtype, np.float64)
        self.assertTrue(np.array_equal(b, np.floor(b)), "integer values")
        self.assertTrue(b.min() >= 0 and b.max() < 100, "default [0, 100)")
        self.assertEqual(len(np.unique(b)), 100)

    def test_usage_errors(self):
        out = self.path("never.h5")
        for args, cause in (
                (("--shape", "10,10", "--dist", "poisson"),
                 "--dist 'poisson': expected uniform, normal or integers"),
                (("--shape", "10,10", "--low", "2", "--high", "1"),
                 "--high must exceed --low"),
                (("--shape", "10,10", "--compress", "brotli"),
                 "--compress 'brotli': expected"),
                (("--dtype", "float16", "--shape", "10"),
                 "unknown dtype 'float16'"),
                (("--chunks", "5,5"), "--shape is required")):
            with self.subTest(args=args):
                p = C.gen(out + ":/x", *args, expect=None)
                self.assertCleanError(p, 2, cause)
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    C.main()
