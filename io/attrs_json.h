/*
 * io/attrs_json.h - the text in which stores exchange attributes
 * (ck_store_get_attrs, ck_store_set_attrs): a JSON object as Python's
 * json module writes it, which is what zarr-python puts in .zattrs.
 * Numbers are kept as written: integers of any size, floats with a '.'
 * or an exponent, and the bare words NaN, Infinity and -Infinity, which
 * JSON lacks.  cJSON alone reads every number as a double (2^60 + 3
 * rounds, 1.0 turns into 1) and refuses the bare words, so the text is
 * read here into a cJSON tree whose numbers are cJSON_Raw items holding
 * their literal text: printed again they come out exactly as they went in,
 * and ck_attrs_number reads one as Python would.
 */
#ifndef CK_ATTRS_JSON_H
#define CK_ATTRS_JSON_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* The tree of text[0, len) (cJSON_Delete frees it), every number a
 * cJSON_Raw item; NULL when the text is not JSON with those words, or
 * when out of memory. */
struct cJSON *ck_attrs_parse(const char *text, size_t len);

/* text[0, len) with each bare NaN, Infinity and -Infinity outside strings
 * quoted ("NaN"), so that a plain JSON parser reads it (malloc'd, NUL
 * ended; NULL when out of memory). */
char *ck_attrs_quote_words(const char *text, size_t len);

/* s[0, n) (or to its NUL) as valid UTF-8 (malloc'd, NUL ended; NULL when
 * out of memory): what is not well-formed becomes U+FFFD, as Python's
 * bytes.decode("utf-8", "replace") reads it.  JSON
 * text must be UTF-8, and legacy HDF5 strings are often Latin-1 ("\xb0C"). */
char *ck_attrs_utf8(const char *s, size_t n);

/* A number as Python's json module reads it. */
typedef struct ck_attrs_num {
    int integer;  /* an integer literal (no '.', no exponent) ... */
    int fits;     /* ... within int64 or uint64: neg and mag hold it */
    int neg;      /* its sign (-0 is not negative) */
    uint64_t mag; /* its magnitude */
    double f;     /* the value as a double (NaN, +-inf for the words) */
} ck_attrs_num;

/* 1 and *n when v is a number (a raw item from ck_attrs_parse, or a
 * cJSON number), else 0. */
int ck_attrs_number(const struct cJSON *v, ck_attrs_num *n);

#endif
