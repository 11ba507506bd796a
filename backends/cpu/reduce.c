/*
 * backends/cpu/reduce.c - folds one block into reduction states
 * (backends/red_state.h), the hot loop of out-of-core reductions.
 *
 * The block's axes are first simplified: length-1 axes dropped, and
 * neighbours that are both reduced or both kept merged into one, so most
 * blocks become one of two shapes, each with its own loops:
 *  - the last axis is reduced: each contiguous run of it folds into one
 *    state (row kernels: several accumulators in registers, then one
 *    update of the state);
 *  - the last axis is kept: runs of it fold element by element into a
 *    tile of up to TILE plain accumulators on the stack, row after row of
 *    the reduced axes, and the tile is then added to the states (column
 *    kernels).  The states, 64 bytes each, are touched once per tile.
 * Float sums add blocks of up to LEAF values in registers and add each
 * block's sum into a Neumaier-compensated sum, so they are deterministic
 * and agree with NumPy's pairwise sums to about 1e-13 relative.  Integer
 * sums and products wrap in uint64 as NumPy's do in int64/uint64.
 * Variances take two passes over the block (mean, then deviations from
 * it, corrected by their sum) and merge with Chan's update.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "backends/cpu/cpu.h"
#include "backends/red_state.h"

#define TILE 512 /* accumulators per column tile */
#define LEAF 128 /* values summed in registers before a compensated add */

/* Kernel classes: which loops fold a block, given op and dtype. */
enum {
    C_ISUM,    /* integer sum: wrapping uint64 */
    C_FSUM,    /* float sum of values read as double */
    C_FNANSUM, /* the same, NaN skipped and non-NaN counted */
    C_IPROD,
    C_FPROD,
    C_FNANPROD, /* floats only; NaN skipped */
    C_MIN,      /* NaN propagates */
    C_MAX,
    C_NANMIN, /* floats only; NaN skipped and non-NaN counted */
    C_NANMAX,
    C_ARGMIN,
    C_ARGMAX,
    C_NANARGMIN, /* floats only; NaN loses to any number */
    C_NANARGMAX,
    C_VAR,
    C_NANVAR,
    C_NZ,    /* count of nonzero values (NaN is nonzero) */
    C_NANNZ, /* floats only; NaN not counted */
    C_COUNT
};

/* Column accumulators for one tile of kept elements. */
typedef struct tile {
    union {
        double f[TILE];
        int64_t i[TILE];
        uint64_t u[TILE];
    } v;
    double b[TILE], c[TILE]; /* float sums: compensated (sum, comp); var:
                                sum of d and of d*d */
    int64_t k[TILE];         /* counted values */
    int64_t idx[TILE];       /* arg: index of v; -1 before the first */
    double s[TILE];          /* var: the sums of pass 0 (see tile_mid) */
    int pass;                /* var: 0 sums values, 1 deviations */
} tile;

typedef void (*row_fn)(ck_red_state *st, const void *x, int64_t len,
                       int64_t ridx, int64_t rstep);
typedef void (*col_fn)(tile *t, const void *x, int64_t w, int64_t rows,
                       int64_t rs, int64_t ridx, int64_t rstep);

/* Adds x into a compensated pair (s, c): Neumaier, as ck_red_sum_add. */
static inline void pair_add(double *s, double *c, double x)
{
    double t = *s + x;

    if (fabs(*s) >= fabs(x))
        *c += (*s - t) + x;
    else
        *c += (x - t) + *s;
    *s = t;
}

/* ---- merging one candidate into a state ---- */

/* argmin (sign 1) / argmax (sign -1): NaN first, then value, then the
 * smaller index (the first occurrence). */
static inline void arg_put_f(ck_red_state *st, double v, int64_t idx, int sign)
{
    if (st->idx >= 0) {
        int sn = isnan(st->v.f), vn = isnan(v);
        if (sn || vn) {
            if (!vn || (sn && idx > st->idx))
                return;
        } else if (v != st->v.f) {
            if (sign > 0 ? !(v < st->v.f) : !(v > st->v.f))
                return;
        } else if (idx > st->idx) {
            return;
        }
    }
    st->v.f = v;
    st->idx = idx;
}

static inline void arg_put_i(ck_red_state *st, int64_t v, int64_t idx, int sign)
{
    if (st->idx >= 0) {
        if (v != st->v.i) {
            if (sign > 0 ? v > st->v.i : v < st->v.i)
                return;
        } else if (idx > st->idx) {
            return;
        }
    }
    st->v.i = v;
    st->idx = idx;
}

static inline void arg_put_u(ck_red_state *st, uint64_t v, int64_t idx,
                             int sign)
{
    if (st->idx >= 0) {
        if (v != st->v.u) {
            if (sign > 0 ? v > st->v.u : v < st->v.u)
                return;
        } else if (idx > st->idx) {
            return;
        }
    }
    st->v.u = v;
    st->idx = idx;
}

/* float min (sign 1) / max (sign -1) with NaN propagating */
static inline void minmax_put_f(ck_red_state *st, double v, int sign)
{
    if (isnan(st->v.f))
        return;
    if (isnan(v) || (sign > 0 ? v < st->v.f : v > st->v.f))
        st->v.f = v;
}

/* var: merges a batch of k values whose deviations d from 'shift' sum to
 * sd and sd2 (the corrected two-pass algorithm). */
static inline void var_put(ck_red_state *st, int64_t k, double shift, double sd,
                           double sd2)
{
    if (k == 0)
        return;
    double m2 = sd2 - sd * sd / (double)k;
    if (m2 < 0) /* rounding; NaN passes */
        m2 = 0;
    ck_red_chan_merge(st, k, shift + sd / (double)k, m2);
}

/* ---- kernels, one set per input type ---- */

/* Sums: integers wrap; floats and mean's inputs go through double. */
#define DEF_ISUM(N, T)                                                         \
    static void isum_row_##N(ck_red_state *st, const void *xv, int64_t len,    \
                             int64_t ridx, int64_t rstep)                      \
    {                                                                          \
        const T *x = xv;                                                       \
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;                               \
        int64_t i = 0;                                                         \
        (void)ridx, (void)rstep;                                               \
        for (; i + 4 <= len; i += 4) {                                         \
            s0 += (uint64_t)x[i];                                              \
            s1 += (uint64_t)x[i + 1];                                          \
            s2 += (uint64_t)x[i + 2];                                          \
            s3 += (uint64_t)x[i + 3];                                          \
        }                                                                      \
        for (; i < len; i++)                                                   \
            s0 += (uint64_t)x[i];                                              \
        st->v.u += (s0 + s1) + (s2 + s3);                                      \
    }                                                                          \
    static void isum_col_##N(tile *t, const void *xv, int64_t w, int64_t rows, \
                             int64_t rs, int64_t ridx, int64_t rstep)          \
    {                                                                          \
        const T *x = xv;                                                       \
        uint64_t *s = t->v.u;                                                  \
        int64_t r = 0;                                                         \
        (void)ridx, (void)rstep;                                               \
        for (; r + 4 <= rows; r += 4, x += 4 * rs) {                           \
            const T *x1 = x + rs, *x2 = x + 2 * rs, *x3 = x + 3 * rs;          \
            for (int64_t j = 0; j < w; j++)                                    \
                s[j] += ((uint64_t)x[j] + (uint64_t)x1[j]) +                   \
                        ((uint64_t)x2[j] + (uint64_t)x3[j]);                   \
        }                                                                      \
        for (; r < rows; r++, x += rs)                                         \
            for (int64_t j = 0; j < w; j++)                                    \
                s[j] += (uint64_t)x[j];                                        \
    }

