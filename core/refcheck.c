/* refcheck.c — ownership misuse caught in debug builds (TJIT_DEBUG_REFCOUNT):
 * a tensor whose last reference is released keeps its header, with a
 * poisoned reference count, in a bounded quarantine, so that a later
 * tj_release, tj_retain or op call on it aborts with a message naming the
 * tensor instead of touching freed memory. Without TJIT_DEBUG_REFCOUNT
 * nothing here is called. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core.h"

#ifdef TJIT_DEBUG_REFCOUNT

/* Headers released last, oldest first out: a use this many releases later
 * is no longer caught (ASan still catches it in the sanitizer build). The
 * array is a global, so LeakSanitizer sees the kept headers as reachable. */
enum { QUARANTINE = 4096 };
static tj_tensor *quarantine[QUARANTINE];
static size_t next_slot;
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_header(tj_tensor *t) {
    free(t->name);
    free(t);
}

void tjc_refcount_retire(tj_tensor *t) {
    atomic_store_explicit(&t->refcount, TJC_REFCOUNT_POISON, memory_order_release);
    t->storage = NULL;
    pthread_mutex_lock(&quarantine_lock);
    tj_tensor *evicted = quarantine[next_slot];
    quarantine[next_slot] = t;
    next_slot = (next_slot + 1) % QUARANTINE;
    pthread_mutex_unlock(&quarantine_lock);
    if (evicted) free_header(evicted);
}

void tjc_refcount_misuse(const tj_tensor *t, const char *fn) {
    char sizes[TJC_SIZES_BUF];
    tjc_fmt_sizes(sizes, sizeof sizes, t->sizes, t->ndim);
    fprintf(stderr,
            "tjit: %s: tensor %s%s%s(%s %s) used after its last tj_release (a double release, or "
            "a use of a reference that was given away); aborting\n",
            fn, t->name ? "'" : "", t->name ? t->name : "", t->name ? "' " : "",
            tj_dtype_name(t->dtype), sizes);
    abort();
}

#endif
