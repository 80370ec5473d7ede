/* storage.h — allocation of CPU storage blocks (see storage.c for the cache of
 * large blocks). Internal to core/. */
#ifndef TJIT_CORE_STORAGE_H
#define TJIT_CORE_STORAGE_H

#include "core.h"

/* A storage of nbytes with refcount 1, or NULL when memory is short. */
tjc_storage *tjc_storage_new(size_t nbytes);
/* The same on a device: the host's blocks, or the device backend's memory. */
tjc_storage *tjc_storage_new_on(tj_device device, size_t nbytes);
/* Drops one reference; the last one frees or caches the block. */
void tjc_storage_release(tjc_storage *s);
/* Frees every cached block. */
void tjc_storage_cache_trim(void);

#endif
