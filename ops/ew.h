/*
 * ops/ew.h - elementwise operations with NumPy semantics.
 * The executor (pipelines/) converts operands to the op's compute dtype and
 * lays them out as equal-length runs (a scalar or a broadcast operand has
 * stride 0); the kernels run one run at a time.  Type promotion follows
 * NumPy 1.24 for arrays and Python scalars (value-based for scalars: an
 * int32 array plus 1 stays int32, plus 1.5 becomes float64).
 */
#ifndef CK_OPS_EW_H
#define CK_OPS_EW_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "backends/backend.h"

/* "add", "less_equal", ...: the pipeline and numpy name.  NULL if op is
 * out of range. */
const char *ck_ew_name(ck_ew_op op);
/* Finds an op by name; 0 if there is none. */
int ck_ew_lookup(const char *name, ck_ew_op *op);
/* 1, 2 or 3. */
int ck_ew_arity(ck_ew_op op);

/* One operand as the type rules see it. */
typedef struct ck_ew_operand {
    ck_dtype dtype; /* of the array, or of the scalar's value */
    int is_scalar;  /* a JSON number: NumPy's Python-scalar rules */
    double value;   /* the scalar, when is_scalar */
} ck_ew_operand;

/* The dtype operands are converted to before the kernel runs (for where:
 * of a and b; cond is always bool) and the dtype of the result.
 * CK_EUSAGE naming the op when the types do not go together (e.g. a
 * bitwise op on floats; of the ops above, negative and subtract refuse
 * bool, as NumPy does). */
ck_code ck_ew_types(ck_ew_op op, int n, const ck_ew_operand *in,
                    ck_dtype *compute, ck_dtype *result, ck_err *err);

/* Runs one run through the backend (its ew slot, or the CPU's when the
 * slot is NULL). */
ck_code ck_op_ew(const ck_be *be, const ck_ew_args *a, ck_err *err);

#endif
