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
SHAPE = (10240, 8192)  # 640 MiB of float64: 10x the budget
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

    def check_run(self, *args, budget=BUDGET >> 20):
        rc, peak, err = peak_rss(*args)
        self.assertEqual(rc, 0, err)
        self.assertLess(peak, budget << 20,
                        "peak RSS %.1f MiB over --memory %d MiB"
                        % (peak / 2**20, budget))
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

    def test_sharded_zarr_v3_stays_under_budget(self):
        # Shards of 2560 x 8192 (160 MiB decoded, 2.5x the budget) hold 40
        # inner chunks each: written and read by inner chunk, never whole.
        out = self.fresh("sharded.zarr")
        self.check_run("copy", "--quiet", "--memory", "64M", self.src, out,
                       "--zarr-format", "3", "--shards", "2560,8192",
                       "--compress", "zstd:1")
        with open(os.path.join(out, "zarr.json")) as f:
            meta = C.json.load(f)
        self.assertEqual(meta["codecs"][0]["name"], "sharding_indexed")
        self.assertEqual(len(os.listdir(os.path.join(out, "c"))), 4)
        back = self.fresh("sharded.h5")
        self.check_run("copy", "--quiet", "--memory", "64M", out, back,
                       "--compress", "none")
        with h5py.File(back, "r") as f:
            got = f["data"][5000:5200]
        self.assertTrue(np.array_equal(got, self.expected(slice(5000, 5200))))

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

    def test_pipeline_stays_under_budget(self):
        out = self.fresh("pipe.h5")
        pj = self.path("pipe.json")
        with open(pj, "w") as f:
            f.write(C.json.dumps({
                "inputs": {"x": self.src + ":/x"},
                "steps": [
                    {"name": "y", "op": "multiply", "args": ["x", 0.5]},
                    {"name": "lt", "op": "less", "args": ["y", 0.5]},
                    {"name": "low", "op": "mask", "args": ["y", "lt"]},
                    {"name": "h", "op": "histogram", "args": ["low"],
                     "bins": 10, "range": [0, 10]},
                    {"name": "m", "op": "mean", "args": ["x"], "axis": 0},
                    {"name": "t", "op": "transpose", "args": ["y"]},
                    {"name": "s", "op": "slice", "args": ["t"],
                     "index": [[0, 8192, 64]]}],
                "outputs": {"h": out + ":/h", "m": out + ":/m",
                            "s": out + ":/s"}}))
        # The mask's selection (1% of the array, 6.4 MiB) is held in memory
        # beside two workers' buffers: 80M, still 8x below the input.
        self.check_run("run", "--quiet", "--memory", "80M", pj, budget=80)
        with h5py.File(self.src, "r") as f:
            x = f["x"][...]
        y = x * 0.5
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(
                f["h"][...], np.histogram(y[y < 0.5], 10, (0, 10))[0]))
            np.testing.assert_allclose(f["m"][...], x.mean(axis=0),
                                       rtol=1e-12)
            self.assertTrue(np.array_equal(f["s"][...], y.T[0:8192:64]))

    def test_budget_smaller_than_a_chunk_is_refused(self):
        out = self.fresh("small.zarr")
        rc, _, err = peak_rss("copy", "--quiet", "--memory", "32M",
                              self.src, out, "--chunks", "8192,8192")
        self.assertEqual(rc, 1, err)
        # '--memory' is in the arguments given: the cause too
        self.assertIn("--memory 32.0 MiB is too small", err)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    C.main()
