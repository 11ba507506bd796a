"""Concurrency (issue 17): several chunkctl processes writing the same
target at the same moment.  Without --force exactly one succeeds; each
other one exits 1 with one line saying the target exists (it was there
when it started) or was created meanwhile (it appeared while it ran: the
commit's rename never replaces what it did not move aside itself,
RENAME_NOREPLACE), and removes its temporary.  With --force each may
succeed, one after the other (the last wins).  Either way the target is
one run's whole output, equal to the input, and no temporary is left.
"""
import os
import re
import shutil
import subprocess
import threading

import _common as C
from _common import h5py, zarr

# Fewer under sanitizers (CI's second pass), where each run is slower.
REPEATS = 4 if os.environ.get("CK_SANITIZE") else 10
ONE_LINE = re.compile(
    r"^chunkctl: \S+ (exists|was created meanwhile by another process) "
    r"\(use --force to overwrite it\)\n$")


class Concurrency(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        # Edge chunks on both axes; big enough that the racers overlap
        # (tens of milliseconds each), small enough to repeat.
        C.gen(cls.path("in.h5:/x"), "--shape", "500,400", "--chunks",
              "128,112", "--seed", "17")
        with h5py.File(cls.path("in.h5"), "r") as f:
            cls.want = f["x"][...]
        cls.outcomes = {}

    @classmethod
    def tearDownClass(cls):
        # Which check turned the losers away: at the start (exists) or at
        # the commit (created meanwhile).
        print("\nconcurrency outcomes: " + ", ".join(
            "%s %s" % (k, v) for k, v in sorted(cls.outcomes.items())))
        super().tearDownClass()

    def race(self, n, target, *opts):
        """Starts n copies of in.h5:/x to target at the same moment;
        returns [(exit status, stderr)]."""
        argv = [C.CHUNKCTL, "copy", "--quiet", "--threads", "1"] + \
            list(opts) + [self.path("in.h5:/x"), target]
        barrier = threading.Barrier(n)
        res = [None] * n

        def one(i):
            barrier.wait()
            p = subprocess.run(argv, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               timeout=C.TIMEOUT)
            res[i] = (p.returncode, p.stderr)

        ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return res

    def check_output(self, target, what):
        if target.endswith(".h5"):
            with h5py.File(target, "r") as f:
                self.assertEqual(list(f), ["x"], what)
                got = f["x"][...]
        else:
            got = zarr.open(target, mode="r")[...]
        self.assertSameArray(got, self.want, what)

    def check_clean(self, d, name, what):
        left = sorted(os.listdir(d))
        self.assertEqual(left, [name], what + ": left %s" % left)

    def run_races(self, n, ext, force):
        d = self.fresh("r-%d-%s-%d" % (n, ext, force))
        os.makedirs(d)
        name = "out." + ext
        target = os.path.join(d, name)
        for rep in range(REPEATS):
            what = "%d racers, .%s, %s, repeat %d" % (
                n, ext, "--force" if force else "no --force", rep)
            if not force or rep % 2 == 0:
                # --force: every other repeat, over an existing output.
                if os.path.isdir(target):
                    shutil.rmtree(target)
                elif os.path.exists(target):
                    os.remove(target)
            res = self.race(n, target, *(["--force"] if force else []))
            codes = [r[0] for r in res]
            if force:
                self.assertEqual(codes, [0] * n,
                                 "%s: %s" % (what, [r[1] for r in res]))
            else:
                self.assertEqual(codes.count(0), 1, "%s: %s" % (what, res))
                for code, err in res:
                    if code == 0:
                        self.assertEqual(err, "", what)
                        continue
                    self.assertEqual(code, 1, what)
                    m = ONE_LINE.match(err)
                    self.assertTrue(m, "%s: stderr %r" % (what, err))
                    k = "%s (%s)" % (m.group(1), ext)
                    self.outcomes[k] = self.outcomes.get(k, 0) + 1
            self.check_output(target, what)
            self.check_clean(d, name, what)

    def test_two_h5(self):
        self.run_races(2, "h5", False)

    def test_two_zarr(self):
        self.run_races(2, "zarr", False)

    def test_four_h5(self):
        self.run_races(4, "h5", False)

    def test_four_zarr(self):
        self.run_races(4, "zarr", False)

    def test_force_h5(self):
        self.run_races(2, "h5", True)
        self.run_races(4, "h5", True)

    def test_force_zarr(self):
        # A Zarr store is a directory, which rename() cannot replace:
        # each forced commit moves the one there aside first.
        self.run_races(2, "zarr", True)
        self.run_races(4, "zarr", True)


if __name__ == "__main__":
    C.unittest.main(verbosity=2)
