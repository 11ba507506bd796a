/*
 * base/ck_tree.c - the canonical reduction tree (base/ck_tree.h): a stack
 * of completed nodes merged as soon as two siblings meet, and the exchange
 * of stacks between ranks.  Which node is whose sibling is arithmetic on
 * task numbers alone, so the merges are the same whatever the split.
 */
#include "base/ck_tree.h"

#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "base/ck_mem.h"

static int floor_log2(int64_t x)
{
    return 63 - __builtin_clzll((unsigned long long)x);
}

/* The largest power of two < x, for x >= 2. */
static int64_t split_size(int64_t x)
{
    return (int64_t)1 << floor_log2(x - 1);
}

/* Whether [lo, hi) is a node of the canonical tree over [0, n).  The nodes
 * are the aligned power-of-two blocks inside [0, n) (every left child is
 * one, and they split in halves), and the right spine [s, n): s = 0, or the
 * tasks left after s, n - s, fewer than s's lowest set bit (s is then a
 * sum of the largest powers of two of n's binary expansion). */
static int is_node(int64_t n, int64_t lo, int64_t hi)
{
    int64_t size = hi - lo;

    if (lo < 0 || size <= 0 || hi > n)
        return 0;
    if ((size & (size - 1)) == 0 && lo % size == 0)
        return 1;
    return hi == n && (lo == 0 || n - lo < (lo & -lo));
}

int ck_tree_max_parts(int64_t n)
{
    /* After each merge the stack holds the largest canonical nodes inside
     * the tasks pushed so far: at most one block of each size 2^k < n on
     * the way up and one on the way down (2 * floor(log2 n), checked
     * exhaustively by tests/base/test_tree.c), and one more while a new
     * part waits for its merge. */
    return n > 0 ? 2 * floor_log2(n) + 2 : 0;
}

ck_code ck_tree_init(ck_tree *t, int64_t n, size_t part_bytes,
                     ck_tree_merge_fn merge, void *ctx, ck_err *err)
{
    memset(t, 0, sizeof *t);
    if (n < 0 || part_bytes == 0 || !merge)
        return ck_err_internal(err, "tree of %lld tasks of %zu bytes",
                               (long long)n, part_bytes);
    t->n = n;
    t->part_bytes = part_bytes;
    t->merge = merge;
    t->ctx = ctx;
    t->cap = ck_tree_max_parts(n);
    if (t->cap == 0)
        return CK_OK;
    if ((size_t)t->cap > SIZE_MAX / part_bytes)
        return ck_err_set(err, CK_ENOMEM,
                          "reduction tree: %d parts of %zu bytes", t->cap,
                          part_bytes);
    /* The stack's node list, then finish's message header (a count and up
     * to cap pairs). */
    t->node = malloc((4 * (size_t)t->cap + 1) * sizeof *t->node);
    if (!t->node)
        return ck_err_set(err, CK_ENOMEM,
                          "reduction tree: %d parts of %zu bytes", t->cap,
                          part_bytes);
    /* Parts are allocated as the stack grows: a stream of n tasks holds
     * at most floor(log2 n) + 1 at a time, fewer than cap. */
    return CK_OK;
}

void ck_tree_release(ck_tree *t)
{
    if (!t)
        return;
    free(t->node);
    free(t->part);
    t->node = NULL;
    t->part = NULL;
    t->depth = t->cap = t->alloc = 0;
}

static unsigned char *slot(const ck_tree *t, int i)
{
    return t->part + (size_t)i * t->part_bytes;
}

/* Slot i, allocating up to it (never past cap); NULL when out of memory
 * or i >= cap.  Moves the parts: earlier slot pointers are stale. */
static unsigned char *room(ck_tree *t, int i)
{
    if (i >= t->cap)
        return NULL;
    if (i >= t->alloc) {
        int want = t->alloc ? 2 * t->alloc : 2;
        if (want > t->cap)
            want = t->cap;
        if (want <= i)
            want = i + 1;
        unsigned char *p = realloc(t->part, (size_t)want * t->part_bytes);
        if (!p)
            return NULL;
        t->part = p;
        t->alloc = want;
    }
    return slot(t, i);
}

void *ck_tree_slot(ck_tree *t)
{
    return room(t, t->depth);
}

/* The part for [lo, hi) is already in slot 'depth': records it and merges
 * while the two top nodes are the children of one canonical node. */
