#!/bin/sh
# tests/gpu/run.sh [CHUNKCTL] - the GPU suite: every case runs with
# --backend cuda and --backend cpu on the same files, and the outputs are
# compared: the elementwise, reduction and histogram cases bit for bit for
# now (no step runs on the device yet, each falls back to the CPU; the
# tolerances of issue 11 come with the kernels); the linear algebra and
# kernel cases with issue 12's bounds, against the CPU backend and NumPy
# (tests/gpu/compare.py).
# Exits 77 (ctest's SKIP) with a visible SKIP line when there is no CUDA
# device.  ctest's cuda/emulated runs it on an emulated device
# (tests/cuda/fakecuda.c), which skips the kernel launches and adds
# checks of its own.  KEEP_WORK=1 keeps the work directory.  Runs from a build tree (ctest, label gpu) or from the device
# bundle (tests/gpu/device-run.sh), with /usr/bin/python3 or python3 and
# h5py + NumPy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ck=${1:-${CHUNKCTL:-$here/../../build/cli/chunkctl}}
py=/usr/bin/python3
[ -x "$py" ] && "$py" -c 'import h5py' 2>/dev/null || py=python3
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT

if ! why=$("$ck" devices 2>&1); then
    echo "SKIP gpu suite: $why"
    exit 77
fi
echo "$why"
# An emulated device (tests/cuda/fakecuda.c, ctest cuda/emulated) runs the
# module's host code and the library calls on the CPU but no device code:
# the kernel launches are skipped there, and its own checks added.
emulated=0
case $why in *"emulated on the CPU"*) emulated=1 ;; esac

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
# linear algebra and kernels (issue 12): lcase NAME MODE ARGS... runs
# chunkctl ARGS -o OUT.h5 under both backends, cuda with its device code
# that awaits a first GPU turned on (CHUNKCTL_CUDA_UNVERIFIED=1: gemm,
# syrk, QR, SVD and Cholesky on cuBLAS/cuSOLVER), and compares the two by
# MODE (tests/gpu/compare.py, which also checks them against NumPy)
"$py" - "$work" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(7)
X = rng.normal(size=(20000, 30))
w = rng.normal(size=30) / 4
y = (rng.random(20000) < 1 / (1 + np.exp(-(X @ w) - 0.3))).astype("f8")
with h5py.File(sys.argv[1] + "/glm.h5", "w") as f:
    f.create_dataset("X", data=X, chunks=(4096, 30))
    f.create_dataset("y", data=y, chunks=(4096,))
    f.create_dataset("y_poisson", data=rng.poisson(np.exp(X @ w / 2 + 0.5))
                     .astype("f8"), chunks=(4096,))
    f.create_dataset("y_normal", data=X @ w + rng.normal(size=20000),
                     chunks=(4096,))
# X of 48 MB: under --memory 40M it is read on every pass, and newton and
# lbfgs start from a fit to a sample of its rows (25000, in tasks of 6250
# rows: chunks of 6250 make X's own tasks start at the same row numbers,
# so that a device keeping the sample's rows as X's is caught)
Xb = rng.normal(size=(200000, 30))
with h5py.File(sys.argv[1] + "/glm_big.h5", "w") as f:
    f.create_dataset("X", data=Xb, chunks=(6250, 30))
    f.create_dataset("y", data=(rng.random(200000) < 1 / (1 + np.exp(
        -(Xb @ w) - 0.3))).astype("f8"), chunks=(6250,))
with h5py.File(sys.argv[1] + "/w.h5", "w") as f:
    f.create_dataset("x", data=rng.normal(size=(200, 700)), chunks=(64, 128))
with h5py.File(sys.argv[1] + "/m4.h5", "w") as f:
    f.create_dataset("a", data=rng.normal(size=(500, 300)).astype("f4"),
                     chunks=(128, 100))
    f.create_dataset("b", data=rng.normal(size=(300, 200)).astype("f4"),
                     chunks=(100, 64))
with h5py.File(sys.argv[1] + "/row.h5", "w") as f:
    f.create_dataset("x", data=rng.normal(size=(700, 90)).astype("f4"),
                     chunks=(128, 32))
    f.create_dataset("y", data=rng.normal(size=90).astype("f4"),
                     chunks=(40,))
