#!/bin/bash
# mpi_bench.sh: distribution efficiency of chunkctl under MPI (issue 16,
# Benchmark): the data-bound rows, each as 1 rank x 1 thread, 2 ranks x 1
# thread and 1 rank x 2 threads (all under mpirun), next to dask.distributed
# (a LocalCluster of 2 worker processes x 1 thread) on the same data.  Writes
# its section of bench/RESULTS.md (between <!-- mpi_bench:begin --> and
# <!-- mpi_bench:end -->; nothing else in the file is touched).
#
# The data (HDF5, uncompressed: --compress none, or COMPRESS=SPEC, e.g.
# gzip:4, h5py's compression="gzip"; float64; made once by `chunkctl gen`
# with fixed seeds under WORK/data; remade when the generating command
# changes or with --regen).  SIZE=full (the issue's sizes):
#   A.h5:/x   262144 x 1024 normal(0, 1), chunks 1024 x 1024 (8 MiB; 2 GiB)
#   H.h5:/x   2^29 normal(0, 1), chunks 2^20 (8 MiB; 4 GiB)
#   D.h5:/x   2000000 x 100 normal(0, 1), chunks 10000 x 100 (8 MB; 1.6 GB)
#   E.h5:/X   1000000 x 100 normal(0, 1), chunks 10000 x 100 (0.8 GB), and
#   Ey.h5:/y  y in {0, 1} from a logistic model: y = (X w + L > 0), w normal
#             (0, 0.3) (a random step), L = log(u) - log1p(-u) logistic noise
#             from uniform u (a random step); made by a `chunkctl run` pipeline
# SIZE=half halves every row count; SIZE=tiny (a smoke test, ~1/256) makes
# small arrays and prints the section to stdout instead of RESULTS.md.
#
# The rows (the same computation in every tool):
#   a  sum over axis 0 of A          chunkctl reduce sum A.h5:/x --axis 0 -o
#   b  mean and std of all of A      chunkctl run --json (one pipeline, both
#                                    printed)
#   c  100-bin histogram of H over [-4, 4]   chunkctl histogram -o
#   d  exact SVD of D, U not written chunkctl svd --no-u -o
#   e  logistic regression of y on E, Newton   chunkctl glm-fit --solver newton
#                                    --tol GLM_TOL (default 1e-12, not 1e-8:
#                                    at 1e-8 chunkctl and dask stop ~5e-7 apart)
# chunkctl runs as `mpirun -q --allow-run-as-root --oversubscribe --bind-to
# none -n RANKS chunkctl ... --threads T` for (RANKS, T) = (1, 1), (2, 1),
# (1, 2), default --memory (a quarter of RAM, per rank).  Today a, b, c are
# divided over the ranks (each reads a contiguous range of chunks, partial
# results meet along a fixed tree), and so are d and e (each rank factors or
# sums a contiguous range of fixed row tasks; pipelines/rowtasks.h).
# dask: python3 mpi_bench_peers.py dask ROW DATA: distributed.LocalCluster(
# n_workers=2, threads_per_worker=1) started inside the timed process,
# dask.array over the HDF5 datasets (read with h5py by the workers),
# dask.array's own sum / mean / std / histogram / linalg.svd (tsqr), and for
# e Newton's method written with dask.array (gradient and Hessian per
# iteration, X and y persisted in the workers).  The peer logs its cluster
# start-up and its compute alone (see mpi_bench_peers.py).
#
# Measurement (bench/harness.sh): wall time of the whole process (mpirun and
# all ranks; python3 with its cluster start and shut-down), RUNS rounds, the
# configurations alternating within each round; before each sample, untimed:
# outputs removed + sync, free memory made guest-backed (MEMSTATE=hot), the
# input re-read into the page cache.  A sample during which other work used
# more than DISTURBED of a core is redone (MAX_REDO times).  Peak RSS: each
# rank runs under its own `/usr/bin/time -f %M` (a wrapper between mpirun and
# chunkctl), so the report gives the sum of the ranks' peaks and the largest
# rank's; dask's is the peak of the summed RSS of its process tree (the
# client process with the scheduler, 2 nannies, 2 workers), sampled every
# 0.1 s with psutil, and the largest worker's own peak (getrusage).
# Once per row, untimed, the outputs are checked: chunkctl under 2 ranks and
# under 2 threads against 1 rank x 1 thread (bytes), dask against chunkctl
# (1e-9 relative; histogram counts exactly).
#
# Run (SIZE=full: ~8.4 GB of data made once, ~9 GB free disk, ~14 GiB free
# RAM; about 10 minutes a round on 2 cores, plus ~2 minutes for the data):
#   bash bench/mpi_bench.sh [--runs N] [--only a,b,c,d,e] [--keep] [--regen]
#                           [--report-only]
#   --runs N      rounds (default 3)
#   --only LIST   run only these rows (the section then says so)
#   --keep        keep the data afterwards (default: deleted at the end)
#   --regen       remake the data even if it is there
#   --gen-only    make the data (kept) and stop
#   --report-only measure nothing: redo the RESULTS.md section from the last
#                 run's WORK/log
# Knobs (environment): SIZE=full|half|tiny, COMPRESS=none|SPEC (chunkctl
#   gen's --compress; a section of its own in RESULTS.md, and WORK gets
#   -SPEC with ':' as '-'), WORK=/tmp/chunkctl-mpibench
#   (SIZE=tiny: /tmp/chunkctl-mpibench-tiny), CHUNKCTL=build-lmpi/cli/chunkctl
#   (a build with MPI: libchunkctl-mpi.so beside it; copied with it to
#   WORK/bin), MPIRUN=mpirun, MEMSTATE=hot|cold|none, DISTURBED=0.15,
#   MAX_REDO=3, RESULTS=bench/RESULTS.md, GLM_TOL=1e-12, STOP_BY=time (a
#   `date -d` string: after MIN_RUNS=3 rounds, no round is begun that would
#   end after it, going by the last round's length; RUNS then says how many
#   ran).
# Needs: Open MPI's mpirun, /usr/bin/python3 with numpy, h5py, dask,
# distributed (Debian: python3-distributed) and psutil; /usr/bin/time; bash 5.
# Do not run other heavy jobs meanwhile: the machine has 2 cores.

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/harness.sh
. "$HERE/harness.sh"
H_NAME=mpi_bench
RUNS=3
KEEP=0
REGEN=0
REPORT_ONLY=0
GEN_ONLY=0
ALL_ROWS=a,b,c,d,e
ONLY=$ALL_ROWS
while [ $# -gt 0 ]; do
    case $1 in
        --runs) RUNS=$2; shift 2 ;;
        --runs=*) RUNS=${1#*=}; shift ;;
        --keep) KEEP=1; shift ;;
        --regen) REGEN=1; shift ;;
        --gen-only) GEN_ONLY=1; shift ;;
        --report-only) REPORT_ONLY=1; shift ;;
        --only) ONLY=$2; shift 2 ;;
        --only=*) ONLY=${1#*=}; shift ;;
        -h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "mpi_bench: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $RUNS in ''|*[!0-9]*|0) echo "mpi_bench: --runs takes a positive integer" >&2; exit 2 ;; esac
SIZE=${SIZE:-full}
case $SIZE in full|half|tiny) ;; *) echo "mpi_bench: SIZE is full, half or tiny" >&2; exit 2 ;; esac
COMPRESS=${COMPRESS:-none}
case $COMPRESS in none) CTAG= ;; *[!a-z0-9:]*) echo "mpi_bench: COMPRESS is none or a --compress spec such as gzip:4" >&2; exit 2 ;; *) CTAG=-${COMPRESS//:/-} ;; esac
if [ "$SIZE" = tiny ]; then
    WORK=${WORK:-/tmp/chunkctl-mpibench-tiny$CTAG}
    RESULTS=${RESULTS:--}
    MAX_REDO=${MAX_REDO:-0}
else
    WORK=${WORK:-/tmp/chunkctl-mpibench$CTAG}
fi
CHUNKCTL=${CHUNKCTL:-$REPO/build-lmpi/cli/chunkctl}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
MPIRUN=${MPIRUN:-mpirun}
PY=/usr/bin/python3
PEERS=$HERE/mpi_bench_peers.py
PHASE_VAR=MPIB_PHASE        # the rank wrapper and the dask peer log there
CONFIGS="r1t1 r2t1 r1t2"    # ranks x threads, chunkctl

h_init
"$PY" -c 'import numpy, h5py, dask.array, distributed, psutil' ||
    die "needs numpy, h5py, dask, distributed (Debian: python3-distributed) and psutil for $PY"
command -v "$MPIRUN" > /dev/null || die "no $MPIRUN (Debian: openmpi-bin)"
PIPES=$WORK/pipelines CHK=$WORK/check
mkdir -p "$PIPES"

h_snapshot "$CHUNKCTL" "$REPO"
if [ "$REPORT_ONLY" = 0 ]; then
    mod=$(dirname "$CHUNKCTL")/libchunkctl-mpi.so
    [ -f "$mod" ] || die "$mod missing: CHUNKCTL must be a build with MPI (-DCHUNKCTL_MPI=ON)"
    cp "$mod" "$BIN/"
    BUILD_INFO="$BUILD_INFO; libchunkctl-mpi.so sha256 $(sha256sum "$mod" | cut -c1-12)"
fi
CK=$H_CK

# The rank wrapper: mpirun starts rankwrap.sh DIR chunkctl ..., which runs
# chunkctl under /usr/bin/time (peak RSS and CPU of that rank into
# DIR/rank.R).  mpiwrap.sh RANKS CMD... runs mpirun so and writes the ranks'
# sum and max to $MPIB_PHASE (harness.sh keeps its last line per sample).
cat > "$BIN/rankwrap.sh" <<'EOF'
#!/bin/sh
d=$1
shift
exec /usr/bin/time -f '%M %U %S' -o "$d/rank.${OMPI_COMM_WORLD_RANK:-0}" "$@"
EOF
cat > "$BIN/mpiwrap.sh" <<EOF
#!/bin/bash
n=\$1
shift
d=\$(mktemp -d "$LOG/ranks.XXXXXX")
rc=0
"$MPIRUN" -q --allow-run-as-root --oversubscribe --bind-to none -n "\$n" "$BIN/rankwrap.sh" "\$d" "\$@" || rc=\$?
if [ -n "\${MPIB_PHASE:-}" ]; then
    for f in "\$d"/rank.*; do tail -1 "\$f"; done |
        awk -v n="\$n" '{ s += \$1; if (\$1 > m) m = \$1; k++ }
            END { printf "ranks=%d rss_sum_kib=%d rss_max_kib=%d ranks_seen=%d\n", n, s, m, k }' >> "\$MPIB_PHASE"
fi
rm -rf "\$d"
exit \$rc
EOF
chmod +x "$BIN/rankwrap.sh" "$BIN/mpiwrap.sh"

# ---------------------------------------------------------------- the data
case $SIZE in
    full) RA=262144 CA=1024 NH=536870912 CH=1048576 RD=2000000 CD=10000 RE=1000000 CE=10000 ;;
    half) RA=131072 CA=1024 NH=268435456 CH=1048576 RD=1000000 CD=10000 RE=500000 CE=10000 ;;
    tiny) RA=1024 CA=64 NH=2097152 CH=131072 RD=20000 CD=1000 RE=8000 CE=1000 ;;
