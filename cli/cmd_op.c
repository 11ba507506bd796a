/*
 * cli/cmd_op.c - every pipeline op as a command: chunkctl OP ARGS...
 * "chunkctl reshape data.h5:/x --shape 1000,5000,5 -o out.zarr" is the
 * one-step pipeline {"op": "reshape", "args": ["x"], "shape": [1000, 5000,
 * 5]}.  Positional arguments are the op's args (arrays, or numbers);
 * --KEY VALUE become the step's keys: "1,2,3" a list, "7,11;-5,5" a list
 * of lists (when the first item is a number, true, false or null: then
 * every item must be), a number a number, true/false/null themselves, a
 * value starting with [ or { JSON (the one place a user types JSON),
 * anything else a string ("ij,jk->ik" too); --KEY alone is true.  The pipeline
 * format (chunkctl-pipeline(5)) is the reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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

/* One element of a list value: a number, true, false or null.  1 when s
 * (n bytes) is one of them, 0 when not, -1 when out of memory. */
static int element(const char *s, size_t n, cJSON **out)
{
    char *t = malloc(n + 1);
    int r = 1;

    *out = NULL;
    if (!t)
        return -1;
    memcpy(t, s, n);
    t[n] = '\0';
    if (!strcmp(t, "true") || !strcmp(t, "false"))
        *out = cJSON_CreateBool(t[0] == 't');
    else if (!strcmp(t, "null"))
        *out = cJSON_CreateNull();
    else if (is_number(t))
        *out = cJSON_CreateNumber(strtod(t, NULL));
    else
        r = 0;
    free(t);
    return r && !*out ? -1 : r;
}

/* "1,2,3" -> [1, 2, 3]; "7,11;-5,5" -> [[7, 11], [-5, 5]]. */
static ck_code list_value(const char *op, const char *key, const char *v,
                          cJSON **out, ck_err *err)
{
    int rows = strchr(v, ';') != NULL, oom = 0;
    cJSON *top = cJSON_CreateArray(), *row = top;
    const char *p = v;

    if (!top)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    for (;;) {
        size_t n = strcspn(p, ",;");
        cJSON *item;
        int got;
        if (rows && row == top) {
            if (!(row = cJSON_CreateArray()) ||
                !cJSON_AddItemToArray(top, row)) {
                cJSON_Delete(row);
                oom = 1;
                break;
            }
        }
        if ((got = element(p, n, &item)) != 1) {
            oom = got < 0;
            break;
        }
        if (!cJSON_AddItemToArray(row, item)) {
            cJSON_Delete(item);
            oom = 1;
            break;
        }
        p += n;
        if (!*p) {
            *out = top;
            return CK_OK;
        }
        if (*p++ == ';')
            row = top; /* the next element starts a new row */
    }
    cJSON_Delete(top);
    if (oom)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    return ck_err_set(err, CK_EUSAGE,
                      "%s: --%.*s%s '%.*s%s': expected numbers like 1,2,3 "
                      "or 7,11;-5,5",
                      op, CLI_SHOW(key), CLI_SHOW(v));
}

/* Is v's first item (up to ',' or ';') a number, true, false or null? */
static int first_is_item(const char *v)
{
    cJSON *item = NULL;
    int r = element(v, strcspn(v, ",;"), &item);

    cJSON_Delete(item);
    return r != 0; /* out of memory (-1): let list_value say so */
}

/* v as a step's value, following the rules at the top. */
/* "lat,lon": axes named by dimension, a list of strings. */
static ck_code names_value(const char *v, cJSON **out, ck_err *err)
{
    cJSON *l = cJSON_CreateArray();

    for (const char *p = v; l && *p;) {
        size_t k = strcspn(p, ",");
        char *name = strndup(p, k);
        cJSON *item = name ? cJSON_CreateString(name) : NULL;
        free(name);
        if (!item || !cJSON_AddItemToArray(l, item)) {
            cJSON_Delete(item);
            cJSON_Delete(l);
            l = NULL;
            break;
        }
        p += k + (p[k] == ',');
    }
    if (!(*out = l))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    return CK_OK;
}

static ck_code value(const char *op, const char *key, const char *v,
                     cJSON **out, ck_err *err)
{
    if (v[0] == '[' || v[0] == '{') {
        if (!(*out = cJSON_ParseWithOpts(v, NULL, 1)))
            return ck_err_set(err, CK_EUSAGE,
                              "%s: --%.*s%s '%.*s%s': not valid JSON (a "
                              "value starting with [ or { is read as JSON)",
                              op, CLI_SHOW(key), CLI_SHOW(v));
        return CK_OK;
    }
    if (!strcmp(v, "true") || !strcmp(v, "false"))
        *out = cJSON_CreateBool(v[0] == 't');
    else if (!strcmp(v, "null"))
        *out = cJSON_CreateNull();
    else if (is_number(v))
        *out = cJSON_CreateNumber(strtod(v, NULL));
    else if (strpbrk(v, ",;") && first_is_item(v)) /* numbers; ';' rows */
        return list_value(op, key, v, out, err);
    else if (strchr(v, ',') && (!strcmp(key, "axis") || !strcmp(key, "axes")))
        return names_value(v, out, err); /* --axis lat,lon */
    else /* a string, with commas or not ("ij,jk->ik") */
        *out = cJSON_CreateString(v);
    if (!*out)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    return CK_OK;
}

