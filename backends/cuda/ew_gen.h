/*
 * backends/cuda/ew_gen.h - CUDA source for a fused elementwise chain
 * (backends/ew_prog.h): one kernel, one pass over device memory, compiled
 * at run time with NVRTC.  Pure text generation: no CUDA library is
 * needed to call it, so it is tested where there is no GPU.
 */
#ifndef CK_CUDA_EW_GEN_H
#define CK_CUDA_EW_GEN_H

#include "backends/ew_prog.h"

/* The kernel's name in the source. */
#define CK_CUDA_EW_KERNEL "ck_ew"

/* The run-time arguments of the kernel ck_cuda_ew_source writes, in
 * order: a struct of the box (n, shape[ndim], then stride[nin][ndim], all
 * long long, elements), the operands' device pointers (in[0..nin-1]), the
 * output's, and an int* error flag that a failing element sets to 1
 * (integers to negative integer powers, which NumPy refuses). */

/* Writes the CUDA C++ source for p to *src (malloc'd; the caller frees
 * it).  CK_EINTERNAL when p is malformed (an instruction naming a later
 * one, an op the CPU backend has no kernel for in that dtype); CK_ENOMEM. */
ck_code ck_cuda_ew_source(const ck_ew_prog *p, char **src, ck_err *err);

#endif
