/*
 * ops/kernel.h - user kernels for the "kernel" pipeline op: C source
 * compiled at run time with the system compiler into a shared object
 * (cached on disk, keyed by the source, the files it includes, the
 * contract header, the compiler and its flags; each entry sealed by its
 * size and hash, and compiled again when it does not match), or a prebuilt
 * shared library, loaded with dlopen and called once per chunk on the worker
 * threads.  The contract is sample-data/kernels/chunkctl_kernel.h, which
 * chunkctl carries inside itself and puts on the compiler's include path.
 */
#ifndef CK_OPS_KERNEL_H
#define CK_OPS_KERNEL_H

#include <stdint.h>

#include "backends/backend.h"
#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_grid.h"

typedef struct ck_kernel ck_kernel;

/* One argument or the result as the kernel sees it (chunkctl_array). */
typedef ck_be_array ck_kernel_array;

/* Compiles C source file 'source' (or, with 'library', loads that
 * prebuilt shared object) and finds symbol 'entry'.  CK_EUSAGE with the
 * compiler's first error line ("rowadd.c:12:5: error: ..."), or naming
 * the missing file or entry point; CK_EIO when the compiler cannot run.
 * 'what' starts each message ("p.json: steps[3]"). */
ck_code ck_kernel_open(const char *what, const char *source,
                       const char *library, const char *entry, ck_kernel **out,
                       ck_err *err);
void ck_kernel_close(ck_kernel *k);

/* Calls the entry point: the kernel's own return code, 0 on success. */
int ck_kernel_call(const ck_kernel *k, ck_kernel_array *out,
                   const ck_kernel_array *args, int nargs, const double *params,
                   int nparams);

/* The contract's text (sample-data/kernels/chunkctl_kernel.h), which a
 * CUDA C kernel is compiled with. */
const char *ck_kernel_contract(void);

/* Whether the last ck_kernel_open compiled (0: found in the cache). */
int ck_kernel_compiled(const ck_kernel *k);

/* What the kernel computes with, as a hash: for a source, its text, the
 * files it includes, the contract, the compiler and its flags (the cache
 * key); for a library, its bytes.  A resumed run must have the same. */
uint64_t ck_kernel_key(const ck_kernel *k);

#endif
