#!/bin/bash
# cf_bench.sh: issue 15's benchmark: the time mean of a CF netCDF-4 file,
# chunkctl (CF decoding on, and --raw) next to `cdo timmean` and
# `ncwa -a time`, on a file without and with missing values, in the same
# rounds.  Writes its section of bench/RESULTS.md (between
# <!-- cf_bench:begin --> and <!-- cf_bench:end -->; nothing else in the
# file is touched).
#
# The data (under WORK/data, made once; remade with --regen):
#   clim.nc       tas(time, lat, lon) = 365 x 360 x 720 float32, chunks
#                 1 x 360 x 720, zlib 1 + shuffle, CF coordinates, no
#                 _FillValue attribute (array_bench_peers.py make-clim,
#                 seed 13: the file array_bench.sh uses)
#   clim_miss.nc  the same values with 10% of them missing: _FillValue
#                 1e20f, drawn at random (cf_bench_peers.py make-miss,
#                 seed 15)
#
# The rows, for each file (outputs netCDF-4, under WORK/out):
#   ck      chunkctl mean F:/tas --axis time -o OUT.nc:/tas   (CF decoding
#           on, the default: on clim_miss.nc missing values become NaN and
#           the mean is a nanmean; clim.nc has nothing to decode)
#   ckraw   the same with --raw (no decoding: the stored numbers)
#   cdo     cdo -s timmean F OUT.nc        (one thread, as users run it)
#   cdo2    cdo -s -P 2 timmean F OUT.nc   (OpenMP, 2 threads)
#   nco     ncwa -O -a time F OUT.nc
#   floors: chunkctl verify --quiet F:/tas (read + decode only), cat F
#
# Measurement (bench/harness.sh, as for array_bench.sh): wall time from
# $EPOCHREALTIME, peak RSS from /usr/bin/time; RUNS rounds, tools
# alternating within each round; before each sample, untimed: outputs
# removed + sync, free memory made guest-backed (MEMSTATE=hot: dd touches
# PF MiB), the input re-read into the page cache.  A sample during which
# other work used more than DISTURBED of a core is redone (MAX_REDO times at
# most).  Once per file, outside the timing, every tool's output is checked
# against NumPy (cf_bench_peers.py check).  A chunkctl row over the issue's
# target (0.4 s) gets a perf profile (top symbols by self time).  A command
# that fails is recorded (ON_FAIL=record), its row reads "failed", and the
# run goes on.
#
# Run (about 4 minutes on 2 idle cores with --runs 5, plus ~40 s to make
# the data once; ~0.5 GB free under WORK, ~4 GiB free RAM for NCO):
#   bash bench/cf_bench.sh [--runs N] [--regen] [--report-only]
#   --runs N      rounds (default 5)
#   --regen       remake the data even if it is there
#   --report-only measure nothing: redo the RESULTS.md section from WORK/log
# Knobs (environment): WORK=/tmp/chunkctl-cfbench, CDO_P2=1 (0: no
#   `cdo -P 2` rows), NCO=1 (0: no ncwa rows), PERF=1 (0: no profiles),
#   CHUNKCTL=path (default build/cli/chunkctl), BUILT_FROM="commit X" (what
#   the binary was built from, when not this working tree), RESULTS=bench/RESULTS.md,
#   MEMSTATE, DISTURBED=0.15, MAX_REDO=3, ON_FAIL=record.
# Needs: /usr/bin/python3 with numpy, scipy, netCDF4 (python3-netcdf4);
#   cdo, ncwa (Debian: cdo, nco); /usr/bin/time; perf for the profiles.

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/harness.sh
. "$HERE/harness.sh"
H_NAME=cf_bench
WORK=${WORK:-/tmp/chunkctl-cfbench}
RUNS=5
REGEN=0
REPORT_ONLY=0
while [ $# -gt 0 ]; do
    case $1 in
        --runs) RUNS=$2; shift 2 ;;
        --runs=*) RUNS=${1#*=}; shift ;;
        --regen) REGEN=1; shift ;;
        --report-only) REPORT_ONLY=1; shift ;;
        -h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "cf_bench: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $RUNS in ''|*[!0-9]*|0) echo "cf_bench: --runs takes a positive integer" >&2; exit 2 ;; esac
