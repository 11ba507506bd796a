"""chunkctl svd, matmul and the svd / matmul pipeline ops against NumPy.

Exact SVD (TSQR) of h5py- and zarr-written arrays on several chunkings
(partial edge chunks, column chunks), float32 and float64, tall and wide;
randomized SVD of a matrix with a known decaying spectrum; matmul on
uneven tiles; the memory contract of svd (peak RSS under --memory on an
input many times larger).  Every expected value is computed by NumPy from
the arrays in memory; chunkctl's results are only ever compared with it.

Bounds (from the issue): exact S within 1e-10 relative of numpy.linalg.svd,
U and V orthonormal to 1e-10, U diag(S) Vt reconstructs A to 1e-10
relative; randomized top-k S within 1e-6; matmul float64 within 1e-12 of
max |C|, float32 within 1e-5.
"""
import hashlib
import json
import os
import subprocess

import _common as C
from _common import np, h5py, zarr
from scipy.linalg import subspace_angles

SANITIZED = bool(os.environ.get("CK_SANITIZE"))


def read(target):
    """An array written by chunkctl, as h5py / zarr-python read it."""
    path, _, ds = target.partition(":")
    if path.rstrip("/").endswith(".zarr"):
        g = zarr.open(path, "r")
        return g[ds][...] if ds else g[...]
    with h5py.File(path, "r") as f:
        return f[ds or "/"][()]


def names(path):
    """The dataset / array names at the top of an .h5 file or .zarr store."""
    if path.rstrip("/").endswith(".zarr"):
        return sorted(zarr.open_group(path, "r").array_keys())
    with h5py.File(path, "r") as f:
        return sorted(f.keys())


def tree_digest(path):
    """SHA-256 over a file, or over every file (name and bytes) of a folder."""
    h = hashlib.sha256()
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for fn in sorted(files):
                p = os.path.join(root, fn)
                h.update(os.path.relpath(p, path).encode() + b"\0")
                with open(p, "rb") as f:
                    h.update(f.read())
    else:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def sign_fix(u, vt):
    """NumPy's factors under chunkctl's convention: each row of Vt sums to
    >= 0, U's columns follow."""
    sg = np.where(vt.sum(axis=1) < 0, -1.0, 1.0)
    return u * sg, vt * sg[:, None]


def pipeline(case, name, doc):
    path = case.path(name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def max_offdiag_identity(g):
    return float(np.max(np.abs(g - np.eye(g.shape[0]))))


class SvdCase(C.InteropCase):

    def svd(self, src, out, *opts):
        """chunkctl svd SRC -o OUT --json; returns (printed S, U or None,
        S, Vt) with U, S, Vt read back by h5py / zarr-python."""
        p = C.run("svd", "--quiet", "--force", "--json", src, "-o", out,
                  *opts)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["output"], out.partition(":")[0])
        have = names(out.partition(":")[0])
        u = read(out + ":/U") if "U" in have else None
        s, vt = read(out + ":/S"), read(out + ":/Vt")
        for x in (u, s, vt):
            if x is not None:
                self.assertEqual(x.dtype, np.float64)
        return np.array(doc["S"], dtype=np.float64), u, s, vt

    def check_exact(self, a, got, k=None, what=""):
        """chunkctl's exact (U, S, Vt) of A against numpy.linalg.svd."""
        printed, u, s, vt = got
        a64 = a.astype(np.float64)
        m, n = a.shape
        r = min(m, n)
        k = r if k is None else k
        nu, ns, nvt = np.linalg.svd(a64, full_matrices=False)
        nu, nvt = sign_fix(nu, nvt)
        nu, ns, nvt = nu[:, :k], ns[:k], nvt[:k]
        self.assertEqual(s.shape, (k,), what)
        self.assertEqual(vt.shape, (k, n), what)
        np.testing.assert_allclose(s, ns, rtol=1e-10, atol=0,
                                   err_msg=what + ": S")
        np.testing.assert_allclose(printed, s, rtol=1e-15, atol=0,
                                   err_msg=what + ": printed S vs /S")
        self.assertTrue(np.all(np.diff(s) <= 0), what + ": S not sorted")
        self.assertLessEqual(max_offdiag_identity(vt @ vt.T), 1e-10,
                             what + ": V V^T - I")
        sums = vt.sum(axis=1)
        self.assertTrue(np.all(sums >= 0),
                        "%s: Vt row sums %r" % (what, sums[sums < 0]))
        # the spectrum of a random matrix has gaps of ~1% of ||A||: the
        # vectors are determined to ~1e-13, and the signs are fixed
        np.testing.assert_allclose(vt, nvt, rtol=0, atol=1e-8,
                                   err_msg=what + ": Vt vs NumPy's")
        if u is None:
            return
        self.assertEqual(u.shape, (m, k), what)
        self.assertLessEqual(max_offdiag_identity(u.T @ u), 1e-10,
                             what + ": U^T U - I")
        np.testing.assert_allclose(u, nu, rtol=0, atol=1e-8,
                                   err_msg=what + ": U vs NumPy's")
        rec = (u * s) @ vt
        best = (nu * ns) @ nvt  # NumPy's rank-k approximation
        err = np.linalg.norm(rec - best) / np.linalg.norm(a64)
        self.assertLessEqual(err, 1e-10, what + ": U diag(S) Vt")
        if k == r:
            err = np.linalg.norm(rec - a64) / np.linalg.norm(a64)
            self.assertLessEqual(err, 1e-10, what + ": U diag(S) Vt vs A")


