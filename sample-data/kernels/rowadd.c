/*
 * rowadd.c - the seed's custom kernel for chunkctl's CPU backend: z = x + y
 * for an M x N float32 x and a float32 y of length N, chunk by chunk.
 * chunkctl hands each call the block of y that matches the columns of
 * x's block.  See chunkctl-pipeline(5), "kernel".
 */
#include "chunkctl_kernel.h"

int rowadd(chunkctl_array *out, const chunkctl_array *args, int nargs,
           const double *params, int nparams)
{
    const float *x = args[0].data, *y = args[1].data;
    float *z = out->data;
    int64_t rows = out->shape[0], cols = out->shape[1];

    (void)params, (void)nparams;
    if (nargs != 2 || args[0].dtype != CHUNKCTL_FLOAT32 ||
        args[1].dtype != CHUNKCTL_FLOAT32)
        return 1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            z[i * cols + j] = x[i * cols + j] + y[j];
    return 0;
}
