/*
 * ops/quantile.c - ordered keys, multi-rank selection and NumPy 1.24's
 * quantile and median arithmetic (see quantile.h).
 */
#include "ops/quantile.h"

#include <math.h>
#include <string.h>

#define SIGN64 ((uint64_t)1 << 63)

static uint64_t key_f64(double x)
{
    uint64_t u;

    if (x != x)
        return CK_Q_NAN_KEY;
    memcpy(&u, &x, sizeof u);
    return (u & SIGN64) ? ~u : u | SIGN64;
}

static double f64_of(uint64_t k)
{
    uint64_t u = (k & SIGN64) ? k & ~SIGN64 : ~k;
    double x;

    memcpy(&x, &u, sizeof x);
    return x;
}

void ck_q_keys(ck_dtype t, const void *src, size_t n, uint64_t *dst)
{
    size_t i;

#define CK_Q_LOOP(T, expr)                                                     \
    do {                                                                       \
        const T *s = src;                                                      \
        for (i = 0; i < n; i++)                                                \
            dst[i] = (expr);                                                   \
    } while (0)
    switch (t) {
    case CK_F64:
        CK_Q_LOOP(double, key_f64(s[i]));
        break;
    case CK_F32:
        CK_Q_LOOP(float, key_f64((double)s[i]));
        break;
    case CK_I8:
        CK_Q_LOOP(int8_t, (uint64_t)(int64_t)s[i] ^ SIGN64);
        break;
    case CK_I16:
        CK_Q_LOOP(int16_t, (uint64_t)(int64_t)s[i] ^ SIGN64);
        break;
    case CK_I32:
        CK_Q_LOOP(int32_t, (uint64_t)(int64_t)s[i] ^ SIGN64);
        break;
    case CK_I64:
        CK_Q_LOOP(int64_t, (uint64_t)s[i] ^ SIGN64);
        break;
    case CK_BOOL:
        CK_Q_LOOP(uint8_t, s[i] != 0);
        break;
    case CK_U8:
        CK_Q_LOOP(uint8_t, s[i]);
        break;
    case CK_U16:
        CK_Q_LOOP(uint16_t, s[i]);
        break;
    case CK_U32:
        CK_Q_LOOP(uint32_t, s[i]);
        break;
    case CK_U64:
        CK_Q_LOOP(uint64_t, s[i]);
        break;
    default:
        memset(dst, 0, n * sizeof *dst);
        break;
    }
#undef CK_Q_LOOP
}

/* ---- selection ---- */

static void swap(uint64_t *a, uint64_t *b)
{
    uint64_t t = *a;
    *a = *b;
    *b = t;
}

static uint64_t med3(uint64_t a, uint64_t b, uint64_t c)
{
    if (a < b)
        return b < c ? b : a < c ? c : a;
    return a < c ? a : b < c ? c : b;
}

static void insertion(uint64_t *v, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        int64_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static void sift(uint64_t *v, int64_t i, int64_t n)
{
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && v[c + 1] > v[c])
            c++;
        if (v[i] >= v[c])
            return;
        swap(&v[i], &v[c]);
        i = c;
    }
}

static void heapsort(uint64_t *v, int64_t n)
{
    for (int64_t i = n / 2; i-- > 0;)
        sift(v, i, n);
    for (int64_t e = n - 1; e > 0; e--) {
        swap(&v[0], &v[e]);
        sift(v, 0, e);
    }
}