/* SKIP: NaN is skipped and the others counted in k. */
#define DEF_FSUM_ROW(N, T, NAME, SKIP)                                         \
    static void NAME##_row_##N(ck_red_state *st, const void *xv, int64_t len,  \
                               int64_t ridx, int64_t rstep)                    \
    {                                                                          \
        const T *x = xv;                                                       \
        int64_t cnt = 0;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t i = 0; i < len; i += LEAF, x += LEAF) {                   \
            int64_t m = len - i < LEAF ? len - i : LEAF, j = 0;                \
            double r0 = 0, r1 = 0, r2 = 0, r3 = 0;                             \
            double r4 = 0, r5 = 0, r6 = 0, r7 = 0;                             \
            for (; j + 8 <= m; j += 8) {                                       \
                double v0 = x[j], v1 = x[j + 1], v2 = x[j + 2];                \
                double v3 = x[j + 3], v4 = x[j + 4], v5 = x[j + 5];            \
                double v6 = x[j + 6], v7 = x[j + 7];                           \
                if (SKIP) {                                                    \
                    cnt += (v0 == v0) + (v1 == v1) + (v2 == v2) + (v3 == v3) + \
                           (v4 == v4) + (v5 == v5) + (v6 == v6) + (v7 == v7);  \
                    v0 = v0 == v0 ? v0 : 0;                                    \
                    v1 = v1 == v1 ? v1 : 0;                                    \
                    v2 = v2 == v2 ? v2 : 0;                                    \
                    v3 = v3 == v3 ? v3 : 0;                                    \
                    v4 = v4 == v4 ? v4 : 0;                                    \
                    v5 = v5 == v5 ? v5 : 0;                                    \
                    v6 = v6 == v6 ? v6 : 0;                                    \
                    v7 = v7 == v7 ? v7 : 0;                                    \
                }                                                              \
                r0 += v0, r1 += v1, r2 += v2, r3 += v3;                        \
                r4 += v4, r5 += v5, r6 += v6, r7 += v7;                        \
            }                                                                  \
            double s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));      \
            for (; j < m; j++) {                                               \
                double v = x[j];                                               \
                if (SKIP && v != v)                                            \
                    continue;                                                  \
                cnt += SKIP;                                                   \
                s += v;                                                        \
            }                                                                  \
            ck_red_sum_add(st, s);                                             \
        }                                                                      \
        st->k += cnt;                                                          \
    }

#define DEF_FSUM_COL(N, T, NAME, SKIP)                                         \
    static void NAME##_col_##N(tile *t, const void *xv, int64_t w,             \
                               int64_t rows, int64_t rs, int64_t ridx,         \
                               int64_t rstep)                                  \
    {                                                                          \
        const T *x = xv;                                                       \
        double *s = t->v.f;                                                    \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r0 = 0; r0 < rows; r0 += LEAF) {                          \
            int64_t m = rows - r0 < LEAF ? rows - r0 : LEAF, r = 0;            \
            for (; r + 4 <= m; r += 4, x += 4 * rs) {                          \
                const T *x1 = x + rs, *x2 = x + 2 * rs, *x3 = x + 3 * rs;      \
                for (int64_t j = 0; j < w; j++) {                              \
                    double v0 = x[j], v1 = x1[j], v2 = x2[j], v3 = x3[j];      \
                    if (SKIP) {                                                \
                        t->k[j] +=                                             \
                            (v0 == v0) + (v1 == v1) + (v2 == v2) + (v3 == v3); \
                        v0 = v0 == v0 ? v0 : 0;                                \
                        v1 = v1 == v1 ? v1 : 0;                                \
                        v2 = v2 == v2 ? v2 : 0;                                \
                        v3 = v3 == v3 ? v3 : 0;                                \
                    }                                                          \
                    s[j] += (v0 + v1) + (v2 + v3);                             \
                }                                                              \
            }                                                                  \
            for (; r < m; r++, x += rs) {                                      \
                for (int64_t j = 0; j < w; j++) {                              \
                    double v = x[j];                                           \
                    if (SKIP) {                                                \
                        t->k[j] += v == v;                                     \
                        v = v == v ? v : 0;                                    \
                    }                                                          \
                    s[j] += v;                                                 \
                }                                                              \
            }                                                                  \
            for (int64_t j = 0; j < w; j++) {                                  \
                pair_add(&t->b[j], &t->c[j], s[j]);                            \
                s[j] = 0;                                                      \
            }                                                                  \
        }                                                                      \
    }

#define DEF_FSUM(N, T, NAME, SKIP)                                             \
    DEF_FSUM_ROW(N, T, NAME, SKIP)                                             \
    DEF_FSUM_COL(N, T, NAME, SKIP)

/* Products: ACC is u (wrapping) or f. */
#define DEF_PROD(N, T, NAME, AT, ACC)                                          \
    static void NAME##_row_##N(ck_red_state *st, const void *xv, int64_t len,  \
                               int64_t ridx, int64_t rstep)                    \
    {                                                                          \
        const T *x = xv;                                                       \
        AT p = st->v.ACC;                                                      \
        (void)ridx, (void)rstep;                                               \
        for (int64_t i = 0; i < len; i++)                                      \
            p *= (AT)x[i];                                                     \
        st->v.ACC = p;                                                         \
    }                                                                          \
    static void NAME##_col_##N(tile *t, const void *xv, int64_t w,             \
                               int64_t rows, int64_t rs, int64_t ridx,         \
                               int64_t rstep)                                  \
    {                                                                          \
        const T *x = xv;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r = 0; r < rows; r++, x += rs)                            \
            for (int64_t j = 0; j < w; j++)                                    \
                t->v.ACC[j] *= (AT)x[j];                                       \
    }

