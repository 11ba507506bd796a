/*
 * base/ck_comm_mpi.c - the MPI module, libchunkctl-mpi.so (built when
 * CHUNKCTL_MPI finds MPI): the slots of base/ck_comm_impl.h's table over
 * MPI.  base/ck_comm.c loads it only under a launcher, and counts, checks
 * arguments and handles the one-rank cases itself.  All traffic goes
 * through a duplicate of MPI_COMM_WORLD whose errors return (translated
 * into ck_err here) instead of aborting; a peer that dies still ends the
 * job through the launcher.  Only the main thread calls MPI
 * (MPI_THREAD_FUNNELED).  ck_err_set and the rest of base/ come from the
 * executable, which exports them.
 */
#include "base/ck_comm.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm_impl.h"

/* Large buffers travel in pieces: MPI counts are int. */
#define PIECE ((size_t)1 << 30)

static int broken; /* a message failed: ck_comm_broken */
static int my_rank, nranks = 1;
static int host_rank, host_size = 1; /* among the ranks on this host */
static MPI_Comm comm = MPI_COMM_NULL;
/* Stop words (ck_comm_stopping) travel on a communicator of their own, so
 * that no tag of chunkctl's can match them; 'stops' are this rank's
 * unfinished sends of one, one request per other rank. */
static MPI_Comm stop_comm = MPI_COMM_NULL;
static MPI_Request *stops;
static int stop_word = 1;

/* CK_EIO naming the MPI call and MPI's own words for mrc. */
static ck_code fail(ck_err *err, int mrc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ck_code fail(ck_err *err, int mrc, const char *fmt, ...)
{
    char what[256], why[MPI_MAX_ERROR_STRING];
    int len = 0;
    va_list ap;

    broken = 1;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (MPI_Error_string(mrc, why, &len) != MPI_SUCCESS)
        snprintf(why, sizeof why, "error %d", mrc);
    return ck_err_set(err, CK_EIO, "mpi: rank %d: %s: %s", my_rank, what, why);
}

static ck_code mpi_init(int *argc, char ***argv, ck_err *err)
{
    int provided = 0, mrc;

    mrc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (mrc != MPI_SUCCESS)
        return ck_err_set(err, CK_EIO, "mpi: MPI_Init_thread failed (%d)", mrc);
    if (provided < MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        return ck_err_set(err, CK_ENOTSUP,
                          "mpi: the library offers thread level %d; chunkctl "
                          "needs MPI_THREAD_FUNNELED",
                          provided);
    }
    if ((mrc = MPI_Comm_dup(MPI_COMM_WORLD, &comm)) != MPI_SUCCESS ||
        (mrc = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)) !=
            MPI_SUCCESS ||
        (mrc = MPI_Comm_dup(comm, &stop_comm)) != MPI_SUCCESS ||
        (mrc = MPI_Comm_rank(comm, &my_rank)) != MPI_SUCCESS ||
        (mrc = MPI_Comm_size(comm, &nranks)) != MPI_SUCCESS) {
        ck_code rc = fail(err, mrc, "setting up the communicator");
        MPI_Finalize();
        my_rank = 0;
        nranks = 1;
        return rc;
    }
    /* the ranks that share this host's memory (and its devices); when
     * MPI cannot say, all of them, the cautious guess */
    {
        MPI_Comm h;
        host_rank = my_rank;
        host_size = nranks;
        if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, my_rank,
                                MPI_INFO_NULL, &h) == MPI_SUCCESS) {
            int r, n;
            if (MPI_Comm_rank(h, &r) == MPI_SUCCESS &&
                MPI_Comm_size(h, &n) == MPI_SUCCESS && r < n) {
                host_rank = r;
                host_size = n;
            }
            MPI_Comm_free(&h);
        }
    }
    return CK_OK;
}

static void mpi_finalize(void)
{
    free(stops);
    stops = NULL;
    MPI_Comm_free(&stop_comm);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    my_rank = 0;
    nranks = 1;
}

static int mpi_rank(void)
{
    return my_rank;
}

static int mpi_size(void)
{
    return nranks;
}

static void mpi_host(int *rank, int *size)
{
    *rank = host_rank;
    *size = host_size;
}

static int mpi_broken(void)
{
    return broken;
}

static ck_code mpi_barrier(ck_err *err)
{
    int mrc = MPI_Barrier(comm);

    return mrc == MPI_SUCCESS ? CK_OK : fail(err, mrc, "barrier");
}

/* buf + off, without arithmetic on a NULL buf (n == 0). */
static void *at(void *buf, size_t off)
{
    return off ? (char *)buf + off : buf;
}

static ck_code mpi_bcast(void *buf, size_t n, int root, ck_err *err)
{
    int mrc;

    for (size_t off = 0; off < n; off += PIECE) {
        size_t len = n - off < PIECE ? n - off : PIECE;
        if ((mrc = MPI_Bcast(at(buf, off), (int)len, MPI_BYTE, root, comm)) !=
            MPI_SUCCESS)
            return fail(err, mrc, "bcast of %zu bytes from rank %d", n, root);
    }
    return CK_OK;
}

static ck_code mpi_send(const void *buf, size_t n, int to, int tag, ck_err *err)
{
    size_t off = 0;
    int mrc;

    do { /* one empty message when n == 0, so that recv matches it */
        size_t len = n - off < PIECE ? n - off : PIECE;
        if ((mrc = MPI_Send(at((void *)buf, off), (int)len, MPI_BYTE, to, tag,
                            comm)) != MPI_SUCCESS)
            return fail(err, mrc, "send of %zu bytes to rank %d", n, to);
        off += len;
    } while (off < n);
    return CK_OK;
}