class ExactSvd(SvdCase):

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261201)
        cls.a = rng.standard_normal((1003, 37))
        cls.a4 = (rng.standard_normal((1003, 37)) * 3).astype(np.float32)
        cls.w = rng.standard_normal((37, 1003))
        cls.big = rng.standard_normal((20000, 50))
        with h5py.File(cls.path("tall.h5"), "w") as f:
            f.create_dataset("c100", data=cls.a, chunks=(100, 37))
            # blocks of one 48-row chunk: each of TSQR's two parts starts
            # with fewer rows (24) than columns (37)
            f.create_dataset("c48", data=cls.a, chunks=(48, 37))
            f.create_dataset("c250x10", data=cls.a, chunks=(250, 10))
            f.create_dataset("c1003x5", data=cls.a, chunks=(1003, 5))
            f.create_dataset("contig", data=cls.a)
            f.create_dataset("f4", data=cls.a4, chunks=(128, 16))
            f.create_dataset("wide", data=cls.w, chunks=(10, 250))
            f.create_dataset("wide_f4", data=cls.w.astype(np.float32),
                             chunks=(37, 100))
            f.create_dataset("big", data=cls.big, chunks=(500, 50))
            # chunks that do not divide the rows: U's are the plan's, cut
            # to what --memory leaves
            f.create_dataset("big7001", data=cls.big, chunks=(7001, 50))
        z = zarr.open_group(cls.path("tall.zarr"), "w")
        z.create_dataset("c100", data=cls.a, chunks=(100, 37))
        z.create_dataset("c333x7", data=cls.a, chunks=(333, 7),
                         compressor=None)
        z.create_dataset("f4", data=cls.a4, chunks=(200, 37))
        z.create_dataset("wide", data=cls.w, chunks=(16, 300))
        # a bare array store (no group), for the default output name
        zarr.save_array(cls.path("bare.zarr"), cls.a, chunks=(250, 10))
        with h5py.File(cls.path("data.h5"), "w") as f:
            f.create_dataset("x", data=cls.a, chunks=(300, 20))
        with h5py.File(cls.path("small.h5"), "w") as f:
            f.create_dataset("tall", data=cls.a[:12, :5], chunks=(5, 5))
            f.create_dataset("wide", data=cls.w[:6, :30], chunks=(6, 7))

    def test_h5py_tall_on_each_chunking(self):
        for ds in ("c100", "c48", "c250x10", "c1003x5", "contig"):
            with self.subTest(ds=ds):
                got = self.svd(self.path("tall.h5") + ":/" + ds,
                               self.fresh("o_%s.h5" % ds))
                self.check_exact(self.a, got, what=ds)

    def test_zarr_tall_on_each_chunking(self):
        for ds in ("c100", "c333x7"):
            with self.subTest(ds=ds):
                got = self.svd(self.path("tall.zarr") + ":/" + ds,
                               self.fresh("oz_%s.zarr" % ds))
                self.check_exact(self.a, got, what="zarr " + ds)

    def test_float32_input_gives_float64_factors(self):
        for src in (self.path("tall.h5") + ":/f4",
                    self.path("tall.zarr") + ":/f4"):
            with self.subTest(src=src):
                got = self.svd(src, self.fresh("o_f4.h5"))
                self.check_exact(self.a4, got, what=src)

    def test_wide_goes_through_the_transpose(self):
        for src, a in ((self.path("tall.h5") + ":/wide", self.w),
                       (self.path("tall.zarr") + ":/wide", self.w),
                       (self.path("tall.h5") + ":/wide_f4",
                        self.w.astype(np.float32))):
            with self.subTest(src=src):
                got = self.svd(src, self.fresh("o_wide.zarr"))
                self.assertEqual(got[1].shape, (37, 37))
                self.check_exact(a, got, what=src)

    def test_k_keeps_the_top_k(self):
        got = self.svd(self.path("tall.h5") + ":/c250x10",
                       self.fresh("o_k.h5"), "--k", "5")
        self.check_exact(self.a, got, k=5, what="--k 5")
        got = self.svd(self.path("tall.zarr") + ":/wide",
                       self.fresh("o_kw.h5"), "-k", "3")
        self.check_exact(self.w, got, k=3, what="wide -k 3")

    def test_no_u_writes_no_u(self):
        out = self.fresh("o_nou.h5")
        got = self.svd(self.path("tall.h5") + ":/c100", out, "--no-u")
        self.assertEqual(names(out), ["S", "Vt"])
        self.assertIsNone(got[1])
        self.check_exact(self.a, got, what="--no-u")
        out = self.fresh("o_nou.zarr")
        self.svd(self.path("tall.h5") + ":/wide", out, "--no-u")
        self.assertEqual(names(out), ["S", "Vt"])

    def test_output_group_inside_dst(self):
        out = self.fresh("o_grp.h5")
        C.run("svd", "--quiet", self.path("tall.h5") + ":/c100",
              "-o", out + ":/res")
        with h5py.File(out, "r") as f:
            self.assertEqual(sorted(f["res"].keys()), ["S", "U", "Vt"])
            s = f["res/S"][()]
        np.testing.assert_allclose(s, np.linalg.svd(self.a, compute_uv=False),
                                   rtol=1e-10, atol=0)

    def test_default_output_beside_the_input(self):
        src = self.path("data.h5")
        before = tree_digest(src)
        dflt = self.fresh("data.svd.h5")
        # run from another folder: the default lands beside the input
        p = subprocess.run([C.CHUNKCTL, "svd", "--quiet", src + ":/x"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=C.TIMEOUT, cwd="/")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("data.svd.h5", p.stdout)
        self.assertTrue(os.path.isfile(dflt), os.listdir(self.tmp))
        self.assertEqual(tree_digest(src), before, "the input changed")
        s = read(dflt + ":/S")
        np.testing.assert_allclose(s, np.linalg.svd(self.a, compute_uv=False),
                                   rtol=1e-10, atol=0)
        self.assertEqual(names(dflt), ["S", "U", "Vt"])
        # the printed values are NumPy's, to the 10 digits printed
        lines = [ln.split() for ln in p.stdout.splitlines()]
        vals = [float(ln[1]) for ln in lines
                if len(ln) == 2 and ln[0].isdigit()]
        self.assertEqual(len(vals), 10, p.stdout)
        np.testing.assert_allclose(vals, s[:10], rtol=1e-9)
        # a second run without --force refuses to overwrite it
        before_out = tree_digest(dflt)
        p = C.run("svd", "--quiet", src + ":/x", expect=None)
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(tree_digest(dflt), before_out)

    def test_default_output_of_a_zarr_store(self):
        src = self.path("bare.zarr")
        before = tree_digest(src)
        dflt = self.fresh("bare.svd.zarr")
        C.run("svd", "--quiet", src)
        self.assertTrue(os.path.isdir(dflt), os.listdir(self.tmp))
        self.assertEqual(tree_digest(src), before, "the input changed")
        np.testing.assert_allclose(read(dflt + ":/S"),
                                   np.linalg.svd(self.a, compute_uv=False),
                                   rtol=1e-10, atol=0)

    def test_small_memory_gives_the_same_factors(self):
        for ds, t in (("big", "1"), ("big", "2"), ("big7001", "1"),
                      ("big7001", "2")):
            src = self.path("tall.h5") + ":/" + ds
            whole = self.svd(src, self.fresh("o_big.h5"))
            self.check_exact(self.big, whole, what="default --memory")
            with self.subTest(ds=ds, threads=t):
                # 8 MB of input, 32M budget: several row blocks
                got = self.svd(src, self.fresh("o_small.h5"), "--memory",
                               "32M", "--threads", t)
                self.check_exact(self.big, got, what="--memory 32M")
                # svd(1) promises the same bits (U's chunks differ: they
                # follow --memory)
                for name, x, y in zip("pUSV", whole, got):
                    np.testing.assert_array_equal(x, y, err_msg=name)

    def test_pipeline_svd_results_by_name(self):
        out = self.fresh("pipe_svd.zarr")
        p = pipeline(self, "svd", {
            "inputs": {"a": self.path("tall.h5") + ":/c250x10"},
            "steps": [{"name": "d", "op": "svd", "args": ["a"], "k": 4,
                       "method": "exact"},
                      {"name": "s2", "op": "multiply", "args": ["d.S", 2]}],
            "outputs": {"d.U": out + ":/u", "d.S": out + ":/s",
                        "d.Vt": out + ":/vt", "s2": out + ":/s2"}})
        C.run("run", "--quiet", p)
        got = (read(out + ":/s"), read(out + ":/u"), read(out + ":/s"),
               read(out + ":/vt"))
        self.check_exact(self.a, got, k=4, what="pipeline d")
        np.testing.assert_allclose(read(out + ":/s2"), 2 * got[0],
                                   rtol=1e-15)

    def test_pipeline_prints_the_factors(self):
        # the streamed factor (U of a tall A, Vt of a wide one) is made
        # when printed, not copied from a buffer not yet filled; U and Vt
        # print as NumPy's str() and --json nests them, S one per line
        for ds, a in (("tall", self.a[:12, :5]), ("wide", self.w[:6, :30])):
            with self.subTest(ds=ds):
                p = pipeline(self, "print_" + ds, {
                    "inputs": {"a": self.path("small.h5") + ":/" + ds},
                    "steps": [{"name": "d", "op": "svd", "args": ["a"]}],
                    "print": ["d.U", "d.S", "d.Vt"]})
                got = json.loads(C.run("run", "--quiet", "--json",
                                       p).stdout)
                u = np.array(got["d.U"]["values"], dtype=np.float64)
                s = np.array(got["d.S"]["values"], dtype=np.float64)
                vt = np.array(got["d.Vt"]["values"], dtype=np.float64)
                r = min(a.shape)
                self.assertEqual(got["d.U"]["shape"], [a.shape[0], r])
                self.assertEqual(u.shape, (a.shape[0], r))
                self.assertEqual(vt.shape, (r, a.shape[1]))
                self.check_exact(a, (s, u, s, vt), what="printed " + ds)
                text = C.run("run", "--quiet", p).stdout
                self.assertEqual(text, "# d.U\n%s\n# d.S\n%s\n# d.Vt\n%s\n"
                                 % (u, "\n".join(repr(x) for x in s), vt))

    def test_pipeline_factors_feed_other_steps(self):
        # the streamed factor read by matmul in boxes that are not its
        # chunks: U S Vt rebuilds A, and a slice of U is U's rows
        for ds, a in (("c100", self.a),
                      ("wide_f4", self.w.astype(np.float32).astype(float))):
            with self.subTest(ds=ds):
                out = self.fresh("feed_%s.h5" % ds)
                p = pipeline(self, "feed_" + ds, {
                    "inputs": {"a": self.path("tall.h5") + ":/" + ds},
                    "steps": [
                        {"name": "d", "op": "svd", "args": ["a"]},
                        {"name": "us", "op": "multiply",
                         "args": ["d.U", "d.S"]},
                        {"name": "m", "op": "matmul", "args": ["us", "d.Vt"]},
                        {"name": "m2", "op": "matmul",
                         "args": ["d.U", "d.Vt"]},
                        {"name": "u2", "op": "slice", "args": ["d.U"],
                         "index": [[1, 4]]}],
                    "outputs": {"m": out + ":/m", "m2": out + ":/m2",
                                "u2": out + ":/u2", "d.U": out + ":/u",
                                "d.Vt": out + ":/vt"}})
                C.run("run", "--quiet", p)
                u, vt = read(out + ":/u"), read(out + ":/vt")
                np.testing.assert_allclose(read(out + ":/m"), a, rtol=0,
                                           atol=1e-12 * np.abs(a).max())
                np.testing.assert_allclose(read(out + ":/m2"), u @ vt,
                                           rtol=0, atol=1e-14)
                np.testing.assert_array_equal(read(out + ":/u2"), u[1:4])

    def test_bad_svd_requests_are_refused(self):
        src = self.path("tall.h5") + ":/c100"
        out = self.fresh("bad.h5")
        cases = [
            (("--k", "38"), ("38", "min(m, n)")),
            (("--randomized",), ("needs k",)),
            (("--k", "x"), ("--k 'x': expected an integer",)),
        ]
        for opts, needles in cases:
            with self.subTest(opts=opts):
                p = C.run("svd", "--quiet", src, "-o", out, *opts,
                          expect=None)
                self.assertCleanError(p, 2, *needles)
                self.assertFalse(os.path.exists(out))
        with h5py.File(self.path("nd.h5"), "w") as f:
            f.create_dataset("v", data=np.arange(10.0))
        p = C.run("svd", "--quiet", self.path("nd.h5") + ":/v", "-o", out,
                  expect=None)
        # named as typed, not by the one-step pipeline's inner names
        self.assertCleanError(p, 2, "svd: expected a 2-D array",
                              "nd.h5:/v has shape (10,)")
        self.assertNotIn("args[", p.stderr)
        self.assertFalse(os.path.exists(out))


class RankDeficientSvd(SvdCase):
    """Exact svd of rank-deficient and ill-conditioned arrays: U (Vt of a
    wide array) is orthonormal all the same, as NumPy's is, and A = U S Vt
    still holds to ~eps of S[0].  NumPy's singular vectors of a repeated
    (zero) singular value are not unique, so only S, orthonormality,
    the reconstruction and the sign convention are compared."""

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261129)
        cls.r5 = rng.standard_normal((100, 5)) @ rng.standard_normal((5, 20))
        z = rng.standard_normal((300, 12))
        z[:, 3] = 0
        z[:, 7] = 0
        z[:, 5] = z[:, 1]
        z[:, 9] = 2 * z[:, 2]
        cls.zc = z
        cls.wide = (rng.standard_normal((20, 4)) @
                    rng.standard_normal((4, 150)))
        cls.zero = np.zeros((60, 6))
        cls.tall = (rng.standard_normal((20000, 10)) @
                    rng.standard_normal((10, 30)))
        cls.good = rng.standard_normal((20000, 30))
        # full rank, S from 1 down to 1e-9: no null column, but L V S^-1
        # would be orthonormal to 1e-7 only
        q1 = np.linalg.qr(rng.standard_normal((3000, 40)))[0]
        q2 = np.linalg.qr(rng.standard_normal((40, 40)))[0]
        cls.ill = (q1 * np.logspace(0, -9, 40)) @ q2.T
        with h5py.File(cls.path("rd.h5"), "w") as f:
            f.create_dataset("r5", data=cls.r5, chunks=(30, 20))
            f.create_dataset("zc", data=cls.zc, chunks=(64, 12))
            f.create_dataset("wide", data=cls.wide, chunks=(20, 40))
            f.create_dataset("zero", data=cls.zero, chunks=(16, 6))
            f.create_dataset("tall", data=cls.tall, chunks=(1000, 30))
            # compressed: read into row blocks that follow --memory,
            # instead of seen in place a chunk at a time
            f.create_dataset("tallz", data=cls.tall, chunks=(1000, 30),
                             compression="gzip")
            f.create_dataset("good", data=cls.good, chunks=(1000, 30))
            f.create_dataset("ill", data=cls.ill, chunks=(256, 40))
            f.create_dataset("illwide", data=cls.ill.T, chunks=(40, 256))

    def check_any_rank(self, a, got, what):
        printed, u, s, vt = got
        m, n = a.shape
        k = min(m, n)
        ns = np.linalg.svd(a, compute_uv=False)
        s0 = ns[0] if ns[0] > 0 else 1.0
        self.assertEqual(u.shape, (m, k), what)
        self.assertEqual(vt.shape, (k, n), what)
        np.testing.assert_allclose(s, ns, rtol=0, atol=1e-10 * s0,
                                   err_msg=what + ": S")
        self.assertLessEqual(max_offdiag_identity(u.T @ u), 1e-10,
                             what + ": U^T U - I")
        self.assertLessEqual(max_offdiag_identity(vt @ vt.T), 1e-10,
                             what + ": Vt Vt^T - I")
        rec = (u * s) @ vt
        self.assertLessEqual(float(np.max(np.abs(rec - a))), 1e-10 * s0,
                             what + ": U diag(S) Vt vs A")
        sums = vt.sum(axis=1)
        self.assertTrue(np.all(sums >= 0),
                        "%s: Vt row sums %r" % (what, sums[sums < 0]))

    def test_rank_5_of_100_x_20(self):
        got = self.svd(self.path("rd.h5") + ":/r5", self.fresh("o_r5.h5"))
        self.check_any_rank(self.r5, got, "rank 5")

    def test_zero_and_repeated_columns(self):
        for ds, a in (("zc", self.zc), ("zero", self.zero)):
            with self.subTest(ds=ds):
                p = C.run("svd", "--force", "--json",
                          self.path("rd.h5") + ":/" + ds, "-o",
                          self.fresh("o_zc.h5"))
                self.assertIn("orthonormal completion", p.stderr)
                self.assertNotIn("set to zero", p.stderr)
                out = self.path("o_zc.h5")
                got = (np.array(json.loads(p.stdout)["S"]),
                       read(out + ":/U"), read(out + ":/S"),
                       read(out + ":/Vt"))
                self.check_any_rank(a, got, ds)

    def test_ill_conditioned_full_rank(self):
        for ds, a in (("ill", self.ill), ("illwide", self.ill.T)):
            with self.subTest(ds=ds):
                got = self.svd(self.path("rd.h5") + ":/" + ds,
                               self.fresh("o_ill.h5"))
                self.check_any_rank(a, got, ds)

    def test_wide_rank_deficient_has_orthonormal_vt(self):
        got = self.svd(self.path("rd.h5") + ":/wide",
                       self.fresh("o_wide.h5"))
        self.check_any_rank(self.wide, got, "wide rank 4")

    def test_same_bits_for_any_memory_and_threads(self):
        base = self.svd(self.path("rd.h5") + ":/tall", self.fresh("o_t0.h5"))
        self.check_any_rank(self.tall, base, "rank 10 of 20000 x 30")
        digest = hashlib.sha256(base[1].tobytes()).hexdigest()
        for ds, opts in (
                (ds, o) for ds in ("tall", "tallz")
                for o in (("--threads", "1"), ("--threads", "2"),
                          ("--memory", "32M", "--threads", "1"),
                          ("--memory", "32M", "--threads", "2"))):
            src = self.path("rd.h5") + ":/" + ds
            with self.subTest(ds=ds, opts=opts):
                got = self.svd(src, self.fresh("o_t1.h5"), *opts)
                self.assertEqual(
                    hashlib.sha256(got[1].tobytes()).hexdigest(), digest)
                for name, x, y in zip("pUSV", base, got):
                    np.testing.assert_array_equal(x, y, err_msg=name)

    def test_well_conditioned_bits_are_unchanged(self):
        # CHUNKCTL_REFERENCE: a chunkctl from before the completion (its
        # U is L V S^-1, which this one must keep to the bit)
        ref = os.environ.get("CHUNKCTL_REFERENCE")
        if not ref:
            self.skipTest("CHUNKCTL_REFERENCE not set")
        src = self.path("rd.h5") + ":/good"
        got = self.svd(src, self.fresh("o_g.h5"))
        subprocess.run([ref, "svd", "--quiet", "--force", src, "-o",
                        self.fresh("o_gref.h5")], check=True,
                       stdout=subprocess.DEVNULL)
        for name in ("U", "S", "Vt"):
            want = read(self.path("o_gref.h5") + ":/" + name)
            have = got[1] if name == "U" else got[2] if name == "S" \
                else got[3]
            self.assertEqual(hashlib.sha256(have.tobytes()).hexdigest(),
                             hashlib.sha256(want.tobytes()).hexdigest(), name)


