/* test_inplace.c — in-place pointwise ops and copy_: every in-place row of
 * ops.def against its out-of-place form, writes through views, inputs that
 * overlap the tensor being written, and the cases that must be refused
 * (expanded self, a result dtype that does not fit self, a shape change). */
#include <math.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

/* A view of base's storage, made directly so that these tests do not depend
 * on the view ops; it belongs to the current scope. */
static tj_tensor *view(tj_tensor *base, int ndim, const int64_t *sizes, const int64_t *strides,
                       int64_t offset) {
    tj_tensor *v = tjc_make_view(base, sizes, strides, ndim, offset);
    assert_non_null(v);
    tjc_scope_track(v);
    return v;
}

static tj_tensor *transposed(tj_tensor *t) { /* of a 2-D tensor */
    int64_t sizes[2] = {tj_sizes(t)[1], tj_sizes(t)[0]};
    int64_t strides[2] = {tj_strides(t)[1], tj_strides(t)[0]};
    return view(t, 2, sizes, strides, tj_storage_offset(t));
}

static tj_tensor *arange_2d(int64_t rows, int64_t cols, tj_dtype dtype) {
    tj_tensor *flat = tj_arange(0, (double)(rows * cols), 1, dtype);
    int64_t sizes[2] = {rows, cols}, strides[2] = {cols, 1};
    return view(flat, 2, sizes, strides, 0);
}

static void assert_same_values(const tj_tensor *got, const tj_tensor *want) {
    tt_ref r = tt_ref_of(want);
    tt_assert_close_ref(got, &r, 0, 0);
    tt_ref_free(&r);
}

/* ---- every in-place row against its base ------------------------------------------ */

/* Attribute values: the schema's defaults, else a value every op takes. */
static void fill_attrs(const tj_op_info *op, tj_attr *attrs) {
    const tj_schema *s = tj_op_schema(op);
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        bool optional = arg->type == TJ_ARG_FLOAT_OPT || arg->type == TJ_ARG_SCALAR_OPT;
        if (arg->has_default && !(optional && tj_is_none(arg->def.f)))
            attrs[k] = arg->def;
        else if (arg->type == TJ_ARG_FLOAT || optional || arg->type == TJ_ARG_SCALAR)
            attrs[k].scalar = tj_scalar_float(k == 0 ? 0.75 : 1.5); /* clamp's min, max; lerp's weight; scalars */
        else
            fail_msg("%s: the test has no value for argument '%s'", op->name, arg->name);
    }
}

/* Runs op on the inputs; NULL when it refused them. */
static tj_tensor *call(const tj_op_info *op, tj_tensor *const *in, const tj_attr *attrs) {
    tj_tensor *out = NULL;
    int n = tj_invoke(op->id, in, tj_op_schema(op)->n_tensor_args, attrs,
                      tj_op_schema(op)->n_attrs, &out, 1);
    return n == 1 ? out : NULL;
}

/* self's layouts: contiguous, or a transposed view; others broadcast. */
static void check_inplace_op(tj_generator *g, const tj_op_info *op, tj_dtype self_dtype,
                             tj_dtype other_dtype, bool transpose_self) {
    const tj_op_info *base = tjc_op(op->inplace_of);
    int n_in = tj_op_schema(op)->n_tensor_args;
    tt_context("%s, self %s%s, others %s", op->name, tj_dtype_name(self_dtype),
               transpose_self ? " (transposed)" : "", tj_dtype_name(other_dtype));
    int64_t self_sizes[2] = {transpose_self ? 5 : 4, transpose_self ? 4 : 5};
    int64_t other_sizes[3][2] = {{0, 0}, {5, 0}, {4, 1}};
    int other_ndim[3] = {0, 1, 2};
    tj_tensor *in[3];
    in[0] = tt_random(g, self_sizes, 2, self_dtype, 0.5, 2);
    if (transpose_self) in[0] = transposed(in[0]);
    for (int k = 1; k < n_in; k++)
        in[k] = tt_random(g, other_sizes[k], other_ndim[k], other_dtype, 0.5, 2);
    tj_tensor *others_before[3] = {NULL};
    for (int k = 1; k < n_in; k++) others_before[k] = tj_clone(in[k]);
    tj_attr attrs[TJ_MAX_ARGS];
    fill_attrs(op, attrs);

    tj_tensor *want = call(base, in, attrs);
    tj_status base_status = tj_last_status();
    tj_clear_error();
    tj_tensor *self_before = tj_clone(in[0]);
    tj_tensor *got = call(op, in, attrs);
    if (!want) { /* the in-place form refuses what the base refuses */
        assert_null(got);
        assert_int_equal(tj_last_status(), base_status);
        tt_assert_error(op->name);
        assert_same_values(in[0], self_before);
    } else if (tjc_dtype_category(tj_tensor_dtype(want)) > tjc_dtype_category(self_dtype)) {
        assert_null(got);
        assert_int_equal(tj_last_status(), TJ_ERR_DTYPE);
        tt_assert_error(op->name);
        tt_assert_error("cannot be stored in the");
        assert_same_values(in[0], self_before);
    } else {
        if (!got) fail_msg("%s: %s", op->name, tj_last_error());
        assert_ptr_equal(got, in[0]);
        assert_int_equal(tj_tensor_dtype(got), self_dtype);
        assert_same_values(got, tj_to_dtype(want, self_dtype));
    }
    for (int k = 1; k < n_in; k++) assert_same_values(in[k], others_before[k]);
    tj_clear_error();
    tt_context(NULL);
}

