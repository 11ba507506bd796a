/*
 * pipelines/exec.h - runs a validated plan, out of core (chunkctl run).
 * Steps are evaluated by pulling chunk-sized boxes through the graph:
 * a chain of elementwise steps is computed box by box in one pass (fused),
 * never materialised whole.  Reductions and histograms fold their operand
 * chunk by chunk and keep only their (small) result in memory; results are
 * combined in chunk order, so output is bit-identical for any --threads.
 */
#ifndef CK_EXEC_H
#define CK_EXEC_H

#include <stdint.h>

#include "base/ck_err.h"
#include "base/ck_progress.h"
#include "io/codec.h"
#include "pipelines/plan.h"

typedef struct ck_exec_opts {
    int64_t memory;
    int threads;
    int force;
    const char *backend; /* "auto", "cpu", "cuda"; NULL: the plan's */
    ck_progress *progress;
    int whole;           /* print any size (ck_exec_values) */
    const char *cmdline; /* for outputs' history (NULL: "chunkctl run") */
    int has_codec;       /* outputs' compression where they set none */
    ck_codec_spec codec; /* (0: uncompressed) */
    int zarr_format;     /* Zarr outputs: 2 or 3 (0: 2) */
    int shards_ndim;     /* Zarr v3 outputs: shard shape; 0 none */
    int64_t shards[CK_MAX_DIMS];
    int resume;         /* --resume: take over a killed run's written chunks */
    int64_t gpu_memory; /* a device backend's budget (--gpu-memory); 0:
                           90% of the device's free memory */
} ck_exec_opts;

/* The values a glm_fit reports besides its coefficients: iterations,
 * converged, objective, deviance, llf, aic (then any standard errors). */
#define CK_GLM_INFO 6

/* A result the pipeline asked to "print", handed back to the caller. */
typedef struct ck_result {
    char name[CK_NAME_MAX]; /* the step's */
    int is_hist;
    int array; /* an array step's values, printed as NumPy prints them
                  (ck_plan_prints_lines: reductions, histograms and
                  svd/glm_fit vectors keep their one value per line) */
    ck_dtype dtype;
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    void *data;    /* C order; owned */
    double *edges; /* histograms: shape[0] + 1 edges; owned */
    /* a glm_fit step's coef: its fit, CK_GLM_INFO values (iterations,
     * converged, objective, deviance, llf, aic), and with std_errors the
     * nse (p + fit_intercept) standard errors of the coefficients then the
     * intercept, NaN when there are none */
    int has_fit;
    double fit[CK_GLM_INFO];
    int64_t nse;
    double *se; /* owned */
} ck_result;

typedef struct ck_results {
    int n;
    ck_result v[CK_MAX_NODES];
} ck_results;

/* Runs the plan; results of the steps named in "print" go to *res (NULL
 * to drop them).  ck_results_release frees them. */
ck_code ck_exec_run(const ck_plan *p, const ck_exec_opts *o, ck_results *res,
                    ck_err *err);
void ck_results_release(ck_results *res);

/* The --memory of the values a plan's parser computes (p->memory, or the
 * default when 0). */
int64_t ck_plan_memory(const ck_plan *p);

/* Runs p's nodes 0 .. the highest of nodes[0..k-1] (the steps they
 * need) and hands back each of those k nodes' values, C order, its dtype,
 * in malloc'd out[j]: how the parser learns what a step needs from the
 * data before the plan is complete (the indices a take or compress step
 * selects, the statistics of bins given by name), one pass each. */
ck_code ck_exec_values(const ck_plan *p, int k, const int *nodes, void **out,
                       ck_err *err);

/* Before a run: 1 with *name and *value when the compute libraries would
 * run better if this process started again with that environment variable
 * set (ck_be_restart_env: never when the user has set it), 0 otherwise.
 * Starting again is the caller's business. */
int ck_exec_restart_env(const char **name, const char **value);

/* The backend a run of p would use: want ("auto", "cpu", "cuda"; NULL:
 * p's own "backend") as ck_be_resolve chooses, except that auto takes the
 * CPU when no step of p runs on a GPU.  *on gets "cpu" or "cuda"; why, for
 * auto, the reason (why_n bytes).  Errors as ck_be_resolve's. */
ck_code ck_exec_backend(const ck_plan *p, const char *want, const char **on,
                        char *why, size_t why_n, ck_err *err);

/* A pass folding step i of p (a reduction, histogram or mask) alone: the
 * chunks (or a mask's boxes) of its operand in *total, and of those the
 * ones rank takes of nranks (a contiguous range of its tasks), as
 * ck_exec_run divides them.  0, or -1 where the operand has no grid. */
int ck_exec_fold_chunks(const ck_plan *p, int i, int rank, int nranks,
                        int64_t *total, int64_t *mine);

#endif
