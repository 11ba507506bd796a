/*
 * tests/io/test_attrs.c - the Criterion suite "attrs": one typed attribute
 * at a time through io/store.h (ck_store_set_attr, ck_store_get_attr), on
 * HDF5 files and Zarr v2 stores.  Stores are written into a fresh mkdtemp
 * directory: by chunkctl for round trips, with the raw HDF5 C API and by
 * hand (the bytes zarr-python writes) for the other direction.
 *
 * interop_write and interop_read are run by tests/interop/test_attrs.py
 * (with CK_ATTRS_OUT or CK_ATTRS_IN set), which checks with h5py and
 * zarr-python what we write and writes what interop_read expects; they
 * skip, visibly, in a plain run.  The values are fixed on both sides:
 * change them together.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ftw.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "io/attrs_json.h"
#include "io/store.h"
#include "io/store_impl.h"

static char tmpdir[64];

static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ck-test-attrs-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void teardown(void)
{
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(attrs, .description = "io/store.h: ck_store_set_attr, _get_attr",
          .init = setup, .fini = teardown);

/* ---- helpers ---- */

static const char *at(const char *rel)
{
    static char buf[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, rel);
    return buf[k];
}

static const char *kind_name(ck_store_kind k)
{
    return k == CK_KIND_HDF5 ? "hdf5" : "zarr";
}

/* "m.h5" or "m.zarr" in the temp directory. */
static const char *store_path(ck_store_kind k, const char *stem)
{
    static char buf[512];

    snprintf(buf, sizeof buf, "%s/%s.%s", tmpdir, stem,
             k == CK_KIND_HDF5 ? "h5" : "zarr");
    return buf;
}

static ck_attr str_attr(const char *s)
{
    ck_attr v;

    memset(&v, 0, sizeof v);
    v.kind = CK_ATTR_STR;
    snprintf(v.str, sizeof v.str, "%s", s);
    return v;
}

static ck_attr f64_attr(double d)
{
    ck_attr v;

    memset(&v, 0, sizeof v);
    v.kind = CK_ATTR_F64;
    v.f64 = d;
    return v;
}

static ck_attr i64_attr(int64_t i)
{
    ck_attr v;

    memset(&v, 0, sizeof v);
    v.kind = CK_ATTR_I64;
    v.i64 = i;
    return v;
}

/* A new store at path with a 1-D float64 array "/coef" (no chunks
 * written: they read as the fill value). */
static ck_store *new_store(const char *path, ck_store_kind kind)
{
    ck_array_spec spec;
    ck_store *s = NULL;
    ck_array *a = NULL;
    ck_err err = {0};

    memset(&spec, 0, sizeof spec);
    spec.name = "/coef";
    spec.ndim = 1;
    spec.shape[0] = 3;
    spec.chunks[0] = 3;
    spec.dtype = CK_F64;
    spec.codec.id = CK_CODEC_NONE;
    cr_assert_eq(ck_store_create(path, kind, 1, &s, &err), CK_OK, "%s",
                 err.msg);
    cr_assert_eq(ck_array_create(s, &spec, &a, &err), CK_OK, "%s", err.msg);
    ck_array_close(a);
    return s;
}

static void commit_close(ck_store *s)
{
    ck_err err = {0};

    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    ck_store_close(s);
}

static ck_store *open_ok(const char *path)
{
    ck_store *s = NULL;
    ck_err err = {0};

    cr_assert_eq(ck_store_open(path, &s, &err), CK_OK, "%s", err.msg);
    return s;
}

static void set_ok(ck_store *s, const char *obj, const char *key, ck_attr v)
{
    ck_err err = {0};

    cr_assert_eq(ck_store_set_attr(s, obj, key, &v, &err), CK_OK, "%s %s: %s",
                 obj, key, err.msg);
}

static ck_attr get_ok(ck_store *s, const char *obj, const char *key)
{
    ck_attr v;
    ck_err err = {0};

    memset(&v, 0x55, sizeof v);
    cr_assert_eq(ck_store_get_attr(s, obj, key, &v, &err), CK_OK, "%s %s: %s",
                 obj, key, err.msg);
    return v;
}

