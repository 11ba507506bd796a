#!/bin/bash
# copy_bench.sh: how fast do `chunkctl copy` (and `chunkctl verify`) read and
# decode a 1 GiB array, next to h5py / zarr-python loading the same data and
# `zstd -d`?  Writes its table to bench/RESULTS.md.
#
# What it measures (whole-process wall time and peak RSS, page cache warm):
#
#   inputs (same 16384 x 8192 float64 array, 1 GiB raw, 128 x 8192 = 8 MiB chunks,
#   integers 0..999 stored as float64, from `chunkctl gen --dist integers --seed 1`):
#     zstd.h5    HDF5, zstd level 3 (filter 32015)       written by chunkctl gen
#     gzip.h5    HDF5, shuffle + deflate level 4         written by chunkctl gen
#     blosc.zarr Zarr v2, zarr-python's default compressor
#                Blosc(lz4, clevel 5, shuffle)           written by zarr-python
#     none.h5    HDF5, chunked, no filters               written by chunkctl gen
#     raw.zst    the raw 1 GiB (C order, little-endian) as one zstd -3 frame
#
#   per input, alternating tools within each round, RUNS rounds:
#     chunkctl verify --quiet --memory 256M IN    (read + decode only, if the
#                                                  binary has `verify`)
#     chunkctl copy --quiet --force IN OUT.h5:/x --compress none --memory 256M
#     chunkctl copy --quiet --force IN OUT.zarr  --compress none --memory 256M
#     h5py  (HDF5 inputs):  python3 -c 'import h5py; a = h5py.File(IN, "r")["x"][:]'
#     zarr  (Zarr input):   python3 -c 'import zarr; a = zarr.open(IN, mode="r")[:]'
#   reference and floors, in the same rounds:
#     zstd -d -c -T1 raw.zst > /dev/null          (single-threaded zstd decode)
#     cat IN > /dev/null                          (read floor, per input)
#     dd if=/dev/zero of=OUT bs=8M count=128      (1 GiB buffered-write floor)
#     python3 -c 'import h5py' / 'import zarr'    (reader start-up cost)
#
#   chunkctl copy's rows include writing 1 GiB of output; verify's and the
#   readers' do not (the readers do fill a fresh 1 GiB array).  Before each sample,
#   untimed (prepare()): outputs removed (rm -rf, then sync, so no run pays for
#   the previous run's write-back), free memory put in a known state
#   (MEMSTATE, see prepare(): this VM returns freed memory to its host), and
#   the input re-read into the page cache.
#
# Wall time: bash's $EPOCHREALTIME around the command (microseconds); peak RSS
# (%M), CPU% (%P) from /usr/bin/time.  Table: median, min, max wall; max peak
# RSS; rate = 2^30 raw bytes / median wall in GB/s (10^9 bytes/s).
# Interference: for each sample the machine's busy CPU time (/proc/stat, steal
# included) is compared with the command's own user+sys time; a sample where
# other work used more than DISTURBED of a core is redone (3 times at most),
# and RESULTS.md says how many were.  The binary and the zstd plugin are
# copied to WORK/bin first, so a rebuild meanwhile does not mix builds.
#
# Run (about 8 minutes on 2 cores, plus ~1 minute to make the data once;
# MEMSTATE=cold takes ~25 minutes and writes a section of its own):
#   bash bench/copy_bench.sh
#   MEMSTATE=cold RUNS=5 bash bench/copy_bench.sh
# Knobs (environment): WORK=/tmp/chunkctl-bench (data and outputs, ~5 GiB),
#   RUNS=7, MEMORY=256M, ROWS=16384 COLS=8192 CHUNK_ROWS=128, REGEN=1 (remake
#   the data), VERIFY=0 (skip the output check), DISTURBED=0.15,
#   MEMSTATE=hot|cold|none, PREFAULT (MiB), SETTLE (s) (see prepare()), CHUNKCTL=path,
#   RESULTS=bench/RESULTS.md (the script rewrites only its own section there,
#   between <!-- copy_bench:begin --> and <!-- copy_bench:end -->).
# Needs: /usr/bin/python3 with numpy, h5py, zarr (v2); zstd; /usr/bin/time.
# Do not run other heavy jobs meanwhile: the machine has 2 cores.

