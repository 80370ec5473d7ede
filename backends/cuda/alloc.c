/* alloc.c — the caching device allocator (see alloc.h for the rules).
 *
 * A segment is one raw allocation; its blocks tile it in address order (a
 * doubly linked list). Free blocks sit in one treap per pool ordered by
 * (stream, size, address), so the lower bound of (stream, size, 0) is the
 * best fit on that stream, as in PyTorch's ordered block sets. Blocks in use
 * are found by address in an open-addressing table. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "alloc.h"
#include "core/core.h"

enum { POOL_SMALL, POOL_LARGE, N_POOLS };

typedef struct segment segment;

typedef struct block {
    char *ptr;
    size_t size;
    segment *seg;
    struct block *prev, *next;  /* neighbours in the segment, by address */
    struct block *left, *right; /* in the pool's free tree while free */
    uint32_t prio;
    bool allocated;
} block;

struct segment {
    char *base;
    size_t size;
    void *stream;
    int pool;
    block *head;
    segment *prev, *next;
};

typedef struct ptr_table { /* blocks in use, by ptr; linear probing */
    block **slots;
    size_t cap, count;
} ptr_table;

struct tjcu_allocator {
    pthread_mutex_t lock;
    tjcu_raw_allocator raw;
    int device;
    block *free_tree[N_POOLS];
    segment *segments;
    ptr_table used;
    uint32_t rng;
    tjcu_memory_stats stats;
};

/* ---- sizes -------------------------------------------------------------------- */

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

static size_t block_size(size_t bytes) {
    return bytes < TJCU_MIN_BLOCK ? TJCU_MIN_BLOCK : round_up(bytes, TJCU_MIN_BLOCK);
}

static int pool_of(size_t size) { return size <= TJCU_SMALL_REQUEST ? POOL_SMALL : POOL_LARGE; }

static size_t segment_size(size_t size) {
    if (size <= TJCU_SMALL_REQUEST) return TJCU_SMALL_SEGMENT;
    if (size < TJCU_MIN_LARGE_ALLOC) return TJCU_LARGE_SEGMENT;
    return round_up(size, TJCU_LARGE_ROUNDING);
}

/* A large block keeps a tail of 1 MiB or less: such a tail would only serve
 * small requests, which the large pool does not take. */
static bool should_split(int pool, size_t remaining) {
    return pool == POOL_SMALL ? remaining >= TJCU_MIN_BLOCK : remaining > TJCU_SMALL_REQUEST;
}

/* ---- the free trees: treaps ordered by (stream, size, ptr) -------------------- */

static int key_cmp(uintptr_t stream, size_t size, uintptr_t ptr, const block *b) {
    uintptr_t bs = (uintptr_t)b->seg->stream, bp = (uintptr_t)b->ptr;
    if (stream != bs) return stream < bs ? -1 : 1;
    if (size != b->size) return size < b->size ? -1 : 1;
    if (ptr != bp) return ptr < bp ? -1 : 1;
    return 0;
}

static bool before(const block *x, const block *y) {
    return key_cmp((uintptr_t)x->seg->stream, x->size, (uintptr_t)x->ptr, y) < 0;
}

/* Splits t into the blocks before k (*l) and the rest (*r). */
static void tree_split(block *t, const block *k, block **l, block **r) {
    if (!t) {
        *l = *r = NULL;
    } else if (before(t, k)) {
        tree_split(t->right, k, &t->right, r);
        *l = t;
    } else {
        tree_split(t->left, k, l, &t->left);
        *r = t;
    }
}

static block *tree_insert(block *t, block *n) {
    if (!t) return n;
    if (n->prio > t->prio) {
        tree_split(t, n, &n->left, &n->right);
        return n;
    }
    if (before(n, t)) t->left = tree_insert(t->left, n);
    else t->right = tree_insert(t->right, n);
    return t;
}

static block *tree_join(block *l, block *r) {
    if (!l) return r;
    if (!r) return l;
    if (l->prio > r->prio) {
        l->right = tree_join(l->right, r);
        return l;
    }
    r->left = tree_join(l, r->left);
    return r;
}

