/*
 * tests/base/test_tree.c - the Criterion suite "tree": base/ck_tree.h's
 * canonical reduction tree, without MPI.  Each part carries a double (added
 * left + right, which is not associative) and the tree's shape as text
 * ("((0 1) 2)"); both are checked against a recursive reference of the
 * canonical tree, for every n up to 70 and for many splits of the tasks
 * over simulated ranks, combined as ck_tree_finish combines them.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ck_comm.h"
#include "base/ck_tree.h"

TestSuite(tree, .description = "base/ck_tree.h: the fixed reduction tree");

#ifdef NDEBUG
#define INTERNAL_SIGNAL 0
#else
#define INTERNAL_SIGNAL SIGABRT
#endif

#define MAXN 70
#define SHAPE 1024 /* "(a b)" text of a tree over up to 70 tasks */

typedef struct part {
    double v;
    int64_t lo, hi; /* tasks merged into it, to catch a wrong pairing */
    char shape[SHAPE];
} part;

static void merge(void *left, const void *right, void *ctx)
{
    part *l = left;
    const part *r = right;
    char s[SHAPE];

    (*(int *)ctx)++;
    cr_assert_eq(l->hi, r->lo, "merged [%lld, %lld) with [%lld, %lld)",
                 (long long)l->lo, (long long)l->hi, (long long)r->lo,
                 (long long)r->hi);
    l->v = l->v + r->v;
    l->hi = r->hi;
    cr_assert_lt(snprintf(s, sizeof s, "(%s %s)", l->shape, r->shape),
                 (int)sizeof s);
    memcpy(l->shape, s, sizeof s);
}

/* Values of very different magnitudes and signs, so that any other order
 * of additions changes the bits. */
static double values[MAXN];

static void make_values(unsigned seed)
{
    srand(seed);
    for (int i = 0; i < MAXN; i++) {
        /* a full 53-bit mantissa in [0.5, 1.5) */
        uint64_t bits = ((uint64_t)rand() << 31) ^ (uint64_t)rand();
        double m = 0.5 + ldexp((double)(bits & ((1ull << 53) - 1)), -53);
        values[i] = ldexp(rand() % 2 ? m : -m, rand() % 80 - 40);
    }
}

static void leaf(part *p, int64_t task)
{
    memset(p, 0, sizeof *p);
    p->v = values[task];
    p->lo = task;
    p->hi = task + 1;
    snprintf(p->shape, sizeof p->shape, "%lld", (long long)task);
}

/* The reference: the canonical tree's definition, recursively. */
static void reference(int64_t lo, int64_t hi, part *out)
{
    part right;
    int64_t p = 1;
    int calls = 0;

    if (hi - lo == 1) {
        leaf(out, lo);
        return;
    }
    while (2 * p < hi - lo)
        p *= 2;
    reference(lo, lo + p, out);
    reference(lo + p, hi, &right);
    merge(out, &right, &calls);
}

/* Whether [lo, hi) is a node of the reference tree over [lo0, hi0); if
 * so and it is not the root, its parent goes to *plo, *phi. */
static int ref_node(int64_t lo0, int64_t hi0, int64_t lo, int64_t hi,
                    int64_t *plo, int64_t *phi)
{
    int64_t p = 1, m;

    if (lo == lo0 && hi == hi0)
        return 1;
    if (hi0 - lo0 == 1 || lo < lo0 || hi > hi0)
        return 0;
    while (2 * p < hi0 - lo0)
        p *= 2;
    m = lo0 + p;
    if ((lo == lo0 && hi == m) || (lo == m && hi == hi0)) {
        *plo = lo0;
        *phi = hi0;
        return 1;
    }
    return hi <= m ? ref_node(lo0, m, lo, hi, plo, phi)
                   : ref_node(m, hi0, lo, hi, plo, phi);
}

static void push_range(ck_tree *t, int64_t a, int64_t b)
{
    ck_err err = {0};
    part p;

    for (int64_t k = a; k < b; k++) {
        leaf(&p, k);
        cr_assert_eq(ck_tree_push(t, k, &p, &err), CK_OK, "%s", err.msg);
        cr_assert_lt(ck_tree_depth(t), ck_tree_max_parts(t->n),
                     "n %lld, tasks [%lld, %lld]: depth %d", (long long)t->n,
                     (long long)a, (long long)k, ck_tree_depth(t));
    }
}

