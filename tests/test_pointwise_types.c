/* test_pointwise_types.c — what the table-driven test in test_pointwise.c
 * does not cover: PyTorch's type promotion across mixed dtypes (expected
 * dtypes written out by hand), special values (NaN, infinities, ties, integer
 * edge cases) and the error messages of the pointwise family. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

/* A contiguous view of t's 24 elements with 8 dims (sizes multiply to 24). */
static tj_tensor *view8(tj_tensor *t, const int64_t *sizes) {
    int64_t strides[8];
    tjc_contiguous_strides(sizes, 8, strides);
    tj_tensor *v = tjc_make_view(t, sizes, strides, 8, 0);
    assert_non_null(v);
    tjc_scope_track(v);
    return v;
}

/* A 1-D tensor of dtype holding v[0..n). */
static tj_tensor *vec(tj_dtype dtype, int n, const double *v) {
    int64_t size = n;
    tj_tensor *t = tj_empty(&size, 1, dtype);
    assert_non_null(t);
    char *p = tj_data(t);
    for (int i = 0; i < n; i++) {
        switch (dtype) {
        case TJ_F32: ((float *)p)[i] = (float)v[i]; break;
        case TJ_F64: ((double *)p)[i] = v[i]; break;
        case TJ_I64: ((int64_t *)p)[i] = (int64_t)v[i]; break;
        case TJ_BOOL: ((bool *)p)[i] = v[i] != 0; break;
        default: break;
        }
    }
    return t;
}

#define VEC(dtype, ...) \
    vec(dtype, sizeof((double[]){__VA_ARGS__}) / sizeof(double), (double[]){__VA_ARGS__})
#define CHECK(t, dtype, tol, ...)                                                             \
    do {                                                                                      \
        tj_tensor *t_ = (t);                                                                  \
        assert_non_null(t_);                                                                  \
        assert_int_equal(tj_tensor_dtype(t_), dtype);                                         \
        const double want_[] = {__VA_ARGS__};                                                 \
        tt_assert_values(t_, want_, (int64_t)(sizeof want_ / sizeof want_[0]), tol);          \
    } while (0)

/* ---- promotion ------------------------------------------------------------------ */

static void promotion_between_dimensioned_tensors(void **state) {
    (void)state;
    tj_tensor *f32 = VEC(TJ_F32, 0.1, 2), *f64 = VEC(TJ_F64, 0.2, 3);
    tj_tensor *i64 = VEC(TJ_I64, 1, -2), *b = VEC(TJ_BOOL, 1, 0);
    /* f32 + f64 computes in f64: the f32 value widened exactly */
    CHECK(tj_add(f32, f64, 1), TJ_F64, 1e-15, (double)0.1f + 0.2, 5);
    CHECK(tj_add(i64, f32, 1), TJ_F32, 1e-6, 1.1, 0);
    CHECK(tj_mul(f64, i64), TJ_F64, 1e-15, 0.2, -6);
    CHECK(tj_add(b, i64, 1), TJ_I64, 0, 2, -2);
    CHECK(tj_add(i64, b, 1), TJ_I64, 0, 2, -2);
    CHECK(tj_mul(b, f32), TJ_F32, 1e-6, 0.1, 0);
    CHECK(tj_maximum(i64, f64), TJ_F64, 0, 1, 3);
    /* a division of integers is a true division */
    CHECK(tj_div(VEC(TJ_I64, 7, -7), VEC(TJ_I64, 2, 2)), TJ_F32, 0, 3.5, -3.5);
    CHECK(tj_div(i64, f64), TJ_F64, 1e-15, 5, -2.0 / 3);
}

