/*
 * tests/base/mpi_check.c - base/ck_comm.h and base/ck_tree.h across real
 * ranks: run by ctest under mpirun -n 1..4 (label mpi), built only with
 * MPI.  One mode per run:
 *
 *   tree    ck_tree_finish gives every rank the one-process result bit for
 *           bit, for task counts from 0 to 1000 (fewer tasks than ranks
 *           included), balanced, skewed and gappy splits, small and 3 MB
 *           parts, and agrees on a failure of one rank
 *   agree   ck_comm_agree: a failure on rank 2 reaches every rank as
 *           "rank 2: ...", the lowest failing rank wins, messages arrive
 *           whole; a failure stops the other ranks' busy workers
 *           (ck_comm_stopping) and their CK_ESTOPPED loses to it, also
 *           when the failing rank first waits in ck_tree_finish
 *   comm    bcast, send/recv (empty, 3 MB), allgather, the byte counters
 *   kill    rank 1 kills itself (SIGKILL) while the others wait in MPI
 *           ("kill wait") or compute outside it ("kill busy"); they must
 *           not outlive it (tests/base/mpi_kill.sh times mpirun)
 *   alone   not under a launcher: rank 0 of 1, MPI untouched
 *
 * Prints "mpi_check MODE: ok" on rank 0 and exits 0; any failed check
 * prints "rank R: ..." and exits 1.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/ck_comm.h"
#include "base/ck_thread.h"
#include "base/ck_tree.h"

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "mpi_check: rank %d: ", ck_comm_rank());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    failures++;
}

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            fail(__VA_ARGS__);                                                 \
    } while (0)

/* ---- tree ---- */

/* A part: the sum of the tasks' values (order-sensitive), a hash of the
 * tree's shape (order- and shape-sensitive), the tasks covered, and an
 * optional payload of doubles added element by element. */
typedef struct part {
    double v;
    uint64_t shape;
    int64_t lo, hi;
} part;

typedef struct tree_ctx {
    size_t payload; /* doubles after the header */
    int bad;
} tree_ctx;

static void merge(void *left, const void *right, void *vctx)
{
    part *l = left;
    const part *r = right;
    tree_ctx *ctx = vctx;
    double *lp = (double *)(l + 1);
    const double *rp = (const double *)(r + 1);

    if (l->hi != r->lo)
        ctx->bad = 1;
    l->v = l->v + r->v;
    l->shape = (l->shape * 0x9E3779B97F4A7C15ull) ^ (r->shape + 0x632BE5ABull);
    l->shape ^= l->shape >> 29;
    l->hi = r->hi;
    for (size_t i = 0; i < ctx->payload; i++)
        lp[i] = lp[i] + rp[i];
}

static double value(int64_t task)
{
    /* Deterministic, full mantissas, magnitudes over 2^-30 .. 2^30. */
    uint64_t x = (uint64_t)task * 0x9E3779B97F4A7C15ull + 12345;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    double m = 0.5 + (double)(x >> 11) / 9007199254740992.0;
    return (x & 1 ? -m : m) * (double)((int64_t)1 << (x >> 58) % 31) /
           (double)((int64_t)1 << 15);
}

static void leaf(void *buf, int64_t task, size_t payload)
{
    part *p = buf;
    double *d = (double *)(p + 1);

    p->v = value(task);
    p->shape = (uint64_t)task + 1;
    p->lo = task;
    p->hi = task + 1;
    for (size_t i = 0; i < payload; i++)
        d[i] = value(task * 7919 + (int64_t)i);
}

/* How tasks are spread: 0 balanced (ck_comm_split), 1 all on the last
 * rank, 2 only odd ranks own tasks, 3 rank r owns a share growing with r. */
static void owned(int how, int64_t n, int rank, int size, int64_t *lo,
                  int64_t *hi)
{
    switch (how) {
    case 1:
        *lo = 0;
        *hi = rank == size - 1 ? n : 0;
        return;
    case 2:
        if (size == 1) {
            *lo = 0;
            *hi = n;
        } else if (rank % 2 == 0) {
            *lo = *hi = 0; /* an empty rank's range is never looked at */
        } else {
            ck_comm_split(n, rank / 2, size / 2, lo, hi);
        }
        return;
    case 3: {
        /* weights 1, 2, 3, ... */
        int64_t total = (int64_t)size * (size + 1) / 2,
                before = (int64_t)rank * (rank + 1) / 2;
        *lo = n * before / total;
        *hi = n * (before + rank + 1) / total;
        return;
    }
    default:
        ck_comm_split(n, rank, size, lo, hi);
    }
}