/* Float products with NaN skipped (nanprod: NaN counts as 1). */
#define DEF_FNANPROD(N, T)                                                     \
    static void fnanprod_row_##N(ck_red_state *st, const void *xv,             \
                                 int64_t len, int64_t ridx, int64_t rstep)     \
    {                                                                          \
        const T *x = xv;                                                       \
        double p = st->v.f;                                                    \
        (void)ridx, (void)rstep;                                               \
        for (int64_t i = 0; i < len; i++)                                      \
            p *= x[i] == x[i] ? (double)x[i] : 1.0;                            \
        st->v.f = p;                                                           \
    }                                                                          \
    static void fnanprod_col_##N(tile *t, const void *xv, int64_t w,           \
                                 int64_t rows, int64_t rs, int64_t ridx,       \
                                 int64_t rstep)                                \
    {                                                                          \
        const T *x = xv;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r = 0; r < rows; r++, x += rs)                            \
            for (int64_t j = 0; j < w; j++)                                    \
                t->v.f[j] *= x[j] == x[j] ? (double)x[j] : 1.0;                \
    }

/* Integer min/max: AT is int64_t (ACC i) or uint64_t (ACC u); CMP is < for
 * min, > for max. */
#define DEF_IMINMAX(N, T, NAME, AT, ACC, CMP)                                  \
    static void NAME##_row_##N(ck_red_state *st, const void *xv, int64_t len,  \
                               int64_t ridx, int64_t rstep)                    \
    {                                                                          \
        const T *x = xv;                                                       \
        AT m = st->v.ACC;                                                      \
        (void)ridx, (void)rstep;                                               \
        for (int64_t i = 0; i < len; i++)                                      \
            m = (AT)x[i] CMP m ? (AT)x[i] : m;                                 \
        st->v.ACC = m;                                                         \
    }                                                                          \
    static void NAME##_col_##N(tile *t, const void *xv, int64_t w,             \
                               int64_t rows, int64_t rs, int64_t ridx,         \
                               int64_t rstep)                                  \
    {                                                                          \
        const T *x = xv;                                                       \
        AT *m = t->v.ACC;                                                      \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r = 0; r < rows; r++, x += rs)                            \
            for (int64_t j = 0; j < w; j++)                                    \
                m[j] = (AT)x[j] CMP m[j] ? (AT)x[j] : m[j];                    \
    }

/* Float min/max.  SKIP 0: NaN propagates (once m is NaN nothing compares
 * below it); SKIP 1: NaN never compares, and the others are counted. */
#define DEF_FMINMAX(N, T, NAME, CMP, SIGN, SKIP)                               \
    static void NAME##_row_##N(ck_red_state *st, const void *xv, int64_t len,  \
                               int64_t ridx, int64_t rstep)                    \
    {                                                                          \
        const T *x = xv;                                                       \
        double m = SIGN > 0 ? INFINITY : -INFINITY;                            \
        int64_t cnt = 0;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t i = 0; i < len; i++) {                                    \
            double v = x[i];                                                   \
            if (SKIP)                                                          \
                cnt += v == v;                                                 \
            m = (v CMP m || (!SKIP && v != v)) ? v : m;                        \
        }                                                                      \
        if (SKIP) {                                                            \
            st->k += cnt;                                                      \
            if (m CMP st->v.f)                                                 \
                st->v.f = m;                                                   \
        } else {                                                               \
            minmax_put_f(st, m, SIGN);                                         \
        }                                                                      \
    }                                                                          \
    static void NAME##_col_##N(tile *t, const void *xv, int64_t w,             \
                               int64_t rows, int64_t rs, int64_t ridx,         \
                               int64_t rstep)                                  \
    {                                                                          \
        const T *x = xv;                                                       \
        double *m = t->v.f;                                                    \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r = 0; r < rows; r++, x += rs) {                          \
            for (int64_t j = 0; j < w; j++) {                                  \
                double v = x[j];                                               \
                if (SKIP)                                                      \
                    t->k[j] += v == v;                                         \
                m[j] = (v CMP m[j] || (!SKIP && v != v)) ? v : m[j];           \
            }                                                                  \
        }                                                                      \
    }

/* argmin/argmax.  PUT merges into a state (arg_put_f/_i/_u); BETTER(v, b)
 * says v replaces the best so far b (ties keep b: the first). */