/* Equal kind and value; floats bit for bit (-0.0), NaN as any NaN. */
static void expect_attr(ck_attr got, ck_attr want, const char *what)
{
    cr_assert_eq(got.kind, want.kind, "%s: kind %d, want %d", what, got.kind,
                 want.kind);
    if (want.kind == CK_ATTR_STR)
        cr_assert_str_eq(got.str, want.str, "%s", what);
    else if (want.kind == CK_ATTR_I64)
        cr_assert_eq(got.i64, want.i64, "%s: %lld, want %lld", what,
                     (long long)got.i64, (long long)want.i64);
    else if (isnan(want.f64))
        cr_assert(isnan(got.f64), "%s: %g, want NaN", what, got.f64);
    else
        cr_assert(memcmp(&got.f64, &want.f64, sizeof(double)) == 0,
                  "%s: %.17g, want %.17g", what, got.f64, want.f64);
}

static void expect_get(ck_store *s, const char *obj, const char *key,
                       ck_attr want)
{
    char what[256];

    snprintf(what, sizeof what, "%s %s %s", ck_store_path(s), obj, key);
    expect_attr(get_ok(s, obj, key), want, what);
}

/* get fails with code and leaves *v alone; the message is exactly msg,
 * or holds part, where they are not NULL. */
static void get_fails(ck_store *s, const char *obj, const char *key,
                      ck_code code, const char *msg, const char *part)
{
    ck_attr v;
    ck_err err = {0}; /* fresh: the first error set wins */

    memset(&v, 0x55, sizeof v);
    cr_assert_eq(ck_store_get_attr(s, obj, key, &v, &err), code, "%s %s: %s",
                 obj, key, err.msg);
    if (msg)
        cr_assert_str_eq(err.msg, msg);
    if (part)
        cr_assert(strstr(err.msg, part), "'%s' lacks '%s'", err.msg, part);
    cr_assert_eq(v.kind, (ck_attr_kind)0x55555555, "v written on failure");
}

static void set_fails(ck_store *s, const char *obj, const char *key, ck_attr v,
                      ck_code code, const char *part)
{
    ck_err err = {0};

    cr_assert_eq(ck_store_set_attr(s, obj, key, &v, &err), code, "%s %s: %s",
                 obj, key, err.msg);
    if (part)
        cr_assert(strstr(err.msg, part), "'%s' lacks '%s'", err.msg, part);
}

/* The whole text of a small file, malloc'd. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 1 << 16);
    size_t n;

    cr_assert_not_null(f, "%s", path);
    n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");

    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* ---- a fitted model's metadata, and the edges of each kind ---- */

typedef struct named {
    const char *obj, *key;
    ck_attr v;
} named;

/* What interop_write writes and tests/interop/test_attrs.py checks. */
static int model_attrs(named *out)
{
    static char longstr[256];
    int n = 0;

    memset(longstr, 'x', 255);
    longstr[255] = '\0';
#define ADD(o, k, val) out[n++] = (named){o, k, val}
    ADD("/", "family", str_attr("logistic"));
    ADD("/", "iterations", i64_attr(12));
    ADD("/", "converged", i64_attr(1));
    ADD("/", "objective", f64_attr(0.31));
    ADD("/", "lambda", f64_attr(0.1));
    ADD("/", "one", f64_attr(1.0));
    ADD("/", "negzero", f64_attr(-0.0));
    ADD("/", "nan", f64_attr(NAN));
    ADD("/", "inf", f64_attr(INFINITY));
    ADD("/", "ninf", f64_attr(-INFINITY));
    ADD("/", "tiny", f64_attr(5e-324));
    ADD("/", "huge", f64_attr(1e300));
    ADD("/", "third", f64_attr(1.0 / 3.0));
    ADD("/", "imax", i64_attr(INT64_MAX));
    ADD("/", "imin", i64_attr(INT64_MIN));
    ADD("/", "empty", str_attr(""));
    ADD("/", "utf8", str_attr("na\xc3\xafve \xe2\x80\x94 \xc3\xbc"));
    ADD("/", "quote", str_attr("a \"b\" \\c\td\n"));
    ADD("/", "long", str_attr(longstr));
    ADD("/coef", "units", str_attr("log-odds"));
    ADD("/coef", "index", i64_attr(-3));
#undef ADD
    return n;
}

static void write_model(const char *path, ck_store_kind kind)
{
    named m[32];
    int n = model_attrs(m);
    ck_store *s = new_store(path, kind);

    for (int i = 0; i < n; i++)
        set_ok(s, m[i].obj, m[i].key, m[i].v);
    commit_close(s);
}

static void check_model(ck_store *s)
{
    named m[32];
    int n = model_attrs(m);

    for (int i = 0; i < n; i++)
        expect_get(s, m[i].obj, m[i].key, m[i].v);
}

ParameterizedTestParameters(attrs, round_trip)
{
    static ck_store_kind kinds[] = {CK_KIND_HDF5, CK_KIND_ZARR};
    return cr_make_param_array(ck_store_kind, kinds, 2);
}

