"""Turn rechunk_bench.sh's samples into its section of bench/RESULTS.md.

usage: python3 rechunk_bench_report.py META.tsv SAMPLES.tsv COMMANDS.tsv DISTURBED.tsv FAILURES.tsv RESULTS.md

META: key<TAB>value lines; SAMPLES (and DISTURBED, the samples found
disturbed): id, run, wall s, peak RSS KiB, CPU %, other CPU s, disturbed 0/1,
user s, sys s; COMMANDS: id<TAB>command as run; FAILURES: id, run, exit
status, last stderr line.  Sample ids are TOOL:CASE.  Only the text between
<!-- rechunk_bench:begin --> and <!-- rechunk_bench:end --> in RESULTS.md is
replaced (the section is appended when the markers are missing; "-" prints
it).
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True     # no __pycache__ in the checkout
from _report import BASE, BASE_LABEL, Samples, machine_rows, read_commands, read_lines, read_meta, write_section  # noqa: E402

DEFAULT_RUNS = 5
TOOLS = [("ck-h5", "chunkctl copy -> .h5"), ("ck-zarr", "chunkctl copy -> .zarr"),
         ("h5py", "h5py naive (read all, write)"), ("dask", "dask rechunk + store")]
PEERS = ["h5py", "dask"]


def main(meta_path, samples_path, cmds_path, disturbed_path, fails_path, results_path):
    meta = read_meta(meta_path)
    raw = int(meta["raw_bytes"])
    c = int(meta["chunk"])
    cases = meta["cases"].split()
    case_label = {
        "none": "col_none.h5 (%d,1), no filter -> (1,%d)" % (c, c),
        "zstd": "col_zstd.h5 (%d,1), zstd:3 -> (1,%d)" % (c, c),
        "rev": "row_none.h5 (1,%d), no filter -> (%d,1)" % (c, c),
    }

    smp = Samples(samples_path, disturbed_path)
    walls, rss, cpu, med = smp.walls, smp.rss, smp.cpu, smp.med
    cmds = read_commands(cmds_path)
    fails = {}
    for line in read_lines(fails_path):
        f = line.split("\t")
        if len(f) >= 4:
            fails[f[0]] = "exit %s: %s" % (f[2], f[3])

    size = "%.0f MB" % (raw / 1e6)
    begin, end = "<!-- rechunk_bench:begin -->", "<!-- rechunk_bench:end -->"
    out = [begin, "", "## rechunk_bench: chunkctl copy --chunks vs h5py / dask, %s float64, (%d,1) <-> (1,%d) chunks" % (
        size, c, c), ""]
    runs = int(meta["runs"])
    out += [
        "Made by `bench/rechunk_bench.sh` (rerun it to replace this section).",
        "",
        "| | |",
        "|---|---|",
    ] + machine_rows(meta) + [
        "| others | %s |" % meta["versions"],
        "| data | %s, %s raw; `chunkctl gen --dist integers --low 0 --high 1000 --seed 1`, chunks as in each case; "
        "stored: col_none.h5 %.0f MB, col_zstd.h5 %.0f MB, row_none.h5 %.0f MB |" % (
            meta["shape"], size, int(meta["stored:col_none"]) / 1e6, int(meta["stored:col_zstd"]) / 1e6,
            int(meta["stored:row_none"]) / 1e6),
        "| runs | %d per row%s, tools alternating within each round; before each sample, untimed: outputs removed + "
        "`sync`, the input re-read into the page cache, free memory %s; %s s for all rounds |" % (
            runs, "" if runs >= DEFAULT_RUNS else " (**fewer than the default %d**, to finish in time)" % DEFAULT_RUNS,
            meta["memstate"], meta["elapsed"]),
        "| load average | %s (1/5/15 min, before -> after) |" % meta["load"],
        "| interference | %d of %d samples redone because other work used > %s of a core during them; "
        "%s; other work in the kept samples: %.1f CPU s over %.0f s timed |" % (
            smp.n_redone, smp.n_samples, meta["disturbed"],
            "none kept disturbed" if not smp.kept_disturbed else
            "kept disturbed after %s redos: " % meta.get("max_redo", "3") + ", ".join(smp.kept_disturbed),
            smp.other_total, smp.wall_total),
        "| outputs | %s |" % meta["verified"],
        "",
        "### Results",
        "",
        "Whole-process wall time (bash `$EPOCHREALTIME` around the command), every output uncompressed "
        "(`--compress none`; the peers write with no filter). Peak RSS is the maximum over runs (`/usr/bin/time %M`); "
        "CPU is the median of `%P` (200% = both cores); user / sys are median CPU seconds. "
        "\"/ h5py\" and \"/ dask\" = chunkctl's median wall / the peer's median wall in the same case "
        "(< 1: chunkctl is faster).",
        "",
        "| case | tool | median s | min s | max s | peak RSS MiB | CPU % | user / sys s | / h5py | / dask |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def ratio(k, peer):
        return "%.2f" % (med[k] / med[peer]) if k in med and peer in med else ""

    for case in cases:
        for tool, label in TOOLS:
            for k, lab in (("%s:%s" % (tool, case), label), ("%s:%s%s" % (tool, case, BASE), label + BASE_LABEL)):
                if k in walls:
                    ck = tool.startswith("ck-")
                    out.append("| %s | %s | %.3f | %.3f | %.3f | %.0f | %.0f | %s | %s | %s |" % (
                        case_label[case], lab, med[k], min(walls[k]), max(walls[k]), max(rss[k]) / 1024,
                        statistics.median(cpu[k]), smp.us(k),
                        ratio(k, "h5py:" + case) if ck else "", ratio(k, "dask:" + case) if ck else ""))
                elif k in fails:
                    out.append("| %s | %s | failed (%s) | | | | | | | |" % (case_label[case], lab, fails[k]))

    notes = []
    for case in cases:
        for tool, label in TOOLS[:2]:
            k = "%s:%s" % (tool, case)
            if k in med and statistics.median(cpu[k]) < 120 and med[k] > 0.5:
                notes.append("%s, %s runs on about one core (CPU %.0f%%)." % (
                    case_label[case], label, statistics.median(cpu[k])))
    spread = smp.spread(0.1)
    if spread:
        notes.append("Spread: max > 1.3x median for " + ", ".join(spread) + "; the ratios above use medians.")
    notes += smp.baseline_note()
    if notes:
        out += ["", "### Notes (computed from this run)", ""] + ["- " + n for n in notes]

    out += ["", "### Commands (as run; paths under %s)" % meta["work"], "", "```"]
    out += ["%-16s %s" % (k, cmd) for k, cmd in cmds]
    out += ["```", "",
            "HDF5_PLUGIN_PATH points at (a snapshot of) chunkctl's plugins so h5py and dask can read col_zstd.h5. "
            "`rechunk_bench_peers.py h5py`: `a = h5py.File(IN)['x'][:]`, then "
            "`create_dataset('x', data=a, chunks=T)`; `rechunk_bench_peers.py dask`: "
            "`da.store(da.from_array(IN['x'], chunks=(%d, %d)).rechunk(T), d)` into `d = create_dataset('x', ..., chunks=T)` "
            "(dask's default threaded scheduler and write lock)." % (c, c),
            "Raw samples: `%s/log/samples.tsv`." % meta["work"], "", end]

    write_section(results_path, begin, end, "\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    main(*sys.argv[1:7])
