/*
 * pipelines/plan_impl.h - the parser's helpers, shared by plan.c and the
 * op files (op_*.c) whose parse functions live beside their evaluation.
 * Every message goes through ck_plan_bad, so each names its place in the
 * pipeline file ("p.json: steps[2]: axis 3 out of range ...").  Private
 * to pipelines/.
 */
#ifndef CK_PLAN_IMPL_H
#define CK_PLAN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/ck_err.h"
#include "pipelines/plan.h"

/* Every key a parser looks up on a step goes through ck_plan_key, which
 * notes it: a key of the step that no parser looked up is refused
 * afterwards (plan.c: a typo such as "keepdim", or a key the op does not
 * take), so no op needs its own list of keys.  (cJSON.h is included above
 * so that its declaration is not renamed.) */
cJSON *ck_plan_key(const cJSON *obj, const char *key);
#define cJSON_GetObjectItem(obj, key) ck_plan_key((obj), (key))

/* "path: where: message", a usage error (CK_EUSAGE); where "" (a one-step
 * command's own step) gives "path: message". */
ck_code ck_plan_bad(ck_err *err, const char *path, const char *where,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* NumPy broadcasting of a and b into *nd/shape; 0 if they do not
 * broadcast. */
int ck_plan_broadcast(const ck_node *a, const ck_node *b, int *nd,
                      int64_t *shape);
/* "(3, 4)", and "(3,)" for one dimension, as NumPy prints shapes. */
const char *ck_plan_shape_str(int nd, const int64_t *s, char *buf, size_t n);
/* The first arg of a step, which must be an array: *m is that array. */
/* A hidden elementwise node of op over nodes a, b (b < 0: the number bv)
 * and c (c < 0: the number cv; where only) appended to a plan copy q (from
 * ck_plan_dup), of node a's shape; its index, or -1 if the types do not go
 * together.  For values a parser computes (ck_exec_values). */
int ck_plan_hidden_ew(ck_plan *q, ck_ew_op op, int a, int b, double bv, int c,
                      double cv);

ck_code ck_plan_one_array(ck_plan *p, const char *path, const char *where,
                          ck_node *n, const ck_node **m, ck_err *err);
/* Arg k's node, or NULL when arg k is a number. */
const ck_node *ck_plan_array_arg(const ck_plan *p, const ck_node *n, int k);
/* "axis" (an int, a list, or absent/null: all axes) as a bit mask over
 * ndim axes; negative axes count from the end; repeats are refused. */
ck_code ck_plan_axes(const char *path, const char *where,
                     const struct cJSON *ax, int ndim, uint32_t *mask,
                     ck_err *err);
/* Adds result node "<owner's name>.<suffix>" (kind CK_NODE_PART, part
 * 'part', arg[0] the owner) right after the nodes made so far. */
ck_code ck_plan_add_part(ck_plan *p, const char *path, const char *where,
                         int owner, const char *suffix, int part, ck_dtype dt,
                         int ndim, const int64_t *shape, const int64_t *chunks,
                         ck_err *err);
/* n's chunks: those of its first operand of n's full shape, else about
 * 8 MiB blocks. */
void ck_plan_first_chunks(const ck_plan *p, ck_node *n);
/* 1 if v is a JSON number with an integral value (|v| < 9e18). */
int ck_plan_is_int(const struct cJSON *v);
/* A list of integers >= 0 (allow_neg1: or -1) of at most CK_MAX_DIMS
 * under step key 'key', into out[*nd]. */
ck_code ck_plan_int_list(const char *path, const char *where, const char *key,
                         const struct cJSON *v, int64_t *out, int *nd,
                         int allow_neg1, ck_err *err);
/* Optional step keys: *v keeps dflt when the key is absent or null. */
ck_code ck_plan_opt_int(const char *path, const char *where,
                        const struct cJSON *step, const char *key, int64_t lo,
                        int64_t hi, int64_t dflt, int64_t *v, ck_err *err);
ck_code ck_plan_opt_num(const char *path, const char *where,
                        const struct cJSON *step, const char *key, double lo,
                        double hi, double dflt, double *v, ck_err *err);

#endif
