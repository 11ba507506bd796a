/*
 * base/ck_tree.h - combining partial results in one fixed order, however
 * the tasks are spread over ranks.
 * A reduction computes one "part" (part_bytes, opaque here) per task, tasks
 * numbered 0 .. n - 1 in C order, and combines them with merge(left, right)
 * (left = left (+) right, left holding the earlier tasks; in floating point
 * neither commutative nor associative).  The bits of the result depend only
 * on n, never on how many ranks there are or which tasks each owns: the
 * parts are always combined along the canonical tree over [0, n):
 *
 *   node [lo, hi) with hi - lo > 1 is merge([lo, lo + p), [lo + p, hi)),
 *   p the largest power of two < hi - lo.
 *
 * Every left child is an aligned block of a power of two tasks, so a rank
 * can merge its own tasks as they come (a binary counter) and keeps at most
 * ck_tree_max_parts(n) parts, O(log n); ck_tree_finish then combines the
 * ranks' stacks up a binary tree of ranks.  Nothing here knows what a part
 * holds (ops/ and pipelines/ do) or how tasks are assigned (ck_comm_split).
 */
#ifndef CK_TREE_H
#define CK_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "base/ck_err.h"

/* left = left (+) right.  Must not fail; called on the main thread. */
typedef void (*ck_tree_merge_fn)(void *left, const void *right, void *ctx);

typedef struct ck_tree {
    int64_t n;         /* tasks in the whole reduction */
    size_t part_bytes; /* > 0 */
    ck_tree_merge_fn merge;
    void *ctx;
    int cap;              /* parts the stack can hold: ck_tree_max_parts(n) */
    int depth;            /* parts on the stack */
    int64_t *node;        /* node[2i], node[2i+1]: tasks [lo, hi) of part i */
    unsigned char *part;  /* alloc * part_bytes, grown as the stack does */
    int alloc;            /* parts allocated (<= cap) */
    uint64_t sent, recvd; /* bytes ck_tree_finish sent and received */
} ck_tree;

/* The most parts a ck_tree over n tasks holds at once, on any rank and at
 * any moment (ck_tree_finish included): 2 * floor(log2(n)) + 2, 0 for
 * n == 0.  The caller charges ck_tree_max_parts(n) * part_bytes to its
 * budget before ck_tree_init. */
int ck_tree_max_parts(int64_t n);

/* Prepares *t for n >= 0 tasks of part_bytes > 0 each, combined with
 * merge(.., ctx).  Allocates the stack: CK_ENOMEM.  Every rank of the run
 * passes the same n and part_bytes.  Release with ck_tree_release, also
 * after a failure. */
ck_code ck_tree_init(ck_tree *t, int64_t n, size_t part_bytes,
                     ck_tree_merge_fn merge, void *ctx, ck_err *err);
/* Frees the stack; accepts a zeroed or released tree. */
void ck_tree_release(ck_tree *t);

/* Where the caller may compute the next task's part in place (then
 * ck_tree_push it with part == this slot, which copies nothing).  Valid
 * until the next push, add or finish.  NULL when the stack is full or its
 * parts, allocated as it grows, cannot grow (ck_tree_add then says which:
 * an internal fault, or CK_ENOMEM). */
void *ck_tree_slot(ck_tree *t);

/* Adds task 'task''s part (part_bytes at 'part', copied) and merges every
 * pair of siblings that is complete.  A rank pushes its own tasks in
 * increasing order without gaps (the first one may be any task).
 * CK_EINTERNAL when 'task' does not follow the last one. */
ck_code ck_tree_push(ck_tree *t, int64_t task, const void *part, ck_err *err);

/* The general step behind push and finish: adds the part of a whole node
 * [lo, hi) of the canonical tree, which must start where the stack ends
 * (or anywhere on an empty stack), and merges completed siblings.
 * ck_tree_push(t, k, p) is ck_tree_add(t, k, k + 1, p).  CK_EINTERNAL when
 * [lo, hi) is not a node of the canonical tree or does not follow. */
ck_code ck_tree_add(ck_tree *t, int64_t lo, int64_t hi, const void *part,
                    ck_err *err);

/* The stack, bottom (earliest tasks) first: part i of ck_tree_depth(t)
 * covers tasks [*lo, *hi).  After pushing tasks [a, b) the stack holds the
 * largest canonical nodes inside [a, b), in order.  Adding another tree's
 * stack, part by part, to a tree whose tasks end where the other's begin
 * is how finish combines ranks, and gives the same parts as pushing all
 * their tasks into one tree. */
int ck_tree_depth(const ck_tree *t);
const void *ck_tree_part(const ck_tree *t, int i, int64_t *lo, int64_t *hi);

/* Copies the whole reduction into out (part_bytes) when the stack holds the
 * one node [0, n); CK_EINTERNAL naming the missing tasks otherwise.  With
 * n == 0, out is left as it is (the caller's identity stands). */
ck_code ck_tree_result(const ck_tree *t, void *out, ck_err *err);

/* Collective (base/ck_comm.h); every rank calls it after pushing its own
 * tasks, the ranks' tasks together being 0 .. n - 1 in rank order
 * (ck_comm_split), some ranks possibly owning none.  rc is this rank's
 * outcome so far (its message in *err): a rank whose tasks failed still
 * calls finish, so that one call both combines and agrees.  Rank r + 2^k
 * sends its stack to rank r (r a multiple of 2^(k+1)), k = 0, 1, ...,
 * which adds it part by part: each step sends at most
 * ck_tree_max_parts(n) parts and a header of 16 bytes per part, and the
 * ranks hold no more than ck_tree_max_parts(n) parts.  Rank 0 then holds the
 * root and broadcasts it: every rank gets the same out, bit for bit the
 * canonical tree's result (n == 0: out is left as it is).  A failure on
 * any rank, before or during finish, is agreed on (ck_comm_agree): every
 * rank returns the lowest failing rank's error, "rank N: ...".  A failed
 * transfer (ck_comm_broken) returns at once, without agreement.  Messages
 * use tag CK_TREE_TAG; t->sent and t->recvd count their bytes.  Afterwards
 * only ck_tree_release is allowed. */
#define CK_TREE_TAG 2030
ck_code ck_tree_finish(ck_tree *t, ck_code rc, void *out, ck_err *err);

/* Collective: v (n counts, the same n on every rank) becomes the sum of
 * every rank's v on every rank, each rank one task of a ck_tree (integer
 * sums: the same in any order).  rc is this rank's outcome so far, agreed
 * as by ck_tree_finish (on failure v is left as it is).  The stack,
 * ck_tree_max_parts(ck_comm_size()) * n * 8 bytes, is charged to budget
 * while held. */
struct ck_budget;
ck_code ck_tree_sum_u64(uint64_t *v, int64_t n, struct ck_budget *budget,
                        ck_code rc, ck_err *err);

#endif