class RandomizedSvd(SvdCase):

    K = 10

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261202)
        m, n = 2000, 300
        uu, _ = np.linalg.qr(rng.standard_normal((m, n)))
        vv, _ = np.linalg.qr(rng.standard_normal((n, n)))
        cls.s_true = 0.7 ** np.arange(n)
        cls.a = (uu * cls.s_true) @ vv.T
        with h5py.File(cls.path("decay.h5"), "w") as f:
            f.create_dataset("a", data=cls.a, chunks=(300, 128))
            f.create_dataset("w", data=cls.a.T, chunks=(128, 300))
        zarr.open_group(cls.path("decay.zarr"), "w").create_dataset(
            "a", data=cls.a, chunks=(512, 300))
        cls.ns = np.linalg.svd(cls.a, compute_uv=False)

    def check_randomized(self, got, a, what):
        printed, u, s, vt = got
        k = self.K
        m, n = a.shape
        self.assertEqual(u.shape, (m, k), what)
        self.assertEqual(s.shape, (k,), what)
        self.assertEqual(vt.shape, (k, n), what)
        np.testing.assert_allclose(s, self.ns[:k], rtol=1e-6, atol=0,
                                   err_msg=what + ": S")
        np.testing.assert_allclose(printed, s, rtol=1e-15, atol=0)
        self.assertLessEqual(max_offdiag_identity(u.T @ u), 1e-10,
                             what + ": U^T U - I")
        self.assertLessEqual(max_offdiag_identity(vt @ vt.T), 1e-10,
                             what + ": V V^T - I")
        self.assertTrue(np.all(vt.sum(axis=1) >= 0), what + ": Vt signs")
        # a near-optimal rank-k approximation: ||A - U S Vt||_2 ~ s_k
        resid = np.linalg.norm(a - (u * s) @ vt, 2)
        self.assertLessEqual(resid, self.ns[k] * (1 + 1e-6), what)
        # the vectors are NumPy's (gaps of 30%: well determined)
        nu, _, nvt = np.linalg.svd(a, full_matrices=False)
        nu, nvt = sign_fix(nu[:, :k], nvt[:k])
        np.testing.assert_allclose(vt, nvt, rtol=0, atol=1e-5,
                                   err_msg=what + ": Vt vs NumPy's")
        np.testing.assert_allclose(u, nu, rtol=0, atol=1e-5,
                                   err_msg=what + ": U vs NumPy's")

    def test_top_k_of_a_decaying_spectrum(self):
        for src in (self.path("decay.h5") + ":/a",
                    self.path("decay.zarr") + ":/a"):
            with self.subTest(src=src):
                got = self.svd(src, self.fresh("r.h5"), "--randomized",
                               "--k", str(self.K))
                self.check_randomized(got, self.a, src)

    def test_wide_randomized(self):
        got = self.svd(self.path("decay.h5") + ":/w", self.fresh("rw.h5"),
                       "--randomized", "--k", str(self.K), "--seed", "7",
                       "--oversample", "12", "--power-iters", "3")
        self.check_randomized(got, self.a.T, "wide")

    def test_rank_below_k_plus_oversample(self):
        # rank 6 < k + oversample: y's trailing directions are rounding
        # and are dropped, not amplified; the top 6 are exact, the rest 0
        rng = np.random.default_rng(20261208)
        a = (rng.standard_normal((1500, 6)) * [9, 7, 5, 3, 2, 1]) @ \
            rng.standard_normal((6, 200))
        src = self.path("rank6.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("a", data=a, chunks=(500, 200))
        _, u, s, vt = self.svd(src + ":/a", self.fresh("r6.h5"),
                               "--randomized", "--k", "8")
        ns = np.linalg.svd(a, compute_uv=False)
        np.testing.assert_allclose(s[:6], ns[:6], rtol=1e-10, atol=0)
        self.assertLessEqual(float(np.max(s[6:])), 1e-10 * ns[0])
        np.testing.assert_allclose((u[:, :6] * s[:6]) @ vt[:6], a, rtol=0,
                                   atol=1e-10 * np.abs(a).max())

    def test_threads_give_the_same_result(self):
        src = self.path("decay.h5") + ":/a"
        res = []
        for t in ("1", "2"):
            got = self.svd(src, self.fresh("rt%s.h5" % t), "--randomized",
                           "--k", str(self.K), "--seed", "3",
                           "--threads", t)
            self.check_randomized(got, self.a, "--threads " + t)
            res.append(got)
        # The same random test matrix whatever the thread count: another
        # --seed moves Vt by ~1e-11, BLAS's summation order by ~1e-15.
        for name, x, y in zip(("S", "U", "S", "Vt"), res[0], res[1]):
            diff = float(np.max(np.abs(x - y)))
            self.assertLessEqual(diff, 1e-13, "%s differs between --threads "
                                 "1 and 2 by %.3g" % (name, diff))

    def test_pipeline_randomized_step(self):
        out = self.fresh("rp.h5")
        p = pipeline(self, "rsvd", {
            "inputs": {"a": self.path("decay.zarr") + ":/a"},
            "steps": [{"name": "d", "op": "svd", "args": ["a"],
                       "k": self.K, "method": "randomized",
                       "oversample": 10, "power_iters": 2, "seed": 0}],
            "outputs": {"d.U": out + ":/U", "d.S": out + ":/S",
                        "d.Vt": out + ":/Vt"}})
        C.run("run", "--quiet", p)
        s = read(out + ":/S")
        got = (s, read(out + ":/U"), s, read(out + ":/Vt"))
        self.check_randomized(got, self.a, "pipeline")



class ChunksSeenInPlace(SvdCase):
    """Row blocks of one raw float64 chunk each are mapped, not copied; a
    chunk that was never written (the fill value) cannot be mapped and is
    read instead, in the middle of a pass."""

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261206)
        m, n = 40000, 100
        cls.a = rng.standard_normal((m, n))
        cls.a[16000:24000] = 0  # chunk 2: never written, reads as 0
        # For the randomized SVD, a known decaying spectrum with the same
        # hole: A = U diag(s) V^T, s_i = 2^-i.  U is the Q of a Gaussian
        # matrix whose chunk-2 rows are zero; Householder QR keeps those
        # rows zero, so A's are too.
        g = rng.standard_normal((m, n))
        g[16000:24000] = 0
        uu, _ = np.linalg.qr(g)
        vv, _ = np.linalg.qr(rng.standard_normal((n, n)))
        cls.s_dec = 0.5 ** np.arange(n)
        cls.dec = (uu * cls.s_dec) @ vv.T
        cls.dec[16000:24000] = 0
        with h5py.File(cls.path("holes.h5"), "w") as f:
            # 6.4 MB chunks: under --memory 48M a block is one chunk
            for name, a in (("x", cls.a), ("dec", cls.dec)):
                d = f.create_dataset(name, shape=(m, n), dtype="f8",
                                     chunks=(8000, n), fillvalue=0.0)
                d[:16000] = a[:16000]
                d[24000:] = a[24000:]

    def test_exact_svd_across_a_missing_chunk(self):
        src = self.path("holes.h5") + ":/x"
        for t in ("1", "2"):
            with self.subTest(threads=t):
                got = self.svd(src, self.fresh("holes.svd.h5"), "--memory",
                               "48M", "--threads", t)
                self.check_exact(self.a, got, what="missing chunk")

    def test_randomized_svd_across_a_missing_chunk(self):
        """Randomized SVD of the decaying spectrum s_i = 2^-i with chunk 2
        never written: the issue's bounds, S to 1e-6 relative, and the
        vectors by angle.

        Angle tolerance: each of the top 5 is apart from its neighbours by
        at least s_4 - s_5 = 2^-5 of ||A||.  With 10 extra columns and 3
        power iterations the range misses directions of size
        (s_15 / s_4)^7 = 2^-77, and rounding perturbs A by ~1e-15 of ||A||,
        so each vector's angle (Davis-Kahan, ||E|| / gap) is ~1e-13; 1e-8
        leaves room and still fails for a hole read as anything but zeros
        or for a flat spectrum's 1e-3."""
        a = self.dec
        k = 5
        nu, ns, nvt = np.linalg.svd(a, full_matrices=False)
        # the fixture is what it claims: NumPy finds the constructed s
        np.testing.assert_allclose(ns, self.s_dec, rtol=1e-12, atol=1e-15)
        nu, nvt = sign_fix(nu[:, :k], nvt[:k])
        for t in ("1", "2"):
            with self.subTest(threads=t):
                printed, u, s, vt = self.svd(
                    self.path("holes.h5") + ":/dec",
                    self.fresh("holes.rsvd.h5"), "--memory", "48M",
                    "--randomized", "--k", str(k), "--power-iters", "3",
                    "--threads", t)
                self.assertEqual(u.shape, (a.shape[0], k))
                self.assertEqual(vt.shape, (k, a.shape[1]))
                np.testing.assert_allclose(s, ns[:k], rtol=1e-6, atol=0,
                                           err_msg="top-k S")
                np.testing.assert_allclose(printed, s, rtol=1e-15, atol=0)
                for name, x, ref in (("U", u, nu), ("V", vt.T, nvt.T)):
                    # sin of each vector's angle with NumPy's: the part
                    # of x_i off ref_i (sqrt(1 - cos^2) would bottom out
                    # at 1e-8 in rounding)
                    cos = np.sum(x * ref, axis=0)
                    sin = np.linalg.norm(x - ref * cos, axis=0)
                    self.assertLessEqual(
                        float(np.max(sin)), 1e-8,
                        "%s: sin of the angles %r" % (name, sin))
                    ang = subspace_angles(x, ref)
                    self.assertLessEqual(float(np.max(ang)), 1e-8,
                                         "%s: subspace angle" % name)
                # the never-written rows are zeros in A, so in U
                self.assertLessEqual(float(np.max(np.abs(u[16000:24000]))),
                                     1e-12, "U on the missing chunk")


