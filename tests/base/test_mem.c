#include <criterion/criterion.h>
#include <string.h>

#include "base/ck_mem.h"

TestSuite(mem, .description = "base/ck_mem.h: budget, arena, sizes");

Test(mem, parse_sizes)
{
    int64_t v;
    ck_err err = {0};

    cr_assert_eq(ck_parse_size("256M", &v, &err), CK_OK);
    cr_assert_eq(v, 256LL << 20);
    cr_assert_eq(ck_parse_size("1.5G", &v, &err), CK_OK);
    cr_assert_eq(v, 3LL << 29);
    cr_assert_eq(ck_parse_size("64KiB", &v, &err), CK_OK);
    cr_assert_eq(v, 65536);
    cr_assert_eq(ck_parse_size("12", &v, &err), CK_OK);
    cr_assert_eq(v, 12);
    cr_assert_eq(ck_parse_size("lots", &v, &err), CK_EUSAGE);
    cr_assert(strstr(err.msg, "'lots' is not a size"), "%s", err.msg);
}

Test(mem, budget_refuses_over_the_limit_and_names_it)
{
    ck_budget b = CK_BUDGET_INIT(1000);
    ck_err err = {0};

    cr_assert_eq(ck_budget_charge(&b, 600, "a", &err), CK_OK);
    cr_assert_eq(ck_budget_charge(&b, 600, "chunk buffers", &err), CK_ENOMEM);
    cr_assert(strstr(err.msg, "chunk buffers"), "%s", err.msg);
    cr_assert_eq(b.used, 600);
    ck_budget_release(&b, 600);
    cr_assert_eq(b.used, 0);
}

Test(mem, arena_allocates_aligned_and_resets)
{
    ck_budget b = CK_BUDGET_INIT(4096);
    ck_arena a = CK_ARENA_INIT;

    cr_assert_eq(ck_arena_reserve(&a, &b, 1024, "t", NULL), CK_OK);
    cr_assert_eq(b.used, 1024);
    char *p = ck_arena_alloc(&a, 10), *q = ck_arena_alloc(&a, 10);
    cr_assert_not_null(p);
    cr_assert_eq(((uintptr_t)q - (uintptr_t)p), 64);
    cr_assert_null(ck_arena_alloc(&a, 2000));
    ck_arena_reset(&a);
    cr_assert_not_null(ck_arena_alloc(&a, 1000));
    ck_arena_release(&a);
    cr_assert_eq(b.used, 0);
    ck_arena_release(&a); /* twice is harmless */
}

Test(mem, parse_int_lists)
{
    int64_t v[4];
    int n;
    ck_err err = {0};

    cr_assert_eq(ck_parse_ints("1000,20,3", "--chunks", v, 4, &n, &err), CK_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(v[1], 20);
    cr_assert_eq(ck_parse_ints("10,,3", "--chunks", v, 4, &n, &err), CK_EUSAGE);
    memset(&err, 0, sizeof err);
    cr_assert_eq(ck_parse_ints("0", "--chunks", v, 4, &n, &err), CK_EUSAGE);
    memset(&err, 0, sizeof err);
    cr_assert_eq(ck_parse_ints("1,2", "--chunks", v, 4, &n, &err), CK_OK);
    cr_assert_eq(ck_parse_ints("-1", "--chunks", v, 4, &n, &err), CK_EUSAGE);
}