with h5py.File(sys.argv[1] + "/b.h5", "w") as f:
    f.create_dataset("x", data=rng.normal(size=(300, 200)), chunks=(128, 64))
PY
# a glm-fit's iteration count, from its JSON (empty for other commands)
iters() {
    i=$(sed -n 's/.*"iterations": \([0-9]*\).*/\1/p' "$1")
    echo "${i:-0}"
}
lcase() {
    name=$1 mode=$2
    shift 2
    n=$((n + 1))
    for b in cpu cuda; do
        # gpu_args, gpu_env: options and environment for the device's run
        # only (--gpu-memory, CHUNKCTL_CUDA_SVD)
        extra= xenv=
        [ "$b" = cpu ] || extra=${gpu_args:-} xenv=${gpu_env:-}
        if ! env CHUNKCTL_CUDA_UNVERIFIED=1 \
            CHUNKCTL_FAKE_CUDA_LOG="$work/$name.fake" $xenv \
            "$ck" "$@" $extra --quiet --force --verbose --backend "$b" \
            -o "$work/$name.$b.h5" >"$work/$name.$b.log" 2>&1; then
            echo "FAIL $name ($b): $(tail -1 "$work/$name.$b.log")"
            fail=$((fail + 1))
            return
        fi
    done
    if ! grep -q "cuda backend computes:.* gemm" "$work/$name.cuda.log"; then
        echo "FAIL $name: the device's linear algebra was not used"
        fail=$((fail + 1))
    elif [ "$(iters "$work/$name.cuda.log")" -gt "$(($(iters "$work/$name.cpu.log") + 2))" ]; then
        # newton's steps follow the Hessian: a wrong one still ends at the
        # optimum, in more steps (a GPU's rounding may cost one or two)
        echo "FAIL $name: $(iters "$work/$name.cuda.log") iterations on cuda, $(iters "$work/$name.cpu.log") on the CPU"
        fail=$((fail + 1))
    elif [ "$emulated" = 1 ] && ! grep -q "leaked=0 " "$work/$name.fake"; then
        echo "FAIL $name: device memory not freed: $(cat "$work/$name.fake")"
        fail=$((fail + 1))
    elif why=$("$py" "$here/compare.py" "$mode" "$work/$name.cpu.h5" \
        "$work/$name.cuda.h5" "$work" 2>&1); then
        [ -n "${gpu_args:-}" ] || echo "ok   $name" # budget() says it
    else
        echo "FAIL $name: $why"
        fail=$((fail + 1))
    fi
}
k=$here/../../sample-data/kernels
lcase svd-tall svd svd "$work/f8.h5:/x"
lcase svd-s-only svd-s svd "$work/f8.h5:/x" --no-u
lcase rsvd rsvd svd "$work/f8.h5:/x" --randomized --k 10
lcase svd-wide svd:w.h5 svd "$work/w.h5:/x"
lcase matmul-f8 matmul matmul "$work/f8.h5:/x" "$work/b.h5:/x"
lcase matmul-f4 matmul-f4 matmul "$work/m4.h5:/a" "$work/m4.h5:/b"
for solver in newton lbfgs; do
    lcase "glm-$solver" glm glm-fit "$work/glm.h5:/X" "$work/glm.h5:/y" \
        --family logistic --solver "$solver"
done
lcase glm-sampled glm:logistic:none:0:glm_big.h5 glm-fit \
    "$work/glm_big.h5:/X" "$work/glm_big.h5:/y" --solver lbfgs --memory 40M
lcase glm-poisson glm:poisson:none:0 glm-fit "$work/glm.h5:/X" \
    "$work/glm.h5:/y_poisson" --family poisson
lcase glm-normal-l2 glm:normal:l2:0.1 glm-fit "$work/glm.h5:/X" \
    "$work/glm.h5:/y_normal" --family normal --regularizer l2 --lambda 0.1
lcase glm-l1-prox glm:logistic:l1:0.01 glm-fit "$work/glm.h5:/X" \
    "$work/glm.h5:/y" --solver proximal_grad --regularizer l1 --lambda 0.01
