/*
 * cli/ndprint.c - an array printed as NumPy's str() prints it (default
 * print options: 8 significant fractional digits at most, lines of 75
 * columns, no summarisation: the caller bounds the size).
 *
 * Floats: every element in one format.  Scientific when the largest
 * nonzero magnitude is >= 1e8, or the smallest is < 1e-4, or their ratio
 * > 1e3; otherwise positional.  Each element's digits are the fewest that
 * read back as the same value in the array's dtype (float32 data is
 * unique as a float32), at most 8 after the point; positional elements
 * align on the point (integer part padded left, fraction padded right
 * with spaces, "1." for a whole number), scientific ones share one
 * mantissa length (padded with zeros) and one exponent width.  nan, inf
 * and -inf are right-aligned to that width.  Integers and booleans
 * (True/False) are right-aligned to the widest.  Rows wrap at 75 columns
 * under their opening bracket; 2-D blocks are separated by a newline, 3-D
 * ones by a blank line, as NumPy does.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "pipelines/exec.h"

enum { LINE_WIDTH = 75, MAX_PREC = 8, EL = 48 };

typedef struct fmt {
    const ck_result *r;
    int kind; /* 0 integer, 1 bool, 2 float positional, 3 float scientific */
    int pad_left, pad_right;
    int prec, exp_size; /* scientific: mantissa digits, exponent digits */
    int width;          /* integers, booleans */
} fmt;

static double fval(const ck_result *r, int64_t i)
{
    double f;
    ck_dtype_convert(
        CK_F64, &f, r->dtype,
        (const char *)r->data + (size_t)i * ck_dtype_size(r->dtype), 1);
    return f;
}

static int same(const ck_result *r, const char *s, double f)
{
    double g = strtod(s, NULL);
    if (r->dtype == CK_F32)
        return (float)g == (float)f;
    return g == f;
}

/* The fewest digits after the point (at most MAX_PREC) with which f reads
 * back, in positional (sci = 0) or scientific notation. */
static int digits_upto(const ck_result *r, double f, int sci, int most)
{
    char b[EL + 320];
    for (int p = 0; p < most; p++) {
        snprintf(b, sizeof b, sci ? "%.*e" : "%.*f", p, f);
        if (same(r, b, f))
            return p;
    }
    return most;
}

static int digits(const ck_result *r, double f, int sci)
{
    return digits_upto(r, f, sci, MAX_PREC);
}

static int int_str(const ck_result *r, int64_t i, char *b, size_t bn);

/* A 0-d array: NumPy prints its scalar, as Python's repr() would (the
 * shortest digits that read back, positional from 1e-4 up to 1e16). */
