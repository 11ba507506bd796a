#!/bin/bash
# rechunk_bench.sh: how long does `chunkctl copy --chunks` take to turn an
# array chunked down its columns into one chunked along its rows (the rechunk
# whose chunk cache commit 110d2dc rebuilt), next to h5py and dask doing the
# same?  Writes its table to bench/RESULTS.md.
#
# What it measures (whole-process wall time and peak RSS, page cache warm):
#
#   inputs (same ROWS x COLS float64 array, 5000 x 5000 = 200 MB raw,
#   integers 0..999 stored as float64, `chunkctl gen --dist integers --seed 1`):
#     col_none.h5  chunks (C, 1), no filter              written by chunkctl gen
#     col_zstd.h5  chunks (C, 1), zstd level 3 (32015)   written by chunkctl gen
#     row_none.h5  chunks (1, C), no filter              written by chunkctl gen
#   (C = CHUNK, 1000).  Cases, each rechunking /x to new chunks, no compression:
#     none  col_none.h5 -> chunks (1, C)
#     zstd  col_zstd.h5 -> chunks (1, C)
#     rev   row_none.h5 -> chunks (C, 1)   (the reverse; REV=0 leaves it out)
#   per case, alternating tools within each round, RUNS rounds:
#     chunkctl copy IN:/x OUT.h5:/x --chunks T --compress none --quiet
#     chunkctl copy IN:/x OUT.zarr  --chunks T --compress none --quiet
#     h5py  python3 rechunk_bench_peers.py h5py IN OUT.h5 T   (read all, write
#           with chunks T)
#     dask  python3 rechunk_bench_peers.py dask IN OUT.h5 T   (from_array in
#           C x C blocks, .rechunk(T), da.store into a dataset with chunks T)
#
#   Before the rounds, each of these commands runs once, untimed, and every
#   output is checked (rechunk_bench_peers.py check) to hold col_none.h5's
#   values element for element, in chunks T, uncompressed.  Before each
#   sample, untimed (prepare() in harness.sh): outputs removed (rm -rf, then
#   sync), free memory made guest-backed (MEMSTATE, see harness.sh), the
#   input re-read into the page cache.
#
# Wall time: bash's $EPOCHREALTIME around the command; peak RSS (%M), CPU%
# (%P) from /usr/bin/time.  Table: median, min, max wall; max peak RSS; the
# ratio chunkctl median / peer median.  A sample during which other work
# used more than DISTURBED of a core is redone (harness.sh).  The binary and
# its zstd plugin are copied to WORK/bin first.
#
# Run (about 12 minutes on 2 cores at the default size, RUNS=5):
#   bash bench/rechunk_bench.sh
#   ROWS=1000 COLS=2000 RUNS=1 RESULTS=- bash bench/rechunk_bench.sh   (smoke)
# Knobs (environment): WORK=/tmp/chunkctl-rechunk-bench (data and outputs,
#   ~1 GiB), RUNS=5, ROWS=5000 COLS=5000 CHUNK=1000, REV=1, REGEN=1 (remake
#   the data), CHUNKCTL=path (default build-dev/cli/chunkctl, its plugins from
#   HDF5_PLUGIN_PATH, default build-dev/plugins), DISTURBED, MAX_REDO,
#   MEMSTATE, PREFAULT (MiB), ON_FAIL=record|exit (see harness.sh),
#   RESULTS=bench/RESULTS.md (only the text between
#   <!-- rechunk_bench:begin --> and <!-- rechunk_bench:end --> is rewritten;
#   "-" prints the section), BASELINE=path/to/other/chunkctl (see harness.sh).
# Needs: /usr/bin/python3 with numpy, h5py, zarr (v2), dask; /usr/bin/time.

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/harness.sh
. "$HERE/harness.sh"
H_NAME=rechunk_bench
WORK=${WORK:-/tmp/chunkctl-rechunk-bench}
RUNS=${RUNS:-5}
ROWS=${ROWS:-5000}
COLS=${COLS:-5000}
CHUNK=${CHUNK:-1000}
REV=${REV:-1}
REGEN=${REGEN:-0}
CHUNKCTL=${CHUNKCTL:-$REPO/build-dev/cli/chunkctl}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
PY=/usr/bin/python3
PEERS=$HERE/rechunk_bench_peers.py
PLUGINS=${HDF5_PLUGIN_PATH:-$(dirname "$(dirname "$CHUNKCTL")")/plugins}
PREFAULT_TO=file REDO_PAUSE=5     # hot: a file, as the outputs are
ON_FAIL=${ON_FAIL:-record}        # a failing tool reads "failed", the rest go on
h_init
"$PY" -c 'import dask.array, zarr, h5py' || die "$PY lacks dask, zarr or h5py"

