/*
 * pipelines/cf.h - netCDF and CF conventions in plans and outputs:
 * dimension names carried through steps as NumPy carries axes, axes
 * named by dimension, coordinate variables that follow their dimension,
 * CF decoding of inputs (_FillValue, missing_value, scale_factor,
 * add_offset) and the attributes outputs keep.  Private to pipelines/:
 * plan.c calls the ck_cf_plan_* functions as it parses, exec.c the
 * ck_cf_out_* ones as it writes.
 */
#ifndef CK_PIPELINES_CF_H
#define CK_PIPELINES_CF_H

#include <cjson/cJSON.h>

#include "io/store.h"
#include "pipelines/plan.h"

/* Called for input node i while its store is open: its dimension names
 * and coordinate variables, and unless the plan is raw, its CF decoding:
 * when the array has _FillValue, missing_value, scale_factor or
 * add_offset, node i is renamed "NAME (stored)" and a CK_NODE_CF node
 * named NAME decodes it (floats stay their type; integers become float32
 * up to 2 bytes, float64 above, as xarray's decode_cf). */
ck_code ck_cf_plan_input(ck_plan *p, const char *path, const char *where, int i,
                         ck_store *s, const char *dataset,
                         const ck_array_info *ai, ck_err *err);

/* The value CF decoding takes as missing in array dataset of s (ai): its
 * _FillValue, or a Zarr v2 fill_value where the array names its
 * dimensions (not NaN: a NaN fill_value marks NaN as missing in any Zarr
 * array), or netCDF's default fill for a float netCDF variable without
 * _FillValue.  1 with *fill set, 0 for none, -1 on a malformed
 * _FillValue (err says which, naming label). */
int ck_cf_fill_of(ck_store *s, const char *dataset, const ck_array_info *ai,
                  double *fill, const char *label, ck_err *err);

/* The step about to be parsed names axes by dimension ("axis": "time",
 * "axes": ["lat", "lon"]): a copy of the step with those replaced by
 * indices into its first operand's axes in *out (caller deletes; NULL
 * when nothing was named). */
ck_code ck_cf_plan_axis_names(const ck_plan *p, const char *path,
                              const char *where, const ck_node *n,
                              const cJSON *step, cJSON **out, ck_err *err);

/* After step i is parsed: its dimension names (from its operands, or the
 * step's "dims"), the coordinates its axes follow, whether NaN in it means
 * missing data (a reduction of such data skips NaN, as NumPy's nan*
 * reductions, NCO and CDO do) and whose attributes it keeps. */
ck_code ck_cf_plan_step(ck_plan *p, const char *path, const char *where, int i,
                        const cJSON *step, ck_err *err);

/* ---- decoding and outputs (exec.c) ---- */

/* Decodes n values of CF node nd in place: dst holds them as stored,
 * converted to nd->dtype. */
void ck_cf_decode(const ck_node *nd, void *dst, size_t n);

struct xrun;

/* CK_EUSAGE when outputs a and b (nodes, dataset names) in the same group
 * of store 'path' give one dimension name two lengths. */
ck_code ck_cf_check_dims(const ck_plan *p, int a, const char *aname, int b,
                         const char *bname, const char *path, ck_err *err);

/* The dimension names of node i for a new array's spec (of a store of
 * 'kind'), and in Zarr the NaN fill value of missing data. */
void ck_cf_out_spec(const ck_plan *p, int i, ck_store_kind kind,
                    ck_array_spec *spec);

/* After output 'name' of node i is written to s: the attributes it keeps
 * (see the rule in pipelines/cf.c), _FillValue NaN for float values whose
 * NaN marks missing data, and chunkctl's provenance (chunkctl_version,
 * chunkctl_pipeline: the pipeline as JSON). */
ck_code ck_cf_out_attrs(struct xrun *r, int i, ck_store *s, const char *name,
                        ck_err *err);

/* The coordinate variables of the dimensions output 'name' (node i)
 * keeps, read from the inputs' (sliced as the data was) and written
 * beside it, unless 'done' (the names written to s so far, which it
 * extends) holds them. */
ck_code ck_cf_out_coords(struct xrun *r, int i, ck_store *s, const char *name,
                         ck_names *done, ck_err *err);

/* Sets s's global history attribute to "DATE: CMD" then, on the lines
 * below, the history of 'in' (NULL: none), as NCO and CDO write it. */
ck_code ck_cf_history(ck_store *s, ck_store *in, const char *cmd, ck_err *err);
/* The same for a run: the command line, then the first input's history. */
ck_code ck_cf_out_history(struct xrun *r, ck_store *s, ck_err *err);

#endif
