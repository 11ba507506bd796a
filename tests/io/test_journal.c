#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/journal.h"

TestSuite(journal, .description = "io/journal.h: checksums of stored bytes");

/* What a writer records (ck_journal_sum_block over the bytes in memory,
 * 1 MiB at a time) and what --resume reads back (ck_journal_sum_fd from
 * the file, through its own smaller buffer) must agree, or kept chunks
 * are recomputed and damaged ones kept. */
static uint64_t sum_of(const unsigned char *p, size_t n, uint64_t *len)
{
    ck_journal_sum s;

    ck_journal_sum_init(&s);
    for (size_t b = 0; b < n; b += CK_JOURNAL_BLOCK)
        ck_journal_sum_block(
            &s, p + b, n - b < CK_JOURNAL_BLOCK ? n - b : CK_JOURNAL_BLOCK);
    *len = s.len;
    return s.h;
}

Test(journal, file_sum_equals_the_sum_of_its_bytes)
{
    size_t n = 5 * (size_t)CK_JOURNAL_BLOCK / 2 + 12345;
    unsigned char *p = malloc(n);
    char path[] = "/tmp/ck_journal_XXXXXX";
    int fd = mkstemp(path);
    uint64_t len, sum, want_len, want;

    cr_assert(p && fd >= 0);
    unlink(path);
    srand(7);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)rand();
    cr_assert_eq(write(fd, p, n), (ssize_t)n);

    want = sum_of(p, n, &want_len);
    cr_assert_eq(ck_journal_sum_fd(fd, 0, UINT64_MAX, &len, &sum), 0);
    cr_expect_eq(len, n);
    cr_expect_eq(sum, want);

    /* a range inside the file, not block-aligned */
    want = sum_of(p + 777, 1300000, &want_len);
    cr_assert_eq(ck_journal_sum_fd(fd, 777, 1300000, &len, &sum), 0);
    cr_expect_eq(len, 1300000);
    cr_expect_eq(sum, want);

    /* a range past the end: what is there */
    want = sum_of(p + n - 1000, 1000, &want_len);
    cr_assert_eq(ck_journal_sum_fd(fd, n - 1000, 5000, &len, &sum), 0);
    cr_expect_eq(len, 1000);
    cr_expect_eq(sum, want);

    /* a changed byte in the third block changes the sum */
    uint64_t before = sum_of(p, n, &want_len);
    p[2 * CK_JOURNAL_BLOCK + 5] ^= 1;
    cr_assert_eq(
        pwrite(fd, p + 2 * CK_JOURNAL_BLOCK + 5, 1, 2 * CK_JOURNAL_BLOCK + 5),
        1);
    cr_assert_eq(ck_journal_sum_fd(fd, 0, UINT64_MAX, &len, &sum), 0);
    cr_expect_neq(sum, before);
    cr_expect_eq(sum, sum_of(p, n, &want_len));
    close(fd);
    free(p);
}
