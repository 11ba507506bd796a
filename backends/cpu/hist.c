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

/* Unweighted counts take two passes over blocks of SPAN values: the bins
 * first (slot n for values outside the range or NaN, so that pass has no
 * branch and vectorizes: AVX2 gathers fetch the edges where the CPU has
 * them), then the counting, into LANES interleaved 32-bit histograms so
 * that runs of equal bins (the normal case: neighbouring values are
 * close) do not wait on each other's read-modify-write of one counter.
 * Counters go to the caller's doubles every BLOCK values, before one
 * could overflow, and at the end. */
enum { LANES = 4, LANE_BINS = 1024, SPAN = 1024, BLOCK = 1 << 30 };

/* NumPy's uniform fast path for one value v, branch-free, in the type C of
 * the edges e[] (float for float32 data, double otherwise).  An
 * out-of-range value is binned as first would be, then sent to slot n. */
#define UNIFORM_BIN(C, v, first, last, norm, e, n, out)                        \
    do {                                                                       \
        C v_ = (v);                                                            \
        int in_ = (v_ >= (first)) & (v_ <= (last));                            \
        C u_ = in_ ? v_ : (first);                                             \
        C f_ = (u_ - (first)) * (norm);                                        \
        int b_ = f_ < (C)((n)-1) ? (int)f_ : (n)-1;                            \
        b_ -= u_ < (e)[b_];                                                    \
        b_ += (b_ < (n)-1) & (u_ >= (e)[b_ + 1]);                              \
        (out) = in_ ? b_ : (n);                                                \
    } while (0)

/* The edges of one call in the data's arithmetic type.  fd, dd: the
 * largest distance of an edge's computed position (e[k] - first) * norm
 * from k, rounded up.  Computing positions is monotone in the value, so a
 * value whose position f lies more than that inside (b, b + 1), b = floor
 * f, is strictly between e[b] and e[b + 1]: NumPy's corrections cannot
 * fire and b is its bin.  The vector passes trust b for those values and
 * run UNIFORM_BIN for the rest (values within rounding of an edge, and
 * those in the last bin), which needs no gather of edges. */
typedef struct lanes_edges {
    int n;
    float ef[LANE_BINS + 1];
    double ed[LANE_BINS + 1];
    float ff, fl, fn, fd, fh; /* first, last, norm, slack, 1 - slack in
                                 float32 (fh rounded down) */
    double df, dl, dn, dd, dh;
} lanes_edges;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* UNIFORM_BIN for 8 float32 values at a time. */
__attribute__((target("avx2"))) static void
bins_f32_avx2(const void *xv, size_t m, const lanes_edges *L, int32_t *idx)
{
    const float *x = xv;
    const __m256 vf = _mm256_set1_ps(L->ff), vl = _mm256_set1_ps(L->fl);
    const __m256 vn = _mm256_set1_ps(L->fn), top = _mm256_set1_ps((float)L->n);
    const __m256 lo = _mm256_set1_ps(L->fd), hi = _mm256_set1_ps(L->fh);
    const __m256i slot = _mm256_set1_epi32(L->n);
    const __m256i last = _mm256_set1_epi32(L->n - 2);
    size_t j = 0;

    for (; j + 8 <= m; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        __m256 in = _mm256_and_ps(_mm256_cmp_ps(v, vf, _CMP_GE_OQ),
                                  _mm256_cmp_ps(v, vl, _CMP_LE_OQ));
        __m256 u = _mm256_blendv_ps(vf, v, in);
        __m256 f = _mm256_min_ps(_mm256_mul_ps(_mm256_sub_ps(u, vf), vn), top);
        __m256i b = _mm256_cvttps_epi32(f);
        __m256 frac = _mm256_sub_ps(f, _mm256_cvtepi32_ps(b));
        __m256 odd =
            _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(frac, lo, _CMP_LE_OQ),
                                      _mm256_cmp_ps(frac, hi, _CMP_GE_OQ)),
                         _mm256_castsi256_ps(_mm256_cmpgt_epi32(b, last)));
        b = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(slot),
                                                 _mm256_castsi256_ps(b), in));
        _mm256_storeu_si256((__m256i *)(void *)(idx + j), b);
        for (int k = _mm256_movemask_ps(_mm256_and_ps(odd, in)); k;
             k &= k - 1) {
            size_t i = j + (size_t)__builtin_ctz((unsigned)k);
            UNIFORM_BIN(float, x[i], L->ff, L->fl, L->fn, L->ef, L->n, idx[i]);
        }
    }
    for (; j < m; j++)
        UNIFORM_BIN(float, x[j], L->ff, L->fl, L->fn, L->ef, L->n, idx[j]);
}

