"""The kernel op (issue 12, CPU): the user's C function per chunk, as
dask's map_blocks.  The sample row add (sample-data/kernels/rowadd.c)
equals the built-in add; arguments are aligned chunk by chunk (a 1-D y
beside an M x N x); numbers pass as parameters; each call sees its
block's origin in the whole array; the compiled kernel is cached; and a
kernel that does not compile, lacks its entry point, cannot be aligned or
fails at run time is one clear line, with no output written.
"""
import contextlib
import json
import os
import shutil
import subprocess
import unittest

import _common as C
from _common import np, h5py, zarr

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "sample-data",
                       "kernels")
RNG = np.random.default_rng(12)
X = RNG.normal(size=(300, 70)).astype(np.float32)
Y = RNG.normal(size=(70,)).astype(np.float32)
D = RNG.normal(size=(41, 9, 5))

AXPY = r"""
#include "chunkctl_kernel.h"
/* out = a * x + b, in float64; params: a, b */
int axpy(chunkctl_array *out, const chunkctl_array *args, int nargs,
         const double *p, int np)
{
    const double *x = args[0].data;
    double *o = out->data;
    int64_t n = 1;
    if (nargs != 1 || np != 2 || args[0].dtype != CHUNKCTL_FLOAT64)
        return 3;
    for (int d = 0; d < out->ndim; d++)
        n *= out->shape[d];
    for (int64_t i = 0; i < n; i++)
        o[i] = p[0] * x[i] + p[1];
    return 0;
}
/* out[i, j, k] = the element's C-order position in the whole array */
int where_am_i(chunkctl_array *out, const chunkctl_array *args, int nargs,
               const double *p, int np)
{
    int64_t *o = out->data, idx[3] = {0, 0, 0};
    (void)args, (void)nargs, (void)p, (void)np;
    for (int64_t k = 0; k < out->shape[0] * out->shape[1] * out->shape[2];
         k++) {
        int64_t g = 0;
        for (int d = 0; d < 3; d++)
            g = g * out->full_shape[d] + out->origin[d] + idx[d];
        o[k] = g;
        for (int d = 2; d >= 0; d--) {
            if (++idx[d] < out->shape[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}
/* a wild write on the chunk at origin 0 */
int crashes(chunkctl_array *out, const chunkctl_array *args, int nargs,
            const double *p, int np)
{
    (void)args, (void)nargs, (void)p, (void)np;
    if (out->origin[0] == 0)
        *(volatile int *)(uintptr_t)8 = 1;
    return 0;
}
int fails(chunkctl_array *out, const chunkctl_array *args, int nargs,
          const double *p, int np)
{
    (void)out, (void)args, (void)nargs, (void)p, (void)np;
    return out->origin[0] > 0 ? 7 : 0;
}
/* user code that ends the process its own way */
#include <stdlib.h>
int exits(chunkctl_array *out, const chunkctl_array *args, int nargs,
          const double *p, int np)
{
    (void)args, (void)nargs, (void)p, (void)np;
    if (out->origin[0] == 10)
        exit(0);
    return 0;
}
/* writes around its output block (float64): one before it, one just
 * past its end, or 100 past its end */
static int64_t count(const chunkctl_array *out)
{
    int64_t n = 1;
    for (int d = 0; d < out->ndim; d++)
        n *= out->shape[d];
    return n;
}
int writes_before(chunkctl_array *out, const chunkctl_array *args, int nargs,
                  const double *p, int np)
{
    (void)args, (void)nargs, (void)p, (void)np;
    ((volatile double *)out->data)[-1] = 1;
    return 0;
}
int writes_one_past(chunkctl_array *out, const chunkctl_array *args,
                    int nargs, const double *p, int np)
{
    (void)args, (void)nargs, (void)p, (void)np;
    ((volatile double *)out->data)[count(out)] = 1;
    return 0;
}
int writes_100_past(chunkctl_array *out, const chunkctl_array *args,
                    int nargs, const double *p, int np)
{
    volatile double *o = out->data;
    (void)args, (void)nargs, (void)p, (void)np;
    for (int64_t i = 0; i < count(out) + 100; i++)
        o[i] = 1;
    return 0;
}
/* leaves its output as it finds it */
int writes_nothing(chunkctl_array *out, const chunkctl_array *args,
                   int nargs, const double *p, int np)
{
    (void)out, (void)args, (void)nargs, (void)p, (void)np;
    return 0;
}
int aborts(chunkctl_array *out, const chunkctl_array *args, int nargs,
           const double *p, int np)
{
    (void)args, (void)nargs, (void)p, (void)np;
    if (out->origin[0] == 10)
        abort();
    return 0;
}
/* variables, not functions: named as the entry, they would be called */
double a_table[4] = {1, 2, 3, 4};
_Thread_local double a_tls[4] = {1, 2, 3, 4};
"""


