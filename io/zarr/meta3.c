/*
 * io/zarr/meta3.c - parse and write zarr.json (Zarr v3 core spec, "Array
 * metadata" and "Group metadata"), with cJSON.  Maps the codecs list onto
 * a ck_z3_chain (and sharding_indexed onto the inner chain, the index
 * chain and the shard shape); numcodecs configs and fill values are read
 * as for v2 (io/zarr/meta.c).  Only the metadata text: chunk files and
 * shards are io/zarr/zarr.c's, the codecs' bytes io/zarr/chain3.c's.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/zarr/meta.h"
#include "io/zarr/meta_impl.h"

#define HOST_BIG_ENDIAN (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)

static const struct {
    const char *name;
    ck_dtype t;
} dtypes[] = {
    {"bool", CK_BOOL},   {"int8", CK_I8},     {"int16", CK_I16},
    {"int32", CK_I32},   {"int64", CK_I64},   {"uint8", CK_U8},
    {"uint16", CK_U16},  {"uint32", CK_U32},  {"uint64", CK_U64},
    {"float32", CK_F32}, {"float64", CK_F64},
};

static const char *dtype3_name(ck_dtype t)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].t == t)
            return dtypes[i].name;
    return NULL;
}

ck_code ck_zarr3_node_kind(const char *text, size_t len, const char *where,
                           int *is_array, ck_err *err)
{
    cJSON *root = NULL;
    const cJSON *f, *nt;
    ck_code rc = CK_OK;

    CK_TRY(ck_zarr_parse_json(text, len, where, &root, err));
    f = cJSON_GetObjectItemCaseSensitive(root, "zarr_format");
    nt = cJSON_GetObjectItemCaseSensitive(root, "node_type");
    if (!cJSON_IsObject(root))
        rc = ck_err_set(err, CK_EFORMAT, "%s: not a JSON object", where);
    else if (!cJSON_IsNumber(f) || f->valuedouble != 3)
        rc = ck_err_set(err, CK_EFORMAT, "%s: zarr_format is not 3", where);
    else if (!cJSON_IsString(nt))
        rc = ck_err_set(err, CK_EFORMAT, "%s: missing string 'node_type'",
                        where);
    else if (strcmp(nt->valuestring, "array") == 0)
        *is_array = 1;
    else if (strcmp(nt->valuestring, "group") == 0)
        *is_array = 0;
    else
        rc = ck_err_set(err, CK_EFORMAT,
                        "%s: node_type '%.40s' is neither \"array\" nor "
                        "\"group\"",
                        where, nt->valuestring);
    cJSON_Delete(root);
    return rc;
}

/* ---- codecs ------------------------------------------------------------- */

/* The name and configuration of one codec entry ({"name", "configuration"}
 * or, as the spec allows, a bare name string). */
static ck_code codec_entry(const cJSON *e, const char *where, int k,
                           const char **name, const cJSON **cfg, ck_err *err)
{
    const cJSON *n;

    *cfg = NULL;
    if (cJSON_IsString(e)) {
        *name = e->valuestring;
        return CK_OK;
    }
    n = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (!cJSON_IsObject(e) || !cJSON_IsString(n))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: codecs[%d] has no string 'name'", where, k);
    *name = n->valuestring;
    *cfg = cJSON_GetObjectItemCaseSensitive(e, "configuration");
    if (*cfg && !cJSON_IsObject(*cfg))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: codecs[%d] (%.40s): 'configuration' is not an "
                          "object",
                          where, k, *name);
    return CK_OK;
}

static int cfg_int(const cJSON *cfg, const char *key, double lo, double hi,
                   int *out)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);

    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble) ||
        j->valuedouble < lo || j->valuedouble > hi)
        return 0;
    *out = (int)j->valuedouble;
    return 1;
}

