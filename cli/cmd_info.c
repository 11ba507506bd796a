/*
 * cli/cmd_info.c - chunkctl info PATH[:DATASET] [--json]
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_mem.h"
#include "cli/cli.h"
#include "pipelines/info.h"

static const char help[] =
    "usage: chunkctl info [--json] PATH[:DATASET]\n\n"
    "List every array in an HDF5 file or Zarr store (or the one named):\n"
    "shape, dtype, chunk shape, number of chunks, raw and stored bytes,\n"
    "compression ratio and compressor.\n\n"
    "  --json     one JSON object on stdout, for scripts\n"
    "  --help     this text\n";

/* printf into a new string, or NULL when out of memory. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    int n;
    char *t;

    va_start(ap, f);
    n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    if (n < 0 || !(t = malloc((size_t)n + 1)))
        return NULL;
    va_start(ap, f);
    vsnprintf(t, (size_t)n + 1, f, ap);
    va_end(ap);
    return t;
}

/* "(a, b, c)", "(a,)" or "()", in a new string. */
static char *shape_str(int nd, const int64_t *v)
{
    /* 20 digits and a sign per extent, ", " between, "(" ",)" around */
    size_t n = (size_t)nd * 23 + 4, used = 1;
    char *buf = malloc(n);

    if (!buf)
        return NULL;
    buf[0] = '(';
    for (int d = 0; d < nd; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "",
                                 (long long)v[d]);
    snprintf(buf + used, n - used, nd == 1 ? ",)" : ")");
    return buf;
}

static double raw_bytes(const ck_array_info *a)
{
    double n = (double)ck_dtype_size(a->dtype);
    for (int d = 0; d < a->ndim; d++)
        n *= (double)a->shape[d];
    return n;
}

static const char *layout_name(ck_layout l)
{
    return l == CK_LAYOUT_CONTIGUOUS ? "contiguous"
           : l == CK_LAYOUT_COMPACT  ? "compact"
                                     : "chunked";
}

static void json_ints(int nd, const int64_t *v)
{
    putchar('[');
    for (int d = 0; d < nd; d++)
        printf("%s%lld", d ? ", " : "", (long long)v[d]);
    putchar(']');
}

static void json_fill(const ck_array_info *a)
{
    if (!a->has_fill)
        printf("null");
    else if (ck_dtype_is_float(a->dtype))
        isnan(a->fill.f) ? printf("\"NaN\"")
        : isinf(a->fill.f)
            ? printf(a->fill.f > 0 ? "\"Infinity\"" : "\"-Infinity\"")
            : printf("%.17g", a->fill.f);
    else if (a->dtype == CK_BOOL)
        printf(a->fill.i ? "true" : "false");
    else if (ck_dtype_is_signed(a->dtype))
        printf("%lld", (long long)a->fill.i);
    else
        printf("%llu", (unsigned long long)a->fill.u);
}

/* A Zarr store's version: its arrays' (2 for a store with none). */
static int zarr_format(const ck_info_list *l)
{
    return l->n > 0 && l->v[0].zarr_format ? l->v[0].zarr_format : 2;
}

static void print_json(const char *path, const ck_info_list *l)
{
    printf("{\"path\": ");
    cli_print_json_str(path);
    printf(", \"format\": \"%s\", ", l->kind == CK_KIND_HDF5 ? "hdf5" : "zarr");
    if (l->kind == CK_KIND_ZARR)
        printf("\"zarr_format\": %d, ", zarr_format(l));
    printf("\"arrays\": [");
    for (int i = 0; i < l->n; i++) {
        const ck_array_info *a = &l->v[i];
        double raw = raw_bytes(a);
        printf("%s\n  {\"name\": ", i ? "," : "");
        cli_print_json_str(a->name);
        printf(", \"shape\": ");
        json_ints(a->ndim, a->shape);
        printf(", \"dtype\": \"%s\", \"chunks\": ", ck_dtype_name(a->dtype));
        json_ints(a->ndim, a->chunks);
        printf(", \"nchunks\": %lld, \"chunks_stored\": %lld, "
               "\"raw_bytes\": %.0f, \"stored_bytes\": %lld, ",
               (long long)l->nchunks[i], (long long)a->chunks_stored, raw,
               (long long)a->stored_bytes);
        if (a->stored_bytes > 0)
            printf("\"ratio\": %.3f, ", raw / (double)a->stored_bytes);
        else
            printf("\"ratio\": null, ");
        printf("\"compressor\": ");
        cli_print_json_str(a->compressor);
        printf(", \"layout\": \"%s\", \"order\": \"%c\", \"byteorder\": "
               "\"%s\", \"fill_value\": ",
               layout_name(a->layout), a->order ? a->order : 'C',
               a->big_endian ? "big" : "little");
        json_fill(a);
        if (l->kind == CK_KIND_ZARR) {
            printf(", \"shards\": ");
            if (a->shards[0])
                json_ints(a->ndim, a->shards);
            else
                printf("null");
            printf(", \"codecs\": ");
            if (a->codecs[0])
                cli_print_json_str(a->codecs);
            else
                printf("null");
        }
        putchar('}');
    }
    printf("\n]}\n");
}

