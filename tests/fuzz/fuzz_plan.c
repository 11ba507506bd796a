/*
 * tests/fuzz/fuzz_plan.c - pipeline JSON validation
 * (pipelines/plan.h): ck_plan_parse of the input as a pipeline file's
 * text, and ck_plan_build of the same document as a one-step command
 * builds it (CK_PLAN_ONESTEP).
 *
 * The plan parser opens the inputs a pipeline names to learn their
 * shapes, so small stores are made once in the fuzzer's temporary
 * directory: a.h5 (/x float32 6x4
 * zstd, /g/y int16, /s int16 with scale_factor and add_offset, /coef a
 * glm_fit model), b.zarr (v2, int32 5x3) and c.zarr (v3, sharded float64
 * 4x6); each pipeline is parsed with that directory as the working
 * directory.  The pipeline may name those, and anything else relative
 * to that directory; documents naming an absolute path or "..", or
 * using the kernel op (which compiles and loads code), are skipped.
 */
#include <cjson/cJSON.h>
#include <strings.h>

#include "io/store.h"
#include "pipelines/plan.h"
#include "tests/fuzz/fuzz.h"

/* The biggest pipeline tried: big enough for any real one. */
#define TEXT_MAX (64 << 10)

static void must(ck_code rc, const ck_err *err)
{
    if (rc != CK_OK) {
        fprintf(stderr, "fuzz_plan setup: %s\n", err->msg);
        exit(1);
    }
}

/* Writes array 'name' of spec into s, every chunk counting up from 'k'. */
static void put(ck_store *s, ck_array_spec *sp)
{
    ck_array *a = NULL;
    ck_arena ar = CK_ARENA_INIT;
    ck_err err = {0};
    ck_grid g;
    size_t es = ck_dtype_size(sp->dtype), cn = 1;
    double *v;
    void *buf;

    must(ck_array_create(s, sp, &a, &err), &err);
    must(ck_grid_init(&g, sp->ndim, sp->shape, sp->chunks, es, &err), &err);
    for (int d = 0; d < sp->ndim; d++)
        cn *= (size_t)sp->chunks[d];
    v = malloc(cn * sizeof *v);
    buf = malloc(cn * es);
    if (!v || !buf)
        abort();
    must(ck_arena_reserve(&ar, NULL, ck_array_scratch_bytes(a), "fuzz", &err),
         &err);
    for (int64_t k = 0; k < g.total_chunks; k++) {
        int64_t c[CK_MAX_DIMS], r = k;
        for (int d = sp->ndim - 1; d >= 0; d--) {
            c[d] = r % g.nchunks[d];
            r /= g.nchunks[d];
        }
        for (size_t i = 0; i < cn; i++)
            v[i] = (double)(k * 10 + (int64_t)i % 7) - 3;
        ck_dtype_convert(sp->dtype, buf, CK_F64, v, cn);
        must(ck_array_write_chunk(a, c, buf, &ar, &err), &err);
        ck_arena_reset(&ar);
    }
    ck_arena_release(&ar);
    free(v);
    free(buf);
    ck_array_close(a);
}