static ck_code parse_transpose(const cJSON *cfg, int ndim, const char *where,
                               int k, ck_z3_chain *c, ck_err *err)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(cfg, "order"), *v;
    int order[CK_MAX_DIMS], seen[CK_MAX_DIMS] = {0}, n = 0;

    if (cJSON_IsString(o) && (strcmp(o->valuestring, "C") == 0 ||
                              strcmp(o->valuestring, "F") == 0)) {
        /* Early drafts of the spec: "C" keeps the axes, "F" reverses. */
        for (int d = 0; d < ndim; d++)
            order[d] = o->valuestring[0] == 'C' ? d : ndim - 1 - d;
        n = ndim;
    } else if (cJSON_IsArray(o)) {
        cJSON_ArrayForEach(v, o)
        {
            double x = v->valuedouble;
            if (n >= ndim || !cJSON_IsNumber(v) || x != floor(x) || x < 0 ||
                x >= ndim || seen[(int)x]++)
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: codecs[%d] (transpose): 'order' is not "
                                  "a permutation of %d axes",
                                  where, k, ndim);
            order[n++] = (int)x;
        }
    }
    if (n != ndim)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: codecs[%d] (transpose): 'order' is not a "
                          "permutation of %d axes",
                          where, k, ndim);
    /* Transposing by p1 then by p2 is transposing by p1[p2[i]]. */
    int comp[CK_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        comp[i] = c->has_perm ? c->perm[order[i]] : order[i];
    memcpy(c->perm, comp, sizeof(int) * (size_t)ndim);
    c->has_perm = 1;
    for (int i = 0; i < ndim; i++)
        if (c->perm[i] != i)
            return CK_OK;
    c->has_perm = 0; /* the identity */
    return CK_OK;
}

/* A compressor: its v3 config (or a numcodecs one) read as numcodecs'. */
static ck_code parse_compress(const char *name, const cJSON *cfg,
                              ck_dtype dtype, const char *where, int k,
                              ck_z3_chain *c, ck_err *err)
{
    char what[700];
    ck_zarr_meta tmp;
    cJSON *o = NULL;
    ck_code rc = CK_OK;
    int level = 0;

    snprintf(what, sizeof what, "%s: codecs[%d] (%s)", where, k, name);
    if (c->codec.id != CK_CODEC_NONE)
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: a second compressor in one chain is not "
                          "supported",
                          what);
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = dtype;
    if (strcmp(name, "gzip") == 0) {
        if (!cfg_int(cfg, "level", 0, 9, &level))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: 'level' is not an integer in 0..9", what);
        c->codec.id = CK_CODEC_GZIP;
        c->codec.level = level;
    } else if (strcmp(name, "zstd") == 0) {
        const cJSON *ck = cJSON_GetObjectItemCaseSensitive(cfg, "checksum");
        if (!cfg_int(cfg, "level", -131072, 22, &level))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: 'level' is not an integer in -131072..22",
                              what);
        if (ck && !cJSON_IsBool(ck))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: 'checksum' is not true or false", what);
        c->codec.id = CK_CODEC_ZSTD;
        c->codec.level = level;
        c->codec.checksum = cJSON_IsTrue(ck);
    } else if (strcmp(name, "blosc") == 0) {
        static const char *const shuf[] = {"noshuffle", "shuffle",
                                           "bitshuffle"};
        const cJSON *cn = cJSON_GetObjectItemCaseSensitive(cfg, "cname");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(cfg, "shuffle");
        int s = -1, bs = 0, ts = 0;
        if (!cfg_int(cfg, "clevel", 0, 9, &level))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: 'clevel' is not an integer in 0..9", what);
        for (int i = 0; cJSON_IsString(sh) && i < 3; i++)
            if (strcmp(sh->valuestring, shuf[i]) == 0)
                s = i;
        if (s < 0)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: 'shuffle' is not \"noshuffle\", "
                              "\"shuffle\" or \"bitshuffle\"",
                              what);
        if (!cJSON_IsString(cn))
            return ck_err_set(err, CK_EFORMAT, "%s: missing string 'cname'",
                              what);
        if (cJSON_GetObjectItemCaseSensitive(cfg, "blocksize") &&
            !cfg_int(cfg, "blocksize", 0, 2147483647.0, &bs))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: 'blocksize' is not an integer >= 0", what);
        if (cJSON_GetObjectItemCaseSensitive(cfg, "typesize") &&
            !cfg_int(cfg, "typesize", 1, 255, &ts))
            return ck_err_set(err, CK_EFORMAT,
                              "%s: 'typesize' is not an integer in 1..255",
                              what);
        if (!(o = cJSON_CreateObject()) ||
            !cJSON_AddStringToObject(o, "id", "blosc") ||
            !cJSON_AddStringToObject(o, "cname", cn->valuestring) ||
            !cJSON_AddNumberToObject(o, "clevel", level) ||
            !cJSON_AddNumberToObject(o, "shuffle", s))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        if (rc == CK_OK)
            rc = ck_zarr_parse_compressor(o, what, &tmp, err);
        cJSON_Delete(o);
        CK_TRY(rc);
        c->codec = tmp.codec;
    } else {
        /* numcodecs.NAME: numcodecs' own config with the id added. */
        if (!(o = cfg ? cJSON_Duplicate(cfg, 1) : cJSON_CreateObject()))
            return ck_err_set(err, CK_ENOMEM, "out of memory");
        cJSON_DeleteItemFromObjectCaseSensitive(o, "id");
        if (!cJSON_AddStringToObject(o, "id", name + strlen("numcodecs.")))
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        if (rc == CK_OK)
            rc = ck_zarr_parse_compressor(o, what, &tmp, err);
        cJSON_Delete(o);
        CK_TRY(rc);
        c->codec = tmp.codec;
    }
    c->bb[c->nbb++] = CK_Z3_COMPRESS;
    return CK_OK;
}

