/*
 * backends/ew_prog.h - a fused elementwise chain as one program, for a
 * backend that runs a whole chain in one pass over device memory (the CUDA
 * backend compiles each to one kernel with NVRTC).  Backend-neutral: the
 * executor (pipelines/) describes the chain, the backend decides how to
 * run it.  Semantics are those of backends/backend.h's ew slot, op by op,
 * with ops/ew.h's type rules already applied: each op's operands are in
 * its compute dtype, converted by explicit CAST instructions, and
 * conversions follow ck_dtype_convert (NaN to an integer is 0, out-of-range
 * floats saturate, nonzero is true).
 */
#ifndef CK_EW_PROG_H
#define CK_EW_PROG_H

#include "backends/backend.h"

enum {
    CK_EWP_MAX_INS = 64, /* instructions */
    CK_EWP_MAX_IN = 16   /* array operands */
};

typedef enum ck_ewp_kind {
    CK_EWP_LOAD,  /* element of operand 'input', in its dtype */
    CK_EWP_CONST, /* 'value', in dtype */
    CK_EWP_CAST,  /* arg[0] converted to dtype */
    CK_EWP_OP     /* op on arg[0..arity-1] (all in 'compute'), in dtype */
} ck_ewp_kind;

typedef struct ck_ewp_ins {
    ck_ewp_kind kind;
    ck_dtype dtype;   /* of the value this instruction makes */
    int input;        /* LOAD */
    double value;     /* CONST (integers exact up to 2^53) */
    ck_ew_op op;      /* OP */
    ck_dtype compute; /* OP: the dtype of its operands (where: of a and b) */
    int arg[3];       /* CAST, OP: earlier instructions */
} ck_ewp_ins;

/* The program computes ins[result] for every element of a C-order box of
 * 'ndim' dimensions (at most CK_MAX_DIMS) and stores it (dtype
 * ins[result].dtype).  Operand k has dtype in[k] and is read with per-dimension
 * element strides (0 where it is broadcast) passed at run time; contiguous[k] =
 * 1 promises that its strides are the box's own C-order strides, so it is read
 * at the linear index with no index arithmetic. */
typedef struct ck_ew_prog {
    int ndim;
    int nin;
    ck_dtype in[CK_EWP_MAX_IN];
    int contiguous[CK_EWP_MAX_IN];
    int n;
    ck_ewp_ins ins[CK_EWP_MAX_INS];
    int result;
} ck_ew_prog;

#endif