static ck_code add_top(ck_tree *t, int64_t lo, int64_t hi, ck_err *err)
{
    int64_t *nd = t->node;

    if (!is_node(t->n, lo, hi))
        return ck_err_internal(err,
                               "reduction tree: [%lld, %lld) is not a node "
                               "of the tree over %lld tasks",
                               (long long)lo, (long long)hi, (long long)t->n);
    if (t->depth > 0 && nd[2 * t->depth - 1] != lo)
        return ck_err_internal(err,
                               "reduction tree: tasks [%lld, %lld) added "
                               "after tasks ending at %lld",
                               (long long)lo, (long long)hi,
                               (long long)nd[2 * t->depth - 1]);
    if (t->depth >= t->cap)
        return ck_err_internal(err, "reduction tree: stack of %d is full",
                               t->cap);
    nd[2 * t->depth] = lo;
    nd[2 * t->depth + 1] = hi;
    t->depth++;
    while (t->depth >= 2) {
        int64_t a = nd[2 * (t->depth - 2)], m = nd[2 * (t->depth - 1)],
                b = nd[2 * (t->depth - 1) + 1];
        if (!is_node(t->n, a, b) || a + split_size(b - a) != m)
            break;
        t->merge(slot(t, t->depth - 2), slot(t, t->depth - 1), t->ctx);
        nd[2 * (t->depth - 2) + 1] = b;
        t->depth--;
    }
    return CK_OK;
}

ck_code ck_tree_add(ck_tree *t, int64_t lo, int64_t hi, const void *part,
                    ck_err *err)
{
    unsigned char *dst;

    if (t->depth >= t->cap)
        return ck_err_internal(err, "reduction tree: stack of %d is full",
                               t->cap);
    if (!(dst = ck_tree_slot(t)))
        return ck_err_set(err, CK_ENOMEM,
                          "out of memory for a reduction's partial results "
                          "(%zu bytes each)",
                          t->part_bytes);
    if (part != dst)
        memcpy(dst, part, t->part_bytes);
    return add_top(t, lo, hi, err);
}

ck_code ck_tree_push(ck_tree *t, int64_t task, const void *part, ck_err *err)
{
    return ck_tree_add(t, task, task + 1, part, err);
}

int ck_tree_depth(const ck_tree *t)
{
    return t->depth;
}

const void *ck_tree_part(const ck_tree *t, int i, int64_t *lo, int64_t *hi)
{
    *lo = t->node[2 * i];
    *hi = t->node[2 * i + 1];
    return slot(t, i);
}

ck_code ck_tree_result(const ck_tree *t, void *out, ck_err *err)
{
    if (t->n == 0)
        return CK_OK;
    if (t->depth != 1 || t->node[0] != 0 || t->node[1] != t->n) {
        int64_t lo = t->depth ? t->node[0] : 0,
                hi = t->depth ? t->node[2 * t->depth - 1] : 0;
        return ck_err_internal(err,
                               "reduction tree: %d parts covering tasks "
                               "[%lld, %lld) of %lld",
                               t->depth, (long long)lo, (long long)hi,
                               (long long)t->n);
    }
    memcpy(out, slot(t, 0), t->part_bytes);
    return CK_OK;
}

/* finish's message header: a count and cap (lo, hi) pairs, fixed size. */
static int64_t *header(const ck_tree *t, size_t *bytes)
{
    *bytes = (1 + 2 * (size_t)t->cap) * sizeof *t->node;
    return t->node + 2 * (size_t)t->cap;
}

/* Sends the whole stack to rank 'to': the header, then each part; only
 * the count -1 when this rank or one below it in the tree failed.  Returns
 * transport errors only (ck_comm_broken). */
static ck_code send_stack(ck_tree *t, int to, int failed, ck_err *err)
{
    size_t hdr_bytes;
    int64_t *hdr = header(t, &hdr_bytes);
    int count = failed ? 0 : t->depth;

    memset(hdr, 0, hdr_bytes);
    hdr[0] = failed ? -1 : count;
    memcpy(hdr + 1, t->node, 2 * (size_t)count * sizeof *hdr);
    CK_TRY(ck_comm_send(hdr, hdr_bytes, to, CK_TREE_TAG, err));
    t->sent += hdr_bytes;
    for (int i = 0; i < count; i++) {
        CK_TRY(ck_comm_send(slot(t, i), t->part_bytes, to, CK_TREE_TAG, err));
        t->sent += t->part_bytes;
    }
    return CK_OK;
}

/* Receives rank 'from''s stack and adds it part by part, each received
 * straight into the free slot on top.  Returns transport errors only.  A
 * stack that does not fit is this rank's failure, in *rc; a sender that
 * failed (count -1) sets *failed, and is not this rank's failure: the
 * agreement reports the sender's own error.  Parts are still received
 * after a failure (into the top slot, and dropped), so that the sender
 * does not wait forever and every rank reaches the agreement. */
