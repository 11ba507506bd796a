#!/usr/bin/python3
"""tests/fault/test_kill.py - kill -9 anywhere (issue 17).

For each job below (long-ish copy, run and svd runs, to Zarr and to HDF5,
all with --threads 2): a reference output made once uninterrupted (and a
second uninterrupted run, timed, that must give the same bytes: the
comparison's own check); then ROUNDS rounds of: start the job, SIGKILL it
at a moment drawn uniformly from [0, the reference's duration], and check

- the target is absent, or complete and equal to the reference (values
  and attributes, history aside, read with h5py / zarr);
- `JOB --resume` then exits 0, leaves nothing in the directory but the
  target (no `.NAME.ck-tmp-*`), and gives the reference's bytes: for Zarr
  every file byte for byte, the attribute files (.zattrs, zarr.json)
  compared as JSON without `history`; for HDF5 every dataset's stored
  chunks, (filter_mask, bytes) from h5py's read_direct_chunk, plus values
  and attributes (history aside).  When the kill landed after the commit,
  `JOB --resume` says the target exists (exit 1, nothing touched) and
  `JOB --resume --force` redoes it, with the same checks.

Each kill is counted by where it landed: before the temporary existed,
during writing (a temporary and no target), after the commit (the target
complete), or after the process had ended.  The summary line gives the
counts per job.

usage: test_kill.py [--rounds N] [--seed S] [--only JOB[,JOB]] [--scale F]
                    [--keep]
env:   CHUNKCTL (the binary), CK_KILL_SEED (default: a fresh seed, printed),
       CK_KILL_ROUNDS, CK_KILL_SCALE (input sizes: 2 for CI, about
       0.1-0.5 s a job on a quiet 2-core machine; 8 for 1-3 s jobs)
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CK = os.environ.get("CHUNKCTL", "chunkctl")
# The interop suite's helpers: _common sets HDF5_PLUGIN_PATH before h5py
# loads (chunkctl's zstd outputs), and Zarr v3 stores are read with its
# reader written from the specification.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "interop"))
import _common as C  # noqa: E402  (before h5py, on purpose)
import numpy as np  # noqa: E402
import h5py  # noqa: E402
import zarr  # noqa: E402  (2.13: Zarr v2 only)
import zarr3_spec as Z3  # noqa: E402

TIMEOUT = 120
EXISTS = re.compile(r"^chunkctl: \S+ exists \(use --force to overwrite "
                    r"it\)\n$")
# The resumed run's note (without --quiet), one per array.
KEPT = re.compile(r"^chunkctl: \S+: (\d+) of (\d+) (?:chunks|shards) kept "
                  r"from the killed run, the rest computed$", re.M)
PLACES = ("before-tmp", "writing", "after-commit", "ended")


class Failure(Exception):
    pass


def chunkctl(args, cwd):
    p = subprocess.run([CK] + [str(a) for a in args], cwd=cwd,
                       capture_output=True, text=True, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr


# ---- the jobs ----

def make_inputs(d, scale):
    """Inputs (edge chunks everywhere) and pipelines in d; the row count
    grows with scale."""
    rows = int(1600 * scale)
    tall = int(32000 * scale)

    def gen(*a):
        rc, _, err = chunkctl(["gen", "--quiet"] + list(a), d)
        if rc != 0:
            sys.exit("test_kill.py: gen %s: %s" % (a, err.strip()))
    gen("a.h5:/x", "--shape", "%d,1000" % rows, "--chunks", "240,260",
        "--seed", "1")
    gen("a.zarr", "--shape", "%d,1000" % rows, "--chunks", "240,260",
        "--seed", "2")
    gen("t.h5:/x", "--shape", "%d,100" % tall, "--chunks", "1000,100",
        "--dist", "normal", "--seed", "3")
    gen("t.zarr", "--shape", "%d,100" % tall, "--chunks", "1000,100",
        "--dist", "normal", "--seed", "4")
    for ext, inp in (("zarr", "a.zarr"), ("h5", "a.h5:/x")):
        # An elementwise map, a reduction and a histogram: three arrays
        # (four with the histogram's edges) in one output store.
        p = {"inputs": {"x": os.path.join(d, inp)},
             "steps": [
                 {"name": "c", "op": "subtract", "args": ["x", 0.5]},
                 {"name": "e", "op": "multiply", "args": ["c", "c"]},
                 {"name": "s", "op": "sum", "args": ["e"], "axis": 0},
                 {"name": "h", "op": "histogram", "args": ["x"],
                  "bins": 16, "range": [0, 1]}],
             "outputs": {"e": "out.%s:/e" % ext, "s": "out.%s:/s" % ext,
                         "h": "out.%s:/h" % ext}}
        with open(os.path.join(d, "p-%s.json" % ext), "w") as f:
            json.dump(p, f)


def jobs(inp):
    """name -> (argv, target)."""
    i = lambda name: os.path.join(inp, name)  # noqa: E731
    t = ["--threads", "2", "--quiet"]
    return {
        "copy-h5-zarr": (["copy", i("a.h5:/x"), "out.zarr"] + t, "out.zarr"),
        "copy-zarr-zarr3": (["copy", i("a.zarr"), "out.zarr", "--chunks",
                             "100,125", "--zarr-format", "3", "--shards",
                             "300,500"] + t, "out.zarr"),
        "copy-h5-h5": (["copy", i("a.h5:/x"), "out.h5:/x", "--chunks",
                        "256,192", "--compress", "gzip:1:shuffle"] + t,
                       "out.h5"),
        "run-zarr": (["run", i("p-zarr.json"), "--compress", "zstd:3"] + t,
                     "out.zarr"),
        "run-h5": (["run", i("p-h5.json"), "--compress", "zstd:3"] + t,
                   "out.h5"),
        "svd-zarr": (["svd", i("t.zarr"), "-o", "out.zarr"] + t, "out.zarr"),
        "svd-h5": (["svd", i("t.h5:/x"), "-o", "out.h5"] + t, "out.h5"),
    }


# ---- reading outputs ----

def attrs_of(obj):
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v)
            for k, v in obj.attrs.items() if k != "history"}


def h5_chunks(d):
    """{chunk offset: (filter_mask, bytes)} of a chunked dataset."""
    out = {}
    for k in range(d.id.get_num_chunks()):
        off = d.id.get_chunk_info(k).chunk_offset
        mask, data = d.id.read_direct_chunk(off)
        out[off] = (mask, bytes(data))
    return out


def values(path):
    """{name: (dtype, shape, value bytes, attributes)} of every array and
    group of an output, read with h5py or zarr (history aside)."""
    out = {}
    if path.endswith(".h5"):
        with h5py.File(path, "r") as f:
            out["/"] = ("group", attrs_of(f))

            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    v = obj[()]
                    out[name] = (str(obj.dtype), obj.shape,
                                 np.ascontiguousarray(v).tobytes(),
                                 attrs_of(obj))
                else:
                    out[name] = ("group", attrs_of(obj))
            f.visititems(visit)
        return out
    if os.path.exists(os.path.join(path, "zarr.json")):
        for name, meta in Z3.walk(path).items():
            attrs = C.without_history(meta.get("attributes", {}))
            if meta["node_type"] == "group":
                out[name] = ("group", attrs)
                continue
            a = Z3.read_array(path, name, meta)
            out[name] = (str(a.dtype), a.shape, a.tobytes(), attrs)
        return out
    z = zarr.open(path, mode="r")
    if isinstance(z, zarr.Array):
        return {"/": (str(z.dtype), z.shape, z[...].tobytes(),
                      C.without_history(z.attrs.asdict()))}
    out["/"] = ("group", C.without_history(z.attrs.asdict()))
    for name, a in z.arrays(recurse=True):
        out[name] = (str(a.dtype), a.shape, a[...].tobytes(),
                     C.without_history(a.attrs.asdict()))
    return out


def stored(path):
    """What must be byte-identical after a resume: a Zarr store's files;
    an HDF5 file's chunks (or, for a contiguous dataset, its values)."""
    if not path.endswith(".h5"):
        return C.zarr_files(path)
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj.chunks, str(obj.dtype), obj.shape,
                             obj.compression, obj.shuffle,
                             h5_chunks(obj) if obj.chunks else
                             np.ascontiguousarray(obj[()]).tobytes())
        f.visititems(visit)
    return out


