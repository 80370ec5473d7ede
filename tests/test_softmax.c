/* test_softmax.c — softmax, log_softmax and their backward ops: every dim of
 * several shapes against a plain double-precision reference, numerical
 * stability (large, -inf and NaN entries), the accuracy of the f32 exp,
 * finite-difference checks of the backward ops, and error messages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nn_cases.h"

static const char *const covered[] = {TT_NN_SOFTMAX_OPS};
static tj_generator *gen;

#define OWN(t) tt_nn_own(t)

static void ops_exist(void **state) {
    (void)state;
    tt_nn_assert_ops_exist(covered, (int)(sizeof covered / sizeof *covered));
}

/* softmax (or log_softmax) of x over dim, in double: x seen as [outer, n, inner] */
static tt_ref ref_softmax(const tt_ref *x, int dim, bool log_form) {
    tt_ref y = tt_ref_new(x->sizes, x->ndim);
    int64_t outer = 1, n = x->ndim ? x->sizes[dim] : 1, inner = 1;
    for (int d = 0; d < dim; d++) outer *= x->sizes[d];
    for (int d = dim + 1; d < x->ndim; d++) inner *= x->sizes[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const double *p = x->v + o * n * inner + i;
            double *q = y.v + o * n * inner + i, m = -INFINITY, s = 0;
            for (int64_t k = 0; k < n; k++) m = fmax(m, p[k * inner]);
            for (int64_t k = 0; k < n; k++) s += exp(p[k * inner] - m);
            for (int64_t k = 0; k < n; k++)
                q[k * inner] = log_form ? p[k * inner] - m - log(s) : exp(p[k * inner] - m) / s;
        }
    return y;
}

typedef struct sm_case {
    int nd;
    int64_t sizes[3];
    int dim;
    bool noncontig;
    tj_dtype dt;
} sm_case;

static const sm_case sm_cases[] = {
    {3, {3, 4, 5}, 2, false, TJ_F64}, /* last dim: rows */
    {3, {3, 4, 5}, -1, true, TJ_F32},
    {3, {3, 4, 5}, 1, false, TJ_F32}, /* middle dim: columns */
    {3, {3, 4, 5}, 0, true, TJ_F64},  /* first dim, non-contiguous */
    {3, {2, 3, 37}, 1, false, TJ_F32}, /* a partial block of columns */
    {3, {2, 4, 600}, 1, true, TJ_F64}, /* several blocks of columns */
    {2, {1, 7}, 1, false, TJ_F32},    /* batch size 1 */
    {2, {5, 1}, 1, false, TJ_F64},    /* a dim of size 1 */
    {2, {2, 0}, 1, false, TJ_F32},    /* empty rows */
    {0, {0}, -1, false, TJ_F64},      /* 0-dim */
    {2, {64, 1024}, -1, false, TJ_F32}, /* threads, rows */
    {3, {8, 64, 130}, 1, true, TJ_F32}, /* threads, columns */
};

static void softmax_matches_reference(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof sm_cases / sizeof *sm_cases; k++) {
        const sm_case *cs = &sm_cases[k];
        tj_tensor *x = OWN(tt_random(gen, cs->sizes, cs->nd, cs->dt, -6, 6));
        if (cs->noncontig) x = OWN(tt_noncontiguous(gen, x));
        int dim = cs->dim < 0 ? cs->dim + (cs->nd ? cs->nd : 1) : cs->dim;
        tt_ref rx = tt_ref_of(x);
        for (int log_form = 0; log_form < 2; log_form++) {
            tt_ref ry = ref_softmax(&rx, dim, log_form);
            tj_tensor *y = OWN(log_form ? tj_log_softmax(x, cs->dim) : tj_softmax(x, cs->dim));
            assert_int_equal(tj_tensor_dtype(y), cs->dt);
            tt_assert_close_ref(y, &ry, tt_rtol(cs->dt), tt_atol(cs->dt));
            tt_ref_free(&ry);
        }
        tt_ref_free(&rx);
    }
    tt_nn_free_all();
}

