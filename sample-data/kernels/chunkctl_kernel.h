/*
 * chunkctl_kernel.h - the contract of chunkctl's "kernel" pipeline op
 * (chunkctl-pipeline(5)), for C code and for CUDA C.  chunkctl compiles a
 * kernel's source with this header on its include path; a prebuilt
 * library includes it too.
 *
 * C (any backend; "source": "k.c" or "library": "k.so"): the entry point
 * is called once per chunk of the step's result, on chunkctl's worker
 * threads (several at once: keep no global state):
 *
 *   int ENTRY(chunkctl_array *out, const chunkctl_array *args, int nargs,
 *             const double *params, int nparams);
 *
 * out is the chunk to fill; the output block starts zeroed, so an
 * element the kernel does not write is 0.  Write only inside it: a write
 * just before it or past its end stops the run ("the kernel wrote outside
 * its output block"; no output is written).  args[k] is the k-th array
 * argument's block aligned with it (as dask's map_blocks aligns them), to
 * read, not write; params are the step's numbers in args, in order.
 * Return 0, or anything else to stop the run with that code in the
 * message (no output is written).
 *
 * CUDA C (--backend cuda; "source": "k.cu", compiled with NVRTC for the
 * device's architecture): a kernel launched once per chunk,
 *
 *   extern "C" __global__ void ENTRY(const chunkctl_array *out,
 *                                    const chunkctl_array *args, int nargs,
 *                                    const double *params, int nparams);
 *
 * with the same descriptions, in device memory, whose data pointers are
 * device pointers (the output block starts zeroed there too).  chunkctl
 * launches 1-D blocks of "block" threads (default 256) and enough of them
 * for one thread per element of out, at most 65535 blocks: loop with a
 * grid stride to cover larger chunks.
 */
#ifndef CHUNKCTL_KERNEL_H
#define CHUNKCTL_KERNEL_H

#ifdef __CUDACC_RTC__
/* NVRTC has no C library headers */
typedef long long int64_t;
#else
#include <stdint.h>
#endif

/* dtype codes (chunkctl's own numbering) */
enum {
    CHUNKCTL_BOOL = 1,
    CHUNKCTL_INT8,
    CHUNKCTL_INT16,
    CHUNKCTL_INT32,
    CHUNKCTL_INT64,
    CHUNKCTL_UINT8,
    CHUNKCTL_UINT16,
    CHUNKCTL_UINT32,
    CHUNKCTL_UINT64,
    CHUNKCTL_FLOAT32,
    CHUNKCTL_FLOAT64
};

enum { CHUNKCTL_MAX_DIMS = 32 };

typedef struct chunkctl_array {
    void *data;                            /* the block, C order */
    int dtype;                             /* CHUNKCTL_* */
    int ndim;                              /* the whole array's */
    int64_t shape[CHUNKCTL_MAX_DIMS];      /* of this block */
    int64_t strides[CHUNKCTL_MAX_DIMS];    /* in elements, C order */
    int64_t origin[CHUNKCTL_MAX_DIMS];     /* this block's first element in
                                              the whole array */
    int64_t full_shape[CHUNKCTL_MAX_DIMS]; /* the whole array */
} chunkctl_array;

#endif
