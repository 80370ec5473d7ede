/* nn_cases.c — see nn_cases.h. */
#include "tests/support/nn_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void tt_nn_assert_ops_exist(const char *const *ops, int n) {
    for (int i = 0; i < n; i++) {
        if (!tj_op_find(ops[i])) fprintf(stderr, "op %s is not in the op table\n", ops[i]);
        assert_non_null(tj_op_find(ops[i]));
    }
}

/* sum(f(in) * weight) */
static double objective(tt_nn_fwd_fn f, const void *ctx, tj_tensor *const *in,
                        const tj_tensor *weight) {
    tj_tensor *y = f(in, ctx);
    if (!y) fprintf(stderr, "forward failed: %s\n", tj_last_error());
    assert_non_null(y);
    tt_ref ry = tt_ref_of(y), rw = tt_ref_of(weight);
    assert_int_equal(ry.numel, rw.numel);
    double s = 0;
    for (int64_t i = 0; i < ry.numel; i++) s += ry.v[i] * rw.v[i];
    tt_ref_free(&ry), tt_ref_free(&rw);
    tj_release(y);
    return s;
}

void tt_nn_check_grad_(tt_nn_fwd_fn f, const void *ctx, tj_tensor *const *in, int k,
                       const tj_tensor *weight, const tj_tensor *grad, double tol,
                       const char *file, int line) {
    if (!grad) {
        fprintf(stderr, "%s:%d: gradient is NULL (%s)\n", file, line, tj_last_error());
        _fail(file, line);
    }
    tj_tensor *x = in[k];
    assert_int_equal(tj_tensor_dtype(x), TJ_F64);
    assert_true(tj_is_contiguous(x));
    tt_assert_sizes_(grad, tj_sizes(x), tj_ndim(x), file, line);
    tt_ref g = tt_ref_of(grad);
    double *p = tj_data(x);
    const double h = 1e-6;
    for (int64_t i = 0; i < tj_numel(x); i++) {
        double keep = p[i];
        p[i] = keep + h;
        double up = objective(f, ctx, in, weight);
        p[i] = keep - h;
        double down = objective(f, ctx, in, weight);
        p[i] = keep;
        double fd = (up - down) / (2 * h);
        if (!(fabs(g.v[i] - fd) <= tol * (1 + fabs(fd)))) {
            fprintf(stderr, "%s:%d: gradient of input %d, element %lld: got %.10g, finite "
                    "difference %.10g\n", file, line, k, (long long)i, g.v[i], fd);
            tt_ref_free(&g);
            _fail(file, line);
        }
    }
    tt_ref_free(&g);
}

tj_tensor *tt_nn_randd(tj_generator *g, const int64_t *sizes, int ndim, double lo, double hi) {
    return tt_random(g, sizes, ndim, TJ_F64, lo, hi);
}

tj_tensor *tt_nn_ints(const int64_t *values, const int64_t *sizes, int ndim) {
    tj_tensor *t = tj_from_array(values, sizes, ndim, TJ_I64);
    assert_non_null(t);
    return t;
}

static tj_tensor **owned;
static int n_owned, cap_owned;

tj_tensor *tt_nn_own_(tj_tensor *t, const char *file, int line) {
    if (!t) {
        fprintf(stderr, "%s:%d: tensor is NULL (%s)\n", file, line, tj_last_error());
        _fail(file, line);
    }
    if (n_owned == cap_owned) {
        cap_owned = cap_owned ? 2 * cap_owned : 64;
        owned = realloc(owned, sizeof *owned * (size_t)cap_owned);
        assert_non_null(owned);
    }
    owned[n_owned++] = t;
    return t;
}

void tt_nn_free_all(void) {
    for (int i = n_owned - 1; i >= 0; i--) tj_release(owned[i]);
    free(owned);
    owned = NULL;
    n_owned = cap_owned = 0;
}

void tt_nn_own_outputs_(tj_tensor **out, int n, int want, const char *file, int line) {
    if (n != want) {
        fprintf(stderr, "%s:%d: %d outputs, expected %d (%s)\n", file, line, n, want,
                tj_last_error());
        _fail(file, line);
    }
    for (int i = 0; i < n; i++) tt_nn_own_(out[i], file, line);
}