esac
GENA="--shape $RA,1024 --chunks $CA,1024 --dist normal --mean 0 --std 1 --seed 1 --dtype float64 --compress $COMPRESS"
GENH="--shape $NH --chunks $CH --dist normal --mean 0 --std 1 --seed 3 --dtype float64 --compress $COMPRESS"
GEND="--shape $RD,100 --chunks $CD,100 --dist normal --mean 0 --std 1 --seed 4 --dtype float64 --compress $COMPRESS"
GENE="--shape $RE,100 --chunks $CE,100 --dist normal --mean 0 --std 1 --seed 5 --dtype float64 --compress $COMPRESS"
HLO=-4 HHI=4
export GLM_TOL=${GLM_TOL:-1e-12}   # row e: chunkctl glm-fit --tol, and the dask peer's stop
stamp_ok() { [ "$REGEN" = 0 ] && [ -f "$DATA/$1" ] && [ "$(cat "$DATA/$1.stamp" 2>/dev/null)" = "$2" ]; }
gen() {    # gen NAME ARGS: make DATA/NAME.h5:/x unless it is there, made by ARGS
    local name=$1 args=$2
    stamp_ok "$name.h5" "$args" && return 0
    rm -f "$DATA/$name.h5" "$DATA/$name.h5.stamp"
    echo "mpi_bench: making $DATA/$name.h5 (chunkctl gen $args)"
    # shellcheck disable=SC2086  # args is a list of words
    "$CK" gen --quiet $args "$DATA/$name.h5:/x"
    echo "$args" > "$DATA/$name.h5.stamp"
}
cat > "$PIPES/ey.json" <<EOF
{
  "inputs": { "X": "$DATA/E.h5:/X" },
  "steps": [
    { "name": "w",    "op": "random", "shape": [100, 1], "chunks": [100, 1], "dist": "normal", "mean": 0, "std": 0.3, "seed": 51 },
    { "name": "eta2", "op": "matmul", "args": ["X", "w"] },
    { "name": "eta",  "op": "reshape", "args": ["eta2"], "shape": [-1] },
    { "name": "u",    "op": "random", "shape": [$RE], "chunks": [$CE], "dist": "uniform", "low": 0, "high": 1, "seed": 52 },
    { "name": "lu",   "op": "log", "args": ["u"] },
    { "name": "nu",   "op": "negative", "args": ["u"] },
    { "name": "l1",   "op": "log1p", "args": ["nu"] },
    { "name": "L",    "op": "subtract", "args": ["lu", "l1"] },
    { "name": "z",    "op": "add", "args": ["eta", "L"] },
    { "name": "b",    "op": "greater", "args": ["z", 0.0] },
    { "name": "y",    "op": "astype", "args": ["b"], "dtype": "float64" }
  ],
  "outputs": { "y": "$DATA/Ey.h5:/y" }
}
EOF
gen_e() {
    local args
    args="$GENE | $(md5sum < "$PIPES/ey.json" | cut -c1-12)"
    stamp_ok E.h5 "$args" && [ -f "$DATA/Ey.h5" ] && return 0
    rm -f "$DATA/E.h5" "$DATA/E.h5.stamp" "$DATA/Ey.h5"
    echo "mpi_bench: making $DATA/E.h5 (chunkctl gen $GENE) and Ey.h5 (chunkctl run ey.json)"
    # shellcheck disable=SC2086  # a list of words
    "$CK" gen --quiet $GENE "$DATA/E.h5:/X"
    "$CK" run --quiet --force "$PIPES/ey.json"
    echo "$args" > "$DATA/E.h5.stamp"
}
if [ "$REPORT_ONLY" = 0 ]; then
    need=0
    { want a || want b; } && need=$((need + RA * 1024 * 8))
    want c && need=$((need + NH * 8))
    want d && need=$((need + RD * 800))
    want e && need=$((need + RE * 808))
    avail=$(df -B1 --output=avail "$WORK" | tail -1)
    [ $((need + 1000000000)) -le "$avail" ] || die "$avail bytes free under $WORK, need about $((need + 1000000000)) (try SIZE=half)"
    { want a || want b; } && gen A "$GENA"
    want c && gen H "$GENH"
    want d && gen D "$GEND"
    want e && gen_e
    if [ "$GEN_ONLY" = 1 ]; then echo "mpi_bench: data made under $DATA"; exit 0; fi
