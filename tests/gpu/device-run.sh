#!/bin/sh
# tests/gpu/device-run.sh - the whole run on a GPU machine, in one call:
# unpack device-bundle/chunkctl.tar.gz (made here by tests/gpu/bundle.sh),
# list the devices and run the GPU suite (tests/gpu/run.sh) with the
# bundle's chunkctl.  From the checkout's root on the device:
#     sh tests/gpu/device-run.sh
# The GPU benchmark joins it when the device kernels land (issue 11).
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
