"""Turn pipeline_bench.sh's samples into its section of bench/RESULTS.md.

usage: python3 pipeline_bench_report.py LOGDIR PIPELINEDIR RESULTS.md

LOGDIR holds meta.tsv (key<TAB>value), samples.tsv and disturbed.tsv (id,
run, wall s, peak RSS KiB, CPU %, other CPU s, disturbed 0/1, user s, sys s),
commands.tsv (id<TAB>command as run), checks.txt (one line per correctness
check) and perf.txt (profiles, "@@ EX MEDIAN TARGET" then report lines).
Only the text between <!-- pipeline_bench:begin --> and
<!-- pipeline_bench:end --> in RESULTS.md is replaced (the section is
appended when the markers are missing).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True     # no __pycache__ in the checkout
from _report import (BASE, BASE_LABEL, Samples, machine_rows, median, parse_size, profiles,  # noqa: E402
                     read_commands, read_lines, read_meta, write_section)

BEGIN, END = "<!-- pipeline_bench:begin -->", "<!-- pipeline_bench:end -->"

# exercise -> (title, chunkctl target s, issue's NumPy s / MB, issue's dask s / MB)
EXERCISES = {
    "ex1": ("1. histogram of y[y < 10], y = x + 1 (5000 x 5000 float64, chunks 2500 x 2500, 200 MB)",
            0.15, "0.40 s / 355 MB", "0.83 s / 173 MB"),
    "ex2": ("2. mean, sum(axis=0), std of a (2500, 1000, 100) int64 array (chunks (400, 250, 100), 2 GB)",
            0.4, "3.0 s / 3.9 GB", "1.5 s / 350 MB"),
    "ex3a": ("3a. reshape (5000, 5000) chunks (2500, 2500) -> (5000, 1000, 5), written uncompressed to .h5",
             0.3, "0.28 s", "0.57 s"),
    "ex3b": ("3b. reshape (5000, 5000) chunks (2500, 2500) -> (1000, 5000, 5), written uncompressed to .h5",
             0.3, "0.28 s", "fails"),
    "ex4": None,   # filled in from meta (size)
}
INPUT_OF = {"ex1": "e1", "ex2": "e2", "ex3a": "e1", "ex3b": "e1", "ex4": "e4"}
TOOLS = [("ck", "chunkctl run"), ("numpy", "NumPy (h5py load + compute)"),
         ("dask", "dask.array (threads, 2 workers)")]


def main(logdir, pipedir, results_path):
    meta = read_meta(os.path.join(logdir, "meta.tsv"))
    n4 = int(meta["n4"])
    gb4 = n4 * 4 / 1e9
    EXERCISES["ex4"] = (
        "4. 100-bin histogram of %s float32 values (%.0f GB; chunks of 2^24 elements) over [%s]" % (
            "1e9" if n4 == 10**9 else "%.3g" % n4, gb4, meta["hist4"].replace(" ", ", ")),
        1.0, "7.8 s / 3.9 GB (4 GB input)", "4.2 s / 207 MB (4 GB input)")

    smp = Samples(os.path.join(logdir, "samples.tsv"), os.path.join(logdir, "disturbed.tsv"))
    walls, rss, cpu, med, mb, us = smp.walls, smp.rss, smp.cpu, smp.med, smp.mb, smp.us
    cmds = read_commands(os.path.join(logdir, "commands.tsv"))
    checks = [line for line in read_lines(os.path.join(logdir, "checks.txt")) if line.strip()]

    out = [BEGIN, "", "## pipeline_bench: chunkctl run vs NumPy and dask.array on the issue's pipeline exercises", ""]
    out += [
        "Made by `bench/pipeline_bench.sh` (rerun it to replace this section; "
        "`bash bench/pipeline_bench.sh --help` for options).",
        "",
        "| | |",
        "|---|---|",
    ] + machine_rows(meta) + [
        "| others | %s |" % meta["versions"],
        "| data (HDF5, uncompressed, `chunkctl gen`) | e1.h5: `%s`; e2.h5: `%s`; e4.h5: `%s`%s |" % (
            meta["gen1"], meta["gen2"], meta["gen4"],
            "" if n4 == 10**9 else " (**1 GB instead of the issue's 4 GB; nothing scaled**)"),
        ("| chunkctl options | `--memory %s` for every exercise; default threads (2) |" % meta["memory"]
         if meta["memory1"] == meta["memory"] else
         "| chunkctl options | `--memory %s` (ex2, ex3, ex4), `--memory %s` (ex1, see notes); default threads (2) |"
         % (meta["memory"], meta["memory1"])),
        "| runs | %s per row, tools alternating within each round; before each sample, untimed: outputs removed + `sync`, "
        "the input re-read into the page cache, free memory %s |" % (meta["runs"], meta["memstate"]),
        "| load average | %s; timed rounds took %s s |" % (
            meta["load"] + " (1/5/15 min, before -> after)" if meta["load"][:1].isdigit() else meta["load"], meta["elapsed"]),
        "| interference | %d redos (%d samples kept) because other work used > %s of a core during them; %s; "
        "other work in the kept samples: %.1f CPU s over %.0f s timed |" % (
            smp.n_redone, smp.n_samples, meta["disturbed"],
            "none kept disturbed" if not smp.kept_disturbed else "kept disturbed after %s redos: " % meta.get("max_redo", "3") + ", ".join(smp.kept_disturbed),
            smp.other_total, smp.wall_total),
        "",
        "Stored input sizes: " + ", ".join("%s.h5 %.2f GB" % (n, int(meta["stored:" + n]) / 1e9)
                                        for n in ("e1", "e2", "e4") if "stored:" + n in meta)
        + " (HDF5 stores edge chunks whole: e2's 2500 rows in chunks of 400 take 2800 rows on disk).",
        "",
        "Wall time is the whole process (Python start-up included for NumPy and dask; see the floors). "
        "Peak RSS is the maximum over runs (`/usr/bin/time %M`), in MB (10^6 bytes). "
        "\"x vs NumPy\" / \"x vs dask\" = that peer's median / the row's median (> 1: the row is faster). "
        "CPU is the median of `%P` (200% = both cores).",
    ]
    if meta["only"] != "ex1,ex2,ex3,ex4":
        out += ["", "**Only these exercises were run: %s.**" % meta["only"]]

    targets = []
    exs = [e for e in EXERCISES if "ck:" + e in walls]
    for ex in exs:
        title, tgt, np_fig, dask_fig = EXERCISES[ex]
        out += ["", "### " + title, "",
                "Issue's figures on this kind of machine: NumPy %s, dask %s; target for chunkctl: <= %g s." % (
                    np_fig, dask_fig, tgt), "",
                "| tool | median s | min s | max s | peak RSS MB | CPU % | user / sys s | x vs NumPy | x vs dask |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        npk, dk = "numpy:" + ex, "dask:" + ex
        tools = list(TOOLS)
        if "ckwide:" + ex in walls:
            tools.insert(1, ("ckwide", "chunkctl run `--memory %s` (room for 2 workers; not the target's setting)"
                             % meta["memory_wide"]))
        for tid, label in tools:
            if tid == "ck":
                label = "chunkctl run `--memory %s`" % (meta["memory1"] if ex == "ex1" else meta["memory"])
            k = "%s:%s" % (tid, ex)
            if k not in walls:
                if tid == "dask" and ex == "ex3b":
                    out.append("| %s | fails | | | | | | | |" % label)
                continue
            for lab, kk in ((label, k), (label + BASE_LABEL, k + BASE)):
                if kk not in walls:
                    continue
                out.append("| %s | %.3f | %.3f | %.3f | %.0f | %.0f | %s | %s | %s |" % (
                    lab, med[kk], min(walls[kk]), max(walls[kk]), mb(kk), median(cpu[kk]), us(kk),
                    "%.2f" % (med[npk] / med[kk]) if npk in med else "",
                    "%.2f" % (med[dk] / med[kk]) if dk in med else "fails"))
        if ex == "ex3b":
            out += ["", "dask: `%s` (x.reshape((1000, 5000, 5)).to_hdf5(...), run once, untimed)." % meta["dask3b"]]
        if ex == "ex3a":
            out += ["", "Outputs: chunkctl writes chunked HDF5 (its chunks follow the input's), h5py a contiguous "
                    "dataset, dask `to_hdf5` chunked as its dask chunks; all uncompressed."]
        if ex == "ex4":
            out += ["", "NumPy computes uniform-bin edges in float32 for float32 data (as chunkctl does); "
                    "dask's `da.histogram` uses float64 edges, so its counts can differ at bin edges (see the checks)."]
        k = "ck:" + ex
        targets.append((ex, tgt, med[k], mb(k)))

    # floors
    out += ["", "### Floors", "",
            "| what | median s | min s | max s | peak RSS MB | CPU % | user / sys s | rate |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]

    def frow(name, k, rate=""):
        return "| %s | %.3f | %.3f | %.3f | %.0f | %.0f | %s | %s |" % (
            name, med[k], min(walls[k]), max(walls[k]), mb(k), median(cpu[k]), us(k), rate)

    for n, used in (("e1", "ex1, ex3"), ("e2", "ex2"), ("e4", "ex4")):
        if "cat:" + n not in walls:
            continue
        st = int(meta["stored:" + n])
        out.append(frow("`cat %s.h5` (%s; page cache)" % (n, used), "cat:" + n, "%.2f GB/s" % (st / 1e9 / med["cat:" + n])))
        for lab, k in (("", "verify:" + n), (BASE_LABEL, "verify:" + n + BASE)):
            if k in walls:
                out.append(frow("`chunkctl verify --quiet %s.h5:/x` (read + decode only)%s" % (n, lab), k,
                                "%.2f GB/s" % (st / 1e9 / med[k])))
    if "write:e3" in walls:
        out.append(frow("write floor: `dd if=/dev/zero bs=8M count=25` (210 MB, buffered, like ex3's output)",
                        "write:e3", "%.2f GB/s" % (25 * 8 * 2**20 / 1e9 / med["write:e3"])))
    out.append(frow("start-up: `python3 -c 'import numpy, h5py'`", "import:numpy"))
    out.append(frow("start-up: `python3 -c 'import numpy, h5py, dask.array'`", "import:dask"))

    # correctness
    out += ["", "### Correctness (once per exercise, untimed: chunkctl's outputs vs NumPy)", "", "```"]
    out += checks or ["(no checks ran)"]
    out += ["```"]

    # targets
    out += ["", "### Targets (from the issue)", "",
            "| exercise | target | measured (median) | x of target | peak RSS MB | verdict |",
            "|---|---|---:|---:|---:|---|"]
    memcap = {"ex1": meta["memory1"]}
    for ex, tgt, m, r in targets:
        out.append("| %s | <= %g s%s | %.3f s | %.2f | %.0f | %s |" % (
            ex, tgt, {"ex2": " under `--memory 256M`", "ex4": " with `--memory 256M`"}.get(ex, ""),
            m, m / tgt, r, "**met**" if m <= tgt else "**not met**"))
    beat = []
    for ex, _, m, _ in targets:
        for peer in ("numpy", "dask"):
            k = "%s:%s" % (peer, ex)
            if k in med:
                beat.append(("%s vs %s" % (ex, "NumPy" if peer == "numpy" else "dask"), m < med[k]))
    if beat:
        lost = [n for n, ok in beat if not ok]
        out.append("| all | faster than NumPy and dask on every exercise | %d of %d comparisons won | | | %s |" % (
            len(beat) - len(lost), len(beat), "**met**" if not lost else "**not met** (slower: %s)" % ", ".join(lost)))
    capped = [ex for ex in exs if "ck:" + ex in rss and (ex != "ex1" or memcap["ex1"] == meta["memory"])]
    worst = max((max(rss["ck:" + ex]) for ex in capped), default=0) * 1024
    out.append("| %s | peak RSS within `--memory %s` | max %.0f MB | | | %s |" % (
        ", ".join(capped), meta["memory"], worst / 1e6,
        "**met**" if worst <= parse_size(meta["memory"]) else "**not met**"))

    # profiles
    out += profiles("\n".join(read_lines(os.path.join(logdir, "perf.txt"))))

    # notes
    notes = []
    for ex in exs:
        k = "ck:" + ex
        if median(cpu[k]) < 120 and med[k] > 0.1:
            notes.append("chunkctl on %s runs on about one core (CPU %.0f%%)." % (ex, median(cpu[k])))
    spread = smp.spread(0.05)
    if spread:
        notes.append("Spread: max > 1.3x median for " + ", ".join(spread) + "; the tables use medians.")
    notes += [l for l in meta.get("notes", "").split(" || ") if l]
    notes += smp.baseline_note()
    for ex in exs:      # peak RSS against the plan's estimate
        est = [l for l in notes if l.startswith("chunkctl plan") and (" on %s:" % ex) in l]
        if est and "MiB" in est[0]:
            e = float(est[0].split("memory: ")[1].split(" MiB")[0]) * 2**20
            r = max(rss["ck:" + ex]) * 1024
            if r > e:
                notes.append("chunkctl on %s peaked at %.0f MiB RSS, above the plan's estimate (%.1f MiB)." % (
                    ex, r / 2**20, e / 2**20))
    if notes:
        out += ["", "### Notes (computed from this run)", ""] + ["- " + n for n in notes]

    # commands and pipelines
    out += ["", "### Commands (as run; paths under %s)" % meta["work"], "", "```"]
    out += ["%-14s %s" % (k, c) for k, c in cmds]
    out += ["```", "", "Pipelines (`%s/*.json`):" % pipedir, ""]
    for name in sorted(os.listdir(pipedir)):
        if name.endswith(".json"):
            out += ["`%s`:" % name, "", "```json"] + open(os.path.join(pipedir, name)).read().rstrip("\n").splitlines() + ["```", ""]
    out += ["Raw samples: `%s/samples.tsv`." % logdir, "", END]

    write_section(results_path, BEGIN, END, "\n".join(out))


if __name__ == "__main__":
    main(*sys.argv[1:4])
