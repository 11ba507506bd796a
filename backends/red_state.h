/*
 * backends/red_state.h - the partial state of a reduction: what a backend's
 * reduce slot folds blocks into and what ops/reduce.c combines and
 * finalises.  One layout for every op and dtype (ck_red_state_size), so
 * the executor can allocate states before it knows the data; a state
 * records the kind of value it holds (signed, unsigned or float) once the
 * first element arrives, which is how combine and finalize, which are not
 * told the dtype, compare and convert correctly.
 */
#ifndef CK_RED_STATE_H
#define CK_RED_STATE_H

#include <math.h>
#include <stdint.h>

/* Kind of ck_red_state.v; CK_RK_NONE until an element is folded. */
enum { CK_RK_NONE = 0, CK_RK_SIGNED, CK_RK_UNSIGNED, CK_RK_FLOAT };

typedef struct ck_red_state {
    /* sum, nansum, mean (float sum), prod, min/max and argmin/argmax's
     * value; integer sums and products wrap in .u like NumPy's */
    union {
        double f;
        int64_t i;
        uint64_t u;
    } v;
    double comp;    /* Neumaier compensation of v.f */
    double mean;    /* var/std: running mean (Chan et al.) */
    double m2;      /* var/std: sum of squared deviations from mean */
    int64_t n;      /* elements folded, NaN included */
    int64_t k;      /* elements that entered the value (non-NaN ones for
                       nan-ops, all for mean/var) or, for count_nonzero,
                       any and all, the nonzero ones */
    int64_t idx;    /* argmin/argmax: index of v in the reduced axes
                       (C order over them in the whole array); -1 first */
    int32_t kind;   /* CK_RK_* */
    int32_t unused; /* keeps the size a multiple of 8 */
} ck_red_state;

/* Adds x to the compensated sum (v.f, comp), Neumaier's variant of Kahan
 * summation: the rounding error of each addition goes into comp.  With an
 * infinite or NaN sum comp turns NaN; readers use ck_red_sum_value. */
static inline void ck_red_sum_add(ck_red_state *s, double x)
{
    double t = s->v.f + x;

    if (fabs(s->v.f) >= fabs(x))
        s->comp += (s->v.f - t) + x;
    else
        s->comp += (x - t) + s->v.f;
    s->v.f = t;
}

static inline double ck_red_sum_value(const ck_red_state *s)
{
    return isfinite(s->v.f) ? s->v.f + s->comp : s->v.f;
}

/* Merges a batch of nb elements with mean mb and squared deviations m2b
 * into s's (k, mean, m2): Chan, Golub and LeVeque's parallel update. */
static inline void ck_red_chan_merge(ck_red_state *s, int64_t nb, double mb,
                                     double m2b)
{
    if (nb == 0)
        return;
    if (s->k == 0) {
        s->k = nb;
        s->mean = mb;
        s->m2 = m2b;
        return;
    }
    double na = (double)s->k, n = (double)(s->k + nb);
    double delta = mb - s->mean;

    s->mean += delta * ((double)nb / n);
    s->m2 += m2b + delta * delta * (na * (double)nb / n);
    s->k += nb;
}

/* nanargmin (sign 1) / nanargmax (sign -1) as NumPy's: NaN counts as +inf
 * (-inf for nanargmax), then the first index.  A candidate v at idx is
 * merged into s; on a tie of NaN with that infinity the index is the
 * first one's and the value kept is the number, so s->v.f is NaN at the
 * end only when every value was ("All-NaN slice encountered"). */
static inline void ck_red_nanarg_put(ck_red_state *s, double v, int64_t idx,
                                     int sign)
{
    if (s->idx >= 0) {
        double inf = sign > 0 ? INFINITY : -INFINITY;
        double kv = isnan(v) ? inf : v, ks = isnan(s->v.f) ? inf : s->v.f;
        if (kv != ks) {
            if (sign > 0 ? kv > ks : kv < ks)
                return;
        } else if (idx > s->idx) {
            if (isnan(s->v.f))
                s->v.f = v;
            return;
        } else if (isnan(v)) {
            s->idx = idx;
            return;
        }
    }
    s->v.f = v;
    s->idx = idx;
}

#endif
