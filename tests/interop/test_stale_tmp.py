"""Stale temporaries (issue 17): an output is written under
.NAME.ck-tmp-PID-START@HOST beside its target, naming its owner (pid,
start time from /proc/PID/stat field 22, host).  A run killed with SIGKILL
leaves it behind; the next run writing the same target removes it with one
line on stderr, and never removes one whose owner is alive, whose owner's
start time cannot be told, or that belongs to another host.
"""
import glob
import os
import re
import signal
import socket
import subprocess
import time
import unittest

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(17)
# Large enough that a gzip:9 copy on one thread takes a good part of a
# second, so that a kill lands while the temporary is being written.
BIG = RNG.standard_normal((1200, 1200))
SMALL = RNG.standard_normal((30, 20))

STALE = re.compile(
    r"^chunkctl: removed a stale temporary (\S+) \(pid (\d+) on (\S+), "
    r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d, is gone\)$")


def start_time(pid):
    """Field 22 of /proc/PID/stat (counted after the command's ')')."""
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    return int(s[s.rindex(")") + 2:].split()[19])


def host():
    """This host's name as chunkctl writes it into temporary names."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())


def dead_owner():
    """(pid, start) of a process that has ended."""
    p = subprocess.Popen(["true"])
    # The stat file exists until the process is reaped.
    for _ in range(200):
        try:
            st = start_time(p.pid)
            break
        except (OSError, ValueError, IndexError):
            time.sleep(0.01)
    p.wait()
    return p.pid, st


def read_back(path):
    if path.endswith(".zarr"):
        return zarr.open_array(path, mode="r")[...]
    with h5py.File(path, "r") as f:
        return f["data"][...]


class StaleTemporaries(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("big.h5"), "w") as f:
            f.create_dataset("data", data=BIG, chunks=(100, 1200))
        with h5py.File(cls.path("small.h5"), "w") as f:
            f.create_dataset("data", data=SMALL, chunks=(7, 20))

    def setUp(self):
        self.dir = self.path("t-" + self._testMethodName)
        os.makedirs(self.dir)

    def entries(self):
        return sorted(os.listdir(self.dir))

    def fake(self, target, pid, start, hostname, suffix=""):
        """A temporary of target as chunkctl names it; a directory for a
        Zarr target, a file holding a few bytes otherwise."""
        name = ".%s.ck-tmp-%d-%d@%s%s" % (target, pid, start, hostname,
                                          suffix)
        p = os.path.join(self.dir, name)
        if target.endswith(".zarr") and not suffix:
            os.makedirs(p)
            with open(os.path.join(p, "0.0"), "wb") as f:
                f.write(b"half a chunk")
        else:
            with open(p, "wb") as f:
                f.write(b"not a whole HDF5 file")
        return p

    def copy(self, target, *opts, src="small.h5", expect=0):
        """chunkctl copy without --quiet (the notes are what is tested);
        its stderr lines."""
        p = C.run("copy", *opts, self.path(src),
                  os.path.join(self.dir, target), expect=expect)
        return p.stderr.splitlines()

    # -- a real kill -9 --

    def kill_mid_copy(self, target):
        out = os.path.join(self.dir, target)
        p = subprocess.Popen(
            [C.CHUNKCTL, "copy", "--quiet", "--threads", "1", "--compress",
             "gzip:9", self.path("big.h5"), out],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        pattern = os.path.join(self.dir, ".%s.ck-tmp-%d-*" % (target, p.pid))
        tmp = None
        deadline = time.time() + 30
        # Mid-run: the temporary exists and holds some chunks.
        while time.time() < deadline and p.poll() is None:
            # (an HDF5 temporary has its resume journal beside it)
            found = [f for f in glob.glob(pattern)
                     if not f.endswith(".ck-jnl")]
            if found:
                tmp = found[0]
                done = (len(os.listdir(tmp)) > 2 if os.path.isdir(tmp)
                        else os.path.getsize(tmp) > 200000)
                if done:
                    break
            time.sleep(0.01)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stderr.close()
        self.assertIsNotNone(tmp, "no temporary %s appeared" % pattern)
        self.assertEqual(p.returncode, -signal.SIGKILL,
                         "the copy ended before the kill: %s" % self.entries())
        self.assertTrue(os.path.exists(tmp), "kill -9 removed %s?" % tmp)
        self.assertFalse(os.path.exists(out))
        return p.pid, tmp

    def check_kill_then_rerun(self, target):
        pid, tmp = self.kill_mid_copy(target)
        lines = self.copy(target, src="big.h5")
        self.assertEqual(len(lines), 1, lines)
        m = STALE.match(lines[0])
        self.assertIsNotNone(m, lines[0])
        self.assertEqual(m.group(1), tmp)
        self.assertEqual(int(m.group(2)), pid)
        self.assertEqual(m.group(3), host())
        self.assertEqual(self.entries(), [target])
        self.assertSameArray(read_back(os.path.join(self.dir, target)), BIG)

    def test_kill9_hdf5_then_rerun_removes_it(self):
        self.check_kill_then_rerun("out.h5")

    def test_kill9_zarr_then_rerun_removes_it(self):
        self.check_kill_then_rerun("out.zarr")

    # -- owners alive, gone, elsewhere --

    def test_live_owner_is_left_alone(self):
        sleeper = subprocess.Popen(["sleep", "60"])
        try:
            st = start_time(sleeper.pid)
            h5 = self.fake("out.h5", sleeper.pid, st, host())
            zr = self.fake("out.zarr", sleeper.pid, st, host())
            self.assertEqual(self.copy("out.h5"), [])
            self.assertEqual(self.copy("out.zarr"), [])
            self.assertTrue(os.path.isfile(h5))
            self.assertTrue(os.path.isdir(zr))
            # this test process is alive too, with its own start time
            me = self.fake("x.h5", os.getpid(), start_time(os.getpid()),
                           host())
            self.assertEqual(self.copy("x.h5"), [])
            self.assertTrue(os.path.exists(me))
        finally:
            sleeper.kill()
            sleeper.wait()
        self.assertSameArray(read_back(os.path.join(self.dir, "out.h5")),
                             SMALL)
        self.assertSameArray(read_back(os.path.join(self.dir, "out.zarr")),
                             SMALL)

    def test_dead_owner_is_removed(self):
        pid, st = dead_owner()
        for target in ("out.h5", "out.zarr"):
            tmp = self.fake(target, pid, st, host())
            lines = self.copy(target)
            self.assertEqual(len(lines), 1, lines)
            m = STALE.match(lines[0])
            self.assertIsNotNone(m, lines[0])
            self.assertEqual((m.group(1), int(m.group(2))), (tmp, pid))
            self.assertFalse(os.path.exists(tmp))
        self.assertEqual(self.entries(), ["out.h5", "out.zarr"])

    def test_reused_pid_is_not_the_owner(self):
        # This process is alive, but started at another time than the
        # name says: its pid was reused.
        tmp = self.fake("out.h5", os.getpid(), start_time(os.getpid()) + 1,
                        host())
        lines = self.copy("out.h5")
        self.assertEqual(len(lines), 1, lines)
        self.assertRegex(lines[0], STALE)
        self.assertFalse(os.path.exists(tmp))

    def test_other_host_is_left_alone(self):
        pid, st = dead_owner()
        other = self.fake("out.h5", pid, st, "not-" + host() + ".example")
        self.assertEqual(self.copy("out.h5"), [])
        self.assertTrue(os.path.exists(other))

    def test_quiet_removes_without_a_word(self):
        pid, st = dead_owner()
        tmp = self.fake("out.zarr", pid, st, host())
        self.assertEqual(self.copy("out.zarr", "--quiet"), [])
        self.assertFalse(os.path.exists(tmp))

    def test_only_the_same_targets_temporaries(self):
        pid, st = dead_owner()
        other = self.fake("other.h5", pid, st, host())
        prefix = self.fake("out.h5x", pid, st, host())
        self.assertEqual(self.copy("out.h5"), [])
        self.assertTrue(os.path.exists(other))
        self.assertTrue(os.path.exists(prefix))

    def test_older_name_gets_a_note_and_stays(self):
        pid, _ = dead_owner()
        old = os.path.join(self.dir, ".out.h5.ck-tmp-%d" % pid)
        with open(old, "wb") as f:
            f.write(b"x")
        lines = self.copy("out.h5")
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(old, lines[0])
        self.assertIn("pid %d" % pid, lines[0])
        self.assertTrue(os.path.exists(old))

    def test_output_moved_aside_is_put_back(self):
        # A run with --force killed between moving the old output aside
        # and renaming its temporary: the target is missing.
        pid, st = dead_owner()
        aside = os.path.join(
            self.dir, ".out.h5.ck-tmp-%d-%d@%s.ck-old" % (pid, st, host()))
        C.copy(self.path("big.h5"), aside + ".h5")
        os.rename(aside + ".h5", aside)
        newer = self.fake("out.h5", pid, st, host())
        p = C.run("copy", self.path("small.h5"),
                  os.path.join(self.dir, "out.h5"), expect=1)
        self.assertEqual(self.entries(), ["out.h5"])
        self.assertFalse(os.path.exists(newer))
        self.assertSameArray(read_back(os.path.join(self.dir, "out.h5")),
                             BIG)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 3, lines)
        self.assertIn("put back %s" % os.path.join(self.dir, "out.h5"),
                      p.stderr)
        self.assertRegex(p.stderr, STALE.pattern[1:-1])
        self.assertTrue(lines[-1].endswith(
            "out.h5 exists (use --force to overwrite it)"), lines)

    def test_run_and_gen_clean_up_too(self):
        pid, st = dead_owner()
        tmp = self.fake("g.h5", pid, st, host())
        p = C.run("gen", "--shape", "10,10", os.path.join(self.dir, "g.h5"))
        self.assertRegex(p.stderr.strip(), STALE)
        self.assertFalse(os.path.exists(tmp))
        tmp = self.fake("r.zarr", pid, st, host())
        pipe = os.path.join(self.dir, "p.json")
        with open(pipe, "w") as f:
            f.write('{"inputs": {"x": "%s"}, "steps": [{"name": "y", '
                    '"op": "add", "args": ["x", 1.0]}], "outputs": '
                    '{"y": "%s"}}' % (self.path("small.h5"),
                                      os.path.join(self.dir, "r.zarr")))
        p = C.run("run", "--threads", "2", pipe)
        self.assertTrue(any(STALE.match(x) for x in p.stderr.splitlines()),
                        p.stderr)
        self.assertFalse(os.path.exists(tmp))
        self.assertSameArray(read_back(os.path.join(self.dir, "r.zarr")),
                             SMALL + 1.0)


if __name__ == "__main__":
    unittest.main()
