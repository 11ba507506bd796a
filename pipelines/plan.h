/*
 * pipelines/plan.h - a pipeline file turned into a validated plan.
 * A pipeline names inputs (arrays in stores), steps (ops on inputs and on
 * other steps, by name) and outputs (where steps are written).  Parsing
 * checks everything that can be checked without reading data: names,
 * arities, cycles, shapes under broadcasting, axes, dtypes, output paths;
 * each error names its place in the file ("steps[2].axis: ...").
 * See man/chunkctl-pipeline.5 for the format.
 */
#ifndef CK_PLAN_H
#define CK_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "backends/backend.h"
#include "ops/glm.h"
#include "base/ck_dtype.h"
#include "base/ck_err.h"
#include "base/ck_grid.h"
#include "io/array.h"

typedef enum ck_node_kind {
    CK_NODE_INPUT,     /* an array in a store */
    CK_NODE_EW,        /* elementwise: ops/ew.h */
    CK_NODE_ASTYPE,    /* dtype conversion */
    CK_NODE_REDUCE,    /* ops/reduce.h; result held in memory */
    CK_NODE_HIST,      /* ops/hist.h; result (counts) held in memory */
    CK_NODE_SLICE,     /* start/stop/step per axis; an integer drops the axis */
    CK_NODE_TRANSPOSE, /* permute axes */
    CK_NODE_RESHAPE,   /* C order, any shape of the same size */
    CK_NODE_RECHUNK,   /* the operand, streamed in other chunks */
    CK_NODE_CONCAT,    /* concatenate along axis (stack: a new axis) */
    CK_NODE_RANDOM,    /* a source: pipelines/gen.h's generator */
    CK_NODE_MASK,      /* x[cond]: 1-D, its length known after the run;
                          held in memory */
    CK_NODE_HIST2D,    /* numpy.histogram2d; counts held in memory */
    CK_NODE_MATMUL,    /* a @ b of 2-D arrays, box by box through BLAS */
    CK_NODE_SVD,       /* its results are CK_NODE_PART nodes "d.U", "d.S",
                          "d.Vt"; the small ones are held in memory */
    CK_NODE_GLM,       /* glm_fit; results "m.coef", "m.intercept" */
    CK_NODE_PART,      /* one result of an svd or glm_fit step */
    CK_NODE_PREDICT,   /* glm_predict: the mean response, row by row */
    CK_NODE_STENCIL,   /* convolve, correlate, uniform_filter,
                          gaussian_filter, gradient, diff: each box read
                          with the halo it needs (op_stencil.c) */
    CK_NODE_SCAN,      /* cumsum, cumprod: carries passed between chunks
                          along the axis (op_scan.c) */
    CK_NODE_QUANTILE,  /* quantile, percentile, median and their nan*
                          forms, exact; held in memory (op_quantile.c) */
    CK_NODE_COARSEN,   /* block reductions over non-overlapping windows
                          (op_coarsen.c) */
    CK_NODE_COUNT,     /* unique, bincount: 1-D, length known after the
                          run; held in memory (op_count.c) */
    CK_NODE_TAKE,      /* take, compress: chosen indices along one axis
                          (op_index.c) */
    CK_NODE_ISIN,      /* isin: membership in a list of values */
    CK_NODE_BROADCAST, /* broadcast_to a given shape */
    CK_NODE_INDICES,   /* argwhere, nonzero, flatnonzero: indices found
                          when the plan is made, held in idx (op_index.c) */
    CK_NODE_KERNEL,    /* user code per chunk (op_kernel.c) */
    CK_NODE_CF,        /* an input's values CF-decoded: _FillValue and
                          missing_value as NaN, scale_factor/add_offset
                          applied (pipelines/cf.c) */
    CK_NODE_CONTRACT,  /* tensordot, einsum of two arrays: gemm per box
                          (op_contract.c) */
} ck_node_kind;

/* Which result of an svd or glm_fit step a CK_NODE_PART node is. */
enum {
    CK_PART_U,
    CK_PART_S,
    CK_PART_VT,
    CK_PART_COEF,
    CK_PART_INTERCEPT,
    CK_PART_COUNTS, /* unique: "u.counts" (op_count.c) */
};

