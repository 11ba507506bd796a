/*
 * pipelines/fuse.h - elementwise chains fused into one program each, and
 * the device memory they need: what a backend that runs a chain as one
 * pass over device memory (the CUDA backend: one NVRTC kernel per chain)
 * is handed.  Planning only: it reads a validated plan and says which
 * steps fold into which program; it reads no data.
 *
 * A chain is rooted at an elementwise or astype step whose values leave
 * elementwise code: it is written, printed, or an operand of another kind
 * of step (a reduction, a slice, a mask, ...), or nothing uses it.  Every
 * other elementwise or astype step it reaches through operands folds into
 * it, once per program however often the chain uses it; what else it
 * reaches (an input, a slice, a reduction's result, another chain's root)
 * is an operand the program loads, broadcast as NumPy broadcasts.  A step
 * folded into two chains is computed in each (memory traffic, not
 * arithmetic, is what a chain costs).  A chain too long for one program
 * (CK_EWP_MAX_INS instructions, CK_EWP_MAX_IN operands) is cut: its
 * largest inner step becomes a chain of its own, materialised once and
 * loaded by the rest.
 */
#ifndef CK_FUSE_H
#define CK_FUSE_H

#include "backends/ew_prog.h"
#include "pipelines/plan.h"

typedef struct ck_fused {
    int root;                   /* the step whose values it makes */
    int in_node[CK_EWP_MAX_IN]; /* operand k: the step it loads */
    int nsteps;                 /* steps folded into it, root included */
    ck_ew_prog prog;            /* ndim, operands, instructions */
} ck_fused;

typedef struct ck_fusion {
    int n;
    ck_fused f[CK_MAX_NODES];
    int chain[CK_MAX_NODES]; /* per step: the program rooted there, or -1 */
} ck_fusion;

/* Plans the programs of p's elementwise chains into *out (no allocation;
 * a ck_fusion is large, callers allocate it). */
void ck_fuse_plan(const ck_plan *p, ck_fusion *out);

/* Device bytes that running the chains chunk by chunk needs: per program,
 * its operands' boxes and its result's box for one chunk of the root, in
 * their dtypes, twice (two chunks in flight: one uploading or computing
 * while the other's result comes back), the largest program's need. */
int64_t ck_fuse_device_bytes(const ck_plan *p, const ck_fusion *fz);

#endif