/* Each kind of value, on the root and on an array, read back while the
 * store is being written and after commit and reopening. */
ParameterizedTest(ck_store_kind *kind, attrs, round_trip)
{
    const char *path = store_path(*kind, "model");
    named m[32];
    int n = model_attrs(m);
    ck_store *s = new_store(path, *kind);

    for (int i = 0; i < n; i++)
        set_ok(s, m[i].obj, m[i].key, m[i].v);
    check_model(s);
    commit_close(s);
    s = open_ok(path);
    cr_assert_eq(ck_store_kind_of(s), *kind, "%s", kind_name(*kind));
    check_model(s);
    ck_store_close(s);
    if (*kind == CK_KIND_ZARR) {
        /* zarr-python 2 decodes .zattrs as ASCII. */
        char *t = slurp(at("model.zarr/.zattrs"));
        for (const char *p = t; *p; p++)
            cr_assert((unsigned char)*p < 0x80, "byte %d: %s", (int)(p - t), t);
        cr_assert(strstr(t, "\"utf8\": \"na\\u00efve \\u2014 \\u00fc\""), "%s",
                  t);
        cr_assert(strstr(t, "\"quote\": \"a \\\"b\\\" \\\\c\\td\\n\""), "%s",
                  t);
        cr_assert(strstr(t, "\"tiny\": 5e-324,"), "%s", t);
        cr_assert(strstr(t, "\"one\": 1.0,"), "%s", t);
        cr_assert(strstr(t, "\"negzero\": -0.0,"), "%s", t);
        free(t);
    }
}

ParameterizedTestParameters(attrs, update)
{
    static ck_store_kind kinds[] = {CK_KIND_HDF5, CK_KIND_ZARR};
    return cr_make_param_array(ck_store_kind, kinds, 2);
}

/* Setting a key again replaces its value, also with another kind; the
 * other keys stay. */
ParameterizedTest(ck_store_kind *kind, attrs, update)
{
    const char *path = store_path(*kind, "upd");
    ck_store *s = new_store(path, *kind);

    set_ok(s, "/", "family", str_attr("gaussian"));
    set_ok(s, "/", "iterations", i64_attr(3));
    set_ok(s, "/", "objective", f64_attr(2.0));
    set_ok(s, "/coef", "units", str_attr("raw"));
    set_ok(s, "/", "family", str_attr("logistic"));
    set_ok(s, "/", "iterations", f64_attr(12.5));
    set_ok(s, "/", "objective", str_attr("none"));
    expect_get(s, "/", "family", str_attr("logistic"));
    commit_close(s);

    s = open_ok(path);
    expect_get(s, "/", "family", str_attr("logistic"));
    expect_get(s, "/", "iterations", f64_attr(12.5));
    expect_get(s, "/", "objective", str_attr("none"));
    expect_get(s, "/coef", "units", str_attr("raw"));
    ck_store_close(s);
    if (*kind == CK_KIND_ZARR) {
        char *t = slurp(at("upd.zarr/.zattrs"));
        cr_assert_eq(count_of(t, "\"family\""), 1, "%s", t);
        cr_assert_eq(count_of(t, "\"iterations\": 12.5"), 1, "%s", t);
        free(t);
    }
}

ParameterizedTestParameters(attrs, missing)
{
    static ck_store_kind kinds[] = {CK_KIND_HDF5, CK_KIND_ZARR};
    return cr_make_param_array(ck_store_kind, kinds, 2);
}

/* An absent key says which object lacks it, whether the object has other
 * attributes or none at all; an absent object is named too. */
ParameterizedTest(ck_store_kind *kind, attrs, missing)
{
    const char *path = store_path(*kind, "miss");
    char want[1024];
    ck_store *s = new_store(path, *kind);

    set_ok(s, "/", "family", str_attr("logistic"));
    set_fails(s, "/nope", "k", i64_attr(1), CK_EFORMAT, "'/nope'");
    get_fails(s, "/", "lambda", CK_EFORMAT, NULL, "no attribute 'lambda'");
    commit_close(s);

    s = open_ok(path);
    snprintf(want, sizeof want, "%s:/: no attribute 'lambda'", path);
    get_fails(s, "/", "lambda", CK_EFORMAT, want, NULL);
    snprintf(want, sizeof want, "%s:/coef: no attribute 'units'", path);
    get_fails(s, "/coef", "units", CK_EFORMAT, want, NULL);
    get_fails(s, "/nope", "units", CK_EFORMAT, NULL, "'/nope'");
    ck_store_close(s);
}