h_snapshot "$CHUNKCTL" "$REPO" "$PLUGINS"
CHUNKCTL=$H_CK
export HDF5_PLUGIN_PATH=$BIN/plugins
RAW_BYTES=$((ROWS * COLS * 8))
# the peers hold the whole array and the output's page cache: twice raw
PREFAULT=${PREFAULT:-$((RAW_BYTES * 2 / 1048576))}
COL_CHUNKS=$CHUNK,1 ROW_CHUNKS=1,$CHUNK

# ---------------------------------------------------------------- the data
GEN_ARGS="--shape $ROWS,$COLS --dist integers --low 0 --high 1000 --seed 1"
STAMP="$GEN_ARGS --chunks $CHUNK"
if [ "$REGEN" = 1 ] || [ "$(cat "$DATA/stamp" 2>/dev/null)" != "$STAMP" ]; then
    echo "rechunk_bench: making the data in $DATA"
    rm -rf "$DATA" && mkdir -p "$DATA"
    # shellcheck disable=SC2086  # GEN_ARGS is a list of words
    "$CHUNKCTL" gen --quiet $GEN_ARGS --chunks "$COL_CHUNKS" --compress none   "$DATA/col_none.h5:/x"
    # shellcheck disable=SC2086
    "$CHUNKCTL" gen --quiet $GEN_ARGS --chunks "$COL_CHUNKS" --compress zstd:3 "$DATA/col_zstd.h5:/x"
    # shellcheck disable=SC2086
    "$CHUNKCTL" gen --quiet $GEN_ARGS --chunks "$ROW_CHUNKS" --compress none   "$DATA/row_none.h5:/x"
    # The three inputs hold the same values (gen's element i depends only on
    # the seed), in the chunks and filters asked; h5py says so.
    "$PY" - "$DATA" "$CHUNK" <<'EOF'
import sys, h5py, numpy as np
d, c = sys.argv[1], int(sys.argv[2])
ref = h5py.File(f"{d}/col_none.h5", "r")["x"][:]
for name, chunks, nfilt in (("col_none.h5", (c, 1), 0), ("col_zstd.h5", (c, 1), 1), ("row_none.h5", (1, c), 0)):
    x = h5py.File(f"{d}/{name}", "r")["x"]
    if x.chunks != chunks or x.id.get_create_plist().get_nfilters() != nfilt:
        sys.exit(f"rechunk_bench: {name}: chunks {x.chunks}, {x.id.get_create_plist().get_nfilters()} filters")
    if not np.array_equal(x[:], ref):
        sys.exit(f"rechunk_bench: {name} differs from col_none.h5")
EOF
    echo "$STAMP" > "$DATA/stamp"
fi

# ---------------------------------------------------------------- the cases
CASES="none zstd"
[ "$REV" = 0 ] || CASES="$CASES rev"
input_of() { case $1 in none) echo "$DATA/col_none.h5" ;; zstd) echo "$DATA/col_zstd.h5" ;; rev) echo "$DATA/row_none.h5" ;; esac; }
target_of() { case $1 in rev) echo "$COL_CHUNKS" ;; *) echo "$ROW_CHUNKS" ;; esac; }
TOOLS="ck-h5 ck-zarr h5py dask"
out_of() { case $1 in ck-zarr) echo "$OUT/$1.zarr" ;; *) echo "$OUT/$1.h5" ;; esac; }

