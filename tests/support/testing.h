/* testing.h — shared helpers for the cmocka tests: random tensors, reference
 * values in double precision, and comparisons with a tolerance. Prefix tt_. */
#ifndef TJIT_TESTING_H
#define TJIT_TESTING_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h must follow these */
#include <cmocka.h>

#include "tjit/tjit.h"

/* A dense double copy of a tensor's values in row-major order. */
typedef struct tt_ref {
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    int64_t numel;
    double *v;
} tt_ref;

tt_ref tt_ref_of(const tj_tensor *t);
tt_ref tt_ref_new(const int64_t *sizes, int ndim);
void tt_ref_free(tt_ref *r);
/* Element of r at the broadcast position of out_index (out has out_ndim dims). */
double tt_ref_bcast(const tt_ref *r, const int64_t *out_index, int out_ndim);
/* Advances a row-major multi-index; returns false after the last one. */
int tt_next_index(int64_t *index, const int64_t *sizes, int ndim);

/* The next value of a splitmix64 sequence whose state is *s: the testers'
 * own deterministic draws (cases, picks), independent of tjit's generators. */
static inline uint64_t tt_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random values: uniform in [lo, hi) for floats, integers in [lo, hi] for i64,
 * coin flips for bool. Deterministic per generator. Like a tj_ function's
 * result, the tensor belongs to the innermost open scope, else to the caller. */
tj_tensor *tt_random(tj_generator *g, const int64_t *sizes, int ndim, tj_dtype dtype, double lo,
                     double hi);
/* The same values laid out non-contiguously (a strided view of a bigger
 * buffer; 0-dim tensors are cloned); owned like tt_random's result. */
tj_tensor *tt_noncontiguous(tj_generator *g, tj_tensor *t);

/* Fails the test (with the position and both values) unless every element of
 * t is within atol + rtol * |expected| of expected; NaNs must match NaNs. */
void tt_assert_close_ref_(const tj_tensor *t, const tt_ref *expected, double rtol, double atol,
                          const char *file, int line);
#define tt_assert_close_ref(t, ref, rtol, atol) \
    tt_assert_close_ref_(t, ref, rtol, atol, __FILE__, __LINE__)
void tt_assert_values_(const tj_tensor *t, const double *expected, int64_t n, double tol,
                       const char *file, int line);
#define tt_assert_values(t, expected, n, tol) \
    tt_assert_values_(t, expected, n, tol, __FILE__, __LINE__)
/* Fails unless the last error contains needle. */
void tt_assert_error_(const char *needle, const char *file, int line);
#define tt_assert_error(needle) tt_assert_error_(needle, __FILE__, __LINE__)
void tt_assert_sizes_(const tj_tensor *t, const int64_t *sizes, int ndim, const char *file, int line);
#define tt_assert_sizes(t, sizes, ndim) tt_assert_sizes_(t, sizes, ndim, __FILE__, __LINE__)

/* Names the case being checked in the messages of failing tt_assert_*
 * calls (printf-style; NULL clears it). */
void tt_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Tolerances for comparing a kernel's result in dtype against a double reference. */
double tt_rtol(tj_dtype d);
double tt_atol(tj_dtype d);

/* cmocka fixtures: each test runs with a cleared error and inside a scope of
 * its own, which releases every tensor the test made. */
int tt_setup_scope(void **state);
int tt_teardown_scope(void **state);
#define TT_SCOPED_TEST(f) cmocka_unit_test_setup_teardown(f, tt_setup_scope, tt_teardown_scope)

#endif