set -eu
export LC_ALL=C     # '.' as the decimal point in $EPOCHREALTIME and awk

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
WORK=${WORK:-/tmp/chunkctl-bench}
RUNS=${RUNS:-7}
MEMORY=${MEMORY:-256M}
ROWS=${ROWS:-16384}
COLS=${COLS:-8192}
CHUNK_ROWS=${CHUNK_ROWS:-128}
CHUNKCTL=${CHUNKCTL:-$REPO/build/cli/chunkctl}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
VERIFY=${VERIFY:-1}
MEMSTATE=${MEMSTATE:-hot}
SETTLE=${SETTLE:-6}
REGEN=${REGEN:-0}
PY=/usr/bin/python3
PLUGINS=${HDF5_PLUGIN_PATH:-$REPO/build/plugins}

for tool in "$CHUNKCTL" /usr/bin/time "$PY"; do
    [ -x "$tool" ] || { echo "copy_bench: $tool missing (build: cmake --build $REPO/build -j2)" >&2; exit 1; }
done
command -v zstd >/dev/null || { echo "copy_bench: zstd missing" >&2; exit 1; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "copy_bench: needs bash >= 5 (EPOCHREALTIME)" >&2; exit 1; }

DATA=$WORK/data
OUT=$WORK/out
LOG=$WORK/log
mkdir -p "$DATA" "$OUT" "$LOG"
cd "$WORK"          # nothing this script runs may write into the checkout

