/* test_dropout.c — native_dropout, dropout and native_dropout_backward: eval
 * is the identity, training keeps about 1 - p of the elements scaled by
 * 1/(1-p), the mask is reproducible from the seed whatever the thread count
 * and the input's strides, p = 0 and p = 1, the default generator, and errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nn_cases.h"

static const char *const covered[] = {TT_NN_DROPOUT_OPS};
static tj_generator *gen;

#define OWN(t) tt_nn_own(t)

static void ops_exist(void **state) {
    (void)state;
    tt_nn_assert_ops_exist(covered, (int)(sizeof covered / sizeof *covered));
}

static void eval_is_identity(void **state) {
    (void)state;
    int64_t xs[2] = {3, 4};
    tj_tensor *x = OWN(tt_noncontiguous(gen, OWN(tt_random(gen, xs, 2, TJ_F32, -1, 1))));
    tj_tensor *out[2];
    uint64_t before = tj_generator_offset(gen);
    tt_nn_own_outputs(out, tj_native_dropout(x, 0.5, false, gen, out, 2), 2);
    tt_ref rx = tt_ref_of(x);
    tt_assert_close_ref(out[0], &rx, 0, 0);
    assert_int_equal(tj_tensor_dtype(out[1]), TJ_BOOL);
    for (int64_t i = 0; i < 12; i++) assert_true(((const bool *)tj_data(out[1]))[i]);
    tt_assert_close_ref(OWN(tj_dropout(x, 0.5, false, gen)), &rx, 0, 0);
    assert_int_equal(tj_generator_offset(gen), before); /* eval draws nothing */
    tt_ref_free(&rx);
    tt_nn_free_all();
}

/* [200, 500] f64 with p = 0.3: the kept fraction is 0.7 within 5 standard
 * deviations, kept values are x / 0.7, dropped ones 0, and the mask says which. */
static void training_keeps_one_minus_p_scaled(void **state) {
    (void)state;
    int64_t xs[2] = {200, 500}, n = 200 * 500;
    double p = 0.3;
    tj_tensor *x = OWN(tt_random(gen, xs, 2, TJ_F64, 1, 2));
    tj_tensor *out[2];
    uint64_t before = tj_generator_offset(gen);
    tt_nn_own_outputs(out, tj_native_dropout(x, p, true, gen, out, 2), 2);
    assert_int_equal(tj_generator_offset(gen), before + (uint64_t)n);
    const double *xv = tj_data(x), *yv = tj_data(out[0]);
    const bool *m = tj_data(out[1]);
    int64_t kept = 0;
    double sum_x = 0, sum_y = 0;
    for (int64_t i = 0; i < n; i++) {
        kept += m[i];
        assert_true(m[i] ? fabs(yv[i] - xv[i] / (1 - p)) < 1e-12 : yv[i] == 0);
        sum_x += xv[i], sum_y += yv[i];
    }
    double frac = (double)kept / (double)n, sd = sqrt(p * (1 - p) / (double)n);
    assert_true(fabs(frac - (1 - p)) < 5 * sd);
    assert_true(fabs(sum_y / sum_x - 1) < 0.02); /* the expectation is preserved */
    tt_nn_free_all();
}

/* The mask from (seed, offset) is the same at 1 and 2 threads, for f32 and
 * f64, for contiguous and strided inputs, and for dropout and native_dropout. */
static void mask_is_reproducible(void **state) {
    (void)state;
    int64_t xs[2] = {300, 400}, n = 300 * 400;
    tj_tensor *x = OWN(tt_random(gen, xs, 2, TJ_F32, -1, 1));
    tj_tensor *xs_strided = OWN(tt_noncontiguous(gen, x));
    tj_tensor *x64 = OWN(tj_to_dtype(x, TJ_F64));
    tj_tensor *masks[4], *out[2];
    for (int k = 0; k < 4; k++) {
        tj_set_num_threads(k % 2 ? 2 : 1);
        tj_generator_set_state(gen, 77, 1000);
        tj_tensor *in = k == 0 ? x : k == 1 ? x : k == 2 ? xs_strided : x64;
        tt_nn_own_outputs(out, tj_native_dropout(in, 0.4, true, gen, out, 2), 2);
        masks[k] = out[1];
    }
    tj_set_num_threads(0);
    for (int k = 1; k < 4; k++)
        assert_memory_equal(tj_data(masks[0]), tj_data(masks[k]), (size_t)n);
    /* dropout draws the same as native_dropout's first output */
    tj_generator_set_state(gen, 77, 1000);
    tt_nn_own_outputs(out, tj_native_dropout(x, 0.4, true, gen, out, 2), 2);
    tj_generator_set_state(gen, 77, 1000);
    tt_ref want = tt_ref_of(out[0]);
    tt_assert_close_ref(OWN(tj_dropout(x, 0.4, true, gen)), &want, 0, 0);
    tt_ref_free(&want);
    /* another seed, or the next offset, gives another mask */
    tj_generator_set_state(gen, 78, 1000);
    tt_nn_own_outputs(out, tj_native_dropout(x, 0.4, true, gen, out, 2), 2);
    assert_memory_not_equal(tj_data(masks[0]), tj_data(out[1]), (size_t)n);
    tt_nn_own_outputs(out, tj_native_dropout(x, 0.4, true, gen, out, 2), 2);
    assert_memory_not_equal(tj_data(masks[0]), tj_data(out[1]), (size_t)n);
    tt_nn_free_all();
}

