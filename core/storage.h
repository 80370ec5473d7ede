/* storage.h — allocation of CPU storage blocks (see storage.c for the cache of
 * large blocks). Internal to core/, and to replay plans (interpreter/plan_run.c),
 * which give arena and output buffers their storage directly. */
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

/* Allocation counters, for the tests that prove steady-state replay
 * allocation-free and for the benches' memory figures: storages made (host
 * and device), tensor headers made, and the bytes of storage live now and at
 * most since the last reset. */
typedef struct tjc_alloc_counts {
    long long storages, headers, live_bytes, peak_bytes;
} tjc_alloc_counts;
void tjc_alloc_counts_get(tjc_alloc_counts *out);
void tjc_alloc_counts_reset_peak(void);
/* Counts one tensor header (tensor.c calls it for each it makes). */
void tjc_count_header(void);

#endif
