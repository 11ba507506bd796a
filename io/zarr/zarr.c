/*
 * io/zarr/zarr.c - Zarr v2 arrays in a directory store (the ck_zarr_ops
 * table).  Maps chunk coordinates to keys ("0.3.1" or "0/3/1"), reads and
 * writes whole chunk files, treats a missing chunk as fill_value, turns
 * F-order chunks into C order and big-endian ones into native order.
 * .zarray JSON is io/zarr/meta.c's job, compression io/codec.c's, temporary
 * names and the commit rename io/store.c's.  Nothing here knows about
 * compute.
 *
 * Containment: a store never makes chunkctl read outside its root.  Array
 * and group directories are resolved with realpath() and must stay under
 * the root's realpath; metadata and chunk files are opened with O_NOFOLLOW
 * (and each directory level of a "/" key too), so symlinked chunk files are
 * refused even when they point inside the store.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/oserr.h"
#include "io/store_impl.h"
#include "io/zarr/meta.h"

#define HOST_BIG_ENDIAN (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#define KEY_MAX 1024      /* CK_MAX_DIMS numbers of 20 digits, separated */
#define LIST_MAX_DEPTH 64 /* groups nested deeper are not listed */
#define ARENA_SLACK 64    /* ck_arena_alloc aligns each block to 64 */

static const char zgroup_text[] = "{\n    \"zarr_format\": 2\n}\n";

enum root_kind { ROOT_UNDECIDED, ROOT_GROUP, ROOT_ARRAY };

typedef struct zstore {
    char root[PATH_MAX];  /* s->path when reading, s->tmp when writing */
    char real[PATH_MAX];  /* realpath(root): every directory stays under it */
    pthread_mutex_t lock; /* writing: root kind, groups, .zattrs */
    enum root_kind root_kind;
} zstore;

typedef struct zarray {
    ck_zarr_meta meta;
    int dirfd; /* the array directory; chunk keys are opened relative */
    size_t elem, chunk_bytes;
    int64_t chunk_nelem;
    ck_filter_chain chain; /* the filters (and a zstd/gzip shuffle) */
    size_t enc_bytes;      /* bytes between the filters and the compressor */
    char label[PATH_MAX + 520]; /* "s.zarr" or "s.zarr:/g/x" in messages */
} zarray;

/* ---- small file helpers ------------------------------------------------ */