/* Selects ranks rk[0..nr) (absolute, ascending, inside [lo, hi)). */
static void select_range(uint64_t *v, int64_t lo, int64_t hi, const int64_t *rk,
                         int nr, int depth)
{
    while (nr > 0) {
        int64_t n = hi - lo;
        if (n <= 24) {
            insertion(v + lo, n);
            return;
        }
        if (depth-- <= 0) {
            heapsort(v + lo, n);
            return;
        }
        uint64_t p;
        int64_t m = lo + n / 2;
        if (n > 128) {
            int64_t s = n / 8;
            p = med3(med3(v[lo], v[lo + s], v[lo + 2 * s]),
                     med3(v[m - s], v[m], v[m + s]),
                     med3(v[hi - 1 - 2 * s], v[hi - 1 - s], v[hi - 1]));
        } else {
            p = med3(v[lo], v[m], v[hi - 1]);
        }
        /* [lo, lt) < p, [lt, i) == p, [gt, hi) > p */
        int64_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            uint64_t x = v[i];
            if (x < p)
                swap(&v[lt++], &v[i++]);
            else if (x > p)
                swap(&v[i], &v[--gt]);
            else
                i++;
        }
        int a = 0, b;
        while (a < nr && rk[a] < lt)
            a++;
        b = a;
        while (b < nr && rk[b] < gt)
            b++;
        /* the smaller side by recursion, the other by the loop */
        if (lt - lo < hi - gt) {
            select_range(v, lo, lt, rk, a, depth);
            lo = gt;
            rk += b;
            nr -= b;
        } else {
            select_range(v, gt, hi, rk + b, nr - b, depth);
            hi = lt;
            nr = a;
        }
    }
}

void ck_q_select(uint64_t *v, int64_t n, const int64_t *ranks, int nranks)
{
    int depth = 2;

    for (int64_t k = n; k > 1; k >>= 1)
        depth += 2;
    select_range(v, 0, n, ranks, nranks, depth);
}

/* ---- NumPy's arithmetic ---- */

void ck_q_linear(int64_t n, double q, int64_t *lo, int64_t *hi, double *t)
{
    double v = (double)(n - 1) * q;

    if (v >= (double)(n - 1)) {
        /* _get_indexes: above the bounds both indexes are -1 (the last),
         * and _get_gamma subtracts that -1 */
        *lo = *hi = n - 1;
        *t = v - -1.0;
        return;
    }
    double f = floor(v);
    *lo = (int64_t)f;
    *hi = *lo + 1;
    *t = v - f;
}

static int is_signed(ck_dtype t)
{
    return t == CK_I8 || t == CK_I16 || t == CK_I32 || t == CK_I64;
}

double ck_q_lerp(ck_dtype dt, uint64_t ka, uint64_t kb, double t)
{
    double a, b, diff;

    if (dt == CK_F64 || dt == CK_F32) {
        a = f64_of(ka);
        b = f64_of(kb);
        diff = b - a;
        if (dt == CK_F32)
            diff = (double)((float)b - (float)a);
    } else if (is_signed(dt)) {
        int64_t ia = (int64_t)(ka ^ SIGN64), ib = (int64_t)(kb ^ SIGN64), d;
        a = (double)ia;
        b = (double)ib;
        diff = __builtin_sub_overflow(ib, ia, &d) ? b - a : (double)d;
    } else {
        a = (double)ka;
        b = (double)kb;
        diff = (double)(kb - ka);
    }
    if (t >= 0.5)
        return b - diff * (1 - t);
    return a + diff * t;
}

double ck_q_median(ck_dtype dt, uint64_t ka, uint64_t kb, int odd, int twice)
{
    if (dt == CK_F32) {
        float a = (float)f64_of(ka), b = (float)f64_of(kb);
        if (odd && !twice)
            return a;
        float s = a + (0.0f + b);
        return (double)(s / 2.0f);
    }
    double a, b;
    if (dt == CK_F64) {
        a = f64_of(ka);
        b = f64_of(kb);
    } else if (is_signed(dt)) {
        a = (double)(int64_t)(ka ^ SIGN64);
        b = (double)(int64_t)(kb ^ SIGN64);
    } else {
        a = (double)ka;
        b = (double)kb;
    }
    if (odd && !twice)
        return a;
    return (a + (0.0 + b)) / 2.0;
}
