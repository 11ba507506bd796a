/*
 * io/cache.c - an LRU of decoded chunks behind one mutex.
 * A rechunk can hold thousands of slots (a row of (1000, 1) chunks for
 * outputs of (1, 1000)) and look each up a thousand times per output
 * chunk, so lookups go through a hash of chunk indexes and the victim is
 * the least recently used unpinned slot, at the tail of a list: both
 * O(1) (pinned slots, skipped at the tail, are few there: a region
 * read's batch pins a quarter of the slots at most, and moves them to
 * the head).  The decode, which is the expensive part, runs outside the
 * lock.  A slot being filled is pinned and marked loading: another thread
 * that wants the same chunk meanwhile decodes its own copy (into its own
 * buffer, taking no slot) rather than wait.
 */
#include "io/cache.h"

#include <pthread.h>
#include <stdlib.h>

enum { EMPTY, LOADING, READY };

typedef struct cslot {
    int64_t key; /* chunk index, -1 for none */
    int state;
    int pins;
    int hnext;      /* next slot in key's bucket, -1 */
    int prev, next; /* the LRU list: toward the head (newer), the tail */
} cslot;

struct ck_chunk_cache {
    ck_array *a;
    ck_budget *budget;
    size_t chunk_bytes;
    int64_t charged;
    int n;
    cslot *slots;
    int *bucket; /* nbucket heads, -1 */
    int nbucket; /* a power of two, >= 2 n */
    int head, tail;
    char *mem;
    int64_t hits, misses;
    pthread_mutex_t lock;
};

static int bucket_of(const ck_chunk_cache *c, int64_t key)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15u;
    return (int)(h >> 32) & (c->nbucket - 1);
}

static void unlink_lru(ck_chunk_cache *c, int i)
{
    cslot *s = &c->slots[i];
    if (s->prev >= 0)
        c->slots[s->prev].next = s->next;
    else
        c->head = s->next;
    if (s->next >= 0)
        c->slots[s->next].prev = s->prev;
    else
        c->tail = s->prev;
}

/* Slot i becomes the most recently used. */
static void to_head(ck_chunk_cache *c, int i)
{
    cslot *s = &c->slots[i];
    if (c->head == i)
        return;
    unlink_lru(c, i);
    s->prev = -1;
    s->next = c->head;
    c->slots[c->head].prev = i;
    c->head = i;
}

static void hash_remove(ck_chunk_cache *c, int i)
{
    int *at = &c->bucket[bucket_of(c, c->slots[i].key)];
    while (*at >= 0 && *at != i)
        at = &c->slots[*at].hnext;
    if (*at == i)
        *at = c->slots[i].hnext;
    c->slots[i].hnext = -1;
}

static void hash_insert(ck_chunk_cache *c, int i)
{
    int b = bucket_of(c, c->slots[i].key);
    c->slots[i].hnext = c->bucket[b];
    c->bucket[b] = i;
}

/* The slot holding chunk key (decoded or loading), or -1: a key is in one
 * slot at most. */
static int hash_find(const ck_chunk_cache *c, int64_t key)
{
    int i = c->bucket[bucket_of(c, key)];
    while (i >= 0 && c->slots[i].key != key)
        i = c->slots[i].hnext;
    return i;
}

size_t ck_chunk_cache_slot_bytes(ck_array *a)
{
    const ck_grid *g = ck_array_grid(a);
    /* a chunk, its slot and its buckets: under 4 a slot (the bucket
     * count is the power of two at or above twice the slots) */
    return (size_t)g->chunk_nelem * ck_dtype_size(ck_array_info_of(a)->dtype) +
           sizeof(cslot) + 4 * sizeof(int);
}

