/*
 * cli/cmd_info.c - chunkctl info PATH[:DATASET] [--json]
 * A table (or JSON) of what ck_info_collect finds, with each array's
 * dimension names and attributes; one dataset's attributes are listed
 * the way ncdump -h lists a variable's.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/ck_mem.h"
#include "cli/cli.h"
#include "io/attrs_json.h"
#include "pipelines/info.h"

static const char help[] =
    "usage: chunkctl info [--json] PATH[:DATASET]\n\n"
    "List every array in an HDF5 file or Zarr store (or the one named):\n"
    "shape, dtype, chunk shape, number of chunks, raw and stored bytes,\n"
    "compression ratio, compressor and dimension names; for one dataset\n"
    "also its attributes, as ncdump -h shows a variable's.\n\n"
    "  --json     one JSON object on stdout, for scripts (attributes of\n"
    "             every array included)\n"
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

/* NumPy's dtype.str of an array: byte order and kind ("<f8", ">i2",
 * "|b1"). */
static void typestr(const ck_array_info *a, char *buf, size_t n)
{
    static const struct {
        ck_dtype t;
        char kind;
    } kinds[] = {{CK_BOOL, 'b'}, {CK_I8, 'i'},  {CK_I16, 'i'}, {CK_I32, 'i'},
                 {CK_I64, 'i'},  {CK_U8, 'u'},  {CK_U16, 'u'}, {CK_U32, 'u'},
                 {CK_U64, 'u'},  {CK_F32, 'f'}, {CK_F64, 'f'}};
    size_t size = ck_dtype_size(a->dtype);
    char kind = '?';

    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].t == a->dtype)
            kind = kinds[i].kind;
    snprintf(buf, n, "%c%c%zu",
             size == 1       ? '|'
             : a->big_endian ? '>'
                             : '<',
             kind, size);
}

/* 1 when the file keeps a's chunks (a chunked layout): the chunks of
 * contiguous, compact and scalar HDF5 datasets are only how chunkctl
 * reads them.  A 0-d Zarr array is chunked: its one chunk is the file
 * "0" (v2) or "c" (v3); HDF5 has no chunked scalar (H5Pset_chunk needs
 * a rank of at least 1), so io/hdf5 never says chunked for one. */
static int has_file_chunks(const ck_array_info *a)
{
    return a->layout == CK_LAYOUT_CHUNKED;
}

static void json_dims(const ck_array_info *a)
{
    if (!a->has_dims) {
        printf("null");
        return;
    }
    putchar('[');
    for (int d = 0; d < a->ndim; d++) {
        printf("%s", d ? ", " : "");
        cli_print_json_str(a->dims[d]);
    }
    putchar(']');
}

/* ---- dimensions ---- */

/* A dimension of the listing: "/g/time" (the group of the arrays that
 * name it, and its name), its length and the shortest array along it. */
typedef struct info_dim {
    char path[600];
    int64_t len, shortest;
    int unlimited;
} info_dim;

/* The dimensions the arrays of l name, each as long as its longest
 * array: netCDF's length for an unlimited dimension, whose variables may
 * end at different lengths (netCDF-C nc4_find_dim_len).  *out is NULL
 * (and *n 0) when none, or when out of memory. */
static void collect_dims(const ck_info_list *l, info_dim **out, int *n)
{
    info_dim *v = NULL;
    int nv = 0, cap = 0;

    for (int i = 0; i < l->n; i++) {
        const ck_array_info *a = &l->v[i];
        const char *slash = strrchr(a->name, '/');
        int gl = slash ? (int)(slash - a->name) : 0;
        for (int d = 0; a->has_dims && d < a->ndim; d++) {
            char p[600];
            int k;
            if (!a->dims[d][0])
                continue;
            snprintf(p, sizeof p, "%.*s/%s", gl, a->name, a->dims[d]);
            for (k = 0; k < nv && strcmp(v[k].path, p) != 0; k++)
                ;
            if (k == nv) {
                if (nv == cap) {
                    info_dim *w = realloc(v, (size_t)(cap = cap ? 2 * cap : 8) *
                                                 sizeof *w);
                    if (!w) {
                        free(v);
                        *out = NULL;
                        *n = 0;
                        return;
                    }
                    v = w;
                }
                memset(&v[nv], 0, sizeof v[nv]);
                snprintf(v[nv].path, sizeof v[nv].path, "%s", p);
                v[nv].len = v[nv].shortest = a->shape[d];
                nv++;
            }
            if (a->shape[d] > v[k].len)
                v[k].len = a->shape[d];
            if (a->shape[d] < v[k].shortest)
                v[k].shortest = a->shape[d];
            v[k].unlimited |= (int)(a->unlimited >> d & 1);
        }
    }
    *out = v;
    *n = nv;
}

