/*
 * rowadd.cu - the seed's custom kernel as CUDA C, for the CUDA backend:
 * z = x + y for an M x N float32 x and a float32 y of length N, chunk by
 * chunk, one thread per element (a grid-stride loop covers the rest).
 * chunkctl hands each launch the block of y that matches the columns of
 * x's block, as rowadd.c gets it.  See chunkctl-pipeline(5), "kernel".
 */
#include "chunkctl_kernel.h"

extern "C" __global__ void rowadd(const chunkctl_array *out,
                                  const chunkctl_array *args, int nargs,
                                  const double *params, int nparams)
{
    const float *x = (const float *)args[0].data;
    const float *y = (const float *)args[1].data;
    float *z = (float *)out->data;
    int64_t cols = out->shape[1], n = out->shape[0] * cols;

    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        z[i] = x[i] + y[i % cols];
}
