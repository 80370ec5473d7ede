/* arena.c — the IR's memory: a per-graph bump arena freed whole, the hash
 * tables (pointer- or string-keyed) and the growing string buffer that the
 * printer, the Graphviz writer and the messages share. */
#define _DEFAULT_SOURCE /* madvise */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "ir_internal.h"

/* ---- arena ------------------------------------------------------------------- */

struct tjir_chunk {
    tjir_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

/* Chunks start small (a graph may be a fusion group's subgraph of a node or
 * two, thousands of them in a large program) and double up to the largest:
 * a huge page, which a large graph's chunks fill in huge pages. A graph of
 * 200,000 nodes spans hundreds of megabytes that every pass walks in an
 * order of its own; in 4 KB pages each step is a TLB miss and each new page
 * a fault, which made time per node grow with the graph. */
#define FIRST_CHUNK_BYTES ((size_t)1024)
#define HUGE_PAGE_BYTES ((size_t)2 << 20)
#define LARGEST_CHUNK_BYTES HUGE_PAGE_BYTES

/* A chunk of cap bytes of room; huge-page aligned and advised from a huge
 * page up (the advice is only advice: where the kernel ignores it, or huge
 * pages are off, the chunk is ordinary memory). */
static tjir_chunk *new_chunk(size_t cap) {
    size_t bytes = sizeof(tjir_chunk) + cap;
    if (bytes < HUGE_PAGE_BYTES) return tjc_malloc(bytes);
    bytes = (bytes + HUGE_PAGE_BYTES - 1) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    tjir_chunk *c = tjc_aligned_alloc(HUGE_PAGE_BYTES, bytes);
#ifdef MADV_HUGEPAGE
    if (c) madvise(c, bytes, MADV_HUGEPAGE);
#endif
    return c;
}

void *tjir_alloc(tjir_arena *a, size_t n) {
    const size_t align = sizeof(max_align_t);
    n = (n + align - 1) / align * align;
    if (n == 0) n = align;
    tjir_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t chunk = a->chunk_bytes ? a->chunk_bytes : FIRST_CHUNK_BYTES;
        /* big requests get a chunk of their own so the current one keeps its room */
        bool own = n > chunk / 4;
        /* a chunk's header and room fill its allocation exactly: a huge page */
        size_t cap = own ? n : chunk - sizeof(tjir_chunk);
        tjir_chunk *fresh = new_chunk(cap);
        if (!fresh) {
            tjc_error(TJ_ERR_MEMORY, "graph: out of memory");
            return NULL;
        }
        fresh->used = 0;
        fresh->cap = cap;
        if (c && own) { /* keep the partly used chunk at the head */
            fresh->next = c->next;
            c->next = fresh;
            c = fresh;
        } else {
            fresh->next = c;
            a->head = c = fresh;
            if (!own) a->chunk_bytes = chunk < LARGEST_CHUNK_BYTES ? 2 * chunk : chunk;
        }
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *tjir_strndup(tjir_arena *a, const char *s, size_t n) {
    char *d = tjir_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *tjir_strdup(tjir_arena *a, const char *s) { return tjir_strndup(a, s, strlen(s)); }

void tjir_arena_free(tjir_arena *a) {
    tjir_chunk *c = a->head;
    while (c) {
        tjir_chunk *next = c->next;
        tjc_free(c);
        c = next;
    }
    a->head = NULL;
    a->chunk_bytes = 0;
}

bool tjir_grow(tjir_arena *a, void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    if (need > (1 << 28)) {
        tjc_error(TJ_ERR_MEMORY, "graph: a list of %d entries is too long", need);
        return false;
    }
    /* the first array is just the size asked for: most values have one or two
     * uses and most nodes one output; growth then doubles (an arena keeps
     * what it outgrows) */
    int n = *cap ? *cap : need;
    while (n < need) n *= 2;
    void *fresh = tjir_alloc(a, (size_t)n * elem);
    if (!fresh) return false;
    if (*cap) memcpy(fresh, *arr, (size_t)*cap * elem);
    *arr = fresh;
    *cap = n;
    return true;
}

bool tjir_grow_heap(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    if (need > (1 << 28)) {
        tjc_error(TJ_ERR_MEMORY, "graph: a list of %d entries is too long", need);
        return false;
    }
    int n = *cap ? *cap : 8;
    while (n < need) n *= 2;
    void *fresh = tjc_realloc(*arr, (size_t)n * elem);
    if (!fresh) {
        tjc_error(TJ_ERR_MEMORY, "graph: out of memory");
        return false;
    }
    *arr = fresh;
    *cap = n;
    return true;
}

/* ---- hash tables ---------------------------------------------------------------- */

struct tjir_slot {
    const void *key; /* NULL: empty; TOMB: deleted */
    void *val;
};

static const char tomb_marker;
#define TOMB ((const void *)&tomb_marker)

static size_t hash_key(const tjir_map *m, const void *key) {
    uint64_t h;
    if (m->str_keys) {
        h = 1469598103934665603ull; /* FNV-1a */
        for (const unsigned char *s = key; *s; s++) h = (h ^ *s) * 1099511628211ull;
    } else {
        h = (uint64_t)(uintptr_t)key;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return (size_t)h;
}

static bool keys_equal(const tjir_map *m, const void *a, const void *b) {
    return m->str_keys ? strcmp(a, b) == 0 : a == b;
}

void tjir_map_init(tjir_map *m, bool str_keys) {
    memset(m, 0, sizeof *m);
    m->str_keys = str_keys;
}

void tjir_map_clear(tjir_map *m) {
    tjc_free(m->slots);
    bool s = m->str_keys;
    tjir_map_init(m, s);
}

static struct tjir_slot *find_slot(const tjir_map *m, const void *key) {
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = hash_key(m, key) & mask;; i = (i + 1) & mask) {
        struct tjir_slot *s = &m->slots[i];
        if (!s->key) return NULL;
        if (s->key != TOMB && keys_equal(m, s->key, key)) return s;
    }
}

void *tjir_map_get(const tjir_map *m, const void *key) {
    struct tjir_slot *s = find_slot(m, key);
    return s ? s->val : NULL;
}

static bool rehash(tjir_map *m, size_t cap) {
    struct tjir_slot *old = m->slots;
    size_t old_cap = m->cap;
    m->slots = tjc_calloc(cap, sizeof *m->slots);
    if (!m->slots) {
        m->slots = old;
        tjc_error(TJ_ERR_MEMORY, "graph: out of memory");
        return false;
    }
    m->cap = cap;
    m->used = m->tombs = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key && old[i].key != TOMB) tjir_map_put(m, old[i].key, old[i].val);
    tjc_free(old);
    return true;
}

bool tjir_map_put(tjir_map *m, const void *key, void *val) {
    struct tjir_slot *s = find_slot(m, key);
    if (s) {
        s->val = val;
        return true;
    }
    if ((m->used + m->tombs + 1) * 4 > m->cap * 3) {
        size_t cap = m->cap ? m->cap : 16;
        while ((m->used + 1) * 2 > cap) cap *= 2;
        if (!rehash(m, cap)) return false;
    }
    size_t mask = m->cap - 1;
    for (size_t i = hash_key(m, key) & mask;; i = (i + 1) & mask) {
        s = &m->slots[i];
        if (!s->key || s->key == TOMB) {
            if (s->key == TOMB) m->tombs--;
            s->key = key;
            s->val = val;
            m->used++;
            return true;
        }
    }
}

void tjir_map_del(tjir_map *m, const void *key) {
    struct tjir_slot *s = find_slot(m, key);
    if (!s) return;
    s->key = TOMB;
    s->val = NULL;
    m->used--;
    m->tombs++;
}

/* ---- string buffer ------------------------------------------------------------------- */

static bool buf_reserve(tjir_buf *b, size_t extra) {
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *d = tjc_realloc(b->data, cap);
    if (!d) {
        b->failed = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void tjir_buf_putn(tjir_buf *b, const char *s, size_t n) {
    if (!buf_reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tjir_buf_put(tjir_buf *b, const char *s) { tjir_buf_putn(b, s, strlen(s)); }

void tjir_buf_printf(tjir_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        tjir_buf_putn(b, small, (size_t)n);
        return;
    }
    if (!buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *tjir_buf_finish(tjir_buf *b) {
    if (!b->failed && !b->data) buf_reserve(b, 0);
    if (b->failed) {
        tjc_free(b->data);
        b->data = NULL;
        tjc_error(TJ_ERR_MEMORY, "graph: out of memory while printing");
        return NULL;
    }
    if (b->len == 0) b->data[0] = '\0';
    char *s = b->data;
    b->data = NULL;
    return s;
}
