"""zarr3_bench.sh's helpers and its section of bench/RESULTS.md.

usage:
  zarr3_bench_report.py pipeline STORE OUT.h5 ROWS,COLS CR,CC NPART
      the partial-read pipeline: NPART inner chunks spread evenly over the
      C-order chunk list (chunk floor((k + 1/2) N / NPART)), a slice step per
      chunk giving exactly its region, each written to OUT.h5:/cK
  zarr3_bench_report.py count ID STORE STRACE.txt
      sums the bytes the traced command read from files under STORE
      (`strace -f -y -s 0`): metadata, shard index, chunk data; prints
      meta.tsv lines "part:ID:KEY<TAB>VALUE"
  zarr3_bench_report.py check-part PIPELINE.json SRC.h5
      the pipeline's outputs equal NumPy's slices of SRC.h5:/x (exit 1 if not)
  zarr3_bench_report.py report META SAMPLES COMMANDS DISTURBED COUNTS PERF RESULTS.md
      replaces the text between <!-- zarr3_bench:begin --> and
      <!-- zarr3_bench:end --> in RESULTS.md (appended when missing)
"""
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True     # no __pycache__ in the checkout
from _report import Samples, machine_rows, profiles, read_commands, read_meta, write_section  # noqa: E402

TARGET_X = 1.1          # sharded v3 within 1.1x of v2's rate
TARGET_PART = 0.02      # 1% of the inner chunks reads <= 2% of the bytes

STORES = ["v2zstd", "v2blosc", "v3zstd", "v3szstd", "v3sblosc"]
LABEL = {
    "v2zstd": "v2, zstd:3",
    "v2blosc": "v2, blosc lz4:5 shuffle",
    "v3zstd": "v3 unsharded, zstd:3",
    "v3szstd": "v3 sharded, zstd:3",
    "v3sblosc": "v3 sharded, blosc lz4:5 shuffle",
}
V2_OF = {"v3szstd": "v2zstd", "v3sblosc": "v2blosc", "v3zstd": "v2zstd"}
META_NAMES = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}


# ------------------------------------------------------------ pipeline
def chosen_chunks(nchunks, npart):
    return [math.floor((k + 0.5) * nchunks / npart) for k in range(npart)]