enum { CK_NAME_MAX = 64, CK_MAX_NODES = 256, CK_MAX_ARGS = 16 };
enum { CK_CF_MAX_MISSING = 16 }; /* missing_value entries decoded */

typedef struct ck_node {
    char name[CK_NAME_MAX];
    char where[48]; /* "inputs.x", "steps[2]" */
    char op[32];    /* the step's "op" as written ("" for inputs, results) */
    ck_node_kind kind;
    int sub; /* the op row's member or variant that parsed it */
    /* operands: node indices, or -1 for a scalar in scalar[k] */
    int nargs;
    int arg[CK_MAX_ARGS];
    double scalar[CK_MAX_ARGS];
    ck_dtype scalar_t[CK_MAX_ARGS]; /* CK_I64 for integral JSON numbers */
    ck_ew_op ew;
    ck_dtype compute; /* ew: operands' compute dtype */
    ck_red_op red;
    uint32_t axes; /* reduce: bit d = reduce axis d of the operand */
    int keepdims;
    double ddof;
    int nbins; /* hist; hist2d: bins along x */
    double *edges;
    int nbins2; /* hist2d: bins along y, and their edges */
    double *edges2;
    int uniform, density, weights; /* weights: node index or -1 */
    /* hist without a range: the nanmin and nanmax steps ("h.min",
     * "h.max") whose results make its edges when they have run; -1 */
    int range_of[2];
    /* slice: per operand axis, the first index and step, and whether the
     * axis is kept (an integer index drops it) */
    int64_t sl_start[CK_MAX_DIMS], sl_step[CK_MAX_DIMS];
    int sl_keep[CK_MAX_DIMS];
    int perm[CK_MAX_DIMS]; /* transpose: output axis k is operand axis
                              perm[k] */
    int axis;              /* concat: the axis joined along */
    int stack;             /* concat: a new axis (numpy.stack) */
    int dist;              /* random: ck_dist */
    double ra, rb;         /* random: its parameters */
    uint64_t seed;
    /* svd: k (the number kept), randomized, oversample, power_iters */
    int64_t k;
    int randomized, oversample, power_iters;
    int part;        /* part: CK_PART_*; arg[0] is the svd/glm_fit node */
    ck_glm_opts glm; /* glm_fit; glm_predict uses .family */
    /* A list the step gives (owned, freed with the plan): convolve's
     * weights, quantile's q, isin's values (sorted), take's indices. */
    double *vals;
    int64_t nvals;
    int64_t *idx; /* take: indices along 'axis' (owned); nidx of them */
    int64_t nidx;
    /* stencils: boundary mode (ck_stencil_mode), its constant, the
     * weights' shape (C order in vals) and origin per axis, and the halo
     * read below and above each box */
    int mode;
    double cval;
    int64_t wshape[CK_MAX_DIMS], origin[CK_MAX_DIMS];
    int64_t halo_lo[CK_MAX_DIMS], halo_hi[CK_MAX_DIMS];
    int64_t window[CK_MAX_DIMS]; /* coarsen: the window per axis */
    int64_t minlength;           /* bincount (op_count.c) */
    int invert;                  /* isin: not in */
    /* tensordot, einsum: axis con_a[j] of the first array pairs with
     * con_b[j] of the second (ncon pairs); perm orders the result */
    int con_a[CK_MAX_DIMS], con_b[CK_MAX_DIMS], ncon;
    /* einsum: batch axes, in both arrays and the result (bat_a[j] of the
     * first with bat_b[j] of the second) */
    int bat_a[CK_MAX_DIMS], bat_b[CK_MAX_DIMS], nbat;
    struct ck_kernel *kernel; /* kernel: loaded C code (owned), or NULL
                                 when it has only a CUDA C version */
    int block;                /* kernel: CUDA threads per block */
    char entry[128];          /* kernel: the entry point's name */
    char source[4096];        /* input: PATH[:DATASET]; kernel: its CUDA C
                                 file, or "" */
    /* netCDF/CF (pipelines/cf.c).  Dimension names per axis ("" unnamed;
     * has_dims 0 when none is named).  coord_in[k]: 1 + the input whose
     * coordinate variable axis k follows (0: none), its axis there, and
     * which of its values: start + step * i. */
    int has_dims;
    char dims[CK_MAX_DIMS][CK_DIM_NAME_MAX];
    int coord_in[CK_MAX_DIMS], coord_axis[CK_MAX_DIMS];
    int64_t coord_start[CK_MAX_DIMS], coord_step[CK_MAX_DIMS];
    int missing;    /* NaN in its values means missing data (CF) */
    int attrs_from; /* 1 + the input whose attributes its values keep; 0:
                       none */
    int attrs_cf;   /* 1 + the decode_cf step that unpacked those values
                       (scale_factor, add_offset, _Unsigned); 0: none */
    int keeps_units;
    /* CK_NODE_CF: the stored values' _FillValue and missing_value (CF
     * allows a list), whether its integers are unsigned (_Unsigned
     * "true", netCDF-3's way to store uint8), and the packing */
    int cf_has_fill, cf_nmissing, cf_unsigned;
    double cf_fill, cf_missing[CK_CF_MAX_MISSING], cf_scale, cf_offset;
    /* what it makes */
    ck_dtype dtype;
    int ndim;
    int64_t shape[CK_MAX_DIMS];
    int64_t chunks[CK_MAX_DIMS]; /* streaming granularity */
} ck_node;