static int is_numcodecs_compressor(const char *name)
{
    static const char *const ids[] = {"zlib", "gzip", "zstd", "blosc",
                                      "lz4",  "lzma", "bz2"};
    if (strncmp(name, "numcodecs.", 10) != 0)
        return 0;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (strcmp(name + 10, ids[i]) == 0)
            return 1;
    return 0;
}

typedef struct shard_cfg {
    int present;
    const cJSON *cfg;
    int k;
} shard_cfg;

/* One codecs list into c.  sh (NULL inside a shard) gets a
 * sharding_indexed codec, which must then be the only codec. */
static ck_code parse_chain(const cJSON *list, const char *key, int ndim,
                           ck_dtype dtype, const char *where, ck_z3_chain *c,
                           shard_cfg *sh, ck_err *err)
{
    const cJSON *e;
    int k = 0, phase = 0; /* 0: array to array, 1: bytes to bytes */
    size_t esize = ck_dtype_size(dtype);

    memset(c, 0, sizeof *c);
    if (!list)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key '%s'", where, key);
    if (!cJSON_IsArray(list))
        return ck_err_set(err, CK_EFORMAT, "%s: '%s' is not a list", where,
                          key);
    cJSON_ArrayForEach(e, list)
    {
        const char *name = "";
        const cJSON *cfg;
        CK_TRY(codec_entry(e, where, k, &name, &cfg, err));
        if (strcmp(name, "transpose") == 0) {
            if (phase)
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: codecs[%d]: transpose after the "
                                  "array-to-bytes codec",
                                  where, k);
            CK_TRY(parse_transpose(cfg, ndim, where, k, c, err));
        } else if (strcmp(name, "bytes") == 0) {
            const cJSON *en = cJSON_GetObjectItemCaseSensitive(cfg, "endian");
            if (phase)
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: codecs[%d]: a second array-to-bytes "
                                  "codec",
                                  where, k);
            if (en && !(cJSON_IsString(en) &&
                        (strcmp(en->valuestring, "little") == 0 ||
                         strcmp(en->valuestring, "big") == 0)))
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: codecs[%d] (bytes): 'endian' is not "
                                  "\"little\" or \"big\"",
                                  where, k);
            if (!en && esize > 1)
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: codecs[%d] (bytes): missing 'endian' "
                                  "for %zu-byte elements",
                                  where, k, esize);
            c->big_endian = en && strcmp(en->valuestring, "big") == 0;
            phase = 1;
        } else if (strcmp(name, "sharding_indexed") == 0) {
            if (!sh)
                return ck_err_set(err, CK_ENOTSUP,
                                  "%s: codecs[%d]: sharding inside a shard is "
                                  "not supported",
                                  where, k);
            if (phase || c->has_perm || k != 0 || cJSON_GetArraySize(list) != 1)
                return ck_err_set(err, CK_ENOTSUP,
                                  "%s: codecs[%d]: codecs around "
                                  "sharding_indexed are not supported (it "
                                  "must be the only codec)",
                                  where, k);
            sh->present = 1;
            sh->cfg = cfg;
            sh->k = k;
            phase = 1;
        } else if (strcmp(name, "crc32c") == 0) {
            if (!phase || c->nbb == CK_Z3_BB_MAX)
                return ck_err_set(err, CK_EFORMAT, "%s: codecs[%d]: crc32c %s",
                                  where, k,
                                  phase ? "once too often" : "before bytes");
            c->bb[c->nbb++] = CK_Z3_CRC32C;
        } else if (strcmp(name, "numcodecs.shuffle") == 0) {
            int es = (int)esize;
            if (!phase || c->nbb == CK_Z3_BB_MAX)
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: codecs[%d]: numcodecs.shuffle %s", where,
                                  k, phase ? "once too often" : "before bytes");
            if (cJSON_GetObjectItemCaseSensitive(cfg, "elementsize") &&
                !cfg_int(cfg, "elementsize", 1, 1 << 20, &es))
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: codecs[%d] (numcodecs.shuffle): "
                                  "'elementsize' is not a positive integer",
                                  where, k);
            c->elementsize[c->nbb] = es;
            c->bb[c->nbb++] = CK_Z3_SHUFFLE;
        } else if (strcmp(name, "gzip") == 0 || strcmp(name, "zstd") == 0 ||
                   strcmp(name, "blosc") == 0 ||
                   is_numcodecs_compressor(name)) {
            if (!phase || c->nbb == CK_Z3_BB_MAX)
                return ck_err_set(err, CK_EFORMAT, "%s: codecs[%d]: %s %s",
                                  where, k, name,
                                  phase ? "once too often" : "before bytes");
            CK_TRY(parse_compress(name, cfg, dtype, where, k, c, err));
        } else if (strncmp(name, "numcodecs.", 10) == 0) {
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: codecs[%d]: codec '%.60s' is not supported "
                              "in zarr v3 arrays (numcodecs compressors and "
                              "numcodecs.shuffle are)",
                              where, k, name);
        } else {
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: codecs[%d]: unknown codec '%.60s'", where, k,
                              name);
        }
        k++;
    }
    if (!phase)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: 'codecs' has no array-to-bytes codec (bytes or "
                          "sharding_indexed)",
                          where);
    return CK_OK;
}

