#!/usr/bin/env python3
"""bench/gpu_bench.py - issues 11's and 12's GPU benchmark, for the lent GPU
machine.

Side by side in one run, each row from files on disk with the page cache
warm: chunkctl --backend cuda, chunkctl --backend cpu and CuPy (an h5py
load, then the same computation on the GPU, synchronised), each a whole
process: wall time (median of REPS) and peak RSS (wait4's ru_maxrss, see
LAUNCH).
The floors are measured there too: the page-cache read rate of each input
and pinned host-to-device bandwidth.  Prints a Markdown table for
bench/RESULTS-gpu.md.

Run by tests/gpu/device-run.sh (which sets up the bundle) or directly:
    python3 bench/gpu_bench.py CHUNKCTL [WORKDIR]
Knobs (environment): SCALE=1 (sizes divided by SCALE: 16 makes a quick
check), REPS=5, ROWS=hist,hist16,reduce,chain,svd10k,svd2m,rsvd,dot,glm,rowadd
(which rows; the last six are issue 12's: SVD 10000x1000 with U S Vt
written, SVD 2,000,000x100 with U written, randomized SVD k=10 of
20000x5000, dot(A, A + A.T) of 20000x20000, logistic regression
1,000,000x100 with newton and lbfgs, the sample row-add kernel over 4 GB
of float32 beside the built-in add), BACKENDS=cuda,cpu (chunkctl's
columns; the svd10k row adds cuda with CHUNKCTL_CUDA_SVD=gesvdj and =host,
the svd slot's methods to choose between).  Needs numpy and h5py; CuPy for
its column and the floors (rows still run without it).
"""
import json
import os
import statistics
import subprocess
import sys
import time

CK = os.path.abspath(sys.argv[1])
WORK = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "/tmp/ck-gpu-bench")
SCALE = int(os.environ.get("SCALE", "1"))
REPS = int(os.environ.get("REPS", "5"))
ROWS = os.environ.get(
    "ROWS", "hist,hist16,reduce,chain,svd10k,svd2m,rsvd,dot,glm,rowadd"
).split(",")
BACKENDS = os.environ.get("BACKENDS", "cuda,cpu").split(",")
os.makedirs(WORK, exist_ok=True)

try:
    import cupy
except ImportError:  # the rows still run, without CuPy's column
    cupy = None


# Peak RSS needs a small parent: Linux carries the RSS high-water mark of
# the memory a process execs from (this script's, with CuPy loaded) into
# its ru_maxrss.  So a lean Python forks the command and reports its wall
# time and ru_maxrss (which then starts at that Python's ~10 MiB).
LAUNCH = r"""
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execvp(sys.argv[1], sys.argv[1:])
_, st, ru = os.wait4(pid, 0)
sys.stderr.write("\nCKSAMPLE %f %d %d\n" % (time.perf_counter() - t,
                                           ru.ru_maxrss, st))
"""