/* The one-process result: every task pushed into one tree. */
static int alone(int64_t n, size_t bytes, tree_ctx *ctx, void *out)
{
    ck_tree t;
    ck_err err = {0};
    ck_code rc = ck_tree_init(&t, n, bytes, merge, ctx, &err);

    for (int64_t k = 0; rc == CK_OK && k < n; k++) {
        leaf(ck_tree_slot(&t), k, ctx->payload);
        rc = ck_tree_push(&t, k, ck_tree_slot(&t), &err);
    }
    if (rc == CK_OK)
        rc = ck_tree_result(&t, out, &err);
    ck_tree_release(&t);
    if (rc != CK_OK)
        fail("one-process tree of %lld: %s", (long long)n, err.msg);
    return rc == CK_OK;
}

static void tree_case(int64_t n, int how, size_t payload)
{
    int rank = ck_comm_rank(), size = ck_comm_size();
    size_t bytes = sizeof(part) + payload * sizeof(double);
    unsigned char *want = calloc(1, bytes), *got = calloc(1, bytes),
                  *all = NULL;
    tree_ctx ctx = {payload, 0};
    ck_tree t;
    ck_err err = {0};
    int64_t lo, hi;
    ck_code rc;

    if (!want || !got)
        goto out;
    owned(how, n, rank, size, &lo, &hi);
    rc = ck_tree_init(&t, n, bytes, merge, &ctx, &err);
    for (int64_t k = lo; rc == CK_OK && k < hi; k++) {
        leaf(ck_tree_slot(&t), k, payload);
        rc = ck_tree_push(&t, k, ck_tree_slot(&t), &err);
    }
    rc = ck_tree_finish(&t, rc, got, &err);
    ck_tree_release(&t);
    CHECK(rc == CK_OK, "tree n=%lld how=%d: %s", (long long)n, how, err.msg);
    CHECK(!ctx.bad, "tree n=%lld how=%d: merged non-adjacent parts",
          (long long)n, how);
    if (rc != CK_OK || n == 0 || !alone(n, bytes, &ctx, want))
        goto out;
    CHECK(memcmp(got, want, bytes) == 0,
          "tree n=%lld how=%d payload=%zu: %a, one process %a", (long long)n,
          how, payload, ((part *)got)->v, ((part *)want)->v);
    /* and every rank holds the same bits */
    all = malloc((size_t)size * sizeof(part));
    if (all && ck_comm_allgather(got, sizeof(part), all, &err) == CK_OK)
        for (int r = 0; r < size; r++)
            CHECK(memcmp(all + (size_t)r * sizeof(part), got, sizeof(part)) ==
                      0,
                  "tree n=%lld: rank %d's result differs", (long long)n, r);
out:
    free(all);
    free(want);
    free(got);
}

static void tree_failure(void)
{
    int rank = ck_comm_rank(), size = ck_comm_size();
    int bad = size > 2 ? 2 : size - 1; /* a middle rank where there is one */
    tree_ctx ctx = {0, 0};
    ck_tree t;
    ck_err err = {0};
    part out = {0};
    int64_t lo, hi, n = 37;
    ck_code rc;
    char want[600];

    ck_comm_split(n, rank, size, &lo, &hi);
    rc = ck_tree_init(&t, n, sizeof(part), merge, &ctx, &err);
    for (int64_t k = lo; rc == CK_OK && k < hi; k++) {
        if (rank == bad && k == hi - 1) {
            rc = ck_err_set(&err, CK_ECORRUPT, "x.zarr: chunk %lld: bad crc",
                            (long long)k);
            break;
        }
        leaf(ck_tree_slot(&t), k, 0);
        rc = ck_tree_push(&t, k, ck_tree_slot(&t), &err);
    }
    rc = ck_tree_finish(&t, rc, &out, &err);
    ck_tree_release(&t);
    {
        int64_t blo, bhi;
        ck_comm_split(n, bad, size, &blo, &bhi);
        if (size > 1)
            snprintf(want, sizeof want, "rank %d: x.zarr: chunk %lld: bad crc",
                     bad, (long long)bhi - 1);
        else
            snprintf(want, sizeof want, "x.zarr: chunk %lld: bad crc",
                     (long long)bhi - 1);
    }
    CHECK(rc == CK_ECORRUPT, "tree failure: code %d (%s)", rc, err.msg);
    CHECK(strcmp(err.msg, want) == 0, "tree failure: '%s', expected '%s'",
          err.msg, want);
}