fi

cat > "$PIPES/b.json" <<EOF
{
  "inputs": { "x": "$DATA/A.h5:/x" },
  "steps": [
    { "name": "mean", "op": "mean", "args": ["x"] },
    { "name": "std",  "op": "std",  "args": ["x"] }
  ],
  "print": ["mean", "std"]
}
EOF

# ck_cmd ROW OUTDIR: chunkctl's command for ROW (without mpirun and
# --threads), writing under OUTDIR, in CMD.
ck_cmd() {
    case $1 in
        a) CMD=("$CK" reduce sum "$DATA/A.h5:/x" --axis 0 -o "$2/a.h5:/s" --force --quiet) ;;
        b) CMD=("$CK" run --json --quiet --force "$PIPES/b.json") ;;
        c) CMD=("$CK" histogram "$DATA/H.h5:/x" --bins 100 --range "$HLO,$HHI" -o "$2/c.h5:/h" --force --quiet) ;;
        d) CMD=("$CK" svd "$DATA/D.h5:/x" --no-u -o "$2/d.h5" --force --quiet) ;;
        e) CMD=("$CK" glm-fit "$DATA/E.h5:/X" "$DATA/Ey.h5:/y" --family logistic --solver newton --tol "$GLM_TOL" --quiet) ;;
    esac
}
input_of() { case $1 in a|b) echo "$DATA/A.h5" ;; c) echo "$DATA/H.h5" ;; d) echo "$DATA/D.h5" ;; e) echo "$DATA/E.h5 $DATA/Ey.h5" ;; esac; }
# MiB of free memory made guest-backed before each sample: about what dask's
# workers touch (e: X and y persisted, plus a copy per Newton step).
pf_of() {
    case $SIZE in tiny) echo 64; return ;; esac
    case $1 in e) echo 2048 ;; *) echo 1024 ;; esac
}

