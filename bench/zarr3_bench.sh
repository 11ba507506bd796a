#!/bin/bash
# zarr3_bench.sh: Zarr v3 with sharding against Zarr v2 of the same codec and
# chunking, in chunkctl and in zarrita (Zarr in JavaScript, under Node), and
# how many bytes a partial read of a sharded array takes from the store.
# Writes its section of bench/RESULTS.md (<!-- zarr3_bench:begin/end -->).
#
# The issue: "Read+decode and copy rates for v3 sharded (zstd, blosc) vs v2
# of the same codec and chunking, and vs zarrita under Node reading the same
# store: sharded v3 within 1.1x of v2's rate; reading 1% of the inner chunks
# of a sharded array reads <= 2% of its bytes (count them)."
#
# Data (made once; SIZE of float64, ROWS x COLS, integers 0..999 from
# `chunkctl gen --dist integers --low 0 --high 1000 --seed 1`, as copy_bench):
#   src.h5         HDF5, no filter, chunks CHUNKS          chunkctl gen
#   v2zstd.zarr    Zarr v2, chunks CHUNKS, zstd:3          chunkctl copy
#   v2blosc.zarr   Zarr v2, chunks CHUNKS, blosc lz4:5 shuffle
#   v3zstd.zarr    Zarr v3, chunks CHUNKS, zstd:3, no sharding
#   v3szstd.zarr   Zarr v3, shards SHARDS of inner chunks CHUNKS, zstd:3
#   v3sblosc.zarr  Zarr v3, shards SHARDS of inner chunks CHUNKS, blosc
#
# Per store, tools alternating within each round, RUNS rounds:
#   chunkctl verify --quiet --memory 256M S         (read + decode, no writes)
#   chunkctl copy --quiet --force S OUT/o.h5:/x --compress none --memory 256M
#   node bench/zarr3_zarrita.mjs read S             (zarrita 0.7.5: zarr.open +
#                                                    zarr.get of the whole array)
#   chunkctl run --quiet --memory 256M part_S.json  (1% of the inner chunks,
#                                                    each a slice step -> .h5)
#   find S -type f -exec cat {} +                   (read floor)
# and once a round: dd of the raw size to OUT (write floor), `node
# zarr3_zarrita.mjs import` (Node + zarrita start-up).
#
# Partial read: NPART = round(1% of the inner chunks) chunks, spread evenly
# over the C-order chunk list (chunk floor((k + 1/2) N / NPART), k = 0..),
# read by one `chunkctl run` whose steps are slices of exactly those chunks'
# regions.  Run once per store under `strace -f -y -e trace=read,pread64,
# readv,preadv,preadv2,mmap`: the return values of the reads on files under
# the store are summed, split into metadata (zarr.json / .zarray), shard
# index (a read of the index's bytes at the shard's end) and chunk data, and
# set against the store's stored bytes (all its files).
#
# Checks, once, outside the timing: zarrita's values of every store and
# chunkctl's copy of it (read by h5py) have the SHA-256 of src.h5's values
# (C-order bytes); the partial read's outputs equal NumPy's slices of src.h5.
#
# Measurement is bench/harness.sh's, as copy_bench.sh: wall time from
# $EPOCHREALTIME, peak RSS from /usr/bin/time; before each sample, untimed:
# outputs removed + sync, free memory made guest-backed (MEMSTATE=hot: a
# file of 1.5x the raw size written and deleted), the store re-read into the
# page cache; a sample during which other work used more than DISTURBED of a
# core is redone (MAX_REDO times at most), and the report counts them.  The
# binary is copied to WORK/bin first.  Where a sharded store's verify or
# copy median misses 1/1.1 of v2's, `perf record -g` of both goes into the
# report (the v2 row's "target" there is its own median).
#
# Run (about 10 minutes on 2 cores with RUNS=3, plus ~1 minute to make the
# data once; ~2.5 GiB under WORK):
#   bash bench/zarr3_bench.sh
#   REPORT_ONLY=1 bash bench/zarr3_bench.sh     (redo the section from WORK/log)
# Knobs (environment): RUNS=3, SIZE=1G (raw bytes of the array: K, M, G
#   suffixes; ROWS is SIZE / (COLS * 8), rounded down to whole shards),
#   COLS=8192, CHUNKS=256,1024, SHARDS=2048,4096 (32 inner chunks a shard),
#   MEMORY=256M, WORK=/tmp/chunkctl-zarr3-bench, REGEN=1 (remake the data),
#   CHUNKCTL=path (default build-bench/cli/chunkctl; build it with
#   `sh .ci/build build-bench`), SRC_REPO=the checkout the binary was built
#   from (for the commit line; default this one), NODE=node,
#   ZARRITA_NODE_MODULES (default tests/interop/node/node_modules, made by
#   `npm ci --prefix tests/interop/node`), PERF=1 (0: no profiles),
#   RESULTS=bench/RESULTS.md, MEMSTATE, DISTURBED=0.15, MAX_REDO=3 (see
#   harness.sh).
# Needs: /usr/bin/python3 with numpy and h5py; node >= 18; strace;
# /usr/bin/time; perf (for the profiles).  The machine has 2 cores: run
# nothing heavy meanwhile.

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/harness.sh
. "$HERE/harness.sh"
H_NAME=zarr3_bench
WORK=${WORK:-/tmp/chunkctl-zarr3-bench}
RUNS=${RUNS:-3}
SIZE=${SIZE:-1G}
COLS=${COLS:-8192}
CHUNKS=${CHUNKS:-256,1024}
SHARDS=${SHARDS:-2048,4096}
MEMORY=${MEMORY:-256M}
CHUNKCTL=${CHUNKCTL:-$REPO/build-bench/cli/chunkctl}
SRC_REPO=${SRC_REPO:-$REPO}
RESULTS=${RESULTS:-$HERE/RESULTS.md}
REGEN=${REGEN:-0}
PERF=${PERF:-1}
NODE=${NODE:-node}
export ZARRITA_NODE_MODULES=${ZARRITA_NODE_MODULES:-$REPO/tests/interop/node/node_modules}
ZARRITA=$HERE/zarr3_zarrita.mjs
REPORT=$HERE/zarr3_bench_report.py
PY=/usr/bin/python3
PREFAULT_TO=file REDO_PAUSE=5     # hot: a file, as chunkctl copy's output is
h_init
for tool in "$NODE" strace; do command -v "$tool" > /dev/null || die "$tool missing"; done
[ -f "$ZARRITA_NODE_MODULES/zarrita/package.json" ] ||
    die "no zarrita in $ZARRITA_NODE_MODULES (npm ci --prefix $REPO/tests/interop/node)"