#define DEF_ARG(N, T, NAME, AT, ACC, PUT, SIGN, BETTER)                        \
    static void NAME##_row_##N(ck_red_state *st, const void *xv, int64_t len,  \
                               int64_t ridx, int64_t rstep)                    \
    {                                                                          \
        const T *x = xv;                                                       \
        AT b = (AT)x[0];                                                       \
        int64_t bi = 0;                                                        \
        for (int64_t i = 1; i < len; i++) {                                    \
            AT v = (AT)x[i];                                                   \
            if (BETTER(v, b)) {                                                \
                b = v;                                                         \
                bi = i;                                                        \
            }                                                                  \
        }                                                                      \
        PUT(st, b, ridx + bi * rstep, SIGN);                                   \
    }                                                                          \
    static void NAME##_col_##N(tile *t, const void *xv, int64_t w,             \
                               int64_t rows, int64_t rs, int64_t ridx,         \
                               int64_t rstep)                                  \
    {                                                                          \
        const T *x = xv;                                                       \
        AT *b = t->v.ACC;                                                      \
        for (int64_t r = 0; r < rows; r++, x += rs, ridx += rstep) {           \
            for (int64_t j = 0; j < w; j++) {                                  \
                AT v = (AT)x[j];                                               \
                if (t->idx[j] < 0 || BETTER(v, b[j])) {                        \
                    b[j] = v;                                                  \
                    t->idx[j] = ridx;                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

#define LESS(v, b) ((v) < (b))
#define MORE(v, b) ((v) > (b))
/* A NaN beats any number and loses to an earlier NaN. */
#define FLESS(v, b) ((v) < (b) || ((v) != (v) && (b) == (b)))
#define FMORE(v, b) ((v) > (b) || ((v) != (v) && (b) == (b)))
/* NaN counts as +inf (NLESS, nanargmin) or -inf (NMORE, nanargmax), as
 * in NumPy: a number other than that infinity beats a NaN held in b; the
 * infinity ties with it, and then takes its place in b, keeping the NaN's
 * (earlier) index, so b is NaN only while every value was
 * (ck_red_nanarg_put). */
#define NLESS(v, b)                                                            \
    ((v) < (b) ||                                                              \
     ((b) != (b) && (v) == (v) && ((v) < INFINITY || ((b) = (v), 0))))
#define NMORE(v, b)                                                            \
    ((v) > (b) ||                                                              \
     ((b) != (b) && (v) == (v) && ((v) > -INFINITY || ((b) = (v), 0))))

/* Variance.  A run is taken in blocks of VAR_BLOCK values, each summed
 * twice while it is in cache (its mean, then the deviations from it and
 * their squares) and merged into the state (Chan et al.): long runs keep
 * the accuracy of short ones (plain sums over a whole 10^7-value chunk
 * drifted 1e-12 from NumPy's pairwise ones).  Column kernels: pass 0 sums
 * values (v.f) and counts them (k); pass 1 sums deviations from their
 * mean (b) and their squares (c).  SKIP: NaN is left out. */
enum { VAR_BLOCK = 4096 };

#define DEF_VAR_ROW(N, T, NAME, SKIP)                                          \
    static void NAME##_row_##N(ck_red_state *st, const void *xv, int64_t len,  \
                               int64_t ridx, int64_t rstep)                    \
    {                                                                          \
        const T *x = xv;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t b = 0; b < len; b += VAR_BLOCK) {                         \
            int64_t e = len - b < VAR_BLOCK ? len : b + VAR_BLOCK, cnt = 0;    \
            double s = 0, sd = 0, sd2 = 0;                                     \
            for (int64_t i = b; i < e; i++) {                                  \
                double v = x[i];                                               \
                if (SKIP && v != v)                                            \
                    continue;                                                  \
                s += v;                                                        \
                cnt++;                                                         \
            }                                                                  \
            double shift = cnt ? s / (double)cnt : 0;                          \
            for (int64_t i = b; i < e; i++) {                                  \
                double v = x[i];                                               \
                if (SKIP && v != v)                                            \
                    continue;                                                  \
                double d = v - shift;                                          \
                sd += d;                                                       \
                sd2 += d * d;                                                  \
            }                                                                  \
            ck_red_sum_add(st, s);                                             \
            var_put(st, cnt, shift, sd, sd2);                                  \
        }                                                                      \
    }

#define DEF_VAR_COL(N, T, NAME, SKIP)                                          \
    static void NAME##_col_##N(tile *t, const void *xv, int64_t w,             \
                               int64_t rows, int64_t rs, int64_t ridx,         \
                               int64_t rstep)                                  \
    {                                                                          \
        const T *x = xv;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r = 0; r < rows; r++, x += rs) {                          \
            for (int64_t j = 0; j < w; j++) {                                  \
                double v = x[j];                                               \
                if (SKIP && v != v)                                            \
                    continue;                                                  \
                if (t->pass == 0) {                                            \
                    t->v.f[j] += v;                                            \
                    t->k[j]++;                                                 \
                } else {                                                       \
                    double d = v - t->v.f[j];                                  \
                    t->b[j] += d;                                              \
                    t->c[j] += d * d;                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

#define DEF_VAR(N, T, NAME, SKIP)                                              \
    DEF_VAR_ROW(N, T, NAME, SKIP)                                              \
    DEF_VAR_COL(N, T, NAME, SKIP)

/* Integers: float sums (mean) and variances from exact integer sums.
 * A run's sum is kept in 128 bits and added to the compensated state as
 * two doubles (its rounding, then the rest), so it is exact.  Variance:
 * per block of VAR_BLOCK values of magnitude below 2^31, the count c, the
 * sum s1 and the sum of squares s2 are exact, and so is c * s2 - s1^2
 * (below 2^86); the block's mean s1 / c and squared deviations
 * (c * s2 - s1^2) / c are then rounded once or twice before Chan's merge.
 * A block with a larger value takes the two-pass float route. */
__extension__ typedef __int128 i128;

/* Values below 2^25 in magnitude (the usual case: counts, categories,
 * pixels) are summed, and their squares too, in plain int64 lanes: exact
 * for any run of them (squares: VAR_BLOCK at a time), and vectorised, with
 * AVX2 where the CPU has it.  Each returns 0 when a value is larger, and
 * the caller takes the 128-bit route (uint64 always does). */
#if defined(__x86_64__) && defined(__GNUC__)
#define CK_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CK_CLONES
#endif
#define SMALL_BIT 25
/* uint64: values past INT64_MAX would look small; they never are. */
#define U64(T) ((T)-1 > 0 && sizeof(T) == 8)
#define DEF_SMALL(N, T)                                                        \
    CK_CLONES static int small_sum_##N(const T *x, int64_t len, int64_t *s1)   \
    {                                                                          \
        uint64_t big = 0, s = 0;                                               \
        if (U64(T))                                                            \
            return 0;                                                          \
        for (int64_t i = 0; i < len; i++) {                                    \
            uint64_t v = (uint64_t)(int64_t)x[i];                              \
            big |= (v + ((uint64_t)1 << SMALL_BIT)) >> (SMALL_BIT + 1);        \
            s += v;                                                            \
        }                                                                      \
        *s1 = (int64_t)s;                                                      \
        return !big;                                                           \
    }                                                                          \
    CK_CLONES static int small_sums_##N(const T *x, int64_t len, int64_t *s1,  \
                                        int64_t *s2)                           \
    {                                                                          \
        uint64_t big = 0, s = 0;                                               \
        uint64_t q = 0; /* unsigned: a large value's square may wrap */        \
        if (U64(T))                                                            \
            return 0;                                                          \
        for (int64_t i = 0; i < len; i++) {                                    \
            uint64_t v = (uint64_t)(int64_t)x[i];                              \
            int32_t w = (int32_t)(int64_t)x[i]; /* exact when small */         \
            big |= (v + ((uint64_t)1 << SMALL_BIT)) >> (SMALL_BIT + 1);        \
            s += v;                                                            \
            q += (uint64_t)((int64_t)w * w);                                   \
        }                                                                      \
        *s1 = (int64_t)s;                                                      \
        *s2 = (int64_t)q;                                                      \
        return !big;                                                           \
    }

static void sum_add_i128(ck_red_state *st, i128 s)
{
    double hi = (double)s;
    ck_red_sum_add(st, hi);
    ck_red_sum_add(st, (double)(s - (i128)hi));
}

#define DEF_IFSUM_ROW(N, T)                                                    \
    static void fsum_row_##N(ck_red_state *st, const void *xv, int64_t len,    \
                             int64_t ridx, int64_t rstep)                      \
    {                                                                          \
        const T *x = xv;                                                       \
        i128 s0 = 0, s1 = 0;                                                   \
        int64_t i = 0, small;                                                  \
        (void)ridx, (void)rstep;                                               \
        if (small_sum_##N(x, len, &small)) {                                   \
            sum_add_i128(st, small);                                           \
            return;                                                            \
        }                                                                      \
        for (; i + 2 <= len; i += 2) {                                         \
            s0 += x[i];                                                        \
            s1 += x[i + 1];                                                    \
        }                                                                      \
        for (; i < len; i++)                                                   \
            s0 += x[i];                                                        \
        sum_add_i128(st, s0 + s1);                                             \
    }

#define DEF_IVAR_ROW(N, T)                                                     \
    static void var_row_##N(ck_red_state *st, const void *xv, int64_t len,     \
                            int64_t ridx, int64_t rstep)                       \
    {                                                                          \
        const T *x = xv;                                                       \
        for (int64_t b = 0; b < len; b += VAR_BLOCK) {                         \
            int64_t e = len - b < VAR_BLOCK ? len : b + VAR_BLOCK;             \
            int64_t q1, q2;                                                    \
            if (small_sums_##N(x + b, e - b, &q1, &q2)) {                      \
                i128 c = e - b, qn = c * q2 - (i128)q1 * q1;                   \
                sum_add_i128(st, q1);                                          \
                ck_red_chan_merge(st, e - b, (double)q1 / (double)(e - b),     \
                                  (double)qn / (double)(e - b));               \
                continue;                                                      \
            }                                                                  \
            uint64_t s1 = 0, big = 0; /* unsigned: wraps, never overflows */   \
            i128 s2 = 0;                                                       \
            for (int64_t i = b; i < e; i++) {                                  \
                uint64_t v = (uint64_t)(int64_t)x[i];                          \
                big |= (v + ((uint64_t)1 << 31)) >> 32;                        \
                if ((T)-1 > 0 && (uint64_t)x[i] > (uint64_t)INT64_MAX)         \
                    big = 1;                                                   \
                s1 += v;                                                       \
                s2 += (i128)(v * v);                                           \
            }                                                                  \
            if (big) {                                                         \
                var2_row_##N(st, x + b, e - b, ridx, rstep);                   \
                continue;                                                      \
            }                                                                  \
            int64_t c = e - b, m = (int64_t)s1; /* the exact sum */            \
            i128 num = (i128)c * s2 - (i128)m * m;                             \
            sum_add_i128(st, m);                                               \
            ck_red_chan_merge(st, c, (double)m / (double)c,                    \
                              (double)num / (double)c);                        \
        }                                                                      \
    }

#define DEF_NZ(N, T)                                                           \
    static void nz_row_##N(ck_red_state *st, const void *xv, int64_t len,      \
                           int64_t ridx, int64_t rstep)                        \
    {                                                                          \
        const T *x = xv;                                                       \
        int64_t cnt = 0;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t i = 0; i < len; i++)                                      \
            cnt += x[i] != 0;                                                  \
        st->k += cnt;                                                          \
    }                                                                          \
    static void nz_col_##N(tile *t, const void *xv, int64_t w, int64_t rows,   \
                           int64_t rs, int64_t ridx, int64_t rstep)            \
    {                                                                          \
        const T *x = xv;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r = 0; r < rows; r++, x += rs)                            \
            for (int64_t j = 0; j < w; j++)                                    \
                t->k[j] += x[j] != 0;                                          \
    }

