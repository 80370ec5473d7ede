/* alloc.h — the one door through which tjit's own code takes host memory.
 *
 * Every malloc/calloc/realloc/aligned_alloc/strdup in the library goes
 * through these, so that one place can count allocations and, for the tests,
 * make a chosen one fail: the out-of-memory tests sweep "the k-th allocation
 * from now fails" over every k of a whole trace-compile-run-backward pipeline.
 * A failing call returns NULL like the C library's and also records
 * TJ_ERR_MEMORY as this thread's error, so that a caller which only passes the
 * NULL up still leaves the root cause behind (tjc_last_or keeps it).
 *
 * Memory from these is released with tjc_free (plain free: a block from
 * tjc_* may also be handed to users who free() it, e.g. tj_graph_to_string).
 * Allocations made inside LLVM, OpenBLAS, OpenMP or the CUDA driver do not
 * pass through here and cannot be made to fail.
 */
#ifndef TJIT_CORE_ALLOC_H
#define TJIT_CORE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *tjc_malloc(size_t nbytes);
void *tjc_calloc(size_t count, size_t size);
/* On failure p is left as it was (and still owned by the caller). */
void *tjc_realloc(void *p, size_t nbytes);
void *tjc_aligned_alloc(size_t alignment, size_t nbytes);
char *tjc_strdup(const char *s);
char *tjc_strndup(const char *s, size_t n);
void tjc_free(void *p);

/* ---- the test hook ------------------------------------------------------------ */

/* Makes the k-th allocation counted from now (k >= 1) fail, once; k <= 0
 * disarms. Allocations on every thread count. */
void tjc_alloc_fail_at(long long k);
/* Allocations made (attempted) since the process started. */
long long tjc_alloc_count(void);
/* True when the armed failure has happened since tjc_alloc_fail_at. */
bool tjc_alloc_failure_injected(void);

#endif