static void scalar(const ck_result *r)
{
    double v = fval(r, 0), a = fabs(v);
    char b[EL + 320], *e;
    int p;

    if (r->dtype == CK_BOOL || !ck_dtype_is_float(r->dtype) || !isfinite(v)) {
        if (r->dtype == CK_BOOL)
            printf("%s\n", ((const uint8_t *)r->data)[0] ? "True" : "False");
        else if (!ck_dtype_is_float(r->dtype) && int_str(r, 0, b, sizeof b))
            printf("%s\n", b);
        else
            printf("%s\n", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    if (a == 0 || (a >= 1e-4 && a < 1e16)) {
        p = digits_upto(r, v, 0, 17 + 4);
        snprintf(b, sizeof b, "%.*f%s", p, v, p ? "" : ".0");
        printf("%s\n", b);
        return;
    }
    p = digits_upto(r, v, 1, 17);
    snprintf(b, sizeof b, "%.*e", p, v);
    e = strchr(b, 'e');
    printf("%.*s%s\n", (int)(e - b), b, e); /* 1e-05, 1.5e+20 */
}

/* Positional: f with p digits after the point, trailing zeros trimmed
 * (keeping the point), into int and frac parts. */
static void positional(double f, int p, char *ip, char *fp)
{
    char b[EL + 320], *dot;
    snprintf(b, sizeof b, "%.*f", p, f);
    if (!(dot = strchr(b, '.'))) {
        snprintf(ip, EL, "%.*s", EL - 1, b);
        fp[0] = 0;
        return;
    }
    *dot = 0;
    snprintf(ip, EL, "%.*s", EL - 1, b);
    size_t n = strlen(dot + 1);
    while (n > 0 && dot[n] == '0')
        n--;
    snprintf(fp, EL, "%.*s", (int)n, dot + 1);
}

/* Scientific: f's shortest mantissa (at most MAX_PREC digits), split into
 * int part, frac part (trailing zeros trimmed) and exponent (sign, digits). */
static void scientific(const ck_result *r, double f, char *ip, char *fp,
                       char *sign, char *ex)
{
    char b[EL], *dot, *e;
    int p = digits(r, f, 1);
    snprintf(b, sizeof b, "%.*e", p, f);
    e = strchr(b, 'e');
    *sign = e[1];
    snprintf(ex, EL, "%s", e + 2);
    *e = 0;
    if ((dot = strchr(b, '.'))) {
        *dot = 0;
        size_t n = strlen(dot + 1);
        while (n > 0 && dot[n] == '0')
            n--;
        snprintf(fp, EL, "%.*s", (int)n, dot + 1);
    } else {
        fp[0] = 0;
    }
    snprintf(ip, EL, "%s", b);
}

/* Integer element i as text; its length. */
static int int_str(const ck_result *r, int64_t i, char *b, size_t bn)
{
    if (r->dtype == CK_U64)
        return snprintf(b, bn, "%" PRIu64, ((const uint64_t *)r->data)[i]);
    if (r->dtype == CK_I64)
        return snprintf(b, bn, "%" PRId64, ((const int64_t *)r->data)[i]);
    return snprintf(b, bn, "%.0f", fval(r, i)); /* exact: 32 bits at most */
}

static void prepare(fmt *f, const ck_result *r)
{
    int64_t n = cli_result_count(r);
    double lo = INFINITY, hi = 0;
    int finite = 0, neginf = 0, nonfinite = 0;

    memset(f, 0, sizeof *f);
    f->r = r;
    if (r->dtype == CK_BOOL) {
        f->kind = 1;
        f->width = 5; /* " True", as NumPy pads it in arrays */
        return;
    }
    if (!ck_dtype_is_float(r->dtype)) {
        char b[EL];
        for (int64_t i = 0; i < n; i++) {
            int w = int_str(r, i, b, sizeof b);
            f->width = w > f->width ? w : f->width;
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = fval(r, i), a = fabs(v);
        if (!isfinite(v)) {
            nonfinite = 1;
            neginf |= isinf(v) && v < 0;
            continue;
        }
        finite = 1;
        if (a != 0) {
            lo = a < lo ? a : lo;
            hi = a > hi ? a : hi;
        }
    }
    f->kind = hi > 0 && (hi >= 1e8 || lo < 1e-4 || hi / lo > 1e3) ? 3 : 2;
    for (int64_t i = 0; finite && i < n; i++) {
        double v = fval(r, i);
        char ip[EL], fp[EL], ex[EL], sign;
        int li, lf;
        if (!isfinite(v))
            continue;
        if (f->kind == 3) {
            scientific(r, v, ip, fp, &sign, ex);
            int le = (int)strlen(ex);
            f->exp_size = le > f->exp_size ? le : f->exp_size;
        } else {
            positional(v, digits(r, v, 0), ip, fp);
        }
        li = (int)strlen(ip);
        lf = (int)strlen(fp);
        f->pad_left = li > f->pad_left ? li : f->pad_left;
        f->prec = lf > f->prec ? lf : f->prec;
    }
    f->pad_right = f->kind == 3 ? f->exp_size + 2 + f->prec : f->prec;
    if (nonfinite) {
        int off = f->pad_right + 1;
        f->pad_left = 3 - off > f->pad_left ? 3 - off : f->pad_left;
        f->pad_left =
            3 + neginf - off > f->pad_left ? 3 + neginf - off : f->pad_left;
    }
}

/* Element i as the format says, into b (EL + 64 bytes). */
static void element(const fmt *f, int64_t i, char *b, size_t bn)
{
    const ck_result *r = f->r;
    char ip[EL], fp[EL], ex[EL], sign;
    double v;

    switch (f->kind) {
    case 1:
        snprintf(b, bn, "%*s", f->width,
                 ((const uint8_t *)r->data)[i] ? "True" : "False");
        return;
    case 0: {
        char t[EL];
        int_str(r, i, t, sizeof t);
        snprintf(b, bn, "%*s", f->width, t);
        return;
    }
    }
    v = fval(r, i);
    if (!isfinite(v)) {
        snprintf(b, bn, "%*s", f->pad_left + f->pad_right + 1,
                 isnan(v) ? "nan"
                 : v > 0  ? "inf"
                          : "-inf");
        return;
    }
    if (f->kind == 2) {
        positional(v, digits(r, v, 0), ip, fp);
        snprintf(b, bn, "%*s.%-*s", f->pad_left, ip, f->prec, fp);
        return;
    }
    scientific(r, v, ip, fp, &sign, ex);
    size_t lf = strlen(fp), le = strlen(ex);
    while ((int)lf < f->prec && lf + 1 < sizeof fp)
        fp[lf++] = '0';
    fp[lf] = 0;
    snprintf(b, bn, "%*s.%se%c%.*s%s", f->pad_left, ip, fp, sign,
             f->exp_size > (int)le ? f->exp_size - (int)le : 0, "00000000", ex);
}

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void add(sbuf *b, const char *t, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            fputs("chunkctl: out of memory\n", stderr);
            exit(1);
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, t, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void adds(sbuf *b, const char *t)
{
    add(b, t, strlen(t));
}

/* NumPy's _extendLine: a word goes on the line unless the line would
 * pass width (and a wrap would help). */
static void extend(sbuf *s, sbuf *line, const char *word, int width,
                   const char *indent)
{
    if ((int)(line->n + strlen(word)) > width && line->n > strlen(indent)) {
        while (line->n && line->s[line->n - 1] == ' ')
            line->s[--line->n] = 0;
        add(s, line->s, line->n);
        adds(s, "\n");
        line->n = 0;
        adds(line, indent);
    }
    adds(line, word);
}

/* NumPy's _formatArray recursion over the axes from 'axis' on, for the
 * block starting at element 'base'; its text is appended to out. */
static void recurse(const fmt *f, int axis, int64_t base, int indent, int width,
                    sbuf *out)
{
    const ck_result *r = f->r;
    int64_t len = r->shape[axis], stride = 1;
    sbuf s = {0};
    char *hang = malloc((size_t)indent + 2);

    if (!hang) {
        fputs("chunkctl: out of memory\n", stderr);
        exit(1);
    }
    memset(hang, ' ', (size_t)indent);
    hang[indent] = 0;
    for (int d = axis + 1; d < r->ndim; d++)
        stride *= r->shape[d];
    if (axis == r->ndim - 1) {
        sbuf line = {0};
        char w[EL + 64];
        adds(&line, hang);
        for (int64_t i = 0; i < len; i++) {
            element(f, base + i, w, sizeof w);
            extend(&s, &line, w, width - 1, hang);
            if (i + 1 < len)
                adds(&line, " ");
        }
        add(&s, line.s, line.n);
        free(line.s);
    } else {
        for (int64_t i = 0; i < len; i++) {
            sbuf nested = {0};
            recurse(f, axis + 1, base + i * stride, indent + 1, width - 1,
                    &nested);
            adds(&s, hang);
            add(&s, nested.s, nested.n);
            free(nested.s);
            if (i + 1 < len)
                for (int k = 0; k < r->ndim - axis - 1; k++)
                    adds(&s, "\n");
        }
    }
    adds(out, "[");
    add(out, s.s + indent, s.n - (size_t)indent);
    adds(out, "]");
    free(s.s);
    free(hang);
}

void cli_print_ndarray(const ck_result *r)
{
    fmt f;
    sbuf out = {0};
    prepare(&f, r);
    if (r->ndim == 0) {
        scalar(r);
        return;
    }
    if (cli_result_count(r) == 0) {
        printf("[]\n");
        return;
    }
    recurse(&f, 0, 0, 1, LINE_WIDTH, &out);
    printf("%s\n", out.s);
    free(out.s);
}