/* count_nonzero with NaN left out (floats). */
#define DEF_NANNZ(N, T)                                                        \
    static void nannz_row_##N(ck_red_state *st, const void *xv, int64_t len,   \
                              int64_t ridx, int64_t rstep)                     \
    {                                                                          \
        const T *x = xv;                                                       \
        int64_t cnt = 0;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t i = 0; i < len; i++)                                      \
            cnt += x[i] != 0 && x[i] == x[i];                                  \
        st->k += cnt;                                                          \
    }                                                                          \
    static void nannz_col_##N(tile *t, const void *xv, int64_t w,              \
                              int64_t rows, int64_t rs, int64_t ridx,          \
                              int64_t rstep)                                   \
    {                                                                          \
        const T *x = xv;                                                       \
        (void)ridx, (void)rstep;                                               \
        for (int64_t r = 0; r < rows; r++, x += rs)                            \
            for (int64_t j = 0; j < w; j++)                                    \
                t->k[j] += x[j] != 0 && x[j] == x[j];                          \
    }

/* Kernels every type has (integers: see DEF_IFSUM_ROW and DEF_IVAR_ROW). */
#define DEF_ALL(N, T)                                                          \
    DEF_FSUM(N, T, fsum, 0)                                                    \
    DEF_VAR(N, T, var, 0)                                                      \
    DEF_NZ(N, T)

#define DEF_INT_ALL(N, T)                                                      \
    DEF_SMALL(N, T)                                                            \
    DEF_IFSUM_ROW(N, T)                                                        \
    DEF_FSUM_COL(N, T, fsum, 0)                                                \
    DEF_VAR_ROW(N, T, var2, 0)                                                 \
    DEF_IVAR_ROW(N, T)                                                         \
    DEF_VAR_COL(N, T, var, 0)                                                  \
    DEF_NZ(N, T)

#define DEF_SIGNED(N, T)                                                       \
    DEF_INT_ALL(N, T)                                                          \
    DEF_ISUM(N, T)                                                             \
    DEF_PROD(N, T, iprod, uint64_t, u)                                         \
    DEF_IMINMAX(N, T, min, int64_t, i, <)                                      \
    DEF_IMINMAX(N, T, max, int64_t, i, >)                                      \
    DEF_ARG(N, T, argmin, int64_t, i, arg_put_i, 1, LESS)                      \
    DEF_ARG(N, T, argmax, int64_t, i, arg_put_i, -1, MORE)

#define DEF_UNSIGNED(N, T)                                                     \
    DEF_INT_ALL(N, T)                                                          \
    DEF_ISUM(N, T)                                                             \
    DEF_PROD(N, T, iprod, uint64_t, u)                                         \
    DEF_IMINMAX(N, T, min, uint64_t, u, <)                                     \
    DEF_IMINMAX(N, T, max, uint64_t, u, >)                                     \
    DEF_ARG(N, T, argmin, uint64_t, u, arg_put_u, 1, LESS)                     \
    DEF_ARG(N, T, argmax, uint64_t, u, arg_put_u, -1, MORE)

#define DEF_FLOAT(N, T)                                                        \
    DEF_ALL(N, T)                                                              \
    DEF_FSUM(N, T, fnansum, 1)                                                 \
    DEF_PROD(N, T, fprod, double, f)                                           \
    DEF_FMINMAX(N, T, min, <, 1, 0)                                            \
    DEF_FMINMAX(N, T, max, >, -1, 0)                                           \
    DEF_FMINMAX(N, T, nanmin, <, 1, 1)                                         \
    DEF_FMINMAX(N, T, nanmax, >, -1, 1)                                        \
    DEF_ARG(N, T, argmin, double, f, arg_put_f, 1, FLESS)                      \
    DEF_ARG(N, T, argmax, double, f, arg_put_f, -1, FMORE)                     \
    DEF_FNANPROD(N, T)                                                         \
    DEF_ARG(N, T, nanargmin, double, f, ck_red_nanarg_put, 1, NLESS)           \
    DEF_ARG(N, T, nanargmax, double, f, ck_red_nanarg_put, -1, NMORE)          \
    DEF_NANNZ(N, T)                                                            \
    DEF_VAR(N, T, nanvar, 1)