static void zero_dim_tensors_count_only_when_a_category_higher(void **state) {
    (void)state;
    tj_tensor *f32 = VEC(TJ_F32, 1.5, 2), *i64 = VEC(TJ_I64, 1, 2);
    CHECK(tj_add(f32, tj_scalar_tensor(0.25, TJ_F64), 1), TJ_F32, 0, 1.75, 2.25);
    CHECK(tj_add(tj_scalar_tensor(0.25, TJ_F64), f32, 1), TJ_F32, 0, 1.75, 2.25);
    CHECK(tj_add(i64, tj_scalar_tensor(0.5, TJ_F32), 1), TJ_F32, 0, 1.5, 2.5);
    /* the 0-dim tensor's own dtype wins when its category is higher */
    CHECK(tj_add(i64, tj_scalar_tensor(0.5, TJ_F64), 1), TJ_F64, 0, 1.5, 2.5);
    CHECK(tj_add(i64, tj_scalar_tensor(3, TJ_I64), 1), TJ_I64, 0, 4, 5);
    CHECK(tj_mul(VEC(TJ_BOOL, 1, 0), tj_scalar_tensor(3, TJ_I64)), TJ_I64, 0, 3, 0);
    CHECK(tj_add(f32, tj_scalar_tensor(7, TJ_I64), 1), TJ_F32, 0, 8.5, 9);
    /* two 0-dim tensors promote as usual */
    tj_tensor *r = tj_add(tj_scalar_tensor(1, TJ_F32), tj_scalar_tensor(2, TJ_F64), 1);
    assert_non_null(r);
    assert_int_equal(tj_ndim(r), 0);
    CHECK(r, TJ_F64, 0, 3);
}

/* A Scalar operand promotes as PyTorch's wrapped numbers: only when its
 * category (bool < integer < float) is above the tensor's; a C integer is an
 * integer Scalar, a C double a float one even when whole. */
static void scalars_promote_as_wrapped_numbers(void **state) {
    (void)state;
    tj_tensor *i64 = VEC(TJ_I64, 1, 2), *f64 = VEC(TJ_F64, 1, 2), *b = VEC(TJ_BOOL, 1, 0);
    CHECK(tj_add_scalar(i64, 0.5, 1), TJ_F32, 0, 1.5, 2.5);
    CHECK(tj_add_scalar(i64, 2, 1), TJ_I64, 0, 3, 4);
    CHECK(tj_add_scalar(i64, 2.0, 1), TJ_F32, 0, 3, 4);
    CHECK(tj_add_scalar(i64, (bool)true, 1), TJ_I64, 0, 2, 3);
    CHECK(tj_add_scalar(b, (bool)true, 1), TJ_BOOL, 0, 1, 1); /* bool + True stays bool */
    CHECK(tj_add_scalar(i64, tj_scalar_int(2), tj_scalar_int(3)), TJ_I64, 0, 7, 8);
    CHECK(tj_mul_scalar(f64, 0.1), TJ_F64, 1e-16, 0.1, 0.2);
    CHECK(tj_mul_scalar(f64, 3), TJ_F64, 0, 3, 6);
    CHECK(tj_mul_scalar(b, 2.5), TJ_F32, 0, 2.5, 0);
    CHECK(tj_mul_scalar(b, 2), TJ_I64, 0, 2, 0);
    CHECK(tj_pow_scalar(i64, 2), TJ_I64, 0, 1, 4);
    CHECK(tj_pow_scalar(i64, 2.0), TJ_F32, 0, 1, 4);
    CHECK(tj_pow_scalar(b, 2), TJ_I64, 0, 1, 0);
    CHECK(tj_clamp(i64, 1.5, TJ_NONE), TJ_F32, 0, 1.5, 2);
    CHECK(tj_clamp(i64, 2, tj_scalar_none()), TJ_I64, 0, 2, 2);
    CHECK(tj_clamp(i64, tj_scalar_none(), 1), TJ_I64, 0, 1, 1);
    CHECK(tj_clamp(b, 0, 1), TJ_I64, 0, 1, 0);
    CHECK(tj_lt_scalar(i64, 1.5), TJ_BOOL, 0, 1, 0);
    CHECK(tj_eq_scalar(i64, 2.0), TJ_BOOL, 0, 0, 1);
    /* alpha and addcmul's value do not promote: they take the tensors' dtype */
    CHECK(tj_add(i64, i64, 2), TJ_I64, 0, 3, 6);
    CHECK(tj_add(f64, f64, 2), TJ_F64, 0, 3, 6);
    CHECK(tj_addcmul(i64, i64, i64, 2.7), TJ_I64, 0, 3, 10); /* truncated to 2, as in PyTorch */
    CHECK(tj_addcmul(i64, i64, i64, -0.5), TJ_I64, 0, 1, 2);
    /* f32 keeps f32: the double is rounded to the tensor's precision */
    CHECK(tj_add_scalar(VEC(TJ_F32, 0), 0.1, 1), TJ_F32, 0, (double)0.1f);
}