/* The same for 4 float64 values at a time. */
__attribute__((target("avx2"))) static void
bins_f64_avx2(const void *xv, size_t m, const lanes_edges *L, int32_t *idx)
{
    const double *x = xv;
    const __m256d vf = _mm256_set1_pd(L->df), vl = _mm256_set1_pd(L->dl);
    const __m256d vn = _mm256_set1_pd(L->dn), top = _mm256_set1_pd(L->n);
    const __m256d lo = _mm256_set1_pd(L->dd), hi = _mm256_set1_pd(L->dh);
    size_t j = 0;

    for (; j + 4 <= m; j += 4) {
        __m256d v = _mm256_loadu_pd(x + j);
        __m256d in = _mm256_and_pd(_mm256_cmp_pd(v, vf, _CMP_GE_OQ),
                                   _mm256_cmp_pd(v, vl, _CMP_LE_OQ));
        __m256d u = _mm256_blendv_pd(vf, v, in);
        __m256d f = _mm256_min_pd(_mm256_mul_pd(_mm256_sub_pd(u, vf), vn), top);
        __m128i b = _mm256_cvttpd_epi32(f);
        __m256d frac = _mm256_sub_pd(f, _mm256_cvtepi32_pd(b));
        __m256d odd = _mm256_or_pd(_mm256_cmp_pd(frac, lo, _CMP_LE_OQ),
                                   _mm256_cmp_pd(frac, hi, _CMP_GE_OQ));
        int32_t bb[4];
        int inm = _mm256_movemask_pd(in), oddm = _mm256_movemask_pd(odd);
        _mm_storeu_si128((__m128i *)(void *)bb, b);
        for (int k = 0; k < 4; k++) {
            size_t i = j + (size_t)k;
            if (!(inm >> k & 1))
                idx[i] = L->n;
            else if ((oddm >> k & 1) || bb[k] > L->n - 2)
                UNIFORM_BIN(double, x[i], L->df, L->dl, L->dn, L->ed, L->n,
                            idx[i]);
            else
                idx[i] = bb[k];
        }
    }
    for (; j < m; j++)
        UNIFORM_BIN(double, x[j], L->df, L->dl, L->dn, L->ed, L->n, idx[j]);
}

static int have_avx2(void)
{
    static int have = -1;
    if (have < 0)
        have = __builtin_cpu_supports("avx2");
    return have;
}
#else
static int have_avx2(void)
{
    return 0;
}
#endif

/* The bins pass for values of type T computed in C (e the edges in C). */
#define DEF_BINS(N, T, C, e, first, last, norm)                                \
    static void bins_##N(const void *xv, size_t m, const lanes_edges *L,       \
                         int32_t *idx)                                         \
    {                                                                          \
        const T *x = xv;                                                       \
        for (size_t j = 0; j < m; j++)                                         \
            UNIFORM_BIN(C, (C)x[j], L->first, L->last, L->norm, L->e, L->n,    \
                        idx[j]);                                               \
    }

DEF_BINS(f32, float, float, ef, ff, fl, fn)
DEF_BINS(b, uint8_t, double, ed, df, dl, dn)
DEF_BINS(i8, int8_t, double, ed, df, dl, dn)
DEF_BINS(i16, int16_t, double, ed, df, dl, dn)
DEF_BINS(i32, int32_t, double, ed, df, dl, dn)
DEF_BINS(i64, int64_t, double, ed, df, dl, dn)
DEF_BINS(u16, uint16_t, double, ed, df, dl, dn)
DEF_BINS(u32, uint32_t, double, ed, df, dl, dn)
DEF_BINS(u64, uint64_t, double, ed, df, dl, dn)
DEF_BINS(f32d, float, double, ed, df, dl, dn)
DEF_BINS(f64, double, double, ed, df, dl, dn)

