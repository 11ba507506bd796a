#!/bin/sh
# tests/gpu/run.sh [CHUNKCTL] - the GPU suite: every case runs with
# --backend cuda and --backend cpu on the same files, and the outputs are
# compared (bit for bit for now: no step runs on the device yet, each falls
# back to the CPU; the tolerances of issue 11 come with the kernels).
# Exits 77 (ctest's SKIP) with a visible SKIP line when there is no CUDA
# device.  Runs from a build tree (ctest, label gpu) or from the device
# bundle (tests/gpu/device-run.sh), with /usr/bin/python3 or python3 and
# h5py + NumPy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ck=${1:-${CHUNKCTL:-$here/../../build/cli/chunkctl}}
py=/usr/bin/python3
[ -x "$py" ] && "$py" -c 'import h5py' 2>/dev/null || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! why=$("$ck" devices 2>&1); then
    echo "SKIP gpu suite: $why"
    exit 77
fi
echo "$why"

"$ck" gen --quiet "$work/f8.h5:/x" --shape 1000,300 --chunks 256,128 \
    --dist normal --mean 9 --seed 1
"$ck" gen --quiet "$work/f4.h5:/x" --shape 40,50,30 --chunks 16,25,7 \
    --dist normal --seed 2 --dtype float32
"$ck" gen --quiet "$work/i8.h5:/x" --shape 3000,70 --chunks 1000,32 \
    --dist integers --low -50 --high 50 --seed 3 --dtype int64

fail=0 n=0
# case NAME ARGS... : run chunkctl ARGS -o OUT under both backends, compare
case_() {
    name=$1
    shift
    n=$((n + 1))
    for b in cpu cuda; do
        if ! "$ck" "$@" --quiet --backend "$b" -o "$work/$name.$b.h5:/r" \
            >"$work/$name.$b.log" 2>&1; then
            echo "FAIL $name ($b): $(tail -1 "$work/$name.$b.log")"
            fail=$((fail + 1))
            return
        fi
    done
    if "$py" - "$work/$name.cpu.h5" "$work/$name.cuda.h5" <<'PY'; then
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r")["r"][()] for p in sys.argv[1:3])
sys.exit(0 if a.dtype == b.dtype and a.shape == b.shape and
         np.array_equal(a, b, equal_nan=a.dtype.kind == "f") else 1)
PY
        echo "ok   $name"
    else
        echo "FAIL $name: cpu and cuda differ"
        fail=$((fail + 1))
    fi
}

for src in f8 f4 i8; do
    x="$work/$src.h5:/x"
    case_ "add-$src" add "$x" 1.5
    case_ "sqrt-abs-$src" sqrt "$x"
    case_ "less-$src" less "$x" 9
    case_ "sum0-$src" sum "$x" --axis 0
    case_ "mean-$src" mean "$x"
    case_ "std1-$src" std "$x" --axis 1 --ddof 1
    case_ "max-$src" max "$x"
    case_ "hist-$src" histogram "$x" --bins 16 --range 0,12
    case_ "transpose-$src" transpose "$x"
done
echo "gpu suite: $((n - fail)) of $n cases agree"
[ "$fail" -eq 0 ]
