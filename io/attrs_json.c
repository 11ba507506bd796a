/*
 * io/attrs_json.c - attribute text with its numbers kept as written (see
 * io/attrs_json.h).  One scan outside strings finds every number and bare
 * word in order and hands cJSON a copy with the words replaced by 0; the
 * numbers of the tree cJSON builds, visited in document order, are the
 * same tokens in the same order, and each becomes a raw item of its text.
 */
#include "io/attrs_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static const char *const words[] = {"-Infinity", "Infinity", "NaN"};

/* Length of the bare word at t[i] (0 if none). */
static size_t word_at(const char *t, size_t len, size_t i)
{
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        size_t n = strlen(words[k]);
        if (len - i >= n && memcmp(t + i, words[k], n) == 0)
            return n;
    }
    return 0;
}

static int num_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' ||
           c == 'e' || c == 'E';
}

/* The index just past the string that opens at t[i]. */
static size_t past_string(const char *t, size_t len, size_t i)
{
    for (i++; i < len && t[i] != '"'; i += t[i] == '\\' ? 2 : 1)
        ;
    return i < len ? i + 1 : len;
}

typedef struct token {
    size_t at, len;
} token;

/* Copies t into out (room for 2 len + 1), each word replaced by rep(word)
 * (NULL: kept); the numbers' and words' places go to tok when not NULL
 * (room for len).  Returns the length written. */
static size_t rewrite(const char *t, size_t len, char *out, int quote,
                      token *tok, size_t *ntok)
{
    size_t i = 0, o = 0, n = 0;

    while (i < len && t[i]) {
        size_t w;
        if (t[i] == '"') {
            size_t e = past_string(t, len, i);
            memcpy(out + o, t + i, e - i);
            o += e - i;
            i = e;
        } else if ((w = word_at(t, len, i)) != 0) {
            if (tok)
                tok[n++] = (token){i, w};
            if (quote) {
                out[o++] = '"';
                memcpy(out + o, t + i, w);
                o += w;
                out[o++] = '"';
            } else {
                out[o++] = '0';
            }
            i += w;
        } else if (t[i] == '-' || (t[i] >= '0' && t[i] <= '9')) {
            size_t s = i;
            while (i < len && num_char(t[i]))
                i++;
            if (tok)
                tok[n++] = (token){s, i - s};
            memcpy(out + o, t + s, i - s);
            o += i - s;
        } else {
            out[o++] = t[i++];
        }
    }
    out[o] = '\0';
    if (ntok)
        *ntok = n;
    return o;
}

char *ck_attrs_quote_words(const char *text, size_t len)
{
    char *out = malloc(2 * len + 1);

    if (out)
        rewrite(text, len, out, 1, NULL, NULL);
    return out;
}

/* Turns the numbers under v, in document order, into raw items of the
 * tokens' text.  0 when the tokens run out or memory does. */
static int mark(cJSON *v, const char *t, const token *tok, size_t ntok,
                size_t *k)
{
    for (; v; v = v->next) {
        if (cJSON_IsNumber(v)) {
            char *s;
            if (*k >= ntok || !(s = malloc(tok[*k].len + 1)))
                return 0;
            memcpy(s, t + tok[*k].at, tok[*k].len);
            s[tok[*k].len] = '\0';
            ++*k;
            v->type = cJSON_Raw;
            v->valuestring = s;
        } else if (v->child && !mark(v->child, t, tok, ntok, k)) {
            return 0;
        }
    }
    return 1;
}

cJSON *ck_attrs_parse(const char *text, size_t len)
{
    char *copy = malloc(2 * len + 1);
    token *tok = malloc((len ? len : 1) * sizeof *tok);
    cJSON *root = NULL;
    size_t ntok = 0, k = 0, n;

    if (copy && tok) {
        n = rewrite(text, len, copy, 0, tok, &ntok);
        root = cJSON_ParseWithLength(copy, n);
        if (root && (!mark(root, text, tok, ntok, &k) || k != ntok)) {
            cJSON_Delete(root);
            root = NULL;
        }
    }
    free(copy);
    free(tok);
    return root;
}

/* The length of the well-formed UTF-8 sequence at p[0, n) (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or minus the
 * length of its longest start that could begin one (at least 1 byte),
 * which Unicode's "maximal subpart" rule (and Python) turns into one
 * U+FFFD. */
static long utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0], lo = 0x80, hi = 0xbf;
    size_t k, i;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        k = 2;
    else if (c >= 0xe0 && c <= 0xef)
        k = 3, lo = c == 0xe0 ? 0xa0 : lo, hi = c == 0xed ? 0x9f : hi;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 4, lo = c == 0xf0 ? 0x90 : lo, hi = c == 0xf4 ? 0x8f : hi;
    else
        return -1;
    for (i = 1; i < k && i < n; i++)
        if (i == 1 ? p[1] < lo || p[1] > hi : (p[i] & 0xc0) != 0x80)
            break;
    return i == k ? (long)k : -(long)i;
}

char *ck_attrs_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out, *o;

    n = strnlen(s, n);
    if (!(out = malloc(3 * n + 1)))
        return NULL;
    o = out;
    for (size_t i = 0; i < n;) {
        long k = utf8_len(p + i, n - i);
        if (k > 0) {
            memcpy(o, p + i, (size_t)k);
            o += k;
            i += (size_t)k;
        } else {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            i += (size_t)-k;
        }
    }
    *o = '\0';
    return out;
}

int ck_attrs_number(const cJSON *v, ck_attrs_num *n)
{
    const char *s, *p;

    memset(n, 0, sizeof *n);
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        n->f = d;
        n->integer = isfinite(d) && d == floor(d) && fabs(d) < 0x1p63;
        n->fits = n->integer;
        n->neg = d < 0;
        n->mag = n->integer ? (uint64_t)fabs(d) : 0;
        return 1;
    }
    if (!cJSON_IsRaw(v) || !(s = v->valuestring) || !*s)
        return 0;
    if (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 ||
        strcmp(s, "-Infinity") == 0) {
        n->f = s[0] == 'N' ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
        return 1;
    }
    n->f = strtod(s, NULL);
    p = s + (*s == '-');
    if (p[strspn(p, "0123456789")] != '\0')
        return 1; /* a fraction or an exponent: a float */
    n->integer = 1;
    n->fits = 1;
    for (; *p; p++) {
        unsigned dgt = (unsigned)(*p - '0');
        if (n->mag > (UINT64_MAX - dgt) / 10) {
            n->fits = 0;
            break;
        }
        n->mag = n->mag * 10 + dgt;
    }
    n->neg = *s == '-' && n->mag != 0;
    if (n->neg && n->mag > (uint64_t)1 << 63)
        n->fits = 0;
    return 1;
}