typedef void (*bins_fn)(const void *x, size_t m, const lanes_edges *L,
                        int32_t *idx);

static const bins_fn bins_tab[CK_DT_COUNT] = {
    [CK_BOOL] = bins_b,   [CK_I8] = bins_i8,   [CK_I16] = bins_i16,
    [CK_I32] = bins_i32,  [CK_I64] = bins_i64, [CK_U8] = bins_b,
    [CK_U16] = bins_u16,  [CK_U32] = bins_u32, [CK_U64] = bins_u64,
    [CK_F32] = bins_f32d, [CK_F64] = bins_f64,
};

/* Unweighted uniform counts with at most LANE_BINS bins; f32 when the
 * data are float32 and so are the edges (NumPy's float32 arithmetic). */
static void lanes(const ck_hist_args *a, int f32)
{
    lanes_edges L;
    uint32_t cnt[LANES][LANE_BINS + 1];
    int32_t idx[SPAN];
    size_t esz = ck_dtype_size(a->in);
    bins_fn bins = f32 ? bins_f32 : bins_tab[a->in];
    int n = a->nbins;

#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2() && f32)
        bins = bins_f32_avx2;
    else if (have_avx2() && a->in == CK_F64)
        bins = bins_f64_avx2;
#endif
    L.n = n;
    for (int i = 0; i <= n; i++) {
        L.ef[i] = (float)a->edges[i];
        L.ed[i] = a->edges[i];
    }
    L.ff = L.ef[0];
    L.fl = L.ef[n];
    L.fn = (float)((double)n / (a->edges[n] - a->edges[0]));
    L.df = L.ed[0];
    L.dl = L.ed[n];
    L.dn = (double)n / (a->edges[n] - a->edges[0]);
    /* the slack: see lanes_edges */
    double sf = 0, sd = 0;
    for (int i = 0; i <= n; i++) {
        double pf = (double)((L.ef[i] - L.ff) * L.fn);
        double pd = (L.ed[i] - L.df) * L.dn;
        sf = fabs(pf - i) > sf ? fabs(pf - i) : sf;
        sd = fabs(pd - i) > sd ? fabs(pd - i) : sd;
    }
    L.fd = (float)sf;
    if ((double)L.fd < sf)
        L.fd = nextafterf(L.fd, INFINITY);
    L.dd = nextafter(sd, INFINITY);
    L.fh = nextafterf(1.0f - L.fd, 0.0f);
    L.dh = nextafter(1.0 - L.dd, 0.0);
    for (size_t s = 0; s < a->n; s += BLOCK) {
        size_t end = a->n - s < BLOCK ? a->n : s + BLOCK;
        memset(cnt, 0, sizeof cnt);
        for (size_t p = s; p < end; p += SPAN) {
            size_t m = end - p < SPAN ? end - p : SPAN, j = 0;
            bins((const char *)a->data + p * esz, m, &L, idx);
            for (; j + LANES <= m; j += LANES) {
                cnt[0][idx[j]]++;
                cnt[1][idx[j + 1]]++;
                cnt[2][idx[j + 2]]++;
                cnt[3][idx[j + 3]]++;
            }
            for (; j < m; j++)
                cnt[0][idx[j]]++;
        }
        for (int b = 0; b < n; b++)
            a->counts[b] += (double)cnt[0][b] + (double)cnt[1][b] +
                            (double)cnt[2][b] + (double)cnt[3][b];
    }
}

#define DEF_UNIFORM(N, T)                                                      \
    static void uniform_##N(const ck_hist_args *a)                             \
    {                                                                          \
        const T *x = a->data;                                                  \
        int n = a->nbins;                                                      \
        double first = a->edges[0], last = a->edges[n];                        \
        double norm = (double)n / (last - first);                              \
        if (!a->weights && n <= LANE_BINS) {                                   \
            lanes(a, 0);                                                       \
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
        if (!a->weights && a->nbins <= LANE_BINS)
            lanes(a, 1);
        else
            uniform_in_float32(a);
    else
        uniform_tab[a->in](a);
    return CK_OK;
}