# ---------------------------------------------------------------- measuring
CHECKS=$LOG/checks.txt
if [ "$REPORT_ONLY" = 0 ]; then
h_new_log "$CHECKS" "$PHASES" "$LOG/plans.txt" "$LOG/uptime.txt"
rm -f "$FAILS"

# The split each row gets under 2 ranks (chunkctl plan --ranks 2), untimed.
# a and c as pipelines, for plan only (the timed commands are the one-step
# forms of the same steps)
cat > "$PIPES/a.plan.json" <<EOF
{ "inputs": { "x": "$DATA/A.h5:/x" },
  "steps": [ { "name": "s", "op": "sum", "args": ["x"], "axis": 0 } ],
  "outputs": { "s": "$OUT/a.h5:/s" } }
EOF
cat > "$PIPES/c.plan.json" <<EOF
{ "inputs": { "x": "$DATA/H.h5:/x" },
  "steps": [ { "name": "h", "op": "histogram", "args": ["x"], "bins": 100, "range": [$HLO, $HHI] } ],
  "outputs": { "h": "$OUT/c.h5:/h" } }
EOF
for p in a.plan b c.plan; do
    want "${p%.plan}" || continue
    echo "## ${p%.plan}: chunkctl plan --ranks 2 $p.json"
    "$CK" plan --ranks 2 "$PIPES/$p.json" 2>&1 | grep -E '^(mpi|fold|communication|each fold)' || true
