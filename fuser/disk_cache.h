/* disk_cache.h — the on-disk kernel cache that code generators share (the
 * LLVM backend's object files today, the CUDA backend's binaries next): where
 * it is, whether it can be trusted, and reading and writing its entries.
 * Prefix tjf_disk_cache.
 *
 * The cache holds machine code that the process runs, so it trusts only a
 * directory that is the user's own. It is $TJIT_CACHE_DIR, or with
 * TJIT_LLVM_CACHE=1 $XDG_CACHE_HOME/tjit (else $HOME/.cache/tjit). A missing
 * directory is created with mode 0700, missing parents too; existing ones are
 * left as they are. A directory or an entry that is not owned by the
 * effective user, or that group or others may write, is not read or written:
 * one warning per process on stderr names the path and the reason, and the
 * caller compiles as if the entry were missing. Entries are opened with
 * O_NOFOLLOW relative to the opened directory and checked on the open file
 * (owner, mode, regular file), so a symbolic link or a renamed directory
 * cannot redirect a read.
 *
 * An entry is a file named by the caller (a hash of its key, e.g.
 * "tjl_<hash>.o") holding a magic string, the whole key and the data; a read
 * whose key differs is a miss, so a hash collision costs a compile, never a
 * wrong kernel. Writes go to a temporary file (mode 0600) in the same
 * directory renamed over the entry, so readers never see part of a file.
 *
 * Nothing here sets tj_last_error: the cache never fails a compile.
 * Thread-safe. */
#ifndef TJIT_DISK_CACHE_H
#define TJIT_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#define TJF_DISK_CACHE_MAGIC "TJITOBJ1" /* 8 bytes, then the key's length as a uint64 */

/* The cache directory, created when missing, into buf; false when no cache
 * is configured or the directory cannot be trusted (or does not fit in buf). */
bool tjf_disk_cache_dir(char *buf, size_t n);

/* The data stored under name for key: *data malloc'd (the caller frees it),
 * *size bytes. False on a miss: no trusted cache, no such entry, an entry
 * that is not trusted, not complete or stored for another key. Names are
 * made of letters, digits, '_', '-' and '.', and do not start with '.'. */
bool tjf_disk_cache_read(const char *name, const char *key, void **data, size_t *size);

/* Stores data under name for key, replacing the entry atomically; false when
 * nothing was stored (no trusted cache, a bad name, a failed write). */
bool tjf_disk_cache_write(const char *name, const char *key, const void *data, size_t size);

#endif