lcase glm-enet-admm glm:normal:elastic_net:0.05 glm-fit "$work/glm.h5:/X" \
    "$work/glm.h5:/y_normal" --family normal --solver admm \
    --regularizer elastic_net --lambda 0.05
# the svd slot's other methods (CHUNKCTL_CUDA_SVD, to be chosen between
# by measurement on a GPU): cuSOLVER's Jacobi gesvdj, and LAPACK on the
# host; tall, wide (the transpose path) and randomized (a wide B = Q^T A).
# On the emulated device the call counts say which ran.
for meth in gesvdj host; do
    for c in "tall svd f8.h5" "wide svd:w.h5 w.h5" "rsvd rsvd f8.h5"; do
        set -- $c
        shape=$1 mode=$2 file=$3
        rm -f "$work/svd-$meth-$shape.fake"
        if [ "$shape" = rsvd ]; then
            gpu_env="CHUNKCTL_CUDA_SVD=$meth" lcase "svd-$meth-$shape" \
                "$mode" svd "$work/$file:/x" --randomized --k 10
        else
            gpu_env="CHUNKCTL_CUDA_SVD=$meth" lcase "svd-$meth-$shape" \
                "$mode" svd "$work/$file:/x"
        fi
        [ "$emulated" = 1 ] || continue
        want="gesvd=0 gesvdj=[1-9]"
        [ "$meth" = host ] && want="gesvd=0 gesvdj=0 "
        if ! grep -q "$want" "$work/svd-$meth-$shape.fake" 2>/dev/null; then
            echo "FAIL svd-$meth-$shape: not $meth: $(cat "$work/svd-$meth-$shape.fake" 2>&1)"
            fail=$((fail + 1))
        fi
    done
done
n=$((n + 1))
rc=0
CHUNKCTL_CUDA_UNVERIFIED=1 CHUNKCTL_CUDA_SVD=qr "$ck" svd --quiet \
    --backend cuda "$work/f8.h5:/x" -o "$work/svd-bad.h5" \
    >"$work/svd-bad.log" 2>&1 || rc=$?
if [ "$rc" = 2 ] && [ "$(cat "$work/svd-bad.log")" = \
    "chunkctl: CHUNKCTL_CUDA_SVD 'qr': expected gesvd, gesvdj or host" ] &&
    [ ! -e "$work/svd-bad.h5" ]; then
    echo "ok   svd-bad-method"
else
    echo "FAIL svd-bad-method: exit $rc, $(cat "$work/svd-bad.log")"
    fail=$((fail + 1))
fi
# --gpu-memory bounds what chunkctl holds on the device: calls larger
# than it run in pieces (gemm's tiles, syrk's rows, a QR's row blocks),
# with the same results.  budget NAME MODE BYTES CHUNKCTL-ARGS...
budget() {
    name=$1 mode=$2 bytes=$3
    shift 3
    before=$fail
    gpu_args="--gpu-memory $bytes" lcase "$name" "$mode" "$@"
    [ "$fail" = "$before" ] || return 0
    if [ "$emulated" = 0 ]; then
        echo "ok   $name"
        return 0
    fi
    peak=$(sed -n 's/^peak=\([0-9]*\) .*/\1/p' "$work/$name.fake")
    if [ "${peak:-$((bytes + 1))}" -gt "$bytes" ]; then
        echo "FAIL $name: device peak ${peak:-unknown} over --gpu-memory $bytes"
        fail=$((fail + 1))
    else
        echo "ok   $name (device peak $peak of $bytes)"
    fi
}
budget budget-matmul matmul 1000000 matmul "$work/f8.h5:/x" "$work/b.h5:/x"
budget budget-svd svd 2000000 svd "$work/f8.h5:/x"
budget budget-rsvd rsvd 1000000 svd "$work/f8.h5:/x" --randomized --k 10
budget budget-newton glm 100000 glm-fit "$work/glm.h5:/X" "$work/glm.h5:/y" \
    --family logistic --solver newton
# plan sizes the device's linear algebra from the device's own memory
n=$((n + 1))
printf '{"inputs": {"x": "%s"}, "steps": [{"name": "s", "op": "svd", "args": ["x"]}], "outputs": {"s.S": "%s:/S"}}\n' \
    "$work/f8.h5:/x" "$work/plan.h5" >"$work/plan.json"
