#!/usr/bin/env python3
"""bench/gpu_bench.py - issue 11's GPU benchmark, for the lent GPU machine.

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
check), REPS=5, ROWS=hist,hist16,reduce,chain (which rows), BACKENDS=cuda,cpu
(chunkctl's columns).  Needs numpy
and h5py; CuPy for its column and the floors (rows still run without it).
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
ROWS = os.environ.get("ROWS", "hist,hist16,reduce,chain").split(",")
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


def row(label, src, ck_args, cupy_body, moved):
    """moved: bytes that must cross PCIe (input up, results down)."""
    floors = [os.path.getsize(src) / read_rate(src)]
    h2d = h2d_rate()
    if h2d:
        floors.append(moved / h2d)
    res = {}
    for be in BACKENDS:
        res[be] = median_of([CK] + ck_args + ["--backend", be])
    if cupy is not None:
        res["cupy"] = median_of(cupy_src(cupy_cmd(cupy_body), src))
    ROWS_OUT.append((label, res, max(floors)))
    print("#", label, res, "floor %.3f s" % max(floors), flush=True)


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
    print()
    cols = [b for b in BACKENDS] + (["cupy"] if cupy is not None else [])
    print("| row | floor s | " + " | ".join("%s s (RSS MiB)" % c for c in cols)
          + " | cuda / floor |")
    print("|---|---|" + "---|" * len(cols) + "---|")
    for label, res, floor in ROWS_OUT:
        cells = ["%.3f (%.0f)" % res[c] for c in cols]
        ratio = "%.2f" % (res["cuda"][0] / floor) if "cuda" in res else "-"
        print("| %s | %.3f | %s | %s |" % (label, floor, " | ".join(cells),
                                           ratio))


if __name__ == "__main__":
    main()