DEF_SIGNED(i8, int8_t)
DEF_SIGNED(i16, int16_t)
DEF_SIGNED(i32, int32_t)
DEF_SIGNED(i64, int64_t)
DEF_UNSIGNED(u8, uint8_t)
DEF_UNSIGNED(u16, uint16_t)
DEF_UNSIGNED(u32, uint32_t)
DEF_UNSIGNED(u64, uint64_t)
DEF_FLOAT(f32, float)
DEF_FLOAT(f64, double)

/* ---- tables: kernel class x dtype (bool reads as uint8) ---- */

#define INT_ROW(P)                                                             \
    {                                                                          \
        [CK_BOOL] = P##_row_u8, [CK_I8] = P##_row_i8, [CK_I16] = P##_row_i16,  \
        [CK_I32] = P##_row_i32, [CK_I64] = P##_row_i64, [CK_U8] = P##_row_u8,  \
        [CK_U16] = P##_row_u16, [CK_U32] = P##_row_u32, [CK_U64] = P##_row_u64 \
    }
#define INT_COL(P)                                                             \
    {                                                                          \
        [CK_BOOL] = P##_col_u8, [CK_I8] = P##_col_i8, [CK_I16] = P##_col_i16,  \
        [CK_I32] = P##_col_i32, [CK_I64] = P##_col_i64, [CK_U8] = P##_col_u8,  \
        [CK_U16] = P##_col_u16, [CK_U32] = P##_col_u32, [CK_U64] = P##_col_u64 \
    }
#define FLT_ROW(P)                                                             \
    {                                                                          \
        [CK_F32] = P##_row_f32, [CK_F64] = P##_row_f64                         \
    }
#define FLT_COL(P)                                                             \
    {                                                                          \
        [CK_F32] = P##_col_f32, [CK_F64] = P##_col_f64                         \
    }
#define ALL_ROW(P)                                                             \
    {                                                                          \
        [CK_BOOL] = P##_row_u8, [CK_I8] = P##_row_i8, [CK_I16] = P##_row_i16,  \
        [CK_I32] = P##_row_i32, [CK_I64] = P##_row_i64, [CK_U8] = P##_row_u8,  \
        [CK_U16] = P##_row_u16, [CK_U32] = P##_row_u32,                        \
        [CK_U64] = P##_row_u64, [CK_F32] = P##_row_f32, [CK_F64] = P##_row_f64 \
    }
#define ALL_COL(P)                                                             \
    {                                                                          \
        [CK_BOOL] = P##_col_u8, [CK_I8] = P##_col_i8, [CK_I16] = P##_col_i16,  \
        [CK_I32] = P##_col_i32, [CK_I64] = P##_col_i64, [CK_U8] = P##_col_u8,  \
        [CK_U16] = P##_col_u16, [CK_U32] = P##_col_u32,                        \
        [CK_U64] = P##_col_u64, [CK_F32] = P##_col_f32, [CK_F64] = P##_col_f64 \
    }

static const row_fn rows_tab[C_COUNT][CK_DT_COUNT] = {
    [C_ISUM] = INT_ROW(isum),
    [C_FSUM] = ALL_ROW(fsum),
    [C_FNANSUM] = FLT_ROW(fnansum),
    [C_IPROD] = INT_ROW(iprod),
    [C_FPROD] = FLT_ROW(fprod),
    [C_MIN] = ALL_ROW(min),
    [C_MAX] = ALL_ROW(max),
    [C_NANMIN] = FLT_ROW(nanmin),
    [C_NANMAX] = FLT_ROW(nanmax),
    [C_ARGMIN] = ALL_ROW(argmin),
    [C_ARGMAX] = ALL_ROW(argmax),
    [C_VAR] = ALL_ROW(var),
    [C_NANVAR] = FLT_ROW(nanvar),
    [C_NZ] = ALL_ROW(nz),
    [C_FNANPROD] = FLT_ROW(fnanprod),
    [C_NANARGMIN] = FLT_ROW(nanargmin),
    [C_NANARGMAX] = FLT_ROW(nanargmax),
    [C_NANNZ] = FLT_ROW(nannz),
};

static const col_fn cols_tab[C_COUNT][CK_DT_COUNT] = {
    [C_ISUM] = INT_COL(isum),
    [C_FSUM] = ALL_COL(fsum),
    [C_FNANSUM] = FLT_COL(fnansum),
    [C_IPROD] = INT_COL(iprod),
    [C_FPROD] = FLT_COL(fprod),
    [C_MIN] = ALL_COL(min),
    [C_MAX] = ALL_COL(max),
    [C_NANMIN] = FLT_COL(nanmin),
    [C_NANMAX] = FLT_COL(nanmax),
    [C_ARGMIN] = ALL_COL(argmin),
    [C_ARGMAX] = ALL_COL(argmax),
    [C_VAR] = ALL_COL(var),
    [C_NANVAR] = FLT_COL(nanvar),
    [C_NZ] = ALL_COL(nz),
    [C_FNANPROD] = FLT_COL(fnanprod),
    [C_NANARGMIN] = FLT_COL(nanargmin),
    [C_NANARGMAX] = FLT_COL(nanargmax),
    [C_NANNZ] = FLT_COL(nannz),
};

static int kernel_class(ck_red_op op, int is_float)
{
    switch (op) {
    case CK_RED_SUM:
        return is_float ? C_FSUM : C_ISUM;
    case CK_RED_NANSUM:
        return is_float ? C_FNANSUM : C_ISUM;
    case CK_RED_MEAN:
        return C_FSUM;
    case CK_RED_NANMEAN:
        return is_float ? C_FNANSUM : C_FSUM;
    case CK_RED_PROD:
        return is_float ? C_FPROD : C_IPROD;
    case CK_RED_NANPROD:
        return is_float ? C_FNANPROD : C_IPROD;
    case CK_RED_MIN:
        return C_MIN;
    case CK_RED_MAX:
        return C_MAX;
    case CK_RED_NANMIN:
        return is_float ? C_NANMIN : C_MIN;
    case CK_RED_NANMAX:
        return is_float ? C_NANMAX : C_MAX;
    case CK_RED_ARGMIN:
        return C_ARGMIN;
    case CK_RED_ARGMAX:
        return C_ARGMAX;
    case CK_RED_NANARGMIN:
        return is_float ? C_NANARGMIN : C_ARGMIN;
    case CK_RED_NANARGMAX:
        return is_float ? C_NANARGMAX : C_ARGMAX;
    case CK_RED_VAR:
    case CK_RED_STD:
        return C_VAR;
    case CK_RED_NANVAR:
    case CK_RED_NANSTD:
        return is_float ? C_NANVAR : C_VAR;
    case CK_RED_COUNT_NONZERO:
    case CK_RED_ANY:
    case CK_RED_ALL:
        return C_NZ;
    case CK_RED_NANCOUNT_NONZERO:
        return is_float ? C_NANNZ : C_NZ;
    default:
        return -1;
    }
}