static ck_code parse_sharding(const shard_cfg *sh, const char *where,
                              ck_zarr_meta *m, ck_err *err)
{
    char what[700];
    const cJSON *cfg = sh->cfg, *loc;
    int n = 0;

    snprintf(what, sizeof what, "%s: codecs[%d] (sharding_indexed)", where,
             sh->k);
    if (!cfg)
        return ck_err_set(err, CK_EFORMAT, "%s: missing 'configuration'", what);
    memcpy(m->shard, m->chunks, sizeof m->shard);
    CK_TRY(ck_zarr_parse_dims(cfg, "chunk_shape", 1, what, m->chunks, &n, err));
    if (n != m->ndim)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: 'chunk_shape' has %d dimensions, the array %d",
                          what, n, m->ndim);
    for (int d = 0; d < n; d++)
        if (m->shard[d] % m->chunks[d] != 0)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: the shard shape is not a multiple of "
                              "'chunk_shape' along axis %d (%lld, %lld)",
                              what, d, (long long)m->shard[d],
                              (long long)m->chunks[d]);
    CK_TRY(parse_chain(cJSON_GetObjectItemCaseSensitive(cfg, "codecs"),
                       "codecs", m->ndim, m->dtype, what, &m->chain, NULL,
                       err));
    /* The index: bytes and perhaps crc32c, so its size is known. */
    snprintf(what, sizeof what, "%s: codecs[%d] (sharding_indexed) index",
             where, sh->k);
    CK_TRY(parse_chain(cJSON_GetObjectItemCaseSensitive(cfg, "index_codecs"),
                       "index_codecs", 1, CK_U64, what, &m->index, NULL, err));
    if (m->index.has_perm || m->index.codec.id != CK_CODEC_NONE ||
        (m->index.nbb && (m->index.nbb > 1 || m->index.bb[0] != CK_Z3_CRC32C)))
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: only bytes and crc32c are supported as index "
                          "codecs",
                          what);
    loc = cJSON_GetObjectItemCaseSensitive(cfg, "index_location");
    if (loc &&
        !(cJSON_IsString(loc) && (strcmp(loc->valuestring, "start") == 0 ||
                                  strcmp(loc->valuestring, "end") == 0)))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: index_location is not \"start\" or \"end\"",
                          what);
    m->index_at_start = loc && strcmp(loc->valuestring, "start") == 0;
    m->sharded = 1;
    return CK_OK;
}

/* ---- array metadata ----------------------------------------------------- */

static ck_code parse_dtype3(const cJSON *j, const char *where, ck_zarr_meta *m,
                            ck_err *err)
{
    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key 'data_type'",
                          where);
    if (cJSON_IsString(j)) {
        for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
            if (strcmp(j->valuestring, dtypes[i].name) == 0) {
                m->dtype = dtypes[i].t;
                return CK_OK;
            }
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: data_type '%.60s' is not supported (chunkctl "
                          "reads bool, int8..uint64, float32 and float64)",
                          where, j->valuestring);
    }
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "name");
    return ck_err_set(err, CK_ENOTSUP,
                      "%s: data_type '%.60s' is not supported (chunkctl "
                      "reads bool, int8..uint64, float32 and float64)",
                      where, cJSON_IsString(n) ? n->valuestring : "(object)");
}