class Matmul(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261203)
        cls.a = rng.standard_normal((3001, 700))
        cls.b = rng.standard_normal((700, 2600))
        cls.a4 = rng.standard_normal((1001, 333)).astype(np.float32)
        cls.b4 = rng.standard_normal((333, 517)).astype(np.float32)
        cls.sq = rng.standard_normal((600, 600))
        cls.i2 = rng.integers(-100, 100, (1001, 333)).astype(np.int16)
        with h5py.File(cls.path("mm.h5"), "w") as f:
            f.create_dataset("a", data=cls.a, chunks=(500, 300))
            f.create_dataset("a4", data=cls.a4, chunks=(100, 64))
            f.create_dataset("i2", data=cls.i2, chunks=(256, 256))
            f.create_dataset("v", data=np.arange(700.0))
        z = zarr.open_group(cls.path("mm.zarr"), "w")
        z.create_dataset("b", data=cls.b, chunks=(300, 500))
        z.create_dataset("b4", data=cls.b4, chunks=(64, 100))
        z.create_dataset("sq", data=cls.sq, chunks=(128, 128))
        z.create_dataset("short", data=rng.standard_normal((600, 20)),
                         chunks=(600, 20))

    def assertClose(self, got, want, rel, what):
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        scale = float(np.max(np.abs(want)))
        self.assertLessEqual(err, rel * scale,
                             "%s: max error %.3g = %.3g of max |C|"
                             % (what, err, err / scale))

    def test_float64_uneven_tiles(self):
        out = self.fresh("c.h5")
        C.run("matmul", "--quiet", self.path("mm.h5") + ":/a",
              self.path("mm.zarr") + ":/b", "-o", out)
        got = read(out + ":/matmul")
        self.assertEqual(got.shape, (3001, 2600))
        self.assertEqual(got.dtype, np.float64)
        self.assertClose(got, self.a @ self.b, 1e-12, "float64")

    def test_float32_stays_float32(self):
        out = self.fresh("c4.zarr")
        C.run("matmul", "--quiet", self.path("mm.h5") + ":/a4",
              self.path("mm.zarr") + ":/b4", "-o", out + ":/c")
        got = read(out + ":/c")
        self.assertEqual(got.shape, (1001, 517))
        self.assertEqual(got.dtype, np.float32)
        want = self.a4.astype(np.float64) @ self.b4.astype(np.float64)
        self.assertClose(got, want, 1e-5, "float32")

    def test_mixed_types_give_float64(self):
        out = self.fresh("cm.h5")
        p = pipeline(self, "mixed", {
            "inputs": {"a4": self.path("mm.h5") + ":/a4",
                       "i2": self.path("mm.h5") + ":/i2",
                       "b4": self.path("mm.zarr") + ":/b4"},
            "steps": [
                {"name": "f8", "op": "astype", "args": ["b4"],
                 "dtype": "float64"},
                {"name": "x", "op": "matmul", "args": ["a4", "f8"]},
                {"name": "y", "op": "matmul", "args": ["i2", "b4"]}],
            "outputs": {"x": out + ":/x", "y": out + ":/y"}})
        C.run("run", "--quiet", p)
        x, y = read(out + ":/x"), read(out + ":/y")
        self.assertEqual(x.dtype, np.float64)
        self.assertEqual(y.dtype, np.float64)
        b = self.b4.astype(np.float64)
        self.assertClose(x, self.a4.astype(np.float64) @ b, 1e-12, "f4@f8")
        self.assertClose(y, self.i2.astype(np.float64) @ b, 1e-12, "i2@f4")

    def test_seed_exercise_a_dot_a_plus_a_transpose(self):
        out = self.fresh("seed.zarr")
        p = pipeline(self, "seed", {
            "inputs": {"a": self.path("mm.zarr") + ":/sq"},
            "steps": [
                {"name": "t", "op": "transpose", "args": ["a"]},
                {"name": "s", "op": "add", "args": ["a", "t"]},
                {"name": "c", "op": "matmul", "args": ["a", "s"]},
                {"name": "tr", "op": "sum", "args": ["c"]}],
            "outputs": {"c": out + ":/c", "tr": out + ":/tr"}})
        C.run("run", "--quiet", p)
        want = np.dot(self.sq, self.sq + self.sq.T)
        self.assertClose(read(out + ":/c"), want, 1e-12, "a @ (a + a.T)")
        np.testing.assert_allclose(read(out + ":/tr"), want.sum(),
                                   rtol=1e-9)

    def test_shape_mismatch_names_the_shapes(self):
        out = self.fresh("bad.h5")
        p = C.run("matmul", "--quiet", self.path("mm.h5") + ":/a",
                  self.path("mm.zarr") + ":/short", "-o", out, expect=None)
        self.assertCleanError(p, 2, "(3001, 700)", "(600, 20)")
        self.assertFalse(os.path.exists(out))
        p = C.run("matmul", "--quiet", self.path("mm.h5") + ":/a",
                  self.path("mm.h5") + ":/v", "-o", out, expect=None)
        self.assertCleanError(p, 2, "2-D")
        self.assertFalse(os.path.exists(out))


