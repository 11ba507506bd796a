#!/usr/bin/python3
"""tests/fault/walk.py - fail every call site of representative runs.

Needs a chunkctl built with -DCHUNKCTL_FAULT_INJECTION=ON (base/ck_fault.h).
For each run below: one clean run with CK_FAULT_LOG lists the call sites
(caller and caller's caller) of malloc & co., read/pread, write/pwrite,
fsync, rename and open in chunkctl's own code; then one run per site fails
that site's first call (and, for a site called more than once, another
fails its last call), and one run per kind fails every call of that kind
from the first on ("write:1+", as a full disk).  Each faulted run must:
exit non-zero with exactly one line on stderr, "chunkctl: ...", and no
signal or sanitizer report; leave no output and no temporary; leave the
inputs byte for byte as they were.  A run where the fault fired and yet
exit 0 (a fallback) must write what the clean run wrote.

usage: walk.py [--jobs N] [--only NAME] [--max-sites N]
env:   CHUNKCTL (the binary), CK_FAULT_TIME (seconds per run, default 60)
Prints one line per failure and a summary: sites walked / sites seen.
"""
import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CK = os.environ.get("CHUNKCTL", "chunkctl")
# h5py reads chunkctl's zstd-compressed outputs through its filter plugin
# (as tests/interop/_common.py does); HDF5 reads the path when it loads.
PLUGIN_DIR = os.environ.get(
    "CK_PLUGIN_DIR",
    os.path.join(os.path.dirname(os.path.dirname(CK)), "plugins"))
os.environ["HDF5_PLUGIN_PATH"] = ":".join(
    d for d in (PLUGIN_DIR, "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins")
    if d)
TIME = float(os.environ.get("CK_FAULT_TIME", "60"))
KINDS = ("alloc", "read", "write", "fsync", "rename", "open")
# The tests run under ASan/UBSan in CI: make any report a distinct exit.
SAN = {"ASAN_OPTIONS": "detect_leaks=1:exitcode=86:abort_on_error=0",
       "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87"}


def env(extra=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("CK_FAULT")}
    e.update(SAN)
    e.update(extra or {})
    return e


def chunkctl(args, cwd, extra=None):
    try:
        p = subprocess.run([CK] + args, cwd=cwd, env=env(extra),
                           capture_output=True, text=True, timeout=TIME)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %g s" % TIME