static void comparisons_and_logic_give_bool(void **state) {
    (void)state;
    tj_tensor *i64 = VEC(TJ_I64, 1, 2, 3), *f32 = VEC(TJ_F32, 1.5, 2, 2.5);
    CHECK(tj_lt(i64, f32), TJ_BOOL, 0, 1, 0, 0);
    CHECK(tj_eq(i64, f32), TJ_BOOL, 0, 0, 1, 0);
    CHECK(tj_ge(f32, tj_scalar_tensor(2, TJ_I64)), TJ_BOOL, 0, 0, 1, 1);
    CHECK(tj_ne(VEC(TJ_BOOL, 1, 0), VEC(TJ_BOOL, 1, 1)), TJ_BOOL, 0, 0, 1);
    /* logic reads any dtype as "nonzero" */
    CHECK(tj_logical_and(VEC(TJ_F32, 0, 0.5, -2), VEC(TJ_I64, 3, 0, 1)), TJ_BOOL, 0, 0, 0, 1);
    CHECK(tj_logical_or(VEC(TJ_F64, 0, 0, NAN), VEC(TJ_I64, 0, 2, 0)), TJ_BOOL, 0, 0, 1, 1);
    CHECK(tj_logical_not(VEC(TJ_F32, 0, -0.0, 3)), TJ_BOOL, 0, 1, 1, 0);
}

static void floating_ops_make_integers_f32(void **state) {
    (void)state;
    CHECK(tj_exp(VEC(TJ_I64, 0, 1)), TJ_F32, 1e-6, 1, exp(1));
    CHECK(tj_sqrt(VEC(TJ_BOOL, 1, 0)), TJ_F32, 0, 1, 0);
    CHECK(tj_exp(VEC(TJ_F64, 1)), TJ_F64, 0, exp(1));
    CHECK(tj_sigmoid(VEC(TJ_I64, 0)), TJ_F32, 0, 0.5);
    CHECK(tj_lerp(VEC(TJ_F64, 0, 2), VEC(TJ_F64, 4, 4), 0.5), TJ_F64, 0, 2, 3);
    assert_null(tj_lerp(VEC(TJ_F32, 0, 2), VEC(TJ_F64, 4, 4), 0.5)); /* one dtype, as in PyTorch */
    tt_assert_error("aten::lerp.Scalar: argument 'end' is f64 but 'self' is f32");
    /* gelu, silu and lerp have floating kernels only in PyTorch: integers are refused */
    tj_clear_error();
    assert_null(tj_lerp(VEC(TJ_I64, 0, 2), VEC(TJ_F64, 4, 4), 0.5));
    tt_assert_error("aten::lerp.Scalar: argument 'self' is i64");
    assert_null(tj_gelu(VEC(TJ_BOOL, 1, 0), "none"));
    tt_assert_error("aten::gelu: argument 'self' is bool");
    tj_clear_error();
}