/* After the op's own usage line and description (ck_plan_op_usage). */
static const char op_help[] =
    "\nEach pipeline op is a command too (see chunkctl-pipeline(5) for the\n"
    "op's keys): the positional arguments are its args, arrays as\n"
    "PATH[:DATASET] or numbers, and each --KEY VALUE one of its keys (1,2,3\n"
    "is a list, 7,11;-5,5 a list of lists, [ or { raw JSON).  Reductions,\n"
    "quantiles, histograms, unique and bincount print their result when\n"
    "no -o is given.\n\n"
    "  -o, --output DST   write the result to DST[:DATASET]\n"
    "  --json             print the result as JSON\n"
    "  --backend NAME     auto, cpu or cuda (default: "
    "auto)\n" CLI_HELP_GPU_MEMORY CLI_HELP_ZARR CLI_HELP_RAW CLI_HELP_RESUME
    "  --memory SIZE, --threads N, --force, --quiet, --verbose, --help\n\n";

ck_code cmd_op(int argc, char **argv, cli_common *c, ck_err *err)
{
    const char *op = argv[0], *out = NULL;
    int nin = 0, npos = 0, pj = 0;
    cli_step s;
    ck_code rc;

    /* the dataset's default name is the op's */
    if ((rc = cli_step_init(&s, op, op, err)) != CK_OK)
        goto done;
    for (int i = 1; i < argc && rc == CK_OK; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            ck_plan_op_usage(stdout, op);
            fputs(op_help, stdout);
            ck_plan_op_examples(stdout, op);
            goto done;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i == argc)
                rc = ck_err_set(err, CK_EUSAGE, "%s: -o needs a DST", op);
            else
                rc = cli_set_output(&out, argv[i], op, err);
            continue;
        }
        if (!strcmp(a, "--json")) {
            pj = 1;
            continue;
        }
        if (!strcmp(a, "--raw")) {
            c->raw = 1;
            continue;
        }
        if (!strcmp(a, "--resume")) {
            c->resume = 1;
            continue;
        }
        if (!strcmp(a, "--quiet") || !strcmp(a, "--force") ||
            !strcmp(a, "--memory") || !strcmp(a, "--threads") ||
            !strcmp(a, "--backend") || !strcmp(a, "--verbose") ||
            !strcmp(a, "--zarr-format") || !strcmp(a, "--shards") ||
            !strcmp(a, "--gpu-memory")) {
            int opt = a[2] == 'q'   ? 'q'
                      : a[2] == 'f' ? 'f'
                      : a[2] == 'm' ? 'M'
                      : a[2] == 'b' ? 'B'
                      : a[2] == 'v' ? 'v'
                      : a[2] == 'z' ? CLI_OPT_ZARR_FORMAT
                      : a[2] == 's' ? CLI_OPT_SHARDS
                      : a[2] == 'g' ? CLI_OPT_GPU_MEMORY
                                    : 'T';
            const char *arg = NULL;
            if (opt == 'M' || opt == 'T' || opt == 'B' ||
                opt == CLI_OPT_ZARR_FORMAT || opt == CLI_OPT_SHARDS ||
                opt == CLI_OPT_GPU_MEMORY) {
                if (++i == argc) {
                    rc = ck_err_set(err, CK_EUSAGE, "%s: %s needs a value", op,
                                    a);
                    continue;
                }
                arg = argv[i];
            }
            cli_common_opt(opt, arg, c, &rc, err);
            continue;
        }
        if (!strncmp(a, "--", 2) && a[2]) {
            const char *eq = strchr(a, '='), *val;
            size_t kn = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            char *key = malloc(kn + 1);
            cJSON *item = NULL;
            if (!key) {
                rc = ck_err_set(err, CK_ENOMEM, "out of memory");
                continue;
            }
            memcpy(key, a + 2, kn);
            key[kn] = '\0';
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2))
                val = argv[++i];
            else
                val = "true";
            if (!strcmp(key, "name") || !strcmp(key, "op") ||
                !strcmp(key, "args"))
                rc = ck_err_set(err, CK_EUSAGE,
                                "%s: --%s: the command sets it (give the "
                                "op's args as positional arguments)",
                                op, key);
            else if (cli_step_has_key(&s, key))
                /* a step's key is one JSON value: --axis 0 --axis 1 is
                 * more likely meant as the list 0,1 than as 1 */
                rc = ck_err_set(err, CK_EUSAGE,
                                "%s: --%s given twice; give it once (a list "
                                "is one value: 0,1)",
                                op, key);
            else if ((rc = value(op, key, val, &item, err)) == CK_OK)
                cli_step_key(&s, key, item);
            free(key);
            continue;
        }
        /* a positional argument: a number or an array */
        npos++;
        if (is_number(a)) {
            cli_step_arg_num(&s, a);
        } else {
            char name[16], what[32];
            snprintf(name, sizeof name, "a%d", nin);
            snprintf(what, sizeof what, "argument %d", npos);
            if ((rc = cli_check_path(op, what, a, err)) == CK_OK)
                cli_step_input(&s, name, a, 1);
            nin++;
        }
    }
    if (rc != CK_OK)
        goto done;
    if (!ck_plan_prints(op) && !out) {
        rc = ck_err_set(err, CK_EUSAGE,
                        "%s: give -o DST[:DATASET] (only reductions, "
                        "quantiles, histograms, unique and bincount print "
                        "their result)",
                        op);
        goto done;
    }
    rc = cli_run_onestep(&s, op, op, out, c, pj, err);
done:
    cli_step_release(&s);
    return rc;
}
