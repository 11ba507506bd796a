/*
 * tests/pipelines/test_plan.c - ck_plan_dup (pipelines/plan.h): a plan's
 * copy has what the plan uses, and costs only the pages of what it uses.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipelines/plan.h"
#include "tests/pipelines/xzarr_fixture.h"

static char tmpdir[] = "/tmp/ck-plan-XXXXXX";

static void setup(void)
{
    xzarr_setup(tmpdir);
}

static void teardown(void)
{
    xzarr_teardown(tmpdir);
}

TestSuite(plan, .init = setup, .fini = teardown,
          .description = "pipelines/plan.h: copies of a plan");

static const char doc[] =
    "{\"inputs\": {\"x\": \"x.zarr\"}, \"steps\": ["
    "{\"name\": \"y\", \"op\": \"add\", \"args\": [\"x\", 1]},"
    "{\"name\": \"s\", \"op\": \"sum\", \"args\": [\"y\"], \"axis\": 0}],"
    "\"outputs\": {\"y\": \"y.zarr\", \"s\": \"s.zarr\"}}";

/* The process's resident bytes (/proc/self/statm, field 2). */
static long resident(void)
{
    long size = 0, pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%ld %ld", &size, &pages), 2);
    fclose(f);
    return pages * sysconf(_SC_PAGESIZE);
}

static int all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;

    for (size_t i = 0; i < n; i++)
        if (c[i])
            return 0;
    return 1;
}

Test(plan, a_copy_has_the_nodes_outputs_and_lists_of_the_plan)
{
    ck_plan *p = NULL, *q;
    ck_err err = {0};

    cr_assert_eq(ck_plan_parse("p.json", doc, 0, 0, &p, &err), CK_OK, "%s",
                 err.msg);
    q = ck_plan_dup(p);
    cr_assert_not_null(q);
    cr_assert_eq(q->n, p->n);
    cr_assert_eq(q->nout, 2);
    cr_assert_eq(memcmp(q->node, p->node, p->n * sizeof p->node[0]), 0);
    cr_assert_eq(memcmp(q->out, p->out, p->nout * sizeof p->out[0]), 0);
    cr_assert_eq(memcmp(q->order, p->order, sizeof p->order), 0);
    cr_assert_eq(q->nprint, p->nprint);
    cr_assert_str_eq(q->backend, p->backend);
    cr_assert_eq(q->text, p->text, "the text stays p's");
    /* as in a built plan, the slots not in use are zero */
    cr_assert(all_zero(&q->node[q->n], sizeof q->node[0]));
    cr_assert(all_zero(&q->out[q->nout], sizeof q->out[0]));
    free(q);
    ck_plan_free(p);
}

/* Sanitizers write shadow memory for every allocation: resident bytes
 * then measure them, not the copy. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

Test(plan, a_copy_makes_resident_only_the_parts_in_use)
{
    ck_plan *p = NULL, *q;
    ck_err err = {0};
    long before;

#ifdef SANITIZED
    cr_skip_test("resident bytes are the sanitizer's shadow here");
#endif
    cr_assert_eq(ck_plan_parse("p.json", doc, 0, 0, &p, &err), CK_OK, "%s",
                 err.msg);
    before = resident();
    q = ck_plan_dup(p);
    cr_assert_not_null(q);
    /* A whole-struct copy costs sizeof *p (4.3 MB) in the copy, and as
     * much again in p where reading untouched pages faults them in. */
    cr_assert_lt(resident() - before, 512L << 10,
                 "a copy of %d nodes made %ld KiB resident (a plan: %zu KiB)",
                 p->n, (resident() - before) >> 10, sizeof *p >> 10);
    free(q);
    ck_plan_free(p);
}
