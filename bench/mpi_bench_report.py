"""Turn mpi_bench.sh's samples into its section of bench/RESULTS.md.

usage: python3 mpi_bench_report.py LOGDIR PIPELINEDIR RESULTS.md|-

LOGDIR holds meta.tsv (key<TAB>value), samples.tsv and disturbed.tsv (see
_report.py), phases.tsv (id, run, key=value fields: the ranks' peak RSS from
the rank wrapper, dask's phases and RSS from mpi_bench_peers.py),
commands.tsv, checks.txt, plans.txt and uptime.txt.  Only the text between
<!-- mpi_bench:begin --> and <!-- mpi_bench:end --> in RESULTS.md is
replaced (appended when the markers are missing); with meta's compress
other than none, between <!-- mpi_bench compress=SPEC:begin --> and its
end instead; "-" prints the section.
"""
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True     # no __pycache__ in the checkout
from _report import Samples, machine_rows, median, read_commands, read_lines, read_meta, write_section  # noqa: E402

BEGIN, END = "<!-- mpi_bench:begin -->", "<!-- mpi_bench:end -->"

ROWS = {
    "a": "(a) sum over axis 0 of a float64 array of %(a)s",
    "b": "(b) mean and std of all of the same array (one pipeline, `--json`)",
    "c": "(c) 100-bin histogram over [%(hist)s] of a float64 array of %(c)s",
    "d": "(d) exact SVD (TSQR) of %(d)s float64, U not written",
    "e": "(e) logistic regression (Newton, intercept, no penalty, until the largest gradient entry < %(tol)s) of %(e)s float64",
}
DISTRIBUTED = {"a": True, "b": True, "c": True, "d": True, "e": True}
CONFIGS = [("r1t1", "chunkctl, 1 rank x 1 thread"), ("r2t1", "chunkctl, 2 ranks x 1 thread"),
           ("r1t2", "chunkctl, 1 rank x 2 threads"),
           ("dask", "dask.distributed, 2 workers x 1 thread")]


def phases(path):
    """phases.tsv -> {id: {key: [values over runs]}}."""
    out = defaultdict(lambda: defaultdict(list))
    for line in read_lines(path):
        f = line.split("\t")
        for kv in f[2:]:
            if "=" in kv:
                k, v = kv.split("=", 1)
                out[f[0]][k].append(float(v))
    return out


