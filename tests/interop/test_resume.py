"""Resumable runs (issue 17): `copy --resume`, `run --resume` and the
one-step commands with --resume go on with a run of the same command that
was killed.  A Zarr output's temporary holds a journal (.ck-journal) of
the chunks (or, sharded, the shards) written whole, with their stored
bytes' length and checksum; the resumed run moves those that still check
into its own temporary and computes the rest.  The output is byte for
byte what an uninterrupted run writes (the history attribute aside, which
records the command).  An HDF5 output's temporary has its journal beside
it (.ck-jnl), which also records where each chunk's bytes start in the
file; a resumed run copies the chunks that still check into its own file
with H5Dwrite_chunk, so every stored chunk is byte for byte an
uninterrupted run's (where chunks sit in the file differs: HDF5 places
them in the order they are written, which threads decide).  A journal of
another command or input is refused with exit 2.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(1717)
# gzip:9 of random doubles on one thread: about a second, so that a kill
# lands while chunks are being written.
BIG = RNG.standard_normal((1000, 1000))
SMALL = RNG.standard_normal((30, 20))

KEPT = re.compile(r"^chunkctl: (\S+): (\d+) of (\d+) (chunks|shards) kept "
                  r"from the killed run, the rest computed$", re.M)


def journal_units(tmp):
    """Whole entry lines in a temporary's journal (inside a Zarr
    temporary, beside an HDF5 one)."""
    path = (tmp + ".ck-jnl" if os.path.isfile(tmp)
            else os.path.join(tmp, ".ck-journal"))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return 0
    return len(re.findall(rb"^[0-9a-f]{8} u .*\n", data, re.M))


class Resume(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("big.h5"), "w") as f:
            f.create_dataset("data", data=BIG, chunks=(50, 1000))
        with h5py.File(cls.path("small.h5"), "w") as f:
            f.create_dataset("data", data=SMALL, chunks=(7, 20))

    def setUp(self):
        self.dir = self.path("t-" + self._testMethodName)
        os.makedirs(self.dir)

    def out(self, name):
        return os.path.join(self.dir, name)

    def kill_when_journaled(self, args, target, want=3):
        """Starts chunkctl ARGS, and kill -9s it once its temporary of
        target records 'want' units.  Returns the units seen then."""
        p = subprocess.Popen([C.CHUNKCTL] + [str(a) for a in args],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        pattern = os.path.join(os.path.dirname(target), ".%s.ck-tmp-%d-*@*" %
                               (os.path.basename(target), p.pid))
        deadline = time.time() + 60
        try:
            while time.time() < deadline and p.poll() is None:
                for t in glob.glob(pattern):
                    n = journal_units(t)
                    if n >= want:
                        os.kill(p.pid, signal.SIGKILL)
                        p.wait()
                        return n
                time.sleep(0.002)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.fail("%s ended before it could be killed" % args[0])

    def stale(self, target):
        return glob.glob(os.path.join(os.path.dirname(target), ".%s.ck-tmp-*"
                                      % os.path.basename(target)))

    def assertResumed(self, stderr, seen, what="chunks"):
        m = KEPT.search(stderr)
        self.assertTrue(m, "no 'kept' note in: %s" % stderr)
        kept, total = int(m.group(2)), int(m.group(3))
        self.assertEqual(m.group(4), what)
        # Everything recorded before the kill is kept, not recomputed.
        self.assertGreaterEqual(kept, seen)
        self.assertLess(kept, total)
        return kept

    def assertSameTree(self, got, want):
        a, b = C.zarr_files(got), C.zarr_files(want)
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            self.assertEqual(a[k], b[k], "file %s differs" % k)

    # -- copy --

    def copy_resumed(self, name, opts, what="chunks", want=3):
        src = self.path("big.h5")
        ref, out = self.out("ref-" + name), self.out(name)
        C.run("copy", "--quiet", *opts, src, ref)
        seen = self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "1"] + opts + [src, out], out,
            want)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(len(self.stale(out)), 1)
        p = C.run("copy", "--resume", "--threads", "2", *opts, src, out)
        self.assertResumed(p.stderr, seen, what)
        self.assertSameTree(out, ref)
        self.assertEqual(self.stale(out), [])
        return p

    def test_copy_zarr_v2(self):
        self.copy_resumed("v2.zarr", ["--chunks", "50,500", "--compress",
                                      "gzip:9"])

    def test_copy_zarr_v3(self):
        self.copy_resumed("v3.zarr", ["--zarr-format", "3", "--chunks",
                                      "50,500", "--compress", "gzip:9"])

    def test_copy_zarr_v3_sharded(self):
        # shards are journaled when whole; a shard cut short is redone
        self.copy_resumed("sh.zarr", ["--zarr-format", "3", "--chunks",
                                      "50,500", "--shards", "100,1000",
                                      "--compress", "gzip:9"], "shards", 2)

    def test_torn_chunk_is_recomputed(self):
        """A chunk whose stored bytes no longer match the journal (a write
        cut short, a file changed) is computed again."""
        src, opts = self.path("big.h5"), ["--chunks", "50,500", "--compress",
                                          "gzip:9"]
        ref, out = self.out("ref.zarr"), self.out("o.zarr")
        C.run("copy", "--quiet", *opts, src, ref)
        seen = self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "1"] + opts + [src, out], out, 4)
        tmp = self.stale(out)[0]
        with open(os.path.join(tmp, "0.0"), "r+b") as f:
            f.truncate(10)
        p = C.run("copy", "--resume", *opts, src, out)
        kept = self.assertResumed(p.stderr, seen - 1)
        self.assertSameTree(out, ref)
        self.assertGreaterEqual(kept, seen - 1)

    def assertSameChunks(self, got, want, names=("data",)):
        """Every stored chunk of each dataset byte for byte the same (and
        the same filter mask), as h5py reads them raw."""
        with h5py.File(got, "r") as a, h5py.File(want, "r") as b:
            for name in names:
                x, y = a[name], b[name]
                self.assertEqual(x.id.get_num_chunks(), y.id.get_num_chunks())
                for i in range(y.id.get_num_chunks()):
                    off = y.id.get_chunk_info(i).chunk_offset
                    self.assertEqual(x.id.read_direct_chunk(off),
                                     y.id.read_direct_chunk(off))
                np.testing.assert_array_equal(x[...], y[...])

    def test_copy_hdf5(self):
        src, opts = self.path("big.h5"), ["--chunks", "50,500", "--compress",
                                          "gzip:9"]
        ref, out = self.out("ref.h5"), self.out("o.h5")
        C.run("copy", "--quiet", *opts, src, ref)
        seen = self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "1"] + opts + [src, out], out, 4)
        self.assertFalse(os.path.exists(out))
        # the temporary and its journal
        self.assertEqual(len(self.stale(out)), 2)
        p = C.run("copy", "--resume", "--threads", "2", *opts, src, out)
        self.assertResumed(p.stderr, seen)
        self.assertEqual(self.stale(out), [])
        self.assertSameChunks(out, ref)

    def test_hdf5_torn_chunk_is_recomputed(self):
        """A chunk whose bytes in the killed file no longer match the
        journal is computed again, not copied."""
        src, opts = self.path("big.h5"), ["--chunks", "50,500", "--compress",
                                          "gzip:9"]
        ref, out = self.out("ref.h5"), self.out("o.h5")
        C.run("copy", "--quiet", *opts, src, ref)
        seen = self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "1"] + opts + [src, out], out, 4)
        tmp = [t for t in self.stale(out) if not t.endswith(".ck-jnl")][0]
        with open(tmp + ".ck-jnl", "rb") as f:
            first = re.findall(rb"^[0-9a-f]{8} u \d+ (\d+) \S+ @(\d+) ",
                               f.read(), re.M)[0]
        with open(tmp, "r+b") as f:  # scribble over the first chunk
            f.seek(int(first[1]) + int(first[0]) // 2)
            f.write(b"\xff" * 16)
        p = C.run("copy", "--resume", *opts, src, out)
        kept = self.assertResumed(p.stderr, 0)
        self.assertGreaterEqual(kept, seen - 1)
        self.assertSameChunks(out, ref)

    def test_hdf5_journal_names_where_chunks_are(self):
        """Each journal line's offset and length in the killed temporary
        hold that chunk's stored bytes, as h5py reads them from an
        uninterrupted run's file (the journal takes them from where the
        file ended before each write, checked, not from HDF5's index);
        chunks under 2 KiB too, which HDF5 once suballocated."""
        src = self.path("big.h5")
        for opts in (["--chunks", "50,500", "--compress", "gzip:9"],
                     ["--chunks", "5,50", "--compress", "none"]):
            with self.subTest(opts=opts):
                tag = opts[1].replace(",", "x")
                ref = self.out("ref-%s.h5" % tag)
                out = self.out("o-%s.h5" % tag)
                C.run("copy", "--quiet", *opts, src, ref)
                self.kill_when_journaled(
                    ["copy", "--quiet", "--threads", "2"] + opts + [src, out],
                    out, 30)
                tmp = [t for t in self.stale(out)
                       if not t.endswith(".ck-jnl")][0]
                with open(tmp + ".ck-jnl", "rb") as f:
                    lines = re.findall(
                        rb"^[0-9a-f]{8} u (\d+) (\d+) \S+ @(\d+) ",
                        f.read(), re.M)
                self.assertGreaterEqual(len(lines), 30)
                rows, cols = (int(v) for v in opts[1].split(","))
                ncol = -(-1000 // cols)
                with open(tmp, "rb") as f, h5py.File(ref, "r") as r:
                    d = r["data"]
                    for u, n, off in lines:
                        u = int(u)
                        at = ((u // ncol) * rows, (u % ncol) * cols)
                        f.seek(int(off))
                        self.assertEqual(f.read(int(n)),
                                         d.id.read_direct_chunk(at)[1],
                                         "unit %d" % u)

    def test_nothing_kept_says_so(self):
        """A resume that can keep none of the recorded chunks (the killed
        file cut short) says 0 were kept; it once said nothing."""
        src, opts = self.path("big.h5"), ["--chunks", "50,500", "--compress",
                                          "gzip:9"]
        ref, out = self.out("ref.h5"), self.out("o.h5")
        C.run("copy", "--quiet", *opts, src, ref)
        self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "1"] + opts + [src, out], out, 4)
        tmp = [t for t in self.stale(out) if not t.endswith(".ck-jnl")][0]
        os.truncate(tmp, 4096)
        p = C.run("copy", "--resume", *opts, src, out)
        m = KEPT.search(p.stderr)
        self.assertTrue(m, "no 'kept' note in: %s" % p.stderr)
        self.assertEqual((m.group(2), m.group(3)), ("0", "40"))
        self.assertSameChunks(out, ref)

    def test_hdf5_run_resumed(self):
        """A pipeline writing two datasets to one HDF5 file."""
        doc = {"inputs": {"x": self.path("big.h5") + ":/data"},
               "steps": [{"name": "e", "op": "exp", "args": ["x"]},
                         {"name": "m", "op": "multiply", "args": ["x", 3.0]}],
               "outputs": {"e": {"path": self.out("o.h5") + ":/e",
                                 "compress": "gzip:9"},
                           "m": {"path": self.out("o.h5") + ":/m",
                                 "compress": "gzip:9"}}}
        pipe = self.out("p.json")
        with open(pipe, "w") as f:
            json.dump(doc, f)
        ref_doc = json.loads(json.dumps(doc))
        for k in ("e", "m"):
            ref_doc["outputs"][k]["path"] = (self.out("ref.h5") + ":/" + k)
        with open(self.out("ref.json"), "w") as f:
            json.dump(ref_doc, f)
        C.run("run", "--quiet", self.out("ref.json"))
        out = self.out("o.h5")
        self.kill_when_journaled(["run", "--quiet", "--threads", "1", pipe],
                                 out, 4)
        p = C.run("run", "--resume", pipe)
        self.assertIn("kept from the killed run", p.stderr)
        self.assertEqual(self.stale(out), [])
        self.assertSameChunks(out, self.out("ref.h5"), ("e", "m"))

    def test_nothing_to_resume_just_runs(self):
        out, ref = self.out("o.zarr"), self.out("ref.zarr")
        C.run("copy", "--quiet", self.path("small.h5"), ref)
        p = C.run("copy", "--resume", self.path("small.h5"), out)
        self.assertIn("nothing to resume; starting afresh", p.stderr)
        self.assertSameTree(out, ref)
        self.assertFalse(os.path.exists(os.path.join(out, ".ck-journal")))

    # -- refusals --

    def test_other_options_refused(self):
        src = self.path("big.h5")
        out = self.out("o.zarr")
        opts = ["--chunks", "50,500", "--compress", "gzip:9"]
        self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "1"] + opts + [src, out], out)
        p = C.run("copy", "--resume", "--chunks", "50,500", "--compress",
                  "gzip:1", src, out, expect=2)
        self.assertCleanError(p, 2, "cannot resume: the killed run had "
                              "another pipeline or other options")
        self.assertEqual(len(self.stale(out)), 1)  # left for a later run
        # the input changed
        st = os.stat(src)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
        try:
            p = C.run("copy", "--resume", *opts, src, out, expect=2)
            self.assertCleanError(p, 2, "cannot resume: input %s changed"
                                  % src)
        finally:
            os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        # without --resume the stale temporary goes, as before
        C.run("copy", "--quiet", *opts, src, out)
        self.assertEqual(self.stale(out), [])

    def test_zarr_input_changed_below_its_root_refused(self):
        """A Zarr input is every file below it: an array in a group and
        nested chunk keys change nothing at the store's root, yet a chunk
        rewritten there once resumed silently into a mix of old and new."""
        src = self.out("in.zarr")
        g = zarr.open_group(src, "w")
        g.create_dataset("x", data=BIG, chunks=(50, 1000),
                         dimension_separator="/")
        out = self.out("o.zarr")
        opts = ["--compress", "gzip:9"]
        args = ["copy", "--quiet", "--threads", "1"] + opts + \
            [src + ":/x", out]
        seen = self.kill_when_journaled(args, out)
        # unchanged, it resumes
        p = C.run("copy", "--resume", *opts, src + ":/x", out)
        self.assertResumed(p.stderr, seen)
        shutil.rmtree(out)
        self.kill_when_journaled(args, out)
        zarr.open_group(src, "r+")["x"][0:50] = 123.0
        p = C.run("copy", "--resume", *opts, src + ":/x", out, expect=2)
        self.assertCleanError(p, 2, "cannot resume: input %s changed" % src)
        self.assertEqual(len(self.stale(out)), 1)

    def test_other_version_refused(self):
        src, out = self.path("big.h5"), self.out("o.zarr")
        opts = ["--chunks", "50,500", "--compress", "gzip:9"]
        self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "1"] + opts + [src, out], out)
        j = os.path.join(self.stale(out)[0], ".ck-journal")
        with open(j, "rb") as f:
            data = f.read()
        data = re.sub(rb"^version \S+$", b"version 0.0.1", data, count=1,
                      flags=re.M)
        with open(j, "wb") as f:
            f.write(data)
        p = C.run("copy", "--resume", *opts, src, out, expect=2)
        self.assertCleanError(p, 2, "cannot resume: the killed run was "
                              "chunkctl 0.0.1")

    # -- run and the one-step commands --

    def pipeline(self, out, factor=2):
        doc = {"inputs": {"x": self.path("big.h5") + ":/data"},
               "steps": [{"name": "y", "op": "multiply",
                          "args": ["x", factor]}],
               "outputs": {"y": out}}
        path = os.path.join(self.dir, "p%s.json" % factor)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_run_resumed(self):
        ref, out = self.out("ref.zarr"), self.out("o.zarr")
        opts = ["--compress", "gzip:9"]
        pj = self.pipeline(out)
        # the reference at the same path: outputs record their pipeline
        C.run("run", "--quiet", *opts, pj)
        os.rename(out, ref)
        seen = self.kill_when_journaled(
            ["run", "--quiet", "--threads", "1"] + opts + [pj], out)
        p = C.run("run", "--resume", "--threads", "2", *opts, pj)
        self.assertResumed(p.stderr, seen)
        self.assertSameTree(out, ref)
        self.assertEqual(self.stale(out), [])

    def test_run_other_pipeline_refused_and_onestep(self):
        out = self.out("o.zarr")
        opts = ["--compress", "gzip:9"]
        seen = self.kill_when_journaled(
            ["run", "--quiet", "--threads", "1"] + opts +
            [self.pipeline(out)], out)
        self.assertGreater(seen, 0)
        # another pipeline to the same output
        p = C.run("run", "--resume", *opts, self.pipeline(out, 3), expect=2)
        self.assertCleanError(p, 2, "cannot resume")
        # the one-step form takes --resume (and is another command)
        p = C.run("multiply", self.path("big.h5") + ":/data", 2, "-o", out,
                  "--resume", expect=2)
        self.assertCleanError(p, 2, "cannot resume")
        # with nothing to resume it just runs
        o2 = self.out("o2.zarr")
        p = C.run("multiply", self.path("small.h5") + ":/data", 2, "-o", o2,
                  "--resume")
        self.assertIn("nothing to resume", p.stderr)

    def test_run_with_a_changed_kernel_refused(self):
        # the pipeline names its kernel's file but does not hold its code:
        # a kernel edited between the kill and --resume mixed the old
        # code's chunks with the new's, exit 0
        out = self.out("k.zarr")
        src = os.path.join(self.dir, "scale.c")
        code = ("#include \"chunkctl_kernel.h\"\n"
                "int scale(chunkctl_array *o, const chunkctl_array *a, int na,"
                " const double *p, int np)\n{\n"
                "    const %s *x = a[0].data; %s *z = o->data;\n"
                "    int64_t n = 1;\n"
                "    for (int d = 0; d < o->ndim; d++) n *= o->shape[d];\n"
                "    for (int64_t i = 0; i < n; i++) z[i] = x[i] * %s;\n"
                "    return 0;\n}\n")
        with h5py.File(self.path("big.h5"), "r") as f:
            ctype = {"float64": "double", "float32": "float",
                     "int32": "int32_t", "int64": "int64_t"}[
                         str(f["data"].dtype)]
        with open(src, "w") as f:
            f.write(code % (ctype, ctype, "2"))
        doc = {"inputs": {"x": self.path("big.h5") + ":/data"},
               "steps": [{"name": "y", "op": "kernel", "args": ["x"],
                          "source": "scale.c", "entry": "scale"}],
               "outputs": {"y": out}}
        pj = os.path.join(self.dir, "pk.json")
        with open(pj, "w") as f:
            json.dump(doc, f)
        opts = ["--compress", "gzip:9"]
        seen = self.kill_when_journaled(
            ["run", "--quiet", "--threads", "1"] + opts + [pj], out)
        self.assertGreater(seen, 0)
        with open(src, "w") as f:
            f.write(code % (ctype, ctype, "3"))
        p = C.run("run", "--resume", *opts, pj, expect=2)
        self.assertCleanError(p, 2, "cannot resume")
        # the same kernel resumes
        with open(src, "w") as f:
            f.write(code % (ctype, ctype, "2"))
        p = C.run("run", "--resume", *opts, pj)
        self.assertIn("kept", p.stderr)

    def test_hdf5_resumed_twice_keeps_what_it_took(self):
        """A resumed run recorded the chunks it took over at the killed
        file's offsets, not its own, so resuming it in turn recomputed
        them (30 units recorded, 22 kept)."""
        src, opts = self.path("big.h5"), ["--chunks", "50,500", "--compress",
                                          "gzip:9"]
        ref, out = self.out("ref.h5"), self.out("o.h5")
        C.run("copy", "--quiet", *opts, src, ref)
        # the first run's chunks in their order of finishing on two
        # threads; the resumed one takes them over in chunk order, so
        # they sit elsewhere in its file
        seen = self.kill_when_journaled(
            ["copy", "--quiet", "--threads", "2"] + opts + [src, out], out, 6)
        seen2 = self.kill_when_journaled(
            ["copy", "--resume", "--quiet", "--threads", "1"] + opts +
            [src, out], out, seen + 3)
        p = C.run("copy", "--resume", "--threads", "2", *opts, src, out)
        self.assertResumed(p.stderr, seen2)
        self.assertSameChunks(out, ref)


if __name__ == "__main__":
    C.main()
