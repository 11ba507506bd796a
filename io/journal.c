/*
 * io/journal.c - the journal of a resumable output (io/journal.h).
 * The file is text: "chunkctl-journal 1", the key's lines, "end", then
 * one line per unit, "CRC u UNIT LEN SUM ARRAY", CRC being the CRC-32C of
 * what follows it on the line.  A line that does not check ends the
 * journal: a kill can cut only the last write short, and anything after a
 * damaged line is not trusted.
 */
#define _XOPEN_SOURCE 700
#include "io/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/ck_comm.h"
#include "base/ck_config.h"
#include "io/codec.h"
#include "io/oserr.h"

static const char magic[] = "chunkctl-journal 1\n";

struct ck_journal {
    int fd;
    char path[4096];
    char target[4096];  /* the output, for messages */
    ck_journal_key key; /* what the run is (ck_journal_create) */
    pthread_mutex_t lock;
    /* read back from a killed run's journal */
    ck_journal_entry *e;
    int64_t n, cap;
    char **names;
    int nnames;
};

uint64_t ck_journal_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void key_add(ck_journal_key *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void key_add(ck_journal_key *k, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (k->overflow)
        return;
    va_start(ap, fmt);
    w = vsnprintf(k->text + k->len, sizeof k->text - k->len, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof k->text - k->len) {
        k->overflow = 1;
        k->text[k->len] = '\0';
        return;
    }
    k->len += (size_t)w;
}

void ck_journal_key_init(ck_journal_key *k)
{
    memset(k, 0, sizeof *k);
    key_add(k, "version %s\n", CK_VERSION);
}

void ck_journal_key_command(ck_journal_key *k, const void *bytes, size_t n)
{
    key_add(k, "command %016" PRIx64 "\n",
            ck_journal_hash(CK_JOURNAL_HASH_INIT, bytes, n));
}

/* What a directory holds, for a Zarr store: the number of entries below
 * it and a sum of a hash of each one's name (from the top), kind, size
 * and modification time.  A sum does not depend on the order readdir
 * gives; any chunk or metadata file written, added or removed, at any
 * depth, changes it.  Symbolic links are followed to what they name but
 * never walked into; what cannot be read counts as such. */
typedef struct tree_sum {
    uint64_t n, sum;
} tree_sum;

static void tree_add(tree_sum *t, const char *rel, const struct stat *st)
{
    uint64_t h = ck_journal_hash(CK_JOURNAL_HASH_INIT, rel, strlen(rel) + 1);
    int64_t v[4] = {(int64_t)(st ? st->st_mode & S_IFMT : 0),
                    st ? (int64_t)st->st_size : -1,
                    st ? (int64_t)st->st_mtim.tv_sec : -1,
                    st ? (int64_t)st->st_mtim.tv_nsec : -1};

    t->sum += ck_journal_hash(h, v, sizeof v);
    t->n++;
}

static void tree_walk(int dfd, char *rel, size_t rlen, size_t cap, int depth,
                      tree_sum *t)
{
    DIR *d = fdopendir(dfd);
    struct dirent *e;

    if (!d) {
        close(dfd);
        tree_add(t, rel, NULL);
        return;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        size_t n = strlen(e->d_name);
        int sub, link;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (rlen + n + 2 > cap) {
            tree_add(t, rel, NULL);
            continue;
        }
        rel[rlen] = '/';
        memcpy(rel + rlen + 1, e->d_name, n + 1);
        link = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISLNK(st.st_mode);
        if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) {
            tree_add(t, rel, NULL);
        } else {
            tree_add(t, rel, &st);
            if (S_ISDIR(st.st_mode) && !link && depth < 64 &&
                (sub = openat(dirfd(d), e->d_name,
                              O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
                tree_walk(sub, rel, rlen + 1 + n, cap, depth + 1, t);
        }
        rel[rlen] = '\0';
    }
    closedir(d);
}

void ck_journal_key_input(ck_journal_key *k, const char *path)
{
    struct stat st;
    char rel[4096] = "";
    tree_sum t = {0, 0};
    int fd;

    /* A path with a newline cannot be told apart from two lines. */
    if (strchr(path, '\n')) {
        k->overflow = 1;
        return;
    }
    if (stat(path, &st) != 0) {
        key_add(k, "input %s missing\n", path);
        return;
    }
    key_add(k, "input %s %lld %lld.%09ld", path, (long long)st.st_size,
            (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    /* A Zarr store is a directory whose own time changes only when entries
     * come and go in it, not below it nor when a file is rewritten.  Under
     * MPI, where --resume is refused, the ranks spare the file system a
     * walk each (their keys stay alike). */
    if (S_ISDIR(st.st_mode) && ck_comm_size() == 1 &&
        (fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        tree_walk(fd, rel, 0, sizeof rel, 0, &t);
        key_add(k, " tree %" PRIu64 " %016" PRIx64, t.n, t.sum);
    }
    key_add(k, "\n");
}

void ck_journal_sum_init(ck_journal_sum *s)
{
    s->h = CK_JOURNAL_HASH_INIT;
    s->len = 0;
}

static void sum_mix(ck_journal_sum *s, uint32_t crc, size_t n)
{
    s->h = (s->h ^ crc) * 0x100000001b3ull;
    s->len += n;
}

void ck_journal_sum_block(ck_journal_sum *s, const void *p, size_t n)
{
    sum_mix(s, ck_crc32c(p, n), n);
}

/* Reads through a buffer well under glibc's mmap threshold: a 1 MiB
 * buffer malloc'd and freed per chunk raised that threshold, after which
 * the worker threads' arenas kept megabytes of freed chunk-sized blocks
 * that --memory does not see. */
enum { SUM_PIECE = 64 << 10 };

int ck_journal_sum_fd(int fd, uint64_t off, uint64_t n, uint64_t *len,
                      uint64_t *sum)
{
    ck_journal_sum js;
    char *buf = malloc(SUM_PIECE);
    int done = 0;

    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    ck_journal_sum_init(&js);
    while (n > 0 && !done) {
        uint64_t block = n < CK_JOURNAL_BLOCK ? n : CK_JOURNAL_BLOCK, got = 0;
        uint32_t crc = 0;
        while (got < block) {
            size_t want =
                block - got < SUM_PIECE ? (size_t)(block - got) : SUM_PIECE;
            ssize_t k = pread(fd, buf, want, (off_t)(off + got));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                free(buf);
                return -1;
            }
            if (k == 0) { /* the end of the file */
                done = 1;
                break;
            }
            crc = ck_crc32c_update(crc, buf, (size_t)k);
            got += (uint64_t)k;
        }
        if (got > 0)
            sum_mix(&js, crc, (size_t)got);
        off += got;
        n -= got;
    }
    free(buf);
    *len = js.len;
    *sum = js.h;
    return 0;
}

uint64_t ck_journal_sum_mem(const void *p, size_t n)
{
    ck_journal_sum js;

    ck_journal_sum_init(&js);
    for (size_t at = 0; at < n; at += CK_JOURNAL_BLOCK)
        ck_journal_sum_block(&js, (const char *)p + at,
                             n - at < CK_JOURNAL_BLOCK ? n - at
                                                       : CK_JOURNAL_BLOCK);
    return js.h;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static ck_journal *journal_new(const char *path)
{
    ck_journal *j = calloc(1, sizeof *j);

    if (!j)
        return NULL;
    j->fd = -1;
    snprintf(j->path, sizeof j->path, "%s", path);
    pthread_mutex_init(&j->lock, NULL);
    return j;
}

ck_code ck_journal_create(const char *path, const ck_journal_key *key,
                          const char *target, ck_journal **out, ck_err *err)
{
    ck_journal *j;

    if (key->overflow)
        return ck_err_set(err, CK_ENOTSUP, "%s: run too large to journal",
                          target);
    if (!(j = journal_new(path)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    snprintf(j->target, sizeof j->target, "%s", target);
    j->key = *key;
    j->fd =
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
    if (j->fd < 0 || write_all(j->fd, magic, sizeof magic - 1) != 0 ||
        write_all(j->fd, key->text, key->len) != 0 ||
        write_all(j->fd, "end\n", 4) != 0 || fdatasync(j->fd) != 0) {
        int e = errno;
        ck_journal_close(j);
        unlink(path);
        return ck_os_fail(err, CK_EIO, e, "%s: cannot write its journal %s",
                          target, path);
    }
    *out = j;
    return CK_OK;
}

/* The next line of buf[*at..n) without its '\n'; NULL when no whole line
 * is left (a last line cut short has no '\n'). */
static char *next_line(char *buf, size_t n, size_t *at)
{
    char *s = buf + *at, *nl;

    if (*at >= n || !(nl = memchr(s, '\n', n - *at)))
        return NULL;
    *nl = '\0';
    *at = (size_t)(nl - buf) + 1;
    return s;
}

/* The refusal for the first key line that differs: want (this run's, or
 * NULL when the killed run had more lines) against got (the journal's). */
static ck_code refuse(const char *target, const char *want, const char *got,
                      ck_err *err)
{
    static const char tail[] = "(run without --resume to start afresh)";
    char wf[16] = "", gf[16] = "", wv[256] = "", gv[256] = "";

    if (want)
        sscanf(want, "%15s %255s", wf, wv);
    if (got)
        sscanf(got, "%15s %255s", gf, gv);
    if (strcmp(wf, "version") == 0 && strcmp(gf, "version") == 0)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: cannot resume: the killed run was chunkctl "
                          "%s, this is %s %s",
                          target, gv, wv, tail);
    if (strcmp(wf, "command") == 0 && strcmp(gf, "command") == 0)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: cannot resume: the killed run had another "
                          "pipeline or other options %s",
                          target, tail);
    if (strcmp(wf, "input") == 0 && strcmp(gf, "input") == 0 &&
        strcmp(wv, gv) == 0)
        return ck_err_set(err, CK_EUSAGE,
                          "%s: cannot resume: input %s changed since the "
                          "killed run (size or time differ) %s",
                          target, wv, tail);
    return ck_err_set(err, CK_EUSAGE,
                      "%s: cannot resume: the killed run had other inputs "
                      "%s",
                      target, tail);
}

static int name_index(ck_journal *j, const char *name)
{
    for (int i = j->nnames - 1; i >= 0; i--)
        if (strcmp(j->names[i], name) == 0)
            return i;
    char **v = realloc(j->names, (size_t)(j->nnames + 1) * sizeof *v);
    if (!v)
        return -1;
    j->names = v;
    if (!(v[j->nnames] = strdup(name)))
        return -1;
    return j->nnames++;
}

/* Parses the entry lines from buf[at..n) into j, stopping at the first
 * line that does not check.  -1 when out of memory. */
static int read_entries(ck_journal *j, char *buf, size_t n, size_t at)
{
    char *line;

    while ((line = next_line(buf, n, &at)) != NULL) {
        unsigned crc;
        long long unit;
        unsigned long long len, sum, at_off = 0;
        int off = 0, o2 = 0;
        if (sscanf(line, "%8x ", &crc) != 1 || strlen(line) < 10 ||
            line[8] != ' ' || ck_crc32c(line + 9, strlen(line + 9)) != crc ||
            sscanf(line + 9, "u %lld %llu %llx %n", &unit, &len, &sum, &off) !=
                3 ||
            off == 0 || unit < 0)
            break;
        /* "@OFFSET " before the name: where an HDF5 chunk's bytes start
         * (names always start with '/'). */
        if (line[9 + off] == '@' &&
            (sscanf(line + 9 + off, "@%llu %n", &at_off, &o2) != 1 || !o2))
            break;
        off += o2;
        if (j->n == j->cap) {
            int64_t cap = j->cap ? 2 * j->cap : 256;
            ck_journal_entry *e = realloc(j->e, (size_t)cap * sizeof *e);
            if (!e)
                return -1;
            j->e = e;
            j->cap = cap;
        }
        int a = name_index(j, line + 9 + off);
        if (a < 0)
            return -1;
        j->e[j->n++] = (ck_journal_entry){
            .unit = unit, .len = len, .sum = sum, .off = at_off, .array = a};
    }
    return 0;
}

ck_code ck_journal_read(const char *path, const ck_journal_key *key,
                        const char *target, ck_journal **out, ck_err *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char *buf = NULL, *kcopy = NULL, *line, *want;
    size_t at = 0, kat = 0, got = 0;
    ck_journal *j = NULL;
    ck_code rc = CK_OK;

    *out = NULL;
    if (fd < 0)
        return errno == ENOENT ? CK_OK
                               : ck_os_fail(err, CK_EIO, errno, "%s", path);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = ck_err_set(err, CK_EIO, "%s: not a regular file", path);
        goto out;
    }
    if (!(buf = malloc((size_t)st.st_size + 1)) ||
        !(kcopy = malloc(key->len + 1)) || !(j = journal_new(path))) {
        rc = ck_err_set(err, CK_ENOMEM, "%s: cannot read", path);
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    memcpy(kcopy, key->text, key->len + 1);
    /* A header cut short (killed before the first chunk): nothing kept. */
    if (got < sizeof magic - 1 || memcmp(buf, magic, sizeof magic - 1) != 0 ||
        !strstr(buf, "\nend\n"))
        goto out;
    at = sizeof magic - 1;
    for (;;) {
        line = next_line(buf, got, &at);
        want = next_line(kcopy, key->len, &kat);
        if (!line)
            goto out; /* unreachable: "end" is there */
        if (strcmp(line, "end") == 0 && !want)
            break;
        if (strcmp(line, "end") == 0 || !want || strcmp(line, want) != 0) {
            rc = refuse(target, want, strcmp(line, "end") ? line : NULL, err);
            goto out;
        }
    }
    if (read_entries(j, buf, got, at) != 0) {
        rc = ck_err_set(err, CK_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    *out = j;
    j = NULL;
out:
    close(fd);
    free(buf);
    free(kcopy);
    ck_journal_close(j);
    return rc;
}

int64_t ck_journal_count(const ck_journal *j)
{
    return j ? j->n : 0;
}

const ck_journal_entry *ck_journal_at(const ck_journal *j, int64_t i)
{
    return &j->e[i];
}

const char *ck_journal_array(const ck_journal *j, const ck_journal_entry *e)
{
    return j->names[e->array];
}

const ck_journal_key *ck_journal_key_of(const ck_journal *j)
{
    return &j->key;
}

const char *ck_journal_path(const ck_journal *j)
{
    return j->path;
}

ck_code ck_journal_append(ck_journal *j, const char *array,
                          const ck_journal_entry *e, int n, ck_err *err)
{
    char line[700], *buf;
    size_t used = 0, cap = (size_t)n * sizeof line;
    ck_code rc = CK_OK;

    if (n <= 0)
        return CK_OK;
    if (!(buf = malloc(cap)))
        return ck_err_set(err, CK_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        char at[32] = "";
        if (e[i].off)
            snprintf(at, sizeof at, "@%llu ", (unsigned long long)e[i].off);
        int w = snprintf(line, sizeof line, "u %lld %llu %016llx %s%.600s",
                         (long long)e[i].unit, (unsigned long long)e[i].len,
                         (unsigned long long)e[i].sum, at, array);
        used += (size_t)snprintf(buf + used, cap - used, "%08x %s\n",
                                 (unsigned)ck_crc32c(line, (size_t)w), line);
    }
    pthread_mutex_lock(&j->lock);
    if (write_all(j->fd, buf, used) != 0 || fdatasync(j->fd) != 0)
        rc = ck_os_fail(err, CK_EIO, errno, "%s: cannot write its journal %s",
                        j->target, j->path);
    pthread_mutex_unlock(&j->lock);
    free(buf);
    return rc;
}

void ck_journal_close(ck_journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    for (int i = 0; i < j->nnames; i++)
        free(j->names[i]);
    free(j->names);
    free(j->e);
    pthread_mutex_destroy(&j->lock);
    free(j);
}