h_snapshot "$CHUNKCTL" "$SRC_REPO"
CHUNKCTL=$H_CK

# SIZE -> ROWS: whole shards of rows, at least one.
size_bytes=$("$PY" -c 'import sys; s = sys.argv[1].upper().rstrip("B").rstrip("I"); u = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}; print(int(float(s[:-1]) * u[s[-1]]) if s[-1] in u else int(s))' "$SIZE")
CHUNK_ROWS=${CHUNKS%%,*} CHUNK_COLS=${CHUNKS#*,}
SHARD_ROWS=${SHARDS%%,*} SHARD_COLS=${SHARDS#*,}
ROWS=$((size_bytes / (COLS * 8) / SHARD_ROWS * SHARD_ROWS))
[ "$ROWS" -gt 0 ] || ROWS=$SHARD_ROWS
RAW_BYTES=$((ROWS * COLS * 8))
PREFAULT=${PREFAULT:-$((RAW_BYTES * 3 / 2 / 1048576))}
for v in CHUNK_ROWS CHUNK_COLS SHARD_ROWS SHARD_COLS; do
    case ${!v} in '' | *[!0-9]*) die "CHUNKS and SHARDS are two integers each (N,N)" ;; esac
done
if [ $((SHARD_ROWS % CHUNK_ROWS)) != 0 ] || [ $((SHARD_COLS % CHUNK_COLS)) != 0 ]; then
    die "SHARDS must be a multiple of CHUNKS"
fi

STORES="v2zstd v2blosc v3zstd v3szstd v3sblosc"
store_args() {
    case $1 in
        v2zstd)   echo "--zarr-format 2 --chunks $CHUNKS --compress zstd:3" ;;
        v2blosc)  echo "--zarr-format 2 --chunks $CHUNKS --compress blosc:lz4:5:shuffle" ;;
        v3zstd)   echo "--zarr-format 3 --chunks $CHUNKS --compress zstd:3" ;;
        v3szstd)  echo "--zarr-format 3 --chunks $CHUNKS --shards $SHARDS --compress zstd:3" ;;
        v3sblosc) echo "--zarr-format 3 --chunks $CHUNKS --shards $SHARDS --compress blosc:lz4:5:shuffle" ;;
    esac
}