/* ck_tree_finish's exchange, without MPI: at step s, rank r (a multiple of
 * 2s) adds rank r + s's stack part by part. */
static void combine(ck_tree *t, int size)
{
    ck_err err = {0};

    for (int step = 1; step < size; step *= 2)
        for (int r = 0; r + step < size; r += 2 * step)
            for (int i = 0; i < ck_tree_depth(&t[r + step]); i++) {
                int64_t lo, hi;
                const void *p = ck_tree_part(&t[r + step], i, &lo, &hi);
                cr_assert_eq(ck_tree_add(&t[r], lo, hi, p, &err), CK_OK, "%s",
                             err.msg);
                cr_assert_lt(ck_tree_depth(&t[r]), ck_tree_max_parts(t[r].n));
            }
}

/* Runs n tasks split at bounds[0] = 0 <= bounds[1] <= ... <= bounds[size]
 * = n over 'size' simulated ranks and checks the result against the
 * reference, bit for bit and shape for shape. */
static void check_split(int64_t n, int size, const int64_t *bounds)
{
    ck_tree t[80];
    part got, want;
    ck_err err = {0};
    int calls = 0;

    cr_assert_leq(size, 80);
    for (int r = 0; r < size; r++) {
        cr_assert_eq(ck_tree_init(&t[r], n, sizeof(part), merge, &calls, &err),
                     CK_OK, "%s", err.msg);
        push_range(&t[r], bounds[r], bounds[r + 1]);
    }
    combine(t, size);
    cr_assert_eq(ck_tree_result(&t[0], &got, &err), CK_OK, "%s", err.msg);
    reference(0, n, &want);
    cr_assert_eq(calls, n - 1, "n %lld: %d merges", (long long)n, calls);
    cr_assert_str_eq(got.shape, want.shape, "n %lld over %d ranks",
                     (long long)n, size);
    cr_assert_eq(memcmp(&got.v, &want.v, sizeof got.v), 0,
                 "n %lld over %d ranks: %a, reference %a", (long long)n, size,
                 got.v, want.v);
    for (int r = 0; r < size; r++)
        ck_tree_release(&t[r]);
}

Test(tree, reference_shapes)
{
    part p;

    make_values(1);
    reference(0, 1, &p);
    cr_expect_str_eq(p.shape, "0");
    reference(0, 3, &p);
    cr_expect_str_eq(p.shape, "((0 1) 2)");
    reference(0, 6, &p);
    cr_expect_str_eq(p.shape, "(((0 1) (2 3)) (4 5))");
    reference(0, 7, &p);
    cr_expect_str_eq(p.shape, "(((0 1) (2 3)) ((4 5) 6))");
    reference(0, 8, &p);
    cr_expect_str_eq(p.shape, "(((0 1) (2 3)) ((4 5) (6 7)))");
}

Test(tree, values_depend_on_the_order)
{
    /* Otherwise the bit comparisons below would prove nothing. */
    part p;
    double left = 0;

    make_values(2);
    reference(0, MAXN, &p);
    for (int i = 0; i < MAXN; i++)
        left += values[i];
    cr_expect_neq(memcmp(&p.v, &left, sizeof left), 0);
}

Test(tree, one_rank_every_n)
{
    int64_t b[2] = {0, 0};

    for (int seed = 0; seed < 3; seed++) {
        make_values(10 + (unsigned)seed);
        for (int64_t n = 1; n <= MAXN; n++) {
            b[1] = n;
            check_split(n, 1, b);
        }
    }
}

Test(tree, balanced_splits_every_n_and_size)
{
    int64_t b[81];

    make_values(3);
    for (int64_t n = 1; n <= MAXN; n++)
        for (int size = 1; size <= 80; size += size < 9 ? 1 : 7) {
            for (int r = 0; r <= size; r++) {
                int64_t lo, hi;
                ck_comm_split(n, r < size ? r : size - 1, size, &lo, &hi);
                b[r] = r < size ? lo : hi;
            }
            check_split(n, size, b); /* size > n: ranks own no task */
        }
}

