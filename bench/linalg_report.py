"""Turn linalg_bench.sh's samples into its section of bench/RESULTS.md.

usage: python3 linalg_report.py LOGDIR PIPELINEDIR RESULTS.md|-

LOGDIR holds meta.tsv (key<TAB>value), samples.tsv and disturbed.tsv (id,
run, wall s, peak RSS KiB, CPU %, other CPU s, disturbed 0/1, user s, sys s),
failures.tsv (id, run, exit status, last stderr line), phases.tsv (id, run,
the peers' in-process import / load / compute / write s, "-" for none),
commands.tsv (id<TAB>command as run), checks.txt (one line per correctness
check) and perf.txt (profiles, "@@ ID MEDIAN TARGET" then report lines).
Only the text between <!-- linalg_bench:begin --> and
<!-- linalg_bench:end --> in RESULTS.md is replaced (the section is appended
when the markers are missing).  With "-" the section goes to stdout and no
file is written (linalg_bench.sh does that at BENCH_SCALE=small).
"""
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True     # no __pycache__ in the checkout
from _report import (BASE, BASE_LABEL, Samples, is_base, machine_rows, median, parse_size, profiles,  # noqa: E402
                     read_commands, read_lines, read_meta, write_section)
from linalg_peers import DESCRIBE  # noqa: E402

BEGIN, END = "<!-- linalg_bench:begin -->", "<!-- linalg_bench:end -->"

CK_LABEL = {
    "ck": "chunkctl svd",
    "cknewton": "chunkctl glm-fit `--solver newton`",
    "cklbfgs": "chunkctl glm-fit `--solver lbfgs`",
}
PEER_LABEL = {
    "numpy": "NumPy (h5py load + compute + h5py write)",
    "dask": "dask.array (threads, 2 workers)",
    "scipy": "SciPy `svds(k=10)` (h5py load, ARPACK)",
    "sklearn": "scikit-learn LogisticRegression lbfgs (h5py load)",
    "statsmodels": "statsmodels Logit Newton (h5py load)",
}
SLOW_IDS = {"numpy:svd2"}       # plus statsmodels at the largest N


def fmt_shape(s):
    return " x ".join(s.split(","))