static void make_inputs(void)
{
    ck_store *s = NULL;
    ck_err err = {0};
    ck_attr v;

    must(ck_store_create("a.h5", CK_KIND_HDF5, 1, &s, &err), &err);
    put(s, &(ck_array_spec){.name = "/x",
                            .ndim = 2,
                            .shape = {6, 4},
                            .chunks = {3, 2},
                            .dtype = CK_F32,
                            .codec = {.id = CK_CODEC_ZSTD, .level = 1}});
    put(s, &(ck_array_spec){.name = "/g/y",
                            .ndim = 1,
                            .shape = {4},
                            .chunks = {4},
                            .dtype = CK_I16});
    put(s, &(ck_array_spec){.name = "/s",
                            .ndim = 2,
                            .shape = {6, 4},
                            .chunks = {6, 4},
                            .dtype = CK_I16,
                            .has_fill = 1,
                            .fill = {.i = -99}});
    v = (ck_attr){.kind = CK_ATTR_F64, .f64 = 0.5};
    must(ck_store_set_attr(s, "/s", "scale_factor", &v, &err), &err);
    v = (ck_attr){.kind = CK_ATTR_F64, .f64 = 10};
    must(ck_store_set_attr(s, "/s", "add_offset", &v, &err), &err);
    v = (ck_attr){.kind = CK_ATTR_I64, .i64 = -99};
    must(ck_store_set_attr(s, "/s", "_FillValue", &v, &err), &err);
    put(s, &(ck_array_spec){.name = "/coef",
                            .ndim = 1,
                            .shape = {4},
                            .chunks = {4},
                            .dtype = CK_F64});
    v = (ck_attr){.kind = CK_ATTR_STR};
    snprintf(v.str, sizeof v.str, "poisson");
    must(ck_store_set_attr(s, "/coef", "family", &v, &err), &err);
    v = (ck_attr){.kind = CK_ATTR_F64, .f64 = 0.25};
    must(ck_store_set_attr(s, "/coef", "intercept", &v, &err), &err);
    must(ck_store_commit(s, &err), &err);
    ck_store_close(s);

    must(ck_store_create("b.zarr", CK_KIND_ZARR, 1, &s, &err), &err);
    put(s, &(ck_array_spec){.name = "/",
                            .ndim = 2,
                            .shape = {5, 3},
                            .chunks = {2, 3},
                            .dtype = CK_I32,
                            .codec = {.id = CK_CODEC_ZLIB, .level = 1}});
    must(ck_store_commit(s, &err), &err);
    ck_store_close(s);

    must(ck_store_create("c.zarr", CK_KIND_ZARR, 1, &s, &err), &err);
    put(s, &(ck_array_spec){.name = "/v",
                            .ndim = 2,
                            .shape = {4, 6},
                            .chunks = {2, 3},
                            .shards = {4, 6},
                            .zarr_format = 3,
                            .dtype = CK_F64});
    must(ck_store_commit(s, &err), &err);
    ck_store_close(s);
}

/* The working directory libFuzzer was started in (its corpus and
 * artifact paths are relative to it): the plan is parsed in fz_dir. */
static int home = -1;

static void back(void)
{
    if (fchdir(home) != 0)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_quiet();
    fz_tmpdir("plan");
    if ((home = open(".", O_RDONLY | O_DIRECTORY)) < 0 || chdir(fz_dir) != 0) {
        perror(fz_dir);
        exit(1);
    }
    make_inputs();
    back();
    return 0;
}

/* 1 if the document stays inside the working directory and compiles or
 * loads no code. */
static int safe(const cJSON *j)
{
    for (; j; j = j->next) {
        const char *s = cJSON_IsString(j) ? j->valuestring : NULL;
        if (j->string && (!strcasecmp(j->string, "source") ||
                          !strcasecmp(j->string, "library")))
            return 0;
        if (s && (s[0] == '/' || s[0] == '~' || strstr(s, "..") ||
                  !strcasecmp(s, "kernel")))
            return 0;
        if (j->child && !safe(j->child))
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ck_plan *p = NULL;
    ck_err err = {0};
    cJSON *doc;
    char *t;

    if (size > TEXT_MAX)
        return 0;
    t = fz_str(data, size);
    doc = cJSON_ParseWithLength(t, size);
    if (chdir(fz_dir) != 0)
        abort();
    if (doc && safe(doc)) {
        if (fz_note("parse", ck_plan_parse("p.json", t, 0, 0, &p, &err),
                    &err) == CK_OK)
            ck_plan_free(p);
        p = NULL;
        if (ck_plan_build("reduce", doc, CK_PLAN_ONESTEP, 0, &p, &err) == CK_OK)
            ck_plan_free(p);
    } else if (!doc) {
        /* not JSON: what the parser says of it, and nothing opened */
        if (ck_plan_parse("p.json", t, 0, 0, &p, &err) == CK_OK)
            abort();
    }
    back();
    cJSON_Delete(doc);
    free(t);
    return 0;
}
