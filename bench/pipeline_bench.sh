#!/bin/bash
# pipeline_bench.sh: `chunkctl run` on the issue's four pipeline exercises,
# next to NumPy (h5py load, then compute) and dask.array (threaded, 2
# workers) over the same HDF5 datasets.  Writes its section of
# bench/RESULTS.md (between <!-- pipeline_bench:begin --> and
# <!-- pipeline_bench:end -->; nothing else in the file is touched).
#
# The data (HDF5, uncompressed, made once by `chunkctl gen` with fixed seeds,
# under WORK/data; remade when the generating command changes or with --regen):
#   e1.h5:/x  5000 x 5000 float64, normal(9, 1), chunks 2500 x 2500, seed 1
#             (200 MB; exercises 1 and 3)
#   e2.h5:/x  2500 x 1000 x 100 int64, integers in [0, 100), chunks
#             400 x 250 x 100, seed 2 (2 GB)
#   e4.h5:/x  1e9 float32, normal(0, 1), chunks of 16777216 (2^24) elements,
#             seed 4 (4 GB; 2.5e8 values = 1 GB with --small-ex4)
#
# The exercises (each tool computes the same thing; chunkctl as one pipeline):
#   ex1   y = x + 1; 100-bin histogram of y[y < 10] over [-9, 11]
#         (chunkctl: add, less, mask, histogram -> OUT/ex1.h5:/hist)
#   ex2   x.mean(), x.sum(axis=0), x.std() of e2 (one pipeline, three
#         reductions -> OUT/ex2.h5; chunkctl under --memory 256M)
#   ex3a  e1 reshaped to (5000, 1000, 5), written uncompressed to OUT/*.h5
#   ex3b  e1 reshaped to (1000, 5000, 5), same (dask cannot: recorded as
#         "fails" with its error type, not timed)
#   ex4   100-bin histogram of e4 over [-4, 4] (chunkctl under --memory 256M;
#         NumPy, like chunkctl, counts with float32 edges, dask with float64)
#   NumPy: python3 pipeline_bench_peers.py numpy EX IN [OUT]: h5py loads the
#   whole array, then NumPy computes (and h5py writes, for ex3).  dask: the same
#   with `dask`: da.from_array(dset, chunks=dset.chunks), threaded scheduler,
#   num_workers=2.  See pipeline_bench_peers.py for the exact code.
#   Floors, in the same rounds: `cat IN` (read from the page cache),
#   `chunkctl verify --quiet IN` (read + decode only), for ex3 a buffered
#   200 MB dd write, and the Python start-up (import numpy, h5py / dask.array).
#
# Measurement (bench/harness.sh, as for copy_bench.sh): wall time from bash's $EPOCHREALTIME,
# peak RSS from `/usr/bin/time -f '%M'`; RUNS rounds, tools alternating within
# each round; before each sample, untimed: outputs removed + sync, free memory
# made guest-backed (MEMSTATE=hot: dd fills and frees a buffer of up to 4 GiB; see
# harness.sh prepare() for why this VM needs it), the input re-read into
# the page cache.  A sample during which other work used > DISTURBED of a core
# is redone (3 times at most).  Tables give median / min / max wall and the max
# peak RSS; "x vs NumPy" = NumPy's median / the row's median (> 1: faster).
# Once per exercise, outside the timing, chunkctl's outputs are checked
# against NumPy (pipeline_bench_peers.py check).  A chunkctl row that misses
# its target by more than 2x gets a `perf record -g` profile (top 10 symbols).
#
# Run (about 12 minutes on 2 cores with --runs 5, plus ~1 minute to make
# ~6.2 GB of data once; needs ~7 GB free under WORK and ~12 GiB of free RAM):
#   bash bench/pipeline_bench.sh [--runs N] [--keep] [--regen] [--small-ex4]
#                                [--only ex1,ex2,ex3,ex4] [--report-only]
#   --runs N      rounds (default 5; >= 5 for the figures in RESULTS.md)
#   --keep        keep the data (WORK/data) afterwards; by default the big
#                 inputs (e2.h5, e4.h5) are deleted at the end
#   --regen       remake the data even if it is there
#   --small-ex4   exercise 4 on 2.5e8 values (1 GB) instead of 1e9 (4 GB)
#   --only LIST   run only these exercises (the section then says so)
#   --report-only measure nothing: redo the profiles and the RESULTS.md section
#                 from WORK/log of the last run (same options as that run)
# Knobs (environment): WORK=/tmp/chunkctl-pbench, MEMORY=256M (chunkctl's
#   --memory for ex2, ex3, ex4), MEMORY1=$MEMORY (ex1's; before the mask was
#   folded into the histogram it needed 1G), MEMORY_WIDE=2G
#   (an extra chunkctl row for ex2 and ex4 with room for 2 workers, to show
#   what the 256M cap costs; "" leaves it out), MEMSTATE=hot|cold|none, DISTURBED=0.15,
#   PERF=1 (0: no profiles), CHUNKCTL=path, RESULTS=bench/RESULTS.md,
#   MAX_REDO=3, BASELINE=path/to/other/chunkctl (BASELINE_NAME="main at
#   70676ba"): every chunkctl sample is also taken with that binary in the
#   same round, and each chunkctl row gets a "(baseline)" row beside it (see
#   harness.sh).
# Needs: /usr/bin/python3 with numpy, h5py, dask; /usr/bin/time; perf (optional).
# Do not run other heavy jobs meanwhile: the machine has 2 cores.

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/harness.sh
. "$HERE/harness.sh"
H_NAME=pipeline_bench
WORK=${WORK:-/tmp/chunkctl-pbench}
RUNS=5
KEEP=0
REGEN=0
SMALL4=0
REPORT_ONLY=0
ONLY=ex1,ex2,ex3,ex4
while [ $# -gt 0 ]; do
    case $1 in
        --runs) RUNS=$2; shift 2 ;;
        --runs=*) RUNS=${1#*=}; shift ;;
        --keep) KEEP=1; shift ;;
        --regen) REGEN=1; shift ;;
        --small-ex4) SMALL4=1; shift ;;
        --report-only) REPORT_ONLY=1; shift ;;
        --only) ONLY=$2; shift 2 ;;
        --only=*) ONLY=${1#*=}; shift ;;
        -h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "pipeline_bench: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $RUNS in ''|*[!0-9]*|0) echo "pipeline_bench: --runs takes a positive integer" >&2; exit 2 ;; esac
MEMORY=${MEMORY:-256M}
MEMORY1=${MEMORY1:-$MEMORY}
MEMORY_WIDE=${MEMORY_WIDE:-2G}
PERF=${PERF:-1}
CHUNKCTL=${CHUNKCTL:-$REPO/build/cli/chunkctl}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
PY=/usr/bin/python3
PEERS=$HERE/pipeline_bench_peers.py
mem_of() { case $1 in ex1) echo "$MEMORY1" ;; *) echo "$MEMORY" ;; esac; }   # chunkctl's --memory