done >> "$LOG/plans.txt"

echo "mpi_bench: checking outputs (untimed)"
rm -rf "$CHK" && mkdir -p "$CHK"
for row in a b c d e; do
    want $row || continue
    for c in $CONFIGS; do
        r=${c#r} r=${r%t*} t=${c#*t}
        mkdir -p "$CHK/$c"
        ck_cmd $row "$CHK/$c"
        "$BIN/mpiwrap.sh" "$r" "${CMD[@]}" --threads "$t" > "$CHK/$c/$row.stdout" 2> "$CHK/$c/$row.stderr" ||
            echo "mpi_bench: check run $row $c failed: $(tail -1 "$CHK/$c/$row.stderr")" >&2
    done
    "$PY" "$PEERS" dask "$row" "$DATA" "$CHK/dask.$row.npz" > /dev/null 2> "$CHK/dask.$row.stderr" ||
        echo "mpi_bench: dask $row failed: $(tail -1 "$CHK/dask.$row.stderr")" >&2
    "$PY" "$PEERS" check "$row" "$DATA" "$CHK" >> "$CHECKS" || true
    tail -1 "$CHECKS"
done

# the floors' input: 1000 doubles, so that their job is MPI's start alone
"$CK" gen --quiet --force --shape 1000 --chunks 100 "$DATA/floor.zarr"
echo "mpi_bench: warming the page cache"
for f in "$DATA"/*.h5; do cat "$f" > /dev/null; done
"$PY" -c 'import numpy, h5py, dask.array, distributed'

ON_FAIL=record
h_rounds_start
UPTIME_BEFORE=$(uptime)
STOP_AT=""
[ -z "${STOP_BY:-}" ] || STOP_AT=$(date -d "$STOP_BY" +%s) || die "STOP_BY=$STOP_BY: not a date"
for run in $(seq 1 "$RUNS"); do
    if [ -n "$STOP_AT" ] && [ "$run" -gt "${MIN_RUNS:-3}" ] &&
        [ $(( $(date +%s) + ROUND_S )) -gt "$STOP_AT" ]; then
        echo "mpi_bench: another round (~$ROUND_S s) would end after STOP_BY=$STOP_BY: stopping at $((run - 1)) rounds"
        RUNS=$((run - 1))
        break
    fi
    ROUND_T0=$(date +%s)
    h_round "$run"
    echo "round $run: $(uptime)" >> "$LOG/uptime.txt"
    for row in a b c d e; do
        want $row || continue
        in=$(input_of $row) pf=$(pf_of $row)
        # the configurations in a rotating order, so none always runs first
        order=("r1t1" "r2t1" "r1t2" "dask")
        k=$(( (run - 1) % 4 ))
        for c in "${order[@]:k}" "${order[@]:0:k}"; do
            if [ "$c" = dask ]; then
                # shellcheck disable=SC2086  # in: the input files
                measure "dask:$row" "$run" "${in%% *}" "$pf" "$PY" "$PEERS" dask "$row" "$DATA"
            else
                r=${c#r} r=${r%t*} t=${c#*t}
                ck_cmd $row "$OUT"
                measure "$c:$row" "$run" "${in%% *}" "$pf" "$BIN/mpiwrap.sh" "$r" "${CMD[@]}" --threads "$t"
            fi
        done
    done
    # a job that starts MPI (--version does not) with next to no work:
    # the launcher and MPI_Init, the serial part of every row
    measure floor:mpirun1 "$run" - 0 "$BIN/mpiwrap.sh" 1 "$CK" reduce sum --quiet "$DATA/floor.zarr"
    measure floor:mpirun2 "$run" - 0 "$BIN/mpiwrap.sh" 2 "$CK" reduce sum --quiet "$DATA/floor.zarr"
    measure floor:dask "$run" - 0 "$PY" "$PEERS" dask none "$DATA"
    ROUND_S=$(( $(date +%s) - ROUND_T0 ))
done
clean_out
UPTIME_AFTER=$(uptime)
h_rounds_end
h_save_run UPTIME_BEFORE UPTIME_AFTER RUNS
else
    h_load_run
fi

# ---------------------------------------------------------------- report
{
    h_meta_machine
    echo "versions	$("$PY" -c 'import sys, numpy, h5py, dask, distributed; print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}), dask {dask.__version__}, distributed {distributed.__version__}")')"
    echo "mpi	$("$MPIRUN" --version 2>&1 | head -1)"
    echo "runs	$RUNS"
    echo "size	$SIZE"
    echo "compress	$COMPRESS"
    echo "only	$ONLY"
    echo "disturbed	$DISTURBED"
    echo "max_redo	$MAX_REDO"
    h_meta_memstate "before each sample $(pf_of a) MiB (rows a-d), $(pf_of e) MiB (row e) touched and freed by dd (a memory buffer, no file)"
    echo "gen:A	$GENA"
    echo "gen:H	$GENH"
    echo "gen:D	$GEND"
    echo "gen:E	$GENE"
    echo "shape:a	$RA x 1024, chunks $CA x 1024"
    echo "shape:c	$NH, chunks $CH"
    echo "shape:d	$RD x 100, chunks $CD x 100"
    echo "shape:e	$RE x 100, chunks $CE x 100"
    echo "hist	$HLO $HHI"
    echo "glm_tol	$GLM_TOL"
    echo "load	$LOAD_BEFORE -> $LOAD_AFTER"
    echo "uptime_before	$UPTIME_BEFORE"
    echo "uptime_after	$UPTIME_AFTER"
    echo "elapsed	$ELAPSED"
    echo "work	$WORK"
    echo "mpirun	$MPIRUN -q --allow-run-as-root --oversubscribe --bind-to none -n RANKS"
    for n in A H D E Ey; do [ -f "$DATA/$n.h5" ] && echo "stored:$n	$(stat -c %s "$DATA/$n.h5")"; done
    true
} > "$LOG/meta.tsv"

"$PY" "$HERE/mpi_bench_report.py" "$LOG" "$PIPES" "$RESULTS"
[ "$RESULTS" = - ] || echo "mpi_bench: wrote $RESULTS (raw samples: $SAMPLES)"

if [ "$KEEP" = 0 ] && [ "$REPORT_ONLY" = 0 ]; then
    rm -rf "$DATA" "$OUT"
    echo "mpi_bench: deleted the data (--keep keeps it)"
fi
