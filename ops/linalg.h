/*
 * ops/linalg.h - dense linear algebra on blocks in memory, for the
 * out-of-core SVD, matmul and GLM drivers in pipelines/.  The BLAS and
 * LAPACK work goes through the backend table (backends/backend.h); what is
 * here is the algorithm around it: the streaming TSQR update, the SVD of
 * its R factor and the sign convention, the randomized range finder's
 * small steps.  Matrices are float64; "col-major" and "row-major" say
 * which layout each function takes.
 */
#ifndef CK_OPS_LINALG_H
#define CK_OPS_LINALG_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/ck_err.h"

/* Backend slots, with the CPU fallback for NULL ones. */
ck_code ck_op_gemm(const ck_be *be, const ck_gemm_args *a, ck_err *err);
ck_code ck_op_syrk(const ck_be *be, const ck_syrk_args *a, ck_err *err);
ck_code ck_op_qr(const ck_be *be, const ck_qr_args *a, ck_err *err);
ck_code ck_op_svd(const ck_be *be, const ck_svd_args *a, ck_err *err);
ck_code ck_op_posv(const ck_be *be, ck_posv_args *a, ck_err *err);

#endif