static void every_inplace_op_matches_its_out_of_place_form(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(7);
    static const tj_dtype pairs[][2] = {{TJ_F32, TJ_F32}, {TJ_F64, TJ_F64}, {TJ_I64, TJ_I64},
                                        {TJ_F32, TJ_F64}, {TJ_F64, TJ_I64}, {TJ_I64, TJ_F32},
                                        {TJ_BOOL, TJ_BOOL}};
    int found = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tjc_op(i);
        if (op->inplace_of < 0 || op->kind != TJ_KIND_POINTWISE) continue;
        found++;
        for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
            for (int tr = 0; tr < 2; tr++) {
                tj_scope_begin();
                check_inplace_op(g, op, pairs[p][0], pairs[p][1], tr);
                tj_scope_end();
            }
    }
    assert_true(found >= 30);
    tj_generator_free(g);
}

/* ---- writes through views --------------------------------------------------------- */

static void inplace_through_a_strided_slice_writes_only_its_elements(void **state) {
    (void)state;
    tj_tensor *x = arange_2d(4, 6, TJ_F64);
    tj_tensor *odd_cols = tj_slice(x, 1, 1, 6, 2); /* columns 1, 3, 5 */
    assert_ptr_equal(tj_add_scalar_(odd_cols, 100, 1), odd_cols);
    tj_tensor *rows = tj_slice(x, 0, 0, 4, 3); /* rows 0 and 3 */
    assert_non_null(tj_mul_scalar_(rows, -1));
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 6; j++) {
            int64_t idx[2] = {i, j};
            double want = (double)(6 * i + j) + (j % 2 ? 100 : 0);
            if (i == 0 || i == 3) want = -want;
            assert_true(tj_get(x, idx) == want);
        }
}

static void inplace_through_a_transposed_view_broadcasts_along_its_dims(void **state) {
    (void)state;
    tj_tensor *x = arange_2d(3, 4, TJ_F32); /* x.t() is [4, 3] */
    tj_tensor *xt = transposed(x);
    double row[3] = {1000, 2000, 3000};
    int64_t n = 3;
    assert_non_null(tj_add_(xt, tj_from_array((float[]){1000, 2000, 3000}, &n, 1, TJ_F32), 1));
    for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 4; j++) {
            int64_t idx[2] = {i, j};
            assert_true(tj_get(x, idx) == (double)(4 * i + j) + row[i]);
        }
    /* a narrower result into a transposed f32 view goes through a temporary */
    tj_tensor *y = arange_2d(3, 4, TJ_F32), *yt = transposed(y);
    assert_non_null(tj_mul_(yt, tj_scalar_tensor(0.5, TJ_F64)));
    assert_non_null(tj_div_(yt, tj_full((int64_t[]){4, 3}, 2, 0.25, TJ_F64)));
    tt_assert_values(y, ((double[]){0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}), 12, 0);
}

/* ---- inputs overlapping self -------------------------------------------------------- */