static ck_code parse_named(const cJSON *root, const char *key,
                           const char *where, const char **name,
                           const cJSON **cfg, ck_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key), *n;

    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key '%s'", where, key);
    if (cJSON_IsString(j)) {
        *name = j->valuestring;
        *cfg = NULL;
        return CK_OK;
    }
    n = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (!cJSON_IsString(n))
        return ck_err_set(err, CK_EFORMAT, "%s: '%s' has no string 'name'",
                          where, key);
    *name = n->valuestring;
    *cfg = cJSON_GetObjectItemCaseSensitive(j, "configuration");
    return CK_OK;
}

/* Hex fill values ("0x7fc00000"): the bits of the float, big-endian as
 * written. */
static ck_code hex_fill(const char *s, const char *where, ck_zarr_meta *m,
                        ck_err *err)
{
    size_t es = ck_dtype_size(m->dtype), n = strlen(s + 2);
    uint64_t bits = 0;

    if (!ck_dtype_is_float(m->dtype) || n != 2 * es)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: fill_value '%.40s' is not %zu hex digits of a "
                          "float",
                          where, s, 2 * es);
    for (size_t i = 0; i < n; i++) {
        char ch = s[2 + i];
        int v = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (v < 0)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: fill_value '%.40s' is not hex", where, s);
        bits = bits << 4 | (uint64_t)v;
    }
    m->has_fill = 1;
    if (es == 4) {
        uint32_t b = (uint32_t)bits;
        float f;
        memcpy(&f, &b, 4);
        m->fill.f = f;
    } else {
        memcpy(&m->fill.f, &bits, 8);
    }
    return CK_OK;
}

static ck_code parse_array3(const cJSON *root, const char *text, size_t len,
                            const char *where, ck_zarr_meta *m, ck_err *err)
{
    const char *name;
    const cJSON *cfg, *j;
    shard_cfg sh = {0, NULL, 0};
    int n = 0;

    CK_TRY(
        ck_zarr_parse_dims(root, "shape", 0, where, m->shape, &m->ndim, err));
    CK_TRY(parse_dtype3(cJSON_GetObjectItemCaseSensitive(root, "data_type"),
                        where, m, err));
    CK_TRY(parse_named(root, "chunk_grid", where, &name, &cfg, err));
    if (strcmp(name, "regular") != 0)
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: chunk_grid '%.40s' is not supported (only "
                          "regular)",
                          where, name);
    if (!cfg)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: chunk_grid has no 'configuration'", where);
    CK_TRY(
        ck_zarr_parse_dims(cfg, "chunk_shape", 1, where, m->chunks, &n, err));
    if (n != m->ndim)
        return ck_err_set(err, CK_EFORMAT,
                          "%s: 'chunk_shape' has %d dimensions, 'shape' has %d",
                          where, n, m->ndim);

    CK_TRY(parse_named(root, "chunk_key_encoding", where, &name, &cfg, err));
    j = cJSON_GetObjectItemCaseSensitive(cfg, "separator");
    if (strcmp(name, "default") == 0) {
        m->key_c = 1;
        m->dim_sep = '/';
    } else if (strcmp(name, "v2") == 0) {
        m->dim_sep = '.';
    } else {
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: chunk_key_encoding '%.40s' is not supported",
                          where, name);
    }
    if (j && !(cJSON_IsString(j) && (strcmp(j->valuestring, "/") == 0 ||
                                     strcmp(j->valuestring, ".") == 0)))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: chunk_key_encoding separator is not \"/\" or "
                          "\".\"",
                          where);
    if (j)
        m->dim_sep = j->valuestring[0];

    j = cJSON_GetObjectItemCaseSensitive(root, "fill_value");
    if (cJSON_IsNull(j))
        return ck_err_set(err, CK_EFORMAT, "%s: fill_value is null", where);
    if (cJSON_IsString(j) && strncmp(j->valuestring, "0x", 2) == 0)
        CK_TRY(hex_fill(j->valuestring, where, m, err));
    else
        CK_TRY(ck_zarr_parse_fill(j, text, len, where, m, err));

    j = cJSON_GetObjectItemCaseSensitive(root, "storage_transformers");
    if (j && !(cJSON_IsArray(j) && cJSON_GetArraySize(j) == 0))
        return ck_err_set(err, CK_ENOTSUP,
                          "%s: storage_transformers are not supported", where);

    /* The spec: a reader fails on metadata it does not know, unless the
     * field is an object that says "must_understand": false. */
    static const char *const known[] = {
        "zarr_format",    "node_type",
        "shape",          "data_type",
        "chunk_grid",     "chunk_key_encoding",
        "fill_value",     "storage_transformers",
        "codecs",         "attributes",
        "dimension_names"};
    cJSON_ArrayForEach(j, root)
    {
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] &&
               strcmp(j->string, known[k]) != 0)
            k++;
        const cJSON *mu =
            cJSON_IsObject(j)
                ? cJSON_GetObjectItemCaseSensitive(j, "must_understand")
                : NULL;
        if (k == sizeof known / sizeof known[0] && !cJSON_IsFalse(mu))
            return ck_err_set(err, CK_ENOTSUP,
                              "%s: unknown field '%.40s' (an extension "
                              "chunkctl does not know; readers may skip only "
                              "those with \"must_understand\": false)",
                              where, j->string);
    }

    j = cJSON_GetObjectItemCaseSensitive(root, "codecs");
    if (!j)
        return ck_err_set(err, CK_EFORMAT, "%s: missing key 'codecs'", where);
    CK_TRY(parse_chain(j, "codecs", m->ndim, m->dtype, where, &m->chain, &sh,
                       err));
    if (sh.present)
        CK_TRY(parse_sharding(&sh, where, m, err));
    m->codec = m->chain.codec;
    m->big_endian = m->chain.big_endian;

    j = cJSON_GetObjectItemCaseSensitive(root, "dimension_names");
    if (j && !cJSON_IsNull(j)) {
        const cJSON *v;
        int k = 0;
        if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != m->ndim)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: dimension_names is not a list of %d names",
                              where, m->ndim);
        cJSON_ArrayForEach(v, j)
        {
            if (!cJSON_IsNull(v) && !cJSON_IsString(v))
                return ck_err_set(err, CK_EFORMAT,
                                  "%s: dimension_names[%d] is neither a string "
                                  "nor null",
                                  where, k);
            snprintf(m->dim_names[k++], CK_ZARR_DIMNAME_MAX, "%s",
                     cJSON_IsString(v) ? v->valuestring : "");
        }
        m->has_dim_names = 1;
    }
    return CK_OK;
}