static block *tree_erase(block *t, const block *n) {
    if (!t) return NULL;
    if (t == n) return tree_join(t->left, t->right);
    if (before(n, t)) t->left = tree_erase(t->left, n);
    else t->right = tree_erase(t->right, n);
    return t;
}

/* The smallest free block of stream of at least size bytes, or NULL. */
static block *best_fit(block *t, void *stream, size_t size) {
    block *best = NULL;
    while (t) {
        if (key_cmp((uintptr_t)stream, size, 0, t) > 0) {
            t = t->right;
        } else {
            best = t;
            t = t->left;
        }
    }
    return best && best->seg->stream == stream ? best : NULL;
}

static void add_free(tjcu_allocator *a, block *b) {
    b->left = b->right = NULL;
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 17;
    a->rng ^= a->rng << 5;
    b->prio = a->rng;
    a->free_tree[b->seg->pool] = tree_insert(a->free_tree[b->seg->pool], b);
    a->stats.n_free_blocks++;
}

static void remove_free(tjcu_allocator *a, block *b) {
    a->free_tree[b->seg->pool] = tree_erase(a->free_tree[b->seg->pool], b);
    b->left = b->right = NULL;
    a->stats.n_free_blocks--;
}

/* ---- blocks in use, by address ------------------------------------------------ */