def pipeline(store, out_h5, shape, chunks, npart):
    rows, cols = (int(v) for v in shape.split(","))
    cr, cc = (int(v) for v in chunks.split(","))
    nr, nc = -(-rows // cr), -(-cols // cc)
    steps, outputs = [], {}
    for k, i in enumerate(chosen_chunks(nr * nc, int(npart))):
        r, c = divmod(i, nc)
        name = "c%d" % k
        steps.append({"name": name, "op": "slice", "args": ["x"],
                      "index": [[r * cr, min(rows, (r + 1) * cr)], [c * cc, min(cols, (c + 1) * cc)]]})
        outputs[name] = "%s:/%s" % (out_h5, name)
    print(json.dumps({"inputs": {"x": store}, "steps": steps, "outputs": outputs}, indent=1))


def check_part(pipeline_path, src):
    import h5py
    import numpy as np
    p = json.load(open(pipeline_path))
    x = h5py.File(src, "r")["x"]
    for st in p["steps"]:
        (r0, r1), (c0, c1) = st["index"]
        path, _, dset = p["outputs"][st["name"]].rpartition(":")
        got = h5py.File(path, "r")[dset][:]
        if not np.array_equal(got, x[r0:r1, c0:c1]):
            sys.exit("zarr3_bench: %s: slice %s differs from src.h5" % (pipeline_path, st["index"]))


# ------------------------------------------------------------ counting bytes
def index_region(store):
    """(bytes, at_start) of a shard's index, or None when not sharded."""
    try:
        meta = json.load(open(os.path.join(store, "zarr.json")))
    except FileNotFoundError:
        return None
    for codec in meta.get("codecs", []):
        if codec.get("name") == "sharding_indexed":
            cfg = codec["configuration"]
            outer = meta["chunk_grid"]["configuration"]["chunk_shape"]
            n = math.prod(o // i for o, i in zip(outer, cfg["chunk_shape"]))
            crc = any(c.get("name") == "crc32c" for c in cfg.get("index_codecs", []))
            return n * 16 + (4 if crc else 0), cfg.get("index_location", "end") == "start"
    return None


CALL = re.compile(r"^(\d+)\s+(.*)$")
FD = re.compile(r"^(read|pread64|readv|preadv|preadv2)\(\d+<([^>]*)>,(.*)\)\s+=\s+(-?\d+)")
MMAP_FD = re.compile(r"^mmap\(.*?,\s*\d+<([^>]*)>,")


def count(ident, store, trace):
    root = os.path.realpath(store) + os.sep
    idx = index_region(store)
    pending = {}
    n = {"meta_bytes": 0, "index_bytes": 0, "data_bytes": 0, "calls": 0, "unplaced_bytes": 0, "mmaps": 0}
    files = set()
    for line in open(trace, errors="replace"):
        m = CALL.match(line.rstrip("\n"))
        if not m:
            continue
        pid, call = m.groups()
        if call.endswith("<unfinished ...>"):
            pending[pid] = call[: -len("<unfinished ...>")].rstrip()
            continue
        r = re.match(r"^<\.\.\. \w+ resumed>(.*)$", call)
        if r:
            call = pending.pop(pid, "") + r.group(1)
        mm = MMAP_FD.match(call)
        if mm and mm.group(1).startswith(root):
            n["mmaps"] += 1
            continue
        f = FD.match(call)
        if not f or not f.group(2).startswith(root):
            continue
        name, path, args, ret = f.group(1), f.group(2), f.group(3), int(f.group(4))
        if ret <= 0:
            continue
        n["calls"] += 1
        if os.path.basename(path) in META_NAMES:
            n["meta_bytes"] += ret
            continue
        files.add(path)
        off = None
        if name == "pread64":
            off = int(args.rsplit(",", 1)[1])
        if idx is None:
            n["data_bytes"] += ret
        elif off is None:
            n["unplaced_bytes"] += ret      # a read without an offset: data or index, not told apart
        else:
            ib, at_start = idx
            size = os.path.getsize(path)
            lo, hi = (0, ib) if at_start else (size - ib, size)
            ov = max(0, min(off + ret, hi) - max(off, lo))
            n["index_bytes"] += ov
            n["data_bytes"] += ret - ov
    n["total_bytes"] = n["meta_bytes"] + n["index_bytes"] + n["data_bytes"] + n["unplaced_bytes"]
    n["files"] = len(files)
    n["index_each"] = idx[0] if idx else 0
    for k, v in n.items():
        print("part:%s:%s\t%d" % (ident, k, v))


# ------------------------------------------------------------ report
def report(meta_path, samples_path, cmds_path, disturbed_path, counts_path, perf_path, results_path):
    meta = read_meta(meta_path)
    meta.update(read_meta(counts_path))
    raw = int(meta["raw_bytes"])
    smp = Samples(samples_path, disturbed_path)
    walls, rss, cpu, med = smp.walls, smp.rss, smp.cpu, smp.med
    gbs = {k: raw / 1e9 / m for k, m in med.items()}
    stored = {s: int(meta["stored:" + s]) for s in STORES}
    size = "%g GiB" % (raw / 2**30) if raw >= 2**30 else "%g MiB" % (raw / 2**20)
    imp = med.get("import:zarrita", 0.0)

    begin, end = "<!-- zarr3_bench:begin -->", "<!-- zarr3_bench:end -->"
    out = [begin, "", "## zarr3_bench: Zarr v3 sharded vs v2 in chunkctl and zarrita, and partial reads of a sharded array", "",
           "Made by `bench/zarr3_bench.sh` (rerun it to replace this section).", "",
           "| | |", "|---|---|"] + machine_rows(meta) + [
        "| others | %s |" % meta["versions"],
        "| data | %s, %s raw, inner chunks %s (%d chunks); `%s`, then `chunkctl copy src.h5:/x S.zarr ARGS` per store |" % (
            meta["shape"], size, meta["chunks"].replace(",", " x "), int(meta["nchunks"]), meta["gen"]),
        "| runs | %s per row, tools alternating within each round; before each sample, untimed: outputs removed + `sync`, "
        "the store re-read into the page cache, free memory %s; timed rounds took %s s |" % (
            meta["runs"], meta["memstate"], meta["elapsed"]),
        "| load average | %s (1/5/15 min, before -> after) |" % meta["load"],
        "| interference | %d redos for %d kept samples, because other work used > %s of a core during them; %s; "
        "other work in the kept samples: %.1f CPU s over %.0f s timed |" % (
            smp.n_redone, smp.n_samples, meta["disturbed"],
            "none kept disturbed" if not smp.kept_disturbed else "kept disturbed after %s redos: " % meta["max_redo"] + ", ".join(smp.kept_disturbed),
            smp.other_total, smp.wall_total),
        "| outputs | %s |" % meta["verified"],
        "",
        "| store | ARGS | stored MiB | ratio | files |",
        "|---|---|---:|---:|---:|",
    ]
    for s in STORES:
        out.append("| %s.zarr (%s) | `%s` | %.1f | %.2f | %s |" % (
            s, LABEL[s], meta["args:" + s], stored[s] / 2**20, raw / stored[s], meta["files:" + s]))

    def x_v2(k, s, tool):
        v = V2_OF.get(s)
        kk = "%s:%s%s" % (tool, v, ":h5" if tool == "copy" else "") if v else None
        return "%.3f" % (gbs[k] / gbs[kk]) if kk in gbs else ""

    out += ["", "### Results", "",
            "GB/s = %d raw bytes / median wall (10^9 bytes/s), whole process. \"x v2\" = the row's rate / the rate of the "
            "same tool on the v2 store of the same codec and chunking (the target asks >= %.3f = 1/%.1f). "
            "\"x zarrita\" = chunkctl's rate / zarrita's on the same store. zarrita's \"load only\" subtracts "
            "the median Node + zarrita start-up (`node zarr3_zarrita.mjs import`, %.3f s). "
            "`chunkctl verify` reads and decodes every chunk and writes nothing (the read+decode floor); "
            "**chunkctl copy's rows include writing the %s uncompressed .h5** (write floor below: %.2f GB/s); "
            "zarrita reads into one fresh %s array. Peak RSS is the maximum over runs (`/usr/bin/time %%M`); "
            "CPU is the median of `%%P` (200%% = both cores); user / sys are median CPU seconds." % (
                raw, 1 / TARGET_X, TARGET_X, imp, size, gbs.get("write:dd", 0), size),
            "",
            "| tool | store | median s | min s | max s | peak RSS MiB | CPU % | user / sys s | GB/s | x v2 | x zarrita |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tools = [("chunkctl verify (read+decode)", "verify"), ("chunkctl copy -> .h5 (--compress none)", "copy"),
             ("zarrita 0.7.5 under Node: zarr.get of the whole array", "zarrita")]
    for title, tool in tools:
        for s in STORES:
            k = "%s:%s%s" % (tool, s, ":h5" if tool == "copy" else "")
            if k not in walls:
                continue
            xz = "%.2f" % (gbs[k] / gbs["zarrita:" + s]) if tool != "zarrita" and "zarrita:" + s in gbs else ""
            rate = "%.2f" % gbs[k]
            if tool == "zarrita" and med[k] > imp > 0:
                rate += " (%.2f load only)" % (raw / 1e9 / (med[k] - imp))
            out.append("| %s | %s | %.3f | %.3f | %.3f | %.0f | %.0f | %s | %s | %s | %s |" % (
                title, LABEL[s], med[k], min(walls[k]), max(walls[k]), max(rss[k]) / 1024,
                statistics.median(cpu[k]), smp.us(k), rate, x_v2(k, s, tool), xz))

    # ------------------------------------------------------------ partial reads
    npart, nch = int(meta["npart"]), int(meta["nchunks"])
    out += ["", "### Partial read: %d of the %d inner chunks (%.2f%%)" % (npart, nch, 100 * npart / nch), "",
            "One `chunkctl run` of a pipeline with a `slice` step per chosen chunk (exactly its region, each written to "
            "its own .h5 dataset); chunks floor((k + 1/2) x %d / %d), k = 0..%d, spread over the C-order chunk list. "
            "Bytes: the sum of the return values of read/pread64/readv/preadv on files under the store "
            "(`strace -f -y -s 0 -e trace=read,pread64,readv,preadv,preadv2,mmap`, one untimed run per store; "
            "no store file was mmapped unless the table says so). Index = bytes of a read that fall in a shard's index "
            "(the last 16 x inner chunks per shard + 4 crc32c bytes); metadata = zarr.json / .zarray. "
            "Wall = median of the timed runs (whole process)." % (nch, npart, npart - 1),
            "",
            "| store | read calls | files read (not metadata) | chunk data bytes | index bytes | metadata bytes | total read | stored bytes | read / stored | wall s (median) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    part = {}
    for s in STORES:
        g = lambda k: int(meta.get("part:%s:%s" % (s, k), 0))  # noqa: E731
        if "part:%s:total_bytes" % s not in meta:
            continue
        part[s] = g("total_bytes") / stored[s]
        extra = []
        if g("unplaced_bytes"):
            extra.append("%d bytes by read() without offset, not split into index/data" % g("unplaced_bytes"))
        if g("mmaps"):
            extra.append("%d mmaps of store files: their bytes are not counted" % g("mmaps"))
        out.append("| %s | %d | %d | %d | %s | %d | %d | %d | **%.3f%%**%s | %s |" % (
            LABEL[s], g("calls"), g("files"), g("data_bytes"),
            "%d (%d x %d)" % (g("index_bytes"), g("index_bytes") // g("index_each"), g("index_each"))
            if g("index_each") and g("index_bytes") % g("index_each") == 0 else str(g("index_bytes")),
            g("meta_bytes"), g("total_bytes"), stored[s], 100 * part[s],
            (" (" + "; ".join(extra) + ")") if extra else "",
            "%.3f" % med["part:" + s] if "part:" + s in med else ""))

    # ------------------------------------------------------------ floors
    out += ["", "### Floors", "", "| what | median s | min s | max s | peak RSS MiB | CPU % | user / sys s | rate |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]

    def frow(name, k, rate):
        if k not in walls:
            return None
        return "| %s | %.3f | %.3f | %.3f | %.0f | %.0f | %s | %s |" % (
            name, med[k], min(walls[k]), max(walls[k]), max(rss[k]) / 1024, statistics.median(cpu[k]), smp.us(k), rate)

    rows = [frow("read floor: `find S -type f -exec cat {} +`, %s (%s files)" % (LABEL[s], meta["files:" + s]), "cat:" + s,
                 "%.2f GB/s of file bytes" % (stored[s] / 1e9 / med["cat:" + s]) if "cat:" + s in med else "")
            for s in STORES]
    rows.append(frow("write floor: `dd if=/dev/zero bs=8M` (%s, buffered, to the output dir)" % size, "write:dd",
                     "%.2f GB/s" % gbs.get("write:dd", 0)))
    rows.append(frow("start-up: `node zarr3_zarrita.mjs import` (Node + zarrita)", "import:zarrita", ""))
    out += [r for r in rows if r]

    # ------------------------------------------------------------ targets
    def verdict(ok):
        return "**met**" if ok else "**not met**"

    clean = {}      # id -> walls of the kept samples that were not disturbed
    for line in open(samples_path):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 9 and f[6] == "0":
            clean.setdefault(f[0], []).append(float(f[2]))
    dist = {k: len(v) - len(clean.get(k, [])) for k, v in walls.items()}

    out += ["", "### Targets (from the issue)", "", "| target | measured | verdict |", "|---|---|---|"]
    for s in ("v3szstd", "v3sblosc"):
        v = V2_OF[s]
        parts, oks = [], []
        for title, tool in (("verify", "verify"), ("copy -> .h5", "copy"), ("zarrita", "zarrita")):
            suf = ":h5" if tool == "copy" else ""
            a, b = "%s:%s%s" % (tool, s, suf), "%s:%s%s" % (tool, v, suf)
            if a not in med or b not in med:
                continue
            x = med[b] / med[a]
            xmin = min(walls[b]) / min(walls[a])
            ok = x >= 1 / TARGET_X
            oks.append((title, ok))
            note = ""
            if dist[a] or dist[b]:
                note = "; %d + %d of the samples kept disturbed" % (dist[a], dist[b])
                if a in clean and b in clean:
                    note += ", undisturbed ones only: %.3fx (%d + %d samples)" % (
                        statistics.median(clean[b]) / statistics.median(clean[a]), len(clean[a]), len(clean[b]))
            parts.append("%s %.2f vs %.2f GB/s = %.3fx (fastest runs: %.3fx%s)" % (title, gbs[a], gbs[b], x, xmin, note))
        met = [t for t, ok in oks if ok]
        summary = ("**met**" if len(met) == len(oks) else "**not met**" if not met
                   else "**met by %s only**" % ", ".join(met))
        out.append("| %s within %.1fx of %s's rate (rate ratio >= %.3f) | %s | %s |" % (
            LABEL[s], TARGET_X, LABEL[v], 1 / TARGET_X, "; ".join(parts), summary))
    for s in ("v3szstd", "v3sblosc"):
        if s in part:
            out.append("| %s: reading %.2f%% of the inner chunks reads <= %.0f%% of its bytes | %s of %s bytes = %.3f%% "
                       "(index %s bytes) | %s |" % (
                           LABEL[s], 100 * npart / nch, 100 * TARGET_PART, meta["part:%s:total_bytes" % s], stored[s],
                           100 * part[s], meta["part:%s:index_bytes" % s], verdict(part[s] <= TARGET_PART)))

    # ------------------------------------------------------------ notes
    notes = []
    for s in ("v3zstd", "v3szstd", "v3sblosc"):
        k, kv = "verify:" + s, "verify:" + V2_OF[s]
        if k in med and kv in med:
            notes.append("verify on %s: %.3f s at %.0f%% CPU (user %.2f s, sys %.2f s) vs %s %.3f s at %.0f%% CPU "
                         "(user %.2f s, sys %.2f s)." % (
                             LABEL[s], med[k], statistics.median(cpu[k]), statistics.median(smp.usr[k]),
                             statistics.median(smp.sys_[k]), LABEL[V2_OF[s]], med[kv], statistics.median(cpu[kv]),
                             statistics.median(smp.usr[kv]), statistics.median(smp.sys_[kv])))
    spread = smp.spread(0.05)
    if spread:
        notes.append("Spread: max > 1.3x median for " + ", ".join(spread) + "; the rates above use medians.")
    if notes:
        out += ["", "### Notes (computed from this run)", ""] + ["- " + n for n in notes]
    try:
        prof = profiles(open(perf_path).read())
    except FileNotFoundError:
        prof = []
    if prof:
        prof[1] = ("### Profiles where a sharded store's verify or copy missed 1/%.1f of v2's rate "
                   "(`perf record -g`, top 10 by self time; \"target\" = 1.1 x v2's median, "
                   "or for the v2 row its own median)" % TARGET_X)
    out += prof

    out += ["", "### Commands (as run; paths under %s)" % meta["work"], "", "```"]
    out += ["%-18s %s" % (k, c) for k, c in read_commands(cmds_path)]
    out += ["```", "", "The partial-read pipelines are `%s/data/part_S.json`; raw samples `%s/log/samples.tsv`, "
            "traces `%s/log/strace.S.txt`." % (meta["work"], meta["work"], meta["work"]), "", end]
    write_section(results_path, begin, end, "\n".join(out))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"pipeline": pipeline, "count": count, "check-part": check_part, "report": report}[cmd](*args)
