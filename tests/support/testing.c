/* testing.c — see testing.h. */
#include "tests/support/testing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char context[256];

void tt_context(const char *fmt, ...) {
    context[0] = '\0';
    if (!fmt) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
}

/* "file:line: " plus the context, when one is set */
static void where(const char *file, int line) {
    fprintf(stderr, "%s:%d: %s%s", file, line, context, context[0] ? ": " : "");
}

int tt_next_index(int64_t *index, const int64_t *sizes, int ndim) {
    for (int d = ndim - 1; d >= 0; d--) {
        if (++index[d] < sizes[d]) return 1;
        index[d] = 0;
    }
    return 0;
}

tt_ref tt_ref_new(const int64_t *sizes, int ndim) {
    tt_ref r = {.ndim = ndim, .numel = 1};
    for (int d = 0; d < ndim; d++) {
        r.sizes[d] = sizes[d];
        r.numel *= sizes[d];
    }
    r.v = calloc((size_t)(r.numel ? r.numel : 1), sizeof(double));
    assert_non_null(r.v);
    return r;
}

tt_ref tt_ref_of(const tj_tensor *t) {
    tt_ref r = tt_ref_new(tj_sizes(t), tj_ndim(t));
    int64_t idx[TJ_MAX_DIMS] = {0};
    if (r.numel == 0) return r;
    /* a device tensor is read from one host copy, not element by element */
    tj_tensor *host = NULL;
    if (tj_tensor_device(t).type != TJ_CPU) {
        tj_scope_begin();
        host = tj_retain(tj_to_device((tj_tensor *)t, TJ_DEVICE_CPU));
        tj_scope_end();
        assert_non_null(host);
        t = host;
    }
    int64_t k = 0;
    do {
        r.v[k++] = tj_get(t, idx);
    } while (tt_next_index(idx, r.sizes, r.ndim));
    tj_release(host);
    return r;
}

void tt_ref_free(tt_ref *r) {
    free(r->v);
    r->v = NULL;
}

double tt_ref_bcast(const tt_ref *r, const int64_t *out_index, int out_ndim) {
    int64_t off = 0;
    for (int d = 0; d < r->ndim; d++) {
        int od = out_ndim - r->ndim + d;
        int64_t i = r->sizes[d] == 1 ? 0 : out_index[od];
        off = off * r->sizes[d] + i;
    }
    return r->v[off];
}

/* The helpers open a scope of their own and tj_keep their result, so it ends
 * up where any tj_ function's result would: in the caller's scope when one is
 * open, else owned by the caller. Temporaries never leak into (or get released
 * twice by) the caller's scope. */
tj_tensor *tt_random(tj_generator *g, const int64_t *sizes, int ndim, tj_dtype dtype, double lo,
                     double hi) {
    tj_scope_begin();
    tj_tensor *u = tj_rand(sizes, ndim, TJ_F64, g);
    assert_non_null(u);
    tj_tensor *t = tj_empty(sizes, ndim, dtype);
    assert_non_null(t);
    double *src = tj_data(u);
    char *dst = tj_data(t);
    int64_t n = tj_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double x = src[i];
        switch (dtype) {
        case TJ_F32: ((float *)dst)[i] = (float)(lo + (hi - lo) * x); break;
        case TJ_F64: ((double *)dst)[i] = lo + (hi - lo) * x; break;
        case TJ_I64: ((int64_t *)dst)[i] = (int64_t)floor(lo + (hi - lo + 1) * x); break;
        case TJ_BOOL: ((_Bool *)dst)[i] = x < 0.5; break;
        default: break;
        }
    }
    tj_keep(t);
    tj_scope_end();
    return t;
}

