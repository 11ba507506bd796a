/*
 * backends/cuda/nvrtc.h - kernels compiled at run time: CUDA source to a
 * cubin with NVRTC (loaded with dlopen, so the module loads without it),
 * cached in the process and on disk, the way CuPy caches its kernels.
 * Needs no GPU: the architecture is given.
 */
#ifndef CK_CUDA_NVRTC_H
#define CK_CUDA_NVRTC_H

#include <stddef.h>

#include "base/ck_err.h"

/* The cubin for CUDA source src on compute capability arch (major * 10 +
 * minor, e.g. 90 for an H100).  *image stays valid until the process
 * ends; *len is its size.  Looked up, in order: this process's table,
 * then the disk cache (a file named by a hash of the source, the
 * architecture and NVRTC's version, in $CHUNKCTL_CACHE_DIR, else
 * $XDG_CACHE_HOME/chunkctl/kernels, else ~/.cache/chunkctl/kernels; a
 * file that is not an ELF image is ignored and replaced), then NVRTC.  A
 * cache that cannot be written is skipped, not an error.  CK_EDEVICE
 * "no NVRTC: <loader's reason>" or "kernel does not compile: <log's first
 * line>" (the latter is a chunkctl bug: the source is generated). */
ck_code ck_cuda_image(const char *src, int arch, const void **image,
                      size_t *len, ck_err *err);

/* A user's CUDA kernel (the kernel op): source text src of file 'file'
 * (its base name appears in messages), with header (the contract's text,
 * sample-data/kernels/chunkctl_kernel.h) as "chunkctl_kernel.h", compiled
 * for sm_arch with -std=c++17 -lineinfo and cached as above (the key adds
 * the name, the header and the options); then checked for a kernel named
 * kernel.  *compiled: 1 when NVRTC ran, 0 when a cache had it.  CK_EUSAGE,
 * starting with what ("p.json: steps[2]"), for a compile error (its first
 * error and the source line: "rowadd.cu(12): error: identifier \"q\" is
 * undefined: z[i] = q;") or a missing entry ("rowadd.cu has no kernel
 * 'foo' (an extern \"C\" __global__ function)"); CK_EDEVICE when NVRTC
 * is missing. */
ck_code ck_cuda_user_image(const char *what, const char *file, const char *src,
                           const char *header, const char *kernel, int arch,
                           const void **image, size_t *len, int *compiled,
                           ck_err *err);

/* Forgets this process's table (the disk cache stays): for tests. */
void ck_cuda_image_forget(void);

#endif