static ck_code recv_stack(ck_tree *t, int from, ck_code *rc, int *failed,
                          ck_err *err)
{
    size_t hdr_bytes;
    int64_t *hdr = header(t, &hdr_bytes), count;

    CK_TRY(ck_comm_recv(hdr, hdr_bytes, from, CK_TREE_TAG, err));
    t->recvd += hdr_bytes;
    count = hdr[0];
    if (count == -1) {
        *failed = 1;
        return CK_OK;
    }
    if (count < 0 || count > t->cap) {
        /* No stack is that deep: the header itself is broken, and how many
         * parts follow is unknown. */
        *rc = ck_err_internal(err, "reduction tree: rank %d sent %lld parts",
                              from, (long long)count);
        *failed = 1;
        return CK_OK;
    }
    for (int64_t i = 0; i < count; i++) {
        unsigned char *dst = ck_tree_slot(t);
        if (*failed || !dst)
            dst = room(t, t->cap - 1); /* dropped */
        if (!dst) {
            /* no room even to drop it: the parts cannot be read off */
            return ck_err_set(err, CK_ENOMEM,
                              "reduction tree: no memory for rank %d's parts",
                              from);
        }
        CK_TRY(ck_comm_recv(dst, t->part_bytes, from, CK_TREE_TAG, err));
        t->recvd += t->part_bytes;
        if (!*failed &&
            (*rc = add_top(t, hdr[1 + 2 * i], hdr[2 + 2 * i], err)) != CK_OK)
            *failed = 1;
    }
    return CK_OK;
}

ck_code ck_tree_finish(ck_tree *t, ck_code rc, void *out, ck_err *err)
{
    int rank = ck_comm_rank(), size = ck_comm_size();
    int failed = rc != CK_OK; /* here or below: no result to pass on */
    ck_code crc;

    /* a rank that failed may first wait for a child still at work: tell
     * the others now, so that the child stops */
    ck_comm_stop_others(rc);

    if (t->n > 0) {
        /* At step s the ranks still here are multiples of s: those at an
         * odd multiple send their stack to rank - s and are done, the
         * others add rank + s's, which holds the tasks right after theirs
         * (ranks own contiguous tasks in rank order). */
        for (int step = 1; step < size; step *= 2) {
            if (rank % (2 * step) == step) {
                crc = send_stack(t, rank - step, failed, err);
                if (crc != CK_OK)
                    return crc; /* transport: no agreement possible */
                break;
            }
            if (rank + step < size &&
                (crc = recv_stack(t, rank + step, &rc, &failed, err)) != CK_OK)
                return crc;
        }
        if (rank == 0 && !failed)
            rc = ck_tree_result(t, out, err);
    }
    /* Every rank that failed passes its error; one that only heard of a
     * failure passes CK_OK, so the lowest real failure is reported. */
    if ((rc = ck_comm_agree(rc, err)) != CK_OK || t->n == 0)
        return rc;
    return ck_comm_bcast(out, t->part_bytes, 0, err);
}

static void add_u64(void *left, const void *right, void *ctx)
{
    int64_t n = *(const int64_t *)ctx;
    uint64_t *l = left;
    const uint64_t *r = right;

    for (int64_t e = 0; e < n; e++)
        l[e] += r[e];
}

ck_code ck_tree_sum_u64(uint64_t *v, int64_t n, ck_budget *budget, ck_code rc,
                        ck_err *err)
{
    ck_tree t = {0};
    int64_t len = n;
    int64_t bytes = (int64_t)ck_tree_max_parts(ck_comm_size()) * n * 8;
    int charged;

    /* a rank whose stack cannot be made must not skip the exchange: agree
     * first, so that all ranks push and finish or none does */
    if (rc == CK_OK)
        rc = ck_budget_charge(budget, bytes, "counts summed over the ranks",
                              err);
    charged = rc == CK_OK;
    if (rc == CK_OK && n > 0)
        rc =
            ck_tree_init(&t, ck_comm_size(), (size_t)n * 8, add_u64, &len, err);
    if ((rc = ck_comm_agree(rc, err)) == CK_OK && n > 0) {
        rc = ck_tree_push(&t, ck_comm_rank(), v, err);
        rc = ck_tree_finish(&t, rc, v, err);
    }
    ck_tree_release(&t);
    if (charged)
        ck_budget_release(budget, bytes);
    return rc;
}