tj_tensor *tt_noncontiguous(tj_generator *g, tj_tensor *t) {
    /* a buffer twice as wide in the last dim, then a strided slice of it */
    int nd = tj_ndim(t);
    tj_scope_begin();
    tj_tensor *view;
    if (nd == 0) {
        view = tj_clone(t);
        assert_non_null(view);
    } else {
        int64_t sizes[TJ_MAX_DIMS];
        memcpy(sizes, tj_sizes(t), sizeof(int64_t) * (size_t)nd);
        sizes[nd - 1] *= 2;
        tj_tensor *big = tt_random(g, sizes, nd, tj_tensor_dtype(t), -1, 1);
        view = tj_slice(big, nd - 1, 1, sizes[nd - 1], 2);
        assert_non_null(view);
        assert_non_null(tj_copy_(view, t));
    }
    tj_keep(view);
    tj_scope_end();
    return view;
}

static int close_enough(double got, double want, double rtol, double atol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

void tt_assert_close_ref_(const tj_tensor *t, const tt_ref *expected, double rtol, double atol,
                          const char *file, int line) {
    if (!t) {
        where(file, line);
        fprintf(stderr, "tensor is NULL (%s)\n", tj_last_error());
        _fail(file, line);
    }
    tt_assert_sizes_(t, expected->sizes, expected->ndim, file, line);
    tt_ref got = tt_ref_of(t);
    for (int64_t i = 0; i < got.numel; i++) {
        if (!close_enough(got.v[i], expected->v[i], rtol, atol)) {
            where(file, line);
            fprintf(stderr, "element %lld: got %.17g, expected %.17g (dtype %s)\n",
                    (long long)i, got.v[i], expected->v[i], tj_dtype_name(tj_tensor_dtype(t)));
            tt_ref_free(&got);
            _fail(file, line);
        }
    }
    tt_ref_free(&got);
}

void tt_assert_values_(const tj_tensor *t, const double *expected, int64_t n, double tol,
                       const char *file, int line) {
    if (!t) {
        where(file, line);
        fprintf(stderr, "tensor is NULL (%s)\n", tj_last_error());
        _fail(file, line);
    }
    tt_ref got = tt_ref_of(t);
    if (got.numel != n) {
        where(file, line);
        fprintf(stderr, "%lld elements, expected %lld\n", (long long)got.numel, (long long)n);
        tt_ref_free(&got);
        _fail(file, line);
    }
    for (int64_t i = 0; i < n; i++)
        if (!close_enough(got.v[i], expected[i], 0, tol)) {
            where(file, line);
            fprintf(stderr, "element %lld: got %.17g, expected %.17g\n", (long long)i, got.v[i],
                    expected[i]);
            tt_ref_free(&got);
            _fail(file, line);
        }
    tt_ref_free(&got);
}

void tt_assert_error_(const char *needle, const char *file, int line) {
    const char *msg = tj_last_error();
    if (!strstr(msg, needle)) {
        where(file, line);
        fprintf(stderr, "last error \"%s\" does not contain \"%s\"\n", msg, needle);
        _fail(file, line);
    }
}

void tt_assert_sizes_(const tj_tensor *t, const int64_t *sizes, int ndim, const char *file,
                      int line) {
    int ok = tj_ndim(t) == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = tj_sizes(t)[d] == sizes[d];
    if (!ok) {
        where(file, line);
        fprintf(stderr, "sizes differ: got %d dims [", tj_ndim(t));
        for (int d = 0; d < tj_ndim(t); d++) fprintf(stderr, d ? ", %lld" : "%lld", (long long)tj_sizes(t)[d]);
        fprintf(stderr, "], expected %d dims [", ndim);
        for (int d = 0; d < ndim; d++) fprintf(stderr, d ? ", %lld" : "%lld", (long long)sizes[d]);
        fprintf(stderr, "]\n");
        _fail(file, line);
    }
}

double tt_rtol(tj_dtype d) { return d == TJ_F32 ? 2e-5 : d == TJ_F64 ? 1e-12 : 0; }
double tt_atol(tj_dtype d) { return d == TJ_F32 ? 1e-5 : d == TJ_F64 ? 1e-12 : 0; }

int tt_setup_scope(void **state) {
    (void)state;
    tj_clear_error();
    tj_scope_begin();
    return 0;
}

int tt_teardown_scope(void **state) {
    (void)state;
    tj_scope_end();
    tj_clear_error();
    return 0;
}
