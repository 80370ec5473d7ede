/* alloc.c — the library's allocation functions and their failure hook (see
 * alloc.h). The counter is one relaxed atomic add per allocation: cheap next
 * to the allocation itself, and steady-state replay makes none. */
#define _DEFAULT_SOURCE /* strndup */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static atomic_llong n_allocs;
/* The count at which the armed allocation fails; 0 when disarmed. */
static atomic_llong fail_at;
static atomic_bool injected;

void tjc_alloc_fail_at(long long k) {
    atomic_store(&injected, false);
    atomic_store(&fail_at, k > 0 ? atomic_load(&n_allocs) + k : 0);
}

long long tjc_alloc_count(void) { return atomic_load(&n_allocs); }

bool tjc_alloc_failure_injected(void) { return atomic_load(&injected); }

/* Counts one allocation; true when it is the one to fail. */
static bool should_fail(size_t nbytes) {
    long long n = atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed) + 1;
    long long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
    if (at == 0 || n != at) return false;
    atomic_store(&fail_at, 0);
    atomic_store(&injected, true);
    tjc_error(TJ_ERR_MEMORY, "out of memory: an allocation of %zu bytes failed", nbytes);
    return true;
}

/* Records the failure of a real allocation. */
static void *failed(size_t nbytes) {
    tjc_error(TJ_ERR_MEMORY, "out of memory: an allocation of %zu bytes failed", nbytes);
    return NULL;
}

void *tjc_malloc(size_t nbytes) {
    if (should_fail(nbytes)) return NULL;
    void *p = malloc(nbytes);
    return p || !nbytes ? p : failed(nbytes);
}

void *tjc_calloc(size_t count, size_t size) {
    if (should_fail(count * size)) return NULL;
    void *p = calloc(count, size);
    return p || !count || !size ? p : failed(count * size);
}

void *tjc_realloc(void *p, size_t nbytes) {
    if (should_fail(nbytes)) return NULL;
    void *q = realloc(p, nbytes);
    return q || !nbytes ? q : failed(nbytes);
}

void *tjc_aligned_alloc(size_t alignment, size_t nbytes) {
    if (should_fail(nbytes)) return NULL;
    void *p = aligned_alloc(alignment, nbytes);
    return p || !nbytes ? p : failed(nbytes);
}

char *tjc_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = tjc_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *tjc_strndup(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    char *d = tjc_malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

void tjc_free(void *p) { free(p); }