Test(tree, random_uneven_splits_with_empty_ranks)
{
    int64_t b[81];

    make_values(4);
    srand(5);
    for (int64_t n = 1; n <= MAXN; n++)
        for (int trial = 0; trial < 40; trial++) {
            int size = 1 + rand() % 20;
            /* size - 1 random cut points, sorted: any contiguous split,
             * empty ranks anywhere */
            b[0] = 0;
            b[size] = n;
            for (int r = 1; r < size; r++)
                b[r] = rand() % (n + 1);
            for (int r = 1; r < size; r++)
                for (int s = r + 1; s < size; s++)
                    if (b[s] < b[r]) {
                        int64_t x = b[r];
                        b[r] = b[s];
                        b[s] = x;
                    }
            check_split(n, size, b);
        }
}

Test(tree, all_tasks_on_one_rank_of_many)
{
    int64_t b[9];

    make_values(6);
    for (int64_t n = 1; n <= MAXN; n++)
        for (int owner = 0; owner < 8; owner++) {
            for (int r = 0; r <= 8; r++)
                b[r] = r <= owner ? 0 : n;
            check_split(n, 8, b);
        }
}

Test(tree, stack_is_the_largest_nodes_inside_the_pushed_range)
{
    /* Exhaustive over every range [a, b) of every n <= 70: the stack
     * bound (ck_tree_max_parts) holds, and the stack is exactly the
     * maximal canonical nodes inside [a, b), in order. */
    make_values(7);
    for (int64_t n = 1; n <= MAXN; n++)
        for (int64_t a = 0; a < n; a++)
            for (int64_t b = a + 1; b <= n; b++) {
                ck_tree t;
                ck_err err = {0};
                int calls = 0;
                int64_t next = a;
                cr_assert_eq(
                    ck_tree_init(&t, n, sizeof(part), merge, &calls, &err),
                    CK_OK);
                push_range(&t, a, b);
                for (int i = 0; i < ck_tree_depth(&t); i++) {
                    int64_t lo, hi;
                    ck_tree_part(&t, i, &lo, &hi);
                    cr_assert_eq(lo, next);
                    int64_t plo = 0, phi = n + 1;
                    cr_assert(ref_node(0, n, lo, hi, &plo, &phi));
                    /* maximal: its parent does not fit in [a, b) */
                    cr_assert(plo < a || phi > b,
                              "n %lld [%lld, %lld): part [%lld, %lld) could "
                              "be merged into [%lld, %lld)",
                              (long long)n, (long long)a, (long long)b,
                              (long long)lo, (long long)hi, (long long)plo,
                              (long long)phi);
                    next = hi;
                }
                cr_assert_eq(next, b);
                ck_tree_release(&t);
            }
}

Test(tree, max_parts)
{
    cr_expect_eq(ck_tree_max_parts(0), 0);
    cr_expect_eq(ck_tree_max_parts(1), 2);
    cr_expect_eq(ck_tree_max_parts(2), 4);
    cr_expect_eq(ck_tree_max_parts(3), 4);
    cr_expect_eq(ck_tree_max_parts(70), 14);
    cr_expect_eq(ck_tree_max_parts((int64_t)1 << 40), 82);
}

Test(tree, push_into_the_slot_copies_nothing)
{
    ck_tree t;
    ck_err err = {0};
    part got, want;
    int calls = 0;

    make_values(8);
    cr_assert_eq(ck_tree_init(&t, 13, sizeof(part), merge, &calls, &err),
                 CK_OK);
    for (int64_t k = 0; k < 13; k++) {
        part *p = ck_tree_slot(&t);
        cr_assert_not_null(p);
        leaf(p, k);
        cr_assert_eq(ck_tree_push(&t, k, p, &err), CK_OK, "%s", err.msg);
    }
    cr_assert_eq(ck_tree_result(&t, &got, &err), CK_OK, "%s", err.msg);
    reference(0, 13, &want);
    cr_expect_str_eq(got.shape, want.shape);
    cr_expect_eq(memcmp(&got.v, &want.v, sizeof got.v), 0);
    ck_tree_release(&t);
    ck_tree_release(&t); /* twice is fine */
}