static void softmax_is_numerically_stable(void **state) {
    (void)state;
    int64_t s3[2] = {1, 3}, s4[2] = {1, 4};
    for (int dt = TJ_F32; dt <= TJ_F64; dt++) {
        /* large values would overflow exp without subtracting the max */
        tj_tensor *big = OWN(tj_from_array((double[]){1000, 1001, 1002}, s3, 2, TJ_F64));
        big = OWN(tj_to_dtype(big, (tj_dtype)dt));
        double e = exp(-1), z = 1 + e + e * e;
        tt_assert_values(OWN(tj_softmax(big, 1)), ((double[]){e * e / z, e / z, 1 / z}), 3, 1e-6);
        tt_assert_values(OWN(tj_log_softmax(big, 1)),
                         ((double[]){-2 - log(z), -1 - log(z), -log(z)}), 3, 1e-5);
        /* -inf entries (masks) get probability exactly 0 */
        tj_tensor *masked = OWN(tj_from_array((double[]){0, -INFINITY, 0, -INFINITY}, s4, 2,
                                              TJ_F64));
        masked = OWN(tj_to_dtype(masked, (tj_dtype)dt));
        tt_assert_values(OWN(tj_softmax(masked, 1)), ((double[]){0.5, 0, 0.5, 0}), 4, 1e-7);
        tt_assert_values(OWN(tj_log_softmax(masked, 1)),
                         ((double[]){-log(2), -INFINITY, -log(2), -INFINITY}), 4, 1e-6);
        /* a NaN poisons its row */
        tj_tensor *nan = OWN(tj_from_array((double[]){0, NAN, 1}, s3, 2, TJ_F64));
        nan = OWN(tj_to_dtype(nan, (tj_dtype)dt));
        tt_assert_values(OWN(tj_softmax(nan, 1)), ((double[]){NAN, NAN, NAN}), 3, 0);
    }
    tt_nn_free_all();
}

/* softmax([0, t])[1] = 1 / (1 + exp(-t)) checks the f32 exp across its
 * range, to a few ulp. */
static void f32_exp_is_accurate(void **state) {
    (void)state;
    enum { N = 4000 };
    int64_t sizes[2] = {N, 2};
    float *v = malloc(sizeof(float) * 2 * N);
    assert_non_null(v);
    for (int i = 0; i < N; i++) {
        v[2 * i] = 0;
        v[2 * i + 1] = -86.0f + 86.0f * (float)i / (N - 1);
    }
    tj_tensor *x = OWN(tj_from_array(v, sizes, 2, TJ_F32));
    tj_tensor *y = OWN(tj_softmax(x, 1));
    const float *p = tj_data(y);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double t = v[2 * i + 1], want = exp(t) / (1 + exp(t));
        double rel = fabs(p[2 * i + 1] - want) / want;
        worst = rel > worst ? rel : worst;
    }
    free(v);
    if (worst > 1e-6) fprintf(stderr, "worst relative error %g\n", worst);
    assert_true(worst <= 1e-6);
    tt_nn_free_all();
}

/* ---- backward ops ------------------------------------------------------------------- */

typedef struct fd_ctx {
    int dim;
    bool log_form;
} fd_ctx;

static tj_tensor *forward(tj_tensor *const *in, const void *vctx) {
    const fd_ctx *c = vctx;
    return c->log_form ? tj_log_softmax(in[0], c->dim) : tj_softmax(in[0], c->dim);
}

static tj_tensor *backward(tj_tensor *g, tj_tensor *y, int dim, tj_dtype dt, bool log_form) {
    return log_form ? tj_log_softmax_backward_data(g, y, dim, dt)
                    : tj_softmax_backward_data(g, y, dim, dt);
}

static void backward_matches_finite_differences(void **state) {
    (void)state;
    int64_t xs[3] = {3, 4, 5};
    for (int dim = -1; dim < 3; dim++)
        for (int log_form = 0; log_form < 2; log_form++) {
            fd_ctx ctx = {dim, log_form};
            tj_tensor *in[1] = {OWN(tt_nn_randd(gen, xs, 3, -3, 3))};
            tj_tensor *gy = OWN(tt_nn_randd(gen, xs, 3, -1, 1));
            tj_tensor *y = OWN(forward(in, &ctx));
            tj_tensor *gx = OWN(backward(gy, y, dim, TJ_F64, log_form));
            tt_nn_check_grad(forward, &ctx, in, 0, gy, gx, 1e-6);
        }
    tt_nn_free_all();
}

/* A threaded f32 case against the formulas in double; input_dtype f64
 * converts the result. */
