/*
 * cli/onestep.c - what the one-step commands (reduce, histogram, any op)
 * share: JSON strings, running the pipeline they build, and speaking of
 * options rather than of the generated file in errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "pipelines/exec.h"
#include "pipelines/plan.h"

void cli_json_str(char *buf, size_t n, const char *s)
{
    size_t u = strlen(buf);

    if (u + 2 >= n)
        return;
    buf[u++] = '"';
    for (; *s && u + 8 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            u += (size_t)snprintf(buf + u, n - u, "\\%c", ch);
        else if (ch < 0x20)
            u += (size_t)snprintf(buf + u, n - u, "\\u%04x", ch);
        else
            buf[u++] = (char)ch;
    }
    buf[u++] = '"';
    buf[u] = '\0';
}

/* Plan errors speak of the generated file ("reduce: steps[0]: ..."); a
 * command-line user gave options, not steps, so drop that part. */
static void tidy(ck_err *err, const char *label)
{
    char pre[64], *at;
    const char *parts[] = {"steps[0]: ",  "inputs.x: ",  "inputs.w: ",
                           "inputs.a0: ", "inputs.a1: ", "inputs.a2: "};

    snprintf(pre, sizeof pre, "%s: ", label);
    if (strncmp(err->msg, pre, strlen(pre)) != 0)
        return;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if ((at = strstr(err->msg, parts[i])) == err->msg + strlen(pre))
            memmove(at, at + strlen(parts[i]),
                    strlen(at + strlen(parts[i])) + 1);
}

ck_code cli_run_doc(const char *label, const char *doc, cli_common *c,
                    ck_results *res, ck_err *err)
{
    ck_plan *p = NULL;
    ck_exec_opts o = {0};
    ck_code rc;

    if ((rc = ck_plan_parse(label, doc, &p, err)) != CK_OK) {
        tidy(err, label);
        return rc;
    }
    o.memory = c->memory;
    o.threads = c->threads;
    o.force = c->force;
    o.backend = "cpu";
    cli_progress_begin(c, label);
    o.progress = c->progress;
    rc = ck_exec_run(p, &o, res, err);
    cli_progress_end(c);
    ck_plan_free(p);
    return rc;
}

ck_code cli_run_onestep(const char *label, const char *step, const char *json,
                        const char *out, cli_common *c, int print_json,
                        ck_err *err)
{
    size_t n = strlen(json) + (out ? strlen(out) * 2 : 0) + strlen(step) + 128;
    char *doc = malloc(n);
    ck_results res = {0};
    ck_code rc;

    if (!doc)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    snprintf(doc, n, "%s, \"outputs\": {", json);
    if (out) {
        cli_json_str(doc, n, step);
        strcat(doc, ": ");
        cli_json_str(doc, n, out);
        strcat(doc, "}}");
    } else {
        strcat(doc, "}, \"print\": [");
        cli_json_str(doc, n, step);
        strcat(doc, "]}");
    }
    rc = cli_run_doc(label, doc, c, &res, err);
    free(doc);
    if (rc == CK_OK)
        cli_print_results(&res, print_json);
    ck_results_release(&res);
    return rc;
}