# ---------------------------------------------------------------- the data
GEN_ARGS="--shape $ROWS,$COLS --chunks $CHUNKS --dist integers --low 0 --high 1000 --seed 1"
STAMP="$GEN_ARGS shards $SHARDS $(sha256sum "$CHUNKCTL" | cut -c1-12)"
if [ "${REPORT_ONLY:-0}" = 0 ] && { [ "$REGEN" = 1 ] || [ "$(cat "$DATA/stamp" 2>/dev/null)" != "$STAMP" ]; }; then
    echo "zarr3_bench: making the data in $DATA ($ROWS x $COLS float64)"
    rm -rf "$DATA" && mkdir -p "$DATA"
    # shellcheck disable=SC2086  # GEN_ARGS is a list of words
    "$CHUNKCTL" gen --quiet $GEN_ARGS --compress none "$DATA/src.h5:/x"
    for s in $STORES; do
        # shellcheck disable=SC2046  # store_args is a list of words
        "$CHUNKCTL" copy --quiet "$DATA/src.h5:/x" "$DATA/$s.zarr" $(store_args "$s")
    done
    echo "$STAMP" > "$DATA/stamp"
fi

# The partial read: one pipeline per store, a slice step per chosen chunk.
NCHUNKS=$(((ROWS / CHUNK_ROWS) * ((COLS + CHUNK_COLS - 1) / CHUNK_COLS)))
NPART=$(((NCHUNKS + 50) / 100))
[ "$NPART" -gt 0 ] || NPART=1
for s in $STORES; do
    "$PY" "$REPORT" pipeline "$DATA/$s.zarr" "$OUT/part.h5" "$ROWS,$COLS" "$CHUNKS" "$NPART" > "$DATA/part_$s.json"
done

# ---------------------------------------------------------------- measuring
if [ "${REPORT_ONLY:-0}" = 0 ]; then
h_new_log
echo "zarr3_bench: warming the page cache"
for s in $STORES; do find "$DATA/$s.zarr" -type f -exec cat {} + > /dev/null; done
"$NODE" "$ZARRITA" import

h_rounds_start
clean_out
for run in $(seq 1 "$RUNS"); do
    h_round "$run"
    for s in $STORES; do
        p=$DATA/$s.zarr
        measure "verify:$s"  "$run" "$p" "$PREFAULT" "$CHUNKCTL" verify --quiet --memory "$MEMORY" "$p"
        measure "copy:$s:h5" "$run" "$p" "$PREFAULT" "$CHUNKCTL" copy --quiet --force "$p" "$OUT/o.h5:/x" --compress none --memory "$MEMORY"
        measure "zarrita:$s" "$run" "$p" "$PREFAULT" "$NODE" "$ZARRITA" read "$p"
        measure "part:$s"    "$run" "$p" 0 "$CHUNKCTL" run --quiet --memory "$MEMORY" "$DATA/part_$s.json"
        measure "cat:$s"     "$run" "$p" "$PREFAULT" find "$p" -type f -exec cat {} +
    done
    measure "write:dd"       "$run" - "$PREFAULT" dd if=/dev/zero of="$OUT/dd.bin" bs=8M count=$((RAW_BYTES / 8388608)) status=none
    measure "import:zarrita" "$run" - "$PREFAULT" "$NODE" "$ZARRITA" import
done
clean_out
h_rounds_end

# ---------------------------------------------------------------- counting bytes
echo "zarr3_bench: counting the partial read's bytes under strace"
: > "$LOG/part_counts.tsv"
for s in $STORES; do
    prepare "$DATA/$s.zarr" 0
    strace -f -y -s 0 -e trace=read,pread64,readv,preadv,preadv2,mmap -o "$LOG/strace.$s.txt" \
        "$CHUNKCTL" run --quiet --memory "$MEMORY" "$DATA/part_$s.json"
    "$PY" "$REPORT" count "$s" "$DATA/$s.zarr" "$LOG/strace.$s.txt" >> "$LOG/part_counts.tsv"
done