ParameterizedTestParameters(attrs, names)
{
    static ck_store_kind kinds[] = {CK_KIND_HDF5, CK_KIND_ZARR};
    return cr_make_param_array(ck_store_kind, kinds, 2);
}

/* "" and NULL are the root; a name without its leading '/' or with a
 * trailing one is the same object. */
ParameterizedTest(ck_store_kind *kind, attrs, names)
{
    const char *path = store_path(*kind, "names");
    ck_store *s = new_store(path, *kind);

    set_ok(s, "", "a", i64_attr(1));
    set_ok(s, "coef", "b", i64_attr(2));
    set_ok(s, "/coef/", "c", i64_attr(3));
    commit_close(s);
    s = open_ok(path);
    expect_get(s, "/", "a", i64_attr(1));
    expect_get(s, NULL, "a", i64_attr(1));
    expect_get(s, "/coef", "b", i64_attr(2));
    expect_get(s, "coef/", "c", i64_attr(3));
    ck_store_close(s);
}

ParameterizedTestParameters(attrs, refused)
{
    static ck_store_kind kinds[] = {CK_KIND_HDF5, CK_KIND_ZARR};
    return cr_make_param_array(ck_store_kind, kinds, 2);
}

/* What set_attr refuses before touching the store. */
ParameterizedTest(ck_store_kind *kind, attrs, refused)
{
    const char *path = store_path(*kind, "ref");
    ck_store *s = new_store(path, *kind);
    ck_attr v = str_attr("ok"), bad;
    ck_err err = {0};

    set_fails(s, "/", "", v, CK_EUSAGE, "attribute name empty");
    set_fails(s, "/", "\xff", v, CK_EUSAGE, "not UTF-8");
    get_fails(s, "/", "", CK_EUSAGE, NULL, "attribute name empty");
    bad = str_attr("");
    memset(bad.str, 'x', sizeof bad.str); /* no NUL */
    set_fails(s, "/", "k", bad, CK_EUSAGE, "longer than 255 bytes");
    set_fails(s, "/", "k", str_attr("caf\xc3"), CK_EUSAGE, "not UTF-8");
    set_fails(s, "/", "k", str_attr("\xc0\xaf"), CK_EUSAGE, "not UTF-8");
    set_fails(s, "/", "k", str_attr("\xed\xa0\x80"), CK_EUSAGE, "not UTF-8");
    set_fails(s, "/", "k", str_attr("\xf4\x90\x80\x80"), CK_EUSAGE,
              "not UTF-8");
    bad = i64_attr(0);
    bad.kind = (ck_attr_kind)7;
    set_fails(s, "/", "k", bad, CK_EUSAGE, "unknown kind 7");
    set_ok(s, "/", "k", v);
    cr_assert_eq(ck_store_commit(s, &err), CK_OK, "%s", err.msg);
    set_fails(s, "/", "k", v, CK_EUSAGE, "after commit");
    get_fails(s, "/", "k", CK_EUSAGE, NULL, "after commit");
    ck_store_close(s);

    s = open_ok(path);
    set_fails(s, "/", "k", v, CK_EUSAGE, "opened read-only");
    expect_get(s, "/", "k", str_attr("ok"));
    ck_store_close(s);
}

/* ---- what other writers write ---- */

/* The bytes zarr-python 2 writes for these attributes (json.dumps with
 * indent=4, sort_keys=True: NaN and -Infinity bare), plus a duplicate key
 * and values that are no ck_attr. */
static const char zattrs_py[] =
    "{\n"
    "    \"a_float\": 1.0,\n"
    "    \"b_nan\": NaN,\n"
    "    \"c_ninf\": -Infinity,\n"
    "    \"d_big\": 9223372036854775807,\n"
    "    \"e_true\": true,\n"
    "    \"f_false\": false,\n"
    "    \"g_str\": \"caf\\u00e9 \\\"q\\\" \\ud83d\\ude00\",\n"
    "    \"h_list\": [\n"
    "        1,\n"
    "        2.5\n"
    "    ],\n"
    "    \"i_huge\": 18446744073709551616,\n"
    "    \"j_null\": null,\n"
    "    \"k_exp\": 1e-07,\n"
    "    \"l_obj\": {\n"
    "        \"x\": \"}\"\n"
    "    },\n"
    "    \"m_neg\": -9223372036854775808,\n"
    "    \"dup\": 1,\n"
    "    \"dup\": \"last\",\n"
    "    \"esc\\u0061ped\": 4\n"
    "}\n";