static size_t slot_of(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

/* Room for one more entry at a load of at most one half. */
static bool table_reserve(ptr_table *t) {
    if ((t->count + 1) * 2 <= t->cap) return true;
    size_t cap = t->cap ? t->cap * 2 : 64;
    block **slots = tjc_calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        size_t j = slot_of(t->slots[i]->ptr, cap);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    tjc_free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return true;
}

static void table_put(ptr_table *t, block *b) {
    size_t i = slot_of(b->ptr, t->cap);
    while (t->slots[i]) i = (i + 1) & (t->cap - 1);
    t->slots[i] = b;
    t->count++;
}

static size_t table_find(const ptr_table *t, const void *p) {
    if (!t->cap) return SIZE_MAX;
    for (size_t i = slot_of(p, t->cap); t->slots[i]; i = (i + 1) & (t->cap - 1))
        if (t->slots[i]->ptr == p) return i;
    return SIZE_MAX;
}

/* Removes and returns the block at p (NULL when none), shifting later
 * entries of the probe run back so that no tombstones are needed. */
static block *table_take(ptr_table *t, const void *p) {
    size_t i = table_find(t, p);
    if (i == SIZE_MAX) return NULL;
    block *b = t->slots[i];
    size_t mask = t->cap - 1;
    for (size_t j = (i + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
        size_t home = slot_of(t->slots[j]->ptr, t->cap);
        bool stays = i < j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            t->slots[i] = t->slots[j];
            i = j;
        }
    }
    t->slots[i] = NULL;
    t->count--;
    return b;
}

/* ---- segments ----------------------------------------------------------------- */

static bool segment_unused(const segment *s) { return !s->head->allocated && !s->head->next; }

static void unlink_segment(tjcu_allocator *a, segment *s) {
    if (s->prev) s->prev->next = s->next;
    else a->segments = s->next;
    if (s->next) s->next->prev = s->prev;
    a->stats.reserved -= s->size;
    a->stats.n_segments--;
}

static tj_status empty_cache_locked(tjcu_allocator *a) {
    tj_status first = TJ_OK;
    for (segment *s = a->segments, *next; s; s = next) {
        next = s->next;
        if (!segment_unused(s)) continue;
        a->stats.n_free_calls++;
        tj_status st = a->raw.free(a->raw.ctx, a->device, s->base);
        if (st != TJ_OK) {
            if (first == TJ_OK) {
                char why[512];
                snprintf(why, sizeof why, "%s", tj_last_status() != TJ_OK ? tj_last_error() : tj_status_name(st));
                first = tjc_error(st, "cuda allocator: returning a segment of %zu bytes on device %d failed: %s",
                                  s->size, a->device, why);
            }
            continue; /* kept: it is still reserved */
        }
        remove_free(a, s->head);
        unlink_segment(a, s);
        tjc_free(s->head);
        tjc_free(s);
    }
    return first;
}

static tj_status out_of_memory(tjcu_allocator *a, size_t bytes, size_t seg_size) {
    char why[512] = "";
    if (tj_last_status() != TJ_OK) snprintf(why, sizeof why, " (%s)", tj_last_error());
    const double mib = 1024.0 * 1024.0;
    return tjc_error(TJ_ERR_MEMORY,
                     "cuda allocator: out of memory on device %d: tried to allocate %zu bytes "
                     "(%.2f MiB, a segment of %zu bytes); %zu bytes (%.2f MiB) allocated and %zu bytes "
                     "(%.2f MiB) reserved after freeing the unused cached segments%s",
                     a->device, bytes, (double)bytes / mib, seg_size, a->stats.allocated,
                     (double)a->stats.allocated / mib, a->stats.reserved, (double)a->stats.reserved / mib, why);
}

/* A new segment for a block of size bytes, as one free block (not in a
 * tree); on a raw failure, the cache is emptied and the raw call retried. */
static tj_status new_segment(tjcu_allocator *a, size_t bytes, size_t size, void *stream, block **out) {
    size_t n = segment_size(size);
    segment *s = tjc_calloc(1, sizeof *s);
    block *b = tjc_calloc(1, sizeof *b);
    if (!s || !b) {
        tjc_free(s);
        tjc_free(b);
        return tjc_error(TJ_ERR_MEMORY, "cuda allocator: out of host memory for its block list");
    }
    void *p = NULL;
    a->stats.n_alloc_calls++;
    tj_status st = a->raw.alloc(a->raw.ctx, a->device, n, &p);
    if (st != TJ_OK || !p) {
        empty_cache_locked(a); /* a segment it cannot free stays; the retry decides */
        tj_clear_error();
        a->stats.n_oom_retries++;
        a->stats.n_alloc_calls++;
        p = NULL;
        st = a->raw.alloc(a->raw.ctx, a->device, n, &p);
    }
    if (st != TJ_OK || !p) {
        tjc_free(s);
        tjc_free(b);
        return out_of_memory(a, bytes, n);
    }
    *s = (segment){.base = p, .size = n, .stream = stream, .pool = pool_of(size), .head = b, .next = a->segments};
    if (a->segments) a->segments->prev = s;
    a->segments = s;
    *b = (block){.ptr = p, .size = n, .seg = s};
    a->stats.reserved += n;
    a->stats.n_segments++;
    if (a->stats.reserved > a->stats.peak_reserved) a->stats.peak_reserved = a->stats.reserved;
    *out = b;
    return TJ_OK;
}

/* ---- the interface ------------------------------------------------------------- */

tjcu_allocator *tjcu_allocator_new(const tjcu_raw_allocator *raw, int device) {
    if (!raw || !raw->alloc || !raw->free) {
        tjc_error(TJ_ERR_ARG, "cuda allocator: a raw allocator with alloc and free is required");
        return NULL;
    }
    tjcu_allocator *a = tjc_calloc(1, sizeof *a);
    if (!a) {
        tjc_error(TJ_ERR_MEMORY, "cuda allocator: out of host memory");
        return NULL;
    }
    pthread_mutex_init(&a->lock, NULL);
    a->raw = *raw;
    a->device = device;
    a->rng = 0x9e3779b9u;
    return a;
}

void tjcu_allocator_free(tjcu_allocator *a) {
    if (!a) return;
    for (segment *s = a->segments, *next; s; s = next) {
        next = s->next;
        a->raw.free(a->raw.ctx, a->device, s->base);
        for (block *b = s->head, *bn; b; b = bn) {
            bn = b->next;
            tjc_free(b);
        }
        tjc_free(s);
    }
    tjc_free(a->used.slots);
    pthread_mutex_destroy(&a->lock);
    tjc_free(a);
}

tj_status tjcu_allocator_malloc(tjcu_allocator *a, size_t bytes, void *stream, void **ptr) {
    if (!a || !ptr) return tjc_error(TJ_ERR_ARG, "cuda allocator: malloc needs an allocator and a result pointer");
    *ptr = NULL;
    if (bytes == 0) return TJ_OK;
    if (bytes > SIZE_MAX - TJCU_LARGE_SEGMENT)
        return tjc_error(TJ_ERR_MEMORY, "cuda allocator: a request of %zu bytes is beyond any device", bytes);
    size_t size = block_size(bytes);
    int pool = pool_of(size);
    pthread_mutex_lock(&a->lock);
    if (!table_reserve(&a->used)) {
        pthread_mutex_unlock(&a->lock);
        return tjc_error(TJ_ERR_MEMORY, "cuda allocator: out of host memory for its block table");
    }
    block *b = best_fit(a->free_tree[pool], stream, size);
    if (b) {
        remove_free(a, b);
        a->stats.n_cache_hits++;
    } else {
        tj_status st = new_segment(a, bytes, size, stream, &b);
        if (st != TJ_OK) {
            pthread_mutex_unlock(&a->lock);
            return st;
        }
    }
    block *rest = should_split(pool, b->size - size) ? tjc_calloc(1, sizeof *rest) : NULL;
    if (rest) { /* without memory for the tail's record, the whole block serves */
        *rest = (block){.ptr = b->ptr + size, .size = b->size - size, .seg = b->seg, .prev = b, .next = b->next};
        if (b->next) b->next->prev = rest;
        b->next = rest;
        b->size = size;
        add_free(a, rest);
    }
    b->allocated = true;
    table_put(&a->used, b);
    a->stats.allocated += b->size;
    if (a->stats.allocated > a->stats.peak_allocated) a->stats.peak_allocated = a->stats.allocated;
    *ptr = b->ptr;
    pthread_mutex_unlock(&a->lock);
    return TJ_OK;
}

tj_status tjcu_allocator_release(tjcu_allocator *a, void *ptr) {
    if (!ptr) return TJ_OK;
    if (!a) return tjc_error(TJ_ERR_ARG, "cuda allocator: release needs an allocator");
    pthread_mutex_lock(&a->lock);
    block *b = table_take(&a->used, ptr);
    if (!b) {
        pthread_mutex_unlock(&a->lock);
        return tjc_error(TJ_ERR_ARG, "cuda allocator: release of %p, which is not a block in use on device %d",
                         ptr, a->device);
    }
    b->allocated = false;
    a->stats.allocated -= b->size;
    block *p = b->prev;
    if (p && !p->allocated) { /* p takes b over */
        remove_free(a, p);
        p->size += b->size;
        p->next = b->next;
        if (b->next) b->next->prev = p;
        tjc_free(b);
        b = p;
    }
    block *n = b->next;
    if (n && !n->allocated) { /* b takes n over */
        remove_free(a, n);
        b->size += n->size;
        b->next = n->next;
        if (n->next) n->next->prev = b;
        tjc_free(n);
    }
    add_free(a, b);
    pthread_mutex_unlock(&a->lock);
    return TJ_OK;
}

tj_status tjcu_allocator_empty_cache(tjcu_allocator *a) {
    if (!a) return tjc_error(TJ_ERR_ARG, "cuda allocator: empty_cache needs an allocator");
    pthread_mutex_lock(&a->lock);
    tj_status st = empty_cache_locked(a);
    pthread_mutex_unlock(&a->lock);
    return st;
}

void tjcu_allocator_stats(tjcu_allocator *a, tjcu_memory_stats *s) {
    pthread_mutex_lock(&a->lock);
    *s = a->stats;
    pthread_mutex_unlock(&a->lock);
}

void tjcu_allocator_reset_peak(tjcu_allocator *a) {
    pthread_mutex_lock(&a->lock);
    a->stats.peak_allocated = a->stats.allocated;
    a->stats.peak_reserved = a->stats.reserved;
    pthread_mutex_unlock(&a->lock);
}

/* ---- the invariants ------------------------------------------------------------- */

static bool tree_contains(const block *t, const block *b) {
    while (t && t != b) t = before(b, t) ? t->left : t->right;
    return t == b;
}

/* Counts the tree's nodes into *n; false on a broken order or heap, on a
 * block in use, or on a block of another pool. */
static bool tree_valid(const block *t, int pool, const block **last, uint64_t *n) {
    if (!t) return true;
    if ((t->left && t->left->prio > t->prio) || (t->right && t->right->prio > t->prio)) return false;
    if (!tree_valid(t->left, pool, last, n)) return false;
    if (t->allocated || t->seg->pool != pool || (*last && !before(*last, t))) return false;
    *last = t;
    ++*n;
    return tree_valid(t->right, pool, last, n);
}

static tj_status check_locked(tjcu_allocator *a) {
#define BROKEN(...) return tjc_error(TJ_ERR_INTERNAL, "cuda allocator: " __VA_ARGS__)
    size_t allocated = 0, reserved = 0;
    uint64_t n_used = 0, n_free = 0, n_seg = 0;
    for (const segment *s = a->segments; s; s = s->next) {
        n_seg++;
        reserved += s->size;
        if (s->next && s->next->prev != s) BROKEN("segment list broken after %p", (void *)s->base);
        if (!s->head || s->head->prev) BROKEN("segment %p has no first block", (void *)s->base);
        if (s->pool == POOL_SMALL && s->size != TJCU_SMALL_SEGMENT)
            BROKEN("small-pool segment %p is %zu bytes", (void *)s->base, s->size);
        const char *at = s->base;
        for (const block *b = s->head; b; b = b->next) {
            if (b->seg != s) BROKEN("block %p names another segment", (void *)b->ptr);
            if (b->ptr != at)
                BROKEN("segment %p: block %p should start at %p", (void *)s->base, (void *)b->ptr, (void *)at);
            if (!b->size || b->size % TJCU_MIN_BLOCK) BROKEN("block %p has size %zu", (void *)b->ptr, b->size);
            if (b->next && b->next->prev != b) BROKEN("block list broken after %p", (void *)b->ptr);
            at += b->size;
            if (b->allocated) {
                n_used++;
                allocated += b->size;
                size_t i = table_find(&a->used, b->ptr);
                if (i == SIZE_MAX || a->used.slots[i] != b)
                    BROKEN("block %p in use is not in the table", (void *)b->ptr);
            } else {
                n_free++;
                if (b->next && !b->next->allocated)
                    BROKEN("free blocks %p and %p are not merged", (void *)b->ptr, (void *)b->next->ptr);
                if (!tree_contains(a->free_tree[s->pool], b))
                    BROKEN("free block %p is not in its free tree", (void *)b->ptr);
            }
        }
        if (at != s->base + s->size)
            BROKEN("segment %p: blocks cover %zu of %zu bytes", (void *)s->base, (size_t)(at - s->base), s->size);
    }
    uint64_t in_trees = 0;
    for (int p = 0; p < N_POOLS; p++) {
        const block *last = NULL;
        if (!tree_valid(a->free_tree[p], p, &last, &in_trees))
            BROKEN("free tree of pool %d is malformed", p);
    }
    const tjcu_memory_stats *st = &a->stats;
    if (in_trees != n_free)
        BROKEN("%llu blocks in the free trees, %llu free blocks", (unsigned long long)in_trees,
               (unsigned long long)n_free);
    if (a->used.count != n_used)
        BROKEN("%zu blocks in the table, %llu in use", a->used.count, (unsigned long long)n_used);
    if (st->allocated != allocated || st->reserved != reserved || st->n_segments != n_seg ||
        st->n_free_blocks != n_free)
        BROKEN("stats say %zu allocated, %zu reserved, %llu segments, %llu free blocks; "
               "the blocks say %zu, %zu, %llu, %llu",
               st->allocated, st->reserved, (unsigned long long)st->n_segments,
               (unsigned long long)st->n_free_blocks, allocated, reserved, (unsigned long long)n_seg,
               (unsigned long long)n_free);
    if (st->peak_allocated < allocated || st->peak_reserved < reserved || allocated > reserved)
        BROKEN("peaks %zu/%zu below the current %zu/%zu", st->peak_allocated, st->peak_reserved,
               allocated, reserved);
    return TJ_OK;
#undef BROKEN
}

tj_status tjcu_allocator_check(tjcu_allocator *a) {
    pthread_mutex_lock(&a->lock);
    tj_status st = check_locked(a);
    pthread_mutex_unlock(&a->lock);
    return st;
}