static void where_promotes_its_values_and_wants_a_bool_condition(void **state) {
    (void)state;
    tj_tensor *cond = VEC(TJ_BOOL, 1, 0, 1);
    CHECK(tj_where(cond, VEC(TJ_I64, 1, 2, 3), VEC(TJ_F32, 0.5, 0.5, 0.5)), TJ_F32, 0, 1, 0.5, 3);
    CHECK(tj_where(cond, VEC(TJ_F32, 1, 2, 3), tj_scalar_tensor(9, TJ_F64)), TJ_F32, 0, 1, 9, 3);
    CHECK(tj_where(cond, VEC(TJ_BOOL, 0, 0, 0), VEC(TJ_BOOL, 1, 1, 1)), TJ_BOOL, 0, 0, 1, 0);
    for (tj_dtype d = TJ_F32; d <= TJ_I64; d++) {
        tj_clear_error();
        assert_null(tj_where(VEC(d, 1, 0, 1), VEC(TJ_F32, 1, 2, 3), VEC(TJ_F32, 1, 2, 3)));
        assert_int_equal(tj_last_status(), TJ_ERR_DTYPE);
        tt_assert_error("aten::where.self: argument 'condition' must be bool");
    }
}

/* ---- special values ------------------------------------------------------------- */

static void nan_and_infinity(void **state) {
    (void)state;
    tj_tensor *a = VEC(TJ_F32, NAN, 1, NAN, -INFINITY), *b = VEC(TJ_F32, 0, NAN, NAN, 2);
    CHECK(tj_maximum(a, b), TJ_F32, 0, NAN, NAN, NAN, 2);
    CHECK(tj_minimum(a, b), TJ_F32, 0, NAN, NAN, NAN, -INFINITY);
    CHECK(tj_maximum_scalar(a, 0), TJ_F32, 0, NAN, 1, NAN, 0);
    CHECK(tj_clamp(a, -1, 1), TJ_F32, 0, NAN, 1, NAN, -1);
    CHECK(tj_relu(VEC(TJ_F64, NAN, -INFINITY, INFINITY)), TJ_F64, 0, NAN, 0, INFINITY);
    CHECK(tj_eq(a, a), TJ_BOOL, 0, 0, 1, 0, 1);
    CHECK(tj_ne(a, a), TJ_BOOL, 0, 1, 0, 1, 0);
    CHECK(tj_div(VEC(TJ_F32, 1, -1, 0), VEC(TJ_F32, 0, 0, 0)), TJ_F32, 0, INFINITY, -INFINITY, NAN);
    CHECK(tj_div(VEC(TJ_I64, 1, 0), VEC(TJ_I64, 0, 0)), TJ_F32, 0, INFINITY, NAN);
    CHECK(tj_sigmoid(VEC(TJ_F32, -200, 200)), TJ_F32, 0, 0, 1);
    CHECK(tj_tanh(VEC(TJ_F64, -INFINITY, INFINITY)), TJ_F64, 0, -1, 1);
    CHECK(tj_log(VEC(TJ_F64, 0, -1)), TJ_F64, 0, -INFINITY, NAN);
    CHECK(tj_sign(VEC(TJ_F64, -0.0, 0, -3, INFINITY)), TJ_F64, 0, 0, 0, -1, 1);
    CHECK(tj_where(VEC(TJ_BOOL, 1, 0), VEC(TJ_F32, 1, NAN), VEC(TJ_F32, NAN, 2)), TJ_F32, 0, 1, 2);
}

static void rounding_ties_go_to_even(void **state) {
    (void)state;
    for (tj_dtype d = TJ_F32; d <= TJ_F64; d++) {
        tj_tensor *x = VEC(d, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 1e10 + 0.5);
        CHECK(tj_round(x), d, 0, 0, 2, 2, -0.0, -2, -2, 2, 1e10);
        CHECK(tj_floor(VEC(d, -0.5, 1.5, -2)), d, 0, -1, 1, -2);
        CHECK(tj_ceil(VEC(d, -0.5, 1.5, -2)), d, 0, -0.0, 2, -2);
    }
}