static void check_zattrs_py(ck_store *s)
{
    expect_get(s, "/", "a_float", f64_attr(1.0));
    expect_get(s, "/", "b_nan", f64_attr(NAN));
    expect_get(s, "/", "c_ninf", f64_attr(-INFINITY));
    expect_get(s, "/", "d_big", i64_attr(INT64_MAX));
    expect_get(s, "/", "e_true", i64_attr(1));
    expect_get(s, "/", "f_false", i64_attr(0));
    expect_get(s, "/", "g_str", str_attr("caf\xc3\xa9 \"q\" \xf0\x9f\x98\x80"));
    expect_get(s, "/", "k_exp", f64_attr(1e-7));
    expect_get(s, "/", "m_neg", i64_attr(INT64_MIN));
    expect_get(s, "/", "dup", str_attr("last"));
    expect_get(s, "/", "escaped", i64_attr(4));
    get_fails(s, "/", "h_list", CK_ENOTSUP, NULL, "'h_list': an array");
    get_fails(s, "/", "i_huge", CK_ENOTSUP, NULL,
              "18446744073709551616 does not fit int64");
    get_fails(s, "/", "j_null", CK_ENOTSUP, NULL, "'j_null': null");
    get_fails(s, "/", "l_obj", CK_ENOTSUP, NULL, "'l_obj': an object");
}

/* The exchange text (io/attrs_json.h): numbers and bare words come back
 * exactly as written wherever they sit, words inside strings stay text,
 * and ck_attrs_number reads each as Python's json module does. */
Test(attrs, exchange_text_keeps_numbers_as_written)
{
    static const char in[] =
        "{\"a\": [NaN, -Infinity, 1.0, 9007199254740993, -0, 1e-3],"
        " \"s\": \"NaN \\\" Infinity\", \"o\": {\"u\": 18446744073709551615,"
        " \"t\": true, \"n\": null, \"x\": 18446744073709551616}}";
    cJSON *o = ck_attrs_parse(in, strlen(in));
    char *out;
    ck_attrs_num n;

    cr_assert_not_null(o);
    out = cJSON_PrintUnformatted(o);
    cr_assert_str_eq(out, "{\"a\":[NaN,-Infinity,1.0,9007199254740993,-0,"
                          "1e-3],\"s\":\"NaN \\\" Infinity\",\"o\":{\"u\":"
                          "18446744073709551615,\"t\":true,\"n\":null,"
                          "\"x\":18446744073709551616}}");
    free(out);
    const cJSON *a = cJSON_GetObjectItem(o, "a");
    cr_assert(ck_attrs_number(cJSON_GetArrayItem(a, 0), &n) && isnan(n.f));
    cr_assert(ck_attrs_number(cJSON_GetArrayItem(a, 1), &n) &&
              n.f == -INFINITY && !n.integer);
    cr_assert(ck_attrs_number(cJSON_GetArrayItem(a, 2), &n) && n.f == 1.0 &&
              !n.integer);
    cr_assert(ck_attrs_number(cJSON_GetArrayItem(a, 3), &n) && n.integer &&
              n.fits && !n.neg && n.mag == 9007199254740993u);
    cr_assert(ck_attrs_number(cJSON_GetArrayItem(a, 4), &n) && n.integer &&
              !n.neg && n.mag == 0);
    const cJSON *u = cJSON_GetObjectItem(o, "o");
    cr_assert(ck_attrs_number(cJSON_GetObjectItem(u, "u"), &n) && n.fits &&
              n.mag == UINT64_MAX);
    cr_assert(ck_attrs_number(cJSON_GetObjectItem(u, "x"), &n) && n.integer &&
              !n.fits);
    cr_assert_not(ck_attrs_number(cJSON_GetObjectItem(u, "t"), &n));
    cr_assert(cJSON_IsString(cJSON_GetObjectItem(o, "s")));
    cJSON_Delete(o);
    cr_assert_null(ck_attrs_parse("{\"a\": nan}", strlen("{\"a\": nan}")));
    cr_assert_null(ck_attrs_parse("{\"a\": NaNa}", strlen("{\"a\": NaNa}")));
    cr_assert_null(ck_attrs_parse("{\"a\": [1,", strlen("{\"a\": [1,")));
}

/* netCDF's attributes are lists; one of one number (as chunkctl and
 * netCDF4-python write scale_factor to .zattrs) reads as that number. */