static void inputs_overlapping_self_are_read_before_writing(void **state) {
    (void)state;
    /* x.add_(x.t()) on a square matrix: every element sees the old values */
    tj_tensor *x = arange_2d(5, 5, TJ_F64);
    assert_non_null(tj_add_(x, transposed(x), 1));
    for (int64_t i = 0; i < 5; i++)
        for (int64_t j = 0; j < 5; j++) {
            int64_t idx[2] = {i, j};
            assert_true(tj_get(x, idx) == (double)(5 * i + j) + (double)(5 * j + i));
        }
    /* the same for a large tensor, split across threads */
    tj_tensor *big = arange_2d(300, 300, TJ_F64);
    assert_non_null(tj_sub_(big, transposed(big), 1));
    for (int64_t i = 0; i < 300; i += 7)
        for (int64_t j = 0; j < 300; j += 11) {
            int64_t idx[2] = {i, j};
            assert_true(tj_get(big, idx) == 300.0 * (double)(i - j) + (double)(j - i));
        }
    /* x.mul_(x) and x.add_(x) alias exactly */
    tj_tensor *y = tj_arange(0, 5, 1, TJ_I64);
    assert_non_null(tj_mul_(y, y));
    assert_non_null(tj_add_(y, y, 1));
    tt_assert_values(y, ((double[]){0, 2, 8, 18, 32}), 5, 0);
    /* shifted slices of one buffer: z[1:] += z[:-1] uses the old z */
    tj_tensor *z = tj_arange(0, 6, 1, TJ_F32);
    assert_non_null(tj_add_(tj_slice(z, 0, 1, 6, 1), tj_slice(z, 0, 0, 5, 1), 1));
    tt_assert_values(z, ((double[]){0, 1, 3, 5, 7, 9}), 6, 0);
    tj_tensor *w = tj_arange(0, 6, 1, TJ_F32);
    assert_non_null(tj_addcmul_(tj_slice(w, 0, 0, 5, 1), tj_slice(w, 0, 1, 6, 1),
                                tj_slice(w, 0, 1, 6, 1), 1));
    tt_assert_values(w, ((double[]){1, 5, 11, 19, 29, 5}), 6, 0);
}

/* ---- refusals ---------------------------------------------------------------------- */

static void refusals(void **state) {
    (void)state;
    int64_t row[2] = {1, 5}, four_by_five[2] = {4, 5}, expanded_strides[2] = {0, 1};
    tj_tensor *base = tj_zeros(row, 2, TJ_F32);
    tj_tensor *expanded = view(base, 2, four_by_five, expanded_strides, 0);
    assert_null(tj_add_scalar_(expanded, 1, 1));
    assert_int_equal(tj_last_status(), TJ_ERR_ARG);
    tt_assert_error("aten::add_.Scalar: 'self' has elements that share memory");
    tj_clear_error();
    assert_null(tj_copy_(expanded, tj_ones(four_by_five, 2, TJ_F32)));
    tt_assert_error("aten::copy_: 'self' has elements that share memory");
    tj_clear_error();
    tt_assert_values(base, ((double[]){0, 0, 0, 0, 0}), 5, 0);

    tj_tensor *i = tj_arange(0, 3, 1, TJ_I64);
    assert_null(tj_add_(i, tj_full((int64_t[]){3}, 1, 0.5, TJ_F32), 1));
    assert_int_equal(tj_last_status(), TJ_ERR_DTYPE);
    assert_string_equal(tj_last_error(),
                        "aten::add_: result type f32 cannot be stored in the i64 tensor 'self'");
    tj_clear_error();
    assert_null(tj_exp_(i));
    tt_assert_error("aten::exp_: result type f32 cannot be stored in the i64 tensor 'self'");
    tj_clear_error();
    assert_null(tj_mul_scalar_(i, 2.0));
    tt_assert_error("aten::mul_.Scalar: result type f32");
    tj_clear_error();
    tt_assert_values(i, ((double[]){0, 1, 2}), 3, 0);

    /* broadcasting may not grow self */
    assert_null(tj_add_(base, tj_ones(four_by_five, 2, TJ_F32), 1));
    assert_int_equal(tj_last_status(), TJ_ERR_SHAPE);
    tt_assert_error("aten::add_: output with sizes [1, 5] does not match the broadcast sizes "
                    "[4, 5]");
    tj_clear_error();
    assert_null(tj_mul_(tj_scalar_tensor(1, TJ_F32), tj_ones(row, 2, TJ_F32)));
    tt_assert_error("aten::mul_: output with sizes [] does not match");
    tj_clear_error();
    assert_null(tj_add_(NULL, base, 1));
    tt_assert_error("aten::add_: argument 'self' is NULL");
}

/* ---- copy_ ------------------------------------------------------------------------ */