if "$ck" plan --backend cuda "$work/plan.json" >"$work/plan.log" 2>&1 &&
    grep -q "^device memory: [0-9.]* [KMGT]iB" "$work/plan.log" &&
    grep -q "^device svd s: resident" "$work/plan.log"; then
    echo "ok   plan"
else
    echo "FAIL plan: $(tr '\n' ' ' <"$work/plan.log")"
    fail=$((fail + 1))
fi
if [ "$emulated" = 1 ]; then
    # the emulated device's own checks: a device too small for a block,
    # and a fault in the middle of the work; each one line, no output
    for bad in "small CHUNKCTL_FAKE_CUDA_MEMORY=100000 out of device memory" \
        "fault CHUNKCTL_FAKE_CUDA_FAULT=7 an illegal memory access"; do
        set -- $bad
        name=emu-$1 setting=$2
        shift 2
        n=$((n + 1))
        rc=0
        env CHUNKCTL_CUDA_UNVERIFIED=1 "$setting" "$ck" svd --quiet \
            --backend cuda "$work/f8.h5:/x" -o "$work/$name.h5" \
            >"$work/$name.log" 2>&1 || rc=$?
        if [ "$rc" != 0 ] && [ "$(wc -l <"$work/$name.log")" = 1 ] &&
            grep -q "$*" "$work/$name.log" && [ ! -e "$work/$name.h5" ]; then
            echo "ok   $name"
        else
            echo "FAIL $name: exit $rc, $(cat "$work/$name.log")"
            fail=$((fail + 1))
        fi
    done
    # operands kept on the device (a gemm operand's key): X's rows cross
    # the bus once for a whole fit, A's for all of a randomized svd's
    # passes, not once per pass, when half the device holds them; the
    # results are the same either way.  keep NAME MIN_UP CHUNKCTL-ARGS...
    keep() {
        name=$1 least=$2
        shift 2
        n=$((n + 1))
        for mem in 4294967296 3000000; do
            CHUNKCTL_CUDA_UNVERIFIED=1 CHUNKCTL_FAKE_CUDA_MEMORY=$mem \
                CHUNKCTL_FAKE_CUDA_LOG="$work/$name.$mem.fake" "$ck" "$@" \
                --quiet --force --backend cuda -o "$work/$name.$mem.h5" \
                >"$work/$name.$mem.out" 2>&1 || true
        done
        up4g=$(sed -n 's/.* up=\([0-9]*\) .*/\1/p' \
            "$work/$name.4294967296.fake" 2>/dev/null || true)
        up3m=$(sed -n 's/.* up=\([0-9]*\) .*/\1/p' \
            "$work/$name.3000000.fake" 2>/dev/null || true)
        if "$py" - "$work/$name.4294967296.h5" "$work/$name.3000000.h5" <<'PY' &&
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
sys.exit(0 if sorted(a) == sorted(b) and
         all(np.array_equal(a[k][()], b[k][()]) for k in a) else 1)
PY
            [ "${up4g:-0}" -gt "$least" ] && [ "$((up4g * 3))" -lt "${up3m:-0}" ]; then
            echo "ok   $name (kept: $up4g bytes up, not kept: $up3m)"
        else
            echo "FAIL $name: kept ${up4g:-no}, not kept ${up3m:-no} bytes up; $(cat \
                "$work/$name.4294967296.out" "$work/$name.3000000.out" | tr '\n' ' ')"
            fail=$((fail + 1))
        fi
    }
    keep emu-keep-glm 4800000 glm-fit "$work/glm.h5:/X" "$work/glm.h5:/y" \
        --solver lbfgs
    # a randomized svd's 4 passes over f8.h5 (2.4 MB): A crosses once
    n=$((n + 1))
    rm -f "$work/rsvd4.fake"
    CHUNKCTL_CUDA_UNVERIFIED=1 CHUNKCTL_FAKE_CUDA_LOG="$work/rsvd4.fake" \
        "$ck" svd --quiet --backend cuda "$work/f8.h5:/x" --randomized \
        --k 10 --power-iters 3 -o "$work/rsvd4.h5" >"$work/rsvd4.log" 2>&1 || true
    up=$(sed -n 's/.* up=\([0-9]*\) .*/\1/p' "$work/rsvd4.fake" 2>/dev/null || true)
    if [ "${up:-0}" -ge 2400000 ] && [ "$up" -lt 4800000 ]; then
        echo "ok   emu-keep-rsvd ($up bytes up over 4 passes of 2400000)"
    else
        echo "FAIL emu-keep-rsvd: ${up:-no} bytes up; $(cat "$work/rsvd4.log")"
        fail=$((fail + 1))
    fi
    # a device that cannot hold the kept operands beside a call's own
    # buffers: the call runs again without them, and the product is right
    n=$((n + 1))
    "$ck" gen --quiet "$work/big.h5:/a" --shape 3000,2000 --chunks 500,500 \
        --dist normal --seed 4
    "$ck" gen --quiet "$work/bigb.h5:/b" --shape 2000,1500 --chunks 500,500 \
        --dist normal --seed 5
    if CHUNKCTL_CUDA_UNVERIFIED=1 CHUNKCTL_FAKE_CUDA_MEMORY=6000000 "$ck" \
        matmul --quiet --backend cuda --memory 32M "$work/big.h5:/a" \
        "$work/bigb.h5:/b" -o "$work/evict.h5" >"$work/evict.log" 2>&1 &&
        why=$("$py" - "$work" 2>&1 <<'PY'
import sys, h5py, numpy as np
w = sys.argv[1]
r = h5py.File(w + "/evict.h5", "r")
ref = h5py.File(w + "/big.h5", "r")["a"][...] @ h5py.File(w + "/bigb.h5", "r")["b"][...]
err = np.abs(r["matmul"][...] - ref).max() / np.abs(ref).max()
sys.exit(0 if err <= 1e-12 else "%.3g relative" % err)
PY
        ); then
        echo "ok   emu-evict"
    else
        echo "FAIL emu-evict: $(cat "$work/evict.log") ${why:-}"
        fail=$((fail + 1))
    fi
    # where --memory allows, a matmul box takes all of k in one product:
    # A and B cross once (their bands kept for the other boxes), C once
    n=$((n + 1))
    rm -f "$work/mmk.fake"
    CHUNKCTL_CUDA_UNVERIFIED=1 CHUNKCTL_FAKE_CUDA_LOG="$work/mmk.fake" \
        "$ck" matmul --quiet --backend cuda --memory 1G "$work/big.h5:/a" \
        "$work/bigb.h5:/b" -o "$work/mmk.h5" >"$work/mmk.log" 2>&1 || true
    if grep -q "up=72000000 down=36000000 " "$work/mmk.fake" 2>/dev/null; then
        echo "ok   emu-matmul-k"
    else
        echo "FAIL emu-matmul-k: $(cat "$work/mmk.log" "$work/mmk.fake" 2>&1 | tr '\n' ' ')"
        fail=$((fail + 1))
    fi
    # what --gpu-memory leaves too little room for even in pieces (a QR
    # needs n + 1 rows): one line that names it, no output
    n=$((n + 1))
    rc=0
    CHUNKCTL_CUDA_UNVERIFIED=1 "$ck" svd --quiet --backend cuda \
        --gpu-memory 500K "$work/f8.h5:/x" -o "$work/emu-budget.h5" \
        >"$work/emu-budget.log" 2>&1 || rc=$?
    if [ "$rc" != 0 ] && [ "$(wc -l <"$work/emu-budget.log")" = 1 ] &&
        grep -q "needs at least [0-9.]* KiB at once, more than --gpu-memory 500.0 KiB$" \
            "$work/emu-budget.log" && [ ! -e "$work/emu-budget.h5" ]; then
        echo "ok   emu-budget"
    else
        echo "FAIL emu-budget: exit $rc, $(cat "$work/emu-budget.log")"
        fail=$((fail + 1))
    fi
    # a step's kept operands go when it is done: a glm fit before the
    # matmul above leaves nothing on the device beside the matmul's own
    n=$((n + 1))
    printf '{"inputs": {"X": "%s", "y": "%s", "a": "%s", "b": "%s"}, "steps": [{"name": "m", "op": "glm_fit", "args": ["X", "y"], "solver": "lbfgs"}, {"name": "p", "op": "matmul", "args": ["a", "b"]}], "outputs": {"m.coef": "%s:/coef", "p": "%s:/p"}}\n' \
        "$work/glm.h5:/X" "$work/glm.h5:/y" "$work/big.h5:/a" \
        "$work/bigb.h5:/b" "$work/rel.h5" "$work/rel.h5" >"$work/rel.json"
    rm -f "$work/rel.fake"
    CHUNKCTL_CUDA_UNVERIFIED=1 CHUNKCTL_FAKE_CUDA_LOG="$work/rel.fake" \
        "$ck" run --quiet --backend cuda --memory 1G "$work/rel.json" \
        >"$work/rel.log" 2>&1 || true
    alone=$(sed -n 's/^peak=\([0-9]*\) .*/\1/p' "$work/mmk.fake" 2>/dev/null || true)
    both=$(sed -n 's/^peak=\([0-9]*\) .*/\1/p' "$work/rel.fake" 2>/dev/null || true)
    if [ -n "$alone" ] && [ -n "$both" ] && [ "$both" -le "$alone" ]; then
        echo "ok   emu-release (device peak $both, the matmul's alone $alone)"
    else
        echo "FAIL emu-release: device peak ${both:-unknown}, the matmul's alone ${alone:-unknown}; $(cat "$work/rel.log")"
        fail=$((fail + 1))
    fi
    # under MPI the ranks on a host go round its devices and divide a
    # shared one's memory: 3 ranks on 2 devices of 100 MB take devices 0,
    # 1, 0, and device 0's two ranks 45% of it each
    mods=$(dirname "$ck")
    if command -v mpirun >/dev/null && [ -e "$mods/libchunkctl-mpi.so" ]; then
        n=$((n + 1))
        mkdir -p "$work/mods"
        ln -sf "$CHUNKCTL_MODULE_DIR/libchunkctl-cuda.so" \
            "$mods/libchunkctl-mpi.so" "$work/mods/"
        rm -f "$work/mpi.fake"
        # (Open MPI keeps memory until exit, which LeakSanitizer would
        # report; the MPI suites suppress it by library)
        CHUNKCTL_MODULE_DIR="$work/mods" CHUNKCTL_CUDA_UNVERIFIED=1 \
            CHUNKCTL_FAKE_CUDA_DEVICES=2 CHUNKCTL_FAKE_CUDA_MEMORY=100000000 \
            CHUNKCTL_FAKE_CUDA_LOG="$work/mpi.fake" \
            ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
            mpirun -q --oversubscribe --allow-run-as-root -n 3 "$ck" svd \
            --verbose --backend cuda "$work/f8.h5:/x" \
            -o "$work/mpi.h5" >"$work/mpi.log" 2>&1 || true
        # (rank 0 alone logs: its share; the emulator's log, each rank's
        # device)
        d0=$(grep -c "cuda: device 0 of 2, 42.9 MiB of its memory .*2 processes on it" \
            "$work/mpi.log" || true)
        used=$(sed -n 's/.* devices=\([0-9,]*\)$/\1/p' "$work/mpi.fake" 2>/dev/null |
            sort | tr '\n' ' ')
        if [ "$d0" = 1 ] && [ "$used" = "0 0 1 " ] &&
            why=$("$py" - "$work" 2>&1 <<'PY'
import sys, h5py, numpy as np
w = sys.argv[1]
a = h5py.File(w + "/f8.h5", "r")["x"][...]
s = h5py.File(w + "/mpi.h5", "r")["S"][...]
ref = np.linalg.svd(a, compute_uv=False)
err = np.abs(s - ref).max() / ref[0]
sys.exit(0 if err <= 1e-10 else "S %.3g relative" % err)
PY
            ); then
            echo "ok   emu-mpi-devices"
        else
            echo "FAIL emu-mpi-devices: devices set ${used:-none}; ${why:-}; $(tr '\n' ' ' <"$work/mpi.log")"
            fail=$((fail + 1))
        fi
    else
        echo "skip emu-mpi-devices: no mpirun or no MPI module beside $ck"
    fi
    echo "skip rowadd, fault kernel: an emulated device runs no device code"
