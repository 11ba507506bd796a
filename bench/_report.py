"""What the bench report scripts share: reading the samples harness.sh
writes, the numbers every table shows, the profiles, the baseline's rows and
rewriting one section of RESULTS.md.  Each report script keeps its own
tables; nothing here knows which benchmark it serves.

Samples (samples.tsv, and disturbed.tsv for those found disturbed): id, run,
wall s, peak RSS KiB, CPU %, other CPU s, disturbed 0/1, user s, sys s.  A
sample of the BASELINE binary has its row's id with BASE appended.
"""
import statistics
from collections import defaultdict

BASE = "+base"          # harness.sh: measure's id for the baseline's sample
BASE_LABEL = " (baseline)"


def median(v):
    return statistics.median(v)


def is_base(k):
    return k.endswith(BASE)


def read_meta(path):
    """meta.tsv: key<TAB>value lines."""
    return dict(line.rstrip("\n").split("\t", 1) for line in open(path) if "\t" in line)


def read_lines(path):
    try:
        return [line.rstrip("\n") for line in open(path)]
    except FileNotFoundError:
        return []


def read_commands(path):
    """commands.tsv: [id, command as run] per line."""
    return [line.split("\t", 1) for line in read_lines(path) if "\t" in line]


def parse_size(spec):
    """A --memory value ("256M", "2G") in bytes."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    spec = spec.strip().upper().rstrip("B").rstrip("I")
    unit = spec[-1] if spec[-1] in units else ""
    return int(float(spec[: len(spec) - len(unit)]) * units[unit])


class Samples:
    """The samples of one run, by id: walls, rss (KiB), cpu (%), other, usr,
    sys_ (s) are lists; med the median walls; kept_disturbed names the
    samples kept although disturbed, n_redone counts the redos."""

    def __init__(self, samples_path, disturbed_path):
        self.walls, self.rss, self.cpu = defaultdict(list), defaultdict(list), defaultdict(list)
        self.other, self.usr, self.sys_ = defaultdict(list), defaultdict(list), defaultdict(list)
        self.kept_disturbed = []
        for line in read_lines(samples_path):
            f = line.split("\t")
            if len(f) < 9:
                continue
            self.walls[f[0]].append(float(f[2]))
            self.rss[f[0]].append(int(f[3]))
            self.cpu[f[0]].append(float(f[4]) if f[4].replace(".", "").isdigit() else 0.0)
            self.other[f[0]].append(float(f[5]))
            self.usr[f[0]].append(float(f[7]))
            self.sys_[f[0]].append(float(f[8]))
            if f[6] == "1":
                self.kept_disturbed.append("%s run %s" % (f[0], f[1]))
        self.n_redone = len(read_lines(disturbed_path)) - len(self.kept_disturbed)
        self.n_samples = sum(len(v) for v in self.walls.values())
        self.other_total = sum(sum(v) for v in self.other.values())
        self.wall_total = sum(sum(v) for v in self.walls.values())
        self.med = {k: median(v) for k, v in self.walls.items()}

    def mb(self, k):
        """Peak RSS over the runs, MB (10^6 bytes)."""
        return max(self.rss[k]) * 1024 / 1e6

    def us(self, k):
        """Median user / sys CPU seconds."""
        return "%.2f / %.2f" % (median(self.usr[k]), median(self.sys_[k]))

    def spread(self, min_median):
        """The ids whose slowest run took over 1.3x their median."""
        return ["%s (max %.2fx median)" % (k, max(v) / self.med[k]) for k, v in sorted(self.walls.items())
                if max(v) > 1.3 * self.med[k] and self.med[k] > min_median]

    def baseline_note(self):
        """One note comparing each of our rows with the baseline's, or []."""
        pairs = sorted(k[: -len(BASE)] for k in self.med if is_base(k) and k[: -len(BASE)] in self.med)
        if not pairs:
            return []
        return ["Against the baseline (our median / the baseline's; < 1: ours is faster): " + ", ".join(
            "%s %.3f" % (k, self.med[k] / self.med[k + BASE]) for k in pairs) + "."]


def machine_rows(meta):
    """The first rows of a section's description table."""
    rows = [
        "| date | %s |" % meta["date"],
        "| machine | %s cores, %s, %s RAM, Linux %s |" % (meta["nproc"], meta["cpu"], meta["mem"], meta["kernel"]),
        "| chunkctl | %s |" % meta["commit"],
    ]
    if meta.get("baseline"):
        rows.append("| chunkctl (baseline) | %s; its rows are labelled (baseline), sampled in the same rounds as "
                    "ours, the two alternating which goes first |" % meta["baseline"])
    return rows


def profiles(text):
    """perf.txt ("@@ ID MEDIAN TARGET" then perf report lines) as lines."""
    if not text.strip():
        return []
    out = ["", "### Profiles of chunkctl rows more than 2x over target (`perf record -g`, top 10 by self time)", ""]
    for block in text.split("@@ ")[1:]:
        head, _, body = block.partition("\n")
        k, m, t = head.split()
        out += ["%s: median %.3f s, target %s s (`perf report --no-children --sort dso,symbol`):" % (k, float(m), t),
                "", "```"] + [l.rstrip(" -") for l in body.splitlines() if l.strip()][:10] + ["```", ""]
    return out


def write_section(results_path, begin, end, section):
    """Put section in place of the text from begin to end in results_path
    (appended when the markers are missing); "-": print it instead."""
    if results_path == "-":
        print(section)
        return
    try:
        text = open(results_path).read()
    except FileNotFoundError:
        text = "# Benchmark results\n"
    if begin in text and end in text:
        a, b = text.index(begin), text.index(end) + len(end)
        text = text[:a] + section + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    open(results_path, "w").write(text)
