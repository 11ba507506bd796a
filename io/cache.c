/*
 * io/cache.c - a small LRU of decoded chunks behind one mutex.
 * Slots are few (hundreds at most), so lookups scan them; the decode, which
 * is the expensive part, runs outside the lock.  A slot being filled is
 * pinned and marked loading: another thread that wants the same chunk
 * meanwhile decodes its own copy rather than wait.
 */
#include "io/cache.h"

#include <pthread.h>
#include <stdlib.h>

enum { EMPTY, LOADING, READY };

typedef struct cslot {
    int64_t key; /* chunk index */
    int state;
    int pins;
    uint64_t used; /* LRU stamp */
} cslot;

struct ck_chunk_cache {
    ck_array *a;
    ck_budget *budget;
    size_t chunk_bytes;
    int64_t charged;
    int n;
    cslot *slots;
    char *mem;
    uint64_t clock;
    int64_t hits, misses;
    pthread_mutex_t lock;
};

ck_code ck_chunk_cache_new(ck_array *a, int nslots, ck_budget *budget,
                           ck_chunk_cache **out, ck_err *err)
{
    const ck_grid *g = ck_array_grid(a);
    size_t cb =
        (size_t)g->chunk_nelem * ck_dtype_size(ck_array_info_of(a)->dtype);
    int64_t bytes = (int64_t)cb * nslots;
    ck_chunk_cache *c;

    if (nslots < 1)
        return ck_err_set(err, CK_EUSAGE, "chunk cache: no slots");
    CK_TRY(ck_budget_charge(budget, bytes, "the chunk cache", err));
    c = calloc(1, sizeof *c);
    if (c) {
        c->slots = calloc((size_t)nslots, sizeof *c->slots);
        c->mem = malloc((size_t)bytes);
    }
    if (!c || !c->slots || !c->mem) {
        if (c) {
            free(c->slots);
            free(c->mem);
        }
        free(c);
        ck_budget_release(budget, bytes);
        return ck_err_set(err, CK_ENOMEM, "out of memory for the chunk cache");
    }
    c->a = a;
    c->budget = budget;
    c->chunk_bytes = cb;
    c->charged = bytes;
    c->n = nslots;
    for (int i = 0; i < nslots; i++)
        c->slots[i].key = -1;
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return CK_OK;
}

void ck_chunk_cache_free(ck_chunk_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    ck_budget_release(c->budget, c->charged);
    free(c->mem);
    free(c->slots);
    free(c);
}

ck_code ck_chunk_cache_get(ck_chunk_cache *c, const int64_t *coords,
                           void *fallback, ck_arena *scratch, const void **data,
                           int *slot_out, ck_err *err)
{
    int64_t key = ck_grid_index(ck_array_grid(c->a), coords);
    int victim = -1;
    ck_code rc;

    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n; i++) {
        cslot *s = &c->slots[i];
        if (s->key == key && s->state == READY) {
            s->pins++;
            s->used = ++c->clock;
            c->hits++;
            pthread_mutex_unlock(&c->lock);
            *data = c->mem + (size_t)i * c->chunk_bytes;
            *slot_out = i;
            return CK_OK;
        }
        if (s->pins == 0 && (victim < 0 || s->used < c->slots[victim].used))
            victim = i;
    }
    c->misses++;
    if (victim >= 0) {
        cslot *s = &c->slots[victim];
        s->key = key;
        s->state = LOADING;
        s->pins = 1;
        s->used = ++c->clock;
    }
    pthread_mutex_unlock(&c->lock);

    if (victim < 0) {
        *slot_out = -1;
        *data = fallback;
        return ck_array_read_chunk(c->a, coords, fallback, scratch, err);
    }
    rc = ck_array_read_chunk(
        c->a, coords, c->mem + (size_t)victim * c->chunk_bytes, scratch, err);
    pthread_mutex_lock(&c->lock);
    if (rc == CK_OK) {
        c->slots[victim].state = READY;
    } else {
        c->slots[victim].state = EMPTY;
        c->slots[victim].key = -1;
        c->slots[victim].pins = 0;
    }
    pthread_mutex_unlock(&c->lock);
    if (rc != CK_OK)
        return rc;
    *data = c->mem + (size_t)victim * c->chunk_bytes;
    *slot_out = victim;
    return CK_OK;
}

void ck_chunk_cache_put(ck_chunk_cache *c, int slot)
{
    if (!c || slot < 0)
        return;
    pthread_mutex_lock(&c->lock);
    c->slots[slot].pins--;
    pthread_mutex_unlock(&c->lock);
}

void ck_chunk_cache_stats(const ck_chunk_cache *c, int64_t *hits,
                          int64_t *misses)
{
    *hits = c ? c->hits : 0;
    *misses = c ? c->misses : 0;
}
