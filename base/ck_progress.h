/*
 * base/ck_progress.h - how long-running work reports progress.
 * Work below cli/ calls ck_progress_add() as tasks finish; cli/ supplies the
 * callback that draws a bar (or nothing).  The callback may be called from
 * several threads at once and must be cheap.
 */
#ifndef CK_PROGRESS_H
#define CK_PROGRESS_H

#include <stdint.h>

typedef struct ck_progress {
    /* total: tasks in the job; done: finished so far; bytes: data bytes
     * processed so far. */
    void (*update)(void *ctx, int64_t done, int64_t total, int64_t bytes);
    void *ctx;
    int64_t total;
    int64_t done;  /* updated atomically */
    int64_t bytes; /* updated atomically */
} ck_progress;

/* Records one more finished task of 'bytes' bytes; p may be NULL. */
static inline void ck_progress_add(ck_progress *p, int64_t bytes)
{
    if (!p)
        return;
    int64_t d = __atomic_add_fetch(&p->done, 1, __ATOMIC_RELAXED);
    int64_t b = __atomic_add_fetch(&p->bytes, bytes, __ATOMIC_RELAXED);
    if (p->update)
        p->update(p->ctx, d, p->total, b);
}

#endif