static void copy_broadcasts_and_converts(void **state) {
    (void)state;
    tj_tensor *dst = tj_zeros((int64_t[]){3, 4}, 2, TJ_F64);
    int64_t four = 4;
    tj_tensor *src = tj_from_array((int64_t[]){1, -2, 3, -4}, &four, 1, TJ_I64);
    assert_ptr_equal(tj_copy_(dst, src), dst);
    tt_assert_values(dst, ((double[]){1, -2, 3, -4, 1, -2, 3, -4, 1, -2, 3, -4}), 12, 0);
    assert_non_null(tj_copy_(dst, tj_scalar_tensor(2.5, TJ_F32)));
    tt_assert_values(dst, ((double[]){2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5}),
                     12, 0);
    /* to integers: truncation toward zero; to bool: nonzero */
    tj_tensor *f = tj_from_array((double[]){3.7, -3.7, 0.2, -0.0}, &four, 1, TJ_F64);
    tj_tensor *as_int = tj_zeros(&four, 1, TJ_I64), *as_bool = tj_zeros(&four, 1, TJ_BOOL);
    assert_non_null(tj_copy_(as_int, f));
    tt_assert_values(as_int, ((double[]){3, -3, 0, 0}), 4, 0);
    assert_non_null(tj_copy_(as_bool, f));
    tt_assert_values(as_bool, ((double[]){1, 1, 1, 0}), 4, 0);
    /* into a transposed view */
    tj_tensor *m = arange_2d(2, 3, TJ_F32);
    assert_non_null(tj_copy_(transposed(m), arange_2d(3, 2, TJ_I64)));
    tt_assert_values(m, ((double[]){0, 2, 4, 1, 3, 5}), 6, 0);
    /* a source that does not broadcast to self */
    assert_null(tj_copy_(dst, tj_zeros((int64_t[]){2, 4}, 2, TJ_F32)));
    assert_int_equal(tj_last_status(), TJ_ERR_SHAPE);
    tt_assert_error("aten::copy_: source of sizes [2, 4] cannot be broadcast to the "
                    "destination's sizes [3, 4]");
    tj_clear_error();
}

static void copy_between_overlapping_views(void **state) {
    (void)state;
    tj_tensor *x = tj_arange(0, 10, 1, TJ_F64);
    assert_non_null(tj_copy_(tj_slice(x, 0, 1, 10, 1), tj_slice(x, 0, 0, 9, 1)));
    tt_assert_values(x, ((double[]){0, 0, 1, 2, 3, 4, 5, 6, 7, 8}), 10, 0);
    tj_tensor *y = tj_arange(0, 10, 1, TJ_I64);
    assert_non_null(tj_copy_(tj_slice(y, 0, 0, 9, 1), tj_slice(y, 0, 1, 10, 1)));
    tt_assert_values(y, ((double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 9}), 10, 0);
    /* a square matrix transposed onto itself */
    tj_tensor *m = arange_2d(3, 3, TJ_F32);
    assert_non_null(tj_copy_(m, transposed(m)));
    tt_assert_values(m, ((double[]){0, 3, 6, 1, 4, 7, 2, 5, 8}), 9, 0);
    /* a large one, above the threading grain */
    tj_tensor *big = arange_2d(256, 256, TJ_F32);
    assert_non_null(tj_copy_(big, transposed(big)));
    for (int64_t i = 0; i < 256; i += 5)
        for (int64_t j = 0; j < 256; j += 3) {
            int64_t idx[2] = {i, j};
            assert_true(tj_get(big, idx) == (double)(256 * j + i));
        }
    /* onto itself: nothing changes */
    assert_ptr_equal(tj_copy_(m, m), m);
    tt_assert_values(m, ((double[]){0, 3, 6, 1, 4, 7, 2, 5, 8}), 9, 0);
    /* a strided destination interleaved with its source */
    tj_tensor *z = tj_arange(0, 8, 1, TJ_F32);
    assert_non_null(tj_copy_(tj_slice(z, 0, 0, 8, 2), tj_slice(z, 0, 1, 5, 1)));
    tt_assert_values(z, ((double[]){1, 1, 2, 3, 3, 5, 4, 7}), 8, 0);
}

int main(void) {
#define T(f) TT_SCOPED_TEST(f)
    const struct CMUnitTest tests[] = {
        T(every_inplace_op_matches_its_out_of_place_form),
        T(inplace_through_a_strided_slice_writes_only_its_elements),
        T(inplace_through_a_transposed_view_broadcasts_along_its_dims),
        T(inputs_overlapping_self_are_read_before_writing),
        T(refusals),
        T(copy_broadcasts_and_converts),
        T(copy_between_overlapping_views),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