@C.unittest.skipIf(SANITIZED, "peak RSS is meaningless under sanitizers")
class SvdMemory(C.InteropCase):
    """svd's and matmul's --memory is a contract on the whole process's peak
    RSS, read by /usr/bin/time, as in test_memory.py."""

    BUDGET = 32  # MiB, the smallest --memory chunkctl takes
    SHAPE = (350000, 100)  # 280 MB of float64: 8.3x the budget

    @classmethod
    def make_fixtures(cls):
        rng = np.random.default_rng(20261204)
        cls.src = cls.path("tall.h5")
        m, n = cls.SHAPE
        with h5py.File(cls.src, "w") as f:
            d = f.create_dataset("x", shape=cls.SHAPE, dtype="f8",
                                 chunks=(1000, n))
            for r0 in range(0, m, 50000):
                d[r0:r0 + 50000] = rng.standard_normal((50000, n))
            # chunks of 1.6 MB (a twentieth of the budget), 80 MB in all
            f.create_dataset("mid", data=rng.standard_normal((100000, n)),
                             chunks=(2000, n))
            # 2304 x 2304 (42 MB) in 1024 x 1024 chunks (8 MB, edges on
            # both axes), stored raw: matmul tiles read their operands'
            # regions straight from the file, no chunk buffers
            f.create_dataset("sq", data=rng.standard_normal((2304, 2304)),
                             chunks=(1024, 1024))

    def peak(self, *args, budget=BUDGET):
        """Runs chunkctl with args (which give --memory <budget>M)."""
        p = subprocess.run(["/usr/bin/time", "-f", "%M", C.CHUNKCTL] +
                           [str(a) for a in args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        peak = int(p.stderr.strip().splitlines()[-1]) * 1024
        self.assertLess(peak, budget << 20,
                        "peak RSS %.1f MiB over --memory %dM"
                        % (peak / 2**20, budget))
        return p

    def test_tall_svd_stays_under_budget(self):
        out = self.fresh("big.svd.h5")
        p = self.peak("svd", "--quiet", "--json", "--memory",
                      "%dM" % self.BUDGET, self.src + ":/x", "-o", out)
        printed = np.array(json.loads(p.stdout.splitlines()[0])["S"])
        with h5py.File(self.src, "r") as f:
            a = f["x"][()]
        ns = np.linalg.svd(a, compute_uv=False)
        with h5py.File(out, "r") as f:
            s, vt, u = f["S"][()], f["Vt"][()], f["U"][()]
        np.testing.assert_allclose(s, ns, rtol=1e-10, atol=0)
        np.testing.assert_allclose(printed, s, rtol=1e-15, atol=0)
        self.assertEqual(u.shape, self.SHAPE)
        self.assertLessEqual(max_offdiag_identity(u.T @ u), 1e-10)
        self.assertLessEqual(max_offdiag_identity(vt @ vt.T), 1e-10)
        del u
        # U is the streamed factor: A V = U S, row by row
        with h5py.File(out, "r") as f:
            u_part = f["U"][123000:125000]
        np.testing.assert_allclose(u_part * s, a[123000:125000] @ vt.T,
                                   rtol=0, atol=1e-10 * s[0])

    def test_dot_a_at_stays_under_budget(self):
        out = self.fresh("dot.h5")
        pj = self.path("dot.json")
        with open(pj, "w") as f:
            f.write(json.dumps({
                "inputs": {"a": self.src + ":/sq"},
                "steps": [
                    {"name": "at", "op": "transpose", "args": ["a"]},
                    {"name": "b", "op": "add", "args": ["a", "at"]},
                    {"name": "c", "op": "matmul", "args": ["a", "b"]}],
                "outputs": {"c": out + ":/c"}}))
        # C's tiles (at most 2560 on a side) are cut to fit
        self.peak("run", "--quiet", "--memory", "40M", pj, budget=40)
        with h5py.File(self.src, "r") as f:
            a = f["sq"][()]
        want = a @ (a + a.T)
        np.testing.assert_allclose(read(out + ":/c"), want, rtol=0,
                                   atol=1e-12 * np.abs(want).max())

    def test_chunks_a_twentieth_of_the_budget_are_not_refused(self):
        out = self.fresh("mid.svd.h5")
        self.peak("svd", "--quiet", "--no-u", "--memory",
                  "%dM" % self.BUDGET, self.src + ":/mid", "-o", out)
        with h5py.File(self.src, "r") as f:
            ns = np.linalg.svd(f["mid"][()], compute_uv=False)
        np.testing.assert_allclose(read(out + ":/S"), ns, rtol=1e-10,
                                   atol=0)


if __name__ == "__main__":
    C.main()