typedef struct ck_output {
    int node;
    char target[4096]; /* PATH[:DATASET] */
    char where[48];
    int has_codec; /* its "compress" (0: the run's default, else none) */
    ck_codec_spec codec;
} ck_output;

typedef struct ck_plan {
    int n;
    ck_node node[CK_MAX_NODES];
    int nout;
    ck_output out[CK_MAX_NODES];
    int order[CK_MAX_NODES]; /* nodes in an order where operands come first */
    int nprint;
    int print[CK_MAX_NODES]; /* "print": results handed back to the caller */
    int onestep;             /* built for a one-step command */
    char command[24];        /* ... its name ("glm-fit"), for messages */
    char backend[8]; /* "backend": "auto" (the default), "cpu", "cuda" */
    int raw;         /* no CF decoding ("decode": false, --raw) */
    char *text;      /* the pipeline as JSON, for outputs' provenance
                        (owned) */
    int64_t memory;  /* --memory for the values the parser computes from
                        data (bins by name, the indices of a take or
                        argwhere argument); 0: chunkctl's default */
} ck_plan;

/* Parses and validates the pipeline in text (from file 'path', for
 * messages), opening the input stores read-only to learn shapes, dtypes and
 * chunks, and computing what a step's parameters take from data within
 * 'memory' bytes (--memory; 0: the default).  CK_EUSAGE with "path:
 * steps[2].axis: ..." for a bad pipeline, "path: line L column C: invalid JSON"
 * for bad JSON; store errors as the stores report them. */
ck_code ck_plan_parse(const char *path, const char *text, unsigned flags,
                      int64_t memory, ck_plan **out, ck_err *err);
void ck_plan_free(ck_plan *p);

/* A shallow copy of p on the heap (free() it, not ck_plan_free: the lists
 * its nodes point to and its text stay p's), or NULL when out of memory.
 * Nodes from p->n on and outputs from p->nout on are zero in the copy, as
 * they are in a built plan; a caller may append nodes to it.  Only the
 * parts in use are touched: a plan is 4.3 MB, nearly all of it unused
 * node and output slots, and a whole-struct memcpy faults in every page
 * of both the copy and p, 8.5 MB of resident memory that --memory's
 * budget never sees. */
ck_plan *ck_plan_dup(const ck_plan *p);