ck_code ck_zarr3_meta_parse(const char *text, size_t len, const char *where,
                            ck_zarr_meta *out, ck_err *err)
{
    ck_zarr_meta m;
    cJSON *root = NULL;
    int is_array = 0;
    ck_code rc;

    CK_TRY(ck_zarr3_node_kind(text, len, where, &is_array, err));
    if (!is_array)
        return ck_err_set(err, CK_EFORMAT, "%s: a group, not an array", where);
    memset(&m, 0, sizeof m);
    m.zarr_format = 3;
    m.order = 'C';
    CK_TRY(ck_zarr_parse_json(text, len, where, &root, err));
    rc = parse_array3(root, text, len, where, &m, err);
    cJSON_Delete(root);
    if (rc == CK_OK)
        *out = m;
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

static cJSON *named(const char *name, cJSON *cfg)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddStringToObject(o, "name", name) ||
        (cfg && !cJSON_AddItemToObject(o, "configuration", cfg))) {
        cJSON_Delete(o);
        cJSON_Delete(cfg);
        return NULL;
    }
    return o;
}

static int add(cJSON *list, cJSON *item)
{
    if (!item)
        return 0;
    if (!cJSON_AddItemToArray(list, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

static cJSON *compress_item(const ck_codec_spec *c, ck_dtype dtype, ck_code *rc,
                            ck_err *err)
{
    static const char *const shuf[] = {"noshuffle", "shuffle", "bitshuffle"};
    cJSON *cfg = cJSON_CreateObject();

    if (!cfg)
        return NULL;
    switch (c->id) {
    case CK_CODEC_GZIP:
        if (!cJSON_AddNumberToObject(cfg, "level", c->level))
            break;
        return named("gzip", cfg);
    case CK_CODEC_ZSTD:
        if (!cJSON_AddNumberToObject(cfg, "level", c->level) ||
            !cJSON_AddBoolToObject(cfg, "checksum", c->checksum != 0))
            break;
        return named("zstd", cfg);
    case CK_CODEC_BLOSC:
        if (!cJSON_AddStringToObject(cfg, "cname",
                                     c->cname[0] ? c->cname : "lz4") ||
            !cJSON_AddNumberToObject(cfg, "clevel", c->level) ||
            !cJSON_AddStringToObject(
                cfg, "shuffle",
                shuf[c->shuffle <= CK_SHUF_BIT ? c->shuffle : 0]) ||
            !cJSON_AddNumberToObject(cfg, "typesize",
                                     (double)ck_dtype_size(dtype)) ||
            !cJSON_AddNumberToObject(cfg, "blocksize", 0))
            break;
        return named("blosc", cfg);
    default: {
        /* zlib, lz4, lzma, bz2: numcodecs' config under numcodecs.ID, as
         * zarr-python 3 writes them. */
        ck_zarr_meta tmp;
        cJSON *nc, *id;
        char name[40];
        cJSON_Delete(cfg);
        memset(&tmp, 0, sizeof tmp);
        tmp.codec = *c;
        tmp.codec.shuffle = CK_SHUF_NONE;
        if (!(nc = ck_zarr_compressor_item(&tmp, rc, err)))
            return NULL;
        id = cJSON_DetachItemFromObjectCaseSensitive(nc, "id");
        snprintf(name, sizeof name, "numcodecs.%s",
                 cJSON_IsString(id) ? id->valuestring : "?");
        cJSON_Delete(id);
        return named(name, nc);
    }
    }
    cJSON_Delete(cfg);
    return NULL;
}

static cJSON *bytes_item(int big_endian, size_t esize)
{
    cJSON *cfg = NULL;

    if (esize > 1 && (!(cfg = cJSON_CreateObject()) ||
                      !cJSON_AddStringToObject(cfg, "endian",
                                               big_endian ? "big" : "little")))
        return cJSON_Delete(cfg), NULL;
    return named("bytes", cfg);
}

static cJSON *chain_item(const ck_z3_chain *c, int ndim, ck_dtype dtype,
                         ck_code *rc, ck_err *err)
{
    cJSON *list = cJSON_CreateArray();

    if (!list)
        return NULL;
    if (c->has_perm) {
        cJSON *cfg = cJSON_CreateObject(), *o = cJSON_CreateArray();
        for (int d = 0; o && d < ndim; d++)
            add(o, cJSON_CreateNumber(c->perm[d]));
        if (!cfg || !o || !cJSON_AddItemToObject(cfg, "order", o) ||
            !add(list, named("transpose", cfg)))
            goto fail;
    }
    if (!add(list, bytes_item(c->big_endian, ck_dtype_size(dtype))))
        goto fail;
    for (int i = 0; i < c->nbb; i++) {
        cJSON *item = NULL, *cfg;
        switch (c->bb[i]) {
        case CK_Z3_COMPRESS:
            item = compress_item(&c->codec, dtype, rc, err);
            if (!item && *rc != CK_ENOMEM)
                goto fail;
            break;
        case CK_Z3_CRC32C:
            item = named("crc32c", NULL);
            break;
        case CK_Z3_SHUFFLE:
            if ((cfg = cJSON_CreateObject()) &&
                !cJSON_AddNumberToObject(cfg, "elementsize",
                                         c->elementsize[i])) {
                cJSON_Delete(cfg);
                cfg = NULL;
            }
            item = cfg ? named("numcodecs.shuffle", cfg) : NULL;
            break;
        }
        if (!add(list, item))
            goto fail;
    }
    return list;
fail:
    cJSON_Delete(list);
    return NULL;
}

/* v3's "NaN" is the one canonical quiet NaN (0x7fc00000, 0x7ff8...);
 * any other NaN (a payload, the sign bit) keeps its bits as hex, which
 * hex_fill reads back. */
static cJSON *fill_item(const ck_zarr_meta *m)
{
    char buf[24];
    uint64_t bits = 0;
    size_t es = ck_dtype_size(m->dtype);

    if (!m->has_fill || !ck_dtype_is_float(m->dtype) || !isnan(m->fill.f) ||
        (es != 4 && es != 8))
        return ck_zarr_fill_item(m);
    if (es == 4) {
        float x = (float)m->fill.f;
        uint32_t b;
        memcpy(&b, &x, 4);
        if (b == 0x7fc00000u)
            return ck_zarr_fill_item(m);
        snprintf(buf, sizeof buf, "0x%08" PRIx32, b);
    } else {
        memcpy(&bits, &m->fill.f, 8);
        if (bits == 0x7ff8000000000000ull)
            return ck_zarr_fill_item(m);
        snprintf(buf, sizeof buf, "0x%016" PRIx64, bits);
    }
    return cJSON_CreateString(buf);
}

static ck_code finish(cJSON *root, const char *attrs, char **out, ck_err *err)
{
    cJSON *a = cJSON_CreateRaw(attrs && *attrs ? attrs : "{}");
    char *txt;

    if (!a || !cJSON_AddItemToObject(root, "attributes", a)) {
        cJSON_Delete(a);
        cJSON_Delete(root);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    *out = txt;
    return CK_OK;
}

ck_code ck_zarr3_group_format(const char *attrs, char **out, ck_err *err)
{
    cJSON *root = cJSON_CreateObject();

    if (!root || !cJSON_AddNumberToObject(root, "zarr_format", 3) ||
        !cJSON_AddStringToObject(root, "node_type", "group")) {
        cJSON_Delete(root);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    return finish(root, attrs, out, err);
}

ck_code ck_zarr3_meta_format(const ck_zarr_meta *m, const char *attrs,
                             char **out, ck_err *err)
{
    const char *dt = dtype3_name(m->dtype);
    char sep[2] = {m->dim_sep ? m->dim_sep : '/', '\0'};
    cJSON *root = cJSON_CreateObject(), *grid, *gcfg, *kenc, *kcfg, *codecs;
    ck_code rc = CK_ENOMEM;

    if (!dt) {
        cJSON_Delete(root);
        return ck_err_set(err, CK_ENOTSUP, "zarr: dtype %s is not supported",
                          ck_dtype_name(m->dtype));
    }
    if (!root)
        goto nomem;
    if (!cJSON_AddNumberToObject(root, "zarr_format", 3) ||
        !cJSON_AddStringToObject(root, "node_type", "array") ||
        !cJSON_AddItemToObject(root, "shape",
                               ck_zarr_dims_item(m->shape, m->ndim)) ||
        !cJSON_AddStringToObject(root, "data_type", dt))
        goto nomem;
    gcfg = cJSON_CreateObject();
    if (!gcfg ||
        !cJSON_AddItemToObject(
            gcfg, "chunk_shape",
            ck_zarr_dims_item(m->sharded ? m->shard : m->chunks, m->ndim))) {
        cJSON_Delete(gcfg);
        goto nomem;
    }
    if (!(grid = named("regular", gcfg)) ||
        !cJSON_AddItemToObject(root, "chunk_grid", grid)) {
        cJSON_Delete(grid);
        goto nomem;
    }
    kcfg = cJSON_CreateObject();
    if (!kcfg || !cJSON_AddStringToObject(kcfg, "separator", sep)) {
        cJSON_Delete(kcfg);
        goto nomem;
    }
    if (!(kenc = named(m->key_c ? "default" : "v2", kcfg)) ||
        !cJSON_AddItemToObject(root, "chunk_key_encoding", kenc)) {
        cJSON_Delete(kenc);
        goto nomem;
    }
    {
        ck_zarr_meta f = *m;
        f.has_fill = 1; /* v3 has no null fill: 0 then */
        if (!m->has_fill)
            f.fill.u = 0;
        if (!cJSON_AddItemToObject(root, "fill_value", fill_item(&f)))
            goto nomem;
    }
    rc = CK_ENOMEM;
    codecs = chain_item(&m->chain, m->ndim, m->dtype, &rc, err);
    if (!codecs && rc == CK_ENOMEM)
        goto nomem;
    if (!codecs)
        goto fail;
    if (m->sharded) {
        cJSON *cfg = cJSON_CreateObject(), *ic, *list;
        ic = chain_item(&m->index, 1, CK_U64, &rc, err);
        if (!cfg || !ic ||
            !cJSON_AddItemToObject(cfg, "chunk_shape",
                                   ck_zarr_dims_item(m->chunks, m->ndim)) ||
            !cJSON_AddItemToObject(cfg, "codecs", codecs) ||
            !cJSON_AddItemToObject(cfg, "index_codecs", ic) ||
            !cJSON_AddStringToObject(cfg, "index_location",
                                     m->index_at_start ? "start" : "end")) {
            if (!cJSON_GetObjectItemCaseSensitive(cfg, "codecs"))
                cJSON_Delete(codecs);
            if (!cJSON_GetObjectItemCaseSensitive(cfg, "index_codecs"))
                cJSON_Delete(ic);
            cJSON_Delete(cfg);
            goto nomem;
        }
        list = cJSON_CreateArray();
        if (!list || !add(list, named("sharding_indexed", cfg))) {
            cJSON_Delete(list);
            goto nomem;
        }
        codecs = list;
    }
    if (!cJSON_AddItemToObject(root, "codecs", codecs)) {
        cJSON_Delete(codecs);
        goto nomem;
    }
    if (m->has_dim_names) {
        cJSON *dn = cJSON_CreateArray();
        for (int d = 0; dn && d < m->ndim; d++)
            if (!add(dn, m->dim_names[d][0]
                             ? cJSON_CreateString(m->dim_names[d])
                             : cJSON_CreateNull())) {
                cJSON_Delete(dn);
                dn = NULL;
            }
        if (!dn || !cJSON_AddItemToObject(root, "dimension_names", dn))
            goto nomem;
    }
    return finish(root, attrs, out, err);
nomem:
    rc = ck_err_set(err, CK_ENOMEM, "out of memory");
fail:
    cJSON_Delete(root);
    return rc;
}
