/*
 * pipelines/stream.h - write a new array chunk by chunk on all cores.
 * The producer fills each output chunk (reading whatever it needs); the
 * engine writes it, or, in a job with no dst, only walks a grid (a verify
 * or a reduction consumes chunks in its producer).  The engine owns threads,
 * the per-worker arenas charged to the --memory budget, work distribution and
 * progress.  Every chunk is produced and written by one worker, so the output
 * does not depend on --threads.
 */
#ifndef CK_STREAM_H
#define CK_STREAM_H

#include <stddef.h>

#include "base/ck_grid.h"
#include "base/ck_mem.h"
#include "base/ck_progress.h"
#include "io/codec.h"
#include "io/journal.h"
#include "io/store.h"

/* Fills buf, one full chunk of the output (its chunk shape and dtype, C
 * order), for chunk c.  Parts of an edge chunk past the array end must be
 * set too (to the fill value) so output bytes are deterministic.  scratch
 * holds the producer's declared scratch bytes; it is reset per chunk. */
typedef ck_code (*ck_produce_fn)(void *ctx, const ck_chunk *c, void *buf,
                                 ck_arena *scratch, ck_err *err);

typedef struct ck_stream_job {
    ck_array *dst; /* the array written; NULL for a job that only reads */
    /* A read-only job walks this grid with buffers of buf_bytes instead;
     * under MPI every rank walks all of it, unless 'divide' is set: then
     * each rank takes a contiguous range of its chunks (the caller
     * combines what the ranks found). */
    const ck_grid *grid;
    size_t buf_bytes;
    int divide;
    ck_produce_fn produce;
    void *ctx;
    size_t scratch; /* arena bytes one produce call needs */
    ck_budget *budget;
    int threads; /* 0: all cores */
    ck_progress *progress;
    int chunks_opt; /* the command takes --chunks (copy, gen): a worker
                       that does not fit says to make them smaller */
    /* The order chunks are handed out in: C order, or with 'reorder' the
     * axes of order[] from outermost to innermost (a rechunk walks the
     * axis along which output chunks share source chunks innermost, so
     * that a cache of a few of them serves; see pipelines/copy.c). */
    int reorder;
    int order[CK_MAX_DIMS];
} ck_stream_job;

/* The threads the job will run on and the arena bytes of each, given what
 * is left of its budget now (a caller can size other buffers from the
 * rest before running it). */
void ck_stream_plan(const ck_stream_job *j, int *threads, size_t *worker_bytes);

/* CK_ENOMEM naming the need when one worker of the job does not fit in
 * what is left of its budget (a caller can ask before other work). */
ck_code ck_stream_fits(const ck_stream_job *j, ck_err *err);

/* Runs the job.  CK_ENOMEM before any work when one worker does not fit in
 * what is left of the budget (ck_stream_fits). */
ck_code ck_stream_run(const ck_stream_job *j, ck_err *err);

/* Folds what of a compression spec decides an output's bytes (its codec,
 * level, shuffle, filters and their parameters; never padding) into a
 * journal key's command hash h (see io/journal.h). */
uint64_t ck_stream_hash_codec(uint64_t h, const ck_codec_spec *c);

/* Removes the temporary outputs of a run being killed (for cli/'s signal
 * handler; see ck_store_abandon_all). */
void ck_stream_abandon(void);

/* Bytes charged up front for the process itself (code, libraries, HDF5's
 * metadata caches, stacks): --memory bounds the whole process, not only
 * chunk buffers.  ck_base_overhead() is what every command charges: this,
 * and under MPI what MPI took when the run started (ck_comm_start_bytes),
 * rounded up to whole MiB. */
#define CK_BASE_OVERHEAD ((int64_t)24 << 20)
int64_t ck_base_overhead(void);

#endif
