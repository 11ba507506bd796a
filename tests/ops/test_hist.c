/*
 * tests/ops/test_hist.c - the Criterion suite "hist": ops/hist.h and the
 * CPU backend's hist slot against NumPy 1.24, bit for bit.  The random
 * cases (values on every edge and next to it, NaN, inf, weights, float32
 * and float64 data, integer data, explicit edges, histogram2d) are in
 * tests/data/ops/hist_cases.txt, made by gen_hist.py beside it; the tests
 * after them pin single rules with the NumPy line each comes from.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "ops/hist.h"

TestSuite(hist, .description = "ops/hist.h: numpy.histogram, histogram2d");

/* ---- hist_cases.txt ---- */

static char *data_path(const char *name)
{
    const char *dir = getenv("CK_TEST_DATA");
    static char path[4096];

    snprintf(path, sizeof path, "%s/ops/%s", dir ? dir : "tests/data", name);
    return path;
}

/* One record: its header words and its named sections of values. */
typedef struct rec {
    char *head[16];
    int nhead;
    char *name[8];
    char **val[8];
    int nval[8];
    int nsec;
} rec;

static void rec_free(rec *r)
{
    for (int i = 0; i < r->nsec; i++)
        free(r->val[i]);
    memset(r, 0, sizeof *r);
}

/* Splits line (in place) into header words and "| name values..."
 * sections. */
static void rec_parse(char *line, rec *r)
{
    char *save = NULL, *tok;
    memset(r, 0, sizeof *r);
    int sec = -1;
    while ((tok = strtok_r(line, " \n", &save))) {
        line = NULL;
        if (strcmp(tok, "|") == 0) {
            sec = r->nsec++;
            cr_assert(sec < 8);
            r->name[sec] = strtok_r(NULL, " \n", &save);
            r->val[sec] = malloc(sizeof(char *) * 65536);
            continue;
        }
        if (sec < 0) {
            cr_assert(r->nhead < 16);
            r->head[r->nhead++] = tok;
        } else {
            cr_assert(r->nval[sec] < 65536);
            r->val[sec][r->nval[sec]++] = tok;
        }
    }
}

/* Section 'name' as doubles (malloc'd), or NULL if absent. */
static double *sec_f64(const rec *r, const char *name, int *n)
{
    for (int i = 0; i < r->nsec; i++) {
        if (strcmp(r->name[i], name) == 0) {
            double *v = malloc(sizeof *v * (size_t)(r->nval[i] + 1));
            for (int j = 0; j < r->nval[i]; j++)
                v[j] = strtod(r->val[i][j], NULL);
            if (n)
                *n = r->nval[i];
            return v;
        }
    }
    return NULL;
}

/* Section 'name' converted to dtype t. */
static void *sec_typed(const rec *r, const char *name, ck_dtype t)
{
    int n = 0;
    double *v = sec_f64(r, name, &n);
    cr_assert(v, "no section %s", name);
    void *out = malloc(ck_dtype_size(t) * (size_t)n + 1);
    if (ck_dtype_is_float(t)) {
        ck_dtype_convert(t, out, CK_F64, v, (size_t)n);
    } else {
        /* integers are written in decimal; strtoll keeps int64 exact */
        for (int i = 0; i < r->nsec; i++) {
            if (strcmp(r->name[i], name) != 0)
                continue;
            for (int j = 0; j < n; j++) {
                int64_t x = strtoll(r->val[i][j], NULL, 10);
                ck_dtype_convert(t, (char *)out + (size_t)j * ck_dtype_size(t),
                                 CK_I64, &x, 1);
            }
        }
    }
    free(v);
    return out;
}