static ck_code mpi_recv(void *buf, size_t n, int from, int tag, ck_err *err)
{
    size_t off = 0;
    int mrc, got;
    MPI_Status st;

    do { /* a longer message fails as MPI_ERR_TRUNCATE */
        size_t len = n - off < PIECE ? n - off : PIECE;
        if ((mrc = MPI_Recv(at(buf, off), (int)len, MPI_BYTE, from, tag, comm,
                            &st)) != MPI_SUCCESS)
            return fail(err, mrc, "receive of %zu bytes from rank %d", n, from);
        if ((mrc = MPI_Get_count(&st, MPI_BYTE, &got)) != MPI_SUCCESS)
            return fail(err, mrc, "receive from rank %d", from);
        if ((size_t)got != len) {
            broken = 1; /* the two ranks are out of step */
            return ck_err_set(err, CK_EIO,
                              "mpi: rank %d: message from rank %d (tag %d): "
                              "%d bytes, expected %zu",
                              my_rank, from, tag, got, len);
        }
        off += len;
    } while (off < n);
    return CK_OK;
}

static ck_code mpi_allgather(const void *mine, size_t rec_bytes, void *all,
                             ck_err *err)
{
    int mrc = MPI_Allgather(mine, (int)rec_bytes, MPI_BYTE, all, (int)rec_bytes,
                            MPI_BYTE, comm);

    return mrc == MPI_SUCCESS
               ? CK_OK
               : fail(err, mrc, "allgather of %zu-byte records", rec_bytes);
}

static void mpi_stop_tell(void)
{
    int k = 0;

    if (stops || !(stops = malloc((size_t)nranks * sizeof *stops)))
        return; /* told already; or the others learn at the agreement */
    for (int r = 0; r < nranks; r++)
        if (r != my_rank && MPI_Isend(&stop_word, 1, MPI_INT, r, 0, stop_comm,
                                      &stops[k]) == MPI_SUCCESS)
            k++;
    while (k < nranks)
        stops[k++] = MPI_REQUEST_NULL;
}

static int mpi_stop_probe(void)
{
    int flag = 0;

    if (MPI_Iprobe(MPI_ANY_SOURCE, 0, stop_comm, &flag, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
        return 0;
    return flag;
}

/* After a failure is agreed: receives the stop words sent to this rank
 * (one from every rank that told, but this one) and completes this
 * rank's own sends, so nothing is in flight at MPI_Finalize. */
static int drain_stops(void)
{
    int mine = stops != NULL, all = 0, word;

    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS)
        return -1;
    for (int k = all - mine; k > 0; k--)
        if (MPI_Recv(&word, 1, MPI_INT, MPI_ANY_SOURCE, 0, stop_comm,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
    if (stops && MPI_Waitall(nranks, stops, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
        return -1;
    free(stops);
    stops = NULL;
    return 0;
}

static ck_code mpi_agree(ck_code rc, ck_err *err)
{
    struct {
        int code;
        char msg[sizeof err->msg];
    } first;
    int mine, low, mrc;

    /* The lowest rank with a failure of its own; else the lowest rank
     * that only stopped because another failed (nranks + rank); 2 * nranks
     * when none failed. */
    mine = rc == CK_OK         ? 2 * nranks
           : rc == CK_ESTOPPED ? nranks + my_rank
                               : my_rank;
    if ((mrc = MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, comm)) !=
        MPI_SUCCESS) {
        if (err)
            err->code = CK_OK; /* this failure replaces the rank's own */
        return fail(err, mrc, "agreeing on the outcome");
    }
    if (low >= 2 * nranks)
        return CK_OK;
    if (low >= nranks)
        low -= nranks;
    if (drain_stops() != 0) {
        if (err)
            err->code = CK_OK;
        return fail(err, MPI_ERR_OTHER, "collecting the stop words");
    }
    memset(&first, 0, sizeof first);
    if (my_rank == low) {
        first.code = (int)rc;
        if (err && err->code != CK_OK)
            memcpy(first.msg, err->msg, sizeof first.msg);
        first.msg[sizeof first.msg - 1] = '\0';
    }
    if ((mrc = MPI_Bcast(&first, (int)sizeof first, MPI_BYTE, low, comm)) !=
        MPI_SUCCESS) {
        if (err)
            err->code = CK_OK;
        return fail(err, mrc, "receiving rank %d's error", low);
    }
    if (err) {
        err->code = (ck_code)first.code;
        snprintf(err->msg, sizeof err->msg, "rank %d: %s", low,
                 first.msg[0] ? first.msg : ck_code_name((ck_code)first.code));
    }
    return (ck_code)first.code;
}

static void mpi_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
}

static const ck_comm_ops ops = {
    .abi = CK_COMM_ABI,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .rank = mpi_rank,
    .size = mpi_size,
    .host = mpi_host,
    .broken = mpi_broken,
    .barrier = mpi_barrier,
    .bcast = mpi_bcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .allgather = mpi_allgather,
    .agree = mpi_agree,
    .stop_tell = mpi_stop_tell,
    .stop_probe = mpi_stop_probe,
    .abort = mpi_abort,
};

/* The module's one export (base/ck_comm_impl.h). */
__attribute__((visibility("default"))) const ck_comm_ops *ck_comm_module(void);
const ck_comm_ops *ck_comm_module(void)
{
    return &ops;
}