def main(logdir, pipedir, results_path):
    meta = read_meta(os.path.join(logdir, "meta.tsv"))
    smp = Samples(os.path.join(logdir, "samples.tsv"), os.path.join(logdir, "disturbed.tsv"))
    ph = phases(os.path.join(logdir, "phases.tsv"))
    walls, med, cpu = smp.walls, smp.med, smp.cpu
    cmds = dict(read_commands(os.path.join(logdir, "commands.tsv")))
    checks = [line for line in read_lines(os.path.join(logdir, "checks.txt")) if line.strip()]
    fails = [line.split("\t") for line in read_lines(os.path.join(logdir, "failures.tsv")) if line.strip()]
    plans = read_lines(os.path.join(logdir, "plans.txt"))
    uptimes = read_lines(os.path.join(logdir, "uptime.txt"))
    date = meta["date"].split()[0]
    comp = meta.get("compress", "none")
    begin, end = (BEGIN, END) if comp == "none" else (
        BEGIN.replace("mpi_bench", "mpi_bench compress=" + comp), END.replace("mpi_bench", "mpi_bench compress=" + comp))
    sizes = {"a": "%s (%.2f GB)" % (meta["shape:a"], int(meta.get("stored:A", 0)) / 1e9),
             "c": "%s elements (%.2f GB)" % (meta["shape:c"], int(meta.get("stored:H", 0)) / 1e9),
             "d": "%s (%.2f GB)" % (meta["shape:d"], int(meta.get("stored:D", 0)) / 1e9),
             "e": "%s (%.2f GB) and y" % (meta["shape:e"], int(meta.get("stored:E", 0)) / 1e9),
             "hist": meta["hist"].replace(" ", ", "), "tol": meta.get("glm_tol", "1e-8")}

    out = [begin, "", "## MPI distribution, %s%s" % ("" if comp == "none" else comp + " data, ", date), ""]
    out += [
        "Made by `bench/mpi_bench.sh` (issue 16, Benchmark; rerun it to replace this section; "
        "`bash bench/mpi_bench.sh --help` for options).",
        "",
        "| | |",
        "|---|---|",
    ] + machine_rows(meta) + [
        "| MPI | %s; every chunkctl configuration runs under `%s`, each rank with `--threads T`, "
        "default `--memory` (a quarter of RAM, per rank) |" % (meta["mpi"], meta["mpirun"]),
        "| peers | %s |" % meta["versions"],
        "| data | HDF5 made by `chunkctl gen`, %s, normal(0, 1) float64; "
        "size `%s`%s |" % ("**uncompressed** (`--compress none`)" if comp == "none" else
                           "**compressed** (`--compress %s`)" % comp,
                           meta["size"], "" if meta["size"] == "full" else " (**not the issue's sizes**)"),
        "| runs | %s per configuration, the four configurations of a row in a rotating order within each round; "
        "before each sample, untimed: outputs removed + `sync`, the input re-read into the page cache (hot), "
        "free memory %s |" % (meta["runs"], meta["memstate"]),
        "| load | `uptime` before: `%s`; after: `%s`; timed rounds took %s s |" % (
            meta.get("uptime_before", "").strip(), meta.get("uptime_after", "").strip(), meta["elapsed"]),
        "| interference | %d redos (%d samples kept) because other work used > %s of a core during them; %s |" % (
            smp.n_redone, smp.n_samples, meta["disturbed"],
            "none kept disturbed" if not smp.kept_disturbed else "kept disturbed after %s redos: %s" % (
                meta.get("max_redo", "3"), ", ".join(smp.kept_disturbed))),
    ]
    if meta["only"] != "a,b,c,d,e":
        out += ["", "**Only these rows were run: %s.**" % meta["only"]]
    out += [
        "",
        "Wall time is the whole process: `mpirun` with all its ranks for chunkctl; for dask the Python process "
        "from start to exit, imports, cluster start and shut-down included (the issue's \"whole-process wall "
        "time\"); \"dask compute\" is the part from the cluster being up to the results in the client "
        "(graph built and computed). Peak RSS, MB (10^6 bytes), the maximum over the runs: chunkctl's \"sum\" "
        "adds the ranks' own peaks (each rank runs under `/usr/bin/time -f %M`, started by mpirun through a "
        "wrapper), \"max\" is the largest rank's; mpirun itself is not included. dask's \"sum\" is the peak of "
        "the summed RSS of its process tree (client with scheduler, 2 nannies, 2 workers) sampled every 0.1 s "
        "with psutil, \"max\" the largest worker's own peak (getrusage). CPU % is `/usr/bin/time`'s %P of the "
        "whole command (the ranks and workers included; 200% = both cores).",
    ]

    ratios = []
    for row in "abcde":
        if not any(("%s:%s" % (c, row)) in walls for c, _ in CONFIGS):
            continue
        title = ROWS[row] % sizes
        out += ["", "### " + title, "",
                "Divided over the ranks today." if DISTRIBUTED[row] else
                "**Not divided today**: every rank computes it whole (no speedup expected).", "",
                "| configuration | median s | min s | max s | dask compute s | CPU % | user / sys s "
                "| peak RSS MB sum / max | x vs 1 rank x 1 thread |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        base = med.get("r1t1:" + row)
        for c, label in CONFIGS:
            k = "%s:%s" % (c, row)
            if k not in walls:
                failed = [f for f in fails if f[0] == k]
                if failed:
                    out.append("| %s | failed (exit %s: `%s`) | | | | | | | |" % (label, failed[0][2], failed[0][3]))
                continue
            p = ph.get(k, {})
            if c == "dask":
                rs, rm, comp = p.get("rss_sum_kib"), p.get("rss_max_worker_kib"), p.get("compute_s")
            else:
                rs, rm, comp = p.get("rss_sum_kib"), p.get("rss_max_kib"), None
            rss = ("%.0f / %.0f" % (max(rs) * 1024 / 1e6, max(rm) * 1024 / 1e6)) if rs and rm else \
                "%.0f (whole command)" % smp.mb(k)
            out.append("| %s | %.3f | %.3f | %.3f | %s | %.0f | %s | %s | %s |" % (
                label, med[k], min(walls[k]), max(walls[k]), "%.3f" % median(comp) if comp else "",
                median(cpu[k]), smp.us(k), rss, "%.2f" % (base / med[k]) if base else ""))
        if "dask:" + row in ph:
            p = ph["dask:" + row]
            out += ["", "dask, medians: start (process start to cluster up, imports included) %.2f s, "
                    "compute %.2f s, shut-down %.2f s." % (
                        median(p["start_s"]), median(p["compute_s"]), median(p["stop_s"]))]
        r11, r21, r12, dk = (med.get("%s:%s" % (c, row)) for c in ("r1t1", "r2t1", "r1t2", "dask"))
        ratios.append((row, r11, r21, r12, dk, ph.get("dask:" + row, {}).get("compute_s")))

    # ratios and targets
    out += ["", "### Ratios and the issue's targets", "",
            "Speed-up = 1 rank x 1 thread's median / 2 ranks x 1 thread's (target >= 1.8); "
            "2 ranks vs 1 rank x 2 threads = the 2-rank median / the 2-thread median (target <= 1.10); "
            "dask / 2 ranks = dask's whole-process median / chunkctl's 2-rank median (target > 1: chunkctl "
            "ahead); the last column uses dask's compute alone instead.", "",
            "| row | divided | 2 ranks speed-up | target >= 1.8 | 2 ranks / 1 rank x 2 threads | target <= 1.10 "
            "| dask / 2 ranks (whole process) | target > 1 | dask compute alone / 2 ranks |",
            "|---|---|---:|---|---:|---|---:|---|---:|"]

    def verdict(ok):
        return "met" if ok else "**not met**"
    for row, r11, r21, r12, dk, comp in ratios:
        if not (r11 and r21):
            out.append("| %s | | (missing) | | | | | | |" % row)
            continue
        sp = r11 / r21
        vs2t = r21 / r12 if r12 else None
        vd = dk / r21 if dk else None
        out.append("| %s | %s | %.2f | %s | %s | %s | %s | %s | %s |" % (
            row, "yes" if DISTRIBUTED[row] else "no (whole on every rank)", sp, verdict(sp >= 1.8),
            "%.2f" % vs2t if vs2t else "", verdict(vs2t <= 1.10) if vs2t else "",
            "%.2f" % vd if vd else "", verdict(vd > 1) if vd else "",
            "%.2f" % (median(comp) / r21) if comp else ""))

    # floors
    fl = [("floor:mpirun1", "`mpirun -n 1 chunkctl reduce sum floor.zarr` (launcher and MPI_Init, 1 rank; 1000 values)"),
          ("floor:mpirun2", "`mpirun -n 2 chunkctl reduce sum floor.zarr` (launcher and MPI_Init, 2 ranks; 1000 values)"),
          ("floor:dask", "dask peer, row `none`: imports, LocalCluster(2 x 1) up and down, nothing computed")]
    if any(k in walls for k, _ in fl):
        out += ["", "### Floors", "", "| what | median s | min s | max s | CPU % |", "|---|---:|---:|---:|---:|"]
        for k, label in fl:
            if k in walls:
                out.append("| %s | %.3f | %.3f | %.3f | %.0f |" % (label, med[k], min(walls[k]), max(walls[k]),
                                                                  median(cpu[k])))

    out += ["", "### Correctness (once per row, untimed)", "",
            "chunkctl 2 ranks and 1 rank x 2 threads against 1 rank x 1 thread (bytes of the results); dask "
            "against chunkctl 1 x 1 (max |difference| / max |chunkctl's value| <= 1e-9; histogram counts exactly; "
            "SVD: dask's Vt rows signed as chunkctl's, each row summing to >= 0).", "", "```"]
    out += checks or ["(no checks ran)"]
    out += ["```"]

    if plans:
        out += ["", "### What `chunkctl plan --ranks 2` says of the divided rows", "", "```"] + plans + ["```"]

    notes = []
    cpu_s = {k: median([u + s for u, s in zip(smp.usr[k], smp.sys_[k])]) for k in walls}
    for row, r11, r21, r12, dk, comp in ratios:
        ks = ["%s:%s" % (c, row) for c in ("r1t1", "r2t1", "r1t2")]
        if all(k in cpu_s for k in ks):
            notes.append("Row %s, CPU seconds (user + sys, median; all ranks): 1 x 1 %.2f (sys %.2f), "
                         "2 ranks %.2f (sys %.2f), 1 x 2 threads %.2f (sys %.2f)." % (
                             row, cpu_s[ks[0]], median(smp.sys_[ks[0]]), cpu_s[ks[1]], median(smp.sys_[ks[1]]),
                             cpu_s[ks[2]], median(smp.sys_[ks[2]])))
    for row, r11, r21, r12, dk, comp in ratios:
        k = "r2t1:" + row
        if k in cpu and median(cpu[k]) < 120 and DISTRIBUTED[row]:
            notes.append("chunkctl on row %s under 2 ranks ran on about one core (CPU %.0f%%)." % (row, median(cpu[k])))
    spread = smp.spread(0.05)
    if spread:
        notes.append("Spread: max > 1.3x median for " + ", ".join(spread) + "; the tables use medians.")
    if uptimes:
        notes.append("Load at each round's start: " + "; ".join(
            u.split(": ", 1)[0] + ": " + u.split("load average:")[-1].strip() for u in uptimes) + ".")
    if notes:
        out += ["", "### Notes (computed from this run)", ""] + ["- " + n for n in notes]

    out += ["", "### Commands (as run; paths under %s)" % meta["work"], "",
            "`mpiwrap.sh N CMD...` runs `%s CMD...` with `rankwrap.sh` (each rank's `/usr/bin/time`) between "
            "mpirun and chunkctl; both are written by mpi_bench.sh into `bin/`." % meta["mpirun"].replace(
                "RANKS", "N"), "", "```"]
    out += ["%-14s %s" % (k, c) for k, c in cmds.items()]
    out += ["```", "", "Data: `chunkctl gen --quiet ARGS DATA/NAME.h5:/x` with"]
    out += ["`%s` (%s)" % (meta["gen:" + n], n) for n in ("A", "H", "D", "E") if "gen:" + n in meta]
    out += ["; E's y by `chunkctl run ey.json`:", ""]
    for name in ("ey.json", "b.json"):
        p = os.path.join(pipedir, name)
        if os.path.exists(p):
            out += ["`%s`:" % name, "", "```json"] + open(p).read().rstrip("\n").splitlines() + ["```", ""]
    out += ["Raw samples: `%s/samples.tsv`, ranks' RSS and dask's phases: `%s/phases.tsv`." % (logdir, logdir),
            "", end]
    write_section(results_path, begin, end, "\n".join(out))


if __name__ == "__main__":
    main(*sys.argv[1:4])