static void run_tree(void)
{
    static const int64_t ns[] = {0,  1,  2,  3,  4,  5,   7,   8,   9,
                                 13, 16, 31, 64, 70, 100, 257, 1000};

    for (int how = 0; how < 4; how++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            tree_case(ns[i], how, 0);
    /* parts of 3 MB: real transfers, not just eager messages */
    tree_case(5, 0, 3 << 17);
    tree_case(11, 3, 3 << 17);
    tree_failure();
}

/* ---- agree ---- */

/* A worker that computes until it is told to stop (20 s at most). */
static ck_code spin_until_stopped(void *ctx, int worker, ck_par *par,
                                  ck_err *err)
{
    const time_t *t0 = ctx;
    volatile double x = worker;

    (void)err;
    while (!ck_par_stopped(par) && time(NULL) - *t0 < 20)
        for (int i = 0; i < 100000; i++)
            x = x * 0.5 + 1.0;
    return CK_OK;
}

static void run_agree(void)
{
    int rank = ck_comm_rank(), size = ck_comm_size();
    ck_err err = {0};
    ck_code rc;
    char want[600], longmsg[512];

    /* nobody fails */
    rc = ck_comm_agree(CK_OK, &err);
    CHECK(rc == CK_OK && err.code == CK_OK, "agree, all ok: %d", rc);

    /* rank 2 fails (or the last rank, with fewer) */
    int bad = size > 2 ? 2 : size - 1;
    if (rank == bad)
        ck_err_set(&err, CK_ECORRUPT, "in.h5:/x: chunk 4.0: crc mismatch");
    rc = ck_comm_agree(rank == bad ? CK_ECORRUPT : CK_OK, &err);
    if (size > 1)
        snprintf(want, sizeof want,
                 "rank %d: in.h5:/x: chunk 4.0: crc mismatch", bad);
    else
        snprintf(want, sizeof want, "in.h5:/x: chunk 4.0: crc mismatch");
    CHECK(rc == CK_ECORRUPT && err.code == CK_ECORRUPT,
          "agree, rank %d failed: code %d", bad, rc);
    CHECK(strcmp(err.msg, want) == 0, "agree: '%s', expected '%s'", err.msg,
          want);

    /* an agreed failure is final: the next agreement returns it at once,
     * though every rank now says it is fine (and one rank may not even
     * call it: nothing is sent) */
    if (size > 1) {
        ck_err again = {0};
        if (rank != 0)
            rc = ck_comm_agree(CK_OK, &again);
        CHECK(rank == 0 || (rc == CK_ECORRUPT && strcmp(again.msg, want) == 0),
              "agree after a failure: code %d '%s'", rc, again.msg);
        ck_comm_agree_forget();
        CHECK(ck_comm_agree(CK_OK, &again) == CK_OK,
              "agree after ck_comm_agree_forget: not ok");
    }

    /* several fail: the lowest wins, whatever the others said */
    memset(&err, 0, sizeof err);
    if (rank >= size / 2)
        ck_err_set(&err, rank == size / 2 ? CK_EIO : CK_ENOMEM,
                   "rank-specific failure %d", rank);
    rc = ck_comm_agree(rank >= size / 2 ? err.code : CK_OK, &err);
    CHECK(rc == CK_EIO, "agree, lowest failing rank: code %d", rc);
    ck_comm_agree_forget();
    if (size > 1)
        snprintf(want, sizeof want, "rank %d: rank-specific failure %d",
                 size / 2, size / 2);
    else
        snprintf(want, sizeof want, "rank-specific failure 0");
    CHECK(strcmp(err.msg, want) == 0, "agree: '%s', expected '%s'", err.msg,
          want);

    /* a message of the full 511 characters arrives whole (less what the
     * prefix pushes past 512) */
    memset(&err, 0, sizeof err);
    for (size_t i = 0; i < sizeof longmsg - 1; i++)
        longmsg[i] = (char)('a' + i % 26);
    longmsg[sizeof longmsg - 1] = '\0';
    if (rank == size - 1)
        ck_err_set(&err, CK_EFORMAT, "%s", longmsg);
    rc = ck_comm_agree(rank == size - 1 ? CK_EFORMAT : CK_OK, &err);
    if (size > 1)
        snprintf(want, sizeof err.msg, "rank %d: %s", size - 1, longmsg);
    else
        snprintf(want, sizeof err.msg, "%s", longmsg);
    CHECK(rc == CK_EFORMAT && strcmp(err.msg, want) == 0,
          "agree, long message: code %d, %zu bytes", rc, strlen(err.msg));
    ck_comm_agree_forget();

    /* one rank fails while the others are busy: they learn of it at once
     * (ck_comm_stopping, through ck_par_stopped), their jobs end in
     * CK_ESTOPPED, and the agreement names the real failure though lower
     * ranks only stopped */
    if (size > 1) {
        memset(&err, 0, sizeof err);
        if (rank == size - 1) {
            rc = ck_err_set(&err, CK_ECORRUPT, "chunk 9.0: crc mismatch");
        } else {
            time_t t0 = time(NULL);
            rc = ck_par_run(2, spin_until_stopped, &t0, &err);
            CHECK(rc == CK_ESTOPPED && strstr(err.msg, "another rank failed"),
                  "a busy rank was not stopped: code %d '%s' after %ld s", rc,
                  err.msg, (long)(time(NULL) - t0));
        }
        rc = ck_comm_agree(rc, &err);
        snprintf(want, sizeof want, "rank %d: chunk 9.0: crc mismatch",
                 size - 1);
        CHECK(rc == CK_ECORRUPT && strcmp(err.msg, want) == 0,
              "agree after a stop: code %d '%s', expected '%s'", rc, err.msg,
              want);
        ck_comm_agree_forget();
        CHECK(!ck_comm_stopping(), "still stopping after the agreement");
        /* and the stop words were all taken: the next round is clean */
        CHECK(ck_comm_agree(CK_OK, &err) == CK_OK, "agree after a stop");
    }

    /* rank 0 fails and waits in ck_tree_finish for rank 1's stack while
     * rank 1 is busy: finish tells the others before it waits, so rank 1
     * stops at once instead of finishing its work first */
    if (size > 1) {
        ck_tree t;
        tree_ctx tc = {0, 0};
        part out = {0};
        memset(&err, 0, sizeof err);
        rc = ck_tree_init(&t, size, sizeof(part), merge, &tc, &err);
        if (rank == 0) {
            rc = ck_err_set(&err, CK_ECORRUPT, "chunk 0.0: bad");
        } else if (rc == CK_OK) {
            time_t t0 = time(NULL);
            rc = ck_par_run(1, spin_until_stopped, &t0, &err);
            CHECK(rc == CK_ESTOPPED,
                  "under a failed parent: code %d after %ld s", rc,
                  (long)(time(NULL) - t0));
        }
        rc = ck_tree_finish(&t, rc, &out, &err);
        ck_tree_release(&t);
        CHECK(rc == CK_ECORRUPT &&
                  strcmp(err.msg, "rank 0: chunk 0.0: bad") == 0,
              "tree after a stop: code %d '%s'", rc, err.msg);
        ck_comm_agree_forget();
    }

    /* a failure with no message names the code */
    memset(&err, 0, sizeof err);
    rc = ck_comm_agree(rank == 0 ? CK_ENOMEM : CK_OK, &err);
    CHECK(rc == CK_ENOMEM && (size == 1 || strstr(err.msg, "rank 0: nomem")),
          "agree, no message: %s", err.msg);
}

/* ---- comm ---- */

static void run_comm(void)
{
    int rank = ck_comm_rank(), size = ck_comm_size();
    size_t big = (size_t)3 << 20;
    unsigned char *buf = malloc(big);
    ck_err err = {0};
    ck_comm_stats st;
    int64_t x = rank == size - 1 ? 4242 : -1, *all;

    if (!buf) {
        fail("no memory");
        return;
    }
    ck_comm_stats_reset();
    CHECK(ck_comm_bcast(&x, sizeof x, size - 1, &err) == CK_OK && x == 4242,
          "bcast: %lld (%s)", (long long)x, err.msg);
    all = calloc((size_t)size, sizeof *all);
    x = 100 + rank;
    CHECK(all && ck_comm_allgather(&x, sizeof x, all, &err) == CK_OK,
          "allgather: %s", err.msg);
    for (int r = 0; all && r < size; r++)
        CHECK(all[r] == 100 + r, "allgather: [%d] = %lld", r,
              (long long)all[r]);
    free(all);
    /* a ring: big message to the right, empty one to the left */
    if (size > 1) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        for (size_t i = 0; i < big; i++)
            buf[i] = (unsigned char)(i * 31 + (size_t)rank);
        /* even ranks send first, so that blocking sends cannot deadlock */
        for (int phase = 0; phase < 2; phase++) {
            if ((rank % 2 == 0) == (phase == 0)) {
                CHECK(ck_comm_send(buf, big, right, 7, &err) == CK_OK,
                      "send: %s", err.msg);
                CHECK(ck_comm_send(NULL, 0, left, 8, &err) == CK_OK,
                      "send empty: %s", err.msg);
            } else {
                unsigned char *in = malloc(big);
                CHECK(in && ck_comm_recv(in, big, left, 7, &err) == CK_OK,
                      "recv: %s", err.msg);
                for (size_t i = 0; in && i < big; i += 4097)
                    CHECK(in[i] == (unsigned char)(i * 31 + (size_t)left),
                          "recv: byte %zu", i);
                free(in);
                CHECK(ck_comm_recv(NULL, 0, right, 8, &err) == CK_OK,
                      "recv empty: %s", err.msg);
            }
        }
    }
    CHECK(ck_comm_barrier(&err) == CK_OK, "barrier: %s", err.msg);
    ck_comm_stats_get(&st);
    CHECK(st.op[CK_COMM_BARRIER].calls == 1, "stats: barrier calls %llu",
          (unsigned long long)st.op[CK_COMM_BARRIER].calls);
    /* with one rank nothing travels */
    CHECK(st.op[CK_COMM_BCAST].sent ==
                  (size > 1 && rank == size - 1 ? sizeof x : 0) &&
              st.op[CK_COMM_BCAST].recvd ==
                  (size > 1 && rank != size - 1 ? sizeof x : 0),
          "stats: bcast %llu/%llu",
          (unsigned long long)st.op[CK_COMM_BCAST].sent,
          (unsigned long long)st.op[CK_COMM_BCAST].recvd);
    CHECK(st.op[CK_COMM_ALLGATHER].recvd == (uint64_t)(size - 1) * sizeof x,
          "stats: allgather received %llu",
          (unsigned long long)st.op[CK_COMM_ALLGATHER].recvd);
    CHECK(st.op[CK_COMM_P2P].sent == (size > 1 ? big : 0) &&
              st.op[CK_COMM_P2P].recvd == (size > 1 ? big : 0),
          "stats: p2p %llu/%llu", (unsigned long long)st.op[CK_COMM_P2P].sent,
          (unsigned long long)st.op[CK_COMM_P2P].recvd);
    free(buf);
}

