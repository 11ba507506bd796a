/*
 * base/ck_thread.c - a fork/join helper on POSIX threads.
 */
#include "base/ck_thread.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/ck_comm.h"

struct ck_par {
    ck_par_fn fn;
    void *ctx;
    int stop;
    pthread_mutex_t lock;
    ck_err first;
};

typedef struct worker {
    ck_par *par;
    int id;
} worker;

static void *trampoline(void *arg)
{
    worker *w = arg;
    ck_par *p = w->par;
    ck_err err = {0};

    if (p->fn(p->ctx, w->id, p, &err) != CK_OK || err.code != CK_OK) {
        pthread_mutex_lock(&p->lock);
        if (p->first.code == CK_OK)
            p->first = err;
        pthread_mutex_unlock(&p->lock);
        __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* 0 running, 1 interrupted, 2 finished: atomic, lock-free, so safe in
 * a signal handler */
static int run_state;

int ck_interrupt(void)
{
    int want = 0;

    __atomic_compare_exchange_n(&run_state, &want, 1, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return __atomic_load_n(&run_state, __ATOMIC_ACQUIRE) == 1;
}

int ck_interrupted(void)
{
    return __atomic_load_n(&run_state, __ATOMIC_ACQUIRE) == 1;
}

int ck_finish(void)
{
    int want = 0;

    __atomic_compare_exchange_n(&run_state, &want, 2, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return __atomic_load_n(&run_state, __ATOMIC_ACQUIRE) == 2;
}

int ck_par_stopped(const ck_par *par)
{
    /* another MPI rank's failure stops this job too (ck_comm_stopping:
     * the main thread, worker 0, asks MPI now and then) */
    return __atomic_load_n(&par->stop, __ATOMIC_ACQUIRE) || ck_interrupted() ||
           ck_comm_stopping();
}

ck_code ck_par_run(int nthreads, ck_par_fn fn, void *ctx, ck_err *err)
{
    ck_par p;
    pthread_t tid[256];
    worker w[256];
    int started = 0;

    memset(&p, 0, sizeof p);
    p.fn = fn;
    p.ctx = ctx;
    pthread_mutex_init(&p.lock, NULL);
    if (nthreads < 1)
        nthreads = 1;
    if (nthreads > 256)
        nthreads = 256;
    for (int i = 1; i < nthreads; i++) {
        w[i].par = &p;
        w[i].id = i;
        if (pthread_create(&tid[i], NULL, trampoline, &w[i]) != 0)
            break; /* run with the threads we got */
        started = i;
    }
    w[0].par = &p;
    w[0].id = 0;
    trampoline(&w[0]);
    for (int i = 1; i <= started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&p.lock);
    if (p.first.code != CK_OK) {
        if (err && err->code == CK_OK)
            *err = p.first;
        return p.first.code;
    }
    /* workers return CK_OK when stopped: the job is not done */
    if (ck_interrupted())
        return ck_err_set(err, CK_ESTOPPED, "interrupted");
    if (ck_comm_stopping())
        return ck_err_set(err, CK_ESTOPPED, "stopped: another rank failed");
    return CK_OK;
}

int ck_ncpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