static void p_zero_and_p_one(void **state) {
    (void)state;
    int64_t xs[2] = {4, 5};
    tj_tensor *x = OWN(tt_random(gen, xs, 2, TJ_F32, -1, 1));
    tt_ref rx = tt_ref_of(x), zeros = tt_ref_new(xs, 2);
    tt_assert_close_ref(OWN(tj_dropout(x, 0.0, true, gen)), &rx, 0, 0);
    tj_tensor *out[2];
    tt_nn_own_outputs(out, tj_native_dropout(x, 1.0, true, gen, out, 2), 2);
    tt_assert_close_ref(out[0], &zeros, 0, 0);
    tt_assert_close_ref(out[1], &zeros, 0, 0);
    tt_ref_free(&rx), tt_ref_free(&zeros);
    tt_nn_free_all();
}

/* NULL draws from the process default generator: it works, and its stream
 * moves on (two calls give different masks). */
static void null_generator_uses_the_default(void **state) {
    (void)state;
    int64_t xs[1] = {4096};
    tj_tensor *x = OWN(tj_ones(xs, 1, TJ_F32)), *a[2], *b[2];
    tt_nn_own_outputs(a, tj_native_dropout(x, 0.5, true, NULL, a, 2), 2);
    tt_nn_own_outputs(b, tj_native_dropout(x, 0.5, true, NULL, b, 2), 2);
    assert_memory_not_equal(tj_data(a[1]), tj_data(b[1]), 4096);
    tt_nn_free_all();
}

static void backward_is_grad_times_mask_times_scale(void **state) {
    (void)state;
    int64_t xs[2] = {6, 7};
    tj_tensor *x = OWN(tt_random(gen, xs, 2, TJ_F64, -1, 1)), *out[2];
    tt_nn_own_outputs(out, tj_native_dropout(x, 0.25, true, gen, out, 2), 2);
    tj_tensor *g = OWN(tt_noncontiguous(gen, OWN(tt_random(gen, xs, 2, TJ_F64, -1, 1))));
    tt_ref rg = tt_ref_of(g), rm = tt_ref_of(out[1]), want = tt_ref_new(xs, 2);
    for (int64_t i = 0; i < 42; i++) want.v[i] = rg.v[i] * rm.v[i] / 0.75;
    tt_assert_close_ref(OWN(tj_native_dropout_backward(g, out[1], 1 / 0.75)), &want, 1e-12, 1e-12);
    /* and it is the derivative of the forward op with the mask held fixed:
     * y = x * mask * scale */
    tt_ref rx = tt_ref_of(x), ry = tt_ref_of(out[0]);
    for (int64_t i = 0; i < 42; i++) assert_true(fabs(ry.v[i] - rx.v[i] * rm.v[i] / 0.75) < 1e-12);
    tt_ref_free(&rg), tt_ref_free(&rm), tt_ref_free(&want), tt_ref_free(&rx), tt_ref_free(&ry);
    /* PyTorch multiplies: an inf gradient where the mask drops gives NaN */
    double gv[2] = {INFINITY, INFINITY};
    bool mv[2] = {false, true};
    int64_t two = 2;
    tj_tensor *gi = OWN(tj_from_array(gv, &two, 1, TJ_F64)), *mi = OWN(tj_from_array(mv, &two, 1, TJ_BOOL));
    const double *r = tj_data(OWN(tj_native_dropout_backward(gi, mi, 2.0)));
    assert_true(isnan(r[0]));
    assert_true(r[1] == INFINITY);
    tt_nn_free_all();
}

static void expect_error(tj_tensor *t, tj_status st, const char *needle) {
    assert_null(t);
    assert_int_equal(tj_last_status(), st);
    tt_assert_error(needle);
    tj_clear_error();
}

static void bad_arguments_are_clear_errors(void **state) {
    (void)state;
    int64_t xs[2] = {2, 3}, ys[1] = {6};
    tj_tensor *x = OWN(tj_zeros(xs, 2, TJ_F32));
    expect_error(tj_dropout(x, 1.5, true, gen), TJ_ERR_ARG,
                 "aten::dropout: dropout probability p must be in [0, 1], got 1.5");
    expect_error(tj_dropout(x, NAN, true, gen), TJ_ERR_ARG, "must be in [0, 1]");
    expect_error(tj_dropout(OWN(tj_zeros(xs, 2, TJ_I64)), 0.5, true, gen), TJ_ERR_DTYPE,
                 "aten::dropout: argument 'input' must be a floating tensor (f32 or f64), got i64");
    expect_error(tj_native_dropout_backward(x, OWN(tj_zeros(xs, 2, TJ_F32)), 2.0), TJ_ERR_DTYPE,
                 "aten::native_dropout_backward: argument 'mask' must be bool, got f32");
    expect_error(tj_native_dropout_backward(x, OWN(tj_zeros(ys, 1, TJ_BOOL)), 2.0), TJ_ERR_SHAPE,
                 "argument 'mask' has sizes [6] but 'grad_output' has sizes [2, 3]");
    tt_nn_free_all();
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(31337);
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
        cmocka_unit_test(eval_is_identity),
        cmocka_unit_test(training_keeps_one_minus_p_scaled),
        cmocka_unit_test(mask_is_reproducible),
        cmocka_unit_test(p_zero_and_p_one),
        cmocka_unit_test(null_generator_uses_the_default),
        cmocka_unit_test(backward_is_grad_times_mask_times_scale),
        cmocka_unit_test(bad_arguments_are_clear_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