/* Reads up to n bytes at offset 0 of fd; returns the count or -1. */
static ssize_t pread_all(int fd, void *buf, size_t n)
{
    size_t done = 0;

    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

static int write_all(int fd, const void *buf, size_t n)
{
    size_t done = 0;

    while (done < n) {
        ssize_t r = write(fd, (const char *)buf + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* Writes a whole file 'name' in directory dirfd, not following a link. */
static ck_code write_file_at(int dirfd, const char *name, const void *data,
                             size_t n, const char *label, ck_err *err)
{
    int fd =
        openat(dirfd, name,
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    int e;

    if (fd < 0)
        return ck_os_fail(err, CK_EIO, errno, "%s: cannot create %s", label,
                          name);
    if (write_all(fd, data, n) != 0) {
        e = errno;
        close(fd);
        return ck_os_fail(err, CK_EIO, e, "%s: cannot write %s", label, name);
    }
    if (close(fd) != 0)
        return ck_os_fail(err, CK_EIO, errno, "%s: cannot write %s", label,
                          name);
    return CK_OK;
}

/* Reads small metadata file 'name' of dirfd whole, NUL-terminated, into a
 * malloc'd *out.  *out is NULL (and CK_OK returned) when it does not exist.
 * 'where' names the file in messages. */
static ck_code read_small(int dirfd, const char *name, const char *where,
                          char **out, size_t *len, ck_err *err)
{
    struct stat st;
    ssize_t got;
    char *buf;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    *out = NULL;
    if (fd < 0) {
        if (errno == ENOENT)
            return CK_OK;
        if (errno == ELOOP)
            return ck_err_set(err, CK_EFORMAT,
                              "%s is a symlink (chunkctl refuses symlinked "
                              "metadata, which could lead out of the store)",
                              where);
        return ck_os_fail(err, CK_EIO, errno, "%s", where);
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ck_err_set(err, CK_EFORMAT, "%s: not a regular file", where);
    }
    if ((size_t)st.st_size > CK_ZARR_META_MAX) {
        close(fd);
        return ck_err_set(err, CK_EFORMAT,
                          "%s: %lld bytes is too large for zarr metadata "
                          "(at most %zu)",
                          where, (long long)st.st_size, CK_ZARR_META_MAX);
    }
    if (!(buf = malloc((size_t)st.st_size + 1))) {
        close(fd);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    got = pread_all(fd, buf, (size_t)st.st_size);
    close(fd);
    if (got < 0) {
        int e = errno;
        free(buf);
        return ck_os_fail(err, CK_EIO, e, "%s", where);
    }
    buf[got] = '\0';
    *out = buf;
    *len = (size_t)got;
    return CK_OK;
}

/* 1 if 'name' in dirfd exists as a regular file (not a link). */
static int has_file(int dirfd, const char *name)
{
    struct stat st;

    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(st.st_mode);
}

static int has_file_in(const char *dir, const char *name)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r;

    if (fd < 0)
        return 0;
    r = has_file(fd, name);
    close(fd);
    return r;
}

/* ---- names and directories --------------------------------------------- */

/* Array and group names are "/" or "/a/b": no empty, ".", ".." or other
 * dot-leading components (those are Zarr's own keys). */
static ck_code check_name(const ck_store *s, const char *name, ck_err *err)
{
    const char *p = name;

    if (name[0] != '/')
        return ck_err_set(err, CK_EUSAGE, "%s: bad array name '%s'", s->path,
                          name);
    if (strcmp(name, "/") == 0)
        return CK_OK;
    while (*p == '/') {
        p++;
        if (*p == '/' || *p == '\0' || *p == '.')
            return ck_err_set(err, CK_EUSAGE,
                              "%s: bad array name '%s' (empty or "
                              "dot-leading component)",
                              s->path, name);
        p += strcspn(p, "/");
    }
    return CK_OK;
}

static ck_code dir_path(const ck_store *s, const char *name, char *buf,
                        size_t n, ck_err *err)
{
    const zstore *zs = s->impl;
    int k =
        snprintf(buf, n, "%s%s", zs->root, strcmp(name, "/") == 0 ? "" : name);

    if (k < 0 || (size_t)k >= n)
        return ck_err_set(err, CK_EUSAGE, "%s:%s: path too long", s->path,
                          name);
    return CK_OK;
}

/* "s.zarr" for the root, "s.zarr:/g/x" otherwise. */
static void make_label(const ck_store *s, const char *name, char *buf, size_t n)
{
    if (strcmp(name, "/") == 0)
        snprintf(buf, n, "%s", s->path);
    else
        snprintf(buf, n, "%s:%s", s->path, name);
}

/* "s.zarr/.zarray", "s.zarr/g/x/.zattrs": the file in messages. */
static void make_where(const ck_store *s, const char *name, const char *file,
                       char *buf, size_t n)
{
    snprintf(buf, n, "%s%s/%s", s->path, strcmp(name, "/") == 0 ? "" : name,
             file);
}

/* Opens the directory of 'name' after checking that its real path stays
 * under the root's.  *fd is -1 (CK_OK) when it does not exist. */
static ck_code open_dir(const ck_store *s, const char *name, int *fd,
                        ck_err *err)
{
    const zstore *zs = s->impl;
    char path[PATH_MAX], real[PATH_MAX];
    size_t rn = strlen(zs->real);

    *fd = -1;
    CK_TRY(dir_path(s, name, path, sizeof path, err));
    if (!realpath(path, real)) {
        if (errno == ENOENT || errno == ENOTDIR)
            return CK_OK;
        return ck_os_fail(err, CK_EIO, errno, "%s:%s", s->path, name);
    }
    if (strncmp(real, zs->real, rn) != 0 ||
        (real[rn] != '\0' && real[rn] != '/' && rn > 1))
        return ck_err_set(err, CK_EFORMAT,
                          "%s:%s is a symlink leading out of the store",
                          s->path, name);
    *fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return CK_OK;
        return ck_os_fail(err, CK_EIO, errno, "%s:%s", s->path, name);
    }
    return CK_OK;
}

/* ---- store open, list, sniff ------------------------------------------- */

int ck_zarr_sniff(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    return has_file_in(path, ".zarray") || has_file_in(path, ".zgroup");
}

static ck_code zstore_new(ck_store *s, const char *root, ck_err *err)
{
    zstore *zs = calloc(1, sizeof *zs);

    if (!zs)
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    snprintf(zs->root, sizeof zs->root, "%s", root);
    if (!realpath(root, zs->real)) {
        int e = errno;
        free(zs);
        return ck_os_fail(err, CK_EIO, e, "%s", s->path);
    }
    pthread_mutex_init(&zs->lock, NULL);
    s->impl = zs;
    return CK_OK;
}

static ck_code zarr_open(ck_store *s, ck_err *err)
{
    struct stat st;
    char where[PATH_MAX + 16], *txt = NULL;
    size_t len = 0;
    int fd;
    ck_code rc;

    if (stat(s->path, &st) != 0)
        return ck_os_fail(err, CK_EIO, errno, "%s", s->path);
    if (!S_ISDIR(st.st_mode))
        return ck_err_set(err, CK_EFORMAT,
                          "%s: not a zarr store (not a "
                          "directory)",
                          s->path);
    fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return ck_os_fail(err, CK_EIO, errno, "%s", s->path);
    if (!has_file(fd, ".zarray") && !has_file(fd, ".zgroup")) {
        int v3 = has_file(fd, "zarr.json");
        close(fd);
        if (v3)
            return ck_err_set(err, CK_EFORMAT,
                              "%s: zarr v3 stores (zarr.json) are not "
                              "supported",
                              s->path);
        return ck_err_set(err, CK_EFORMAT,
                          "%s: a directory without .zarray or .zgroup is not "
                          "a zarr store",
                          s->path);
    }
    /* A root group must say zarr_format 2 too. */
    snprintf(where, sizeof where, "%s/.zgroup", s->path);
    rc = read_small(fd, ".zgroup", where, &txt, &len, err);
    close(fd);
    if (rc == CK_OK && txt)
        rc = ck_zarr_zgroup_check(txt, len, where, err);
    free(txt);
    CK_TRY(rc);
    return zstore_new(s, s->path, err);
}

static void zarr_close(ck_store *s)
{
    zstore *zs = s->impl;

    if (!zs)
        return;
    pthread_mutex_destroy(&zs->lock);
    free(zs);
    s->impl = NULL;
}

static int skip_dot(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Appends the arrays under group 'rel' ("" for the root), sorted, depth
 * first.  Symlinked directories are not followed. */
static ck_code list_rec(ck_store *s, const char *rel, int depth, ck_names *out,
                        ck_err *err)
{
    const zstore *zs = s->impl;
    char dir[PATH_MAX], child[PATH_MAX];
    struct dirent **ents = NULL;
    ck_code rc = CK_OK;
    int n, dfd;

    snprintf(dir, sizeof dir, "%s%s", zs->root, rel);
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return ck_os_fail(err, CK_EIO, errno, "%s%s", s->path, rel);
    n = scandirat(dfd, ".", &ents, skip_dot, by_name);
    if (n < 0) {
        rc = ck_os_fail(err, CK_EIO, errno, "%s%s", s->path, rel);
        close(dfd);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        struct stat st;
        const char *e = ents[i]->d_name;
        int cfd, k;

        if (rc != CK_OK)
            continue;
        k = snprintf(child, sizeof child, "%s/%s", rel, e);
        if (k < 0 || (size_t)k >= sizeof child ||
            strlen(zs->root) + (size_t)k >= PATH_MAX)
            continue;
        if (fstatat(dfd, e, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode))
            continue;
        cfd = openat(dfd, e, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0)
            continue;
        if (has_file(cfd, ".zarray"))
            rc = ck_names_push(out, child, err);
        else if (has_file(cfd, ".zgroup") && depth < LIST_MAX_DEPTH)
            rc = list_rec(s, child, depth + 1, out, err);
        close(cfd);
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    close(dfd);
    return rc;
}

static ck_code zarr_list(ck_store *s, ck_names *out, ck_err *err)
{
    const zstore *zs = s->impl;

    if (has_file_in(zs->root, ".zarray"))
        return ck_names_push(out, "/", err);
    return list_rec(s, "", 0, out, err);
}

/* ---- arrays ------------------------------------------------------------ */

static int all_digits(const char *p, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return 1;
}

/* 1 if file name e is a "."-separated chunk key of ndim numbers. */
static int is_dot_key(const char *e, int ndim)
{
    int parts = 0;

    for (;;) {
        size_t n = strcspn(e, ".");
        if (!all_digits(e, n))
            return 0;
        parts++;
        if (e[n] == '\0')
            break;
        e += n + 1;
    }
    return parts == (ndim > 0 ? ndim : 1);
}

/* Adds up the chunk files under dirfd: with '/', 'levels' directory levels
 * of numbers; with '.', keys of ndim numbers.  Links are not counted. */
static void count_chunks(int dirfd, const ck_zarr_meta *m, int levels,
                         int64_t *files, int64_t *bytes)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;
    struct dirent *e;

    if (fd < 0)
        return;
    if (!(d = fdopendir(fd))) {
        close(fd);
        return;
    }
    while ((e = readdir(d))) {
        struct stat st;
        int sub;

        if (e->d_name[0] == '.' ||
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (m->dim_sep == '.' || levels <= 1) {
            if (S_ISREG(st.st_mode) &&
                (m->dim_sep == '/' ? all_digits(e->d_name, strlen(e->d_name))
                                   : is_dot_key(e->d_name, m->ndim))) {
                ++*files;
                *bytes += st.st_size;
            }
            continue;
        }
        if (!S_ISDIR(st.st_mode) || !all_digits(e->d_name, strlen(e->d_name)))
            continue;
        sub = openat(fd, e->d_name,
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
            count_chunks(sub, m, levels - 1, files, bytes);
            close(sub);
        }
    }
    closedir(d);
}

/* "delta:int32+shuffle:2+lz4:1": the filters in order, then the
 * compressor ("none" only when there is nothing else). */
static void zarr_codec_str(const ck_codec_spec *c, char *buf, size_t n)
{
    size_t used = 0;
    char part[160];

    buf[0] = '\0';
    for (int i = 0; i < c->nfilters && used < n; i++)
        used +=
            (size_t)snprintf(buf + used, n - used, "%s+",
                             ck_filter_str(&c->filters[i], part, sizeof part));
    if (used >= n)
        return;
    if (c->id == CK_CODEC_NONE && used)
        buf[used - 1] = '\0';
    else
        snprintf(buf + used, n - used, "%s",
                 ck_codec_str(c, part, sizeof part));
}

static void info_from_meta(const ck_zarr_meta *m, const char *name,
                           ck_array_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", name);
    info->ndim = m->ndim;
    memcpy(info->shape, m->shape, sizeof m->shape);
    memcpy(info->chunks, m->chunks, sizeof m->chunks);
    info->dtype = m->dtype;
    info->big_endian = m->big_endian;
    info->order = m->order;
    info->has_fill = m->has_fill;
    info->fill = m->fill;
    info->layout = CK_LAYOUT_CHUNKED;
    info->codec = m->codec;
    zarr_codec_str(&m->codec, info->compressor, sizeof info->compressor);
    info->stored_bytes = -1;
    info->chunks_stored = -1;
}

/* Takes ownership of dirfd.  Checks the grid and sizes the chunk. */
static ck_code zarray_new(ck_store *s, const char *name, const ck_zarr_meta *m,
                          int dirfd, ck_array *a, ck_err *err)
{
    zarray *za;
    ck_grid g;
    char label[PATH_MAX + 520];
    ck_code rc;

    make_label(s, name, label, sizeof label);
    rc = ck_grid_init(&g, m->ndim, m->shape, m->chunks, ck_dtype_size(m->dtype),
                      err);
    if (rc != CK_OK) {
        ck_err_prefix(err, "%s", label);
        close(dirfd);
        return rc;
    }
    if (!(za = calloc(1, sizeof *za))) {
        close(dirfd);
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    }
    za->meta = *m;
    za->dirfd = dirfd;
    za->elem = ck_dtype_size(m->dtype);
    za->chunk_nelem = g.chunk_nelem;
    za->chunk_bytes = (size_t)g.chunk_nelem * za->elem;
    memcpy(za->label, label, sizeof label);
    rc = ck_codec_chain(&m->codec, m->dtype, za->chunk_bytes, &za->chain, err);
    if (rc != CK_OK) {
        ck_err_prefix(err, "%s", label);
        close(dirfd);
        free(za);
        return rc;
    }
    za->enc_bytes = za->chain.size[za->chain.n];
    info_from_meta(m, name, &a->info);
    a->impl = za;
    return CK_OK;
}

static ck_code zarr_array_open(ck_store *s, const char *name, ck_array *a,
                               ck_err *err)
{
    char where[PATH_MAX + 600], *txt = NULL;
    size_t len = 0;
    ck_zarr_meta m;
    ck_code rc;
    int fd;

    CK_TRY(check_name(s, name, err));
    CK_TRY(open_dir(s, name, &fd, err));
    if (fd < 0)
        return ck_err_set(err, CK_EFORMAT, "%s: no array '%s'", s->path, name);
    make_where(s, name, ".zarray", where, sizeof where);
    if ((rc = read_small(fd, ".zarray", where, &txt, &len, err)) != CK_OK) {
        close(fd);
        return rc;
    }
    if (!txt) {
        if (has_file(fd, "zarr.json"))
            rc = ck_err_set(err, CK_EFORMAT,
                            "%s:%s: zarr v3 arrays (zarr.json) are not "
                            "supported",
                            s->path, name);
        else if (has_file(fd, ".zgroup"))
            rc = ck_err_set(err, CK_EFORMAT,
                            "%s: '%s' is a group, not an array", s->path, name);
        else
            rc =
                ck_err_set(err, CK_EFORMAT, "%s: no array '%s'", s->path, name);
        close(fd);
        return rc;
    }
    rc = ck_zarr_meta_parse(txt, len, where, &m, err);
    free(txt);
    if (rc != CK_OK) {
        close(fd);
        return rc;
    }
    CK_TRY(zarray_new(s, name, &m, fd, a, err));
    /* A walk of the directory: cheap next to reading the chunks, and only
     * done once per open. */
    zarray *za = a->impl;
    a->info.stored_bytes = 0;
    a->info.chunks_stored = 0;
    count_chunks(za->dirfd, &m, m.ndim, &a->info.chunks_stored,
                 &a->info.stored_bytes);
    return CK_OK;
}

static void zarr_array_close(ck_array *a)
{
    zarray *za = a->impl;

    if (!za)
        return;
    if (za->dirfd >= 0)
        close(za->dirfd);
    free(za);
    a->impl = NULL;
}

/* Read: the stored bytes (any codec) plus, for F order, a chunk to
 * transpose from.  Write: the encoded chunk.  Uncompressed C-order reads
 * and uncompressed writes go straight between the file and the caller's
 * buffer.  Each arena block may lose up to 63 bytes to alignment. */
static size_t zarr_scratch_bytes(const ck_array *a)
{
    const zarray *za = a->impl;
    size_t cb = za->chunk_bytes, eb = za->enc_bytes, rd = 0, wr = 0;
    size_t chain = ck_filter_chain_scratch(&za->chain);

    /* Filters: the bytes between them and the compressor, and the
     * chain's own stage buffers (io/filter.c). */
    if (za->meta.codec.id != CK_CODEC_NONE) {
        rd += ck_stored_max(eb) + ARENA_SLACK;
        wr += ck_codec_bound(&za->meta.codec, eb) + ARENA_SLACK;
    }
    if (za->chain.n > 0) {
        rd += eb + ARENA_SLACK + chain;
        wr += chain;
    }
    if (za->meta.order == 'F' && za->meta.ndim > 1)
        rd += cb + ARENA_SLACK;
    rd = rd > wr ? rd : wr;
    return rd > ARENA_SLACK ? rd : ARENA_SLACK;
}

/* "0.3.1" or "0/3/1"; "0" for a 0-d array (as zarr-python writes it). */
static void chunk_key(const ck_zarr_meta *m, const int64_t *coords, char *buf,
                      size_t n)
{
    size_t used = 0;

    if (m->ndim == 0) {
        snprintf(buf, n, "0");
        return;
    }
    buf[0] = '\0';
    for (int d = 0; d < m->ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld",
                                 d ? (m->dim_sep == '/' ? "/" : ".") : "",
                                 (long long)coords[d]);
}

/* Opens chunk 'key' relative to the array directory, refusing a link at
 * any level.  Returns the fd, or -1 with errno (ELOOP for a link). */
static int open_chunk(const zarray *za, char *key)
{
    int cur = za->dirfd, fd;
    char *p = key, *slash;

    while ((slash = strchr(p, '/'))) {
        *slash = '\0';
        fd = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            struct stat st;
            int e = errno;
            /* O_DIRECTORY|O_NOFOLLOW on a link may say ENOTDIR. */
            if (e == ENOTDIR &&
                fstatat(cur, p, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                e = ELOOP;
            *slash = '/';
            if (cur != za->dirfd)
                close(cur);
            errno = e;
            return -1;
        }
        *slash = '/';
        if (cur != za->dirfd)
            close(cur);
        cur = fd;
        p = slash + 1;
    }
    fd = openat(cur, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (cur != za->dirfd)
            close(cur);
        errno = e;
        return -1;
    }
    if (cur != za->dirfd)
        close(cur);
    return fd;
}

/* Copies a chunk stored in F order (first axis fastest) into C order.
 * The inner loop runs along axis 0, contiguous in src. */
static void f_to_c(int ndim, const int64_t *shape, size_t elem, const char *src,
                   char *dst)
{
    int64_t idx[CK_MAX_DIMS] = {0}, stride[CK_MAX_DIMS];
    int64_t rows = 1, n0 = shape[0], off = 0;

    stride[ndim - 1] = 1;
    for (int d = ndim - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * shape[d + 1];
    for (int d = 1; d < ndim; d++)
        rows *= shape[d];
    for (int64_t r = 0; r < rows; r++) {
        const char *s = src + (size_t)(r * n0) * elem;
        char *o = dst + (size_t)off * elem;
        size_t st = (size_t)stride[0] * elem;
        for (int64_t i = 0; i < n0; i++)
            memcpy(o + (size_t)i * st, s + (size_t)i * elem, elem);
        /* Next position over axes 1.., axis 1 fastest (F order). */
        for (int d = 1; d < ndim; d++) {
            if (++idx[d] < shape[d]) {
                off += stride[d];
                break;
            }
            off -= (shape[d] - 1) * stride[d];
            idx[d] = 0;
        }
    }
}

static ck_code zarr_read_chunk(ck_array *a, const int64_t *coords, void *dst,
                               ck_arena *scratch, ck_err *err)
{
    const zarray *za = a->impl;
    const ck_zarr_meta *m = &za->meta;
    size_t cb = za->chunk_bytes;
    int transpose = m->order == 'F' && m->ndim > 1;
    char key[KEY_MAX], cs[KEY_MAX];
    struct stat st;
    ck_code rc = CK_OK;
    void *out = dst;
    int fd;

    chunk_key(m, coords, key, sizeof key);
    ck_coords_str(m->ndim, coords, cs, sizeof cs);
    if ((fd = open_chunk(za, key)) < 0) {
        if (errno == ENOENT) {
            ck_scalar zero = {0};
            ck_dtype_fill(m->dtype, dst, m->has_fill ? m->fill : zero,
                          (size_t)za->chunk_nelem);
            return CK_OK;
        }
        if (errno == ELOOP)
            return ck_err_set(err, CK_ECORRUPT,
                              "%s: chunk %s is a symlink (chunkctl refuses "
                              "symlinked chunks, which could lead out of the "
                              "store)",
                              za->label, key);
        return ck_os_fail(err, CK_EIO, errno, "%s: chunk %s (coords %s)",
                          za->label, key, cs);
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = ck_err_set(err, CK_ECORRUPT,
                        "%s: chunk %s (coords %s) is not a regular file",
                        za->label, key, cs);
        goto out;
    }
    if (transpose && !(out = ck_arena_alloc(scratch, cb))) {
        rc = ck_err_set(err, CK_ENOMEM,
                        "%s: scratch arena too small for chunk %s", za->label,
                        key);
        goto out;
    }
    if (m->codec.id == CK_CODEC_NONE && za->chain.n == 0) {
        ssize_t got;
        if ((uint64_t)st.st_size != cb) {
            rc = ck_err_set(err, CK_ECORRUPT,
                            "%s: chunk %s (coords %s): %lld bytes, expected "
                            "%zu",
                            za->label, key, cs, (long long)st.st_size, cb);
            goto out;
        }
        got = pread_all(fd, out, cb);
        if (got < 0)
            rc = ck_os_fail(err, CK_EIO, errno, "%s: chunk %s (coords %s)",
                            za->label, key, cs);
        else if ((size_t)got != cb)
            rc = ck_err_set(err, CK_ECORRUPT,
                            "%s: chunk %s (coords %s): %zd bytes, expected "
                            "%zu",
                            za->label, key, cs, got, cb);
    } else {
        size_t n = (size_t)st.st_size, eb = za->enc_bytes;
        ssize_t got;
        void *raw, *enc;
        if ((uint64_t)st.st_size > ck_stored_max(eb)) {
            rc = ck_err_set(err, CK_ECORRUPT,
                            "%s: chunk %s (coords %s): %lld bytes stored, "
                            "more than any codec makes of %zu",
                            za->label, key, cs, (long long)st.st_size, eb);
            goto out;
        }
        if (!(raw = ck_arena_alloc(scratch, n ? n : 1))) {
            rc = ck_err_set(err, CK_ENOMEM,
                            "%s: scratch arena too small for chunk %s",
                            za->label, key);
            goto out;
        }
        got = pread_all(fd, raw, n);
        if (got < 0) {
            rc = ck_os_fail(err, CK_EIO, errno, "%s: chunk %s (coords %s)",
                            za->label, key, cs);
            goto out;
        }
        /* compressor -> enc (eb bytes) -> filters in reverse -> out */
        enc = za->chain.n == 0 ? out : raw;
        if (m->codec.id != CK_CODEC_NONE && za->chain.n > 0 &&
            !(enc = ck_arena_alloc(scratch, eb))) {
            rc = ck_err_set(err, CK_ENOMEM,
                            "%s: scratch arena too small for chunk %s",
                            za->label, key);
            goto out;
        }
        if (m->codec.id != CK_CODEC_NONE)
            rc =
                ck_codec_decode_spec(&m->codec, raw, (size_t)got, enc, eb, err);
        if (rc == CK_OK && za->chain.n > 0)
            rc = ck_filter_chain_decode(
                &za->chain, enc,
                m->codec.id != CK_CODEC_NONE ? eb : (size_t)got, out, scratch,
                err);
        if (rc != CK_OK)
            ck_err_prefix(err, "%s: chunk %s (coords %s)", za->label, key, cs);
    }
    if (rc == CK_OK && m->big_endian != HOST_BIG_ENDIAN && za->elem > 1)
        ck_byteswap(out, za->elem, (size_t)za->chunk_nelem);
    if (rc == CK_OK && transpose)
        f_to_c(m->ndim, m->chunks, za->elem, out, dst);
out:
    close(fd);
    return rc;
}

/* ---- writing ----------------------------------------------------------- */

static ck_code zarr_create(ck_store *s, ck_err *err)
{
    if (mkdir(s->tmp, 0777) != 0)
        return ck_os_fail(err, CK_EIO, errno, "%s: cannot create %s", s->path,
                          s->tmp);
    /* The root's .zgroup waits until we know the root is not an array. */
    return zstore_new(s, s->tmp, err);
}

static ck_code write_zgroup(const ck_store *s, const char *dir, ck_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_code rc;

    if (fd < 0)
        return ck_os_fail(err, CK_EIO, errno, "%s: %s", s->path, dir);
    rc = write_file_at(fd, ".zgroup", zgroup_text, sizeof zgroup_text - 1,
                       s->path, err);
    close(fd);
    return rc;
}

/* Makes the root a group (once) and each group on the way to 'name'; with
 * 'self', name itself is a group too.  Called with zs->lock held. */
static ck_code ensure_groups(ck_store *s, const char *name, int self,
                             ck_err *err)
{
    zstore *zs = s->impl;
    char dir[PATH_MAX];
    size_t rlen = strlen(zs->root);

    if (zs->root_kind == ROOT_ARRAY)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: the store is the array '/'; it cannot hold "
                          "'%s' too",
                          s->path, name);
    if (zs->root_kind == ROOT_UNDECIDED) {
        CK_TRY(write_zgroup(s, zs->root, err));
        zs->root_kind = ROOT_GROUP;
    }
    CK_TRY(dir_path(s, name, dir, sizeof dir, err));
    /* dir is root + "/g/h/x": stop at each '/' after the root, and at the
     * end when name itself is a group. */
    for (char *p = dir + rlen + 1;; p++) {
        struct stat st;
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        if (c == '\0' && !self)
            break;
        *p = '\0';
        if (mkdir(dir, 0777) == 0) {
            CK_TRY(write_zgroup(s, dir, err));
        } else if (errno != EEXIST || lstat(dir, &st) != 0 ||
                   !S_ISDIR(st.st_mode)) {
            return ck_os_fail(err, CK_EIO, errno, "%s: cannot create group %s",
                              s->path, dir + rlen);
        } else if (has_file_in(dir, ".zarray")) {
            return ck_err_set(err, CK_EUSAGE,
                              "%s: '%s' is an array; it cannot hold '%s'",
                              s->path, dir + rlen, name);
        }
        *p = c;
        if (c == '\0')
            break;
    }
    return CK_OK;
}

static ck_code create_locked(ck_store *s, const ck_array_spec *spec,
                             ck_array *a, ck_err *err)
{
    zstore *zs = s->impl;
    const char *name = spec->name;
    char dir[PATH_MAX], *txt = NULL;
    ck_zarr_meta m;
    ck_code rc;
    int fd;

    memset(&m, 0, sizeof m);
    if (spec->ndim < 0 || spec->ndim > CK_MAX_DIMS)
        return ck_err_set(err, CK_EUSAGE, "%s:%s: %d dimensions (at most %d)",
                          s->path, name, spec->ndim, CK_MAX_DIMS);
    m.ndim = spec->ndim;
    memcpy(m.shape, spec->shape, sizeof(int64_t) * (size_t)m.ndim);
    memcpy(m.chunks, spec->chunks, sizeof(int64_t) * (size_t)m.ndim);
    m.dtype = spec->dtype;
    m.big_endian = HOST_BIG_ENDIAN;
    m.order = 'C';
    m.has_fill = spec->has_fill;
    m.fill = spec->has_fill ? spec->fill : (ck_scalar){0};
    m.codec = spec->codec;
    m.dim_sep = '.';
    /* Check the codec before touching the disk. */
    CK_TRY(ck_zarr_meta_format(&m, &txt, err));

    if (strcmp(name, "/") == 0) {
        if (zs->root_kind != ROOT_UNDECIDED) {
            free(txt);
            return ck_err_set(err, CK_EUSAGE,
                              "%s: the root cannot be an array: the store "
                              "already holds groups or arrays",
                              s->path);
        }
        zs->root_kind = ROOT_ARRAY;
    } else {
        rc = ensure_groups(s, name, 0, err);
        if (rc == CK_OK &&
            (rc = dir_path(s, name, dir, sizeof dir, err)) == CK_OK &&
            mkdir(dir, 0777) != 0)
            rc = ck_os_fail(err, errno == EEXIST ? CK_EUSAGE : CK_EIO, errno,
                            "%s: cannot create array '%s'", s->path, name);
        if (rc != CK_OK) {
            free(txt);
            return rc;
        }
    }
    CK_TRY(open_dir(s, name, &fd, err));
    if (fd < 0) {
        free(txt);
        return ck_err_set(err, CK_EIO, "%s: array '%s' vanished", s->path,
                          name);
    }
    rc = write_file_at(fd, ".zarray", txt, strlen(txt), s->path, err);
    free(txt);
    if (rc != CK_OK) {
        close(fd);
        return rc;
    }
    CK_TRY(zarray_new(s, name, &m, fd, a, err));
    return CK_OK;
}

static ck_code zarr_array_create(ck_store *s, const ck_array_spec *spec,
                                 ck_array *a, ck_err *err)
{
    zstore *zs = s->impl;
    ck_code rc;

    CK_TRY(check_name(s, spec->name, err));
    pthread_mutex_lock(&zs->lock);
    rc = create_locked(s, spec, a, err);
    pthread_mutex_unlock(&zs->lock);
    return rc;
}

static ck_code zarr_write_chunk(ck_array *a, const int64_t *coords,
                                const void *src, ck_arena *scratch, ck_err *err)
{
    const zarray *za = a->impl;
    const ck_zarr_meta *m = &za->meta;
    size_t cb = za->chunk_bytes, n = cb;
    const void *data = src;
    char key[KEY_MAX];

    /* Arrays we create use '.' keys: one file per chunk, no directories. */
    chunk_key(m, coords, key, sizeof key);
    if (za->chain.n > 0) {
        ck_code rc =
            ck_filter_chain_encode(&za->chain, src, scratch, &data, err);
        if (rc != CK_OK) {
            char cs[KEY_MAX];
            ck_err_prefix(err, "%s: chunk %s (coords %s)", za->label, key,
                          ck_coords_str(m->ndim, coords, cs, sizeof cs));
            return rc;
        }
        n = za->enc_bytes;
    }
    if (m->codec.id != CK_CODEC_NONE) {
        size_t cap = ck_codec_bound(&m->codec, n);
        void *buf = ck_arena_alloc(scratch, cap);
        ck_code rc;
        if (!buf)
            return ck_err_set(err, CK_ENOMEM,
                              "%s: scratch arena too small for chunk %s",
                              za->label, key);
        rc = ck_codec_encode(&m->codec, ck_dtype_size(za->chain.out_dtype),
                             data, n, buf, cap, &n, err);
        if (rc != CK_OK) {
            char cs[KEY_MAX];
            ck_err_prefix(err, "%s: chunk %s (coords %s)", za->label, key,
                          ck_coords_str(m->ndim, coords, cs, sizeof cs));
            return rc;
        }
        data = buf;
    }
    /* The whole store is a temporary directory renamed on commit, so each
     * chunk file is written in place. */
    return write_file_at(za->dirfd, key, data, n, za->label, err);
}

/* ---- attributes, flush ------------------------------------------------- */

/* Python's json module (and so zarr-python) writes NaN, Infinity and
 * -Infinity as bare words, which are not JSON.  Quote them, as zarr's own
 * fill_value convention does, so cJSON can read the attributes.  Returns a
 * new malloc'd string, or NULL when out of memory. */
static char *quote_nonfinite(const char *t, size_t len)
{
    static const char *const words[] = {"-Infinity", "Infinity", "NaN"};
    char *out = malloc(len + len + 1), *o = out;
    int in_str = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        size_t w = 0;
        if (in_str) {
            if (t[i] == '\\' && i + 1 < len)
                *o++ = t[i++];
            else if (t[i] == '"')
                in_str = 0;
            *o++ = t[i++];
            continue;
        }
        if (t[i] == '"')
            in_str = 1;
        for (size_t k = 0; k < 3 && !w; k++) {
            size_t n = strlen(words[k]);
            if (len - i >= n && memcmp(t + i, words[k], n) == 0)
                w = n;
        }
        if (w) {
            *o++ = '"';
            memcpy(o, t + i, w);
            o += w;
            *o++ = '"';
            i += w;
        } else {
            *o++ = t[i++];
        }
    }
    *o = '\0';
    return out;
}

static ck_code zarr_get_attrs(ck_store *s, const char *name, char **json,
                              ck_err *err)
{
    char where[PATH_MAX + 600], *txt = NULL;
    size_t len = 0;
    ck_code rc;
    int fd;

    CK_TRY(check_name(s, name, err));
    CK_TRY(open_dir(s, name, &fd, err));
    if (fd < 0)
        return ck_err_set(err, CK_EFORMAT, "%s: no group or array '%s'",
                          s->path, name);
    make_where(s, name, ".zattrs", where, sizeof where);
    rc = read_small(fd, ".zattrs", where, &txt, &len, err);
    close(fd);
    if (rc == CK_OK && txt) {
        char *q = quote_nonfinite(txt, len);
        free(txt);
        txt = q;
        if (!txt)
            rc = ck_err_set(err, CK_ENOMEM, "out of memory");
        else
            rc = ck_zarr_attrs_check(txt, strlen(txt), where, err);
    }
    if (rc == CK_OK && !txt && !(txt = strdup("{}")))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    if (rc != CK_OK) {
        free(txt);
        return rc;
    }
    *json = txt;
    return CK_OK;
}

static ck_code attrs_locked(ck_store *s, const char *name, const char *json,
                            ck_err *err)
{
    ck_code rc;
    int fd;

    if (strcmp(name, "/") != 0) {
        struct stat st;
        char dir[PATH_MAX];
        CK_TRY(dir_path(s, name, dir, sizeof dir, err));
        /* Attributes of a group that holds no array yet make the group. */
        if (lstat(dir, &st) != 0)
            CK_TRY(ensure_groups(s, name, 1, err));
    }
    CK_TRY(open_dir(s, name, &fd, err));
    if (fd < 0)
        return ck_err_set(err, CK_EIO, "%s: no group or array '%s'", s->path,
                          name);
    rc = write_file_at(fd, ".zattrs", json, strlen(json), s->path, err);
    close(fd);
    return rc;
}

static ck_code zarr_set_attrs(ck_store *s, const char *name, const char *json,
                              ck_err *err)
{
    zstore *zs = s->impl;
    char where[PATH_MAX + 600];
    ck_code rc;

    CK_TRY(check_name(s, name, err));
    make_where(s, name, ".zattrs", where, sizeof where);
    CK_TRY(ck_zarr_attrs_check(json, strlen(json), where, err));
    pthread_mutex_lock(&zs->lock);
    rc = attrs_locked(s, name, json, err);
    pthread_mutex_unlock(&zs->lock);
    return rc;
}

/* Reads the .zattrs of 'name' (*txt NULL when there is none) after
 * checking that it is a JSON object.  Called with zs->lock held. */
static ck_code read_zattrs(ck_store *s, const char *name, char **txt,
                           size_t *len, ck_err *err)
{
    char where[PATH_MAX + 600], *q;
    ck_code rc;
    int fd;

    *txt = NULL;
    CK_TRY(check_name(s, name, err));
    CK_TRY(open_dir(s, name, &fd, err));
    if (fd < 0)
        return ck_err_set(err, CK_EFORMAT, "%s: no group or array '%s'",
                          s->path, name);
    make_where(s, name, ".zattrs", where, sizeof where);
    rc = read_small(fd, ".zattrs", where, txt, len, err);
    close(fd);
    if (rc != CK_OK || !*txt)
        return rc;
    if (!(q = quote_nonfinite(*txt, *len)))
        rc = ck_err_set(err, CK_ENOMEM, "out of memory");
    else
        rc = ck_zarr_attrs_check(q, strlen(q), where, err);
    free(q);
    if (rc != CK_OK) {
        free(*txt);
        *txt = NULL;
    }
    return rc;
}

/* "s.zarr:/" or "s.zarr:/coef", as ck_store_get_attr's messages say. */
static void attr_label(const ck_store *s, const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s:%s", s->path, name);
}

static ck_code zarr_get_attr(ck_store *s, const char *name, const char *key,
                             ck_attr *v, ck_err *err)
{
    zstore *zs = s->impl;
    char label[PATH_MAX + 520], *txt = NULL;
    size_t len = 0;
    ck_code rc;

    attr_label(s, name, label, sizeof label);
    /* The lock keeps us from reading a .zattrs that set_attr is halfway
     * through rewriting. */
    pthread_mutex_lock(&zs->lock);
    rc = read_zattrs(s, name, &txt, &len, err);
    pthread_mutex_unlock(&zs->lock);
    if (rc == CK_OK && !txt)
        rc = ck_err_set(err, CK_EFORMAT, "%s: no attribute '%s'", label, key);
    else if (rc == CK_OK)
        rc = ck_zarr_attrs_get(txt, len, key, label, v, err);
    free(txt);
    return rc;
}

/* Rewrites the whole .zattrs with one member set; the store is still its
 * temporary directory, so there is no reader to see it half written
 * (other than our own, which zs->lock keeps out). */
static ck_code zarr_set_attr(ck_store *s, const char *name, const char *key,
                             const ck_attr *v, ck_err *err)
{
    zstore *zs = s->impl;
    char label[PATH_MAX + 520], *txt = NULL, *out = NULL;
    size_t len = 0;
    ck_code rc;
    int fd = -1;

    attr_label(s, name, label, sizeof label);
    pthread_mutex_lock(&zs->lock);
    rc = read_zattrs(s, name, &txt, &len, err);
    if (rc == CK_OK)
        rc = ck_zarr_attrs_set(txt, len, key, v, label, &out, err);
    if (rc == CK_OK && (rc = open_dir(s, name, &fd, err)) == CK_OK && fd < 0)
        rc = ck_err_set(err, CK_EIO, "%s: no group or array '%s'", s->path,
                        name);
    if (rc == CK_OK)
        rc = write_file_at(fd, ".zattrs", out, strlen(out), s->path, err);
    pthread_mutex_unlock(&zs->lock);
    if (fd >= 0)
        close(fd);
    free(out);
    free(txt);
    return rc;
}

/* Chunk files are complete once written; the one thing left is the root
 * .zgroup of a store that never became an array. */
static ck_code zarr_flush(ck_store *s, ck_err *err)
{
    zstore *zs = s->impl;
    ck_code rc = CK_OK;

    pthread_mutex_lock(&zs->lock);
    if (zs->root_kind == ROOT_UNDECIDED) {
        rc = write_zgroup(s, zs->root, err);
        if (rc == CK_OK)
            zs->root_kind = ROOT_GROUP;
    }
    pthread_mutex_unlock(&zs->lock);
    return rc;
}

const ck_store_ops ck_zarr_ops = {
    .name = "zarr",
    .open = zarr_open,
    .close = zarr_close,
    .list = zarr_list,
    .array_open = zarr_array_open,
    .array_close = zarr_array_close,
    .scratch_bytes = zarr_scratch_bytes,
    .read_chunk = zarr_read_chunk,
    .create = zarr_create,
    .array_create = zarr_array_create,
    .write_chunk = zarr_write_chunk,
    .get_attrs = zarr_get_attrs,
    .set_attrs = zarr_set_attrs,
    .set_attr = zarr_set_attr,
    .get_attr = zarr_get_attr,
    .flush = zarr_flush,
};