/* ---- kill ---- */

static void run_kill(const char *how)
{
    int rank = ck_comm_rank();
    ck_err err = {0};
    char b = 0;

    ck_comm_barrier(&err);
    if (rank == 1) {
        struct timespec ts;
        usleep(200000);
        clock_gettime(CLOCK_REALTIME, &ts);
        /* tests/base/mpi_kill.sh measures from here */
        printf("mpi_check: rank 1: SIGKILL at %lld%09ld\n",
               (long long)ts.tv_sec, ts.tv_nsec);
        fflush(stdout);
        raise(SIGKILL);
    }
    if (strcmp(how, "busy") == 0) {
        /* computing, not in MPI: only the launcher can stop us */
        for (int i = 0; i < 600; i++)
            usleep(100000);
    } else if (rank == 0) {
        /* waiting for a message from the dead rank */
        ck_comm_recv(&b, 1, 1, 9, &err);
    } else {
        ck_comm_barrier(&err);
    }
    fail("still running 60 s after rank 1 died (%s)", err.msg);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    ck_err err = {0};

    if (ck_comm_init(&argc, &argv, &err) != CK_OK) {
        fprintf(stderr, "mpi_check: %s\n", err.msg);
        return 1;
    }
    mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "tree") == 0)
        run_tree();
    else if (strcmp(mode, "agree") == 0)
        run_agree();
    else if (strcmp(mode, "comm") == 0)
        run_comm();
    else if (strcmp(mode, "kill") == 0)
        run_kill(argc > 2 ? argv[2] : "wait");
    else if (strcmp(mode, "alone") == 0) {
        CHECK(!ck_comm_active() && ck_comm_rank() == 0 && ck_comm_size() == 1,
              "alone: active %d, rank %d of %d", ck_comm_active(),
              ck_comm_rank(), ck_comm_size());
    } else {
        fprintf(stderr, "usage: mpi_check tree|agree|comm|kill [busy]|alone\n");
        ck_comm_finalize();
        return 2;
    }
    if (ck_comm_rank() == 0 && failures == 0)
        printf("mpi_check %s: ok (%d rank%s)\n", mode, ck_comm_size(),
               ck_comm_size() > 1 ? "s" : "");
    ck_comm_finalize();
    return failures ? 1 : 0;
}
