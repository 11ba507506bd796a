/*
 * cli/cmd_op.c - every pipeline op as a command: chunkctl OP ARGS...
 * "chunkctl reshape data.h5:/x --shape 1000,5000,5 -o out.zarr" is the
 * one-step pipeline {"op": "reshape", "args": ["x"], "shape": [1000, 5000,
 * 5]}.  Positional arguments are the op's args (arrays, or numbers);
 * --KEY VALUE become the step's keys: "1,2,3" a list, "7,11;-5,5" a list
 * of lists, a number a number, true/false/null themselves, a value
 * starting with [ or { raw JSON, anything else a string; --KEY alone is
 * true.  The pipeline format (chunkctl-pipeline(5)) is the reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "pipelines/plan.h"

static int is_number(const char *s)
{
    char *end;
    if (!*s)
        return 0;
    (void)strtod(s, &end);
    return *end == '\0';
}

/* Appends v to buf as JSON following the rules at the top. */
static int json_value(char *buf, size_t n, const char *v)
{
    size_t u = strlen(buf);

    if (v[0] == '[' || v[0] == '{' || !strcmp(v, "true") ||
        !strcmp(v, "false") || !strcmp(v, "null") || is_number(v)) {
        snprintf(buf + u, n - u, "%s", v);
        return 1;
    }
    if (strpbrk(v, ",;")) { /* lists of numbers, ';' between rows */
        char tmp[4096];
        const char *p = v;
        size_t t = 0;
        int rows = strchr(v, ';') != NULL;
        if (strlen(v) * 2 + 8 > sizeof tmp)
            return 0;
        tmp[t++] = '[';
        if (rows)
            tmp[t++] = '[';
        for (; *p; p++) {
            if (*p == ';') {
                tmp[t++] = ']';
                tmp[t++] = ',';
                tmp[t++] = '[';
            } else {
                tmp[t++] = *p;
            }
        }
        if (rows)
            tmp[t++] = ']';
        tmp[t++] = ']';
        tmp[t] = '\0';
        snprintf(buf + u, n - u, "%s", tmp);
        return 1;
    }
    cli_json_str(buf, n, v);
    return 1;
}

static const char op_help[] =
    "usage: chunkctl OP [ARRAY|NUMBER ...] [--KEY VALUE ...] [-o DST]\n\n"
    "Any pipeline op as one command (see chunkctl-pipeline(5)): the\n"
    "positional arguments are its args, each --KEY VALUE one of its keys\n"
    "(1,2,3 is a list, 7,11;-5,5 a list of lists, [ or { raw JSON).\n"
    "Reductions and histograms print their result when no -o is given.\n\n"
    "  -o, --output DST   write the result to DST[:DATASET]\n"
    "  --json             print the result as JSON\n"
    "  --memory SIZE, --threads N, --force, --quiet, --help\n\n"
    "examples:\n"
    "  chunkctl reshape data.h5:/x --shape 1000,5000,5 -o out.zarr\n"
    "  chunkctl add data.h5:/x 1.5 -o out.h5:/y\n"
    "  chunkctl slice data.h5:/x --index '[[null,null,2],[100,-100]]' "
    "-o s.h5\n"
    "  chunkctl std data.h5:/x --axis 0 --ddof 1\n";

ck_code cmd_op(int argc, char **argv, cli_common *c, ck_err *err)
{
    static char json[1 << 20];
    char inputs[1 << 14] = "", args[1 << 14] = "", keys[1 << 16] = "";
    const char *op = argv[0], *out = NULL;
    int nin = 0, nargs = 0, pj = 0;
    ck_code rc = CK_OK;

    json[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char key[128];
        const char *val = NULL, *eq;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(op_help, stdout);
            return CK_OK;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i == argc)
                return ck_err_set(err, CK_EUSAGE, "%s: -o needs a DST", op);
            out = argv[i];
            continue;
        }
        if (!strcmp(a, "--json")) {
            pj = 1;
            continue;
        }
        if (!strcmp(a, "--quiet") || !strcmp(a, "--force") ||
            !strcmp(a, "--memory") || !strcmp(a, "--threads")) {
            int opt = a[2] == 'q'   ? 'q'
                      : a[2] == 'f' ? 'f'
                      : a[2] == 'm' ? 'M'
                                    : 'T';
            const char *arg = NULL;
            if (opt == 'M' || opt == 'T') {
                if (++i == argc)
                    return ck_err_set(err, CK_EUSAGE, "%s: %s needs a value",
                                      op, a);
                arg = argv[i];
            }
            cli_common_opt(opt, arg, c, &rc, err);
            if (rc != CK_OK)
                return rc;
            continue;
        }
        if (!strncmp(a, "--", 2) && a[2]) {
            eq = strchr(a, '=');
            snprintf(key, sizeof key, "%.*s",
                     (int)(eq ? (size_t)(eq - a - 2) : strlen(a + 2)), a + 2);
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2))
                val = argv[++i];
            else
                val = "true";
            size_t u = strlen(keys);
            snprintf(keys + u, sizeof keys - u, ", ");
            cli_json_str(keys, sizeof keys, key);
            u = strlen(keys);
            snprintf(keys + u, sizeof keys - u, ": ");
            if (!json_value(keys, sizeof keys, val))
                return ck_err_set(err, CK_EUSAGE, "%s: --%s: value too long",
                                  op, key);
            continue;
        }
        /* a positional argument: a number or an array */
        size_t u = strlen(args);
        snprintf(args + u, sizeof args - u, "%s", nargs ? ", " : "");
        if (is_number(a)) {
            u = strlen(args);
            snprintf(args + u, sizeof args - u, "%s", a);
        } else {
            char name[16];
            snprintf(name, sizeof name, "a%d", nin);
            u = strlen(inputs);
            snprintf(inputs + u, sizeof inputs - u,
                     "%s\"%s\": ", nin ? ", " : "", name);
            cli_json_str(inputs, sizeof inputs, a);
            u = strlen(args);
            snprintf(args + u, sizeof args - u, "\"%s\"", name);
            nin++;
        }
        nargs++;
    }
    if (!ck_plan_prints(op) && !out)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: give -o DST[:DATASET] (only reductions and "
                          "histograms print their result)",
                          op);
    snprintf(json, sizeof json,
             "{\"inputs\": {%s}, \"steps\": [{\"name\": ", inputs);
    cli_json_str(json, sizeof json, op); /* the dataset's default name */
    strcat(json, ", \"op\": ");
    cli_json_str(json, sizeof json, op);
    size_t u = strlen(json);
    if (strcmp(op, "random") != 0)
        snprintf(json + u, sizeof json - u, ", \"args\": [%s]", args);
    u = strlen(json);
    snprintf(json + u, sizeof json - u, "%s}]", keys);
    return cli_run_onestep(op, op, json, out, c, pj, err);
}