CDO_P2=${CDO_P2:-1}
NCO=${NCO:-1}
ON_FAIL=${ON_FAIL:-record}
CHUNKCTL=${CHUNKCTL:-$REPO/build/cli/chunkctl}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
PY=/usr/bin/python3
PEERS=$HERE/cf_bench_peers.py
export PYTHONDONTWRITEBYTECODE=1     # no __pycache__ in the checkout
ONLY=full,miss                       # (harness.sh's want(); both files)

h_init
"$PY" -c 'import numpy, scipy, netCDF4' || die "needs numpy, scipy and netCDF4 for $PY"
CDO=$(command -v cdo) || die "needs cdo (apt-get install -y cdo)"
NCWA=""
if [ "$NCO" = 1 ]; then
    NCWA=$(command -v ncwa) || die "needs NCO's ncwa (apt-get install -y nco; or NCO=0)"
fi
h_snapshot "$CHUNKCTL" "$REPO"
# BUILT_FROM names the source of a binary built elsewhere than this
# checkout's working tree (say "commit eb5c5df, clean tree"): the checkout's
# own uncommitted changes then do not describe it.
if [ -n "${BUILT_FROM:-}" ] && [ "$REPORT_ONLY" = 0 ]; then
    BUILD_INFO="$BUILT_FROM; $(build_info "$CHUNKCTL")"
fi
CK=$H_CK

# ---------------------------------------------------------------- the data
FULL=$DATA/clim.nc MISS=$DATA/clim_miss.nc
MAKECLIM="$PY $HERE/array_bench_peers.py make-clim"
MAKEMISS="$PY $PEERS make-miss"
CLIMV="make-clim v1, seed 13"    # array_bench.sh's stamp for the same data
MISSV="make-miss v1, seed 15, 10%, _FillValue 1e20f; from $CLIMV"
if [ "$REPORT_ONLY" = 0 ]; then
    if [ "$REGEN" = 1 ] || [ "$(cat "$DATA/clim.stamp" 2>/dev/null)" != "$CLIMV" ] || [ ! -f "$FULL" ]; then
        echo "cf_bench: making $FULL ($MAKECLIM)"
        rm -f "$FULL" "$DATA/miss.stamp" && $MAKECLIM "$FULL" && echo "$CLIMV" > "$DATA/clim.stamp"
    fi
    if [ "$REGEN" = 1 ] || [ "$(cat "$DATA/miss.stamp" 2>/dev/null)" != "$MISSV" ] || [ ! -f "$MISS" ]; then
        echo "cf_bench: making $MISS ($MAKEMISS)"
        rm -f "$MISS" && $MAKEMISS "$FULL" "$MISS" && echo "$MISSV" > "$DATA/miss.stamp"
    fi
fi

file_of() { case $1 in full) echo "$FULL" ;; miss) echo "$MISS" ;; esac; }
# cmd ROW CASE: the row's command for CASE as words in W
cmd() {
    local f
    f=$(file_of "$2")
    case $1 in
        ck)     W=("$CK" mean "$f:/tas" --axis time -o "$OUT/ck_$2.nc:/tas") ;;
        ckraw)  W=("$CK" mean "$f:/tas" --axis time --raw -o "$OUT/ckraw_$2.nc:/tas") ;;
        cdo)    W=("$CDO" -s timmean "$f" "$OUT/cdo_$2.nc") ;;
        cdo2)   W=("$CDO" -s -P 2 timmean "$f" "$OUT/cdo2_$2.nc") ;;
        nco)    W=("$NCWA" -O -a time "$f" "$OUT/nco_$2.nc") ;;
        verify) W=("$CK" verify --quiet "$f:/tas") ;;
        cat)    W=(cat "$f") ;;
    esac
}
ROWS="ck ckraw cdo"
[ "$CDO_P2" = 0 ] || ROWS="$ROWS cdo2"
[ -z "$NCWA" ] || ROWS="$ROWS nco"
ROWS="$ROWS verify cat"
# Free memory made guest-backed before each sample (MiB): about what the
# hungriest tool touches (NCO holds the whole variable, in double: ~3.6 GB
# in the issue; the others < 200 MB).
PF=1280

CHECKS=$LOG/checks.txt
if [ "$REPORT_ONLY" = 0 ]; then
h_new_log "$CHECKS" "$FAILS" "$PHASES"

