#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/journal.h"

TestSuite(journal, .description = "io/journal.h: checksums of stored bytes");

/* What a writer records (ck_journal_sum_block over the bytes in memory)
 * and what --resume reads back (ck_journal_sum_fd from the file, through
 * its own smaller buffer) must both be the sum journal.h defines, or kept
 * chunks are recomputed and damaged ones kept.  The oracle here is that
 * definition written out plainly: a bitwise CRC-32C (reflected, poly
 * 0x82f63b78) of each 1 MiB block, folded with FNV-1a's multiply. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;

    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

static uint64_t sum_of(const unsigned char *p, size_t n, uint64_t *len)
{
    uint64_t h = CK_JOURNAL_HASH_INIT;

    for (size_t b = 0; b < n; b += CK_JOURNAL_BLOCK) {
        size_t k = n - b < CK_JOURNAL_BLOCK ? n - b : CK_JOURNAL_BLOCK;
        h = (h ^ crc32c_bitwise(p + b, k)) * 0x100000001b3ull;
    }
    *len = n;
    return h;
}

/* the in-memory sum, as a writer takes it */
static uint64_t block_sum(const unsigned char *p, size_t n)
{
    ck_journal_sum s;

    ck_journal_sum_init(&s);
    for (size_t b = 0; b < n; b += CK_JOURNAL_BLOCK)
        ck_journal_sum_block(
            &s, p + b, n - b < CK_JOURNAL_BLOCK ? n - b : CK_JOURNAL_BLOCK);
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
    cr_expect_eq(block_sum(p, n), want);
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
