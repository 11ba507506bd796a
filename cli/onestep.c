/*
 * cli/onestep.c - what the one-step commands (reduce, histogram, svd,
 * glm-fit, glm-predict, any op) share: the pipeline they build, as a cJSON
 * tree handed to ck_plan_build with CK_PLAN_ONESTEP, and running it.  No
 * JSON text is written or parsed on the way, so a path or name the user
 * gave reaches the plan as it was typed, whatever its length or bytes, and
 * the plan's messages speak of the command, not of a generated file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "io/store.h"
#include "pipelines/exec.h"
#include "pipelines/plan.h"

/* Adds item to obj under key (or to the array obj when key is NULL); on
 * failure frees item and remembers it. */
static void add(cli_step *s, cJSON *obj, const char *key, cJSON *item)
{
    cJSON_bool ok;

    if (!item || !obj) {
        cJSON_Delete(item);
        s->oom = 1;
        return;
    }
    ok = key ? cJSON_AddItemToObject(obj, key, item)
             : cJSON_AddItemToArray(obj, item);
    if (!ok) {
        cJSON_Delete(item);
        s->oom = 1;
    }
}

ck_code cli_step_init(cli_step *s, const char *name, const char *op,
                      ck_err *err)
{
    cJSON *steps;

    memset(s, 0, sizeof *s);
    if (!(s->doc = cJSON_CreateObject()))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    add(s, s->doc, "inputs", s->inputs = cJSON_CreateObject());
    add(s, s->doc, "steps", steps = cJSON_CreateArray());
    add(s, steps, NULL, s->step = cJSON_CreateObject());
    add(s, s->step, "name", cJSON_CreateString(name));
    add(s, s->step, "op", cJSON_CreateString(op));
    add(s, s->step, "args", s->args = cJSON_CreateArray());
    add(s, s->doc, "outputs", s->outputs = cJSON_CreateObject());
    if (s->oom)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    return CK_OK;
}

void cli_step_release(cli_step *s)
{
    cJSON_Delete(s->doc);
    memset(s, 0, sizeof *s);
}

void cli_step_input(cli_step *s, const char *name, const char *target, int arg)
{
    add(s, s->inputs, name, cJSON_CreateString(target));
    if (arg)
        add(s, s->args, NULL, cJSON_CreateString(name));
}

void cli_step_arg_num(cli_step *s, const char *text)
{
    cJSON *v = cJSON_CreateNumber(strtod(text, NULL));

    /* 2.0 and 1e3 are floats to NumPy's promotion, as in a pipeline */
    if (v && strpbrk(text, ".eE"))
        v->type |= CK_PLAN_JSON_FLOAT;
    add(s, s->args, NULL, v);
}

void cli_step_key(cli_step *s, const char *key, cJSON *item)
{
    /* the option given last counts, as getopt users expect */
    if (item && s->step && cJSON_GetObjectItemCaseSensitive(s->step, key)) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(s->step, key, item)) {
            cJSON_Delete(item);
            s->oom = 1;
        }
        return;
    }
    add(s, s->step, key, item);
}

int cli_step_has_key(const cli_step *s, const char *key)
{
    return s->step && cJSON_GetObjectItemCaseSensitive(s->step, key) != NULL;
}

void cli_step_output(cli_step *s, const char *result, const char *target)
{
    add(s, s->outputs, result, cJSON_CreateString(target));
}

void cli_step_print(cli_step *s, const char *result)
{
    if (!s->print && s->doc)
        add(s, s->doc, "print", s->print = cJSON_CreateArray());
    add(s, s->print, NULL, cJSON_CreateString(result));
}

ck_code cli_step_run(cli_step *s, const char *label, cli_common *c,
                     ck_results *res, ck_err *err)
{
    ck_plan *p = NULL;
    ck_exec_opts o = {0};
    ck_code rc;

    if (s->oom || !s->doc)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    CK_TRY(ck_plan_build(label, s->doc,
                         CK_PLAN_ONESTEP | (c->raw ? CK_PLAN_RAW : 0),
                         c->memory, &p, err));
    o.memory = c->memory;
    o.threads = c->threads;
    o.gpu_memory = c->gpu_memory;
    o.force = c->force;
    o.resume = c->resume;
    o.zarr_format = c->zarr_format;
    o.cmdline = c->cmdline;
    o.shards_ndim = c->shards_ndim;
    memcpy(o.shards, c->shards, sizeof o.shards);
    o.backend = c->backend; /* NULL: the plan's, auto */
    cli_progress_begin(c, label);
    o.progress = c->progress;
    rc = ck_exec_run(p, &o, res, err);
    cli_progress_end(c);
    ck_plan_free(p);
    return rc;
}

ck_code cli_run_onestep(cli_step *s, const char *label, const char *result,
                        const char *out, cli_common *c, int print_json,
                        ck_err *err)
{
    ck_results res = {0};
    ck_code rc;

    if (out) {
        CK_TRY(cli_check_path(label, "-o", out, err));
        cli_step_output(s, result, out);
    } else {
        cli_step_print(s, result);
    }
    rc = cli_step_run(s, label, c, &res, err);
    if (rc == CK_OK)
        cli_print_results(&res, print_json);
    ck_results_release(&res);
    return rc;
}

ck_code cli_check_path(const char *label, const char *what, const char *path,
                       ck_err *err)
{
    /* the plan holds each input's source and output's target in a field
     * of this size */
    size_t max = sizeof((ck_output *)NULL)->target - 1;

    if (strlen(path) > max)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: %s: a path of %zu bytes (at most %zu)", label,
                          what, strlen(path), max);
    return CK_OK;
}

ck_code cli_target_split(const char *target, char **path, char **dataset,
                         ck_err *err)
{
    /* the dataset gains at most a leading '/'; both end in a NUL */
    size_t n = strlen(target) + 2;

    *path = malloc(n);
    *dataset = malloc(n);
    if (!*path || !*dataset)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    return ck_target_split(target, *path, n, *dataset, n, err);
}

char *cli_target_join(const char *path, const char *dataset, const char *leaf)
{
    size_t n = strlen(path) + strlen(dataset) + strlen(leaf) + 3;
    char *t = malloc(n);

    if (t)
        snprintf(t, n, "%s:%s/%s", path, dataset, leaf);
    return t;
}
