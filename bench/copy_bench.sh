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
#   untimed (prepare() in harness.sh): outputs removed (rm -rf, then sync, so no run pays for
#   the previous run's write-back), free memory put in a known state
#   (MEMSTATE, see harness.sh prepare(): this VM returns freed memory to its host), and
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
#   MEMSTATE=hot|cold|none, PREFAULT (MiB), SETTLE (s), MAX_REDO=3 (see harness.sh), CHUNKCTL=path,
#   RESULTS=bench/RESULTS.md (the script rewrites only its own section there,
#   between <!-- copy_bench:begin --> and <!-- copy_bench:end -->),
#   BASELINE=path/to/other/chunkctl (its plugins from BASELINE_PLUGINS, default
#   its ../plugins; BASELINE_NAME="main at 70676ba"): every chunkctl sample is
#   also taken with that binary in the same round, and each chunkctl row gets
#   a "(baseline)" row beside it (see harness.sh).
# Needs: /usr/bin/python3 with numpy, h5py, zarr (v2); zstd; /usr/bin/time.
# Do not run other heavy jobs meanwhile: the machine has 2 cores.

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/harness.sh
. "$HERE/harness.sh"
H_NAME=copy_bench
WORK=${WORK:-/tmp/chunkctl-bench}
RUNS=${RUNS:-7}
MEMORY=${MEMORY:-256M}
ROWS=${ROWS:-16384}
COLS=${COLS:-8192}
CHUNK_ROWS=${CHUNK_ROWS:-128}
CHUNKCTL=${CHUNKCTL:-$REPO/build/cli/chunkctl}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
VERIFY=${VERIFY:-1}
REGEN=${REGEN:-0}
PY=/usr/bin/python3
PLUGINS=${HDF5_PLUGIN_PATH:-$REPO/build/plugins}
PREFAULT_TO=file REDO_PAUSE=5     # hot: a file, as chunkctl's outputs are
h_init
command -v zstd >/dev/null || die "zstd missing"

h_snapshot "$CHUNKCTL" "$REPO" "$PLUGINS"
CHUNKCTL=$H_CK
export HDF5_PLUGIN_PATH=$BIN/plugins
# `chunkctl verify` (read + decode every chunk, write nothing) is the CLI's
# read-only command where the binary has it.
HAVE_VERIFY=0
"$CHUNKCTL" verify --help > /dev/null 2>&1 && HAVE_VERIFY=1
RAW_BYTES=$((ROWS * COLS * 8))
PREFAULT=${PREFAULT:-$((RAW_BYTES * 3 / 2 / 1048576))}

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
h_new_log
# Inputs as chunkctl names them, and the peer reader for each.
INPUTS="zstd gzip blosc none"
src_of() { case $1 in blosc) echo "$DATA/blosc.zarr" ;; *) echo "$DATA/$1.h5:/x" ;; esac; }
path_of() { case $1 in blosc) echo "$DATA/blosc.zarr" ;; *) echo "$DATA/$1.h5" ;; esac; }

echo "copy_bench: warming the page cache"
for i in $INPUTS; do find "$(path_of "$i")" -type f -exec cat {} + > /dev/null; done
cat "$DATA/raw.zst" > /dev/null
"$PY" -c 'import h5py, zarr' # warm the Python modules too

h_rounds_start
clean_out
for run in $(seq 1 "$RUNS"); do
    h_round "$run"
    for i in $INPUTS; do
        src=$(src_of "$i") p=$(path_of "$i")
        [ "$HAVE_VERIFY" = 1 ] &&
            measure "verify:$i" "$run" "$p" "$PREFAULT" "$CHUNKCTL" verify --quiet --memory "$MEMORY" "$src"
        measure "copy:$i:h5"   "$run" "$p" "$PREFAULT" "$CHUNKCTL" copy --quiet --force "$src" "$OUT/o.h5:/x" --compress none --memory "$MEMORY"
        case $i in
            blosc) measure "read:$i:zarr" "$run" "$p" "$PREFAULT" "$PY" -c 'import sys, zarr; a = zarr.open(sys.argv[1], mode="r")[:]' "$p" ;;
            *)     measure "read:$i:h5py" "$run" "$p" "$PREFAULT" "$PY" -c 'import sys, h5py; a = h5py.File(sys.argv[1], "r")["x"][:]' "$p" ;;
        esac
        measure "copy:$i:zarr" "$run" "$p" "$PREFAULT" "$CHUNKCTL" copy --quiet --force "$src" "$OUT/o.zarr" --compress none --memory "$MEMORY"
        if [ -d "$p" ]; then
            measure "cat:$i" "$run" "$p" "$PREFAULT" find "$p" -type f -exec cat {} +
        else
            measure "cat:$i" "$run" "$p" "$PREFAULT" cat "$p"
        fi
    done
    measure "zstd-d:raw"   "$run" "$DATA/raw.zst" "$PREFAULT" zstd -d -c -T1 "$DATA/raw.zst"
    measure "write:dd"     "$run" - "$PREFAULT" dd if=/dev/zero of="$OUT/dd.bin" bs=8M count=$((RAW_BYTES / 8388608)) status=none
    measure "import:h5py"  "$run" - "$PREFAULT" "$PY" -c 'import h5py'
    measure "import:zarr"  "$run" - "$PREFAULT" "$PY" -c 'import zarr'
done
clean_out
h_rounds_end

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
    h_meta_machine
    echo "versions	$("$PY" -c 'import sys, numpy, h5py, zarr, numcodecs; print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), zarr {zarr.__version__}, numcodecs {numcodecs.__version__}")'), zstd $(zstd --version | grep -o 'v[0-9.]*' | head -1)"
    echo "runs	$RUNS"
    echo "memory	$MEMORY"
    echo "disturbed	$DISTURBED"
    echo "max_redo	$MAX_REDO"
    h_meta_memstate "$PREFAULT MiB written and deleted just before each sample"
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
