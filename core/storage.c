/* storage.c — CPU storage blocks, and a small cache that keeps large blocks
 * for reuse after their last tensor is released.
 *
 * Why a cache: a fresh block from malloc is fresh pages from the kernel, and
 * every 4 KiB of it page-faults on first touch. For a 40 MB result of a
 * pointwise op the faults cost several times the op itself (the op streams
 * 120 MB in about 3 ms; faulting in 40 MB takes about 17 ms on a VM). Model
 * code allocates the same sizes step after step, so a handful of recently
 * released blocks, matched by size, removes nearly all of it. Large blocks are
 * also 2 MiB aligned and advised as huge-page candidates, which makes the
 * first touch cheaper too.
 *
 * Blocks from 64 KiB are kept, not only big ones: glibc serves such sizes
 * from mmap or from the top of its heap, and gives both back to the kernel on
 * free (munmap, or trimming the heap), so they fault again at the next step.
 * An MLP's training step of [64, 784] x [784, 256] products faulted about
 * 400 pages a step that way, and ran at half its speed half the time.
 *
 * Under AddressSanitizer the cache is off, so a use after release is still
 * caught in the sanitizer build.
 */
#define _DEFAULT_SOURCE /* madvise */
#include "core/alloc.h"
#include "storage.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#define SMALL_ALIGN 64                 /* vector loads stay aligned at offset 0 */
#define MID_BLOCK ((size_t)64 << 10)    /* cached, in whole pages, from here */
#define PAGE ((size_t)4 << 10)
#define BIG_BLOCK ((size_t)1 << 20)     /* huge-page aligned from here */
#define HUGE_PAGE ((size_t)2 << 20)
#define CACHE_SLOTS 32
#define CACHE_MAX_BYTES ((size_t)256 << 20)

#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ON 0
#endif
#endif
#ifndef CACHE_ON
#define CACHE_ON 1
#endif

typedef struct block {
    void *data;
    size_t cap;
} block;

static struct {
    pthread_mutex_t lock;
    block slot[CACHE_SLOTS]; /* oldest first */
    int n;
    size_t bytes;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The capacity a block of nbytes gets: mid-sized blocks in whole pages, big
 * ones in whole huge pages. */
static size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

static size_t capacity_for(size_t nbytes) {
    if (nbytes < MID_BLOCK) return nbytes ? round_up(nbytes, SMALL_ALIGN) : SMALL_ALIGN;
    return round_up(nbytes, nbytes < BIG_BLOCK ? PAGE : HUGE_PAGE);
}

/* A cached block that fits nbytes without wasting more than a quarter. */
static void *cache_take(size_t cap) {
    void *data = NULL;
    pthread_mutex_lock(&cache.lock);
    int best = -1;
    for (int i = 0; i < cache.n; i++) {
        size_t c = cache.slot[i].cap;
        if (c >= cap && c <= cap + cap / 4 && (best < 0 || c < cache.slot[best].cap)) best = i;
    }
    if (best >= 0) {
        data = cache.slot[best].data;
        cache.bytes -= cache.slot[best].cap;
        for (int i = best + 1; i < cache.n; i++) cache.slot[i - 1] = cache.slot[i];
        cache.n--;
    }
    pthread_mutex_unlock(&cache.lock);
    return data;
}

/* Keeps a block, evicting the oldest ones to stay within the limits; returns
 * false when the block is too big to keep at all. */
static bool cache_put(void *data, size_t cap) {
    if (cap > CACHE_MAX_BYTES / 2) return false;
    void *evicted[CACHE_SLOTS];
    int n_evicted = 0;
    pthread_mutex_lock(&cache.lock);
    while (cache.n > 0 && (cache.n == CACHE_SLOTS || cache.bytes + cap > CACHE_MAX_BYTES)) {
        evicted[n_evicted++] = cache.slot[0].data;
        cache.bytes -= cache.slot[0].cap;
        for (int i = 1; i < cache.n; i++) cache.slot[i - 1] = cache.slot[i];
        cache.n--;
    }
    cache.slot[cache.n++] = (block){data, cap};
    cache.bytes += cap;
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < n_evicted; i++) tjc_free(evicted[i]);
    return true;
}