/* Kind of the value a class keeps for dtype t. */
static int value_kind(int cls, ck_dtype t)
{
    if (cls == C_FSUM || cls == C_FNANSUM || cls == C_VAR || cls == C_NANVAR ||
        ck_dtype_is_float(t))
        return CK_RK_FLOAT;
    if (cls == C_ISUM || cls == C_IPROD)
        return ck_dtype_is_signed(t) || t == CK_BOOL ? CK_RK_SIGNED
                                                     : CK_RK_UNSIGNED;
    return ck_dtype_is_signed(t) ? CK_RK_SIGNED : CK_RK_UNSIGNED;
}

/* First fold into a state: its kind and the identity of its value. */
static void start_state(ck_red_state *st, int cls, int kind)
{
    st->kind = kind;
    switch (cls) {
    case C_IPROD:
        st->v.u = 1;
        break;
    case C_FPROD:
    case C_FNANPROD:
        st->v.f = 1.0;
        break;
    case C_MIN:
    case C_NANMIN:
        if (kind == CK_RK_FLOAT)
            st->v.f = INFINITY;
        else if (kind == CK_RK_SIGNED)
            st->v.i = INT64_MAX;
        else
            st->v.u = UINT64_MAX;
        break;
    case C_MAX:
    case C_NANMAX:
        if (kind == CK_RK_FLOAT)
            st->v.f = -INFINITY;
        else if (kind == CK_RK_SIGNED)
            st->v.i = INT64_MIN;
        else
            st->v.u = 0;
        break;
    default:
        break;
    }
}

static void tile_init(tile *t, int64_t w, int cls, int kind)
{
    ck_red_state id = {0};

    start_state(&id, cls, kind);
    for (int64_t j = 0; j < w; j++) {
        t->v.u[j] = id.v.u;
        t->b[j] = t->c[j] = 0;
        t->k[j] = 0;
        t->idx[j] = -1;
    }
    t->pass = 0;
}

/* var: between the passes, the sums become the shifts (batch means). */
static void tile_mid(tile *t, int64_t w)
{
    for (int64_t j = 0; j < w; j++) {
        t->s[j] = t->v.f[j];
        t->v.f[j] = t->k[j] ? t->v.f[j] / (double)t->k[j] : 0;
    }
    t->pass = 1;
}

static void tile_flush(const tile *t, ck_red_state *st, int64_t w, int cls,
                       int kind)
{
    for (int64_t j = 0; j < w; j++, st++) {
        switch (cls) {
        case C_ISUM:
            st->v.u += t->v.u[j];
            break;
        case C_FSUM:
        case C_FNANSUM:
            ck_red_sum_add(st, t->b[j]);
            st->comp += t->c[j];
            st->k += t->k[j];
            break;
        case C_IPROD:
            st->v.u *= t->v.u[j];
            break;
        case C_FPROD:
        case C_FNANPROD:
            st->v.f *= t->v.f[j];
            break;
        case C_MIN:
        case C_MAX: {
            int sign = cls == C_MIN ? 1 : -1;
            if (kind == CK_RK_FLOAT)
                minmax_put_f(st, t->v.f[j], sign);
            else if (kind == CK_RK_SIGNED)
                st->v.i = (sign > 0 ? t->v.i[j] < st->v.i : t->v.i[j] > st->v.i)
                              ? t->v.i[j]
                              : st->v.i;
            else
                st->v.u = (sign > 0 ? t->v.u[j] < st->v.u : t->v.u[j] > st->v.u)
                              ? t->v.u[j]
                              : st->v.u;
            break;
        }
        case C_NANMIN:
            st->k += t->k[j];
            if (t->v.f[j] < st->v.f)
                st->v.f = t->v.f[j];
            break;
        case C_NANMAX:
            st->k += t->k[j];
            if (t->v.f[j] > st->v.f)
                st->v.f = t->v.f[j];
            break;
        case C_ARGMIN:
        case C_ARGMAX:
        case C_NANARGMIN:
        case C_NANARGMAX: {
            int sign = cls == C_ARGMIN || cls == C_NANARGMIN ? 1 : -1;
            if (t->idx[j] < 0)
                break;
            if (cls == C_NANARGMIN || cls == C_NANARGMAX)
                ck_red_nanarg_put(st, t->v.f[j], t->idx[j], sign);
            else if (kind == CK_RK_FLOAT)
                arg_put_f(st, t->v.f[j], t->idx[j], sign);
            else if (kind == CK_RK_SIGNED)
                arg_put_i(st, t->v.i[j], t->idx[j], sign);
            else
                arg_put_u(st, t->v.u[j], t->idx[j], sign);
            break;
        }
        case C_VAR:
        case C_NANVAR:
            if (t->k[j])
                ck_red_sum_add(st, t->s[j]);
            var_put(st, t->k[j], t->v.f[j], t->b[j], t->c[j]);
            break;
        case C_NZ:
        case C_NANNZ:
            st->k += t->k[j];
            break;
        default:
            break;
        }
    }
}

/* ---- the block's axes, simplified ---- */

typedef struct axis {
    int64_t size;
    int64_t is; /* stride in the block, elements */
    int64_t os; /* stride in the output box, states; 0 when reduced */
    int64_t rs; /* stride of the reduced index; 0 when kept */
    int red;
} axis;

/* An odometer over some axes, innermost first, in C order. */
typedef struct odo {
    int nd;
    axis ax[CK_MAX_DIMS];
    int64_t cnt[CK_MAX_DIMS];
    int64_t io, oo, ro; /* offsets: block, output box, reduced index */
} odo;

static void odo_start(odo *o)
{
    for (int d = 0; d < o->nd; d++)
        o->cnt[d] = 0;
    o->io = o->oo = o->ro = 0;
}

