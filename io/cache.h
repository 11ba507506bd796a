/*
 * io/cache.h - decoded chunks of one array, shared by worker threads.
 * Rechunking and region reads touch a source chunk once for every output
 * chunk it overlaps; the cache keeps recently decoded chunks so each is
 * decoded about once while its neighbours are being produced.  Its memory
 * is a fixed number of chunk slots, charged to the --memory budget up
 * front.  A miss with every slot in use decodes into the caller's buffer:
 * the cache never waits and never grows.
 */
#ifndef CK_CACHE_H
#define CK_CACHE_H

#include "base/ck_err.h"
#include "base/ck_mem.h"
#include "io/store.h"

typedef struct ck_chunk_cache ck_chunk_cache;

/* Bytes one slot of a's cache costs: a chunk and its bookkeeping. */
size_t ck_chunk_cache_slot_bytes(ck_array *a);

/* A cache of nslots decoded chunks of a (1 <= nslots <= 2^28), its memory
 * (nslots times ck_chunk_cache_slot_bytes) charged to budget (NULL:
 * uncharged). */
ck_code ck_chunk_cache_new(ck_array *a, int nslots, ck_budget *budget,
                           ck_chunk_cache **out, ck_err *err);
/* Frees the slots and returns their charge; accepts NULL. */
void ck_chunk_cache_free(ck_chunk_cache *c);

/* Sets *data to chunk 'coords' decoded (as ck_array_read_chunk gives it),
 * from the cache or read now.  fallback is a caller buffer of one chunk
 * used when no slot is free.  *slot must be passed to ck_chunk_cache_put
 * when done with *data (it is -1 when fallback was used). */
ck_code ck_chunk_cache_get(ck_chunk_cache *c, const int64_t *coords,
                           void *fallback, ck_arena *scratch, const void **data,
                           int *slot, ck_err *err);
void ck_chunk_cache_put(ck_chunk_cache *c, int slot);

/* Pins, under one lock, those of the n chunks keys[] (linear chunk
 * indexes, ck_grid_index) that the cache holds decoded: slots[i] and
 * data[i] as ck_chunk_cache_get gives them, or -1 and NULL for a chunk to
 * get with ck_chunk_cache_get (also past a quarter of the cache's slots:
 * no more are pinned at once).  A region read over a row of small chunks
 * takes the lock once per batch rather than once per chunk. */
void ck_chunk_cache_get_ready(ck_chunk_cache *c, const int64_t *keys, int n,
                              int *slots, const void **data);

/* Hits and misses so far (for notes and tests). */
void ck_chunk_cache_stats(const ck_chunk_cache *c, int64_t *hits,
                          int64_t *misses);

#endif