def main(logdir, pipedir, results_path):
    meta = read_meta(os.path.join(logdir, "meta.tsv"))
    small = meta["scale"] == "small"
    ns = [int(n) for n in meta["glm_ns"].split()]
    nmax = ns[-1]
    p5 = int(meta["p5"])

    def path(name):
        return os.path.join(logdir, name)

    def lines(name):
        return read_lines(path(name))

    smp = Samples(path("samples.tsv"), path("disturbed.tsv"))
    walls, cpu, med, mb, us = smp.walls, smp.cpu, smp.med, smp.mb, smp.us
    kept_disturbed = smp.kept_disturbed
    fails = {}
    for line in lines("failures.tsv"):
        f = line.split("\t") + ["", "", "", ""]
        fails.setdefault(f[0], (f[1], f[2], f[3]))
    phases = defaultdict(lambda: defaultdict(list))
    for line in lines("phases.tsv"):
        f = line.split("\t")
        for name, v in zip(("import", "load", "compute", "write"), f[2:6]):
            if v != "-":
                phases[f[0]][name].append(float(v))
    cmds = read_commands(path("commands.tsv"))
    checks = [l for l in lines("checks.txt") if l.strip()]

    def ph(k):
        if k not in phases:
            return ""
        return " / ".join("%.3f" % median(phases[k][n]) if phases[k][n] else "-"
                          for n in ("import", "load", "compute", "write"))

    def gb(name):
        k = "stored:" + name
        return int(meta[k]) / 1e9 if k in meta else None

    sh = {c: meta["shape:" + c] for c in ("svd1", "svd2", "rsvd3", "dot4")}
    ch = {c: meta["chunks:" + c] for c in ("svd1", "svd2", "rsvd3", "dot4")}

    def size(c):
        r, k = (int(v) for v in sh[c].split(","))
        b = r * k * 8
        return "%.0f MB" % (b / 1e6) if b < 1e9 else "%.1f GB" % (b / 1e9)

    # case -> (title, issue's figures, target text, ck ids, peer ids)
    cases = {
        "svd1": ("1. SVD of %s float64 (chunks %s, %s), writing U, S, Vt" % (fmt_shape(sh["svd1"]), fmt_shape(ch["svd1"]), size("svd1")),
                 "NumPy 1.30 s / 400 MB, dask 2.50 s / 427 MB (10000 x 1000)",
                 "<= 0.8 s and <= 200 MB peak RSS", ["ck:svd1"], ["numpy:svd1", "dask:svd1"]),
        "svd2": ("2. SVD of %s float64 (chunks %s, %s), U (and S, Vt) written to disk" % (fmt_shape(sh["svd2"]), fmt_shape(ch["svd2"]), size("svd2")),
                 "NumPy 18.4 s / 6.2 GB, dask 14-19 s / 2.1 GB (2000000 x 100)",
                 "<= 3 s under `--memory %s`" % meta["memory"], ["ck:svd2"], ["numpy:svd2", "dask:svd2"]),
        "rsvd3": ("3. randomized SVD, k = 10, 2 power iterations, of %s float64 with s_i = exp(-i/%s) (chunks %s, %s)" % (
                  fmt_shape(sh["rsvd3"]), meta["tau"], fmt_shape(ch["rsvd3"]), size("rsvd3")),
                  "dask svd_compressed 1.56 s / 871 MB, SciPy svds 1.68 s / 866 MB (20000 x 5000)",
                  "<= 0.6 s; top-10 singular values within 1e-6 (relative) of NumPy's exact SVD",
                  ["ck:rsvd3"], ["dask:rsvd3", "scipy:rsvd3"]),
        "dot4": ("4. dot(A, A + A.T), A %s float64 (chunks %s, %s), result to disk" % (fmt_shape(sh["dot4"]), fmt_shape(ch["dot4"]), size("dot4")),
                 "NumPy 2.58 s / 629 MB, dask 3.13 s / 660 MB (5000 x 5000)",
                 "<= 1.1 x NumPy's median", ["ck:dot4"], ["numpy:dot4", "dask:dot4"]),
    }
    CK_LABEL_CASE = {"ck:dot4": "chunkctl run DOT.json (transpose, add, matmul)",
                     "ck:rsvd3": "chunkctl svd `--randomized --k 10 --power-iters 2`"}

    def ck_label(k):
        if k in CK_LABEL_CASE:
            lab = CK_LABEL_CASE[k]
        else:
            lab = CK_LABEL[k.split(":")[0]]
        return lab + ("" if k == "ck:svd1" else " `--memory %s`" % meta["memory"])

    def not_run_why(k):
        tool, case = k.split(":")
        if k in SLOW_IDS or (tool == "statsmodels" and case == "glm5_%d" % nmax):
            return "not run (a slow peer: BENCH_SLOW_PEERS=1 runs it)"
        return "not run"

    def row(k, label, refs, extra=""):
        """One table row; refs: the chunkctl ids to give ratios against."""
        ratio_cells = []
        if k in med:
            for r in refs:
                if r in med and r != k:
                    ratio_cells += ["%.2f" % (med[k] / med[r]), "%.2f" % (mb(k) / mb(r))]
                elif r == k:
                    ratio_cells += ["1.00", "1.00"]
                else:
                    ratio_cells += ["", ""]
            failed = ""
            if k in fails:
                failed = " (failed in run %s: exit %s, %s)" % fails[k]
            return "| %s%s%s | %d | %.3f | %.3f | %.3f | %.0f | %.0f | %s | %s | %s |" % (
                label, extra, failed, len(walls[k]), med[k], min(walls[k]), max(walls[k]), mb(k),
                median(cpu[k]), us(k), ph(k), " | ".join(ratio_cells))
        if k in fails:
            run, rc, msg = fails[k]
            what = "**failed** (exit %s%s)" % (rc, ": `%s`" % msg if msg else "")
        else:
            what = not_run_why(k)
        return "| %s%s | %s |%s" % (label, extra, what, " |" * (7 + 2 * len(refs)))

    def header(refs):
        names = ["chunkctl" if len(refs) == 1 else "ck " + r.split(":")[0][2:] for r in refs]
        cols = []
        for n in names:
            cols += ["time x %s" % n, "RSS x %s" % n]
        return ["| tool | runs | median s | min s | max s | peak RSS MB | CPU % | user / sys s | "
                "in-process import / load / compute / write s | " + " | ".join(cols) + " |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(cols)]

    title = "## linalg_bench: chunkctl svd, matmul pipeline and glm-fit vs NumPy, dask, SciPy, scikit-learn, statsmodels"
    out = [BEGIN, "", title, ""]
    if small:
        out += ["**BENCH_SCALE=small: every input ~100x smaller than the issue's; a smoke test of the harness, "
                "the timings mean nothing.**", ""]
    out += [
        "Made by `bench/linalg_bench.sh` (rerun it to replace this section; "
        "`bash bench/linalg_bench.sh --help` for options).",
        "",
        "| | |",
        "|---|---|",
    ] + machine_rows(meta) + [
        "| others | %s; BLAS %s |" % (meta["versions"], meta["blas"]),
        "| data (HDF5, uncompressed, float64, h5py; `linalg_peers.py gen`) | %s |" % "; ".join(
            "%s.h5: `%s`" % (k[4:], v) for k, v in meta.items() if k.startswith("gen:")),
        "| chunkctl options | `--memory %s` where the issue gives it (all but svd1); default threads |" % meta["memory"],
        "| runs | %s per row (median of them), tools alternating within each round; slow peers (NumPy on svd2, "
        "statsmodels at %d rows) %s; before each sample, untimed: outputs removed + `sync`, the input re-read "
        "into the page cache, free memory %s |" % (
            meta["runs"], nmax,
            "in the first %s rounds" % meta["slow_runs"] if meta["slow"] == "1" else "not run (BENCH_SLOW_PEERS=0)",
            meta["memstate"]),
        "| load average | %s; timed rounds took %s s |" % (
            meta["load"] + " (1/5/15 min, before -> after)", meta["elapsed"]),
        "| interference | %d redos (%d samples kept) because other work used > %s of a core during them "
        "(at most %s redos a sample); %s; other work in the kept samples: %.1f CPU s over %.0f s timed |" % (
            smp.n_redone, smp.n_samples, meta["disturbed"], meta["max_redo"],
            "none kept disturbed" if not kept_disturbed else "kept disturbed: %d samples (%s%s)" % (
                len(kept_disturbed), ", ".join(kept_disturbed[:8]),
                ", ..." if len(kept_disturbed) > 8 else ""),
            smp.other_total, smp.wall_total),
        "",
        "Wall time is the whole process (Python start-up and imports included for the peers; see the floors). "
        "Peak RSS is the maximum over runs (`/usr/bin/time %M`), in MB (10^6 bytes). "
        "\"time x chunkctl\" = the row's median / chunkctl's median, \"RSS x chunkctl\" = the row's peak RSS / "
        "chunkctl's (> 1: chunkctl is faster / smaller). CPU is the median of `%P` (200% = both cores). "
        "The in-process phases are the peers' own perf_counter splits (medians): the imports, the h5py load, "
        "the computation on data in memory, the h5py write (dask's load, compute and write are one phase).",
    ]
    if meta["only"] != meta["all_cases"]:
        out += ["", "**Only these cases were run: %s.**" % meta["only"]]

    wanted = meta["only"].split(",")
    targets = []
    for c in ("svd1", "svd2", "rsvd3", "dot4"):
        if c not in wanted:
            continue
        t, fig, tgt, cks, peers = cases[c]
        out += ["", "### " + t, "",
                "Issue's figures on this kind of machine: %s; target for chunkctl: %s." % (fig, tgt), ""]
        out += header(cks)
        for k in cks:
            out.append(row(k, ck_label(k), cks))
            if k + BASE in med or k + BASE in fails:
                out.append(row(k + BASE, ck_label(k) + BASE_LABEL, cks))
        for k in peers:
            out.append(row(k, PEER_LABEL[k.split(":")[0]], cks))
        targets.append(c)

    if "glm5" in wanted:
        cks_of = lambda n: ["cknewton:glm5_%d" % n, "cklbfgs:glm5_%d" % n]   # noqa: E731
        out += ["", "### 5. logistic regression, X n x %d float64 + y in {0, 1} (chunks of n/10 rows), n = %s" % (
                    p5, ", ".join(str(n) for n in ns)), "",
                "Issue's figures on this kind of machine (1e6 rows): scikit-learn 1.66 s / 939 MB, statsmodels "
                "12.2 s / 3.3 GB; target for chunkctl: <= 0.8 s and <= 256 MB peak RSS at 1e6 rows, both solvers. "
                "Ratios are against the chunkctl rows of the same n.", ""]
        hdr = header(cks_of(nmax))
        out += [hdr[0].replace("| tool |", "| n | tool |", 1), hdr[1].replace("|---|", "|---:|---|", 1)]
        for n in ns:
            cks = cks_of(n)
            for k in cks:
                label = "%s `--memory %s`" % (CK_LABEL[k.split(":")[0]], meta["memory"])
                out.append("| %d " % n + row(k, label, cks))
                if k + BASE in med or k + BASE in fails:
                    out.append("| %d " % n + row(k + BASE, label + BASE_LABEL, cks))
            for tool in ("sklearn", "statsmodels"):
                k = "%s:glm5_%d" % (tool, n)
                out.append("| %d " % n + row(k, PEER_LABEL[tool], cks))

    # floors
    out += ["", "### Floors", "",
            "| what | runs | median s | min s | max s | peak RSS MB | CPU % | user / sys s | rate |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|"]

    def frow(name, k, rate=""):
        if k not in med:
            if k in fails:
                return "| %s | **failed** (exit %s: `%s`) | | | | | | | |" % (name, fails[k][1], fails[k][2])
            return None
        return "| %s | %d | %.3f | %.3f | %.3f | %.0f | %.0f | %s | %s |" % (
            name, len(walls[k]), med[k], min(walls[k]), max(walls[k]), mb(k), median(cpu[k]), us(k), rate)

    floors = []
    for f, used in (("A", "svd1"), ("B", "svd2"), ("C", "rsvd3"), ("A5k", "dot4"), ("X%d" % nmax, "glm5 at n = %d" % nmax)):
        key = "X" if f.startswith("X") else f
        st = gb(f)
        if st is None:
            continue
        floors.append(frow("`cat %s.h5` (%s; page cache)" % (f, used), "cat:" + key,
                           "%.2f GB/s" % (st / med["cat:" + key]) if "cat:" + key in med else ""))
        for lab, k in (("", "verify:" + key), (BASE_LABEL, "verify:" + key + BASE)):
            if lab and k not in med and k not in fails:
                continue
            floors.append(frow("`chunkctl verify --quiet %s.h5:/%s` (read + decode only)%s" % (
                                   f, {"A5k": "A"}.get(key, key), lab), k,
                               "%.2f GB/s" % (st / med[k]) if k in med else ""))
    for k, c, what in (("write:svd2", "svd2", "svd2's U"), ("write:dot4", "dot4", "dot4's C")):
        r, q = (int(v) for v in sh[c].split(","))
        mib = r * q * 8 // 1048576 + 1
        floors.append(frow("write floor: `dd if=/dev/zero bs=1M count=%d` (%s, buffered)" % (mib, what), k,
                           "%.2f GB/s" % (mib * 1048576 / 1e9 / med[k]) if k in med else ""))
    for k, what in (("import:numpy", "import numpy, h5py"), ("import:dask", "import numpy, h5py, dask.array"),
                    ("import:scipy", "import numpy, h5py, scipy.sparse.linalg"),
                    ("import:sklearn", "import numpy, h5py, sklearn.linear_model"),
                    ("import:statsmodels", "import numpy, h5py, statsmodels.discrete.discrete_model, statsmodels.tools")):
        floors.append(frow("start-up: `python3 -c '%s'`" % what, k))
    out += [f for f in floors if f]

    # in-memory compute (from the peers' phases)
    comp = []

    def compute_med(k):
        return median(phases[k]["compute"]) if k in phases and phases[k]["compute"] else None

    for k, what, flops in (
            ("numpy:svd1", "`np.linalg.svd(x, full_matrices=False)`, x in memory (svd1)", None),
            ("numpy:svd2", "`np.linalg.svd(x, full_matrices=False)`, x in memory (svd2)", None),
            ("scipy:rsvd3", "`svds(x, k=10)`, x in memory (rsvd3)", None),
            ("numpy:dot4", "`a @ (a + a.T)`, a in memory (dot4)", 2 * int(sh["dot4"].split(",")[0]) ** 3),
            ("sklearn:glm5_%d" % nmax, "`LogisticRegression(...).fit(X, y)`, in memory (n = %d)" % nmax, None),
            ("statsmodels:glm5_%d" % nmax, "`Logit(y, add_constant(X)).fit(method='newton')`, in memory (n = %d)" % nmax, None)):
        m = compute_med(k)
        if m is None:
            continue
        rate = " (%.1f GFLOP/s)" % (flops / m / 1e9) if flops else ""
        comp.append("| %s | %.3f%s |" % (what, m, rate))
    if comp:
        out += ["", "In-memory compute inside the peers (no start-up, no I/O; median of their runs): the LAPACK / BLAS "
                "part a chunkctl using the same library cannot beat by much.", "",
                "| what | median s |", "|---|---:|"] + comp

    # correctness
    out += ["", "### Correctness (once per case, untimed: chunkctl's outputs vs NumPy / the reference)", "", "```"]
    out += checks or ["(no checks ran)"]
    out += ["```"]

    # targets
    out += ["", "### Targets (from the issue)", ""]
    if small:
        out += ["Not applicable at BENCH_SCALE=small (the inputs are ~100x smaller than the targets assume)."]
    else:
        out += ["| case | target | measured (median) | x of target | peak RSS MB | verdict |",
                "|---|---|---:|---:|---:|---|"]

        def verdict(ok):
            return "**met**" if ok else "**not met**"

        def ck_missing(k):
            return "failed" if k in fails else "not run"

        for c, tgt_s, tgt_mb in (("svd1", 0.8, 200), ("svd2", 3.0, None), ("rsvd3", 0.6, None)):
            if c not in targets:
                continue
            k = "ck:" + c
            tt = "<= %g s%s%s" % (tgt_s, "" if c == "svd1" else " under `--memory %s`" % meta["memory"],
                                  ", <= %d MB" % tgt_mb if tgt_mb else "")
            if k not in med:
                out.append("| %s | %s | %s | | | **not met** |" % (c, tt, ck_missing(k)))
                continue
            ok = med[k] <= tgt_s and (tgt_mb is None or mb(k) <= tgt_mb)
            out.append("| %s | %s | %.3f s | %.2f | %.0f | %s |" % (c, tt, med[k], med[k] / tgt_s, mb(k), verdict(ok)))
        if "rsvd3" in targets:
            line = next((l for l in checks if "rsvd3" in l), "")
            ok = line.startswith("PASS")
            val = line.split("max rel diff ")[1].split(" ")[0] if "max rel diff " in line else "-"
            out.append("| rsvd3 | top-10 S within 1e-6 of NumPy's exact SVD | %s | | | %s |" % (val, verdict(ok)))
        if "dot4" in targets:
            k, npk = "ck:dot4", "numpy:dot4"
            if k in med and npk in med:
                out.append("| dot4 | <= 1.1 x NumPy (%.3f s) | %.3f s | %.2f | %.0f | %s |" % (
                    1.1 * med[npk], med[k], med[k] / (1.1 * med[npk]), mb(k), verdict(med[k] <= 1.1 * med[npk])))
            else:
                out.append("| dot4 | <= 1.1 x NumPy | %s | | | **not met** |" % (ck_missing(k) if k not in med else "NumPy missing"))
        if "glm5" in wanted:
            for s in ("newton", "lbfgs"):
                k = "ck%s:glm5_%d" % (s, nmax)
                tt = "<= 0.8 s, <= 256 MB at n = %d (`--solver %s`)" % (nmax, s)
                if k not in med:
                    out.append("| glm5 | %s | %s | | | **not met** |" % (tt, ck_missing(k)))
                    continue
                out.append("| glm5 | %s | %.3f s | %.2f | %.0f | %s |" % (
                    tt, med[k], med[k] / 0.8, mb(k), verdict(med[k] <= 0.8 and mb(k) <= 256)))
        capped = [k for k in med if k.split(":")[0] in ("ck", "cknewton", "cklbfgs") and k != "ck:svd1"
                  and not is_base(k)]
        if capped:
            worst = max(capped, key=mb)
            out.append("| all but svd1 | chunkctl's peak RSS within `--memory %s` (its own promise, not the issue's) | "
                       "max %.0f MB (%s) | | | %s |" % (meta["memory"], mb(worst), worst,
                                                      verdict(mb(worst) * 1e6 <= parse_size(meta["memory"]))))

    # profiles
    out += profiles("\n".join(lines("perf.txt")))

    # notes
    notes = []
    ck_fails = sorted(k for k in fails if k.split(":")[0] in ("ck", "cknewton", "cklbfgs"))
    if ck_fails:
        notes.append("chunkctl failed on: " + ", ".join("%s (exit %s)" % (k, fails[k][1]) for k in ck_fails)
                     + "; those rows have no timings.")
    peer_fails = sorted(k for k in fails if k not in ck_fails)
    if peer_fails:
        notes.append("Also failed: " + ", ".join("%s (exit %s: %s)" % (k, fails[k][1], fails[k][2]) for k in peer_fails) + ".")
    spread = smp.spread(0.05)
    if spread:
        notes.append("Spread: max > 1.3x median for " + ", ".join(spread) + "; the tables use medians.")
    notes += [l for l in meta.get("notes", "").split(" || ") if l.strip()]
    notes += smp.baseline_note()
    notes.append("rsvd3's spectrum decays as exp(-i/%s), not the issue's exp(-i/20): with exp(-i/20) a k = 10 "
                 "randomized SVD with 2 power iterations and 10 extra columns gets the 10th singular value only "
                 "to ~3e-3, so the 1e-6 check could not pass for any implementation of that method "
                 "(BENCH_TAU sets it)." % meta["tau"])
    if notes:
        out += ["", "### Notes (computed from this run)", ""] + ["- " + n for n in notes]

    # commands, pipeline, peer code
    out += ["", "### Commands (as run; paths under %s)" % meta["work"], "", "```"]
    out += ["%-24s %s" % (k, c) for k, c in cmds]
    out += ["```", "", "The peers (`bench/linalg_peers.py run TOOL CASE IN [OUT]`):", ""]
    out += ["- `%s`: %s" % (k, v) for k, v in DESCRIBE.items()]
    out += ["", "Pipeline (`%s/DOT.json`):" % pipedir, ""]
    dot = os.path.join(pipedir, "DOT.json")
    if os.path.exists(dot):
        out += ["```json"] + open(dot).read().rstrip("\n").splitlines() + ["```", ""]
    out += ["Raw samples: `%s/samples.tsv`." % logdir, "", END]

    write_section(results_path, BEGIN, END, "\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:4])