static int bits_eq(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* Counts n values in three chunks through the backend slot. */
static void count_chunked(ck_dtype t, const void *data, size_t n,
                          const double *w, int nbins, const double *edges,
                          int uniform, double *counts)
{
    size_t esz = ck_dtype_size(t), cut[4] = {0, n / 3, n / 3 + n / 5, n};
    for (int i = 0; i < nbins; i++)
        counts[i] = 0;
    for (int c = 0; c < 3; c++) {
        ck_hist_args a = {.in = t,
                          .data = (const char *)data + cut[c] * esz,
                          .n = cut[c + 1] - cut[c],
                          .weights = w ? w + cut[c] : NULL,
                          .wtype = CK_F64,
                          .nbins = nbins,
                          .edges = edges,
                          .uniform = uniform,
                          .counts = counts};
        ck_err err = {0};
        cr_assert_eq(ck_cpu_hist(NULL, &a, &err), CK_OK, "%s", err.msg);
    }
}

static void check_bins(const char *what, int line, const double *got,
                       const double *want, int n)
{
    for (int i = 0; i < n; i++)
        cr_expect(bits_eq(got[i], want[i]), "record %d %s[%d]: %a, numpy %a",
                  line, what, i, got[i], want[i]);
}

static void one_hist(const rec *r, int line)
{
    ck_dtype t;
    ck_err err = {0};
    cr_assert_eq(ck_dtype_parse(r->head[1], &t, &err), CK_OK);
    int nb = atoi(r->head[2]), n = atoi(r->head[6]);
    double lo = strtod(r->head[3], NULL), hi = strtod(r->head[4], NULL);
    double *edges = malloc(sizeof(double) * (size_t)(nb + 1));
    double *counts = malloc(sizeof(double) * (size_t)nb);
    double *want_e = sec_f64(r, "edges", NULL);
    double *want_c = sec_f64(r, "counts", NULL);
    double *want_d = sec_f64(r, "density", NULL);
    double *w = sec_f64(r, "weights", NULL);
    void *data = sec_typed(r, "data", t);

    cr_assert_eq(ck_hist_uniform_edges(nb, lo, hi, t, edges, &err), CK_OK, "%s",
                 err.msg);
    check_bins("edges", line, edges, want_e, nb + 1);
    count_chunked(t, data, (size_t)n, w, nb, edges, 1, counts);
    check_bins("counts", line, counts, want_c, nb);
    ck_hist_density(counts, nb, edges);
    check_bins("density", line, counts, want_d, nb);
    free(edges);
    free(counts);
    free(want_e);
    free(want_c);
    free(want_d);
    free(w);
    free(data);
}

static void one_histe(const rec *r, int line)
{
    ck_dtype t;
    ck_err err = {0};
    cr_assert_eq(ck_dtype_parse(r->head[1], &t, &err), CK_OK);
    int ne = atoi(r->head[2]), n = atoi(r->head[3]);
    double *edges = sec_f64(r, "edges", NULL);
    double *want_c = sec_f64(r, "counts", NULL);
    double *want_d = sec_f64(r, "density", NULL);
    double *counts = malloc(sizeof(double) * (size_t)ne);
    void *data = sec_typed(r, "data", t);

    cr_assert_eq(ck_hist_check_edges(edges, ne, &err), CK_OK, "%s", err.msg);
    count_chunked(t, data, (size_t)n, NULL, ne - 1, edges, 0, counts);
    check_bins("counts", line, counts, want_c, ne - 1);
    ck_hist_density(counts, ne - 1, edges);
    check_bins("density", line, counts, want_d, ne - 1);
    free(edges);
    free(want_c);
    free(want_d);
    free(counts);
    free(data);
}

static void one_hist2d(const rec *r, int line)
{
    ck_dtype t;
    ck_err err = {0};
    cr_assert_eq(ck_dtype_parse(r->head[1], &t, &err), CK_OK);
    int nx = atoi(r->head[2]), ny = atoi(r->head[3]), n = atoi(r->head[9]);
    double xe[64], ye[64], counts[64 * 64];
    double *want_c = sec_f64(r, "counts", NULL);
    double *want_d = sec_f64(r, "density", NULL);
    double *w = sec_f64(r, "weights", NULL);
    void *x = sec_typed(r, "x", t), *y = sec_typed(r, "y", t);

    /* histogram2d: np.linspace edges in float64 whatever the data */
    cr_assert_eq(ck_hist_uniform_edges(nx, strtod(r->head[4], NULL),
                                       strtod(r->head[5], NULL), CK_F64, xe,
                                       &err),
                 CK_OK);
    cr_assert_eq(ck_hist_uniform_edges(ny, strtod(r->head[6], NULL),
                                       strtod(r->head[7], NULL), CK_F64, ye,
                                       &err),
                 CK_OK);
    memset(counts, 0, sizeof counts);
    size_t esz = ck_dtype_size(t), half = (size_t)n / 2;
    for (int c = 0; c < 2; c++) {
        size_t off = c ? half : 0, len = c ? (size_t)n - half : half;
        ck_hist2d_args a = {.tx = t,
                            .ty = t,
                            .x = (char *)x + off * esz,
                            .y = (char *)y + off * esz,
                            .n = len,
                            .weights = w ? w + off : NULL,
                            .wtype = CK_F64,
                            .nx = nx,
                            .ny = ny,
                            .xedges = xe,
                            .yedges = ye,
                            .xuniform = c,
                            .yuniform = c,
                            .counts = counts};
        ck_hist2d_accumulate(&a);
    }
    check_bins("counts", line, counts, want_c, nx * ny);
    ck_hist2d_density(counts, nx, ny, xe, ye);
    check_bins("density", line, counts, want_d, nx * ny);
    free(want_c);
    free(want_d);
    free(w);
    free(x);
    free(y);
}

Test(hist, numpy_cases)
{
    FILE *f = fopen(data_path("hist_cases.txt"), "r");
    cr_assert(f, "cannot open %s", data_path("hist_cases.txt"));
    char *line = NULL;
    size_t cap = 0;
    int nrec = 0, kinds[3] = {0};

    while (getline(&line, &cap, f) > 0) {
        rec r;
        rec_parse(line, &r);
        if (r.nhead == 0)
            continue;
        nrec++;
        if (strcmp(r.head[0], "hist") == 0)
            one_hist(&r, nrec), kinds[0]++;
        else if (strcmp(r.head[0], "histe") == 0)
            one_histe(&r, nrec), kinds[1]++;
        else if (strcmp(r.head[0], "hist2d") == 0)
            one_hist2d(&r, nrec), kinds[2]++;
        rec_free(&r);
    }
    free(line);
    fclose(f);
    cr_assert(kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0);
}

/* ---- edges ---- */

/* np.histogram(np.float32([0]), 7, (-9, 11))[1] and the same for float64:
 * linspace in float64, cast to float32 for float32 data. */
Test(hist, uniform_edges_bit_for_bit)
{
    static const double f32[8] = {
        -0x1.2p+3,     -0x1.892492p+2, -0x1.a4924ap+1, -0x1.b6db6ep-2,
        0x1.36db6ep+1, 0x1.524924p+2,  0x1.04924ap+3,  0x1.6p+3};
    static const double f64[8] = {-0x1.2p+3,
                                  -0x1.8924924924924p+2,
                                  -0x1.a492492492492p+1,
                                  -0x1.b6db6db6db6ep-2,
                                  0x1.36db6db6db6dcp+1,
                                  0x1.524924924924ap+2,
                                  0x1.0492492492492p+3,
                                  0x1.6p+3};
    /* np.histogram(np.float32([0]), 4, (-1e-3, 1e-3))[1] */
    static const double small32[5] = {-0x1.0624dep-10, -0x1.0624dep-11, 0,
                                      0x1.0624dep-11, 0x1.0624dep-10};
    static const double small64[5] = {
        -0x1.0624dd2f1a9fcp-10, -0x1.0624dd2f1a9fcp-11, 0,
        0x1.0624dd2f1a9fcp-11, 0x1.0624dd2f1a9fcp-10};
    double e[8];
    ck_err err = {0};

    cr_assert_eq(ck_hist_uniform_edges(7, -9, 11, CK_F32, e, &err), CK_OK);
    for (int i = 0; i < 8; i++)
        cr_expect(bits_eq(e[i], f32[i]), "f32 [%d] %a", i, e[i]);
    cr_assert_eq(ck_hist_uniform_edges(7, -9, 11, CK_F64, e, &err), CK_OK);
    for (int i = 0; i < 8; i++)
        cr_expect(bits_eq(e[i], f64[i]), "f64 [%d] %a", i, e[i]);
    /* integer data: float64 bins */
    cr_assert_eq(ck_hist_uniform_edges(7, -9, 11, CK_I16, e, &err), CK_OK);
    for (int i = 0; i < 8; i++)
        cr_expect(bits_eq(e[i], f64[i]), "i16 [%d] %a", i, e[i]);
    cr_assert_eq(ck_hist_uniform_edges(4, -1e-3, 1e-3, CK_F32, e, &err), CK_OK);
    for (int i = 0; i < 5; i++)
        cr_expect(bits_eq(e[i], small32[i]), "small f32 [%d] %a", i, e[i]);
    cr_assert_eq(ck_hist_uniform_edges(4, -1e-3, 1e-3, CK_F64, e, &err), CK_OK);
    for (int i = 0; i < 5; i++)
        cr_expect(bits_eq(e[i], small64[i]), "small f64 [%d] %a", i, e[i]);
}

/* np.histogram([5.0], 2, (5, 5))[1] -> [4.5, 5.0, 5.5] */
Test(hist, empty_range_widens_by_half)
{
    double e[3];
    ck_err err = {0};
    cr_assert_eq(ck_hist_uniform_edges(2, 5, 5, CK_F64, e, &err), CK_OK);
    cr_assert_eq(e[0], 4.5);
    cr_assert_eq(e[1], 5.0);
    cr_assert_eq(e[2], 5.5);
}

/* np.histogram(a, 0) raises "`bins` must be positive"; range=(2, 1)
 * "max must be larger than min"; range=(0, inf) "not finite" */
Test(hist, bad_ranges_and_bins)
{
    double e[4];
    ck_err err = {0};
    cr_assert_eq(ck_hist_uniform_edges(0, 0, 1, CK_F64, e, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "bins must be positive"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_hist_uniform_edges(3, 2, 1, CK_F64, e, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "max must be larger than min"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_hist_uniform_edges(3, 0, INFINITY, CK_F64, e, &err),
                 CK_EUSAGE);
    cr_assert(strstr(err.msg, "not finite"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_hist_uniform_edges(3, NAN, 1, CK_F64, e, &err), CK_EUSAGE);
}

/* np.histogram(a, [0, 2, 1]) raises "`bins` must increase
 * monotonically"; equal neighbours are allowed ([0, 1, 1, 2]) */
Test(hist, explicit_edges_checks)
{
    double up[3] = {0, 2, 1}, flat[4] = {0, 1, 1, 2}, one[1] = {0};
    double inf[2] = {0, INFINITY};
    ck_err err = {0};
    cr_assert_eq(ck_hist_check_edges(flat, 4, &err), CK_OK);
    cr_assert_eq(ck_hist_check_edges(up, 3, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "edge 2 (1) is below edge 1 (2)"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_hist_check_edges(one, 1, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "at least two edges"), "%s", err.msg);
    err = (ck_err){0};
    cr_assert_eq(ck_hist_check_edges(inf, 2, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "edge 1 (inf) is not finite"), "%s", err.msg);
}

/* ---- counting ---- */

/* float32 data counts against float32 edges, as NumPy does; float64 edges
 * (what dask uses) would move these values down one bin:
 *   np.histogram(np.float32([0.7, 0.9]), 10, (0, 1))[0]
 *     -> [0 0 0 0 0 0 0 1 0 1]
 *   np.histogram(np.float64(np.float32([0.7, 0.9])), 10, (0, 1))[0]
 *     -> [0 0 0 0 0 0 1 0 1 0] */
Test(hist, float32_data_uses_float32_edges)
{
    float x[2] = {0.7f, 0.9f};
    double e[11], c[10];
    ck_err err = {0};
    cr_assert_eq(ck_hist_uniform_edges(10, 0, 1, CK_F32, e, &err), CK_OK);
    cr_assert_eq(e[7], (double)0.7f);
    count_chunked(CK_F32, x, 2, NULL, 10, e, 1, c);
    for (int i = 0; i < 10; i++)
        cr_expect_eq(c[i], i == 7 || i == 9 ? 1 : 0, "[%d] %g", i, c[i]);
    double xd[2] = {0.7f, 0.9f};
    cr_assert_eq(ck_hist_uniform_edges(10, 0, 1, CK_F64, e, &err), CK_OK);
    count_chunked(CK_F64, xd, 2, NULL, 10, e, 1, c);
    for (int i = 0; i < 10; i++)
        cr_expect_eq(c[i], i == 6 || i == 8 ? 1 : 0, "[%d] %g", i, c[i]);
}

/* a = [-9, -1e-9, 0, 2, 2.5, 11, 11.5, -9.5, nan, inf]
 * np.histogram(a, 4, (-9, 11)) -> [1, 2, 2, 1] (edges -9, -4, 1, 6, 11:
 * 11 is in the last bin, 11.5, -9.5, nan and inf are dropped), and with
 * weights=np.arange(10.) -> [0, 3, 7, 5] */
Test(hist, edges_out_of_range_nan_and_weights)
{
    double a[10] = {-9, -1e-9, 0, 2, 2.5, 11, 11.5, -9.5, NAN, INFINITY};
    double w[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, e[5], c[4];
    double want[4] = {1, 2, 2, 1}, wantw[4] = {0, 3, 7, 5};
    ck_err err = {0};
    cr_assert_eq(ck_hist_uniform_edges(4, -9, 11, CK_F64, e, &err), CK_OK);
    count_chunked(CK_F64, a, 10, NULL, 4, e, 1, c);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(c[i], want[i], "[%d] %g", i, c[i]);
    count_chunked(CK_F64, a, 10, w, 4, e, 1, c);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(c[i], wantw[i], "[%d] %g", i, c[i]);
    /* the same bins found by search as explicit edges */
    count_chunked(CK_F64, a, 10, NULL, 4, e, 0, c);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(c[i], want[i], "[%d] %g", i, c[i]);
}

/* np.histogram([0, 1, 1, 2, 3], [0, 1, 1, 2]) -> [1, 0, 3]: a repeated
 * edge makes an empty bin, the last bin is closed;
 * density=True -> [0.25, nan, 0.75] */
Test(hist, explicit_edges_repeat_and_density)
{
    int32_t a[5] = {0, 1, 1, 2, 3};
    double e[4] = {0, 1, 1, 2}, c[3];
    count_chunked(CK_I32, a, 5, NULL, 3, e, 0, c);
    cr_assert_eq(c[0], 1);
    cr_assert_eq(c[1], 0);
    cr_assert_eq(c[2], 3);
    ck_hist_density(c, 3, e);
    cr_assert_eq(c[0], 0.25);
    cr_assert(isnan(c[1]));
    cr_assert_eq(c[2], 0.75);
}

/* np.histogram2d([0, 1, 1, 2, nan], [0, 0.5, 1, 1, 0], [2, 2],
 * [[0, 2], [0, 1]]) -> [[1, 0], [0, 3]]: x = 1 and y = 0.5 open the
 * second bins, x = 2 and y = 1 sit on the last edges and count */
Test(hist, hist2d_edges_and_last_bins)
{
    double x[5] = {0, 1, 1, 2, NAN}, y[5] = {0, 0.5, 1, 1, 0};
    double xe[3], ye[3], c[4] = {0};
    ck_err err = {0};
    cr_assert_eq(ck_hist_uniform_edges(2, 0, 2, CK_F64, xe, &err), CK_OK);
    cr_assert_eq(ck_hist_uniform_edges(2, 0, 1, CK_F64, ye, &err), CK_OK);
    ck_hist2d_args a = {.tx = CK_F64,
                        .ty = CK_F64,
                        .x = x,
                        .y = y,
                        .n = 5,
                        .nx = 2,
                        .ny = 2,
                        .xedges = xe,
                        .yedges = ye,
                        .xuniform = 1,
                        .yuniform = 1,
                        .counts = c};
    ck_hist2d_accumulate(&a);
    cr_assert_eq(c[0], 1);
    cr_assert_eq(c[1], 0);
    cr_assert_eq(c[2], 0);
    cr_assert_eq(c[3], 3);
}

/* histogramdd compares samples with the last edge in the sample's dtype,
 * so a float32 value that rounds to the last edge moves down one bin even
 * when it lies inside the last bin:
 *   np.histogram2d(np.float32([0.7, 0.3]), np.float32([0.5, 0.5]), [2, 1],
 *                  [[0, 0.7], [0, 1]])[0] -> [[2], [0]]
 * (float32(0.7) = 0.69999999 is in [0.35, 0.7) but equals 0.7 in
 * float32); the same values as float64 give [[1], [1]]. */
Test(hist, hist2d_float32_last_edge)
{
    float x[2] = {0.7f, 0.3f}, y[2] = {0.5f, 0.5f};
    double xd[2] = {0.7f, 0.3f}, yd[2] = {0.5, 0.5};
    double xe[3], ye[2], c[2] = {0};
    ck_err err = {0};
    cr_assert_eq(ck_hist_uniform_edges(2, 0, 0.7, CK_F64, xe, &err), CK_OK);
    cr_assert_eq(ck_hist_uniform_edges(1, 0, 1, CK_F64, ye, &err), CK_OK);
    ck_hist2d_args a = {.tx = CK_F32,
                        .ty = CK_F32,
                        .x = x,
                        .y = y,
                        .n = 2,
                        .nx = 2,
                        .ny = 1,
                        .xedges = xe,
                        .yedges = ye,
                        .counts = c};
    ck_hist2d_accumulate(&a);
    cr_assert_eq(c[0], 2);
    cr_assert_eq(c[1], 0);
    c[0] = c[1] = 0;
    a.tx = a.ty = CK_F64;
    a.x = xd;
    a.y = yd;
    ck_hist2d_accumulate(&a);
    cr_assert_eq(c[0], 1);
    cr_assert_eq(c[1], 1);
}

Test(hist, backend_refuses_bad_arguments)
{
    double x[1] = {0}, e[2] = {0, 1}, c[1];
    ck_hist_args a = {.in = CK_DT_INVALID,
                      .data = x,
                      .n = 1,
                      .nbins = 1,
                      .edges = e,
                      .uniform = 1,
                      .counts = c};
    ck_err err = {0};
    cr_assert_eq(ck_cpu_hist(NULL, &a, &err), CK_EUSAGE);
    err = (ck_err){0};
    a.in = CK_F64;
    a.nbins = 0;
    cr_assert_eq(ck_cpu_hist(NULL, &a, &err), CK_EUSAGE);
}