echo "cf_bench: checking every tool's output against NumPy (untimed)"
for c in full miss; do
    clean_out
    outs=()
    for row in ck ckraw cdo nco; do
        [ "$row" != nco ] || [ -n "$NCWA" ] || { outs+=("$OUT/none"); continue; }
        cmd "$row" "$c"
        if ! "${W[@]}" > /dev/null 2> "$LOG/check.$row.$c.err"; then
            echo "FAIL $c $row: failed: $(err_line "$LOG/check.$row.$c.err")" >> "$CHECKS"
        fi
        outs+=("$OUT/${row}_$c.nc")
    done
    "$PY" "$PEERS" check "$c" "$(file_of "$c")" "${outs[@]}" >> "$CHECKS" || true
    # what the CF output keeps (the issue's complaint): ncdump -h, less
    # the pipeline text
    if [ -f "$OUT/ck_$c.nc" ] && command -v ncdump > /dev/null; then
        ncdump -h "$OUT/ck_$c.nc" | grep -v 'chunkctl_pipeline' | sed "s|$WORK|WORK|g; s/^/     $c ncdump -h: /" >> "$CHECKS"
    fi
    grep -v "^     " "$CHECKS" | tail -4
done
clean_out

echo "cf_bench: warming the page cache"
cat "$FULL" "$MISS" > /dev/null

h_rounds_start
for run in $(seq 1 "$RUNS"); do
    h_round "$run"
    for c in full miss; do
        f=$(file_of "$c")
        for row in $ROWS; do
            cmd "$row" "$c"
            measure "$row:$c" "$run" "$f" $PF "${W[@]}"
        done
    done
done
clean_out
h_rounds_end
h_save_run RUNS ROWS
else
    h_load_run
fi

# ---------------------------------------------------------------- profiles
# A chunkctl row over the issue's target (0.4 s with CF decoding on) gets a
# perf profile (h_profile: top symbols by self time).
PERF=${PERF:-1}
command -v perf > /dev/null || PERF=0
TARGET=0.4
if [ "$PERF" = 1 ] && [ "$REPORT_ONLY" = 0 ]; then
    : > "$LOG/perf.txt"
    for c in full miss; do
        med=$(median_of "ck:$c")
        [ -n "$med" ] || continue
        awk -v m="$med" -v t="$TARGET" 'BEGIN { exit !(m > t) }' || continue
        cmd ck "$c"
        h_profile "$c" "ck:$c" "$med" "$TARGET" "$(file_of "$c")" "${W[@]}"
        # the same samples by library: zlib (inflate + adler32) is the
        # decoding, chunkctl's own the unshuffle, CF decoding and the sum
        perf report -q -i "$LOG/perf.$c.data" --stdio --no-children -g none \
            --sort dso --percent-limit 0.5 2> /dev/null | sed '/^$/d' |
            head -8 > "$LOG/perf.$c.dso.txt" || true
        # and chunkctl's own symbols alone
        perf report -q -i "$LOG/perf.$c.data" --stdio --no-children -g none \
            --dsos chunkctl --sort symbol --percent-limit 0.3 2> /dev/null |
            sed '/^$/d' | head -12 > "$LOG/perf.$c.own.txt" || true
    done
    clean_out
    rm -f "$LOG"/perf.*.data
fi

# ---------------------------------------------------------------- report
{
    h_meta_machine
    echo "versions	$("$PY" -c 'import sys, numpy, netCDF4; print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, netCDF4-python {netCDF4.__version__} (netCDF {netCDF4.__netcdf4libversion__})")'); $("$CDO" -V 2>&1 | head -1 | sed 's/ (https[^)]*)//'); NCO $([ -n "$NCWA" ] && "$NCWA" --version 2>&1 | grep -o 'version [0-9.]*' | head -1 | cut -d' ' -f2 || echo 'not run')"
    echo "runs	$RUNS"
    echo "disturbed	$DISTURBED"
    echo "max_redo	$MAX_REDO"
    h_meta_memstate "before each sample $PF MiB touched and freed by dd (a memory buffer, no file)"
    echo "makeclim	python3 bench/array_bench_peers.py make-clim clim.nc"
    echo "makemiss	python3 bench/cf_bench_peers.py make-miss clim.nc clim_miss.nc"
    echo "load	$LOAD_BEFORE -> $LOAD_AFTER"
    echo "elapsed	$ELAPSED"
    echo "work	$WORK"
    echo "target	$TARGET"
    for c in full miss; do
        f=$(file_of "$c")
        echo "stored:$c	$(stat -c %s "$f")"
    done
} > "$LOG/meta.tsv"

"$PY" "$HERE/cf_bench_report.py" "$LOG" "$RESULTS"
echo "cf_bench: wrote $RESULTS (raw samples: $SAMPLES)"