# Run a snapshot of the binary and the zstd plugin, so that a rebuild of the
# checkout during the run cannot mix two builds in one table.
BIN=$WORK/bin
rm -rf "$BIN" && mkdir -p "$BIN/plugins"
cp "$CHUNKCTL" "$BIN/chunkctl"
cp "$PLUGINS"/*.so "$BIN/plugins/"
changed=$(git -C "$REPO" diff --name-only HEAD -- . ':!bench' 2>/dev/null | tr '\n' ' ')
BUILD_INFO="commit $(git -C "$REPO" rev-parse --short HEAD)${changed:+ + uncommitted changes to ${changed% }}; binary built $(date -u -r "$CHUNKCTL" '+%Y-%m-%d %H:%M UTC'), sha256 $(sha256sum "$BIN/chunkctl" | cut -c1-12)"
CHUNKCTL=$BIN/chunkctl
export HDF5_PLUGIN_PATH=$BIN/plugins
# `chunkctl verify` (read + decode every chunk, write nothing) is the CLI's
# read-only command where the binary has it.
HAVE_VERIFY=0
"$CHUNKCTL" verify --help > /dev/null 2>&1 && HAVE_VERIFY=1
RAW_BYTES=$((ROWS * COLS * 8))
PREFAULT=${PREFAULT:-$((RAW_BYTES * 3 / 2 / 1048576))}
case $MEMSTATE in hot|cold|none) ;; *) echo "copy_bench: MEMSTATE is hot, cold or none" >&2; exit 2 ;; esac

# ---------------------------------------------------------------- the data
GEN_ARGS="--shape $ROWS,$COLS --chunks $CHUNK_ROWS,$COLS --dist integers --low 0 --high 1000 --seed 1"
STAMP="$GEN_ARGS $(zstd --version 2>&1 | head -1)"
if [ "$REGEN" = 1 ] || [ "$(cat "$DATA/stamp" 2>/dev/null)" != "$STAMP" ]; then
    echo "copy_bench: making the data in $DATA"
    rm -rf "$DATA" && mkdir -p "$DATA"
    # shellcheck disable=SC2086  # GEN_ARGS is a list of words
    "$CHUNKCTL" gen --quiet $GEN_ARGS --compress zstd:3         "$DATA/zstd.h5:/x"
    # shellcheck disable=SC2086
    "$CHUNKCTL" gen --quiet $GEN_ARGS --compress gzip:4:shuffle "$DATA/gzip.h5:/x"
    # shellcheck disable=SC2086
    "$CHUNKCTL" gen --quiet $GEN_ARGS --compress none           "$DATA/none.h5:/x"
    # The Zarr store and the raw bytes come from zarr-python / NumPy, from the
    # uncompressed HDF5; the two other HDF5 files are checked to hold the same.
    "$PY" - "$DATA" "$CHUNK_ROWS" <<'EOF'
import sys, h5py, numpy as np, zarr
d, crows = sys.argv[1], int(sys.argv[2])
a = h5py.File(f"{d}/none.h5", "r")["x"][:]
for name in ("zstd.h5", "gzip.h5"):
    if not np.array_equal(h5py.File(f"{d}/{name}", "r")["x"][:], a):
        sys.exit(f"copy_bench: {name} differs from none.h5")
z = zarr.open(f"{d}/blosc.zarr", mode="w", shape=a.shape, dtype=a.dtype,
              chunks=(crows, a.shape[1]))       # compressor: zarr's default
z[:] = a
a.astype("<f8", copy=False).tofile(f"{d}/raw.bin")
print("copy_bench: zarr compressor:", z.compressor)
EOF
    zstd -q -3 --single-thread "$DATA/raw.bin" -o "$DATA/raw.zst"
    rm -f "$DATA/raw.bin"
    echo "$STAMP" > "$DATA/stamp"
fi

# ---------------------------------------------------------------- measuring
SAMPLES=$LOG/samples.tsv      # id run wall_s rss_kib cpu% other_cpu_s disturbed user_s sys_s
: > "$SAMPLES"
CMDS=$LOG/commands.tsv        # id  command (as run)
: > "$CMDS"
REDONE=$LOG/disturbed.tsv     # samples found disturbed (redone, or kept after 3 redos)
: > "$REDONE"

clean_out() { rm -rf "${OUT:?}"/* "$OUT"/.prefault && sync; }

# prepare PATH: the state every sample starts from (untimed): no outputs left,
# fresh memory in the state MEMSTATE asks for, and PATH (an input) re-read so
# it is in the page cache ("-": none).
#
# Why MEMSTATE: this VM hands memory the guest frees back to the host within
# about 1-5 s (virtio-balloon free page reporting); touching such memory again
# costs the toucher ~2 s of system time per GiB instead of ~0.27 s.  Every tool
# here touches ~1 GiB of fresh memory (the readers' array, chunkctl's output in
# the page cache), so the state of free memory decides the timings.
#   hot  (default) write and delete PREFAULT MiB just before the command, so
#        the memory it gets is guest-backed (for ~2 s, which covers most runs);
#   cold sleep SETTLE s first, so every command gets host-returned memory (what
#        a command on an idle VM of this kind gets);
#   none do nothing (timings then depend on what ran just before).
# Also, DAMON on this VM pages out page cache untouched for ~60 s, hence the
# re-read of the input before each sample.
prepare() {
    clean_out
    case $MEMSTATE in
        hot)  dd if=/dev/zero of="$OUT/.prefault" bs=1M count="$PREFAULT" status=none
              rm -f "$OUT/.prefault" ;;
        cold) sleep "$SETTLE" ;;
    esac
    if [ -d "$1" ]; then find "$1" -type f -exec cat {} + > /dev/null
    elif [ "$1" != - ]; then cat "$1" > /dev/null; fi
}

# shell_quote ARG...: the arguments as one line a shell would read back.
shell_quote() {
    local a
    for a in "$@"; do
        case $a in
            *[!A-Za-z0-9_./:=,+%@-]* | '') printf "'%s' " "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")" ;;
            *) printf '%s ' "$a" ;;
        esac
    done
}

# busy_ticks: CPU time the whole machine has spent busy, all cores, in clock
# ticks (/proc/stat: user nice system irq softirq steal; steal = time the VM
# host took away).  Compared with the measured command's own user+sys time it
# tells whether something else ran during a sample.
busy_ticks() {
    local _cpu u n s _idle _iow irq sirq steal _rest
    read -r _cpu u n s _idle _iow irq sirq steal _rest < /proc/stat
    echo $((u + n + s + irq + sirq + steal))
}
HZ=$(getconf CLK_TCK)

# measure ID RUN INPUT CMD...: prepare INPUT, run CMD (stdout to /dev/null) and
# record one sample: wall s, peak RSS KiB, CPU %, "other" = CPU seconds the
# machine spent on anything but CMD meanwhile, CMD's user and system s.  A sample where other work took more than
# DISTURBED (fraction of one core, default 0.15) of the wall time is redone,
# up to 3 times after a pause; the last try is kept and marked.
DISTURBED=${DISTURBED:-0.15}
measure() {
    local id=$1 run=$2 input=$3 t0 t1 b0 b1 tf=$LOG/time.txt try line
    shift 3
    [ "$run" = 1 ] && printf '%s\t%s> /dev/null\n' "$id" "$(shell_quote "$@")" >> "$CMDS"
    for try in 1 2 3 4; do
        prepare "$input"
        b0=$(busy_ticks)
        t0=$EPOCHREALTIME
        if ! /usr/bin/time -f '%M %P %U %S' -o "$tf" "$@" > /dev/null 2> "$LOG/stderr.txt"; then
            echo "copy_bench: failed: $*" >&2; cat "$LOG/stderr.txt" >&2; exit 1
        fi
        t1=$EPOCHREALTIME
        b1=$(busy_ticks)
        # id run wall rss cpu% other disturbed(0/1) user sys
        line=$(tail -1 "$tf" | tr -d '%' | awk -v id="$id" -v run="$run" \
            -v t0="$t0" -v t1="$t1" -v db="$((b1 - b0))" -v hz="$HZ" -v lim="$DISTURBED" '
            { wall = t1 - t0; other = db / hz - ($3 + $4); if (other < 0) other = 0
              printf "%s\t%s\t%.6f\t%s\t%s\t%.2f\t%d\t%s\t%s", id, run, wall, $1, $2, other,
                     (other > lim * wall + 0.05), $3, $4 }')
        [ "$(echo "$line" | cut -f7)" = 1 ] || break
        printf '%s\n' "$line" >> "$REDONE"
        [ "$try" = 4 ] || { echo "copy_bench: $id run $run disturbed ($(echo "$line" | cut -f6) CPU s of other work in $(echo "$line" | cut -f3) s), redoing" >&2; sleep 5; }
    done
    printf '%s\n' "$line" >> "$SAMPLES"
}

# Inputs as chunkctl names them, and the peer reader for each.
INPUTS="zstd gzip blosc none"
src_of() { case $1 in blosc) echo "$DATA/blosc.zarr" ;; *) echo "$DATA/$1.h5:/x" ;; esac; }
path_of() { case $1 in blosc) echo "$DATA/blosc.zarr" ;; *) echo "$DATA/$1.h5" ;; esac; }

echo "copy_bench: warming the page cache"
for i in $INPUTS; do find "$(path_of "$i")" -type f -exec cat {} + > /dev/null; done
cat "$DATA/raw.zst" > /dev/null
"$PY" -c 'import h5py, zarr' # warm the Python modules too

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
clean_out
for run in $(seq 1 "$RUNS"); do
    echo "copy_bench: round $run of $RUNS"
    for i in $INPUTS; do
        src=$(src_of "$i") p=$(path_of "$i")
        [ "$HAVE_VERIFY" = 1 ] &&
            measure "verify:$i" "$run" "$p" "$CHUNKCTL" verify --quiet --memory "$MEMORY" "$src"
        measure "copy:$i:h5"   "$run" "$p" "$CHUNKCTL" copy --quiet --force "$src" "$OUT/o.h5:/x" --compress none --memory "$MEMORY"
        case $i in
            blosc) measure "read:$i:zarr" "$run" "$p" "$PY" -c 'import sys, zarr; a = zarr.open(sys.argv[1], mode="r")[:]' "$p" ;;
            *)     measure "read:$i:h5py" "$run" "$p" "$PY" -c 'import sys, h5py; a = h5py.File(sys.argv[1], "r")["x"][:]' "$p" ;;
        esac
        measure "copy:$i:zarr" "$run" "$p" "$CHUNKCTL" copy --quiet --force "$src" "$OUT/o.zarr" --compress none --memory "$MEMORY"
        if [ -d "$p" ]; then
            measure "cat:$i" "$run" "$p" find "$p" -type f -exec cat {} +
        else
            measure "cat:$i" "$run" "$p" cat "$p"
        fi
    done
    measure "zstd-d:raw"   "$run" "$DATA/raw.zst" zstd -d -c -T1 "$DATA/raw.zst"
    measure "write:dd"     "$run" - dd if=/dev/zero of="$OUT/dd.bin" bs=8M count=$((RAW_BYTES / 8388608)) status=none
    measure "import:h5py"  "$run" - "$PY" -c 'import h5py'
    measure "import:zarr"  "$run" - "$PY" -c 'import zarr'
done
clean_out
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- check outputs
VERIFIED="not checked (VERIFY=0)"
if [ "$VERIFY" = 1 ]; then
    echo "copy_bench: checking chunkctl's outputs against none.h5"
    for i in $INPUTS; do
        "$CHUNKCTL" copy --quiet --force "$(src_of "$i")" "$OUT/o.h5:/x" --compress none --memory "$MEMORY"
        "$CHUNKCTL" copy --quiet --force "$(src_of "$i")" "$OUT/o.zarr" --compress none --memory "$MEMORY"
        "$PY" - "$DATA/none.h5" "$OUT/o.h5" "$OUT/o.zarr" "$i" <<'EOF'
import sys, h5py, numpy as np, zarr
ref = h5py.File(sys.argv[1], "r")["x"][:]
if not (np.array_equal(h5py.File(sys.argv[2], "r")["x"][:], ref)
        and np.array_equal(zarr.open(sys.argv[3], mode="r")[:], ref)):
    sys.exit(f"copy_bench: chunkctl copy of {sys.argv[4]} differs from none.h5")
EOF
        clean_out
    done
    VERIFIED="all 8 outputs (4 inputs x .h5/.zarr) equal none.h5 element for element"
fi

# ---------------------------------------------------------------- report
stored_of() { find "$(path_of "$1")" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }'; }
{
    echo "date	$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "nproc	$(nproc)"
    echo "cpu	$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "mem	$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel	$(uname -r)"
    echo "commit	$BUILD_INFO (snapshot run from $BIN)"
    echo "versions	$("$PY" -c 'import sys, numpy, h5py, zarr, numcodecs; print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), zarr {zarr.__version__}, numcodecs {numcodecs.__version__}")'), zstd $(zstd --version | grep -o 'v[0-9.]*' | head -1)"
    echo "runs	$RUNS"
    echo "memory	$MEMORY"
    echo "disturbed	$DISTURBED"
    case $MEMSTATE in
        hot)  echo "memstate	hot: $PREFAULT MiB written and deleted just before each sample" ;;
        cold) echo "memstate	cold: $SETTLE s pause before each sample" ;;
        none) echo "memstate	none: no preparation of free memory" ;;
    esac
    echo "raw_bytes	$RAW_BYTES"
    echo "shape	$ROWS x $COLS float64, chunks $CHUNK_ROWS x $COLS"
    echo "load	$LOAD_BEFORE -> $LOAD_AFTER"
    echo "verified	$VERIFIED"
    echo "work	$WORK"
    for i in $INPUTS; do echo "stored:$i	$(stored_of "$i")"; done
    echo "stored:raw.zst	$(stat -c %s "$DATA/raw.zst")"
} > "$LOG/meta.tsv"

"$PY" "$HERE/copy_bench_report.py" "$LOG/meta.tsv" "$SAMPLES" "$CMDS" "$REDONE" "$RESULTS"
echo "copy_bench: wrote $RESULTS (raw samples: $SAMPLES)"