h_init
"$PY" -c 'import numpy, h5py, dask.array' || die "needs numpy, h5py and dask for $PY"
[ "$PERF" = 1 ] && ! command -v perf > /dev/null && PERF=0
PIPES=$WORK/pipelines
mkdir -p "$PIPES"

# (--report-only profiles the snapshot of the measuring run.)
h_snapshot "$CHUNKCTL" "$REPO"
CHUNKCTL=$H_CK

# ---------------------------------------------------------------- the data
N4=1000000000
[ "$SMALL4" = 1 ] && N4=250000000
GEN1="--shape 5000,5000 --chunks 2500,2500 --dist normal --mean 9 --std 1 --seed 1 --dtype float64 --compress none"
GEN2="--shape 2500,1000,100 --chunks 400,250,100 --dist integers --low 0 --high 100 --seed 2 --dtype int64 --compress none"
GEN4="--shape $N4 --chunks 16777216 --dist normal --mean 0 --std 1 --seed 4 --dtype float32 --compress none"
need_bytes=0
gen() {    # gen NAME ARGS: make DATA/NAME.h5:/x unless it is there, made by ARGS
    local name=$1 args=$2
    if [ "$REGEN" = 1 ] || [ "$(cat "$DATA/$name.stamp" 2>/dev/null)" != "$args" ] || [ ! -f "$DATA/$name.h5" ]; then
        rm -f "$DATA/$name.h5" "$DATA/$name.stamp"
        echo "pipeline_bench: making $DATA/$name.h5 (chunkctl gen $args)"
        # shellcheck disable=SC2086  # args is a list of words
        "$CHUNKCTL" gen --quiet $args "$DATA/$name.h5:/x"
        echo "$args" > "$DATA/$name.stamp"
    fi
}
# Disk: the inputs still to make, plus the outputs (ex3: 2 x 200 MB at most
# at a time), with 1 GB to spare.
for n in e1:200000000 e2:2000000000 e4:$((N4 * 4)); do
    [ -f "$DATA/${n%%:*}.h5" ] && [ "$REGEN" = 0 ] || need_bytes=$((need_bytes + ${n#*:}))
done
avail=$(df -B1 --output=avail "$WORK" | tail -1)
if [ $((need_bytes + 1500000000)) -gt "$avail" ]; then
    echo "pipeline_bench: $avail bytes free under $WORK, need about $((need_bytes + 1500000000)) (try --small-ex4)" >&2
    exit 1
fi
{ want ex1 || want ex3; } && gen e1 "$GEN1"
want ex2 && gen e2 "$GEN2"
want ex4 && gen e4 "$GEN4"

# ---------------------------------------------------------------- pipelines
H4_LOW=-4 H4_HIGH=4
export HIST4_LOW=$H4_LOW HIST4_HIGH=$H4_HIGH
cat > "$PIPES/ex1.json" <<EOF
{
  "inputs":  { "x": "$DATA/e1.h5:/x" },
  "steps": [
    { "name": "y",    "op": "add",       "args": ["x", 1.0] },
    { "name": "lt",   "op": "less",      "args": ["y", 10.0] },
    { "name": "low",  "op": "mask",      "args": ["y", "lt"] },
    { "name": "hist", "op": "histogram", "args": ["low"], "bins": 100, "range": [-9, 11] }
  ],
  "outputs": { "hist": "$OUT/ex1.h5:/hist" }
}
EOF
cat > "$PIPES/ex2.json" <<EOF
{
  "inputs":  { "x": "$DATA/e2.h5:/x" },
  "steps": [
    { "name": "mean", "op": "mean", "args": ["x"] },
    { "name": "sum0", "op": "sum",  "args": ["x"], "axis": 0 },
    { "name": "std",  "op": "std",  "args": ["x"] }
  ],
  "outputs": { "mean": "$OUT/ex2.h5:/mean", "sum0": "$OUT/ex2.h5:/sum0", "std": "$OUT/ex2.h5:/std" }
}
EOF
for v in a:5000,1000,5 b:1000,5000,5; do
    cat > "$PIPES/ex3${v%%:*}.json" <<EOF
{
  "inputs":  { "x": "$DATA/e1.h5:/x" },
  "steps": [
    { "name": "y", "op": "reshape", "args": ["x"], "shape": [${v#*:}] }
  ],
  "outputs": { "y": "$OUT/ex3${v%%:*}.h5:/y" }
}
EOF
done
cat > "$PIPES/ex4.json" <<EOF
{
  "inputs":  { "x": "$DATA/e4.h5:/x" },
  "steps": [
    { "name": "hist", "op": "histogram", "args": ["x"], "bins": 100, "range": [$H4_LOW, $H4_HIGH] }
  ],
  "outputs": { "hist": "$OUT/ex4.h5:/hist" }
}
EOF
for p in "$PIPES"/*.json; do
    n=$(basename "$p" .json)
    want "${n%[ab]}" || { rm -f "$p"; continue; }
    "$CHUNKCTL" plan --memory "$(mem_of "$(basename "$p" .json)")" "$p" > "$LOG/plan.$(basename "$p" .json).txt" 2>&1 ||
        { echo "pipeline_bench: chunkctl plan $p failed:" >&2; cat "$LOG/plan.$(basename "$p" .json).txt" >&2; exit 1; }
done

# ---------------------------------------------------------------- measuring
CHECKS=$LOG/checks.txt        # one line per correctness check
[ "$REPORT_ONLY" = 1 ] || h_new_log "$CHECKS"

# Free memory made guest-backed before each sample, per exercise (MiB): about
# what the hungriest tool (NumPy) touches.
PF1=512 PF2=4096 PF3=512 PF4=$(( N4 * 4 / 1048576 + 256 ))
[ "$PF4" -gt 4096 ] && PF4=4096

if [ "$REPORT_ONLY" = 0 ]; then
echo "pipeline_bench: checking chunkctl's outputs against NumPy (untimed)"
check() {   # check EX IN OUTPUT_SPEC...: run chunkctl's pipeline once, compare
    local ex=$1 in=$2
    shift 2
    clean_out
    "$CHUNKCTL" run --quiet --force --memory "$(mem_of "$ex")" "$PIPES/$ex.json"
    if ! "$PY" "$PEERS" check "$ex" "$in" "$@" >> "$CHECKS"; then
        echo "pipeline_bench: $(tail -1 "$CHECKS")" >&2
    fi
    tail -1 "$CHECKS"
}
want ex1 && check ex1 "$DATA/e1.h5" "$OUT/ex1.h5:/hist"
want ex2 && check ex2 "$DATA/e2.h5" "$OUT/ex2.h5:/mean" "$OUT/ex2.h5:/sum0" "$OUT/ex2.h5:/std"
want ex3 && check ex3a "$DATA/e1.h5" "$OUT/ex3a.h5:/y"
want ex3 && check ex3b "$DATA/e1.h5" "$OUT/ex3b.h5:/y"
want ex4 && check ex4 "$DATA/e4.h5" "$OUT/ex4.h5:/hist"
NOTES=""
if want ex1 && [ "$MEMORY1" != "$MEMORY" ]; then
    clean_out
    rc=0
    "$CHUNKCTL" run --quiet --force --memory "$MEMORY" "$PIPES/ex1.json" > /dev/null 2> "$LOG/ex1.mem.err" || rc=$?
    if [ "$rc" = 0 ]; then
        NOTES="ex1 also runs under --memory $MEMORY (not timed)."
    else
        NOTES="ex1 under --memory $MEMORY: \`$(tail -1 "$LOG/ex1.mem.err")\` (exit $rc), hence --memory $MEMORY1 for ex1."
    fi
fi
for ex in ex1 ex2 ex3a ex3b ex4; do
    [ -s "$LOG/plan.$ex.txt" ] || continue
    est=$(grep -o 'estimated peak memory: [^(]*([0-9]* workers\{0,1\})' "$LOG/plan.$ex.txt" || true)
    [ -n "$est" ] && NOTES="$NOTES || chunkctl plan --memory $(mem_of "$ex") on $ex: $est."
done
DASK3B="not run"
if want ex3; then
    clean_out
    DASK3B=$("$PY" "$PEERS" dask-fails ex3b "$DATA/e1.h5" "$OUT/dask3b.h5" 2>&1 | tail -1)
    echo "pipeline_bench: dask on ex3b: $DASK3B"
fi
clean_out

echo "pipeline_bench: warming the page cache"
for n in e1 e2 e4; do [ -f "$DATA/$n.h5" ] && cat "$DATA/$n.h5" > /dev/null; done
"$PY" -c 'import numpy, h5py, dask.array'

h_rounds_start
for run in $(seq 1 "$RUNS"); do
    h_round "$run"
    if want ex1; then
        i=$DATA/e1.h5
        measure ck:ex1      "$run" "$i" $PF1 "$CHUNKCTL" run --quiet --force --memory "$MEMORY1" "$PIPES/ex1.json"
        measure numpy:ex1   "$run" "$i" $PF1 "$PY" "$PEERS" numpy ex1 "$i"
        measure dask:ex1    "$run" "$i" $PF1 "$PY" "$PEERS" dask ex1 "$i"
        measure verify:e1   "$run" "$i" $PF1 "$CHUNKCTL" verify --quiet --memory "$MEMORY" "$i:/x"
        measure cat:e1      "$run" "$i" $PF1 cat "$i"
    fi
    if want ex2; then
        i=$DATA/e2.h5
        measure ck:ex2      "$run" "$i" $PF2 "$CHUNKCTL" run --quiet --force --memory "$MEMORY" "$PIPES/ex2.json"
        [ -n "$MEMORY_WIDE" ] &&
            measure ckwide:ex2 "$run" "$i" $PF2 "$CHUNKCTL" run --quiet --force --memory "$MEMORY_WIDE" "$PIPES/ex2.json"
        measure numpy:ex2   "$run" "$i" $PF2 "$PY" "$PEERS" numpy ex2 "$i"
        measure dask:ex2    "$run" "$i" $PF2 "$PY" "$PEERS" dask ex2 "$i"
        measure verify:e2   "$run" "$i" $PF2 "$CHUNKCTL" verify --quiet --memory "$MEMORY" "$i:/x"
        measure cat:e2      "$run" "$i" $PF2 cat "$i"
    fi
    if want ex3; then
        i=$DATA/e1.h5
        measure ck:ex3a     "$run" "$i" $PF3 "$CHUNKCTL" run --quiet --force --memory "$MEMORY" "$PIPES/ex3a.json"
        measure numpy:ex3a  "$run" "$i" $PF3 "$PY" "$PEERS" numpy ex3a "$i" "$OUT/np3a.h5"
        measure dask:ex3a   "$run" "$i" $PF3 "$PY" "$PEERS" dask ex3a "$i" "$OUT/dask3a.h5"
        measure ck:ex3b     "$run" "$i" $PF3 "$CHUNKCTL" run --quiet --force --memory "$MEMORY" "$PIPES/ex3b.json"
        measure numpy:ex3b  "$run" "$i" $PF3 "$PY" "$PEERS" numpy ex3b "$i" "$OUT/np3b.h5"
        measure write:e3    "$run" - $PF3 dd if=/dev/zero of="$OUT/dd.bin" bs=8M count=25 status=none
    fi
    if want ex4; then
        i=$DATA/e4.h5
        measure ck:ex4      "$run" "$i" $PF4 "$CHUNKCTL" run --quiet --force --memory "$MEMORY" "$PIPES/ex4.json"
        [ -n "$MEMORY_WIDE" ] &&
            measure ckwide:ex4 "$run" "$i" $PF4 "$CHUNKCTL" run --quiet --force --memory "$MEMORY_WIDE" "$PIPES/ex4.json"
        measure numpy:ex4   "$run" "$i" $PF4 "$PY" "$PEERS" numpy ex4 "$i"
        measure dask:ex4    "$run" "$i" $PF4 "$PY" "$PEERS" dask ex4 "$i"
        measure verify:e4   "$run" "$i" $PF4 "$CHUNKCTL" verify --quiet --memory "$MEMORY" "$i:/x"
        measure cat:e4      "$run" "$i" $PF4 cat "$i"
    fi
    measure import:numpy    "$run" - $PF1 "$PY" -c 'import numpy, h5py'
    measure import:dask     "$run" - $PF1 "$PY" -c 'import numpy, h5py, dask.array'
done
clean_out
h_rounds_end
h_save_run DASK3B NOTES
else    # --report-only: what the measuring run recorded
    h_load_run
fi

# ---------------------------------------------------------------- profiles
# A chunkctl row more than 2x over its target gets a perf profile.
: > "$LOG/perf.txt"
if [ "$PERF" = 1 ]; then
    for t in ex1:0.15 ex2:0.4 ex3a:0.3 ex3b:0.3 ex4:1.0; do
        ex=${t%%:*} tgt=${t#*:}
        med=$(median_of "ck:$ex")
        if [ -z "$med" ] || ! h_over2 "$med" "$tgt"; then continue; fi
        case $ex in ex1|ex3*) i=$DATA/e1.h5 ;; *) i=$DATA/${ex/ex/e}.h5 ;; esac
        h_profile "$ex" "$ex" "$med" "$tgt" "$i" \
            "$CHUNKCTL" run --quiet --force --memory "$(mem_of "$ex")" "$PIPES/$ex.json"
    done
    clean_out
fi

# ---------------------------------------------------------------- report
{
    h_meta_machine
    echo "versions	$("$PY" -c 'import sys, numpy, h5py, dask; print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), dask {dask.__version__}")')"
    echo "runs	$RUNS"
    echo "memory	$MEMORY"
    echo "memory1	$MEMORY1"
    echo "memory_wide	$MEMORY_WIDE"
    echo "notes	$NOTES"
    echo "disturbed	$DISTURBED"
    echo "max_redo	$MAX_REDO"
    h_meta_memstate "before each sample $PF1 MiB (ex1, ex3), $PF2 MiB (ex2), $PF4 MiB (ex4) touched and freed by dd (a memory buffer, no file)"
    echo "only	$ONLY"
    echo "n4	$N4"
    echo "gen1	$GEN1"
    echo "gen2	$GEN2"
    echo "gen4	$GEN4"
    echo "hist4	$H4_LOW $H4_HIGH"
    echo "dask3b	$DASK3B"
    echo "load	$LOAD_BEFORE -> $LOAD_AFTER"
    echo "elapsed	$ELAPSED"
    echo "work	$WORK"
    for n in e1 e2 e4; do [ -f "$DATA/$n.h5" ] && echo "stored:$n	$(stat -c %s "$DATA/$n.h5")"; done
    true
} > "$LOG/meta.tsv"

"$PY" "$HERE/pipeline_bench_report.py" "$LOG" "$PIPES" "$RESULTS"
echo "pipeline_bench: wrote $RESULTS (raw samples: $SAMPLES)"

if [ "$KEEP" = 0 ]; then
    rm -f "$DATA/e2.h5" "$DATA/e2.stamp" "$DATA/e4.h5" "$DATA/e4.stamp"
    rm -rf "$OUT" "$LOG"/perf.*.data
    echo "pipeline_bench: deleted the big inputs (e2.h5, e4.h5; --keep keeps them)"
fi