enum { COLS = 9 };

static char *size_cell(double bytes)
{
    char b[32];
    return fmt("%s", ck_size_str(bytes, b, sizeof b));
}

static ck_code print_table(const char *path, const ck_info_list *l, ck_err *err)
{
    static const char *const head[COLS] = {"name",   "shape",   "dtype",
                                           "chunks", "nchunks", "bytes",
                                           "stored", "ratio",   "compressor"};
    size_t ncell = (size_t)l->n * COLS;
    char **cell = calloc(ncell ? ncell : 1, sizeof *cell);
    int w[COLS], oom = !cell;

    for (int c = 0; c < COLS; c++)
        w[c] = (int)strlen(head[c]);
    for (int i = 0; i < l->n && !oom; i++) {
        const ck_array_info *a = &l->v[i];
        double raw = raw_bytes(a);
        char **r = cell + (size_t)i * COLS;
        r[0] = fmt("%s", a->name);
        r[1] = shape_str(a->ndim, a->shape);
        r[2] = fmt("%s%s", ck_dtype_name(a->dtype),
                   a->big_endian && ck_dtype_size(a->dtype) > 1 ? " (BE)" : "");
        r[3] = a->layout == CK_LAYOUT_CHUNKED
                   ? shape_str(a->ndim, a->chunks)
                   : fmt("%s", layout_name(a->layout));
        r[4] = fmt("%lld", (long long)l->nchunks[i]);
        r[5] = size_cell(raw);
        r[6] = a->stored_bytes >= 0 ? size_cell((double)a->stored_bytes)
                                    : fmt("?");
        r[7] = a->stored_bytes > 0 ? fmt("%.2f", raw / (double)a->stored_bytes)
                                   : fmt("-");
        r[8] = fmt("%s", a->compressor);
        for (int c = 0; c < COLS; c++) {
            if (!r[c])
                oom = 1;
            else if ((int)strlen(r[c]) > w[c])
                w[c] = (int)strlen(r[c]);
        }
    }
    if (!oom) {
        if (l->kind == CK_KIND_HDF5)
            printf("%s: HDF5 file, %d array%s\n", path, l->n,
                   l->n == 1 ? "" : "s");
        else
            printf("%s: Zarr v%d store, %d array%s\n", path, zarr_format(l),
                   l->n, l->n == 1 ? "" : "s");
        for (int c = 0; c < COLS; c++)
            printf(c < COLS - 1 ? "%-*s  " : "%-*s\n", c < COLS - 1 ? w[c] : 0,
                   head[c]);
        for (size_t k = 0; k < ncell; k++)
            printf(k % COLS < COLS - 1 ? "%-*s  " : "%-*s\n",
                   k % COLS < COLS - 1 ? w[k % COLS] : 0, cell[k]);
        /* v3 codecs (and shards) do not fit a column. */
        for (int i = 0; i < l->n; i++)
            if (l->v[i].codecs[0])
                printf("%s: codecs %s\n", l->v[i].name, l->v[i].codecs);
    }
    for (size_t k = 0; cell && k < ncell; k++)
        free(cell[k]);
    free(cell);
    return oom ? ck_err_set(err, CK_ENOMEM, "info: out of memory") : CK_OK;
}

static ck_code info_opt(void *ctx, int opt, const char *arg, ck_err *err)
{
    (void)opt; /* 'j', the only one */
    (void)arg;
    (void)err;
    *(int *)ctx = 1;
    return CK_OK;
}

ck_code cmd_info(int argc, char **argv, cli_common *c, ck_err *err)
{
    static const struct option longs[] = {{"json", no_argument, 0, 'j'},
                                          {0, 0, 0, 0}};
    static const cli_cmd_opts opts = {"info", help, NULL, longs, info_opt, 0};
    ck_info_list l;
    ck_code rc;
    int json = 0, first;

    if ((rc = cli_getopt(&opts, &json, argc, argv, c, &first, err)) != CK_OK ||
        !first)
        return rc;
    if (first != argc - 1)
        return ck_err_set(err, CK_EUSAGE,
                          "info: expected one PATH[:DATASET] (see chunkctl "
                          "info --help)");
    CK_TRY(ck_info_collect(argv[first], &l, err));
    if (json)
        print_json(argv[first], &l);
    else
        rc = print_table(argv[first], &l, err);
    ck_info_release(&l);
    return rc;
}
