/*
 * backends/cuda/cuda_impl.h - the CUDA module's context, shared by its
 * files (cuda.c: opening the device and the table; launch.c: users'
 * kernels; blas.c: dense linear algebra).  Private to backends/cuda/.
 */
#ifndef CK_CUDA_IMPL_H
#define CK_CUDA_IMPL_H

#include <pthread.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#include "backends/backend.h"

/* How the svd slot factors (CHUNKCTL_CUDA_SVD, a knob for measuring them
 * on a GPU): cuSOLVER's gesvd, its Jacobi gesvdj, or LAPACK on the host
 * (the slot left to the CPU: cuda.c). */
enum { CK_CUDA_SVD_GESVD, CK_CUDA_SVD_GESVDJ, CK_CUDA_SVD_HOST };

struct ck_be_ctx {
    int device;
    int arch;            /* compute capability, major * 10 + minor */
    cudaStream_t stream; /* launches and their copies, in order */
    /* users' kernels run one at a time (the lock), through one device
     * buffer grown to the largest launch's needs */
    pthread_mutex_t lock;
    void *scratch;
    size_t scratch_len;
    int broken;          /* a launch failed: the context is not used again */
    void *blas, *solver; /* cuBLAS and cuSOLVER handles, made on first use
                            (blas.c) */
    /* the device memory this context may hold at once (--gpu-memory, at
       most what was free when it opened; budget_given: the user's), and
       what it holds: kept operands, calls' buffers, the kernel scratch */
    size_t budget, used;
    int budget_given;
    int share;      /* processes that divide the device's memory (MPI ranks) */
    int svd_method; /* CK_CUDA_SVD_* (CHUNKCTL_CUDA_SVD) */
    /* gemm operands kept on the device by their key (blas.c), up to
       kept_cap bytes (half the budget, halved when a call found no room
       beside them) */
    struct ck_cuda_kept *kept;
    int nkept, cap_kept;
    int no_room; /* the last call's allocation found no room (blas.c) */
    size_t kept_bytes, kept_cap;
};

/* Whether bytes more fit in c's budget. */
static inline int ck_cuda_fits(const ck_be_ctx *c, size_t bytes)
{
    return bytes <= c->budget && c->used <= c->budget - bytes;
}

/* CK_ENOMEM for 'what', which needed 'need' bytes of device memory at
 * once: beyond the budget (it names --gpu-memory) or beyond what the
 * device had. */
ck_code ck_cuda_no_room(const ck_be_ctx *c, const char *what, size_t need,
                        ck_err *err);

/* CK_ENOMEM for 'what', for which the device itself had no room for
 * 'more' bytes beside what the context holds. */
ck_code ck_cuda_no_device_room(const ck_be_ctx *c, const char *what,
                               size_t more, ck_err *err);

/* Lets the kept operands go, after the work queued on them (blas.c). */
void ck_cuda_release(ck_be_ctx *c);

/* CK_EDEVICE for runtime error e during 'what': the runtime's words and
 * the error's name, with the advice to use the CPU. */
ck_code ck_cuda_fail(cudaError_t e, const char *what, ck_err *err);

/* Whether e leaves the context unusable (a fault in a kernel: an illegal
 * address, a trap, a launch failure), so that nothing runs on it again. */
int ck_cuda_sticky(cudaError_t e);

ck_code ck_cuda_kernel_load(ck_be_ctx *ctx, const ck_kernel_src *s,
                            ck_be_kernel **out, ck_err *err);
ck_code ck_cuda_kernel_run(ck_be_ctx *ctx, const ck_kernel_run_args *a,
                           ck_err *err);
void ck_cuda_kernel_free(ck_be_ctx *ctx, ck_be_kernel *k);

/* The dense linear algebra slots (blas.c), and the handles' release. */
ck_code ck_cuda_gemm(ck_be_ctx *c, const ck_gemm_args *a, ck_err *err);
ck_code ck_cuda_syrk(ck_be_ctx *c, const ck_syrk_args *a, ck_err *err);
ck_code ck_cuda_qr(ck_be_ctx *c, const ck_qr_args *a, ck_err *err);
ck_code ck_cuda_svd(ck_be_ctx *c, const ck_svd_args *a, ck_err *err);
ck_code ck_cuda_posv(ck_be_ctx *c, ck_posv_args *a, ck_err *err);
void ck_cuda_blas_close(ck_be_ctx *c);

#endif