fi
# users' kernels: the row add from its C and CUDA C versions (the CPU runs
# the C one; cuda the CUDA C one, with the device code that awaits its
# first GPU turned on: CHUNKCTL_CUDA_UNVERIFIED=1), both equal to x + y
kpipe() { # kpipe NAME SOURCES ENTRY OUT
    printf '{"inputs": {"x": "%s", "y": "%s"}, "steps": [{"name": "%s", "op": "kernel", "args": ["x", "y"], "source": %s, "entry": "%s"}], "outputs": {"%s": "%s:/kernel"}}\n' \
        "$work/row.h5:/x" "$work/row.h5:/y" "$1" "$2" "$3" "$1" "$4" \
        >"$work/$1.json"
}
if [ "$emulated" = 0 ]; then
    n=$((n + 1))
    kpipe rowadd "[\"$k/rowadd.c\", \"$k/rowadd.cu\"]" rowadd OUT
    for b in cpu cuda; do
        sed "s|OUT|$work/rowadd.$b.h5|" "$work/rowadd.json" >"$work/rowadd.$b.json"
        CHUNKCTL_CUDA_UNVERIFIED=1 "$ck" run --quiet --force --backend "$b" \
            --verbose "$work/rowadd.$b.json" >"$work/rowadd.$b.log" 2>&1 ||
            echo "rowadd ($b) failed: $(tail -1 "$work/rowadd.$b.log")" >>"$work/rowadd.why"
    done
    if [ -f "$work/rowadd.why" ]; then
        echo "FAIL rowadd: $(cat "$work/rowadd.why")"
        fail=$((fail + 1))
    elif ! grep -q "runs rowadd.cu on the cuda device" "$work/rowadd.cuda.log"; then
        echo "FAIL rowadd: the CUDA C version did not run on the device"
        fail=$((fail + 1))
    elif why=$("$py" "$here/compare.py" rowadd "$work/rowadd.cpu.h5" \
        "$work/rowadd.cuda.h5" "$work" 2>&1); then
        echo "ok   rowadd"
    else
        echo "FAIL rowadd: $why"
        fail=$((fail + 1))
    fi
