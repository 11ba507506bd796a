"""--memory is a contract: the whole process's peak RSS stays under it,
on inputs many times larger than the budget.

Peak RSS is read by /usr/bin/time (the kernel's ru_maxrss of the child),
not reported by chunkctl itself.  Under AddressSanitizer RSS measures the
sanitizer's shadow memory, so these tests skip (visibly) in that build.
Values are checked against NumPy too, so a copy that kept memory low by
dropping data cannot pass.
"""
import os
import subprocess

import _common as C
from _common import np, zarr, h5py

BUDGET = 64 << 20
SHAPE = (8192, 8192)  # 512 MiB of float64: 8x the budget
SANITIZED = bool(os.environ.get("CK_SANITIZE"))


def peak_rss(*args):
    """Runs chunkctl under /usr/bin/time; returns (exit code, peak bytes)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", C.CHUNKCTL] +
                       [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    last = p.stderr.strip().splitlines()[-1]
    return p.returncode, int(last) * 1024, p.stderr


@C.unittest.skipIf(SANITIZED, "peak RSS is meaningless under sanitizers")
class Memory(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.src = cls.path("big.h5")
        C.gen(cls.src + ":/x", "--shape", "%d,%d" % SHAPE,
              "--chunks", "64,8192", "--dist", "integers", "--seed", "3",
              "--compress", "zstd:1")

    def check_run(self, *args):
        rc, peak, err = peak_rss(*args)
        self.assertEqual(rc, 0, err)
        self.assertLess(peak, BUDGET, "peak RSS %.1f MiB over --memory %d MiB"
                        % (peak / 2**20, BUDGET >> 20))
        return peak

    def expected(self, rows):
        """The array as NumPy reads it (h5py) for a block of rows."""
        with h5py.File(self.src, "r") as f:
            return f["x"][rows]

    def test_gen_stays_under_budget(self):
        out = self.fresh("gen.zarr")
        self.check_run("gen", "--quiet", "--memory", "64M", "--shape",
                       "%d,%d" % SHAPE, "--chunks", "512,4096", out)
        self.assertEqual(zarr.open(out, "r").shape, SHAPE)

    def test_copy_to_zarr_stays_under_budget(self):
        out = self.fresh("copy.zarr")
        self.check_run("copy", "--quiet", "--memory", "64M", self.src, out,
                       "--compress", "blosc:lz4:5")
        z = zarr.open(out, "r")
        self.assertTrue(np.array_equal(z[4000:4100], self.expected(
            slice(4000, 4100))))

    def test_rechunk_to_hdf5_stays_under_budget(self):
        out = self.fresh("rechunk.h5")
        self.check_run("copy", "--quiet", "--memory", "64M", self.src, out,
                       "--chunks", "1000,1000", "--compress", "gzip:1",
                       "--dtype", "float32")
        with h5py.File(out, "r") as f:
            got = f["x"][7000:7200]
            self.assertEqual(f["x"].chunks, (1000, 1000))
        self.assertTrue(np.array_equal(
            got, self.expected(slice(7000, 7200)).astype(np.float32)))

    def test_budget_smaller_than_a_chunk_is_refused(self):
        out = self.fresh("small.zarr")
        rc, _, err = peak_rss("copy", "--quiet", "--memory", "32M",
                              self.src, out, "--chunks", "8192,8192")
        self.assertEqual(rc, 1, err)
        self.assertIn("--memory", err)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    C.main()
