/* ptrmap.c — see ptrmap.h. Linear probing; no deletion is needed by users. */
#include "core/alloc.h"
#include "ptrmap.h"

#include <stdint.h>
#include <stdlib.h>

static size_t slot_of(const void *key, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)key;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

void tjc_ptrmap_init(tjc_ptrmap *m) { *m = (tjc_ptrmap){0}; }

void tjc_ptrmap_free(tjc_ptrmap *m) {
    tjc_free(m->slots);
    *m = (tjc_ptrmap){0};
}

/* The slot holding key, or the free slot where it would go. */
static tjc_ptrmap_entry *probe(tjc_ptrmap_entry *slots, size_t cap, const void *key) {
    size_t s = slot_of(key, cap);
    while (slots[s].key && slots[s].key != key) s = (s + 1) & (cap - 1);
    return &slots[s];
}

static bool grow(tjc_ptrmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    tjc_ptrmap_entry *slots = tjc_calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) *probe(slots, cap, m->slots[i].key) = m->slots[i];
    tjc_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

bool tjc_ptrmap_put(tjc_ptrmap *m, const void *key, void *val) {
    tjc_ptrmap_entry *e = m->cap ? probe(m->slots, m->cap, key) : NULL;
    if (e && e->key) { /* a key already there: replacing its value cannot fail */
        e->val = val;
        return true;
    }
    if ((m->n + 1) * 2 > m->cap) {
        if (!grow(m)) return false;
        e = probe(m->slots, m->cap, key);
    }
    e->key = key;
    e->val = val;
    m->n++;
    return true;
}

void *tjc_ptrmap_get(const tjc_ptrmap *m, const void *key) {
    if (!m->cap) return NULL;
    const tjc_ptrmap_entry *e = probe(m->slots, m->cap, key);
    return e->key ? e->val : NULL;
}

bool tjc_ptrmap_has(const tjc_ptrmap *m, const void *key) {
    return m->cap && probe(m->slots, m->cap, key)->key != NULL;
}
