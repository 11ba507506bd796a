/*
 * tests/pipelines/fuse_fixture.h - plans over small Zarr arrays whose
 * metadata is all a plan reads (missing chunks are the fill value), for
 * the suites that test fusion: test_fuse.c and tests/cuda/test_fuse_gen.c.
 */
#ifndef CK_TEST_FUSE_FIXTURE_H
#define CK_TEST_FUSE_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pipelines/fuse.h"
#include "pipelines/plan.h"

static char fx_dir[64];

/* name.zarr in fx_dir: dtype ("<f4"), shape and chunks as JSON lists. */
static inline void fx_array(const char *name, const char *dtype,
                            const char *shape, const char *chunks)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.zarr", fx_dir, name);
    cr_assert_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/%s.zarr/.zarray", fx_dir, name);
    cr_assert_not_null(f = fopen(path, "w"));
    fprintf(f,
            "{\"zarr_format\": 2, \"shape\": %s, \"chunks\": %s, "
            "\"dtype\": \"%s\", \"compressor\": null, \"fill_value\": 0, "
            "\"order\": \"C\", \"filters\": null}",
            shape, chunks, dtype);
    fclose(f);
}

/* x: float32 100 x 60 in rows of 10; w: float64 (60,); i: int32 like x. */
static inline void fx_setup(void)
{
    snprintf(fx_dir, sizeof fx_dir, "/tmp/ck-fuse-XXXXXX");
    cr_assert_not_null(mkdtemp(fx_dir));
    fx_array("x", "<f4", "[100, 60]", "[10, 60]");
    fx_array("w", "<f8", "[60]", "[60]");
    fx_array("i", "<i4", "[100, 60]", "[10, 60]");
}

static inline void fx_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx_dir);
    cr_assert_eq(system(cmd), 0);
}

/* The plan of steps (a JSON list) over x, w and i, writing 'out'. */
static inline ck_plan *fx_plan(const char *steps, const char *out)
{
    size_t n = strlen(steps) + strlen(out) + 1024;
    char *doc = malloc(n);
    ck_plan *p = NULL;
    ck_err err = {0};

    cr_assert_not_null(doc);
    snprintf(doc, n,
             "{\"inputs\": {\"x\": \"%s/x.zarr\", \"w\": \"%s/w.zarr\", "
             "\"i\": \"%s/i.zarr\"}, \"steps\": %s, \"outputs\": {\"%s\": "
             "\"%s/out.zarr\"}}",
             fx_dir, fx_dir, fx_dir, steps, out, fx_dir);
    cr_assert_eq(ck_plan_parse("p.json", doc, 0, 0, &p, &err), CK_OK, "%s",
                 err.msg);
    free(doc);
    return p;
}

/* The index of the step named name. */
static inline int fx_node(const ck_plan *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->node[i].name, name))
            return i;
    cr_assert_fail("no step %s", name);
    return -1;
}

#endif
