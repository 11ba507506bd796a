/*
 * tests/pipelines/test_optab.c - the op table (pipelines/optab.h) and what
 * reads from it: the parser's arity checks, ck_plan_op_known/prints, the
 * one-step plans' messages (ck_plan_build with CK_PLAN_ONESTEP).
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/ew.h"
#include "ops/reduce.h"
#include "pipelines/optab.h"
#include "pipelines/plan.h"
#include "tests/pipelines/xzarr_fixture.h"

static char tmpdir[] = "/tmp/ck-optab-XXXXXX";

static void setup(void)
{
    xzarr_setup(tmpdir);
}

static void teardown(void)
{
    xzarr_teardown(tmpdir);
}

TestSuite(optab, .init = setup, .fini = teardown,
          .description = "pipelines/optab.h: one row per op");

Test(optab, every_node_kind_has_a_row_that_sizes_its_boxes)
{
    for (int k = CK_NODE_INPUT; k <= CK_NODE_PREDICT; k++) {
        const ck_op_def *d = ck_optab_kind((ck_node_kind)k);
        cr_assert_eq((int)d->kind, k, "kind %d has no row", k);
        cr_assert_not_null(d->bytes, "%s: no bytes function", d->name);
        cr_assert(d->eval || d->run, "%s: neither evaluated nor run", d->name);
        cr_assert(d->backends & CK_OPB_CPU, "%s: the CPU is the reference",
                  d->name);
        if (d->parse)
            cr_assert(d->help && d->help[0], "%s: no help line", d->name);
    }
}

Test(optab, family_members_are_found_by_name)
{
    int sub = -1;
    const ck_op_def *d;

    for (int m = 0; m < CK_EW_COUNT; m++) {
        d = ck_optab_find(ck_ew_name((ck_ew_op)m), &sub);
        cr_assert_not_null(d);
        cr_assert_eq(d->kind, CK_NODE_EW);
        cr_assert_eq(sub, m);
    }
    for (int m = 0; m < CK_RED_COUNT; m++) {
        d = ck_optab_find(ck_red_name((ck_red_op)m), &sub);
        cr_assert_not_null(d);
        cr_assert_eq(d->kind, CK_NODE_REDUCE);
        cr_assert_eq(sub, m);
    }
    d = ck_optab_find("stack", &sub);
    cr_assert_eq(d->kind, CK_NODE_CONCAT);
    cr_assert_eq(sub, 1);
    d = ck_optab_find("concatenate", &sub);
    cr_assert_eq(sub, 0);
    /* family labels and parser-made nodes are not step ops */
    cr_assert_null(ck_optab_find("elementwise", &sub));
    cr_assert_null(ck_optab_find("(input)", &sub));
    cr_assert_null(ck_optab_find("frobnicate", &sub));
}

Test(optab, known_and_printed_ops_come_from_the_rows)
{
    cr_assert(ck_plan_op_known("add"));
    cr_assert(ck_plan_op_known("glm_predict"));
    cr_assert_not(ck_plan_op_known("(result)"));
    cr_assert_not(ck_plan_op_known("elementwise"));
    cr_assert(ck_plan_prints("nanstd"));
    cr_assert(ck_plan_prints("histogram"));
    cr_assert(ck_plan_prints("histogram2d"));
    cr_assert_not(ck_plan_prints("add"));
}

/* Parses doc with a fresh err (the first error set is the one kept). */
static ck_code parse(const char *doc, ck_err *err)
{
    ck_plan *p = NULL;
    ck_code rc;

    memset(err, 0, sizeof *err);
    rc = ck_plan_parse("p.json", doc, 0, 0, &p, err);
    ck_plan_free(p);
    return rc;
}

Test(optab, the_rows_arity_is_checked_before_the_op_parses)
{
    ck_err err = {0};

    cr_assert_eq(parse("{\"inputs\": {\"x\": \"x.zarr\"}, \"steps\": "
                       "[{\"name\": \"y\", \"op\": \"where\", \"args\": "
                       "[\"x\", 1]}], \"outputs\": {\"y\": \"o.zarr\"}}",
                       &err),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg, "p.json: steps[0]: takes 3 arguments, got 2");
    cr_assert_eq(parse("{\"inputs\": {\"x\": \"x.zarr\"}, \"steps\": "
                       "[{\"name\": \"y\", \"op\": \"glm_predict\", \"args\": "
                       "[\"x\", \"x\", \"x\"]}], \"outputs\": {\"y\": "
                       "\"o.zarr\"}}",
                       &err),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg,
                     "p.json: steps[0]: takes 1 to 2 arguments, got 3");
    cr_assert_eq(parse("{\"inputs\": {\"x\": \"x.zarr\"}, \"steps\": "
                       "[{\"name\": \"y\", \"op\": \"random\", \"args\": "
                       "[\"x\"], \"shape\": [3]}], \"outputs\": {\"y\": "
                       "\"o.zarr\"}}",
                       &err),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg, "p.json: steps[0]: random takes no args");
}

Test(optab, one_step_plans_speak_of_the_command)
{
    ck_err err = {0};
    ck_plan *p = NULL;
    cJSON *doc = cJSON_Parse(
        "{\"inputs\": {\"x\": \"x.zarr\"}, \"steps\": [{\"name\": "
        "\"result\", \"op\": \"sum\", \"args\": [\"x\"], \"axis\": 5}], "
        "\"outputs\": {}, \"print\": [\"result\"]}");

    cr_assert_not_null(doc);
    cr_assert_eq(ck_plan_build("reduce", doc, CK_PLAN_ONESTEP, 0, &p, &err),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg, "reduce: axis 5 out of range for a 2-D array");
    /* the same document as a pipeline file names the step */
    memset(&err, 0, sizeof err);
    cr_assert_eq(ck_plan_build("p.json", doc, 0, 0, &p, &err), CK_EUSAGE);
    cr_assert_str_eq(err.msg,
                     "p.json: steps[0]: axis 5 out of range for a 2-D array");
    cJSON_Delete(doc);
}

Test(optab, paths_longer_than_the_plan_holds_are_refused)
{
    ck_err err = {0};
    ck_plan *p = NULL;
    size_t n = 70000;
    char *path = malloc(n + 1);
    cJSON *doc = cJSON_CreateObject(), *in = cJSON_CreateObject();

    memset(path, 'a', n);
    path[n] = '\0';
    cJSON_AddItemToObject(in, "x", cJSON_CreateString(path));
    cJSON_AddItemToObject(doc, "inputs", in);
    cJSON_AddItemToObject(doc, "outputs", cJSON_CreateObject());
    cJSON_AddItemToObject(doc, "print",
                          cJSON_CreateStringArray((const char *[]){"x"}, 1));
    cr_assert_eq(ck_plan_build("reduce", doc, CK_PLAN_ONESTEP, 0, &p, &err),
                 CK_EUSAGE);
    cr_assert_str_eq(err.msg, "reduce: a path of 70000 bytes (at most 4095)");
    cJSON_Delete(doc);
    free(path);
}