def tree_sum(root):
    """sha256 over every file's path and bytes under root (a file or dir)."""
    h = hashlib.sha256()
    paths = [root] if os.path.isfile(root) else sorted(
        os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    for p in paths:
        h.update(os.path.relpath(p, os.path.dirname(root)).encode())
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def make_inputs(d):
    def gen(*a):
        rc, _, err = chunkctl(["gen", "--quiet"] + list(a), d)
        if rc != 0:
            sys.exit("walk.py: gen %s: %s" % (a, err.strip()))
    # Edge chunks everywhere: shapes are not multiples of the chunks.
    gen("in.h5:/x", "--shape", "40,30", "--chunks", "16,16", "--seed", "1")
    gen("in.zarr", "--shape", "40,30", "--chunks", "16,16", "--seed", "2")
    gen("in3.zarr", "--shape", "40,30", "--chunks", "8,8", "--shards",
        "16,16", "--zarr-format", "3", "--seed", "5")
    gen("X.h5:/X", "--shape", "50,3", "--chunks", "16,3", "--dist",
        "normal", "--seed", "3")
    gen("y.h5:/y", "--shape", "50", "--chunks", "16", "--dist", "integers",
        "--low", "0", "--high", "2", "--dtype", "float64", "--seed", "4")
    # A reduction, a histogram and a mask, to HDF5 and to Zarr.
    p1 = {"inputs": {"x": os.path.join(d, "in.h5:/x")},
          "steps": [
              {"name": "s", "op": "sum", "args": ["x"], "axis": 0},
              {"name": "lt", "op": "less", "args": ["x", 0.5]},
              {"name": "m", "op": "mask", "args": ["x", "lt"]},
              {"name": "h", "op": "histogram", "args": ["x"], "bins": 8,
               "range": [0, 1]}],
          "outputs": {"s": "s.h5:/s", "m": "m.zarr", "h": "h.h5:/h"},
          "print": ["h"]}
    p2 = {"inputs": {"x": os.path.join(d, "in.zarr")},
          "steps": [
              {"name": "mu", "op": "mean", "args": ["x"], "axis": 1},
              {"name": "c", "op": "subtract", "args": ["x", 0.5]}],
          "outputs": {"mu": "mu.zarr", "c": "c.h5:/c"}}
    for name, p in (("p1.json", p1), ("p2.json", p2)):
        with open(os.path.join(d, name), "w") as f:
            json.dump(p, f)


def runs(inp):
    i = lambda name: os.path.join(inp, name)
    t = ["--threads", "2", "--quiet"]
    return {
        "copy-h5-zarr": ["copy", i("in.h5:/x"), "out.zarr"] + t,
        "copy-zarr-h5": ["copy", i("in.zarr"), "out.h5:/x"] + t,
        # 300 chunk files: committed with one syncfs (io/store.c sync_tree);
        # the rest is copy-h5-zarr's, so every n-th call is tried less often
        "copy-h5-zarr-many": ["copy", i("in.h5:/x"), "out.zarr", "--chunks",
                              "2,2"] + t,
        "copy-zarr-zarr3": ["copy", i("in.zarr"), "out.zarr", "--chunks",
                            "8,8", "--zarr-format", "3", "--shards",
                            "16,16"] + t,
        "copy-h5-h5-gzip": ["copy", i("in.h5:/x"), "out.h5:/x", "--chunks",
                            "8,8", "--compress", "gzip:4:shuffle"] + t,
        "copy-zarr3-zarr-blosc": ["copy", i("in3.zarr"), "out.zarr",
                                  "--zarr-format", "2", "--compress",
                                  "blosc:lz4:5", "--filters", "delta"] + t,
        "run-h5": ["run", i("p1.json"), "--json"] + t,
        "run-zarr": ["run", i("p2.json")] + t,
        "svd": ["svd", i("in.h5:/x"), "-o", "svd.h5"] + t,
        "glm-fit": ["glm-fit", i("X.h5:/X"), i("y.h5:/y"), "-o",
                    "model.h5"] + t,
        "svd-randomized": ["svd", i("in.zarr"), "-k", "3", "--randomized",
                           "-o", "svd.zarr"] + t,
        "glm-fit-lbfgs-l2": ["glm-fit", i("X.h5:/X"), i("y.h5:/y"),
                             "--solver", "lbfgs", "--regularizer", "l2",
                             "--lambda", "0.1", "-o", "model.zarr"] + t,
    }


# jobs whose every-n-th-call runs are capped lower than --max-n
MAX_N = {"copy-h5-zarr-many": 8}


def read_log(path):
    """The sites (site, kind, calls), the fired fault (site, kind) or None
    and the calls of each kind that a CK_FAULT_LOG file lists."""
    sites, fired, totals = [], None, {}
    if os.path.exists(path):
        for line in open(path):
            w = line.split()
            if w[0] == "site":
                sites.append((w[1], w[2], int(w[3])))
            elif w[0] == "fired":
                fired = (w[1], w[2])
            elif w[0] == "total":
                totals[w[1]] = int(w[2])
    return sites, fired, totals


def every_n(total, cap):
    """1..total, or cap of them spread evenly (first and last included)."""
    if total <= cap:
        return list(range(1, total + 1))
    return sorted({1 + (total - 1) * i // (cap - 1) for i in range(cap)})


STAMP = re.compile(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}")


def no_stamp(v):
    """A "history" attribute less its time stamps and each command's
    arguments: cli/main.c's cmdline() gives "chunkctl run" when it cannot
    allocate the whole line, by design (svd and glm-fit too).  The lines stay: a lost line (the
    input's history) is still seen."""
    v = STAMP.sub("T", v.decode() if isinstance(v, bytes) else str(v))
    return "\n".join(" ".join(w.split()[:2]) for w in v.split("\n"))


def no_history(o):
    """A JSON attribute document with its "history" less time stamps."""
    if isinstance(o, dict):
        return {k: no_stamp(v) if k == "history" else no_history(v)
                for k, v in o.items()}
    return o


def content_sum(path):
    """What an output holds, less the time stamp in its history: HDF5 files
    through h5py (datasets' dtype, shape, bytes; attributes), Zarr stores
    file by file with their JSON documents parsed."""
    h = hashlib.sha256()
    if os.path.isfile(path):
        import h5py

        def visit(name, obj):
            h.update(name.encode())
            for k in sorted(obj.attrs):
                v = obj.attrs[k]
                h.update(k.encode() + repr(no_stamp(v) if k == "history"
                                           else v).encode())
            if isinstance(obj, h5py.Dataset):
                h.update(str((obj.dtype, obj.shape)).encode())
                h.update(obj[()].tobytes())
        with h5py.File(path, "r") as f:
            visit("/", f)
            f.visititems(visit)
        return h.hexdigest()
    for d, _, fs in sorted(os.walk(path)):
        for f in sorted(fs):
            p = os.path.join(d, f)
            h.update(os.path.relpath(p, path).encode())
            data = open(p, "rb").read()
            if f in (".zattrs", "zarr.json", ".zmetadata"):
                data = json.dumps(no_history(json.loads(data)),
                                  sort_keys=True).encode()
            h.update(data)
    return h.hexdigest()


def outputs_sum(d):
    return {n: content_sum(os.path.join(d, n))
            for n in sorted(os.listdir(d)) if n != "fault.log"}


def check(name, argv, spec, base, ref, inp_sum, inp):
    """Runs argv with CK_FAULT=spec in a fresh directory; '' or a problem."""
    d = tempfile.mkdtemp(prefix=name + "-", dir=base)
    log = os.path.join(d, "fault.log")
    rc, out, err = chunkctl(argv, d, {"CK_FAULT": spec, "CK_FAULT_LOG": log})
    _, fired, _ = read_log(log)
    left = sorted(n for n in os.listdir(d) if n != "fault.log")
    problem = ""
    if rc is None:
        problem = err
    elif rc < 0:
        problem = "killed by signal %d" % -rc
    elif rc in (86, 87) or "Sanitizer" in err or "runtime error" in err:
        problem = "sanitizer report (exit %d)" % rc
    elif rc == 0:
        # The fault was absorbed (or, with threads, not reached).
        if outputs_sum(d) != ref[1]:
            problem = "exit 0, but the outputs differ from the clean run's"
        elif out != ref[0]:
            problem = "exit 0, but stdout differs from the clean run's"
    else:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("chunkctl: "):
            problem = "stderr is not one 'chunkctl: ' line"
        elif left:
            problem = "left behind: " + " ".join(left)
    if not problem and tree_sum(inp) != inp_sum:
        problem = "input changed"
    if problem:
        tail = " | ".join(err.strip().splitlines()[-6:])
        problem = "%s CK_FAULT=%s: exit %s: %s: %s" % (name, spec, rc,
                                                      problem, tail)
    else:
        shutil.rmtree(d)
    return problem, bool(fired)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only")
    ap.add_argument("--max-sites", type=int, default=0,
                    help="walk at most N sites per run (0: all)")
    ap.add_argument("--max-n", type=int, default=200,
                    help="fail at most N different n per kind and run")
    ap.add_argument("--sites-out", help="write the callers seen (return "
                    "addresses, hex, relative to the binary) to this file")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="ck-fault-")
    inp = os.path.join(base, "inputs")
    os.mkdir(inp)
    make_inputs(inp)
    inp_sum = tree_sum(inp)
    failures, total_sites, walked, nruns, nfired, calls = [], 0, 0, 0, 0, 0
    seen = set()
    pool = cf.ThreadPoolExecutor(a.jobs)
    for name, argv in runs(inp).items():
        if a.only and a.only != name:
            continue
        d = tempfile.mkdtemp(prefix=name + "-ref-", dir=base)
        log = os.path.join(d, "fault.log")
        rc, out, err = chunkctl(argv, d, {"CK_FAULT_LOG": log})
        if rc != 0:
            failures.append("%s: the clean run fails: %s" % (name, err))
            continue
        ref = (out, outputs_sum(d))
        sites, _, totals = read_log(log)
        shutil.rmtree(d)
        total_sites += len(sites)
        seen.update(at.split("/")[0] for at, _, _ in sites)
        todo = sites[:a.max_sites] if a.max_sites else sites
        walked += len(todo)
        specs = []
        for at, kind, n in todo:
            specs.append("site:%s:1" % at)
            if n > 1:
                specs.append("site:%s:%d" % (at, n))
        # Then the n-th call of each kind, every n (a site called in a
        # loop fails at each turn, whichever thread makes the call).
        for k in KINDS:
            specs += ["%s:%d" % (k, n) for n in every_n(
                totals.get(k, 0), MAX_N.get(name, a.max_n))]
            specs.append("%s:1+" % k)
        calls += sum(totals.values())
        specs = list(dict.fromkeys(specs))
        futs = [pool.submit(check, name, argv, s, base, ref, inp_sum, inp)
                for s in specs]
        bad = 0
        for f in futs:
            problem, fired = f.result()
            nruns += 1
            nfired += fired
            if problem:
                bad += 1
                failures.append(problem)
                print("FAIL " + problem, flush=True)
        print("%-16s %3d sites, %4d faulted runs, %d failed" %
              (name, len(sites), len(specs), bad), flush=True)
    pool.shutdown()
    print("fault walk: %d of %d sites (caller, caller's caller) walked, "
          "%d distinct callers; %d calls; %d runs (%d fired), %d failures" %
          (walked, total_sites, len(seen), calls, nruns, nfired,
           len(failures)))
    if a.sites_out:
        with open(a.sites_out, "w") as f:
            f.write("".join(x + "\n" for x in sorted(seen)))
    if not a.keep and not failures:
        shutil.rmtree(base)
    else:
        print("kept " + base)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