# run_tool ID RUN CASE TOOL: one sample (RUN=0: run it untimed, for the check).
run_tool() {
    local id=$1 run=$2 in t o
    in=$(input_of "$3") t=$(target_of "$3") o=$(out_of "$4")
    set -- "$4"
    case $1 in
        ck-h5)   set -- "$CHUNKCTL" copy "$in:/x" "$o:/x" --chunks "$t" --compress none --quiet ;;
        ck-zarr) set -- "$CHUNKCTL" copy "$in:/x" "$o" --chunks "$t" --compress none --quiet ;;
        h5py)    set -- "$PY" "$PEERS" h5py "$in" "$o" "$t" ;;
        dask)    set -- "$PY" "$PEERS" dask "$in" "$o" "$t" ;;
    esac
    if [ "$run" = 0 ]; then "$@"; else measure "$id" "$run" "$in" "$PREFAULT" "$@"; fi
}

# ---------------------------------------------------------------- check outputs
# Once, untimed, before the rounds (so a wrong output stops the run before it
# spends its time): every tool's output of every case.  A pass is remembered
# in DATA/checked for this binary (sha256), data and cases, so a run that
# follows a passed check of the same (RUNS=0 makes only the data and the
# check) does not repeat it; CHECK=1 forces it.
CHECK_STAMP="$STAMP; $CASES; chunkctl sha256 $(sha256sum "$CHUNKCTL" | cut -c1-12)"
check_outputs() {
    local c tool outs t0
    echo "rechunk_bench: checking every tool's output against col_none.h5"
    for c in $CASES; do
        clean_out
        outs=""
        for tool in $TOOLS; do
            t0=$EPOCHREALTIME
            run_tool - 0 "$c" "$tool"
            echo "rechunk_bench: $tool:$c ran in $(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.1f", a - b }') s (untimed check)"
            outs="$outs $(out_of "$tool")"
        done
        # shellcheck disable=SC2086  # outs is a list of paths
        "$PY" "$PEERS" check "$DATA/col_none.h5" "$(target_of "$c")" $outs || die "case $c: an output is wrong"
    done
    clean_out
    printf '%s\n%s\n' "$CHECK_STAMP" "$(date -u '+%Y-%m-%d %H:%M UTC')" > "$DATA/checked"
}
if [ "${CHECK:-0}" = 1 ] || [ "$(head -1 "$DATA/checked" 2>/dev/null)" != "$CHECK_STAMP" ]; then
    check_outputs
fi
[ "$RUNS" -gt 0 ] || { echo "rechunk_bench: RUNS=0: data made and outputs checked, nothing timed"; exit 0; }
N_CASES=$(echo "$CASES" | wc -w)
VERIFIED="all $((N_CASES * 4)) outputs ($N_CASES cases x chunkctl .h5, chunkctl .zarr, h5py, dask) equal col_none.h5 element for element, in the chunks asked, with no filter or compressor (checked once, untimed, $(sed -n 2p "$DATA/checked"), with this binary)"

# ---------------------------------------------------------------- measuring
h_new_log "$FAILS"
"$PY" -c 'import h5py, zarr, dask.array' # warm the Python modules
h_rounds_start
for run in $(seq 1 "$RUNS"); do
    h_round "$run"
    for c in $CASES; do
        for tool in $TOOLS; do run_tool "$tool:$c" "$run" "$c" "$tool"; done
    done
done
clean_out
h_rounds_end

# ---------------------------------------------------------------- report
{
    h_meta_machine
    echo "versions	$("$PY" -c 'import sys, numpy, h5py, zarr, dask; print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), zarr {zarr.__version__}, dask {dask.__version__}")')"
    echo "runs	$RUNS"
    echo "disturbed	$DISTURBED"
    echo "max_redo	$MAX_REDO"
    h_meta_memstate "$PREFAULT MiB written and deleted just before each sample"
    echo "raw_bytes	$RAW_BYTES"
    echo "shape	$ROWS x $COLS float64"
    echo "chunk	$CHUNK"
    echo "cases	$CASES"
    echo "load	$LOAD_BEFORE -> $LOAD_AFTER"
    echo "elapsed	$ELAPSED"
    echo "verified	$VERIFIED"
    echo "work	$WORK"
    for f in col_none col_zstd row_none; do echo "stored:$f	$(stat -c %s "$DATA/$f.h5")"; done
} > "$LOG/meta.tsv"

"$PY" "$HERE/rechunk_bench_report.py" "$LOG/meta.tsv" "$SAMPLES" "$CMDS" "$REDONE" "$FAILS" "$RESULTS"
echo "rechunk_bench: wrote $RESULTS (raw samples: $SAMPLES)"