void tjc_storage_cache_trim(void) {
    pthread_mutex_lock(&cache.lock);
    int n = cache.n;
    block taken[CACHE_SLOTS];
    for (int i = 0; i < n; i++) taken[i] = cache.slot[i];
    cache.n = 0;
    cache.bytes = 0;
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < n; i++) tjc_free(taken[i].data);
}

static void *block_alloc(size_t cap) {
    if (cap < MID_BLOCK) return tjc_aligned_alloc(SMALL_ALIGN, cap);
    void *data = CACHE_ON ? cache_take(cap) : NULL;
    if (data) return data;
    size_t align = cap < BIG_BLOCK ? PAGE : HUGE_PAGE;
    data = tjc_aligned_alloc(align, cap);
    if (!data && CACHE_ON) { /* memory is short: give back what the cache holds */
        tjc_storage_cache_trim();
        data = tjc_aligned_alloc(align, cap);
    }
#ifdef MADV_HUGEPAGE
    if (data && cap >= BIG_BLOCK) madvise(data, cap, MADV_HUGEPAGE); /* advice only */
#endif
    return data;
}

/* ---- counters: for tests of steady-state replay and for benches ---------------- */

static atomic_llong n_storages, n_headers, live_bytes, peak_bytes;

static void count_storage(size_t nbytes) {
    atomic_fetch_add_explicit(&n_storages, 1, memory_order_relaxed);
    long long live = atomic_fetch_add_explicit(&live_bytes, (long long)nbytes, memory_order_relaxed) +
                     (long long)nbytes;
    long long peak = atomic_load_explicit(&peak_bytes, memory_order_relaxed);
    while (live > peak && !atomic_compare_exchange_weak_explicit(&peak_bytes, &peak, live,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed)) {
    }
}

void tjc_count_header(void) { atomic_fetch_add_explicit(&n_headers, 1, memory_order_relaxed); }

void tjc_alloc_counts_get(tjc_alloc_counts *out) {
    out->storages = atomic_load(&n_storages);
    out->headers = atomic_load(&n_headers);
    out->live_bytes = atomic_load(&live_bytes);
    out->peak_bytes = atomic_load(&peak_bytes);
}

void tjc_alloc_counts_reset_peak(void) { atomic_store(&peak_bytes, atomic_load(&live_bytes)); }

tjc_storage *tjc_storage_new(size_t nbytes) {
    tjc_storage *s = tjc_malloc(sizeof *s);
    if (!s) return NULL;
    s->data = block_alloc(capacity_for(nbytes));
    if (!s->data) {
        tjc_free(s);
        return NULL;
    }
    atomic_init(&s->refcount, 1);
    s->nbytes = nbytes;
    s->device = (tj_device){TJ_CPU, 0};
    count_storage(nbytes);
    return s;
}

tjc_storage *tjc_storage_new_on(tj_device device, size_t nbytes) {
    if (device.type == TJ_CPU) return tjc_storage_new(nbytes);
    const tjc_device_backend *b = tjc_device_backend_of(device.type);
    if (!b || !b->alloc) return NULL;
    tjc_storage *s = tjc_malloc(sizeof *s);
    if (!s) return NULL;
    s->data = b->alloc(device.index, nbytes);
    if (!s->data) {
        tjc_free(s);
        return NULL;
    }
    atomic_init(&s->refcount, 1);
    s->nbytes = nbytes;
    s->device = device;
    count_storage(nbytes);
    return s;
}

void tjc_storage_release(tjc_storage *s) {
    if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1) return;
    atomic_fetch_sub_explicit(&live_bytes, (long long)s->nbytes, memory_order_relaxed);
    if (s->device.type != TJ_CPU) {
        tjc_device_backend_of(s->device.type)->release(s->device.index, s->data);
        tjc_free(s);
        return;
    }
    /* a block reused from the cache may be larger than this: keeping the
     * smaller figure only makes later matches stricter */
    size_t cap = capacity_for(s->nbytes);
    if (!(CACHE_ON && cap >= MID_BLOCK && cache_put(s->data, cap))) tjc_free(s->data);
    tjc_free(s);
}
