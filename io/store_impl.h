/*
 * io/store_impl.h - what a store kind implements (private to io/).
 * io/store.c owns the generic parts: name resolution, temporary names and
 * the commit rename, region reads, attribute copies.  A kind fills one
 * ck_store_ops table; io/hdf5/ and io/zarr/ are the two.  The kinds
 * include this header and io/array.h (the array types), never io/store.h:
 * the dispatcher calls the kinds, not the other way round.
 */
#ifndef CK_STORE_IMPL_H
#define CK_STORE_IMPL_H

#include <limits.h>

#include "base/ck_err.h"
#include "base/ck_grid.h"
#include "base/ck_mem.h"
#include "io/array.h"

typedef struct ck_store_ops ck_store_ops;

struct ck_store {
    const ck_store_ops *ops;
    ck_store_kind kind;
    char path[PATH_MAX]; /* as given; the final name when writing */
    char tmp[PATH_MAX];  /* where a store being written lives until commit */
    int writing;
    int committed;
    int force; /* --force: the commit may replace an existing target */
    void *impl;
    /* --resume (io/journal.h): this run's journal of written units, and
     * the killed run's temporary (from) and journal (kept) it takes its
     * recorded units from; NULL / "" when there is none. */
    struct ck_journal *journal;
    struct ck_journal *kept;
    char from[PATH_MAX];
    char jtmp[PATH_MAX + 16]; /* an HDF5 temporary's journal, beside it */
    /* Writing a directory (Zarr): the temporary opened before anything
     * was written into it, for the commit's syncfs, which reports the
     * write-back errors of the file system since then; -1 when none. */
    int sync_fd;
};

struct ck_array {
    ck_store *store;
    ck_array_info info;
    ck_grid grid; /* set by io/store.c from info after array_open/create */
    void *impl;
};

struct ck_store_ops {
    const char *name;
    /* Opens s->path read-only into s->impl. */
    ck_code (*open)(ck_store *s, ck_err *err);
    /* Frees s->impl (after flush or when abandoning a write). */
    void (*close)(ck_store *s);
    /* Appends the names of all arrays ("/g/x"; "/" for a root Zarr array),
     * or with 'groups' of all groups but the root ("/g"). */
    ck_code (*list)(ck_store *s, int groups, ck_names *out, ck_err *err);
    /* Optional (NULL: none).  Appends one message for each name the
     * store's metadata gives that leads to no array or object: an array a
     * Zarr v2 .zmetadata lists whose .zarray is gone, an HDF5 soft or
     * external link whose target is not there. */
    ck_code (*dangling)(ck_store *s, ck_names *out, ck_err *err);
    /* Opens array 'name' (normalised: leading '/', no trailing '/') and
     * fills a->info and a->impl.  CK_EFORMAT if there is no such array. */
    ck_code (*array_open)(ck_store *s, const char *name, ck_array *a,
                          ck_err *err);
    void (*array_close)(ck_array *a);
    size_t (*scratch_bytes)(const ck_array *a);
    ck_code (*read_chunk)(ck_array *a, const int64_t *coords, void *dst,
                          ck_arena *scratch, ck_err *err);
    /* Optional (NULL: never): ck_array_view_chunk_bytes (off + len within
     * the chunk's bytes, checked by the caller). */
    int (*view_chunk)(ck_array *a, const int64_t *coords, size_t off,
                      size_t len, ck_chunk_view *v);
    /* Optional (NULL: never): 1 when every chunk of a is stored raw (no
     * filters) at a place known without a lookup, so read_bytes serves it. */
    int (*raw)(ck_array *a);
    /* Bytes [off, off + len) of chunk coords as read_chunk gives them (off
     * and len multiples of the element size, within the chunk) into dst,
     * read from the file; a chunk not stored reads as the fill value. */
    ck_code (*read_bytes)(ck_array *a, const int64_t *coords, size_t off,
                          size_t len, void *dst, ck_err *err);
    /* Creates an empty store at s->tmp. */
    ck_code (*create)(ck_store *s, ck_err *err);
    /* Creates spec->name with its parent groups; fills a->info, a->impl. */
    ck_code (*array_create)(ck_store *s, const ck_array_spec *spec, ck_array *a,
                            ck_err *err);
    ck_code (*write_chunk)(ck_array *a, const int64_t *coords, const void *src,
                           ck_arena *scratch, ck_err *err);
    /* Attributes of a group or array as the text of one JSON object
     * (malloc'd, caller frees); "{}" when there are none. */
    ck_code (*get_attrs)(ck_store *s, const char *name, char **json,
                         ck_err *err);
    /* Sets attributes from the text of one JSON object. */
    ck_code (*set_attrs)(ck_store *s, const char *name, const char *json,
                         ck_err *err);
    /* One attribute of a group or array; 'name' normalised, 'key' and
     * 'v' checked by io/store.c (see ck_store_set_attr, _get_attr).  They
     * are typed, unlike get_attrs/set_attrs, whose JSON cannot tell a
     * float 1.0 from an integer 1 nor keep 64-bit integers exact. */
    ck_code (*set_attr)(ck_store *s, const char *name, const char *key,
                        const ck_attr *v, ck_err *err);
    ck_code (*get_attr)(ck_store *s, const char *name, const char *key,
                        ck_attr *v, ck_err *err);
    /* Optional (NULL: the JSON's types stand).  After set_attrs of
     * src_name's attributes, gives those of dst_name that are numbers in
     * both the exact numeric types they have in src, a store of the same
     * kind: JSON widens a float32 scale_factor to float64 and an int16
     * flag_values to int64. */
    ck_code (*keep_attr_types)(ck_store *dst, const char *dst_name,
                               ck_store *src, const char *src_name,
                               ck_err *err);
    /* Optional (NULL: outputs of this kind are not resumed).  A unit is
     * a chunk, or for a sharded array (info.shards set) a whole shard, at
     * unit coordinates 'coords'.  unit_sum: its stored bytes' offset in
     * their file (HDF5; 0 for a unit that is a file of its own), length
     * and checksum (io/journal.h) as they are now at s->tmp; *found 0
     * when it is not stored. */
    ck_code (*unit_sum)(ck_array *a, const int64_t *coords, int *found,
                        uint64_t *off, uint64_t *len, uint64_t *sum,
                        ck_err *err);
    /* Moves (or copies) unit 'coords' of the same array in the store at
     * 'from' (a killed run's temporary) into a, when its stored bytes
     * there, off bytes into their file, are len long with checksum sum;
     * *taken 0 (and nothing changed) when they are not, or it is not
     * there. */
    ck_code (*take_unit)(ck_array *a, const char *from, const int64_t *coords,
                         uint64_t off, uint64_t len, uint64_t sum, int *taken,
                         ck_err *err);
    /* Makes everything durable at s->tmp (HDF5: close the file) before
     * the rename. */
    ck_code (*flush)(ck_store *s, ck_err *err);
};

extern const ck_store_ops ck_h5_ops;
extern const ck_store_ops ck_zarr_ops;

/* 1 if path is an HDF5 file (signature at 0, 512, 1024, ...). */
int ck_h5_sniff(const char *path);
/* 1 if path is a directory holding .zarray or .zgroup. */
int ck_zarr_sniff(const char *path);

/* Largest stored size accepted for a chunk of n decoded bytes before it is
 * called corrupt: no codec expands data more than this, so a damaged size
 * field can never make a reader allocate gigabytes. */
static inline size_t ck_stored_max(size_t n)
{
    return n + n / 16 + 4096;
}

#endif