static int odo_next(odo *o)
{
    for (int d = 0; d < o->nd; d++) {
        const axis *a = &o->ax[d];
        o->io += a->is;
        o->oo += a->os;
        o->ro += a->rs;
        if (++o->cnt[d] < a->size)
            return 1;
        o->io -= a->is * a->size;
        o->oo -= a->os * a->size;
        o->ro -= a->rs * a->size;
        o->cnt[d] = 0;
    }
    return 0;
}

static ck_code check_args(const ck_red_args *a, ck_err *err)
{
    const char *name = "reduce";

    if ((int)a->op < 0 || a->op >= CK_RED_COUNT)
        return ck_err_set(err, CK_EUSAGE, "%s: unknown op %d", name,
                          (int)a->op);
    if (ck_dtype_size(a->in) == 0)
        return ck_err_set(err, CK_EUSAGE, "%s: invalid input dtype", name);
    if (a->ndim < 0 || a->ndim > CK_MAX_DIMS)
        return ck_err_set(err, CK_EUSAGE, "%s: %d dimensions (at most %d)",
                          name, a->ndim, CK_MAX_DIMS);
    if (a->ndim < 32 && (a->axes >> a->ndim) != 0)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: axes mask 0x%x names an axis beyond %d", name,
                          (unsigned)a->axes, a->ndim);
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] < 0 || a->origin[d] < 0 ||
            a->origin[d] > a->array_shape[d] - a->shape[d])
            return ck_err_set(err, CK_EUSAGE,
                              "%s: block of %lld at %lld on axis %d is "
                              "outside the array's %lld",
                              name, (long long)a->shape[d],
                              (long long)a->origin[d], d,
                              (long long)a->array_shape[d]);
    }
    return CK_OK;
}

/* Every state of a block gets the block's nred elements counted (and
 * starts, if it is new). */
static void count_states(ck_red_state *st, int64_t n, int cls, int kind,
                         int64_t nred, int counts_all)
{
    for (int64_t i = 0; i < n; i++) {
        if (st[i].kind == CK_RK_NONE)
            start_state(&st[i], cls, kind);
        st[i].n += nred;
        if (counts_all)
            st[i].k += nred;
    }
}

ck_code ck_cpu_reduce(ck_be_ctx *ctx, const ck_red_args *a, ck_err *err)
{
    (void)ctx;
    CK_TRY(check_args(a, err));

    int is_float = ck_dtype_is_float(a->in);
    int cls = kernel_class(a->op, is_float);
    int kind = value_kind(cls, a->in);
    int is_arg = cls == C_ARGMIN || cls == C_ARGMAX || cls == C_NANARGMIN ||
                 cls == C_NANARGMAX;
    row_fn row = rows_tab[cls][a->in];
    col_fn col = cols_tab[cls][a->in];
    size_t esz = ck_dtype_size(a->in);
    const char *x = a->data;
    ck_red_state *st = a->state;

    /* Strides of every axis, innermost first; the reduced index of the
     * block's first element. */
    axis ax[CK_MAX_DIMS];
    int64_t is = 1, os = 1, rs = 1, rbase = 0, nred = 1;
    for (int d = a->ndim - 1, i = 0; d >= 0; d--, i++) {
        int red = (a->axes >> d) & 1u;
        if (a->shape[d] == 0)
            return CK_OK; /* nothing to fold */
        ax[i].size = a->shape[d];
        ax[i].is = is;
        ax[i].red = red;
        is *= a->shape[d];
        if (red) {
            ax[i].os = 0;
            ax[i].rs = is_arg ? rs : 0;
            rbase += a->origin[d] * rs;
            rs *= a->array_shape[d];
            nred *= a->shape[d];
        } else {
            ax[i].os = os;
            ax[i].rs = 0;
            os *= a->shape[d];
        }
    }
    int64_t nout = os;

    /* Drop length-1 axes; merge neighbours that step alike. */
    axis m[CK_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a->ndim; i++) {
        if (ax[i].size == 1)
            continue;
        if (nd > 0) {
            axis *g = &m[nd - 1];
            if (g->red == ax[i].red && ax[i].is == g->size * g->is &&
                ax[i].os == g->size * g->os && ax[i].rs == g->size * g->rs) {
                g->size *= ax[i].size;
                continue;
            }
        }
        m[nd++] = ax[i];
    }
    if (nd == 0) /* one element: one reduced axis of length 1 */
        m[nd++] = (axis){.size = 1, .is = 1, .os = 0, .rs = 1, .red = 1};

    int counts_all = cls == C_ISUM || cls == C_FSUM || cls == C_IPROD ||
                     cls == C_FPROD || cls == C_MIN || cls == C_MAX;

    if (m[0].red) {
        count_states(st, nout, cls, kind, nred, counts_all);
        /* Last axis reduced: each run of it folds into one state. */
        odo o = {.nd = nd - 1};
        for (int d = 1; d < nd; d++)
            o.ax[d - 1] = m[d];
        odo_start(&o);
        do {
            row(st + o.oo, x + o.io * (int64_t)esz, m[0].size, rbase + o.ro,
                m[0].rs);
        } while (odo_next(&o));
        return CK_OK;
    }

    /* Last axis kept: tiles of it fold the reduced axes row by row.  ok:
     * the kept axes above it; orr: the reduced axes above the innermost
     * reduced one (inner), which the column kernel walks itself. */
    odo ok = {.nd = 0}, orr = {.nd = 0};
    axis inner = {.size = 1, .is = 0, .os = 0, .rs = 0, .red = 1};
    int have_inner = 0;
    for (int d = 1; d < nd; d++) {
        if (!m[d].red)
            ok.ax[ok.nd++] = m[d];
        else if (!have_inner)
            inner = m[d], have_inner = 1;
        else
            orr.ax[orr.nd++] = m[d];
    }
    int npass = cls == C_VAR || cls == C_NANVAR ? 2 : 1;
    int64_t width = m[0].size;
    tile t;

    odo_start(&ok);
    do {
        for (int64_t t0 = 0; t0 < width; t0 += TILE) {
            int64_t w = width - t0 < TILE ? width - t0 : TILE;
            tile_init(&t, w, cls, kind);
            for (int pass = 0; pass < npass; pass++) {
                if (pass == 1)
                    tile_mid(&t, w);
                odo_start(&orr);
                do {
                    int64_t off = ok.io + orr.io + t0;
                    col(&t, x + off * (int64_t)esz, w, inner.size, inner.is,
                        rbase + orr.ro, inner.rs);
                } while (odo_next(&orr));
            }
            /* the tile's states are counted as they are flushed, while
             * they are in cache (a time mean touches each state once per
             * chunk, not twice) */
            count_states(st + ok.oo + t0, w, cls, kind, nred, counts_all);
            tile_flush(&t, st + ok.oo + t0, w, cls, kind);
        }
    } while (odo_next(&ok));
    return CK_OK;
}