static void backward_matches_reference_and_converts(void **state) {
    (void)state;
    int64_t xs[3] = {4, 128, 96};
    for (int dim = 1; dim < 3; dim++)
        for (int log_form = 0; log_form < 2; log_form++) {
            tj_tensor *x = OWN(tt_random(gen, xs, 3, TJ_F32, -3, 3));
            tj_tensor *g = OWN(tt_noncontiguous(gen, OWN(tt_random(gen, xs, 3, TJ_F32, -1, 1))));
            tj_tensor *y = OWN(log_form ? tj_log_softmax(x, dim) : tj_softmax(x, dim));
            tt_ref ry = tt_ref_of(y), rg = tt_ref_of(g), want = tt_ref_new(xs, 3);
            int64_t n = xs[dim], inner = dim == 1 ? xs[2] : 1, outer = want.numel / (n * inner);
            for (int64_t o = 0; o < outer; o++)
                for (int64_t i = 0; i < inner; i++) {
                    int64_t base = o * n * inner + i;
                    double s = 0;
                    for (int64_t k = 0; k < n; k++) {
                        int64_t at = base + k * inner;
                        s += log_form ? rg.v[at] : rg.v[at] * ry.v[at];
                    }
                    for (int64_t k = 0; k < n; k++) {
                        int64_t at = base + k * inner;
                        want.v[at] = log_form ? rg.v[at] - exp(ry.v[at]) * s
                                              : ry.v[at] * (rg.v[at] - s);
                    }
                }
            tj_tensor *gx = OWN(backward(g, y, dim, TJ_F32, log_form));
            tt_assert_close_ref(gx, &want, 1e-4, 1e-5);
            /* the result has the gradient's dtype, whatever input_dtype says (PyTorch) */
            tj_tensor *gx64 = OWN(backward(g, y, dim, TJ_F64, log_form));
            assert_int_equal(tj_tensor_dtype(gx64), TJ_F32);
            tt_assert_close_ref(gx64, &want, 1e-4, 1e-5);
            tt_ref_free(&ry), tt_ref_free(&rg), tt_ref_free(&want);
        }
    tt_nn_free_all();
}

/* ---- errors ------------------------------------------------------------------------- */

static void expect_error(tj_tensor *t, tj_status st, const char *needle) {
    assert_null(t);
    assert_int_equal(tj_last_status(), st);
    tt_assert_error(needle);
    tj_clear_error();
}

static void bad_arguments_are_clear_errors(void **state) {
    (void)state;
    int64_t xs[3] = {2, 3, 4}, ys[2] = {2, 3};
    tj_tensor *xi = OWN(tj_zeros(xs, 3, TJ_I64)), *x = OWN(tj_zeros(xs, 3, TJ_F32));
    tj_tensor *y = OWN(tj_zeros(ys, 2, TJ_F32)), *x64 = OWN(tj_zeros(xs, 3, TJ_F64));
    expect_error(tj_softmax(xi, 0), TJ_ERR_DTYPE,
                 "aten::softmax: argument 'self' must be a floating tensor (f32 or f64), got i64");
    expect_error(tj_log_softmax(x, 3), TJ_ERR_ARG,
                 "aten::log_softmax: dim 3 is out of range for a tensor of 3 dims");
    expect_error(tj_softmax_backward_data(x, y, 1, TJ_F32), TJ_ERR_SHAPE,
                 "aten::_softmax_backward_data: argument 'grad_output' has sizes [2, 3, 4] but "
                 "'output' has sizes [2, 3]");
    expect_error(tj_log_softmax_backward_data(x, x64, 1, TJ_F32), TJ_ERR_DTYPE,
                 "grad_output (f32) and output (f64) must have the same dtype");
    expect_error(tj_softmax_backward_data(x, x, 1, TJ_I64), TJ_ERR_DTYPE,
                 "input_dtype must be f32 or f64, got i64");
    expect_error(tj_softmax(NULL, 0), TJ_ERR_ARG, "aten::softmax: argument 'self' is NULL");
    tt_nn_free_all();
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(99);
    return gen ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tj_generator_free(gen);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ops_exist),
        cmocka_unit_test(softmax_matches_reference),
        cmocka_unit_test(softmax_is_numerically_stable),
        cmocka_unit_test(f32_exp_is_accurate),
        cmocka_unit_test(backward_matches_finite_differences),
        cmocka_unit_test(backward_matches_reference_and_converts),
        cmocka_unit_test(bad_arguments_are_clear_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
