#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/cache.h"
#include "io/store.h"

TestSuite(cache, .description = "io/cache.h: decoded chunk cache");

static char dir[64];

/* A 4x2 int32 Zarr array in chunks of 1x2: chunk i holds {10i, 10i+1}. */
static ck_array *fixture(ck_store **s)
{
    ck_store *w;
    ck_array *a;
    ck_array_spec spec = {.name = "/",
                          .ndim = 2,
                          .shape = {4, 2},
                          .chunks = {1, 2},
                          .dtype = CK_I32};
    ck_arena ar = CK_ARENA_INIT;
    char path[128];

    snprintf(dir, sizeof dir, "/tmp/ck-cache-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/c.zarr", dir);
    cr_assert_eq(ck_store_create(path, CK_KIND_ZARR, 0, &w, NULL), CK_OK);
    cr_assert_eq(ck_array_create(w, &spec, &a, NULL), CK_OK);
    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    for (int64_t i = 0; i < 4; i++) {
        int32_t v[2] = {(int32_t)(10 * i), (int32_t)(10 * i + 1)};
        int64_t co[2] = {i, 0};
        ck_arena_reset(&ar);
        cr_assert_eq(ck_array_write_chunk(a, co, v, &ar, NULL), CK_OK);
    }
    ck_arena_release(&ar);
    ck_array_close(a);
    cr_assert_eq(ck_store_commit(w, NULL), CK_OK);
    ck_store_close(w);
    cr_assert_eq(ck_store_open(path, s, NULL), CK_OK);
    cr_assert_eq(ck_array_open(*s, "", &a, NULL), CK_OK);
    return a;
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(cache, second_get_is_a_hit_and_data_is_right)
{
    ck_store *s;
    ck_array *a = fixture(&s);
    ck_chunk_cache *c;
    ck_budget b = CK_BUDGET_INIT(1 << 20);
    ck_arena ar = CK_ARENA_INIT;
    int32_t fb[2];
    const void *data;
    int slot;
    int64_t co[2] = {2, 0}, hits, misses;

    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    cr_assert_eq(ck_chunk_cache_new(a, 2, &b, &c, NULL), CK_OK);
    /* two slots: a chunk of two int32 each, and their bookkeeping */
    cr_assert_geq(ck_chunk_cache_slot_bytes(a), 8);
    cr_assert_eq(b.used, 2 * (int64_t)ck_chunk_cache_slot_bytes(a));
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ck_chunk_cache_get(c, co, fb, &ar, &data, &slot, NULL),
                     CK_OK);
        cr_assert_geq(slot, 0);
        cr_assert_eq(((const int32_t *)data)[1], 21);
        ck_chunk_cache_put(c, slot);
    }
    ck_chunk_cache_stats(c, &hits, &misses);
    cr_assert_eq(hits, 1);
    cr_assert_eq(misses, 1);
    ck_chunk_cache_free(c);
    cr_assert_eq(b.used, 0);
    ck_arena_release(&ar);
    ck_array_close(a);
    ck_store_close(s);
    cleanup();
}

Test(cache, all_slots_pinned_falls_back_to_the_callers_buffer)
{
    ck_store *s;
    ck_array *a = fixture(&s);
    ck_chunk_cache *c;
    ck_arena ar = CK_ARENA_INIT;
    int32_t fb[2];
    const void *d0, *d1;
    int s0, s1;
    int64_t c0[2] = {0, 0}, c3[2] = {3, 0};

    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    cr_assert_eq(ck_chunk_cache_new(a, 1, NULL, &c, NULL), CK_OK);
    cr_assert_eq(ck_chunk_cache_get(c, c0, fb, &ar, &d0, &s0, NULL), CK_OK);
    cr_assert_eq(ck_chunk_cache_get(c, c3, fb, &ar, &d1, &s1, NULL), CK_OK);
    cr_assert_eq(s1, -1);
    cr_assert_eq(d1, (const void *)fb);
    cr_assert_eq(fb[0], 30);
    cr_assert_eq(((const int32_t *)d0)[0], 0); /* pinned: not evicted */
    ck_chunk_cache_put(c, s0);
    ck_chunk_cache_put(c, s1);
    ck_chunk_cache_free(c);
    ck_arena_release(&ar);
    ck_array_close(a);
    ck_store_close(s);
    cleanup();
}

Test(cache, budget_too_small_is_refused)
{
    ck_store *s;
    ck_array *a = fixture(&s);
    ck_chunk_cache *c = NULL;
    ck_budget b = CK_BUDGET_INIT(20);
    ck_err err = {0};

    cr_assert_eq(ck_chunk_cache_new(a, 4, &b, &c, &err), CK_ENOMEM);
    cr_assert_null(c);
    cr_assert(strstr(err.msg, "chunk cache"), "%s", err.msg);
    ck_array_close(a);
    ck_store_close(s);
    cleanup();
}

Test(cache, least_recently_used_is_evicted)
{
    ck_store *s;
    ck_array *a = fixture(&s);
    ck_chunk_cache *c;
    ck_arena ar = CK_ARENA_INIT;
    int32_t fb[2];
    const void *data;
    int slot;
    int64_t hits, misses;
    /* 0, 1, then 0 again: 1 is the least recently used, and 2 evicts it;
     * 0 is still held, 1 is read again */
    const int order[] = {0, 1, 0, 2, 0, 1, 3, 1};
    const int hit[] = {0, 0, 1, 0, 1, 0, 0, 1};

    cr_assert_eq(ck_arena_reserve(&ar, NULL, 1 << 16, "t", NULL), CK_OK);
    cr_assert_eq(ck_chunk_cache_new(a, 2, NULL, &c, NULL), CK_OK);
    for (int k = 0; k < 8; k++) {
        int64_t co[2] = {order[k], 0}, h0, h1;
        ck_chunk_cache_stats(c, &h0, &misses);
        cr_assert_eq(ck_chunk_cache_get(c, co, fb, &ar, &data, &slot, NULL),
                     CK_OK);
        ck_chunk_cache_stats(c, &h1, &misses);
        cr_assert_eq(h1 - h0, hit[k], "get %d (chunk %d)", k, order[k]);
        cr_assert_geq(slot, 0);
        cr_assert_eq(((const int32_t *)data)[0], 10 * order[k]);
        cr_assert_eq(((const int32_t *)data)[1], 10 * order[k] + 1);
        ck_chunk_cache_put(c, slot);
    }
    ck_chunk_cache_stats(c, &hits, &misses);
    cr_assert_eq(hits, 3);
    cr_assert_eq(misses, 5);
    ck_chunk_cache_free(c);
    ck_arena_release(&ar);
    ck_array_close(a);
    ck_store_close(s);
    cleanup();
}
