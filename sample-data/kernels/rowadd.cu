/*
 * rowadd.cu - the seed's custom kernel as CUDA C: z = x + y for an M x N
 * float32 x and a float32 y of length N, one thread per element of the
 * chunk.  For the CUDA backend's kernel op (issue 12: compiled with NVRTC;
 * the launch contract is being built).
 */
extern "C" __global__ void rowadd(const float *x, const float *y, float *z,
                                  long long rows, long long cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;

    if (i < rows * cols)
        z[i] = x[i] + y[i % cols];
}
