/*
 * cli/print.c - small results on stdout: histograms as a table of bins,
 * reductions as values (a scalar alone on a line, arrays one value per
 * line in C order), other arrays as NumPy prints them (cli/ndprint.c), or
 * one JSON object with --json (an array step's values as nested lists);
 * and JSON strings.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "pipelines/exec.h"

/* The shortest text that reads back as the same double, as NumPy and
 * Python print floats. */
static const char *shortest(double f, char *buf, size_t n)
{
    if (f == floor(f) && fabs(f) < 1e16) { /* 10, not 1e+01 */
        snprintf(buf, n, "%.0f", f);
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    return buf;
}

static void value(ck_dtype t, const void *data, int64_t i, int json)
{
    double f;

    switch (t) {
    case CK_BOOL:
        printf(((const uint8_t *)data)[i] ? "true" : "false");
        return;
    case CK_I64:
        printf("%" PRId64, ((const int64_t *)data)[i]);
        return;
    case CK_U64:
        printf("%" PRIu64, ((const uint64_t *)data)[i]);
        return;
    default:
        ck_dtype_convert(CK_F64, &f, t,
                         (const char *)data + (size_t)i * ck_dtype_size(t), 1);
        if (json && !isfinite(f))
            printf(isnan(f) ? "\"NaN\""
                   : f > 0  ? "\"Infinity\""
                            : "\"-Infinity\"");
        else {
            char buf[40];
            fputs(shortest(f, buf, sizeof buf), stdout);
        }
    }
}

int cli_show_len(const char *s)
{
    size_t n = strnlen(s, CLI_SHOW_MAX + 1);

    if (n <= CLI_SHOW_MAX)
        return (int)n;
    n = CLI_SHOW_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--; /* not inside a UTF-8 sequence */
    return (int)n;
}

const char *cli_show_more(const char *s)
{
    return strnlen(s, CLI_SHOW_MAX + 1) > CLI_SHOW_MAX ? "..." : "";
}

void cli_print_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

int64_t cli_result_count(const ck_result *r)
{
    int64_t n = 1;
    for (int d = 0; d < r->ndim; d++)
        n *= r->shape[d];
    return n;
}

/* Values from element *i on, along axes axis.., as nested JSON lists. */
static void nested(const ck_result *r, int axis, int64_t *i)
{
    if (axis == r->ndim) {
        value(r->dtype, r->data, (*i)++, 1);
        return;
    }
    printf("[");
    for (int64_t k = 0; k < r->shape[axis]; k++) {
        printf(k ? ", " : "");
        nested(r, axis + 1, i);
    }
    printf("]");
}

void cli_print_results(const ck_results *res, int json)
{
    if (json)
        printf("{");
    for (int k = 0; k < res->n; k++) {
        const ck_result *r = &res->v[k];
        int64_t n = cli_result_count(r);
        if (json) {
            printf("%s\"%s\": {\"dtype\": \"%s\", \"shape\": [", k ? ", " : "",
                   r->name, ck_dtype_name(r->dtype));
            for (int d = 0; d < r->ndim; d++)
                printf("%s%" PRId64, d ? ", " : "", r->shape[d]);
            printf("], ");
            if (r->is_hist) {
                printf("\"edges\": [");
                for (int64_t i = 0; i <= n; i++) {
                    printf(i ? ", " : "");
                    value(CK_F64, r->edges, i, 1);
                }
                printf("], \"counts\": [");
            } else if (r->array) {
                int64_t at = 0;
                printf("\"values\": ");
                nested(r, 0, &at);
                printf("}");
                continue;
            } else {
                printf("\"values\": [");
            }
            for (int64_t i = 0; i < n; i++) {
                printf(i ? ", " : "");
                value(r->dtype, r->data, i, 1);
            }
            printf("]}");
            continue;
        }
        if (res->n > 1)
            printf("# %s\n", r->name);
        if (r->is_hist) {
            printf("%-12s %-12s %s\n", "bin_low", "bin_high", "count");
            for (int64_t i = 0; i < n; i++) {
                char lo[40], hi[40];
                shortest(r->edges[i], lo, sizeof lo);
                shortest(r->edges[i + 1], hi, sizeof hi);
                printf("%-12s %-12s ", lo, hi);
                value(r->dtype, r->data, i, 0);
                printf("\n");
            }
            continue;
        }
        if (r->array) {
            cli_print_ndarray(r);
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            value(r->dtype, r->data, i, 0);
            printf("\n");
        }
    }
    if (json)
        printf("}\n");
}
