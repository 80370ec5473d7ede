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
    tjc_free(m->keys);
    tjc_free(m->vals);
    *m = (tjc_ptrmap){0};
}

static bool grow(tjc_ptrmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    const void **keys = tjc_calloc(cap, sizeof *keys);
    void **vals = tjc_calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        tjc_free(keys);
        tjc_free(vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t s = slot_of(m->keys[i], cap);
        while (keys[s]) s = (s + 1) & (cap - 1);
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
    }
    tjc_free(m->keys);
    tjc_free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

static size_t find(const tjc_ptrmap *m, const void *key);

bool tjc_ptrmap_put(tjc_ptrmap *m, const void *key, void *val) {
    size_t at = find(m, key);
    if (at != SIZE_MAX) { /* a key already there: replacing its value cannot fail */
        m->vals[at] = val;
        return true;
    }
    if ((m->n + 1) * 2 > m->cap && !grow(m)) return false;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s] && m->keys[s] != key) s = (s + 1) & (m->cap - 1);
    if (!m->keys[s]) {
        m->keys[s] = key;
        m->n++;
    }
    m->vals[s] = val;
    return true;
}

static size_t find(const tjc_ptrmap *m, const void *key) {
    if (!m->cap) return SIZE_MAX;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s]) {
        if (m->keys[s] == key) return s;
        s = (s + 1) & (m->cap - 1);
    }
    return SIZE_MAX;
}

void *tjc_ptrmap_get(const tjc_ptrmap *m, const void *key) {
    size_t s = find(m, key);
    return s == SIZE_MAX ? NULL : m->vals[s];
}

bool tjc_ptrmap_has(const tjc_ptrmap *m, const void *key) { return find(m, key) != SIZE_MAX; }