def sample(cmd):
    """Wall seconds and peak RSS (MiB) of one whole process."""
    p = subprocess.run([sys.executable, "-c", LAUNCH] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    last = err.rstrip().rsplit("\n", 1)[-1].split()
    if p.returncode != 0 or last[:1] != ["CKSAMPLE"] or last[3] != "0":
        raise SystemExit("failed: %s\n%s" % (" ".join(cmd), err))
    return float(last[1]), int(last[2]) / 1024.0


def median_of(cmd):
    sample(cmd)  # warms the page cache and the kernel caches
    runs = [sample(cmd) for _ in range(REPS)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def read_rate(path):
    """Bytes per second reading path from the page cache (second read)."""
    for k in range(2):
        t0 = time.perf_counter()
        with open(path, "rb", buffering=0) as f:
            while f.readinto(BUF):
                pass
        t = time.perf_counter() - t0
    return os.path.getsize(path) / t


BUF = bytearray(64 << 20)


def h2d_rate():
    if cupy is None:
        return None
    n = 1 << 30
    host = cupy.cuda.alloc_pinned_memory(n)
    dev = cupy.cuda.alloc(n)
    dev.copy_from_host(host, n)
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(4):
        dev.copy_from_host(host, n)
    cupy.cuda.Device().synchronize()
    return 4 * n / (time.perf_counter() - t0)


def make(path, shape, dtype, gen, chunks):
    """An HDF5 file of shape filled block by block (on the GPU if it can)."""
    import h5py
    import numpy as np

    if os.path.exists(path):
        return
    with h5py.File(path + ".tmp", "w") as f:
        d = f.create_dataset("x", shape=shape, dtype=dtype, chunks=chunks)
        rows = max(1, (256 << 20) // (np.dtype(dtype).itemsize *
                                      int(np.prod(shape[1:]))))
        for r0 in range(0, shape[0], rows):
            n = min(rows, shape[0] - r0)
            d[r0:r0 + n] = gen((n,) + tuple(shape[1:]), r0)
    os.replace(path + ".tmp", path)


def normal(mean, sd, dtype):
    import numpy as np

    def g(shape, r0):
        if cupy is not None:
            rs = cupy.random.RandomState(r0 + 1)
            return cupy.asnumpy(rs.normal(mean, sd, shape).astype(dtype))
        return np.random.default_rng(r0 + 1).normal(mean, sd, shape).astype(dtype)
    return g


def ints(shape, r0):
    import numpy as np
    return np.random.default_rng(r0 + 1).integers(-1000, 1000, shape, dtype=np.int64)


def pipeline(name, doc):
    path = os.path.join(WORK, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def cupy_cmd(body):
    """A python process: h5py load of x, then body on the GPU, synced."""
    code = ("import h5py, cupy as cp, numpy as np\n"
            "x = cp.asarray(h5py.File(SRC, 'r')['x'][...])\n" + body +
            "\ncp.cuda.Device().synchronize()\n")
    return [sys.executable, "-c", code]


def cupy_src(cmd, src):
    cmd = list(cmd)
    cmd[2] = "SRC = %r\n" % src + cmd[2]
    return cmd


ROWS_OUT = []


def row(label, src, ck_args, cupy_body, moved, extra_floor=0.0, more=None):
    """moved: bytes that must cross PCIe (input up, results down);
    extra_floor: seconds beside the larger floor (a device's DGEMM time,
    a write of the results); more: other whole-process columns."""
    floors = [os.path.getsize(src) / read_rate(src)]
    h2d = h2d_rate()
    if h2d:
        floors.append(moved / h2d)
    floor = max(floors) + extra_floor
    res = {}
    for be in BACKENDS:
        res[be] = median_of([CK] + ck_args + ["--backend", be])
    if cupy is not None and cupy_body is not None:
        res["cupy"] = median_of(cupy_src(cupy_cmd(cupy_body), src))
    for name, cmd in (more or {}).items():
        res[name] = median_of(cmd)
    ROWS_OUT.append((label, res, floor))
    print("#", label, res, "floor %.3f s" % floor, flush=True)


def write_rate(nbytes):
    """Bytes per second writing nbytes to a new file in WORK (fsync'd)."""
    path = os.path.join(WORK, "write-rate.tmp")
    n = min(nbytes, 1 << 30)
    t0 = time.perf_counter()
    with open(path, "wb", buffering=0) as f:
        for _ in range(0, n, len(BUF)):
            f.write(BUF)
    t = time.perf_counter() - t0
    os.unlink(path)
    return n / t


def dgemm_seconds(n):
    """The device's own time for an n x n float64 gemm (CuPy, cuBLAS)."""
    if cupy is None:
        return 0.0
    a = cupy.random.random((n, n))
    a @ a
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    a @ a
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - t0


def torch_cmd(src, body):
    """A python process: h5py load of X and y, then body with PyTorch on the
    GPU, synced; or None without PyTorch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    code = ("import h5py, torch\nf = h5py.File(%r, 'r')\n"
            "X = torch.from_numpy(f['x'][...]).cuda()\n"
            "y = torch.from_numpy(f['y'][...]).cuda()\n%s\n"
            "torch.cuda.synchronize()\n" % (src, body))
    return [sys.executable, "-c", code]


LOGISTIC_NEWTON = """
n, p = x.shape
X1 = cp.concatenate([x, cp.ones((n, 1))], axis=1)
w = cp.zeros(p + 1)
for it in range(50):
    mu = 1 / (1 + cp.exp(-(X1 @ w)))
    g = X1.T @ (mu - y) / n
    H = (X1 * (mu * (1 - mu))[:, None]).T @ X1 / n
    step = cp.linalg.solve(H, g)
    w -= step
    if float(cp.abs(g).max()) < 1e-8:
        break
"""

TORCH_LBFGS = """
n, p = X.shape
X1 = torch.cat([X, torch.ones(n, 1, device=X.device, dtype=X.dtype)], 1)
w = torch.zeros(p + 1, device=X.device, dtype=X.dtype, requires_grad=True)
opt = torch.optim.LBFGS([w], max_iter=500, tolerance_grad=1e-8,
                        line_search_fn='strong_wolfe')
def closure():
    opt.zero_grad()
    loss = torch.nn.functional.binary_cross_entropy_with_logits(X1 @ w, y)
    loss.backward()
    return loss
opt.step(closure)
"""


def linalg_rows(s):
    """Issue 12's rows."""
    import numpy as np

    if "svd10k" in ROWS:
        m = 10000 // s
        src = os.path.join(WORK, "svd10k-s%d.h5" % s)
        make(src, (m, 1000), "f8", normal(0, 1, "f8"), (m, 1000))
        out = os.path.join(WORK, "svd10k-out.h5")
        args = ["svd", src + ":/x", "-o", out, "--force", "--quiet"]
        # the svd slot's other methods (CHUNKCTL_CUDA_SVD), for choosing
        # between them: the SVD of R (1000 x 1000) is this row's largest
        # factorisation
        more = {"cuda %s" % meth: ["env", "CHUNKCTL_CUDA_SVD=" + meth, CK] +
                args + ["--backend", "cuda"]
                for meth in ("gesvdj", "host") if "cuda" in BACKENDS}
        row("svd %dx1000 f64, U S Vt written" % m, src, args,
            "u, sv, vt = cp.linalg.svd(x, full_matrices=False)\n"
            "with h5py.File(%r, 'w') as f:\n"
            "    f['U'] = cp.asnumpy(u); f['S'] = cp.asnumpy(sv); "
            "f['Vt'] = cp.asnumpy(vt)" % (out + ".cupy"),
            2 * os.path.getsize(src), more=more)
    if "svd2m" in ROWS:
        m = 2000000 // s
        src = os.path.join(WORK, "svd2m-s%d.h5" % s)
        make(src, (m, 100), "f8", normal(0, 1, "f8"), (100000 // s, 100))
        out = os.path.join(WORK, "svd2m-out.h5")
        size = os.path.getsize(src)
        # the floor: the input read twice plus U written
        row("svd %dx100 f64, U written" % m, src,
            ["svd", src + ":/x", "-o", out, "--force", "--quiet"],
            "q, r = cp.linalg.qr(x)\nur, sv, vt = cp.linalg.svd(r)\n"
            "h5py.File(%r, 'w')['U'] = cp.asnumpy(q @ ur)" % (out + ".cupy"),
            2 * size, size / read_rate(src) + size / write_rate(size))
    if "rsvd" in ROWS:
        m = 20000 // s
        src = os.path.join(WORK, "rsvd-s%d.h5" % s)
        make(src, (m, 5000), "f8", normal(0, 1, "f8"), (min(m, 1000), 5000))
        out = os.path.join(WORK, "rsvd-out.h5")
        row("randomized svd k=10 of %dx5000 f64" % m, src,
            ["svd", src + ":/x", "--randomized", "--k", "10", "-o", out,
             "--force", "--quiet"],
            "om = cp.random.standard_normal((x.shape[1], 20))\n"
            "y = x @ om\nfor i in range(2):\n"
            "    y, _ = cp.linalg.qr(x @ (x.T @ y))\n"
            "q, _ = cp.linalg.qr(y)\nub, sv, vt = cp.linalg.svd(q.T @ x, "
            "full_matrices=False)\nu = q @ ub[:, :10]\n"
            "with h5py.File(%r, 'w') as f:\n"
            "    f['U'] = cp.asnumpy(u); f['S'] = cp.asnumpy(sv[:10])"
            % (out + ".cupy"), os.path.getsize(src))
    if "dot" in ROWS:
        n = 20000 // s
        src = os.path.join(WORK, "dot-s%d.h5" % s)
        make(src, (n, n), "f8", normal(0, 1, "f8"), (2500 // s, 2500 // s))
        out = os.path.join(WORK, "dot-out.h5")
        p = pipeline("dot", {
            "inputs": {"a": src + ":/x"},
            "steps": [{"name": "t", "op": "transpose", "args": ["a"]},
                      {"name": "b", "op": "add", "args": ["a", "t"]},
                      {"name": "c", "op": "matmul", "args": ["a", "b"]}],
            "outputs": {"c": out + ":/c"}})
        size = os.path.getsize(src)
        row("dot(A, A + A.T), %dx%d f64" % (n, n), src,
            ["run", p, "--force", "--quiet"],
            "c = x @ (x + x.T)\nh5py.File(%r, 'w')['c'] = cp.asnumpy(c)"
            % (out + ".cupy"), 2 * size,
            dgemm_seconds(n) + size / write_rate(size))
    if "glm" in ROWS:
        m = 1000000 // s
        src = os.path.join(WORK, "glm-s%d.h5" % s)
        if not os.path.exists(src):
            rng = np.random.default_rng(5)
            X = rng.normal(size=(m, 100))
            w = rng.normal(size=100) / 10
            y = (rng.random(m) < 1 / (1 + np.exp(-(X @ w)))).astype("f8")
            import h5py
            with h5py.File(src + ".tmp", "w") as f:
                f.create_dataset("x", data=X, chunks=(100000 // s, 100))
                f.create_dataset("y", data=y, chunks=(100000 // s,))
            os.replace(src + ".tmp", src)
        for solver in ("newton", "lbfgs"):
            more = {}
            t = torch_cmd(src, TORCH_LBFGS) if solver == "lbfgs" else None
            if t:
                more["torch"] = t
            row("logistic %s, %dx100 f64" % (solver, m), src,
                ["glm-fit", src + ":/x", src + ":/y", "--family", "logistic",
                 "--solver", solver, "--quiet"],
                ("y = cp.asarray(h5py.File(SRC, 'r')['y'][...])\n" +
                 LOGISTIC_NEWTON) if solver == "newton" else None,
                os.path.getsize(src), more=more)
    if "rowadd" in ROWS:
        rows = (4 << 30) // 4 // 10000 // s
        src = os.path.join(WORK, "rowadd-s%d.h5" % s)
        make(src, (rows, 10000), "f4", normal(0, 1, "f4"), (100, 10000))
        import h5py
        with h5py.File(src, "a") as f:
            if "y" not in f:
                f["y"] = np.arange(10000, dtype="f4")
        kern = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "sample-data", "kernels")
        out = os.path.join(WORK, "rowadd-out.h5")
        inputs = {"x": src + ":/x", "y": src + ":/y"}
        k = pipeline("rowadd", {
            "inputs": inputs,
            "steps": [{"name": "z", "op": "kernel", "args": ["x", "y"],
                       "source": [os.path.join(kern, "rowadd.c"),
                                  os.path.join(kern, "rowadd.cu")],
                       "entry": "rowadd"}],
            "outputs": {"z": out + ":/z"}})
        a = pipeline("add", {
            "inputs": inputs,
            "steps": [{"name": "z", "op": "add", "args": ["x", "y"]}],
            "outputs": {"z": out + ":/z"}})
        more = {"add %s" % be: [CK, "run", a, "--force", "--quiet",
                                "--backend", be] for be in BACKENDS}
        row("row-add kernel, %.2f GB f32 (columns 'add': the built-in op)"
            % (rows * 4e4 / 1e9), src, ["run", k, "--force", "--quiet"],
            None, 2 * os.path.getsize(src), more=more)


def main():
    s = SCALE
    if "hist" in ROWS:
        src = os.path.join(WORK, "seed-s%d.h5" % s)
        make(src, (5000 // s, 5000), "f8", normal(9, 1, "f8"), (1000 // s, 5000))
        p = pipeline("hist", {
            "inputs": {"x": src + ":/x"},
            "steps": [
                {"name": "y", "op": "add", "args": ["x", 1]},
                {"name": "c", "op": "less", "args": ["y", 10]},
                {"name": "m", "op": "mask", "args": ["y", "c"]},
                {"name": "h", "op": "histogram", "args": ["m"], "bins": 100,
                 "range": [-9, 11]}],
            "outputs": {"h": os.path.join(WORK, "hist-out.h5") + ":/h"}})
        row("seed histogram (x+1)[(x+1)<10], %dx5000 f64" % (5000 // s), src,
            ["run", p, "--force", "--quiet"],
            "y = x + 1\ncp.histogram(y[y < 10], 100, range=(-9, 11))",
            os.path.getsize(src))
    if "hist16" in ROWS:
        src = os.path.join(WORK, "big-s%d.h5" % s)
        rows = (16 << 30) // 4 // 10000 // s
        make(src, (rows, 10000), "f4", normal(0, 1, "f4"), (100, 10000))
        row("histogram 100 bins, %.0f GB f32" % (rows * 4e4 / 1e9), src,
            ["histogram", src + ":/x", "--bins", "100", "--range=-5,5",
             "--quiet"],
            "cp.histogram(x, 100, range=(-5, 5))", os.path.getsize(src))
    if "reduce" in ROWS:
        src = os.path.join(WORK, "ints-s%d.h5" % s)
        make(src, (2500 // s, 1000, 100), "i8", ints, (25, 1000, 100))
        for op, extra, body in (("mean", [], "x.mean()"),
                                ("sum", ["--axis", "0"], "x.sum(axis=0)"),
                                ("std", [], "x.std()")):
            row("%s%s, %dx1000x100 i8" % (op, " axis 0" if extra else "", 2500 // s),
                src, ["reduce", op, src + ":/x", "--quiet"] + extra, body,
                os.path.getsize(src))
    if "chain" in ROWS:
        src = os.path.join(WORK, "chain-s%d.h5" % s)
        rows = (8 << 30) // 4 // 10000 // s
        make(src, (rows, 10000), "f4", normal(0, 1, "f4"), (100, 10000))
        out = os.path.join(WORK, "chain-out.h5")
        p = pipeline("chain", {
            "inputs": {"x": src + ":/x"},
            "steps": [
                {"name": "s", "op": "sin", "args": ["x"]},
                {"name": "m", "op": "multiply", "args": ["s", 3]},
                {"name": "h", "op": "divide", "args": ["x", 2]},
                {"name": "a", "op": "add", "args": ["m", "h"]},
                {"name": "b", "op": "abs", "args": ["a"]},
                {"name": "r", "op": "sqrt", "args": ["b"]}],
            "outputs": {"r": out + ":/r"}})
        row("sqrt(abs(sin(x)*3 + x/2)), %.0f GB f32 to HDF5" % (rows * 4e4 / 1e9),
            src, ["run", p, "--force", "--quiet"],
            "r = cp.sqrt(cp.abs(cp.sin(x) * 3 + x / 2))\n"
            "h5py.File(%r, 'w').create_dataset('r', data=cp.asnumpy(r))"
            % (out + ".cupy"), 2 * os.path.getsize(src))
    linalg_rows(s)
    print()
    # the cuda column runs the device code the GPU suite checks only with
    # it on (tests/gpu/device-run.sh sets it); say which it measured
    print("cuda column: CHUNKCTL_CUDA_UNVERIFIED=%s (%s)" % (
        os.environ.get("CHUNKCTL_CUDA_UNVERIFIED", "unset"),
        "device linear algebra and kernels on"
        if os.environ.get("CHUNKCTL_CUDA_UNVERIFIED") == "1"
        else "their steps ran on the CPU beside the device"))
    cols = []
    for _, res, _ in ROWS_OUT:
        cols += [c for c in res if c not in cols]
    print("| row | floor s | " + " | ".join("%s s (RSS MiB)" % c for c in cols)
          + " | cuda / floor |")
    print("|---|---|" + "---|" * len(cols) + "---|")
    for label, res, floor in ROWS_OUT:
        cells = ["%.3f (%.0f)" % res[c] if c in res else "-" for c in cols]
        ratio = "%.2f" % (res["cuda"][0] / floor) if "cuda" in res else "-"
        print("| %s | %.3f | %s | %s |" % (label, floor, " | ".join(cells),
                                           ratio))


if __name__ == "__main__":
    main()
