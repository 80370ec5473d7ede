/* ptrmap.h — an open-addressing hash map from pointers to pointers, for the
 * tracer (tensor -> graph value) and the interpreter (value -> register). */
#ifndef TJIT_PTRMAP_H
#define TJIT_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tjc_ptrmap_entry {
    const void *key; /* NULL: a free slot */
    void *val;
} tjc_ptrmap_entry;

/* A key and its value share a slot, so that a lookup in a map too large for
 * the cache (a pass over 200,000 nodes) misses once, not twice. */
typedef struct tjc_ptrmap {
    tjc_ptrmap_entry *slots;
    size_t cap, n; /* cap is a power of two */
} tjc_ptrmap;

void tjc_ptrmap_init(tjc_ptrmap *m);
void tjc_ptrmap_free(tjc_ptrmap *m);
/* false when out of memory */
bool tjc_ptrmap_put(tjc_ptrmap *m, const void *key, void *val);
/* NULL when absent */
void *tjc_ptrmap_get(const tjc_ptrmap *m, const void *key);
bool tjc_ptrmap_has(const tjc_ptrmap *m, const void *key);

#endif
