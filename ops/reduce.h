/*
 * ops/reduce.h - reductions with NumPy semantics, computed out of core.
 * A reduction is a fold: each block is accumulated into partial states (the
 * backend's reduce slot), partial states of neighbouring blocks are
 * combined in chunk order (so results do not depend on the thread count),
 * and the states are finalised into the result.  Sums are compensated
 * (Neumaier) in float64, so float64 results agree with NumPy's pairwise
 * sums to about 1e-12 relative; variances use Chan's parallel update.
 */
#ifndef CK_OPS_REDUCE_H
#define CK_OPS_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/ck_dtype.h"
#include "base/ck_err.h"

/* "sum", "nanstd", ...  NULL if out of range. */
const char *ck_red_name(ck_red_op op);
int ck_red_lookup(const char *name, ck_red_op *op);

/* NumPy's result dtype: sum/prod of bool and signed ints give int64,
 * unsigned give uint64, floats keep theirs; mean/var/std of ints give
 * float64; min/max keep the input dtype; argmin/argmax and count_nonzero
 * give int64; any/all give bool. */
ck_dtype ck_red_result_dtype(ck_red_op op, ck_dtype in);

/* Bytes of one partial state (the same for every op and dtype). */
size_t ck_red_state_size(void);
/* Sets n states to the empty fold. */
void ck_red_init(ck_red_op op, void *state, size_t n);
/* dst[i] = dst[i] followed by src[i], for n states ("followed by": dst
 * covers earlier elements in C order than src, which argmin/argmax ties
 * and compensated sums depend on). */
void ck_red_combine(ck_red_op op, void *dst, const void *src, size_t n);
/* Writes n results of dtype out (ck_red_result_dtype) from n states.
 * ddof for var/std.  *empty is set to 1 when a mean/var/std had no
 * elements (the result is NaN, and NumPy warns); min/max/argmin/argmax of
 * nothing, and nanargmin/nanargmax of only NaN, are errors (CK_EUSAGE, as
 * NumPy raises). */
ck_code ck_red_finalize(ck_red_op op, double ddof, const void *state, size_t n,
                        ck_dtype out, void *result, int *empty, ck_err *err);

/* var, std and their nan- variants keep, besides their own, the state of
 * the matching mean (the values' compensated sum and count), so that a mean
 * over the same elements needs no fold of its own: 1 if op 'mean' can be
 * finalised from the states of op 'var' (mean with var or std, nanmean with
 * nanvar or nanstd). */
int ck_red_mean_of(ck_red_op mean, ck_red_op var);

/* Accumulates one block through the backend. */
ck_code ck_op_reduce(const ck_be *be, const ck_red_args *a, ck_err *err);

#endif
