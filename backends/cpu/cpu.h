/*
 * backends/cpu/cpu.h - the CPU backend's kernels, one file per family
 * (ew.c, reduce.c, hist.c); cpu.c puts them in the table.  Private to
 * backends/cpu.
 */
#ifndef CK_CPU_H
#define CK_CPU_H

#include "backends/backend.h"

ck_code ck_cpu_ew(ck_be_ctx *ctx, const ck_ew_args *a, ck_err *err);
ck_code ck_cpu_reduce(ck_be_ctx *ctx, const ck_red_args *a, ck_err *err);
ck_code ck_cpu_hist(ck_be_ctx *ctx, const ck_hist_args *a, ck_err *err);

#endif