static void integer_edge_cases(void **state) {
    (void)state;
    /* integers to negative integer tensor powers: 0 unless |base| is 1, as in PyTorch */
    CHECK(tj_pow(VEC(TJ_I64, 2, 1, -1, -1, 3), VEC(TJ_I64, -1, -3, -3, -2, -7)), TJ_I64, 0, 0, 1, -1, 1,
          0);
    CHECK(tj_pow(VEC(TJ_I64, 2, 1, -1, -1, 3), VEC(TJ_I64, 1, 3, 3, 2, 0)), TJ_I64, 0, 2, 1, -1, 1,
          1);
    CHECK(tj_pow(VEC(TJ_I64, 3, -2), VEC(TJ_I64, 39, 63)), TJ_I64, 0, 4052555153018976267.0,
          -9223372036854775808.0);
    int64_t big[] = {INT64_MIN, INT64_MAX, -7};
    int64_t n = 3;
    tj_tensor *x = tj_from_array(big, &n, 1, TJ_I64);
    tj_tensor *ab = tj_abs(x);
    assert_non_null(ab);
    const int64_t *v = tj_data(ab);
    /* |INT64_MIN| wraps to itself as in PyTorch, rather than being undefined */
    assert_true(v[0] == INT64_MIN && v[1] == INT64_MAX && v[2] == 7);
    CHECK(tj_sign(x), TJ_I64, 0, -1, 1, -1);
    CHECK(tj_relu(x), TJ_I64, 0, 0, 9223372036854775807.0, 0);
    CHECK(tj_maximum(x, VEC(TJ_I64, 0, 0, 0)), TJ_I64, 0, 0, 9223372036854775807.0, 0);
    CHECK(tj_floor(VEC(TJ_I64, -3, 4)), TJ_I64, 0, -3, 4);
    /* clamp of an integer tensor by integer bounds stays integral; float bounds promote */
    CHECK(tj_clamp(VEC(TJ_I64, -5, 0, 5), -2, 3), TJ_I64, 0, -2, 0, 3);
    CHECK(tj_clamp(VEC(TJ_I64, -5, 0, 5), -2., 3), TJ_F32, 0, -2, 0, 3);
    CHECK(tj_clamp(x, tj_scalar_none(), 0), TJ_I64, 0, -9223372036854775808.0, 0, -7);
    CHECK(tj_clamp(x, -7, tj_scalar_none()), TJ_I64, 0, -7, 9223372036854775807.0, -7);
}

static void integer_arithmetic_wraps_instead_of_overflowing(void **state) {
    (void)state;
    int64_t big[] = {INT64_MAX, INT64_MIN};
    int64_t n = 2;
    tj_tensor *x = tj_from_array(big, &n, 1, TJ_I64);
    const int64_t *v;
    tj_tensor *r = tj_add(x, VEC(TJ_I64, 1, -1), 1);
    assert_non_null(r);
    v = tj_data(r);
    assert_true(v[0] == INT64_MIN && v[1] == INT64_MAX);
    r = tj_neg(x);
    assert_non_null(r);
    v = tj_data(r);
    assert_true(v[0] == -INT64_MAX && v[1] == INT64_MIN);
    r = tj_mul(x, VEC(TJ_I64, 2, 2));
    assert_non_null(r);
    v = tj_data(r);
    assert_true(v[0] == -2 && v[1] == 0);
    r = tj_sub(x, VEC(TJ_I64, -1, 1), 1);
    assert_non_null(r);
    v = tj_data(r);
    assert_true(v[0] == INT64_MIN && v[1] == INT64_MAX);
}

static void attributes(void **state) {
    (void)state;
    tj_tensor *a = VEC(TJ_F64, 1, 2), *b = VEC(TJ_F64, 10, 20);
    CHECK(tj_add(a, b, 0.5), TJ_F64, 0, 6, 12);
    CHECK(tj_sub(a, b, -2), TJ_F64, 0, 21, 42);
    CHECK(tj_add_scalar(a, 4, 0.25), TJ_F64, 0, 2, 3);
    CHECK(tj_sub_scalar(a, 4, 0.25), TJ_F64, 0, 0, 1);
    CHECK(tj_addcmul(a, b, b, 0.01), TJ_F64, 1e-14, 2, 6);
    /* integer alphas are fine on integers */
    CHECK(tj_add(VEC(TJ_I64, 1, 2), VEC(TJ_I64, 10, 20), 3), TJ_I64, 0, 31, 62);
    CHECK(tj_gelu(VEC(TJ_F64, 0, 1), "none"), TJ_F64, 1e-15, 0, 0.8413447460685429);
    CHECK(tj_gelu(VEC(TJ_F64, 0, 1), "tanh"), TJ_F64, 1e-15, 0, 0.8411919906082768);
    CHECK(tj_lerp(a, b, 0), TJ_F64, 0, 1, 2);
    CHECK(tj_lerp(a, b, 1), TJ_F64, 0, 10, 20); /* exact at both ends */
    CHECK(tj_clamp(a, TJ_NONE, 1.5), TJ_F64, 0, 1, 1.5);
}