# ---------------------------------------------------------------- checks
echo "zarr3_bench: checking zarrita's and chunkctl's values against src.h5"
want=$("$PY" -c 'import sys, h5py, hashlib; print(hashlib.sha256(h5py.File(sys.argv[1], "r")["x"][:].astype("<f8").tobytes()).hexdigest())' "$DATA/src.h5")
for s in $STORES; do
    z=$("$NODE" "$ZARRITA" sha256 "$DATA/$s.zarr" | "$PY" -c 'import sys, json; print(json.load(sys.stdin)["sha256"])')
    "$CHUNKCTL" copy --quiet --force "$DATA/$s.zarr" "$OUT/o.h5:/x" --compress none --memory "$MEMORY"
    c=$("$PY" -c 'import sys, h5py, hashlib; print(hashlib.sha256(h5py.File(sys.argv[1], "r")["x"][:].astype("<f8").tobytes()).hexdigest())' "$OUT/o.h5")
    [ "$z" = "$want" ] || die "zarrita's values of $s.zarr differ from src.h5 (sha256 $z, want $want)"
    [ "$c" = "$want" ] || die "chunkctl copy of $s.zarr differs from src.h5 (sha256 $c, want $want)"
    clean_out
    "$CHUNKCTL" run --quiet --memory "$MEMORY" "$DATA/part_$s.json"
    "$PY" "$REPORT" check-part "$DATA/part_$s.json" "$DATA/src.h5" || die "partial read of $s.zarr differs from src.h5"
    clean_out
done
VERIFIED="zarrita's values of all 5 stores and chunkctl copy of each (read by h5py) have src.h5's SHA-256 (${want:0:16}...); the partial reads' $NPART slices equal NumPy's slices of src.h5"

# ---------------------------------------------------------------- profiles
: > "$LOG/perf.txt"
if [ "$PERF" = 1 ] && command -v perf > /dev/null; then
    for pair in v3szstd:v2zstd v3sblosc:v2blosc; do
        s=${pair%%:*} v=${pair#*:}
        for tool in verify copy; do
            case $tool in
                verify) args=(verify --quiet --memory "$MEMORY") to=() suf="" ;;
                copy)   args=(copy --quiet --force) to=("$OUT/o.h5:/x" --compress none --memory "$MEMORY") suf=":h5" ;;
            esac
            ms=$(median_of "$tool:$s$suf") mv=$(median_of "$tool:$v$suf")
            awk -v a="$ms" -v b="$mv" 'BEGIN { exit !(a > 1.1 * b) }' || continue
            h_profile "$tool.$s" "$tool:$s$suf" "$ms" "$(awk -v b="$mv" 'BEGIN { printf "%.3f", 1.1 * b }')" \
                "$DATA/$s.zarr" "$CHUNKCTL" "${args[@]}" "$DATA/$s.zarr" "${to[@]}"
            h_profile "$tool.$v" "$tool:$v$suf" "$mv" "$mv" \
                "$DATA/$v.zarr" "$CHUNKCTL" "${args[@]}" "$DATA/$v.zarr" "${to[@]}"
        done
    done
    clean_out
fi
h_save_run VERIFIED RUNS MAX_REDO DISTURBED MEMSTATE PREFAULT
else
    h_load_run
fi

# ---------------------------------------------------------------- report
{
    h_meta_machine
    echo "versions	Node $("$NODE" --version), zarrita $("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$ZARRITA_NODE_MODULES/zarrita/package.json"), @zarrita/storage $("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$ZARRITA_NODE_MODULES/@zarrita/storage/package.json"), numcodecs.js $("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$ZARRITA_NODE_MODULES/numcodecs/package.json"); $(strace -V | head -1)"
    echo "runs	$RUNS"
    echo "memory	$MEMORY"
    echo "disturbed	$DISTURBED"
    echo "max_redo	$MAX_REDO"
    h_meta_memstate "$PREFAULT MiB written and deleted just before each sample"
    echo "raw_bytes	$RAW_BYTES"
    echo "shape	$ROWS x $COLS float64"
    echo "chunks	$CHUNKS"
    echo "shards	$SHARDS"
    echo "nchunks	$NCHUNKS"
    echo "npart	$NPART"
    echo "gen	chunkctl gen $GEN_ARGS --compress none"
    for s in $STORES; do echo "args:$s	$(store_args "$s")"; done
    echo "load	$LOAD_BEFORE -> $LOAD_AFTER"
    echo "elapsed	$ELAPSED"
    echo "verified	$VERIFIED"
    echo "work	$WORK"
    for s in $STORES; do
        echo "stored:$s	$(find "$DATA/$s.zarr" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }')"
        echo "files:$s	$(find "$DATA/$s.zarr" -type f | wc -l)"
    done
} > "$LOG/meta.tsv"

"$PY" "$REPORT" report "$LOG/meta.tsv" "$SAMPLES" "$CMDS" "$REDONE" "$LOG/part_counts.tsv" "$LOG/perf.txt" "$RESULTS"
echo "zarr3_bench: wrote $RESULTS (raw samples: $SAMPLES)"