static void json_dimensions(const ck_info_list *l)
{
    info_dim *v;
    int n;

    collect_dims(l, &v, &n);
    printf(", \"dimensions\": {");
    for (int k = 0; k < n; k++) {
        printf("%s", k ? ", " : "");
        cli_print_json_str(v[k].path);
        printf(": {\"length\": %lld, \"unlimited\": %s}", (long long)v[k].len,
               v[k].unlimited ? "true" : "false");
    }
    putchar('}');
    free(v);
}

/* A line for each dimension whose arrays end at different lengths (an
 * unlimited one in netCDF): the array shapes alone do not say its
 * length. */
static void print_uneven_dims(const ck_info_list *l)
{
    info_dim *v;
    int n;

    collect_dims(l, &v, &n);
    for (int k = 0; k < n; k++)
        if (v[k].shortest != v[k].len)
            printf("dimension %s: %lld%s (its longest array; others end "
                   "sooner, from %lld)\n",
                   v[k].path, (long long)v[k].len,
                   v[k].unlimited ? ", unlimited" : "",
                   (long long)v[k].shortest);
    free(v);
}

/* ---- attributes ---- */

/* The attributes of every array of l, as the text of a JSON object each
 * (NULL where the store could not give them; a note says why). */
typedef struct info_attrs {
    int n;
    char **json;
} info_attrs;

static void attrs_release(info_attrs *at)
{
    for (int i = 0; at->json && i < at->n; i++)
        free(at->json[i]);
    free(at->json);
    memset(at, 0, sizeof *at);
}

/* Drops xarray's _ARRAY_DIMENSIONS from a Zarr array's attributes: it is
 * the dims field here, as xarray shows it. */
static char *without_array_dims(char *json)
{
    cJSON *o;
    char *t;

    if (!strstr(json, "\"_ARRAY_DIMENSIONS\"") ||
        !(o = ck_attrs_parse(json, strlen(json))))
        return json;
    cJSON_DeleteItemFromObjectCaseSensitive(o, "_ARRAY_DIMENSIONS");
    t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!t)
        return json;
    free(json);
    return t;
}

/* Reads the attributes of l's arrays from the store at target.  The
 * store's own failures to read one (an attribute JSON cannot hold) are
 * notes inside get_attrs, not errors. */
static ck_code attrs_collect(const char *target, const ck_info_list *l,
                             info_attrs *out, ck_err *err)
{
    char path[PATH_MAX], name[512];
    ck_store *s = NULL;
    info_attrs at = {0, NULL};
    ck_code rc = CK_OK;

    CK_TRY(ck_target_split(target, path, sizeof path, name, sizeof name, err));
    if (!(at.json = calloc(l->n ? (size_t)l->n : 1, sizeof *at.json)))
        return ck_err_set(err, CK_ENOMEM, "info: out of memory");
    at.n = l->n;
    rc = ck_store_open(path, &s, err);
    for (int i = 0; i < l->n && rc == CK_OK; i++) {
        rc = ck_store_get_attrs(s, l->v[i].name, &at.json[i], err);
        if (rc == CK_OK && l->kind == CK_KIND_ZARR)
            at.json[i] = without_array_dims(at.json[i]);
    }
    ck_store_close(s);
    if (rc != CK_OK) {
        attrs_release(&at);
        return rc;
    }
    *out = at;
    return CK_OK;
}

/* One attribute value as ncdump writes it: text in quotes (with C
 * escapes), numbers as they are, arrays comma-separated. */
static void print_value(const cJSON *v)
{
    if (cJSON_IsString(v)) {
        putchar('"');
        for (const unsigned char *p = (const unsigned char *)v->valuestring; *p;
             p++) {
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if (*p == '\n')
                printf("\\n");
            else if (*p == '\t')
                printf("\\t");
            else if (*p < 0x20)
                printf("\\%03o", *p);
            else
                putchar(*p);
        }
        putchar('"');
    } else if (cJSON_IsArray(v)) {
        const cJSON *e;
        int first = 1;
        cJSON_ArrayForEach(e, v)
        {
            printf("%s", first ? "" : ", ");
            print_value(e);
            first = 0;
        }
    } else {
        char *t = cJSON_PrintUnformatted(v);
        printf("%s", t ? t : "?");
        free(t);
    }
}

/* "    tas:units = "K" ;" for each attribute of array 'name'. */
static void print_attrs(const char *name, const char *json)
{
    const char *slash = strrchr(name, '/');
    const char *var = slash && slash[1] ? slash + 1 : name;
    cJSON *o = json ? ck_attrs_parse(json, strlen(json)) : NULL;
    const cJSON *v;

    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return;
    }
    cJSON_ArrayForEach(v, o)
    {
        printf("    %s:%s = ", var, v->string);
        print_value(v);
        printf(" ;\n");
    }
    cJSON_Delete(o);
}

