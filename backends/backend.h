/*
 * backends/backend.h - the table of compute functions chosen at run time.
 * ops/ calls through a ck_backend so that a CUDA backend can plug in as a
 * loadable module without ops/ or pipelines/ changing.  The CPU backend is
 * the reference and fills every slot; a NULL slot elsewhere means "use the
 * CPU for this step".  Compute slots arrive with the ops that use them.
 */
#ifndef CK_BACKEND_H
#define CK_BACKEND_H

#include "base/ck_err.h"

#define CK_BACKEND_ABI 1 /* bump when a slot is added */

typedef struct ck_be_ctx ck_be_ctx;

typedef struct ck_be_opts {
    int threads; /* 0: all cores */
} ck_be_opts;

typedef struct ck_backend {
    const char *name; /* "cpu", "cuda" */
    int abi;
    ck_code (*open)(const ck_be_opts *o, ck_be_ctx **ctx, ck_err *err);
    void (*close)(ck_be_ctx *ctx);
} ck_backend;

extern const ck_backend ck_backend_cpu;

/* Finds a backend by name ("cpu").  CK_EUSAGE naming the known ones. */
ck_code ck_be_find(const char *name, const ck_backend **out, ck_err *err);

#endif