ck_code ck_chunk_cache_new(ck_array *a, int nslots, ck_budget *budget,
                           ck_chunk_cache **out, ck_err *err)
{
    const ck_grid *g = ck_array_grid(a);
    size_t cb =
        (size_t)g->chunk_nelem * ck_dtype_size(ck_array_info_of(a)->dtype);
    int64_t bytes = (int64_t)ck_chunk_cache_slot_bytes(a) * nslots;
    int nb = 2;
    ck_chunk_cache *c;

    if (nslots < 1 || nslots > (1 << 28))
        return ck_err_set(err, CK_EUSAGE, "chunk cache: %d slots", nslots);
    while (nb < 2 * nslots)
        nb *= 2;
    CK_TRY(ck_budget_charge(budget, bytes, "the chunk cache", err));
    c = calloc(1, sizeof *c);
    if (c) {
        c->slots = calloc((size_t)nslots, sizeof *c->slots);
        c->bucket = malloc((size_t)nb * sizeof *c->bucket);
        c->mem = malloc(cb * (size_t)nslots);
    }
    if (!c || !c->slots || !c->bucket || !c->mem) {
        if (c) {
            free(c->slots);
            free(c->bucket);
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
    c->nbucket = nb;
    for (int b = 0; b < nb; b++)
        c->bucket[b] = -1;
    for (int i = 0; i < nslots; i++) {
        c->slots[i].key = -1;
        c->slots[i].hnext = -1;
        c->slots[i].prev = i - 1;
        c->slots[i].next = i + 1 < nslots ? i + 1 : -1;
    }
    c->head = 0;
    c->tail = nslots - 1;
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
    free(c->bucket);
    free(c->slots);
    free(c);
}

ck_code ck_chunk_cache_get(ck_chunk_cache *c, const int64_t *coords,
                           void *fallback, ck_arena *scratch, const void **data,
                           int *slot_out, ck_err *err)
{
    int64_t key = ck_grid_index(ck_array_grid(c->a), coords);
    int victim, i;
    ck_code rc;

    pthread_mutex_lock(&c->lock);
    i = hash_find(c, key);
    if (i >= 0 && c->slots[i].state == READY) {
        __atomic_add_fetch(&c->slots[i].pins, 1, __ATOMIC_RELAXED);
        to_head(c, i);
        c->hits++;
        pthread_mutex_unlock(&c->lock);
        *data = c->mem + (size_t)i * c->chunk_bytes;
        *slot_out = i;
        return CK_OK;
    }
    c->misses++;
    /* the least recently used slot that no one holds; none where another
     * thread is loading this chunk: this one decodes its own copy into
     * fallback, rather than a second slot whose eviction of another chunk
     * would make two workers walking the same row of chunks miss on
     * every chunk of it */
    victim = -1;
    for (int v = c->tail; i < 0 && v >= 0; v = c->slots[v].prev)
        if (__atomic_load_n(&c->slots[v].pins, __ATOMIC_ACQUIRE) == 0) {
            victim = v;
            break;
        }
    if (victim >= 0) {
        cslot *s = &c->slots[victim];
        if (s->key >= 0)
            hash_remove(c, victim);
        s->key = key;
        s->state = LOADING;
        __atomic_store_n(&s->pins, 1, __ATOMIC_RELAXED);
        hash_insert(c, victim);
        to_head(c, victim);
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
        hash_remove(c, victim);
        c->slots[victim].state = EMPTY;
        c->slots[victim].key = -1;
        __atomic_store_n(&c->slots[victim].pins, 0, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&c->lock);
    if (rc != CK_OK)
        return rc;
    *data = c->mem + (size_t)victim * c->chunk_bytes;
    *slot_out = victim;
    return CK_OK;
}

void ck_chunk_cache_get_ready(ck_chunk_cache *c, const int64_t *keys, int n,
                              int *slots, const void **data)
{
    /* a batch pins a quarter of the slots at most, so that other threads
     * still find victims (and find them near the tail) */
    int room = c->n / 4;

    pthread_mutex_lock(&c->lock);
    for (int k = 0; k < n; k++) {
        int i = hash_find(c, keys[k]);
        if (i >= 0 && c->slots[i].state == READY && room-- > 0) {
            __atomic_add_fetch(&c->slots[i].pins, 1, __ATOMIC_RELAXED);
            to_head(c, i);
            c->hits++;
            slots[k] = i;
            data[k] = c->mem + (size_t)i * c->chunk_bytes;
        } else {
            slots[k] = -1;
            data[k] = NULL;
        }
    }
    pthread_mutex_unlock(&c->lock);
}

void ck_chunk_cache_put(ck_chunk_cache *c, int slot)
{
    if (!c || slot < 0)
        return;
    /* without the lock (a rechunk gets and puts a thousand chunks per
     * output chunk, and two workers queued on it for each put): pins
     * rise only under the lock, and a victim search that reads a pin
     * this put is about to drop merely passes that slot over */
    __atomic_sub_fetch(&c->slots[slot].pins, 1, __ATOMIC_RELEASE);
}

void ck_chunk_cache_stats(const ck_chunk_cache *c, int64_t *hits,
                          int64_t *misses)
{
    *hits = c ? c->hits : 0;
    *misses = c ? c->misses : 0;
}