Test(tree, finish_in_one_process_is_the_result)
{
    ck_tree t;
    ck_err err = {0};
    part got, want;
    int calls = 0;

    make_values(9);
    cr_assert_eq(ck_tree_init(&t, 21, sizeof(part), merge, &calls, &err),
                 CK_OK);
    push_range(&t, 0, 21);
    cr_assert_eq(ck_tree_finish(&t, CK_OK, &got, &err), CK_OK, "%s", err.msg);
    reference(0, 21, &want);
    cr_expect_str_eq(got.shape, want.shape);
    cr_expect_eq(memcmp(&got.v, &want.v, sizeof got.v), 0);
    cr_expect_eq(t.sent, 0);
    cr_expect_eq(t.recvd, 0);
    ck_tree_release(&t);
}

Test(tree, finish_passes_this_ranks_failure)
{
    ck_tree t;
    ck_err err = {0};
    part got = {.v = 42};
    int calls = 0;

    cr_assert_eq(ck_tree_init(&t, 5, sizeof(part), merge, &calls, &err), CK_OK);
    push_range(&t, 0, 2);
    ck_err_set(&err, CK_ECORRUPT, "x.h5: chunk 3: bad");
    cr_expect_eq(ck_tree_finish(&t, CK_ECORRUPT, &got, &err), CK_ECORRUPT);
    cr_expect_str_eq(err.msg, "x.h5: chunk 3: bad"); /* one rank: as is */
    cr_expect_eq(got.v, 42);
    ck_tree_release(&t);
}

Test(tree, no_tasks_leaves_out_alone)
{
    ck_tree t;
    ck_err err = {0};
    part got = {.v = 7};
    int calls = 0;

    cr_assert_eq(ck_tree_init(&t, 0, sizeof(part), merge, &calls, &err), CK_OK);
    cr_expect_eq(ck_tree_depth(&t), 0);
    cr_expect_eq(ck_tree_result(&t, &got, &err), CK_OK);
    cr_expect_eq(ck_tree_finish(&t, CK_OK, &got, &err), CK_OK, "%s", err.msg);
    cr_expect_eq(got.v, 7);
    ck_tree_release(&t);
}

Test(tree, zero_part_bytes_is_a_bug, .signal = INTERNAL_SIGNAL)
{
    ck_tree t;
    ck_err err = {0};

    cr_expect_eq(ck_tree_init(&t, 4, 0, merge, NULL, &err), CK_EINTERNAL);
    ck_tree_release(&t);
}

Test(tree, missing_tasks_are_a_bug, .signal = INTERNAL_SIGNAL)
{
    ck_tree t;
    ck_err err = {0};
    part got;
    int calls = 0;

    make_values(11);
    cr_assert_eq(ck_tree_init(&t, 6, sizeof(part), merge, &calls, &err), CK_OK);
    push_range(&t, 0, 5);
    cr_expect_eq(ck_tree_result(&t, &got, &err), CK_EINTERNAL);
    cr_expect(strstr(err.msg, "covering tasks [0, 5) of 6"), "%s", err.msg);
    ck_tree_release(&t);
}

Test(tree, a_gap_is_a_bug, .signal = INTERNAL_SIGNAL)
{
    ck_tree t;
    ck_err err = {0};
    part p;
    int calls = 0;

    make_values(12);
    cr_assert_eq(ck_tree_init(&t, 6, sizeof(part), merge, &calls, &err), CK_OK);
    push_range(&t, 0, 2);
    leaf(&p, 3);
    cr_expect_eq(ck_tree_push(&t, 3, &p, &err), CK_EINTERNAL);
    cr_expect(strstr(err.msg, "after tasks ending at 2"), "%s", err.msg);
    ck_tree_release(&t);
}

Test(tree, a_range_that_is_no_node_is_a_bug, .signal = INTERNAL_SIGNAL)
{
    ck_tree t;
    ck_err err = {0};
    part p;
    int calls = 0;

    make_values(13);
    cr_assert_eq(ck_tree_init(&t, 8, sizeof(part), merge, &calls, &err), CK_OK);
    leaf(&p, 2);
    cr_expect_eq(ck_tree_add(&t, 2, 5, &p, &err), CK_EINTERNAL);
    cr_expect(strstr(err.msg, "[2, 5) is not a node"), "%s", err.msg);
    ck_tree_release(&t);
}
