#!/bin/sh
# tests/gpu/device-run.sh - the whole run on a GPU machine, in one call:
# unpack device-bundle/chunkctl.tar.gz (made here by tests/gpu/bundle.sh),
# list the devices, run the GPU suite (tests/gpu/run.sh) and the GPU
# benchmark (bench/gpu_bench.py, its table for bench/RESULTS-gpu.md) with
# the bundle's chunkctl.  From the checkout's root on the device:
#     sh tests/gpu/device-run.sh
# SCALE=4 and REPS=3 (the defaults here) divide the benchmark's sizes by 4
# and take medians of 3 so that the whole run fits one device call;
# SCALE=1 REPS=5 gives the issues' rows (BENCH=0 skips the benchmark,
# ROWS=... picks rows: see bench/gpu_bench.py).
set -eu
cd "$(dirname "$0")/../.."
dest=${TMPDIR:-/tmp}/chunkctl-device
rm -rf "$dest"
mkdir -p "$dest"
tar xzf device-bundle/chunkctl.tar.gz -C "$dest"
# the bundle's libraries, then the machine's CUDA Toolkit (NVRTC)
cuda=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH="$dest/lib:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export HDF5_PLUGIN_PATH="$dest/plugins"
echo "== libraries the bundle resolves"
ldd "$dest/bin/chunkctl" | grep -c "=> $dest/lib" || true
echo "== devices"
"$dest/bin/chunkctl" devices || true  # the suite says SKIP and why
echo "== gpu suite"
sh tests/gpu/run.sh "$dest/bin/chunkctl"
if [ "${BENCH:-1}" != 0 ]; then
    # the device code the suite has just checked, on for the benchmark's
    # cuda column (without it that column is the CPU beside the device)
    echo "== gpu benchmark (SCALE=${SCALE:=4}, CHUNKCTL_CUDA_UNVERIFIED=${CHUNKCTL_CUDA_UNVERIFIED:=1})"
    CHUNKCTL_CUDA_UNVERIFIED=$CHUNKCTL_CUDA_UNVERIFIED SCALE=$SCALE \
        REPS=${REPS:-3} python3 bench/gpu_bench.py "$dest/bin/chunkctl" \
        "${TMPDIR:-/tmp}/chunkctl-bench"
fi