/* A Zarr store's version: its arrays' (2 for a store with none). */
static int zarr_format(const ck_info_list *l)
{
    return l->n > 0 && l->v[0].zarr_format ? l->v[0].zarr_format : 2;
}

/* Turns the bare NaN, Infinity and -Infinity under v (io/attrs_json.h)
 * into strings, as fill_value spells them, so --json stays JSON. */
static void words_to_strings(cJSON *v)
{
    for (; v; v = v->next) {
        if (cJSON_IsRaw(v) && strpbrk(v->valuestring, "NI"))
            v->type = cJSON_String;
        words_to_strings(v->child);
    }
}

/* The attributes' text as strict JSON ("null" when there is none). */
static void print_attrs_json(const char *json)
{
    cJSON *o = json ? ck_attrs_parse(json, strlen(json)) : NULL;
    char *t;

    words_to_strings(o);
    t = o ? cJSON_PrintUnformatted(o) : NULL;
    printf("%s", t ? t : "null");
    free(t);
    cJSON_Delete(o);
}

static void print_json(const char *path, const ck_info_list *l,
                       const info_attrs *at)
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
        char ts[16];
        typestr(a, ts, sizeof ts);
        printf(", \"shape\": ");
        json_ints(a->ndim, a->shape);
        printf(", \"dims\": ");
        json_dims(a);
        if (l->kind == CK_KIND_HDF5) { /* h5py's maxshape: null grows */
            printf(", \"maxshape\": [");
            for (int d = 0; d < a->ndim; d++)
                printf(a->unlimited >> d & 1 ? "%snull" : "%s%lld",
                       d ? ", " : "", (long long)a->shape[d]);
            putchar(']');
        }
        printf(", \"dtype\": \"%s\", \"typestr\": \"%s\", \"chunks\": ",
               ck_dtype_name(a->dtype), ts);
        /* No chunks in the file, so none stored either: null, like
         * chunks and nchunks (h5py's get_num_chunks() refuses such a
         * dataset); -1 stays "not counted" (a sharded array's). */
        if (has_file_chunks(a)) {
            json_ints(a->ndim, a->chunks);
            printf(", \"nchunks\": %lld, \"chunks_stored\": %lld",
                   (long long)l->nchunks[i], (long long)a->chunks_stored);
        } else {
            printf("null, \"nchunks\": null, \"chunks_stored\": null");
        }
        printf(", \"raw_bytes\": %.0f, \"stored_bytes\": %lld, ", raw,
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
        printf(", \"attrs\": ");
        print_attrs_json(at->json ? at->json[i] : NULL);
        printf("}");
    }
    printf("\n]");
    json_dimensions(l);
    printf("}\n");
}

enum { COLS = 9 };

static char *size_cell(double bytes)
{
    char b[32];
    return fmt("%s", ck_size_str(bytes, b, sizeof b));
}

static ck_code print_table(const char *path, const ck_info_list *l,
                           const info_attrs *at, int one, ck_err *err)
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
        /* Dimension names, "-" for an axis left unnamed. */
        for (int i = 0; i < l->n; i++) {
            const ck_array_info *a = &l->v[i];
            if (!a->has_dims)
                continue;
            printf("%s: dims (", a->name);
            for (int d = 0; d < a->ndim; d++)
                printf("%s%s", d ? ", " : "", a->dims[d][0] ? a->dims[d] : "-");
            printf(")\n");
        }
        /* Axes that may grow (netCDF's record dimension), as h5py's
         * maxshape says them. */
        for (int i = 0; i < l->n; i++) {
            const ck_array_info *a = &l->v[i];
            if (!a->unlimited)
                continue;
            printf("%s: maxshape (", a->name);
            for (int d = 0; d < a->ndim; d++)
                printf(a->unlimited >> d & 1 ? "%sunlimited" : "%s%lld",
                       d ? ", " : "", (long long)a->shape[d]);
            printf(")\n");
        }
        print_uneven_dims(l);
        if (one && l->n == 1)
            print_attrs(l->v[0].name, at->json ? at->json[0] : NULL);
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
    char path[PATH_MAX], name[512];
    info_attrs at = {0, NULL};
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
    CK_TRY(ck_target_split(argv[first], path, sizeof path, name, sizeof name,
                           err));
    CK_TRY(ck_info_collect(argv[first], &l, err));
    rc = attrs_collect(argv[first], &l, &at, err);
    if (rc == CK_OK && json)
        print_json(argv[first], &l, &at);
    else if (rc == CK_OK)
        rc = print_table(argv[first], &l, &at, name[0] != '\0', err);
    attrs_release(&at);
    ck_info_release(&l);
    return rc;
}
