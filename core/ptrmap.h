/* ptrmap.h — an open-addressing hash map from pointers to pointers, for the
 * tracer (tensor -> graph value) and the interpreter (value -> register). */
#ifndef TJIT_PTRMAP_H
#define TJIT_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tjc_ptrmap {
    const void **keys;
    void **vals;
    size_t cap, n; /* cap is a power of two; keys[i] == NULL marks a free slot */
} tjc_ptrmap;

void tjc_ptrmap_init(tjc_ptrmap *m);
void tjc_ptrmap_free(tjc_ptrmap *m);
/* false when out of memory */
bool tjc_ptrmap_put(tjc_ptrmap *m, const void *key, void *val);
/* NULL when absent */
void *tjc_ptrmap_get(const tjc_ptrmap *m, const void *key);
bool tjc_ptrmap_has(const tjc_ptrmap *m, const void *key);

#endif
