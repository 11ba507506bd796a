/*
 * base/ck_cache.h - where chunkctl keeps what it compiles at run time
 * (NVRTC cubins, user kernels' shared objects), so a later process finds
 * them: $CHUNKCTL_CACHE_DIR, else $XDG_CACHE_HOME/chunkctl/kernels, else
 * ~/.cache/chunkctl/kernels.
 */
#ifndef CK_CACHE_DIR_H
#define CK_CACHE_DIR_H

#include <stddef.h>

/* Writes the cache directory, with "/sub" appended when sub is not NULL,
 * into dir (n bytes) and creates it and its parents (an existing one is
 * fine).  0 when there is none to use (no variable set, too long, or it
 * cannot be made): callers then go without a disk cache; dir is then ""
 * where no variable is set, else the directory it tried. */
int ck_cache_dir(const char *sub, char *dir, size_t n);

#endif
