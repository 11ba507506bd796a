"""--memory is a contract: the whole process's peak RSS stays under it,
on inputs many times larger than the budget.

Peak RSS is read by /usr/bin/time (the kernel's ru_maxrss of the child),
not reported by chunkctl itself.  Under AddressSanitizer RSS measures the
sanitizer's shadow memory, so these tests skip (visibly) in that build.
Values are checked against NumPy too, so a copy that kept memory low by
dropping data cannot pass.
"""
import os
import re
import subprocess

import _common as C
from _common import np, zarr, h5py
import scipy.ndimage as scipy_ndimage

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

    def test_blosc_store_from_zarr_python_stays_under_budget(self):
        # zarr-python's default compressor (blosc lz4, 1 MiB blocks here):
        # c-blosc allocates and frees a two-block buffer per decode, which
        # glibc's thread caches turned into ~14 MiB kept per decoding
        # thread (61.6 MB under --memory 48M before chunkctl started with
        # glibc.malloc.tcache_count=0).
        store = self.path("blosc_zp.zarr")
        a = np.random.default_rng(5).standard_normal((250000, 100))
        z = zarr.open(store, mode="w", shape=a.shape, chunks=(7000, 30),
                      dtype="f8")
        z[:] = a
        self.assertEqual(z.compressor.codec_id, "blosc")
        out = self.fresh("blosc_svd.h5")
        self.check_run("svd", "--memory", "48M", store, "-o", out,
                       budget=48)
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(
                f["S"][...], np.linalg.svd(a, compute_uv=False), rtol=1e-10)
        self.check_run("reduce", "sum", "--memory", "32M", store, budget=32)

    def test_budget_smaller_than_a_chunk_is_refused(self):
        out = self.fresh("small.zarr")
        rc, _, err = peak_rss("copy", "--quiet", "--memory", "32M",
                              self.src, out, "--chunks", "8192,8192")
        self.assertEqual(rc, 1, err)
        # '--memory' is in the arguments given: the cause too
        self.assertIn("--memory 32.0 MiB is too small", err)
        self.assertFalse(os.path.exists(out))

    def check_refused(self, *args, budget=BUDGET >> 20, why=""):
        """A run the budget cannot hold: exit 1 with one line that names
        --memory, its peak under the budget all the same."""
        rc, peak, err = peak_rss(*args)
        self.assertEqual(rc, 1, err)
        self.assertIn("--memory %d.0 MiB is too small" % budget, err)
        self.assertIn(why, err)
        self.assertLess(peak, budget << 20,
                        "refused, but peak RSS %.1f MiB over --memory %d MiB"
                        % (peak / 2**20, budget))
        return err

    def test_histogram_bin_rules_stay_under_budget(self):
        # The rules' statistics (and fd's quartiles) were computed with a
        # quarter of RAM for a budget, holding the whole array: 555 MiB
        # under --memory 64M.
        for rule in ("fd", "scott"):
            with self.subTest(rule=rule):
                out = self.fresh("h.h5")
                self.check_run("histogram", "--quiet", "--memory", "64M",
                               self.src + ":/x", "--bins", rule, "-o",
                               out + ":/h")
                with h5py.File(out, "r") as f:
                    self.assertEqual(int(f["h"][...].sum()), SHAPE[0] *
                                     SHAPE[1])

    def test_argwhere_stays_under_budget(self):
        # argwhere finds its indices when the pipeline is read: the
        # argument's values (as x != 0, a byte each) and the indices were
        # held uncharged (583 MiB under 64M).
        pj = self.path("aw.json")
        out = self.fresh("aw.h5")
        with open(pj, "w") as f:
            f.write(C.json.dumps({
                "inputs": {"x": self.src + ":/x"},
                "steps": [
                    {"name": "s", "op": "slice", "args": ["x"],
                     "index": [[0, 6144]]},
                    {"name": "c", "op": "greater", "args": ["s", 2**31]},
                    {"name": "w", "op": "argwhere", "args": ["c"]}],
                "outputs": {"w": out + ":/w"}}))
        self.check_refused("run", "--quiet", "--memory", "64M", pj,
                           why="c != 0")
        self.assertFalse(os.path.exists(out))
        self.check_run("run", "--quiet", "--memory", "160M", pj,
                       budget=160)
        with h5py.File(self.src, "r") as f:
            x = f["x"][0:6144]
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["w"][...],
                                           np.argwhere(x > 2**31)))

    def test_reductions_never_fail_part_way(self):
        # Partial results of a reduction along the slow axis were not
        # planned with the workers: 4 or 8 threads ran out of budget after
        # reading data where 1 or 2 fit.
        cube = self.fresh("cube.h5")
        C.gen(cube + ":/x", "--shape", "200,500,500", "--chunks",
              "50,100,100", "--seed", "5", "--compress", "none")
        with h5py.File(cube, "r") as f:
            want = f["x"][...].sum(axis=0)
        for budget in (64, 96, 128):
            for threads in (1, 8):
                with self.subTest(budget=budget, threads=threads):
                    out = self.fresh("r.h5")
                    args = ("reduce", "sum", "--quiet", "--memory",
                            "%dM" % budget, "--threads", threads, cube + ":/x",
                            "--axis", "0", "-o", out + ":/s")
                    rc, peak, err = peak_rss(*args)
                    self.assertNotIn("partial results", err)
                    self.assertLess(peak, budget << 20)
                    if rc == 0:
                        with h5py.File(out, "r") as f:
                            np.testing.assert_allclose(f["s"][...], want,
                                                       rtol=1e-12)
                    else:
                        self.assertIn("with one worker", err)
        # 96M holds a worker and the partials, whatever --threads says
        self.check_run("reduce", "sum", "--quiet", "--memory", "96M",
                       "--threads", "8", cube + ":/x", "--axis", "0", "-o",
                       self.fresh("r.h5") + ":/s", budget=96)

    def test_histogram_bins_refused_before_allocating(self):
        # 1e8 bins: the edges (800 MB) were made before the run refused
        # the counts, 780 MiB of RSS under --memory 256M
        err = self.check_refused("histogram", self.src + ":/x", "--bins",
                                 "100000000", "--memory", "256M", budget=256,
                                 why="histogram 'histogram' (100000000 "
                                 "bins) needs 1.5 GiB")
        self.assertEqual(
            [ln for ln in err.splitlines() if ln.startswith("chunkctl")],
            [ln for ln in err.splitlines() if "chunkctl" in ln])
        pj = self.path("hp.json")
        with open(pj, "w") as f:  # a pipeline prints 100000 values at most
            f.write(C.json.dumps({
                "inputs": {"x": self.src + ":/x"},
                "steps": [{"name": "y", "op": "histogram", "args": ["x"],
                           "bins": 200000}], "print": ["y"]}))
        p = C.run("run", pj, expect=2)
        self.assertIn("'y' has 200000 elements, too many to print", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_stencil_planned_by_its_chunks(self):
        # A filter writing its own chunks was planned for any box of a
        # chunk's size (4 x 16384 grown by the window: 18 MiB a worker for
        # 256 x 256 chunks), refusing --memory 36M that it runs in.
        src = self.fresh("sq.h5")
        C.gen(src + ":/x", "--shape", "1024,16384", "--chunks", "256,256",
              "--seed", "7", "--compress", "none")
        out = self.fresh("uf.h5")
        self.check_run("uniform_filter", "--quiet", "--memory", "36M",
                       "--threads", "2", src + ":/x", "--size", "41", "-o",
                       out + ":/f", budget=36)
        with h5py.File(src, "r") as f:
            want = scipy_ndimage.uniform_filter(f["x"][...], 41)
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(f["f"][...], want, rtol=1e-10)

    def test_hdf5_of_many_chunks_stays_under_budget(self):
        # HDF5's metadata cache grew to 32 MiB a file, counted on disk: the
        # B-tree nodes of 160000 chunks, ten times that in memory, took sum
        # to 53 MB under --memory 40M and copy to 70 MB under 64M.
        src = self.fresh("many.h5")
        self.check_run("gen", "--quiet", "--memory", "40M", "--shape",
                       "4000,4000", "--chunks", "100,1", "--seed", "5",
                       "--dist", "integers", "--compress", "none",
                       src + ":/x", budget=40)
        with h5py.File(src, "r") as f:
            x = f["x"][...]
        rc, peak, err = peak_rss("sum", "--memory", "40M", src + ":/x")
        self.assertEqual(rc, 0, err)
        self.assertLess(peak, 40 << 20, "sum: %.1f MiB" % (peak / 2**20))
        out = self.fresh("many-zstd.h5")
        self.check_run("copy", "--quiet", "--memory", "40M", src, out,
                       "--compress", "zstd:1", budget=40)
        with h5py.File(out, "r") as f:
            self.assertTrue(np.array_equal(f["x"][...], x))
        p = C.run("sum", src + ":/x")
        self.assertEqual(float(p.stdout.split()[-1]), float(x.sum()))

    def test_rechunk_walks_the_axis_output_chunks_share(self):
        # (1000, 1) chunks to (1, 1000): an output chunk reads a thousand
        # source chunks, and the next output chunk down the same ones.
        # Walked in C order a worker had to keep a row of 4000 chunks,
        # which --memory 40M does not hold, and with no cache every output
        # chunk read a value from each of its thousand sources (23 s for
        # these 32 MB); walked down axis 0, 2000 serve, each decoded once.
        src = self.fresh("cols.h5")
        C.gen(src + ":/x", "--shape", "2000,2000", "--chunks", "1000,1",
              "--seed", "6", "--compress", "none")
        out = self.fresh("rows.h5")
        rc, peak, err = peak_rss("copy", "--verbose", "--memory", "40M", src,
                                 out, "--chunks", "1,1000")
        self.assertEqual(rc, 0, err)
        self.assertLess(peak, 40 << 20, "%.1f MiB" % (peak / 2**20))
        self.assertIn("walked with axis 0 innermost", err)
        m = re.search(r"(\d+) source chunks decoded for 4000 in", err)
        self.assertTrue(m, err)
        self.assertLessEqual(int(m.group(1)), 4400)
        with h5py.File(src, "r") as f, h5py.File(out, "r") as g:
            self.assertEqual(g["x"].chunks, (1, 1000))
            self.assertTrue(np.array_equal(g["x"][...], f["x"][...]))


    def test_time_mean_of_thin_chunks_stays_under_budget(self):
        # A mean over time of (1, 360, 720) float32 chunks: each task's
        # partial is the whole output in reduction states (16.6 MB), and
        # combining them copied the finished subtrees twice more than the
        # budget counted: 131 MiB under --memory 128M, 163 under 160M.
        # The states (the output's, 16.6 MB more) are only needed once the
        # workers are gone: 112M was refused, "needs 122.0 MiB".
        src = self.fresh("tas.h5")
        C.gen(src + ":/tas", "--shape", "365,360,720", "--chunks",
              "1,360,720", "--dtype", "float32", "--dist", "normal",
              "--seed", "4", "--compress", "zstd:1")
        with h5py.File(src, "r") as f:
            want = f["tas"][...].astype(np.float64).mean(axis=0)
        for budget in (112, 128, 160):
            with self.subTest(budget=budget):
                out = self.fresh("tm.h5")
                self.check_run("reduce", "mean", "--quiet", "--memory",
                               "%dM" % budget, "--threads", "2", src + ":/tas",
                               "--axis", "0", "-o", out + ":/m", budget=budget)
                with h5py.File(out, "r") as f:
                    np.testing.assert_allclose(f["m"][...], want, rtol=1e-5,
                                               atol=1e-6)



if __name__ == "__main__":
    C.main()