/* add, mul, maximum, minimum and sign take bool tensors, as PyTorch's kernels
 * do: over bools add is or, mul and minimum are and, maximum is or. */
static void bool_arithmetic(void **state) {
    (void)state;
    tj_tensor *x = VEC(TJ_BOOL, 1, 1, 0, 0), *y = VEC(TJ_BOOL, 1, 0, 1, 0);
    CHECK(tj_add(x, y, 1), TJ_BOOL, 0, 1, 1, 1, 0);
    CHECK(tj_add(x, y, 0), TJ_BOOL, 0, 1, 1, 0, 0);
    CHECK(tj_mul(x, y), TJ_BOOL, 0, 1, 0, 0, 0);
    CHECK(tj_maximum(x, y), TJ_BOOL, 0, 1, 1, 1, 0);
    CHECK(tj_minimum(x, y), TJ_BOOL, 0, 1, 0, 0, 0);
    CHECK(tj_sign(x), TJ_BOOL, 0, 1, 1, 0, 0);
    CHECK(tj_add(x, VEC(TJ_I64, 2, 2, 2, 2), 1), TJ_I64, 0, 3, 3, 2, 2);
    CHECK(tj_mul_scalar(x, (bool)true), TJ_BOOL, 0, 1, 1, 0, 0);
    CHECK(tj_minimum(x, VEC(TJ_I64, 0, 5, 5, -1)), TJ_I64, 0, 0, 1, 0, -1);
}

static void eight_dims_broadcast(void **state) {
    (void)state;
    int64_t sa[8] = {2, 1, 3, 1, 2, 1, 2, 1}, sb[8] = {1, 2, 1, 2, 1, 3, 1, 2};
    tj_tensor *a = tj_arange(0, 24, 1, TJ_F64), *b = tj_arange(0, 24, 1, TJ_F64);
    tj_tensor *va = view8(a, sa), *vb = view8(b, sb);
    tj_tensor *r = tj_sub(va, vb, 1);
    assert_non_null(r);
    assert_int_equal(tj_ndim(r), 8);
    assert_int_equal(tj_numel(r), 2 * 2 * 3 * 2 * 2 * 3 * 2 * 2);
    int64_t idx[8] = {0}, ia[8], ib[8];
    do { /* element of a at the broadcast position minus element of b */
        for (int d = 0; d < 8; d++) {
            ia[d] = sa[d] == 1 ? 0 : idx[d];
            ib[d] = sb[d] == 1 ? 0 : idx[d];
        }
        assert_true(tj_get(r, idx) == tj_get(va, ia) - tj_get(vb, ib));
    } while (tt_next_index(idx, tj_sizes(r), 8));
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_null(tj_zeros(nine, 9, TJ_F32));
    tt_assert_error("9 dims requested; tjit supports 0 to 8");
}

/* ---- errors --------------------------------------------------------------------- */

