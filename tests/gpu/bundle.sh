#!/bin/sh
# tests/gpu/bundle.sh [BUILD] - pack what a GPU machine without our Debian
# packages needs to run chunkctl: the binary, the CUDA module, the HDF5
# plugins and every shared library ldd lists outside glibc, into
# device-bundle/chunkctl.tar.gz (git ignores it).  Then, on the device
# (the `run` tool, carrying device-bundle):
#     sh tests/gpu/device-run.sh
set -eu
cd "$(dirname "$0")/../.."
build=${1:-build}
out=device-bundle
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
[ -f "$build/cli/libchunkctl-cuda.so" ] ||
    { echo "bundle: no $build/cli/libchunkctl-cuda.so (CUDA Toolkit?)" >&2; exit 1; }
mkdir -p "$stage/bin" "$stage/lib" "$out"
cp "$build/cli/chunkctl" "$build/cli/libchunkctl-cuda.so" "$stage/bin/"
[ -d "$build/plugins" ] && cp -r "$build/plugins" "$stage/"
# libraries outside glibc (the device has its own libc, libm, libdl, ...)
for f in "$stage"/bin/* "$stage"/plugins/*; do
    [ -f "$f" ] || continue
    ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
    case $(basename "$lib") in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
    esac
done
# NVRTC, which the module loads with dlopen (so ldd does not list it), is
# left out by default: the GPU machine's CUDA Toolkit has it, and it would
# take the bundle past the 64 MiB the device tool carries.  BUNDLE_NVRTC=1
# puts it in.
if [ "${BUNDLE_NVRTC:-0}" = 1 ]; then
    cuda=${CUDA_HOME:-/usr/local/cuda}
    for f in "$cuda"/lib64/libnvrtc.so.* "$cuda"/lib64/libnvrtc-builtins.so.*; do
        [ -f "$f" ] && cp -L "$f" "$stage/lib/"
    done
fi
tar czf "$out/chunkctl.tar.gz" -C "$stage" .
ls -l "$out/chunkctl.tar.gz"
