"""The examples that each one-step command's --help shows (chunkctl OP
--help, from the op table) run as printed, on a data.h5 holding the arrays
they name, and their results agree with NumPy/SciPy on a few of them:
every op that `chunkctl --help` lists has its own examples, and each
example line names its op.
"""
import os
import shlex
import shutil
import unittest

import _common as C
from _common import np, h5py

RNG = np.random.default_rng(1)
ARRAYS = {
    "x": RNG.normal(size=(1000, 600)),
    "x2": RNG.normal(size=(1000, 600)),
    "m": RNG.random((1000, 600)) < 0.01,
    "t": RNG.normal(size=(10, 20, 30)),
    "row": RNG.normal(size=(1, 600)),
    "y": RNG.normal(size=600),
    "idx": np.array([3, 1, 7]),
    "keep": RNG.random(1000) < 0.5,
    "k": RNG.integers(0, 8, size=600),
    "w": RNG.normal(size=(600, 40)),
    "b": (RNG.random(1000) < 0.5).astype(float),
}
ARRAYS["xf"] = ARRAYS["x"].astype(np.float32)
ARRAYS["yf"] = ARRAYS["y"].astype(np.float32)
KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "..", "sample-data", "kernels")


def listed_ops():
    """The op names `chunkctl --help` lists under "pipeline ops"."""
    text = C.run("--help").stdout
    part = text.split("pipeline ops", 1)[1].split("\nArrays", 1)[0]
    ops = []
    for line in part.splitlines()[1:]:
        if not line.strip():
            continue
        if line.startswith(" " * 16):  # a family's members
            ops += line.split()
        elif not line.split()[0].endswith(":"):  # a family's label
            ops.append(line.split()[0])
    return ops


class HelpExamples(C.InteropCase):
    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("data.h5"), "w") as f:
            for name, a in ARRAYS.items():
                f.create_dataset(name, data=a,
                                 chunks=(250, 300) if name == "x" else None)
        for name in ["rowadd.c", "chunkctl_kernel.h"]:
            with open(os.path.join(KERNELS, name)) as src, \
                    open(cls.path(name), "w") as dst:
                dst.write(src.read())

    def examples(self, op):
        text = C.run(op, "--help").stdout
        self.assertIn("\nexamples:\n", text, op)
        lines = text.split("\nexamples:\n", 1)[1].splitlines()
        return [shlex.split(l) for l in lines if l.startswith("  chunkctl ")]

    def run_example(self, argv):
        self.assertEqual(argv[0], "chunkctl")
        if "-o" in argv:  # each example writes a new file
            dst = self.path(argv[argv.index("-o") + 1].split(":")[0])
            shutil.rmtree(dst, ignore_errors=True)
            if os.path.isfile(dst):
                os.remove(dst)
        p = C.subprocess.run([C.CHUNKCTL] + argv[1:] + ["--quiet"],
                             cwd=self.tmp, stdout=C.subprocess.PIPE,
                             stderr=C.subprocess.PIPE, text=True,
                             timeout=C.TIMEOUT)
        self.assertEqual(p.returncode, 0, "%s: %s" % (" ".join(argv),
                                                      p.stderr.strip()))
        if "-o" in argv:
            dst = argv[argv.index("-o") + 1].split(":")[0]
            self.assertTrue(os.path.exists(self.path(dst)), argv)
        return p

    def test_every_listed_op_has_examples_that_run(self):
        ops = listed_ops()
        self.assertGreater(len(ops), 80)
        ran = 0
        for op in ops:
            if op in ("histogram", "svd"):  # commands of their own
                continue
            with self.subTest(op=op):
                lines = self.examples(op)
                self.assertTrue(lines, op)
                # glm_predict's first line is the glm-fit that makes its
                # model, glm_fit's the command (its step has two results)
                self.assertTrue(any(op in l or op.replace("_", "-") in l
                                    for l in lines), lines)
                for argv in lines:
                    self.run_example(argv)
                    ran += 1
        self.assertGreater(ran, 140)

    def out(self, name):
        with h5py.File(self.path("out.h5"), "r") as f:
            return f[name][...]

    def test_some_examples_agree_with_numpy(self):
        from scipy import ndimage as ndi
        x, y = ARRAYS["x"], ARRAYS["y"]
        cases = {
            "add": ("z", lambda: x + y),
            "std": ("r", lambda: x.std(axis=0, ddof=1)),
            "uniform_filter": ("u", lambda: ndi.uniform_filter(x, 5)),
            "take": ("cols", lambda: x[:, [0, 5, 7]]),
            "kernel": ("z", lambda: ARRAYS["xf"] + ARRAYS["yf"]),
        }
        for op, (name, want) in cases.items():
            with self.subTest(op=op):
                argv = [a for a in self.examples(op)
                        if "out.h5:/%s" % name in a][0]
                self.run_example(argv)
                got = self.out(name)
                if op == "add":  # the example with two arrays
                    self.assertIn("data.h5:/y", argv)
                np.testing.assert_allclose(got, want(), rtol=1e-12,
                                           atol=1e-13)


if __name__ == "__main__":
    unittest.main()