static void error_messages_name_the_op_argument_and_shapes(void **state) {
    (void)state;
    int64_t s34[] = {3, 4}, s5[] = {5};
    tj_tensor *x = tj_zeros(s34, 2, TJ_F32), *y = tj_zeros(s5, 1, TJ_F32);
    assert_null(tj_add(x, y, 1));
    assert_int_equal(tj_last_status(), TJ_ERR_SHAPE);
    assert_string_equal(tj_last_error(), "aten::add: cannot broadcast sizes [3, 4] and [5]");
    tj_clear_error();
    assert_null(tj_where(tj_zeros(s34, 2, TJ_BOOL), x, y));
    tt_assert_error("aten::where.self: cannot broadcast sizes [3, 4] and [5]");
    tj_clear_error();
    assert_null(tj_mul(x, NULL));
    assert_int_equal(tj_last_status(), TJ_ERR_ARG);
    assert_string_equal(tj_last_error(), "aten::mul: argument 'other' is NULL");
    tj_clear_error();
    assert_null(tj_addcmul(x, x, NULL, 1));
    tt_assert_error("aten::addcmul: argument 'tensor2' is NULL");
    tj_clear_error();
    assert_null(tj_gelu(x, "fast"));
    tt_assert_error("aten::gelu: argument 'approximate' must be one of none|tanh; got 'fast'");
    tj_clear_error();
    assert_null(tj_neg(VEC(TJ_BOOL, 1)));
    assert_int_equal(tj_last_status(), TJ_ERR_DTYPE);
    tt_assert_error("aten::neg: arithmetic on bool tensors is not supported");
    tj_clear_error();
    assert_null(tj_sub(VEC(TJ_I64, 1), VEC(TJ_BOOL, 1), 1));
    assert_int_equal(tj_last_status(), TJ_ERR_DTYPE);
    tt_assert_error("aten::sub: subtraction with a bool tensor is not supported (as in PyTorch); "
                    "to invert a mask use tj_logical_not");
    tj_clear_error();
    assert_null(tj_add(VEC(TJ_I64, 1), VEC(TJ_I64, 1), 0.5));
    assert_int_equal(tj_last_status(), TJ_ERR_ARG);
    tt_assert_error("aten::add: argument 'alpha' is the float 0.5, but an op on i64 tensors "
                    "takes an integer alpha");
    tj_clear_error();
    assert_null(tj_add(VEC(TJ_I64, 1), VEC(TJ_I64, 1), 2.0)); /* even a whole one, as in PyTorch */
    tt_assert_error("aten::add: argument 'alpha' is the float 2, but an op on i64 tensors");
    tj_clear_error();
    assert_null(tj_addcmul(VEC(TJ_I64, 1), VEC(TJ_I64, 1), VEC(TJ_I64, 1), NAN));
    tt_assert_error("aten::addcmul: argument 'value' is nan, which cannot be converted to i64 "
                    "without overflow");
    tj_clear_error();
    assert_null(tj_pow_scalar(VEC(TJ_I64, 2), -1));
    tt_assert_error("aten::pow.Tensor_Scalar: Integers to negative integer powers are not allowed "
                    "(exponent -1)");
    tj_clear_error();
    assert_null(tj_clamp(VEC(TJ_I64, 2), tj_scalar_none(), tj_scalar_none()));
    tt_assert_error("aten::clamp: at least one of 'min' and 'max' must be given");
    tj_clear_error();
    /* the first failure in a chain is the one reported */
    assert_null(tj_exp(tj_neg(tj_add(x, y, 1))));
    tt_assert_error("aten::add: cannot broadcast");
}

int main(void) {
#define T(f) TT_SCOPED_TEST(f)
    const struct CMUnitTest tests[] = {
        T(promotion_between_dimensioned_tensors),
        T(zero_dim_tensors_count_only_when_a_category_higher),
        T(scalars_promote_as_wrapped_numbers),
        T(comparisons_and_logic_give_bool),
        T(floating_ops_make_integers_f32),
        T(where_promotes_its_values_and_wants_a_bool_condition),
        T(nan_and_infinity),
        T(rounding_ties_go_to_even),
        T(integer_edge_cases),
        T(integer_arithmetic_wraps_instead_of_overflowing),
        T(attributes),
        T(bool_arithmetic),
        T(eight_dims_broadcast),
        T(error_messages_name_the_op_argument_and_shapes),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
