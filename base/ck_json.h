/*
 * base/ck_json.h - the nesting limit on JSON text that chunkctl reads
 * (.zarray, .zattrs, .zgroup, zarr.json, pipelines).  cJSON parses
 * recursively and stops at its own CJSON_NESTING_LIMIT with no word of
 * why; this scan, run on the text before cJSON sees it, refuses deeper
 * text with a message that names the limit.  Linear, no recursion, no
 * allocation: `[[[[...` 10^5 deep costs one pass over the bytes.
 */
#ifndef CK_JSON_H
#define CK_JSON_H

#include <stddef.h>

/* Deepest nesting of arrays and objects accepted (below cJSON's 1000, so
 * the scan, not cJSON, is what refuses; see LIMITS in chunkctl(1)). */
#define CK_JSON_DEPTH_MAX 512

/* Offset of the '[' or '{' (outside strings) that opens nesting level
 * CK_JSON_DEPTH_MAX + 1 in text[0, len), or (size_t)-1 when there is none.
 * Stops at a NUL byte, as cJSON does. */
static inline size_t ck_json_too_deep(const char *t, size_t len)
{
    size_t depth = 0;

    for (size_t i = 0; i < len && t[i]; i++) {
        char c = t[i];
        if (c == '"') {
            for (i++; i < len && t[i] && t[i] != '"'; i++)
                if (t[i] == '\\' && i + 1 < len)
                    i++;
            if (i >= len || !t[i])
                break;
        } else if (c == '[' || c == '{') {
            if (++depth > CK_JSON_DEPTH_MAX)
                return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return (size_t)-1;
}

/* 1-based line and column of byte off in t. */
static inline void ck_json_pos(const char *t, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (t[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

#endif