Test(attrs, zarr_one_element_lists_are_numbers)
{
    ck_store *s;

    cr_assert_eq(mkdir(at("one.zarr"), 0777), 0);
    put_text(at("one.zarr/.zgroup"), "{\"zarr_format\": 2}\n");
    put_text(at("one.zarr/.zattrs"),
             "{\"scale\": [0.5], \"n\": [ 7 ], \"e\": [1e3], "
             "\"two\": [1, 2], \"s\": [\"a\"]}\n");
    s = open_ok(at("one.zarr"));
    expect_get(s, "/", "scale", f64_attr(0.5));
    expect_get(s, "/", "n", i64_attr(7));
    expect_get(s, "/", "e", f64_attr(1000.0));
    get_fails(s, "/", "two", CK_ENOTSUP, NULL, "'two': an array");
    get_fails(s, "/", "s", CK_ENOTSUP, NULL, "'s': an array");
    ck_store_close(s);
}

Test(attrs, zarr_reads_zarr_python)
{
    char longer[600];
    ck_store *s;

    cr_assert_eq(mkdir(at("py.zarr"), 0777), 0);
    put_text(at("py.zarr/.zgroup"), "{\n    \"zarr_format\": 2\n}\n");
    put_text(at("py.zarr/.zattrs"), zattrs_py);
    s = open_ok(at("py.zarr"));
    check_zattrs_py(s);
    ck_store_close(s);

    /* 256 bytes is one too many; not JSON is an error naming the file. */
    memset(longer, 0, sizeof longer);
    snprintf(longer, sizeof longer, "{\"s\": \"%0256d\", \"t\": [}", 0);
    put_text(at("py.zarr/.zattrs"), longer);
    s = open_ok(at("py.zarr"));
    get_fails(s, "/", "s", CK_EFORMAT, NULL, "py.zarr/.zattrs: invalid JSON");
    ck_store_close(s);
    snprintf(longer, sizeof longer, "{\"s\": \"%0256d\"}", 0);
    put_text(at("py.zarr/.zattrs"), longer);
    s = open_ok(at("py.zarr"));
    get_fails(s, "/", "s", CK_ENOTSUP, NULL,
              "string of 256 bytes (at most 255)");
    ck_store_close(s);
}

/* Setting one member of a .zattrs written by zarr-python keeps the others
 * as written: bare NaN stays a float, 1.0 a float, 2^63-1 exact, nested
 * values as they were. */
Test(attrs, zarr_set_keeps_other_members)
{
    const char *path = at("keep.zarr");
    ck_store *s = new_store(path, CK_KIND_ZARR);
    char zpath[PATH_MAX + 16], *t;

    snprintf(zpath, sizeof zpath, "%s/.zattrs", s->tmp);
    put_text(zpath, zattrs_py);
    set_ok(s, "/", "z_new", i64_attr(5));
    set_ok(s, "/", "k_exp", f64_attr(2.0));
    set_ok(s, "/", "dup", str_attr("once"));
    /* "esc\u0061ped" in the file is this key too. */
    set_ok(s, "/", "escaped", str_attr("\xf0\x9f\x98\x80\x01"));
    t = slurp(zpath);
    cr_assert(strstr(t, "    \"escaped\": \"\\ud83d\\ude00\\u0001\",\n"), "%s",
              t);
    cr_assert_eq(count_of(t, "ped\""), 1, "%s", t);
    cr_assert(strstr(t, "    \"a_float\": 1.0,\n"), "%s", t);
    cr_assert(strstr(t, "    \"b_nan\": NaN,\n"), "%s", t);
    cr_assert(strstr(t, "    \"d_big\": 9223372036854775807,\n"), "%s", t);
    cr_assert(strstr(t, "\"h_list\": [\n        1,\n        2.5\n    ],"), "%s",
              t);
    cr_assert(strstr(t, "    \"k_exp\": 2.0,\n"), "%s", t);
    cr_assert(strstr(t, "    \"z_new\": 5\n}\n"), "%s", t);
    cr_assert_eq(count_of(t, "\"dup\""), 1, "%s", t);
    free(t);
    commit_close(s);

    s = open_ok(path);
    expect_get(s, "/", "z_new", i64_attr(5));
    expect_get(s, "/", "k_exp", f64_attr(2.0));
    expect_get(s, "/", "dup", str_attr("once"));
    expect_get(s, "/", "a_float", f64_attr(1.0));
    expect_get(s, "/", "b_nan", f64_attr(NAN));
    expect_get(s, "/", "d_big", i64_attr(INT64_MAX));
    expect_get(s, "/", "escaped", str_attr("\xf0\x9f\x98\x80\x01"));
    ck_store_close(s);
}