def diff(got, want, what):
    """Raises Failure naming the first difference of two dicts."""
    if sorted(got) != sorted(want):
        raise Failure("%s: entries %s, want %s" %
                      (what, sorted(got)[:20], sorted(want)[:20]))
    for k in sorted(want):
        if got[k] != want[k]:
            g, w = got[k], want[k]
            if isinstance(w, tuple) and isinstance(w[-1], dict):
                bad = [c for c in w[-1] if g[-1].get(c) != w[-1][c]]
                raise Failure("%s: %s differs in %d chunks, first %s" %
                              (what, k, len(bad), bad[:1]))
            raise Failure("%s: %s differs" % (what, k))


def leftovers(d, target):
    return sorted(n for n in os.listdir(d) if n != target)


def remove(p):
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    elif os.path.lexists(p):
        os.remove(p)


# ---- one job ----

def run_job(name, argv, target, work, rounds, rng, counts):
    d = os.path.join(work, name)
    os.makedirs(d)
    out = os.path.join(d, target)
    # The reference, then a second uninterrupted run that must give the
    # same bytes; the job's duration is the shorter of the two.
    t0 = time.monotonic()
    rc, _, err = chunkctl(argv, d)
    dur = time.monotonic() - t0
    if rc != 0:
        raise Failure("%s: reference run exited %d: %s" % (name, rc, err))
    ref = os.path.join(work, name + ".ref-" + target)
    os.rename(out, ref)
    ref_stored, ref_values = stored(ref), values(ref)
    t0 = time.monotonic()
    p = subprocess.Popen([CK] + argv, cwd=d, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _, err = p.communicate(timeout=TIMEOUT)
    dur, rc = min(dur, time.monotonic() - t0), p.returncode
    if rc != 0:
        raise Failure("%s: second run exited %d: %s" % (name, rc, err))
    diff(stored(out), ref_stored, name + ": a second uninterrupted run")
    remove(out)

    for k in range(rounds):
        what = "%s round %d" % (name, k)
        if leftovers(d, None):
            raise Failure("%s: left before the round: %s" %
                          (what, leftovers(d, None)))
        when = rng.uniform(0, dur)
        p = subprocess.Popen([CK] + argv, cwd=d, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        time.sleep(when)
        ended = p.poll() is not None
        if not ended:
            p.send_signal(signal.SIGKILL)
        try:
            _, perr = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Failure("%s: did not end" % what)
        if ended and p.returncode != 0:
            raise Failure("%s: exited %d: %s" % (what, p.returncode, perr))
        tmps = glob.glob(os.path.join(d, ".%s.ck-tmp-*" % target))
        if ended:
            place = "ended"
        elif os.path.lexists(out):
            place = "after-commit"
        elif tmps:
            place = "writing"
        else:
            place = "before-tmp"
        counts[place] += 1
        # Absent, or complete and equal to the reference.
        if os.path.lexists(out):
            diff(values(out), ref_values, what + ": the killed run's output")
            if place == "ended" and (tmps or leftovers(d, target)):
                raise Failure("%s: ended, and left %s" %
                              (what, leftovers(d, target)))
        # Resume (with its notes: how many units it kept).
        loud = [x for x in argv if x != "--quiet"] + ["--resume"]
        if os.path.lexists(out):
            rc, _, err = chunkctl(argv + ["--resume"], d)
            if rc != 1 or not EXISTS.match(err):
                raise Failure("%s: --resume over a complete output exited "
                              "%d: %r" % (what, rc, err))
            loud.append("--force")
        rc, _, err = chunkctl(loud, d)
        for m in KEPT.finditer(err):
            counts["kept"] += int(m.group(1))
            counts["units"] += int(m.group(2))
        if rc != 0:
            raise Failure("%s (killed at %.3f s, %s): --resume exited %d: "
                          "%s" % (what, when, place, rc, err))
        if leftovers(d, target):
            raise Failure("%s: --resume left %s" %
                          (what, leftovers(d, target)))
        diff(stored(out), ref_stored, "%s (killed at %.3f s, %s): the resumed "
             "output" % (what, when, place))
        if target.endswith(".h5"):
            # (A Zarr store's files, equal, say it all.)
            diff(values(out), ref_values,
                 what + ": the resumed output's values")
        remove(out)
    return dur


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int,
                    default=int(os.environ.get("CK_KILL_ROUNDS", "20")))
    ap.add_argument("--seed", type=int,
                    default=int(os.environ["CK_KILL_SEED"])
                    if os.environ.get("CK_KILL_SEED") else None)
    ap.add_argument("--only")
    ap.add_argument("--scale", type=float,
                    default=float(os.environ.get("CK_KILL_SCALE", "2")))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else \
        int.from_bytes(os.urandom(4), "little")
    print("kill test: seed %d (CK_KILL_SEED=%d repeats it), %d rounds, "
          "scale %g" % (seed, seed, a.rounds, a.scale), flush=True)
    work = tempfile.mkdtemp(prefix="ck-kill-")
    inp = os.path.join(work, "in")
    os.makedirs(inp)
    make_inputs(inp, a.scale)
    todo = jobs(inp)
    if a.only:
        todo = {k: v for k, v in todo.items() if k in a.only.split(",")}
    summary, failed = [], 0
    t_all = time.monotonic()
    for name, (argv, target) in todo.items():
        counts = dict.fromkeys(PLACES + ("kept", "units"), 0)
        t0 = time.monotonic()
        try:
            dur = run_job(name, argv, target, work, a.rounds,
                          random.Random("%d:%s" % (seed, name)), counts)
            status = "ok"
        except (Failure, subprocess.TimeoutExpired) as e:
            print("FAIL %s" % e, flush=True)
            failed += 1
            dur, status = float("nan"), "FAILED"
        line = "%s: %s, job %.2f s, %d kills: %s; resumes kept %d of %d " \
            "units (%.1f s)" % (
                name, status, dur, sum(counts[p] for p in PLACES),
                " ".join("%s %d" % (p, counts[p]) for p in PLACES),
                counts["kept"], counts["units"], time.monotonic() - t0)
        print(line, flush=True)
        summary.append((name, counts))
    tot = dict.fromkeys(PLACES, 0)
    for _, c in summary:
        for p in PLACES:
            tot[p] += c[p]
    print("kill summary (seed %d, %.0f s): %s; all: %s" % (
        seed, time.monotonic() - t_all,
        "; ".join("%s %s kept %d/%d" % (
            n, "/".join(str(c[p]) for p in PLACES), c["kept"], c["units"])
            for n, c in summary),
        " ".join("%s %d" % (p, tot[p]) for p in PLACES)))
    print("  (kills before the temporary existed / during writing / after "
          "the commit / after the process ended; units kept by the resumes "
          "of the total they wrote)")
    if a.keep:
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