/* ck_plan_parse of a document already parsed (a cJSON tree, borrowed): how
 * the one-step commands build their pipeline, with no JSON text between.
 * With CK_PLAN_ONESTEP the messages name no place in a file ("reduce: axis
 * 5 out of range ..." rather than "reduce: steps[0]: axis ..."), as the
 * user of a one-step command gave options, not steps; 'path' is then the
 * command's name. */
/* CK_PLAN_RAW: no CF decoding of inputs (--raw; a pipeline's
 * "decode": false does the same). */
enum { CK_PLAN_ONESTEP = 1, CK_PLAN_RAW = 2 };
struct cJSON;
ck_code ck_plan_build(const char *path, const struct cJSON *doc, unsigned flags,
                      int64_t memory, ck_plan **out, ck_err *err);

/* A bit of a cJSON number's type (one cJSON does not use) that says its
 * text had a fraction or an exponent (2.0, 1e3): a float to NumPy's
 * promotion, not an int.  ck_plan_load marks the numbers of a file; a
 * caller building a pipeline in memory sets it itself. */
enum { CK_PLAN_JSON_FLOAT = 1 << 12 };

/* 1 if name is an op a pipeline step can use, and for ck_plan_prints if
 * its result is small enough to print (reductions and histograms). */
int ck_plan_op_known(const char *name);
int ck_plan_prints(const char *name);
/* "print" takes any step's values; one that is not a reduction, a
 * histogram or a mask (results held in memory whatever their size) may
 * have at most CK_PRINT_MAX elements, and a mask is held to it when it
 * has run. */
enum { CK_PRINT_MAX = 100000 };
int ck_plan_prints_whole(const ck_node *n);
/* 1 if a printed step shows one value per line (reductions, histograms,
 * unique's counts, svd's S, glm_fit's coef and intercept), 0 if it prints
 * as NumPy's str() (every other array, svd's U and Vt included). */
int ck_plan_prints_lines(const ck_node *n);
/* Lists the ops a step can use, one line each (families: their members),
 * for `chunkctl --help`. */
void ck_plan_ops_help(FILE *f);
/* The usage line and description of op 'name' as a one-step command
 * (`chunkctl OP --help`): its args (X, Y, Z) and its row's help. */
void ck_plan_op_usage(FILE *f, const char *name);

/* The examples of the one-step command of op 'name' (after its usage and
 * the one-step commands' help). */
void ck_plan_op_examples(FILE *f, const char *name);

/* Reads a pipeline file (at most 16 MiB) and parses it (flags as for
 * ck_plan_build). */
ck_code ck_plan_load(const char *path, unsigned flags, int64_t memory,
                     ck_plan **out, ck_err *err);

/* Writes what 'chunkctl plan' shows: per step its shape, dtype, chunks,
 * chunk tasks, bytes read and written and where it runs under 'backend'
 * (resolved: "cpu" or "cuda"; a step whose op the backend lacks runs on
 * the CPU), and the estimated peak memory for the given thread count, with
 * as many workers as the budget 'memory' (bytes; 0: none) holds. */
void ck_plan_print(const ck_plan *p, int threads, int64_t memory,
                   const char *backend, FILE *f);

/* How messages name node n: an input's source as the user gave it
 * ("data.h5:/x"), a step's or result's name. */
const char *ck_node_label(const ck_node *n);

/* Where step n runs under backend (a name ck_be_resolve gave): "host"
 * for an input, the backend when it implements the step's op (a kernel
 * step's CUDA C version: when it launches users' kernels), "cpu, its BLAS
 * and LAPACK calls on cuda" for a linear algebra step when the backend
 * has those slots, "cpu (fallback)" otherwise. */
const char *ck_plan_runs_on(const ck_plan *p, const ck_node *n,
                            const char *backend);

/* Whether backend 'name' launches users' CUDA C kernels. */
int ck_plan_device_kernels(const char *backend);

/* Under MPI (or to preview a job of nranks ranks): which chunks of each
 * output each rank writes, with their bytes, and what the ranks send
 * each other. */
void ck_plan_print_ranks(const ck_plan *p, int nranks, FILE *f);

/* The step graph in Graphviz dot. */
void ck_plan_dot(const ck_plan *p, FILE *f);

#endif