class Kernel(C.InteropCase):

    @classmethod
    def make_fixtures(cls):
        with h5py.File(cls.path("in.h5"), "w") as f:
            f.create_dataset("x", data=X, chunks=(64, 16))
            f.create_dataset("y", data=Y, chunks=(20,))
            f.create_dataset("d", data=D, chunks=(10, 4, 5))
        z = zarr.open(cls.path("x.zarr"), mode="w", shape=X.shape,
                      chunks=(50, 30), dtype=X.dtype)
        z[...] = X
        with open(cls.path("axpy.c"), "w") as f:
            f.write(AXPY)
        with open(cls.path("broken.c"), "w") as f:
            f.write('#include "chunkctl_kernel.h"\n\nint k(void)\n{\n'
                    '    return undeclared + 1;\n}\n')
        os.environ["CHUNKCTL_CACHE_DIR"] = cls.path("cache")

    def run_pipeline(self, steps, outputs, inputs=None, threads="2",
                     expect=0, where=None):
        doc = {"inputs": inputs or {"x": self.path("in.h5") + ":/x",
                                    "y": self.path("in.h5") + ":/y",
                                    "d": self.path("in.h5") + ":/d"},
               "steps": steps, "outputs": outputs}
        path = os.path.join(where or self.path("."), "p.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return C.run("run", "--quiet", "--threads", threads, path,
                     expect=expect)

    def test_rowadd_equals_add(self):
        src = os.path.join(KERNELS, "rowadd.c")
        for xin in (self.path("in.h5") + ":/x", self.path("x.zarr")):
            got = []
            for t in ("1", "2", "7"):
                out = self.fresh("o.h5")
                self.run_pipeline(
                    [{"name": "z", "op": "kernel", "args": ["x", "y"],
                      "source": src, "entry": "rowadd"},
                     {"name": "w", "op": "add", "args": ["x", "y"]}],
                    {"z": out + ":/z", "w": out + ":/w"}, threads=t,
                    inputs={"x": xin, "y": self.path("in.h5") + ":/y"})
                with h5py.File(out, "r") as f:
                    z, w = f["z"][...], f["w"][...]
                self.assertEqual(z.dtype, np.float32)
                np.testing.assert_array_equal(z, w)
                np.testing.assert_array_equal(z, X + Y)
                got.append(z.tobytes())
            self.assertEqual(len(set(got)), 1)

    def test_params_origin_and_relative_source(self):
        out = self.fresh("o.h5")
        # "axpy.c" is found beside the pipeline file
        self.run_pipeline(
            [{"name": "a", "op": "kernel", "args": ["d", 2.5, -1],
              "source": "axpy.c", "entry": "axpy"},
             {"name": "g", "op": "kernel", "args": ["d"],
              "source": "axpy.c", "entry": "where_am_i", "dtype": "int64"}],
            {"a": out + ":/a", "g": out + ":/g"})
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["a"][...], 2.5 * D - 1)
            np.testing.assert_array_equal(
                f["g"][...], np.arange(D.size).reshape(D.shape))

    def test_cached_and_prebuilt_library(self):
        cache = self.path("cache2")
        os.environ["CHUNKCTL_CACHE_DIR"] = cache
        try:
            for _ in range(2):
                out = self.fresh("o.h5")
                self.run_pipeline(
                    [{"name": "a", "op": "kernel", "args": ["d", 1, 0],
                      "source": self.path("axpy.c"), "entry": "axpy"}],
                    {"a": out + ":/a"})
                so = [f for f in os.listdir(os.path.join(cache, "c"))
                      if f.endswith(".so")]
                self.assertEqual(len(so), 1)
                if _ == 0:
                    first = os.stat(os.path.join(cache, "c", so[0])).st_mtime_ns
            self.assertEqual(
                os.stat(os.path.join(cache, "c", so[0])).st_mtime_ns, first)
        finally:
            os.environ["CHUNKCTL_CACHE_DIR"] = self.path("cache")
        lib = self.path("libaxpy.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-I" + KERNELS,
                        "-o", lib, self.path("axpy.c")], check=True)
        out = self.fresh("o.h5")
        self.run_pipeline(
            [{"name": "a", "op": "kernel", "args": ["d", 3, 1],
              "library": lib, "entry": "axpy"}], {"a": out + ":/a"})
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["a"][...], 3 * D + 1)

    def test_one_step_command(self):
        out = self.fresh("o.h5")
        C.run("kernel", "--quiet", self.path("in.h5") + ":/x",
              self.path("in.h5") + ":/y", "--source",
              os.path.join(KERNELS, "rowadd.c"), "--entry", "rowadd", "-o",
              out + ":/z")
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["z"][...], X + Y)

    def test_c_and_cuda_versions_side_by_side(self):
        """A step may give its kernel in C and in CUDA C ("source": [c,
        cu]); the CPU runs the C one (the result is NumPy's x + y).  The
        CUDA C one alone cannot run on the CPU, and this chunkctl does not
        launch it on a device unless CHUNKCTL_CUDA_UNVERIFIED=1 turns on
        the launch that awaits its first GPU (then, here, the missing
        device stops it): each says so in one line and writes nothing."""
        c, cu = (os.path.join(KERNELS, f) for f in ("rowadd.c", "rowadd.cu"))
        out = self.fresh("both.h5")
        self.run_pipeline([{"name": "z", "op": "kernel", "args": ["x", "y"],
                            "source": [cu, c], "entry": "rowadd",
                            "block": 128}], {"z": out + ":/z"})
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["z"][...], X + Y)
        step = {"name": "z", "op": "kernel", "args": ["x", "y"],
                "source": cu, "entry": "rowadd"}
        out = self.fresh("cu.h5")
        doc = {"inputs": {"x": self.path("in.h5") + ":/x",
                          "y": self.path("in.h5") + ":/y"},
               "steps": [step], "outputs": {"z": out + ":/z"}}
        path = self.fresh("cu.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        # the device launch is written but unverified: only
        # CHUNKCTL_CUDA_UNVERIFIED=1 (the GPU suite's) puts it in the CUDA
        # module's table; here, without a GPU, that run stops at the device
        gate = {"CHUNKCTL_CUDA_UNVERIFIED": "1"}
        for backend, env, code, pattern in [
                ("cpu", None, 2, r"^chunkctl: kernel step 'z': rowadd\.cu is "
                 r"CUDA C, which runs under --backend cuda; give a C version "
                 r"beside it \(\"source\": \[\"rowadd\.c\", "
                 r"\"rowadd\.cu\"\]\) to run it on the CPU$"),
                ("auto", None, 2, r"rowadd\.cu is CUDA C, which runs under "
                 r"--backend cuda"),
                ("cuda", None, None, r"^chunkctl: (kernel step 'z': this "
                 r"chunkctl cannot launch CUDA C kernels on a device yet; "
                 r"give a C version beside rowadd\.cu|no CUDA backend: .*)"),
                ("cuda", gate, None, r"^chunkctl: no CUDA (device|backend): "
                 r".*; use --backend cpu$")]:
            if env and self.gpu_present():
                continue  # the GPU suite runs it there
            with self.subTest(backend=backend, env=env):
                p = C.run("run", "--quiet", "--backend", backend, path,
                          expect=code, env=env)
                self.assertNotEqual(p.returncode, 0)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1,
                                 p.stderr)
                self.assertRegex(p.stderr.strip(), pattern)
                self.assertFalse(os.path.exists(out))

    @staticmethod
    def gpu_present():
        return C.run("devices", expect=None).returncode == 0

    def test_bad_kernels_are_one_line_and_write_nothing(self):
        cases = [
            ({"source": "broken.c", "entry": "k", "args": ["x"]}, 2,
             r"kernel does not compile: .*broken\.c:5:\d+: error: .*undeclared"),
            ({"source": "axpy.c", "entry": "nope", "args": ["x"]}, 2,
             r"no entry point 'nope'"),
            ({"source": "axpy.c", "entry": "a_table", "args": ["x"]}, 2,
             r"'a_table' in the compiled kernel is a variable \(a data "
             r"symbol\), not a function"),
            ({"source": "axpy.c", "entry": "a_tls", "args": ["x"]}, 2,
             r"'a_tls' in the compiled kernel is a variable"),
            ({"source": "missing.c", "entry": "k", "args": ["x"]}, 2,
             r"source .*missing\.c"),
            ({"source": "axpy.c", "entry": "axpy", "args": ["x", "d"]}, 2,
             r"args\[1\]: shape \(41, 9, 5\) cannot be aligned"),
            ({"source": "axpy.c", "entry": "fails", "args": ["d"]}, 1,
             r"the kernel returned 7 for the chunk at"),
            ({"entry": "k", "args": ["x"]}, 2, r"give \"source\""),
            ({"source": ["axpy.c", "broken.c"], "entry": "axpy",
              "args": ["x"]}, 2, r"source: two C versions"),
            ({"source": "axpy.c", "library": "a.so", "entry": "axpy",
              "args": ["x"]}, 2, r"give a C \"source\" or a \"library\""),
            ({"source": ["axpy.c", "missing.cu"], "entry": "axpy",
              "args": ["x"]}, 2, r"source .*missing\.cu: No such file"),
            ({"source": "axpy.c", "entry": "axpy", "args": ["x"],
              "block": 100}, 2, r"block: expected threads per block"),
        ]
        for step, code, pattern in cases:
            with self.subTest(step=step):
                out = self.fresh("bad.h5")
                step = dict(step, name="k", op="kernel")
                p = self.run_pipeline([step], {"k": out + ":/k"},
                                      expect=code)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1,
                                 p.stderr)
                self.assertRegex(p.stderr, pattern)
                self.assertFalse(os.path.exists(out))

    def axpy_steps(self, src):
        return [{"name": "a", "op": "kernel", "args": ["d", 2, 1],
                 "source": src, "entry": "axpy"}]

    def so_files(self, cache):
        return sorted(f for f in os.listdir(os.path.join(cache, "c"))
                      if f.endswith(".so"))

    @contextlib.contextmanager
    def cache_in(self, name):
        """CHUNKCTL_CACHE_DIR at a cache of the test's own, then back."""
        cache = self.path(name)
        os.environ["CHUNKCTL_CACHE_DIR"] = cache
        try:
            yield cache
        finally:
            os.environ["CHUNKCTL_CACHE_DIR"] = self.path("cache")

    def build_lib(self, src, lib):
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-I" + KERNELS,
                        "-o", lib, src], check=True)

    def test_cache_entries_are_checked(self):
        # a truncated entry died of SIGBUS in dlopen, another valid .so
        # under its name was loaded and run; each is compiled again now
        with self.cache_in("cache3") as cache:
            out = self.fresh("o.h5")
            self.run_pipeline(self.axpy_steps(self.path("axpy.c")),
                              {"a": out + ":/a"})
            so = os.path.join(cache, "c", self.so_files(cache)[0])
            good = open(so, "rb").read()
            other = self.path("libother.so")
            with open(self.path("other.c"), "w") as f:
                f.write(AXPY.replace("p[0] * x[i] + p[1]", "x[i] - 100"))
            self.build_lib(self.path("other.c"), other)
            for what, data in (("truncated", good[:7000]), ("empty", b""),
                               ("another kernel", open(other, "rb").read())):
                with self.subTest(entry=what):
                    with open(so, "wb") as f:
                        f.write(data)
                    out = self.fresh("o.h5")
                    self.run_pipeline(self.axpy_steps(self.path("axpy.c")),
                                      {"a": out + ":/a"})
                    with h5py.File(out, "r") as f:
                        np.testing.assert_array_equal(f["a"][...], 2 * D + 1)

    def test_included_files_are_part_of_the_key(self):
        # a kernel's #include changed: the cached entry of the old header
        # was run (x2 where the header said x3)
        d = self.path("inc")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "k.c"), "w") as f:
            f.write(AXPY.replace('#include "chunkctl_kernel.h"',
                                 '#include "chunkctl_kernel.h"\n'
                                 '#include "factor.h"')
                    .replace("p[0] * x[i] + p[1]", "FACTOR * x[i]"))
        for factor in (2, 3):
            with self.subTest(factor=factor):
                with open(os.path.join(d, "factor.h"), "w") as f:
                    f.write("#define FACTOR %d.0\n" % factor)
                out = self.fresh("o.h5")
                self.run_pipeline(self.axpy_steps("k.c"), {"a": out + ":/a"},
                                  where=d)
                with h5py.File(out, "r") as f:
                    np.testing.assert_array_equal(f["a"][...], factor * D)

    def test_read_only_cache_serves_what_it_holds(self):
        # the contract header was rewritten on every run, so a cache
        # that holds the kernel but cannot be written failed the run
        if os.geteuid() == 0:
            self.skipTest("root writes to read-only directories")
        with self.cache_in("cache4") as cache:
            out = self.fresh("o.h5")
            self.run_pipeline(self.axpy_steps(self.path("axpy.c")),
                              {"a": out + ":/a"})
            os.chmod(os.path.join(cache, "c"), 0o555)
            try:
                out = self.fresh("o.h5")
                self.run_pipeline(self.axpy_steps(self.path("axpy.c")),
                                  {"a": out + ":/a"})
            finally:
                os.chmod(os.path.join(cache, "c"), 0o755)

    def test_library_named_bare_is_the_pipelines_folder(self):
        # "library": "k.so" went to dlopen as it was, which looks a bare
        # name up on the library path, not beside the pipeline
        d = self.path("bare")
        os.makedirs(d, exist_ok=True)
        self.build_lib(self.path("axpy.c"), os.path.join(d, "libk.so"))
        out = self.fresh("o.h5")
        p = os.path.join(d, "p.json")
        with open(p, "w") as f:
            json.dump({"inputs": {"d": self.path("in.h5") + ":/d"},
                       "steps": [{"name": "a", "op": "kernel",
                                  "args": ["d", 2, 1], "library": "libk.so",
                                  "entry": "axpy"}],
                       "outputs": {"a": out + ":/a"}}, f)
        subprocess.run([C.CHUNKCTL, "run", "--quiet", "p.json"], cwd=d,
                       check=True, env=dict(os.environ, LD_LIBRARY_PATH=""))
        with h5py.File(out, "r") as f:
            np.testing.assert_array_equal(f["a"][...], 2 * D + 1)

    def test_a_crashing_kernel_is_named_and_writes_nothing(self):
        # a wild pointer in the kernel killed chunkctl with no word and
        # left its temporary behind
        if os.environ.get("CK_SANITIZE"):
            self.skipTest("the sanitizer reports the fault itself")
        out = self.fresh("crash.h5")
        p = self.run_pipeline([{"name": "k", "op": "kernel", "args": ["d"],
                                "source": self.path("axpy.c"),
                                "entry": "crashes"}], {"k": out + ":/k"},
                              expect=-11)
        self.assertRegex(p.stderr, r"kernel step 'k' crashed on the chunk at "
                         r"\(0, \d+, 0\) \(SIGSEGV")
        self.assertFalse(os.path.exists(out))
        self.assertEqual([f for f in os.listdir(self.path("."))
                          if f.startswith(".crash.h5")], [])

    def test_a_kernel_that_exits_or_aborts_is_named_and_writes_nothing(self):
        # exit(0) in a kernel ended chunkctl with status 0 and left its
        # temporary; abort() (a failed assert) left it too, unnamed
        for entry, code, what in (("exits", 1, r"it called exit\(\)"),
                                  ("aborts", -6, r"SIGABRT")):
            if code < 0 and os.environ.get("CK_SANITIZE"):
                continue  # the sanitizer takes SIGABRT itself
            out = self.fresh("end.h5")
            p = self.run_pipeline([{"name": "k", "op": "kernel",
                                    "args": ["d"],
                                    "source": self.path("axpy.c"),
                                    "entry": entry}], {"k": out + ":/k"},
                                  expect=code)
            self.assertRegex(p.stderr, r"kernel step 'k' crashed on the "
                             r"chunk at \(10, \d+, 0\) \(" + what)
            self.assertFalse(os.path.exists(out))
            self.assertEqual([f for f in os.listdir(self.path("."))
                              if f.startswith(".end.h5")], [])

    def leftovers(self, name):
        """The output's temporaries (".NAME.ck-tmp-*", its journal)."""
        return [f for f in os.listdir(self.path(".")) if f.startswith(
            "." + name)]

    def test_writes_outside_the_output_block_are_named(self):
        # z[-1] corrupted the heap and glibc aborted later in free() (exit
        # 134, no word of the kernel, temporaries left); writes a little
        # past the end went unnoticed and the output was written
        for entry, side in (("writes_before", "before it"),
                            ("writes_one_past", "past its end"),
                            ("writes_100_past", "past its end")):
            with self.subTest(entry=entry):
                out = self.fresh("wild.h5")
                p = self.run_pipeline([{"name": "k", "op": "kernel",
                                        "args": ["d"],
                                        "source": self.path("axpy.c"),
                                        "entry": entry}], {"k": out + ":/k"},
                                      expect=1)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1,
                                 p.stderr)
                self.assertRegex(
                    p.stderr, r"^chunkctl: kernel step 'k': the kernel wrote "
                    r"outside its output block \(" + side + r"\) for the "
                    r"chunk at \(\d+, \d+, \d+\)$")
                self.assertFalse(os.path.exists(out))
                self.assertEqual(self.leftovers("wild.h5"), [])

    def test_unwritten_elements_are_zero(self):
        # the output block held what the heap held before, so a kernel
        # that left elements alone wrote leftovers into the file
        with h5py.File(self.path("ten.h5"), "w") as f:
            f.create_dataset("u", data=np.arange(1, 11, dtype=np.uint8),
                             chunks=(3,))
            f.create_dataset("f", data=np.arange(1, 11, dtype=np.float64),
                             chunks=(3,))
        for name in ("u", "f"):
            with self.subTest(dtype=name):
                out = self.fresh("zero.h5")
                src = self.path("ten.h5") + ":/" + name
                self.run_pipeline(
                    [{"name": "k", "op": "kernel", "args": ["a"],
                      "source": self.path("axpy.c"),
                      "entry": "writes_nothing"}], {"k": out + ":/k"},
                    inputs={"a": src})
                with h5py.File(out, "r") as f:
                    k = f["k"][...]
                self.assertEqual(k.dtype, np.uint8 if name == "u"
                                 else np.float64)
                np.testing.assert_array_equal(k, np.zeros(10, k.dtype))

    def test_chunks_of_zero_are_refused(self):
        out = self.fresh("z.h5")
        p = self.run_pipeline([{"name": "a", "op": "kernel", "args": ["d", 2, 1],
                                "source": self.path("axpy.c"),
                                "entry": "axpy", "chunks": [0, 9, 5]}],
                              {"a": out + ":/a"}, expect=2)
        self.assertIn("chunks[0]: must be >= 1", p.stderr)

    def test_compile_error_line_when_the_path_says_error(self):
        d = self.path("my_errors")
        os.makedirs(d, exist_ok=True)
        shutil.copy(self.path("broken.c"), d)
        out = self.fresh("bad.h5")
        p = self.run_pipeline([{"name": "k", "op": "kernel", "args": ["x"],
                                "source": "broken.c", "entry": "k"}],
                              {"k": out + ":/k"}, expect=2, where=d)
        self.assertRegex(p.stderr, r"broken\.c:5:\d+: error: .*undeclared")

    def test_cache_and_compiler_trouble_is_named(self):
        # the directory it could not make, that no place is set, a CC
        # that makes no library: each one line saying which, nothing
        # written (audit G: "no usable kernel cache directory", and
        # "....so: No such file or directory")
        args = ["kernel", "--quiet", self.path("in.h5") + ":/x",
                self.path("in.h5") + ":/y", "--source",
                os.path.join(KERNELS, "rowadd.c"), "--entry", "rowadd"]
        # a C source no cache holds yet, so that CC is run
        fresh = self.path("fresh_rowadd.c")
        with open(os.path.join(KERNELS, "rowadd.c")) as f:
            text = f.read()
        with open(fresh, "w") as f:
            f.write(text + "\n/* fresh */\n")
        cases = (
            ({"CHUNKCTL_CACHE_DIR": "/proc/none/cache"}, 1,
             "/proc/none/cache/c cannot be made or written"),
            ({"CHUNKCTL_CACHE_DIR": "", "XDG_CACHE_HOME": "", "HOME": ""}, 1,
             "none of CHUNKCTL_CACHE_DIR, XDG_CACHE_HOME and HOME is set"),
            ({"CC": "true"}, 2, "the C compiler 'true' succeeded but made "
             "no library"),
        )
        for env, code, want in cases:
            with self.subTest(env=env):
                out = self.fresh("trouble.h5")
                a = list(args)
                a[a.index("--source") + 1] = fresh
                p = C.run(*a, "-o", out + ":/z", expect=code, env=env)
                self.assertCleanError(p, code, want)
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
