"""Choosing a backend (issue 11): --backend auto|cpu|cuda on the commands
that compute and "backend" in a pipeline file; auto takes the CPU where
there is no GPU; cuda without a usable device is one clean line and exit
1; `plan` and --verbose say where each step runs; `devices` lists GPUs or
says why there are none.  Results under auto are NumPy's.

On a machine with a GPU (the GPU suite's) the no-device checks are skipped
with a visible SKIP; everything else holds on both.
"""
import json
import os
import re
import unittest

import _common as C
from _common import np, h5py

RNG = np.random.default_rng(20261124)
MODULE = os.path.join(os.path.dirname(C.CHUNKCTL), "libchunkctl-cuda.so")
NO_CUDA = re.compile(r"^chunkctl: (\w+: )?no CUDA (device|backend): .+; "
                     r"use --backend cpu$")


def has_device():
    return C.run("devices", expect=None).returncode == 0


class Backend(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        cls.x = RNG.normal(size=(300, 7))
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("x", data=cls.x, chunks=(64, 7))
        cls.gpu = has_device()

    def pipeline(self, name, backend=None, out=None):
        doc = {"inputs": {"x": self.path("in.h5") + ":/x"},
               "steps": [{"name": "y", "op": "add", "args": ["x", 1]},
                         {"name": "s", "op": "sum", "args": ["y"],
                          "axis": [0]}],
               "outputs": {"s": out} if out else {}, "print": ["s"]}
        if backend is not None:
            doc["backend"] = backend
        path = self.fresh(name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_auto_and_cpu_give_numpys_results(self):
        x = self.path("in.h5") + ":/x"
        want = (self.x + 1).sum(axis=0)
        for args in [(), ("--backend", "auto"), ("--backend", "cpu")]:
            with self.subTest(args=args):
                p = C.run("reduce", "--quiet", "sum", x, "--axis", "0",
                          "--json", *args)
                got = json.loads(p.stdout)["result"]["values"]
                np.testing.assert_allclose(got, self.x.sum(axis=0),
                                           rtol=1e-12)
                for b in ["auto", "cpu"]:
                    out = self.fresh("o-%s.h5" % b)
                    C.run("run", "--quiet", self.pipeline("p.json", b,
                                                          out + ":/s"), *args)
                    with h5py.File(out, "r") as f:
                        np.testing.assert_allclose(f["s"][()], want,
                                                   rtol=1e-12)

    def test_cuda_without_a_device_is_one_clean_line(self):
        if self.gpu:
            self.skipTest("SKIP: a CUDA device is present here")
        x = self.path("in.h5") + ":/x"
        out = self.fresh("never.h5")
        for args in [("reduce", "sum", x, "--backend", "cuda"),
                     ("add", x, "1", "-o", out, "--backend", "cuda"),
                     ("svd", x, "-o", out, "--backend", "cuda"),
                     ("run", self.pipeline("c.json", "cuda", out + ":/s")),
                     ("run", self.pipeline("a.json", "auto", out + ":/s"),
                      "--backend", "cuda")]:
            with self.subTest(args=args[:2]):
                p = C.run(*args, expect=None)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertRegex(p.stderr.strip(), NO_CUDA)
                self.assertEqual(p.stdout, "")
                self.assertFalse(os.path.exists(out))
        p = C.run("devices", expect=1)
        self.assertRegex(p.stderr.strip(), NO_CUDA)
        self.assertIn("devices: ", p.stderr)

    def test_auto_says_why_it_took_the_cpu(self):
        # no op runs on a GPU yet, so auto takes the CPU without looking
        # for one, on any machine
        p = C.run("reduce", "sum", self.path("in.h5") + ":/x", "--verbose")
        np.testing.assert_allclose(float(p.stdout), self.x.sum(), rtol=1e-12)
        self.assertIn("chunkctl: backend: cpu (auto: no step of this "
                      "pipeline runs on a GPU)\n", p.stderr)
        p = C.run("plan", self.pipeline("p.json"))
        first, head = p.stdout.splitlines()[:2]
        self.assertEqual(first, "backend: cpu (auto: no step of this "
                                "pipeline runs on a GPU)")
        self.assertTrue(head.split()[-1] == "on", head)
        rows = p.stdout.splitlines()[2:5]
        self.assertEqual([r.split()[-1] for r in rows], ["host", "cpu", "cpu"])
        # the plan's --backend cpu says only that
        p = C.run("plan", "--backend", "cpu", self.pipeline("p.json"))
        self.assertEqual(p.stdout.splitlines()[0], "backend: cpu")

    def test_plan_under_cuda_shows_the_cpu_fallback(self):
        if not os.path.exists(MODULE):
            p = C.run("plan", "--backend", "cuda", self.pipeline("p.json"),
                      expect=1)
            self.assertRegex(p.stderr.strip(), NO_CUDA)
            return
        p = C.run("plan", "--backend", "cuda", self.pipeline("p.json"))
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "backend: cuda")
        # no op runs on the device yet: every step says it falls back
        self.assertEqual([r.split(None, 1)[0] for r in lines[2:5]],
                         ["x", "y", "s"])
        self.assertTrue(lines[2].endswith(" host"), lines[2])
        self.assertTrue(lines[3].endswith(" cpu (fallback)"), lines[3])
        self.assertTrue(lines[4].endswith(" cpu (fallback)"), lines[4])

    def test_plan_under_cuda_sizes_the_device_linear_algebra(self):
        """Issue 12's planning: with --gpu-memory, plan says how svd would
        use the device (resident, or TSQR blocks of whole chunks) and stops
        with the step's name when it cannot fit."""
        if not os.path.exists(MODULE):
            self.skipTest("SKIP: chunkctl was built without the CUDA module")
        a = RNG.normal(size=(5000, 200))
        with h5py.File(self.path("tall.h5"), "w") as f:
            f.create_dataset("a", data=a, chunks=(500, 200))
        doc = {"inputs": {"a": self.path("tall.h5") + ":/a"},
               "steps": [{"name": "s", "op": "svd", "args": ["a"]}],
               "outputs": {"s.U": self.fresh("u.h5") + ":/u"}}
        path = self.fresh("svd.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        mib = a.nbytes / 2**20  # L, 7.6 MiB
        p = C.run("plan", "--backend", "cuda", "--gpu-memory", "1G", path)
        line = [r for r in p.stdout.splitlines() if r.startswith("device svd")]
        self.assertIn("device memory: 1.0 GiB", p.stdout)
        self.assertEqual(len(line), 1, p.stdout)
        self.assertRegex(line[0], r"^device svd s: resident: ")
        self.assertIn(f"{mib:.1f} MiB up", line[0])
        # a budget below L: two passes (R, then U) of whole 500-row chunks
        p = C.run("plan", "--backend", "cuda", "--gpu-memory", "6M", path)
        line = [r for r in p.stdout.splitlines()
                if r.startswith("device svd")][0]
        m = re.search(r"(\d+) blocks of up to (\d+) rows, 2 in flight; "
                      r"2 passes; device peak ([\d.]+) MiB", line)
        self.assertIsNotNone(m, line)
        blocks, rows, peak = int(m[1]), int(m[2]), float(m[3])
        self.assertEqual(rows % 500, 0)
        self.assertEqual(blocks, -(-5000 // rows))
        self.assertLessEqual(peak, 6.0)
        self.assertIn(f"{2 * mib:.1f} MiB up", line)
        p = C.run("plan", "--backend", "cuda", "--gpu-memory", "256K", path,
                  expect=1)
        self.assertRegex(p.stderr.strip(),
                         r"^chunkctl: svd s: needs [\d.]+ MiB of device "
                         r"memory \(its smallest blocks\), --gpu-memory "
                         r"gives 256\.0 KiB$")
        if not self.gpu:
            p = C.run("plan", "--backend", "cuda", path)
            self.assertIn("device memory: unknown (no CUDA", p.stdout)
            self.assertIn("give --gpu-memory SIZE", p.stdout)

    def test_unverified_device_code_is_off_unless_asked_for(self):
        """The device code no GPU has run yet (linear algebra on cuBLAS and
        cuSOLVER, the kernel launch) is in the CUDA module's table only
        under CHUNKCTL_CUDA_UNVERIFIED=1; plan says where each step's work
        goes either way."""
        if not os.path.exists(MODULE):
            self.skipTest("SKIP: chunkctl was built without the CUDA module")
        with h5py.File(self.path("sq.h5"), "w") as f:
            f.create_dataset("a", data=RNG.normal(size=(500, 40)),
                             chunks=(100, 40))
        doc = {"inputs": {"a": self.path("sq.h5") + ":/a"},
               "steps": [{"name": "s", "op": "svd", "args": ["a"]},
                         {"name": "r", "op": "sqrt", "args": ["a"]}],
               "outputs": {"s.U": self.fresh("su.h5") + ":/u",
                           "r": self.fresh("r.h5") + ":/r"}}
        path = self.fresh("gate.json")
        with open(path, "w") as f:
            json.dump(doc, f)

        def on(env):
            """Each step's 'on' column (the table's last, at the header's
            'on')."""
            p = C.run("plan", "--backend", "cuda", path, env=env)
            lines = p.stdout.splitlines()
            at = lines[1].rindex(" on") + 1
            return {r.split()[0]: r[at:] for r in lines[2:]
                    if not r.startswith(("output", "estimated", "device"))}
        off = on({"CHUNKCTL_CUDA_UNVERIFIED": "0"})
        self.assertEqual(off["s"], "cpu (fallback)")
        self.assertEqual(off["s.U"], "cpu (fallback)")
        gate = on({"CHUNKCTL_CUDA_UNVERIFIED": "1"})
        blas = "cpu, its BLAS and LAPACK calls on cuda"
        self.assertEqual(gate["s"], blas)
        self.assertEqual(gate["s.U"], blas)
        self.assertEqual(gate["s.Vt"], "cpu (fallback)")  # held in memory
        self.assertEqual(gate["r"], "cpu (fallback)")

    def test_bad_names_are_usage_errors(self):
        x = self.path("in.h5") + ":/x"
        p = C.run("reduce", "sum", x, "--backend", "gpu", expect=2)
        self.assertCleanError(p, 2, "unknown backend 'gpu'",
                              "known: auto, cpu, cuda")
        p = C.run("run", self.pipeline("b.json", "gpu"), expect=2)
        self.assertCleanError(p, 2, "b.json", "backend",
                              'expected "auto", "cpu" or "cuda"')
        p = C.run("run", self.pipeline("n.json", 7), expect=2)
        self.assertCleanError(p, 2, "backend", "expected")
        # commands that compute nothing take no --backend
        p = C.run("copy", x, self.fresh("c.h5"), "--backend", "cpu",
                  expect=2)
        self.assertCleanError(p, 2, "copy: unknown or incomplete option",
                              "--backend")
        # --gpu-memory: every command that computes, its one-step ops too
        for cmd in (["reduce", "sum", x], ["add", x, "1"]):
            p = C.run(*cmd, "--gpu-memory", "0", expect=2)
            self.assertCleanError(p, 2, "--gpu-memory '0'",
                                  "expected a size above 0")
            p = C.run(*cmd, "--gpu-memory", "lots", expect=2)
            self.assertCleanError(p, 2, "--gpu-memory", "'lots' is not a "
                                  "size")
        # and under the CPU it changes nothing
        p = C.run("reduce", "sum", x, "--backend", "cpu", "--gpu-memory",
                  "1M")
        self.assertEqual(p.stdout, C.run("reduce", "sum", x, "--backend",
                                         "cpu").stdout)

    def test_a_module_that_does_not_load_is_named(self):
        x = self.path("in.h5") + ":/x"
        empty = self.path("no-module")
        os.makedirs(empty, exist_ok=True)
        p = C.run("reduce", "sum", x, "--backend", "cuda", expect=1,
                  env={"CHUNKCTL_MODULE_DIR": empty})
        self.assertCleanError(p, 1, "no CUDA backend",
                              "built without it", "use --backend cpu")
        bad = self.path("bad-module")
        os.makedirs(bad, exist_ok=True)
        with open(os.path.join(bad, "libchunkctl-cuda.so"), "wb") as f:
            f.write(b"not an ELF file\n" * 64)
        p = C.run("reduce", "sum", x, "--backend", "cuda", expect=1,
                  env={"CHUNKCTL_MODULE_DIR": bad})
        self.assertCleanError(p, 1, "no CUDA backend", "libchunkctl-cuda.so")
        # auto carries on on the CPU, with NumPy's answer
        p = C.run("reduce", "sum", x, env={"CHUNKCTL_MODULE_DIR": bad})
        np.testing.assert_allclose(float(p.stdout), self.x.sum(), rtol=1e-12)


if __name__ == "__main__":
    C.main()