static void h5_attr(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
                    int n, const void *data)
{
    hsize_t dim = (hsize_t)n;
    hid_t space = n ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);

    cr_assert(a >= 0, "create %s", name);
    cr_assert(H5Awrite(a, mtype, data) >= 0, "write %s", name);
    H5Aclose(a);
    H5Sclose(space);
}

static hid_t fixed_str(size_t n, H5T_str_t pad, H5T_cset_t cset)
{
    hid_t t = H5Tcopy(H5T_C_S1);

    H5Tset_size(t, n);
    H5Tset_strpad(t, pad);
    H5Tset_cset(t, cset);
    return t;
}

/* What h5py and other HDF5 writers leave: fixed-length and ASCII strings,
 * narrow and unsigned integers, float32, h5py's bool enum, netCDF's
 * one-element arrays; and what is no ck_attr. */
Test(attrs, h5_reads_other_types)
{
    hid_t f =
        H5Fcreate(at("other.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t, vs, cmp;
    char longstr[300];
    const char *pv;
    float f32 = 0.5f;
    uint8_t u8 = 200;
    uint64_t u64 = UINT64_MAX, u64ok = 7;
    int16_t i16 = -300;
    int32_t two[2] = {1, 2}, one[1] = {-42};
    int8_t yes = 1;
    double d1[1] = {2.5};
    struct {
        int a;
        double b;
    } c = {1, 2.0};
    ck_store *s;

    cr_assert(f >= 0);
    t = fixed_str(16, H5T_STR_NULLTERM, H5T_CSET_ASCII);
    h5_attr(f, "fixed", t, t, 0, "logistic\0\0\0\0\0\0\0\0");
    H5Tclose(t);
    t = fixed_str(9, H5T_STR_SPACEPAD, H5T_CSET_ASCII);
    h5_attr(f, "spaced", t, t, 0, "padded   ");
    H5Tclose(t);
    t = fixed_str(8, H5T_STR_NULLPAD, H5T_CSET_ASCII);
    h5_attr(f, "full", t, t, 0, "12345678");
    H5Tclose(t);
    vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE); /* ASCII, as older writers leave it */
    pv = "ascii vlen";
    h5_attr(f, "vascii", vs, vs, 0, &pv);
    memset(longstr, 'y', sizeof longstr - 1);
    longstr[sizeof longstr - 1] = '\0';
    pv = longstr;
    h5_attr(f, "vlong", vs, vs, 0, &pv);
    H5Tclose(vs);
    h5_attr(f, "f32", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, 0, &f32);
    h5_attr(f, "u8", H5T_STD_U8LE, H5T_NATIVE_UINT8, 0, &u8);
    h5_attr(f, "i16", H5T_STD_I16BE, H5T_NATIVE_INT16, 0, &i16);
    h5_attr(f, "u64", H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &u64);
    h5_attr(f, "u64ok", H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &u64ok);
    h5_attr(f, "one", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, one);
    h5_attr(f, "d1", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, d1);
    h5_attr(f, "two", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, two);
    /* h5py's bool: an enum of int8 with FALSE 0 and TRUE 1. */
    t = H5Tenum_create(H5T_NATIVE_INT8);
    int8_t e0 = 0, e1 = 1;
    H5Tenum_insert(t, "FALSE", &e0);
    H5Tenum_insert(t, "TRUE", &e1);
    h5_attr(f, "flag", t, t, 0, &yes);
    H5Tclose(t);
    cmp = H5Tcreate(H5T_COMPOUND, sizeof c);
    H5Tinsert(cmp, "a", 0, H5T_NATIVE_INT);
    H5Tinsert(cmp, "b", sizeof(double), H5T_NATIVE_DOUBLE);
    h5_attr(f, "cmp", cmp, cmp, 0, &c);
    H5Tclose(cmp);
    H5Fclose(f);

    s = open_ok(at("other.h5"));
    expect_get(s, "/", "fixed", str_attr("logistic"));
    expect_get(s, "/", "spaced", str_attr("padded"));
    expect_get(s, "/", "full", str_attr("12345678"));
    expect_get(s, "/", "vascii", str_attr("ascii vlen"));
    expect_get(s, "/", "f32", f64_attr(0.5));
    expect_get(s, "/", "u8", i64_attr(200));
    expect_get(s, "/", "i16", i64_attr(-300));
    expect_get(s, "/", "u64ok", i64_attr(7));
    expect_get(s, "/", "one", i64_attr(-42));
    expect_get(s, "/", "d1", f64_attr(2.5));
    expect_get(s, "/", "flag", i64_attr(1));
    get_fails(s, "/", "vlong", CK_ENOTSUP, NULL,
              "string of 299 bytes (at most 255)");
    get_fails(s, "/", "u64", CK_ENOTSUP, NULL,
              "18446744073709551615 does not fit int64");
    get_fails(s, "/", "two", CK_ENOTSUP, NULL, "holds 2 values, not one");
    get_fails(s, "/", "cmp", CK_ENOTSUP, NULL, "type class compound");
    ck_store_close(s);
}

/* Strings are variable-length UTF-8 (what h5py reads as str), numbers
 * little-endian float64 and int64, all scalar: checked with the raw API. */
Test(attrs, h5_written_types)
{
    const char *path = at("types.h5");
    ck_store *s = new_store(path, CK_KIND_HDF5);
    hid_t f, a, t, sp;

    set_ok(s, "/", "s", str_attr("x"));
    set_ok(s, "/", "d", f64_attr(0.5));
    set_ok(s, "/coef", "i", i64_attr(-1));
    commit_close(s);

    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert(f >= 0);
    a = H5Aopen(f, "s", H5P_DEFAULT);
    t = H5Aget_type(a);
    sp = H5Aget_space(a);
    cr_assert_eq(H5Tget_class(t), H5T_STRING);
    cr_assert(H5Tis_variable_str(t) > 0);
    cr_assert_eq(H5Tget_cset(t), H5T_CSET_UTF8);
    cr_assert_eq(H5Sget_simple_extent_type(sp), H5S_SCALAR);
    H5Sclose(sp);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen(f, "d", H5P_DEFAULT);
    t = H5Aget_type(a);
    cr_assert(H5Tequal(t, H5T_IEEE_F64LE) > 0);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen_by_name(f, "/coef", "i", H5P_DEFAULT, H5P_DEFAULT);
    t = H5Aget_type(a);
    cr_assert(H5Tequal(t, H5T_STD_I64LE) > 0);
    H5Tclose(t);
    H5Aclose(a);
    H5Fclose(f);
}

/* ---- run by tests/interop/test_attrs.py ---- */

/* Writes ck.h5 and ck.zarr into $CK_ATTRS_OUT with model_attrs(). */
Test(attrs, interop_write)
{
    const char *out = getenv("CK_ATTRS_OUT");
    char path[1024];

    if (!out || !*out)
        cr_skip_test("CK_ATTRS_OUT not set (tests/interop/test_attrs.py "
                     "runs this)");
    snprintf(path, sizeof path, "%s/ck.h5", out);
    write_model(path, CK_KIND_HDF5);
    snprintf(path, sizeof path, "%s/ck.zarr", out);
    write_model(path, CK_KIND_ZARR);
}

/* Reads py.h5 (h5py) and py.zarr (zarr-python) from $CK_ATTRS_IN, as
 * tests/interop/test_attrs.py writes them. */
Test(attrs, interop_read)
{
    const char *in = getenv("CK_ATTRS_IN");
    static const char *const names[] = {"py.h5", "py.zarr"};
    char path[1024];

    if (!in || !*in)
        cr_skip_test("CK_ATTRS_IN not set (tests/interop/test_attrs.py "
                     "runs this)");
    for (int i = 0; i < 2; i++) {
        ck_store *s;
        snprintf(path, sizeof path, "%s/%s", in, names[i]);
        s = open_ok(path);
        expect_get(s, "/", "family", str_attr("logistic"));
        expect_get(s, "/", "iterations", i64_attr(12));
        expect_get(s, "/", "converged", i64_attr(1)); /* Python True */
        expect_get(s, "/", "objective", f64_attr(0.31));
        expect_get(s, "/", "lambda", f64_attr(0.1));
        expect_get(s, "/", "one", f64_attr(1.0));
        expect_get(s, "/", "nan", f64_attr(NAN));
        expect_get(s, "/", "ninf", f64_attr(-INFINITY));
        expect_get(s, "/", "imin", i64_attr(INT64_MIN));
        expect_get(s, "/", "utf8",
                   str_attr("na\xc3\xafve \xe2\x80\x94 \xc3\xbc"));
        expect_get(s, "/coef", "units", str_attr("log-odds"));
        expect_get(s, "/coef", "index", i64_attr(-3));
        if (i == 0) {
            /* NumPy scalars and bytes, as h5py stores them. */
            expect_get(s, "/", "f32", f64_attr(0.5));
            expect_get(s, "/", "u8", i64_attr(200));
            expect_get(s, "/", "ascii", str_attr("bytes"));
            expect_get(s, "/", "vascii", str_attr("vbytes"));
        }
        ck_store_close(s);
    }
}
