/*
 * base/ck_thread.h - run one function on N worker threads and join them.
 * Workers share the work through the context (an atomic chunk counter, say);
 * the first error stops the rest and is the one reported.
 */
#ifndef CK_THREAD_H
#define CK_THREAD_H

#include "base/ck_err.h"

typedef struct ck_par ck_par;

/* A worker: returns CK_OK or sets its own err.  It should poll
 * ck_par_stopped() between chunks and return CK_OK early when it is set. */
typedef ck_code (*ck_par_fn)(void *ctx, int worker, ck_par *par, ck_err *err);

/* Runs fn on nthreads threads (1: on the calling thread) and returns the
 * first error any of them reported, with its message in *err. */
ck_code ck_par_run(int nthreads, ck_par_fn fn, void *ctx, ck_err *err);

/* True once some worker has failed, another MPI rank has
 * (ck_comm_stopping), or the process was interrupted (ck_interrupt);
 * ck_par_run then fails with CK_ESTOPPED. */
int ck_par_stopped(const ck_par *par);

/* Asks every job to stop at its next chunk, as a failure would, so that
 * the run unwinds and removes its temporary outputs itself (a Ctrl-C:
 * cli/main.c).  Async-signal-safe. */
void ck_interrupt(void);
int ck_interrupted(void);

/* Online processors, at least 1. */
int ck_ncpus(void);

#endif
