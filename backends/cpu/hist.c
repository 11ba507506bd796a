/*
 * backends/cpu/hist.c - counts one block into a 1-D histogram the way
 * numpy.histogram (NumPy 1.24) does.
 *
 * Uniform bins take NumPy's fast path: index = (x - first) * norm
 * truncated, the value on the last edge moved into the last bin, then
 * one step down if x is below its bin's left edge and one step up if it
 * is on or past the right edge (except in the last bin).  For float32
 * data all of this runs in float32 against float32 edges, as NumPy's type
 * rules make it do; otherwise in float64.  Explicit edges are searched
 * (largest i with edges[i] <= x, the last bin closed), which is what
 * NumPy's searchsorted-based path counts.  Values outside [edges[0],
 * edges[nbins]] and NaN are dropped.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/cpu.h"

/* The weight of value i as a double (bincount casts weights so). */
static double weight(const ck_hist_args *a, size_t i)
{
    return ck_dtype_load_f64(a->wtype, a->weights, i);
}

static void add(const ck_hist_args *a, size_t i, int b)
{
    a->counts[b] += a->weights ? weight(a, i) : 1.0;
}

/* Largest i < n with e[i] <= v, for e[0] <= v < e[n]. */
static int search(const double *e, int n, double v)
{
    int lo = 0, hi = n;

    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (e[mid] <= v)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* float32 data, float32 edges.  norm is NumPy's n / (last - first), a
 * Python float that float32 arithmetic rounds to float32; NumPy takes it
 * from the range as given, here from the edges, which are that range
 * rounded to float32.  The two can differ by an ulp or so, which moves the
 * first guess by at most one bin, and the correction below undoes that
 * exactly as it does for NumPy. */
static void uniform_in_float32(const ck_hist_args *a)
{
    const float *x = a->data;
    int n = a->nbins;
    float first = (float)a->edges[0], last = (float)a->edges[n];
    float norm = (float)((double)n / (a->edges[n] - a->edges[0]));

    for (size_t i = 0; i < a->n; i++) {
        float v = x[i];
        if (!(v >= first && v <= last))
            continue;
        float f = (v - first) * norm;
        int64_t b = f < (float)n ? (int64_t)f : n;
        if (b >= n) /* NumPy: only == n happens; larger is clamped too */
            b = n - 1;
        if (v < (float)a->edges[b])
            b--;
        if (b < n - 1 && v >= (float)a->edges[b + 1])
            b++;
        if (b < 0)
            b = 0;
        add(a, i, (int)b);
    }
}

/* The bin of v under NumPy's uniform fast path (see the top of the file),
 * or -1 when v is outside [first, last] or NaN. */
static inline int64_t uniform_bin(double v, double first, double last,
                                  double norm, const double *e, int n)
{
    if (!(v >= first && v <= last))
        return -1;
    double f = (v - first) * norm;
    int64_t b = f < (double)n ? (int64_t)f : n;
    if (b >= n)
        b = n - 1;
    if (v < e[b])
        b--;
    if (b < n - 1 && v >= e[b + 1])
        b++;
    return b < 0 ? 0 : b;
}

/* Unweighted counts go to LANES interleaved integer histograms, so that
 * runs of equal bins (the normal case: neighbouring values are close) do
 * not wait on each other's read-modify-write of one counter; they are
 * summed into the caller's doubles once per block. */
enum { LANES = 4, LANE_BINS = 1024 };

#define DEF_UNIFORM(N, T)                                                      \
    static void uniform_##N(const ck_hist_args *a)                             \
    {                                                                          \
        const T *x = a->data;                                                  \
        int n = a->nbins;                                                      \
        double first = a->edges[0], last = a->edges[n];                        \
        double norm = (double)n / (last - first);                              \
        if (!a->weights && n <= LANE_BINS) {                                   \
            int64_t cnt[LANES][LANE_BINS];                                     \
            for (int l = 0; l < LANES; l++)                                    \
                memset(cnt[l], 0, sizeof(int64_t) * (size_t)n);                \
            for (size_t i = 0; i < a->n; i++) {                                \
                int64_t b =                                                    \
                    uniform_bin((double)x[i], first, last, norm, a->edges, n); \
                if (b >= 0)                                                    \
                    cnt[i % LANES][b]++;                                       \
            }                                                                  \
            for (int b = 0; b < n; b++)                                        \
                a->counts[b] +=                                                \
                    (double)(cnt[0][b] + cnt[1][b] + cnt[2][b] + cnt[3][b]);   \
            return;                                                            \
        }                                                                      \
        for (size_t i = 0; i < a->n; i++) {                                    \
            int64_t b =                                                        \
                uniform_bin((double)x[i], first, last, norm, a->edges, n);     \
            if (b >= 0)                                                        \
                add(a, i, (int)b);                                             \
        }                                                                      \
    }                                                                          \
    static void search_##N(const ck_hist_args *a)                              \
    {                                                                          \
        const T *x = a->data;                                                  \
        int n = a->nbins;                                                      \
        double first = a->edges[0], last = a->edges[n];                        \
        for (size_t i = 0; i < a->n; i++) {                                    \
            double v = (double)x[i];                                           \
            if (!(v >= first && v <= last))                                    \
                continue;                                                      \
            add(a, i, v == last ? n - 1 : search(a->edges, n, v));             \
        }                                                                      \
    }

DEF_UNIFORM(b, uint8_t)
DEF_UNIFORM(i8, int8_t)
DEF_UNIFORM(i16, int16_t)
DEF_UNIFORM(i32, int32_t)
DEF_UNIFORM(i64, int64_t)
DEF_UNIFORM(u16, uint16_t)
DEF_UNIFORM(u32, uint32_t)
DEF_UNIFORM(u64, uint64_t)
DEF_UNIFORM(f32, float)
DEF_UNIFORM(f64, double)

typedef void (*hist_fn)(const ck_hist_args *a);

static const hist_fn uniform_tab[CK_DT_COUNT] = {
    [CK_BOOL] = uniform_b,  [CK_I8] = uniform_i8,   [CK_I16] = uniform_i16,
    [CK_I32] = uniform_i32, [CK_I64] = uniform_i64, [CK_U8] = uniform_b,
    [CK_U16] = uniform_u16, [CK_U32] = uniform_u32, [CK_U64] = uniform_u64,
    [CK_F32] = uniform_f32, [CK_F64] = uniform_f64,
};

static const hist_fn search_tab[CK_DT_COUNT] = {
    [CK_BOOL] = search_b,  [CK_I8] = search_i8,   [CK_I16] = search_i16,
    [CK_I32] = search_i32, [CK_I64] = search_i64, [CK_U8] = search_b,
    [CK_U16] = search_u16, [CK_U32] = search_u32, [CK_U64] = search_u64,
    [CK_F32] = search_f32, [CK_F64] = search_f64,
};

/* Are all edges float32 values?  (Not so when the range overflows float32
 * and NumPy's bins turn float64.) */
static int float32_edges(const double *e, int n)
{
    for (int i = 0; i <= n; i++) {
        if (!(fabs(e[i]) <= FLT_MAX) || (double)(float)e[i] != e[i])
            return 0;
    }
    return 1;
}

ck_code ck_cpu_hist(ck_be_ctx *ctx, const ck_hist_args *a, ck_err *err)
{
    (void)ctx;
    if (ck_dtype_size(a->in) == 0)
        return ck_err_set(err, CK_EUSAGE, "histogram: invalid input dtype");
    if (a->weights && ck_dtype_size(a->wtype) == 0)
        return ck_err_set(err, CK_EUSAGE, "histogram: invalid weights dtype");
    if (a->nbins < 1 || !a->edges || !a->counts)
        return ck_err_set(err, CK_EUSAGE,
                          "histogram: need at least one bin and its edges");
    if (!a->uniform)
        search_tab[a->in](a);
    else if (a->in == CK_F32 && float32_edges(a->edges, a->nbins))
        uniform_in_float32(a);
    else
        uniform_tab[a->in](a);
    return CK_OK;
}
