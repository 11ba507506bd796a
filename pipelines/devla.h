/*
 * pipelines/devla.h - how the linear algebra steps (svd, matmul, glm_fit,
 * glm_predict) run on a device with a given memory budget (--gpu-memory):
 * whether their operands are uploaded once and stay there (resident) or
 * stream through in blocks of whole chunks, two in flight (block i + 1
 * uploads while block i computes), how large those blocks are, how often
 * the input crosses to the device, and the device memory that takes.
 * Planning only, like pipelines/fuse.h: it reads a validated plan and no
 * data.  `chunkctl plan --backend cuda` prints it; the CUDA backend's
 * executor is to follow it (issue 12).
 *
 * The choices, per step (elements of 8 bytes, 4 for a float32 matmul):
 *  - svd, exact: resident when L (A, or A^T for a wide A), the factors of
 *    R and the QR's workspace fit: one upload, the QR, the SVD of R and
 *    U = Q U_R on the device.  Otherwise TSQR: each block's QR on the
 *    device, folded into one R there, and (when U, or Vt of a wide A, is
 *    an output) a second pass U = L V S^-1 block by block.
 *  - svd, randomized: resident when L, its sketch y (m x l) and the n x l
 *    panels fit: power_iters + 1 passes over device memory; otherwise as
 *    many passes of row blocks, y's rows coming back with each block.
 *  - matmul: both operands resident when they and two result tiles fit;
 *    else the one that fits stays (b's column bands are reused by every
 *    tile row, a's row bands by every tile column) and the other's bands
 *    stream, each uploaded once; else bands of both per tile, k split so
 *    that they fit (each operand uploaded once per tile row or column).
 *  - glm_fit: X and y resident, every iteration over device memory; or
 *    row blocks streamed once per iteration.
 *  - glm_predict: X's row chunks streamed once.
 */
#ifndef CK_DEVLA_H
#define CK_DEVLA_H

#include <stdint.h>
#include <stdio.h>

#include "base/ck_err.h"
#include "pipelines/plan.h"

typedef enum ck_devla_mode {
    CK_DEVLA_RESIDENT, /* operands uploaded once */
    CK_DEVLA_CACHE_A,  /* matmul: a stays, b's bands stream */
    CK_DEVLA_CACHE_B,  /* matmul: b stays, a's bands stream */
    CK_DEVLA_STREAMED  /* blocks of rows (matmul: bands of both) */
} ck_devla_mode;

/* Blocks streamed to the device are at most this large: two in flight of
 * this size keep a PCIe link busy; larger ones only take memory. */
enum { CK_DEVLA_BLOCK_MAX = 256 << 20 };

typedef struct ck_devla {
    int node;               /* the step */
    ck_devla_mode mode;     /* the mode the budget allows */
    int64_t block_rows;     /* streamed: rows per block (whole chunks); matmul:
                               the k extent of a band pair */
    int64_t blocks;         /* blocks per pass */
    int passes;             /* reads of the input from the host; -1: one per
                               solver iteration (glm_fit streamed) */
    int64_t device_bytes;   /* peak device memory in this mode */
    int64_t need_bytes;     /* the least budget any mode runs in */
    int64_t upload_bytes;   /* host to device over the run (glm_fit
                               streamed: per iteration) */
    int64_t download_bytes; /* device to host: the results */
} ck_devla;

/* Whether result 'part' of step i (an svd's U or Vt) is needed: written,
 * or read by a needed step (found walking the steps from last to first,
 * in the plan's order). */
int ck_devla_part_used(const ck_plan *p, int i, int part);

/* 1 when step i of p is device linear algebra, with *out planned for
 * 'budget' bytes of device memory; 0 for every other step. out->mode is
 * meaningful only when out->need_bytes <= budget. */
int ck_devla_plan(const ck_plan *p, int i, int64_t budget, ck_devla *out);

/* CK_ENOMEM naming the first linear algebra step of p that does not fit
 * in budget bytes of device memory, and what it needs ("svd s: needs
 * 80.2 MiB of device memory for row blocks of 1000 rows, --gpu-memory
 * gives 64.0 MiB"); CK_OK when they all fit. */
ck_code ck_devla_check(const ck_plan *p, int64_t budget, ck_err *err);

/* One line per linear algebra step: its mode, blocks, passes, device
 * bytes and traffic, as `chunkctl plan` shows them. */
void ck_devla_print(const ck_plan *p, int64_t budget, FILE *f);

#endif
