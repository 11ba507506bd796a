"""tensordot and einsum of two arrays (issue 13) against NumPy, on h5py-
and zarr-written arrays with edge chunks: every form of tensordot's axes,
einsum contractions with any output order, implicit output and batch
axes (a letter in both operands and the output: one gemm each), float32
(sgemm), integers (float64, as matmul), bit-identical for --threads
1/2/7, under a small --memory, as one-step commands, and the forms that
are refused (diagonals, a letter summed in one operand, '...').
"""
import json
import subprocess
import unittest

import _common as C
from _common import np, h5py, zarr

RNG = np.random.default_rng(1331)
A = RNG.normal(size=(13, 7, 5))
B = RNG.normal(size=(5, 7, 4))
M = RNG.normal(size=(130, 90))
N = RNG.normal(size=(90, 41))
F = RNG.normal(size=(60, 30)).astype(np.float32)
I = RNG.integers(-9, 9, size=(30, 12)).astype(np.int32)
# contractions longer than 2^16, summed in pieces along the longest axis
T = RNG.normal(size=(150000, 6))
P = RNG.normal(size=(3, 300, 400))
Q = RNG.normal(size=(2, 300, 400))


class Contract(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("x.h5"), "w") as f:
            f.create_dataset("a", data=A, chunks=(4, 3, 2))
            f.create_dataset("b", data=B, chunks=(2, 7, 3))
            f.create_dataset("m", data=M, chunks=(37, 16))
            f.create_dataset("f", data=F, chunks=(16, 7))
            f.create_dataset("i", data=I, chunks=(7, 5))
            f.create_dataset("t", data=T, chunks=(7001, 5))
            f.create_dataset("p", data=P, chunks=(2, 128, 77))
            f.create_dataset("q", data=Q, chunks=(1, 100, 400))
        z = zarr.open(cls.path("n.zarr"), mode="w", shape=N.shape,
                      chunks=(11, 13), dtype=N.dtype)
        z[...] = N

    def inputs(self):
        h = self.path("x.h5")
        return {"a": h + ":/a", "b": h + ":/b", "m": h + ":/m",
                "f": h + ":/f", "i": h + ":/i", "tall": h + ":/t",
                "p": h + ":/p", "q": h + ":/q", "n": self.path("n.zarr")}

    def run_step(self, step, threads="2", extra=()):
        out = self.fresh("out.h5")
        doc = {"inputs": self.inputs(), "steps": [step],
               "outputs": {step["name"]: out + ":/t"}}
        path = self.fresh("p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        C.run("run", "--quiet", "--threads", threads, *extra, path)
        with h5py.File(out, "r") as f:
            return f["t"][...]

    def check(self, step, want, rtol=1e-12, atol=1e-12):
        got = self.run_step(step, "1")
        for t in ("2", "7"):
            self.assertEqual(self.run_step(step, t).tobytes(), got.tobytes())
        self.assertEqual(got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        return got

    def test_tensordot_axes_forms(self):
        for args, axes, want in [
                (["a", "b"], [[1, 2], [1, 0]],
                 np.tensordot(A, B, axes=([1, 2], [1, 0]))),
                (["m", "n"], 1, np.tensordot(M, N, axes=1)),
                (["a", "a"], 3, np.tensordot(A, A, axes=3)),
                (["m", "a"], 0, np.tensordot(M, A, axes=0)),
                (["b", "a"], [[0], [2]], np.tensordot(B, A, axes=([0], [2]))),
                (["a", "b"], [[-1, -2], [0, 1]],
                 np.tensordot(A, B, axes=([-1, -2], [0, 1])))]:
            with self.subTest(args=args, axes=axes):
                self.check({"name": "t", "op": "tensordot", "args": args,
                            "axes": axes}, want)
        # the default is 2
        self.check({"name": "t", "op": "tensordot", "args": ["m", "m"]},
                   np.asarray(np.tensordot(M, M)))

    def test_einsum_contractions(self):
        for args, sub in [(["m", "n"], "ij,jk->ik"), (["m", "n"], "ij,jk->ki"),
                          (["m", "n"], "ij,jk"), (["a", "b"], "ijk,kjl->li"),
                          (["a", "b"], "ijk,kjl"), (["m", "b"], "ij,klm->mjlik"),
                          (["m", "m"], "ij,ij->"),
                          (["a", "b"], "ijk,kjl->jil"),
                          (["a", "a"], "ijk,ijl->kjl"),
                          (["m", "n"], "ij,jk->ijk")]:
            with self.subTest(sub=sub):
                ops = {"a": A, "b": B, "m": M, "n": N}
                want = np.einsum(sub, *[ops[x] for x in args])
                self.check({"name": "t", "op": "einsum", "args": args,
                            "subscripts": sub}, np.asarray(want))

    def test_long_contractions_in_pieces(self):
        """X^T X of a tall X once cut the result into 1-row boxes that each
        read all of X (minutes for 2e6 x 50); the long sum is now added up
        in pieces, and a small --memory holds it."""
        self.check({"name": "t", "op": "tensordot", "args": ["tall", "tall"],
                    "axes": [[0], [0]]}, T.T @ T, rtol=1e-11)
        self.check({"name": "t", "op": "tensordot", "args": ["p", "q"],
                    "axes": [[1, 2], [1, 2]]},
                   np.tensordot(P, Q, axes=([1, 2], [1, 2])), rtol=1e-11)
        self.check({"name": "t", "op": "einsum", "args": ["p", "q"],
                    "subscripts": "ijk,ljk->li"},
                   np.einsum("ijk,ljk->li", P, Q), rtol=1e-11)
        got = self.run_step({"name": "t", "op": "einsum", "args": ["tall", "tall"],
                             "subscripts": "ij,ik->jk"},
                            extra=("--memory", "56M"))
        np.testing.assert_allclose(got, T.T @ T, rtol=1e-11)

    def test_dtypes(self):
        got = self.check({"name": "t", "op": "tensordot", "args": ["f", "f"],
                          "axes": [[0], [0]]},
                         np.tensordot(F, F, axes=([0], [0])), rtol=1e-4,
                         atol=1e-4)
        self.assertEqual(got.dtype, np.float32)
        got = self.check({"name": "t", "op": "einsum", "args": ["i", "i"],
                          "subscripts": "ij,ik->jk"},
                         np.einsum("ij,ik->jk", I, I).astype(np.float64))
        self.assertEqual(got.dtype, np.float64)

    def test_small_memory(self):
        got = self.run_step({"name": "t", "op": "tensordot",
                             "args": ["m", "n"], "axes": 1},
                            extra=("--memory", "56M"))
        np.testing.assert_allclose(got, M @ N, rtol=1e-12)

    def test_one_step_command(self):
        out = self.fresh("e.h5")
        C.run("einsum", "--quiet", self.path("x.h5") + ":/m",
              self.path("n.zarr"), "--subscripts", "ij,jk->ki", "-o",
              out + ":/e")
        with h5py.File(out, "r") as f:
            np.testing.assert_allclose(f["e"][...], (M @ N).T, rtol=1e-12)

    def test_refusals(self):
        for step, pattern in [
                ({"op": "einsum", "args": ["m", "m"], "subscripts": "ii,jk"},
                 "diagonals"),
                ({"op": "einsum", "args": ["m", "n"], "subscripts": "ij,kl->i"},
                 "summed in one operand"),
                ({"op": "einsum", "args": ["m", "n"],
                  "subscripts": "i...,jk"}, "'...'"),
                ({"op": "tensordot", "args": ["m", "n"], "axes": [[0], [0]]},
                 "differ"),
                ({"op": "tensordot", "args": ["m", "n"], "axes": 3},
                 "axes")]:
            with self.subTest(step=step):
                step["name"] = "t"
                doc = {"inputs": self.inputs(), "steps": [step],
                       "outputs": {"t": self.fresh("o.h5") + ":/t"}}
                path = self.fresh("bad.json")
                with open(path, "w") as f:
                    json.dump(doc, f)
                p = subprocess.run([C.CHUNKCTL, "run", "--quiet", path],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(pattern, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