fi
# bad kernels on the device: a compile error (exit 2) and a fault (exit 1),
# each one line naming the step, no output written
cat >"$work/bad.cu" <<'EOF'
#include "chunkctl_kernel.h"
extern "C" __global__ void bad(const chunkctl_array *out,
    const chunkctl_array *args, int nargs, const double *params, int nparams)
{
    ((float *)out->data)[0] = q;
}
EOF
cat >"$work/fault.cu" <<'EOF'
#include "chunkctl_kernel.h"
extern "C" __global__ void fault(const chunkctl_array *out,
    const chunkctl_array *args, int nargs, const double *params, int nparams)
{
    ((float *)0)[threadIdx.x] = 1;
}
EOF
for bad in "bad 2 bad.cu.5.: error: identifier .q. is undefined" \
    "fault 1 kernel step 'fault': the kernel failed on the device for the chunk at"; do
    set -- $bad
    name=$1 code=$2
    shift 2
    [ "$emulated" = 1 ] && [ "$name" = fault ] && continue
    n=$((n + 1))
    kpipe "$name" "\"$work/$name.cu\"" "$name" "$work/$name.h5"
    rc=0
    CHUNKCTL_CUDA_UNVERIFIED=1 "$ck" run --quiet --backend cuda \
        "$work/$name.json" >"$work/$name.log" 2>&1 || rc=$?
    if [ "$rc" = "$code" ] && [ "$(wc -l <"$work/$name.log")" = 1 ] &&
        grep -q "$*" "$work/$name.log" && [ ! -e "$work/$name.h5" ]; then
        echo "ok   $name kernel"
    else
        echo "FAIL $name kernel: exit $rc, $(cat "$work/$name.log")"
        fail=$((fail + 1))
    fi
done


echo "gpu suite: $((n - fail)) of $n cases agree"
[ "$fail" -eq 0 ]
