/* alloc.h — the caching device allocator: device memory in segments taken
 * from a raw allocator, cut into size-rounded blocks, kept in free lists per
 * (stream, pool) after release, split and merged, and given back to the raw
 * allocator only by tjcu_allocator_empty_cache, when an allocation fails (then
 * retried once) and by tjcu_allocator_free. Prefix tjcu_allocator / tjcu_raw.
 *
 * It owns no device code: the raw allocator is an interface, so the same
 * cache serves the driver (cuMemAlloc/cuMemFree), the host execution harness
 * (malloc/free) and the tests (a counting fake). The allocator never touches
 * the memory it hands out.
 *
 * Sizes (as PyTorch's CUDACachingAllocator): requests are rounded up to a
 * multiple of 512 bytes (at least 512). Requests of at most 1 MiB come from
 * the small pool, whose segments are 2 MiB; larger ones from the large pool,
 * whose segments are 20 MiB for requests under 10 MiB and the request rounded
 * up to 2 MiB otherwise. A free block is best-fit: the smallest free block of
 * the same stream and pool that is large enough. The block's tail is split off
 * and kept free when it is at least 512 bytes (small pool) or more than 1 MiB
 * (large pool). A released block merges with free neighbours of its segment.
 * Blocks never move between streams: a block released on stream A serves only
 * later requests on stream A (the caller orders reuse on that stream).
 *
 * A request of zero bytes succeeds with *ptr = NULL and takes nothing;
 * releasing NULL does nothing.
 *
 * Thread-safe: one mutex per allocator; the raw allocator is called under it.
 * Each malloc and release costs O(log n) in the number of free blocks (a treap
 * per pool ordered by stream, size and address) plus a hash lookup.
 */
#ifndef TJIT_CUDA_ALLOC_H
#define TJIT_CUDA_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "tjit/tjit.h"

/* Where segments come from. alloc may fail (TJ_ERR_MEMORY, with or without a
 * tj_last_error message); free returns memory that alloc gave. */
typedef struct tjcu_raw_allocator {
    void *ctx;
    tj_status (*alloc)(void *ctx, int device, size_t bytes, void **ptr);
    tj_status (*free)(void *ctx, int device, void *ptr);
} tjcu_raw_allocator;

typedef struct tjcu_allocator tjcu_allocator;

#define TJCU_MIN_BLOCK ((size_t)512)              /* rounding of every request */
#define TJCU_SMALL_REQUEST ((size_t)1 << 20)      /* largest request of the small pool */
#define TJCU_SMALL_SEGMENT ((size_t)2 << 20)      /* segment size of the small pool */
#define TJCU_LARGE_SEGMENT ((size_t)20 << 20)     /* segment for large requests under ... */
#define TJCU_MIN_LARGE_ALLOC ((size_t)10 << 20)   /* ... this; larger ones get a segment of ... */
#define TJCU_LARGE_ROUNDING ((size_t)2 << 20)     /* ... their size rounded up to this */

typedef struct tjcu_memory_stats {
    size_t allocated;      /* bytes in blocks handed out (rounded sizes) */
    size_t reserved;       /* bytes in segments held from the raw allocator */
    size_t peak_allocated; /* highest value of allocated since creation or the last reset */
    size_t peak_reserved;
    uint64_t n_alloc_calls; /* raw alloc calls, failed ones included */
    uint64_t n_free_calls;  /* raw free calls */
    uint64_t n_cache_hits;  /* requests served without a raw call */
    uint64_t n_oom_retries; /* raw allocs retried after emptying the cache */
    uint64_t n_segments;    /* segments held now */
    uint64_t n_free_blocks; /* free blocks in the pools now */
} tjcu_memory_stats;

/* A new allocator for device over raw (copied); NULL when out of host memory. */
tjcu_allocator *tjcu_allocator_new(const tjcu_raw_allocator *raw, int device);
/* Returns every segment to raw, blocks still handed out included. */
void tjcu_allocator_free(tjcu_allocator *a);

/* At least bytes of device memory for use on stream (an opaque key; NULL is
 * the default stream). When the raw allocator fails, the unused segments are
 * freed and the raw allocation retried once; failing again gives
 * TJ_ERR_MEMORY with a message that names the request, the allocated and
 * reserved bytes. */
tj_status tjcu_allocator_malloc(tjcu_allocator *a, size_t bytes, void *stream, void **ptr);
/* Gives a block back to the cache, never to the raw allocator. A pointer that
 * is not a block handed out by a (or was released already) is TJ_ERR_ARG. */
tj_status tjcu_allocator_release(tjcu_allocator *a, void *ptr);
/* Frees the segments that hold no block in use to the raw allocator. A raw
 * free that fails keeps its segment and its error is returned. */
tj_status tjcu_allocator_empty_cache(tjcu_allocator *a);

void tjcu_allocator_stats(tjcu_allocator *a, tjcu_memory_stats *s);
/* Peaks start again from the current values. */
void tjcu_allocator_reset_peak(tjcu_allocator *a);

/* Walks every segment and checks the invariants: blocks tile each segment
 * exactly, no two neighbouring blocks are both free, every free block is in
 * its pool's free tree and nothing else is, the tree is ordered, every block
 * in use is in the pointer table, and the stats match the blocks. TJ_OK, or
 * TJ_ERR_INTERNAL naming the first broken invariant. */
tj_status tjcu_allocator_check(tjcu_allocator *a);

#endif
