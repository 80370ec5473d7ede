/* test_cuda_shape.c — the rows of core/ops_view.def on CUDA against the CPU:
 * views (metadata only: the same sizes, strides and offset as on the CPU,
 * sharing the input's device storage), reshape/flatten/contiguous (a view
 * when the layout allows, else a copy, exactly when the CPU copies), cat and
 * stack (every dim, promotion, views as inputs, empty pieces), the view
 * gradients and new_zeros; every dtype, 0-dim and size-0 tensors, inputs that
 * are views on the device, refusals with the CPU's messages, and large
 * shapes. */
#include <string.h>

#include "core/core.h"
#include "tests/support/cuda_cases.h"

static const tj_dtype all_dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};

#define I(v) {.i = (v)}
#define L(...) {.ints = {(const int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / 8}}
#define EMPTY_LIST {.ints = {NULL, 0}}

typedef struct op_case {
    const char *op;
    int nd;
    int64_t sizes[4];
    tj_attr attrs[6];
    int n_attrs;
} op_case;

/* One-input rows of ops_view.def (views and the reshape family) with their
 * arguments, the refusals included. */
static const op_case single_cases[] = {
    {"aten::view", 3, {2, 3, 4}, {L(4, 6)}, 1},
    {"aten::view", 3, {2, 3, 4}, {L(-1, 2)}, 1},
    {"aten::view", 3, {2, 3, 4}, {L(5, 5)}, 1},
    {"aten::squeeze", 3, {1, 3, 1}, {I(0)}, 0},
    {"aten::squeeze.dim", 3, {1, 3, 1}, {I(-1)}, 1},
    {"aten::squeeze.dim", 3, {1, 3, 1}, {I(1)}, 1},
    {"aten::unsqueeze", 3, {2, 3, 4}, {I(3)}, 1},
    {"aten::unsqueeze", 0, {0}, {I(0)}, 1},
    {"aten::transpose.int", 3, {2, 3, 4}, {I(0), I(2)}, 2},
    {"aten::t", 2, {3, 4}, {I(0)}, 0},
    {"aten::t", 3, {2, 3, 4}, {I(0)}, 0},
    {"aten::permute", 3, {2, 3, 4}, {L(2, 0, 1)}, 1},
    {"aten::expand", 3, {2, 1, 4}, {L(2, 5, 4)}, 1},
    {"aten::expand", 2, {3, 4}, {L(2, -1, 4)}, 1},
    {"aten::select.int", 3, {2, 3, 4}, {I(1), I(-1)}, 2},
    {"aten::select.int", 3, {2, 3, 4}, {I(1), I(3)}, 2},
    {"aten::narrow", 3, {2, 3, 4}, {I(2), I(1), I(2)}, 3},
    {"aten::slice.Tensor", 3, {2, 3, 7}, {I(2), I(1), I(INT64_MAX), I(3)}, 4},
    {"aten::slice.Tensor", 3, {2, 3, 7}, {I(-1), I(-5), I(-1), I(2)}, 4},
    {"aten::chunk", 3, {2, 3, 7}, {I(3), I(2)}, 2},
    {"aten::split.Tensor", 3, {2, 3, 7}, {I(2), I(-1)}, 2},
    {"aten::split_with_sizes", 3, {2, 3, 7}, {L(2, 4, 1), I(2)}, 2},
    {"aten::split_with_sizes", 3, {2, 3, 7}, {L(2, 4), I(2)}, 2},
    {"aten::unbind.int", 3, {2, 3, 4}, {I(1)}, 1},
    {"aten::diagonal", 3, {2, 3, 4}, {I(0), I(0), I(1)}, 3},
    {"aten::diagonal", 3, {2, 3, 4}, {I(-1), I(2), I(1)}, 3},
    {"aten::diagonal", 3, {2, 3, 4}, {I(0), I(1), I(-2)}, 3},
    {"aten::reshape", 3, {2, 3, 4}, {L(6, -1)}, 1},
    {"aten::reshape", 3, {2, 3, 4}, {L(24)}, 1},
    {"aten::reshape", 0, {0}, {L(1, 1)}, 1},
    {"aten::reshape", 3, {2, 0, 4}, {L(0, 5)}, 1},
    {"aten::flatten.using_ints", 3, {2, 3, 4}, {I(0), I(-1)}, 2},
    {"aten::flatten.using_ints", 3, {2, 3, 4}, {I(1), I(2)}, 2},
    {"aten::flatten.using_ints", 0, {0}, {I(0), I(-1)}, 2},
    {"aten::contiguous", 3, {2, 3, 4}, {I(0)}, 0},
    {"aten::contiguous", 3, {2, 0, 4}, {I(0)}, 0},
    {"aten::as_strided_copy", 3, {2, 3, 4}, {L(3, 4), L(8, 1), I(2)}, 3},
    {"aten::as_strided_copy", 3, {2, 3, 4}, {L(4, 3), L(1, 1), I(0)}, 3}, /* overlapping reads */
    {"aten::as_strided_copy", 3, {2, 3, 4}, {L(4, 3), L(8, 1), I(2)}, 3}, /* past the end */
    {"aten::new_zeros", 3, {2, 3, 4}, {L(5, 2)}, 1},
    {"aten::new_zeros", 2, {2, 3}, {EMPTY_LIST}, 1},
    {"aten::new_zeros", 2, {2, 3}, {L(0, 3)}, 1},
};

typedef enum { AS_IS, TRANSPOSED, STEPPED } layout;
static const char *const layout_names[] = {"contiguous", "transposed", "stepped"};

/* The base for a device-side view of logical sizes s with layout lay. */
static tj_tensor *base_for(tj_generator *g, int nd, const int64_t *s, layout lay, tj_dtype d) {
    int64_t sz[TJ_MAX_DIMS];
    memcpy(sz, s, sizeof(int64_t) * (size_t)nd);
    if (lay == TRANSPOSED && nd >= 2) {
        sz[0] = s[nd - 1];
        sz[nd - 1] = s[0];
    } else if (lay == STEPPED && nd >= 1) {
        sz[nd - 1] = 2 * s[nd - 1] + 1;
    }
    return tt_random(g, sz, nd, d, -4, 4);
}

static tj_tensor *make_layout(tj_tensor *b, int i, void *ctx) {
    (void)i;
    layout lay = *(const layout *)ctx;
    int nd = tj_ndim(b);
    if (lay == TRANSPOSED && nd >= 2) return tj_transpose(b, 0, nd - 1);
    if (lay == STEPPED && nd >= 1) return tj_slice(b, nd - 1, 1, INT64_MAX, 2);
    return b;
}

/* Outputs of view-like ops: the CUDA output aliases its input exactly when
 * the CPU's does, with the same strides and offset. */
static void check_aliasing(const op_case *c, tj_tensor *cpu_in, tj_tensor *dev_in) {
    const tj_op_info *op = tj_op_find(c->op);
    tj_tensor *co[16], *dout[16];
    int nc = tj_invoke(tj_op_id(op), &cpu_in, 1, c->attrs, c->n_attrs, co, 16);
    int nd = tj_invoke(tj_op_id(op), &dev_in, 1, c->attrs, c->n_attrs, dout, 16);
    tj_clear_error();
    assert_int_equal(nc, nd);
    for (int k = 0; k < nc; k++) {
        assert_int_equal(tj_shares_storage(co[k], cpu_in), tj_shares_storage(dout[k], dev_in));
        assert_int_equal(tj_storage_offset(co[k]), tj_storage_offset(dout[k]));
        assert_int_equal(tj_ndim(co[k]), tj_ndim(dout[k]));
        for (int d = 0; d < tj_ndim(co[k]); d++) {
            if (tj_sizes(co[k])[d] > 1)
                assert_int_equal(tj_strides(co[k])[d], tj_strides(dout[k])[d]);
        }
    }
}

/* Every one-input row, every dtype, on contiguous and on device-side
 * transposed and stepped inputs: values, aliasing, strides, refusals. */
static void test_single_input_rows(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(21);
    for (size_t k = 0; k < sizeof single_cases / sizeof single_cases[0]; k++) {
        const op_case *c = &single_cases[k];
        for (int di = 0; di < 4; di++)
            for (layout lay = AS_IS; lay <= STEPPED; lay++) {
                tt_context("%s case %zu, %s, %s", c->op, k, tj_dtype_name(all_dtypes[di]),
                           layout_names[lay]);
                tj_tensor *base = base_for(g, c->nd, c->sizes, lay, all_dtypes[di]);
                if (lay == AS_IS)
                    tt_cuda_check_op(c->op, &base, 1, c->attrs, c->n_attrs, 0, 0);
                tt_cuda_check_views(c->op, &base, 1, make_layout, &lay, c->attrs, c->n_attrs, 0,
                                    0);
                tj_tensor *dev = tj_to_device(base, TT_CUDA0);
                check_aliasing(c, make_layout(base, 0, &lay), make_layout(dev, 0, &lay));
            }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- cat and stack ------------------------------------------------------------------------ */

typedef struct join_case {
    const char *op;
    int n, nd;
    int64_t sizes[5][3];
    int64_t dim;
} join_case;

static const join_case join_cases[] = {
    {"aten::cat", 3, 2, {{2, 3}, {4, 3}, {1, 3}}, 0},
    {"aten::cat", 2, 3, {{2, 3, 4}, {2, 5, 4}}, 1},
    {"aten::cat", 4, 3, {{2, 3, 1}, {2, 3, 4}, {2, 3, 0}, {2, 3, 2}}, -1},
    {"aten::cat", 1, 2, {{3, 4}}, 1},
    {"aten::cat", 3, 2, {{2, 3}, {0}, {3, 3}}, 0}, /* a legacy empty [0] among them */
    {"aten::cat", 2, 1, {{0}, {0}}, 0},
    {"aten::cat", 2, 2, {{2, 3}, {2, 4}}, 0},   /* sizes differ off the dim */
    {"aten::cat", 2, 0, {{0}, {0}}, 0},         /* 0-dim pieces */
    {"aten::cat", 2, 2, {{2, 3}, {2, 3}}, 2},   /* dim out of range */
    {"aten::stack", 3, 2, {{2, 3}, {2, 3}, {2, 3}}, 0},
    {"aten::stack", 2, 2, {{2, 3}, {2, 3}}, 2},
    {"aten::stack", 2, 2, {{2, 3}, {2, 3}}, -2},
    {"aten::stack", 2, 0, {{0}, {0}}, 0},
    {"aten::stack", 2, 2, {{0, 3}, {0, 3}}, 1},
    {"aten::stack", 2, 2, {{2, 3}, {3, 2}}, 0}, /* unequal sizes */
};

typedef struct join_views {
    layout lay[5];
} join_views;

static tj_tensor *join_view(tj_tensor *b, int i, void *ctx) {
    const join_views *v = ctx;
    return make_layout(b, i, (void *)&v->lay[i]);
}

/* cat and stack along every dim, with the same and with mixed dtypes (the
 * result promotes; the kernels convert while they copy), on contiguous and
 * device-side views, and their refusals. */
static void test_cat_stack(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(22);
    for (size_t k = 0; k < sizeof join_cases / sizeof join_cases[0]; k++) {
        const join_case *c = &join_cases[k];
        for (int di = 0; di < 4; di++)
            for (int mixed = 0; mixed < 2; mixed++)
                for (int views = 0; views < 2; views++) {
                    tt_context("%s case %zu, %s%s%s", c->op, k, tj_dtype_name(all_dtypes[di]),
                               mixed ? " with mixed dtypes" : "", views ? " on views" : "");
                    join_views v = {{AS_IS}};
                    tj_tensor *in[5];
                    for (int i = 0; i < c->n; i++) {
                        tj_dtype d = mixed ? all_dtypes[(di + i) % 4] : all_dtypes[di];
                        /* all-zero sizes in a case of rank > 1: a legacy 1-D empty */
                        bool legacy = c->nd > 1 && !c->sizes[i][0] && !c->sizes[i][1];
                        int nd = legacy ? 1 : c->nd;
                        v.lay[i] = views ? (layout)(1 + (i % 2)) : AS_IS;
                        in[i] = base_for(g, nd, c->sizes[i], v.lay[i], d);
                    }
                    tj_attr dim = {.i = c->dim};
                    tt_cuda_check_views(c->op, in, c->n, join_view, &v, &dim, 1, 0, 0);
                    if (!views) tt_cuda_check_op(c->op, in, c->n, &dim, 1, 0, 0);
                }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- gradients of views ---------------------------------------------------------------------- */

typedef struct grad_case {
    const char *op;
    int nd;
    int64_t grad[3];
    tj_attr attrs[5];
    int n_attrs;
} grad_case;

static const grad_case grad_cases[] = {
    {"aten::select_backward", 2, {3, 4}, {L(3, 5, 4), I(1), I(2)}, 3},
    {"aten::select_backward", 2, {3, 5}, {L(3, 5, 4), I(-1), I(-1)}, 3},
    {"aten::select_backward", 0, {0}, {L(6), I(0), I(4)}, 3},
    {"aten::select_backward", 2, {3, 4}, {L(3, 5, 4), I(1), I(5)}, 3},    /* index out of range */
    {"aten::select_backward", 2, {3, 5}, {L(3, 5, 4), I(1), I(2)}, 3},    /* grad of other sizes */
    {"aten::slice_backward", 3, {3, 2, 4}, {L(3, 5, 4), I(1), I(1), I(5), I(2)}, 5},
    {"aten::slice_backward", 3, {3, 5, 2}, {L(3, 5, 4), I(-1), I(-3), I(-1), I(1)}, 5},
    {"aten::slice_backward", 3, {3, 5, 0}, {L(3, 5, 4), I(2), I(3), I(3), I(1)}, 5},
    {"aten::slice_backward", 3, {3, 5, 4}, {L(3, 5, 4), I(0), I(0), I(INT64_MAX), I(1)}, 5},
    {"aten::slice_backward", 3, {1, 5, 4}, {L(3, 5, 4), I(0), I(2), I(100), I(3)}, 5},
    {"aten::slice_backward", 3, {3, 2, 4}, {L(3, 5, 4), I(1), I(0), I(5), I(0)}, 5}, /* step 0 */
};

/* select_backward and slice_backward for every dtype, with plain and
 * device-side transposed gradients, and their refusals. */
static void test_view_gradients(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(23);
    for (size_t k = 0; k < sizeof grad_cases / sizeof grad_cases[0]; k++) {
        const grad_case *c = &grad_cases[k];
        for (int di = 0; di < 4; di++)
            for (layout lay = AS_IS; lay <= STEPPED; lay++) {
                tt_context("%s case %zu, %s, %s", c->op, k, tj_dtype_name(all_dtypes[di]),
                           layout_names[lay]);
                tj_tensor *grad = base_for(g, c->nd, c->grad, lay, all_dtypes[di]);
                tt_cuda_check_views(c->op, &grad, 1, make_layout, &lay, c->attrs, c->n_attrs, 0,
                                    0);
            }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- scatters ------------------------------------------------------------------------------- */

typedef struct scatter_case {
    const char *op;
    int src_nd;
    int64_t src[3]; /* self is [3, 5, 4] */
    tj_attr attrs[4];
    int n_attrs;
} scatter_case;

static const scatter_case scatter_cases[] = {
    {"aten::select_scatter", 2, {3, 4}, {I(1), I(2)}, 2},
    {"aten::select_scatter", 2, {3, 5}, {I(-1), I(-1)}, 2},
    {"aten::select_scatter", 2, {3, 4}, {I(1), I(5)}, 2}, /* index out of range */
    {"aten::slice_scatter", 3, {3, 2, 4}, {I(1), I(1), I(5), I(2)}, 4},
    {"aten::slice_scatter", 3, {3, 5, 0}, {I(2), I(3), I(3), I(1)}, 4},
    {"aten::diagonal_scatter", 2, {4, 3}, {I(0), I(0), I(1)}, 3},
    {"aten::diagonal_scatter", 2, {3, 4}, {I(1), I(2), I(1)}, 3},
    {"aten::diagonal_scatter", 2, {3, 2}, {I(0), I(0), I(1)}, 3}, /* src of other sizes */
    {"aten::as_strided_scatter", 2, {3, 4}, {L(3, 4), L(20, 1), I(1)}, 3},
    {"aten::as_strided_scatter", 2, {3, 4}, {L(3, 4), L(1, 1), I(0)}, 3}, /* overlapping writes */
};

/* select_scatter, slice_scatter and diagonal_scatter for every dtype of
 * self, src in the same dtype and in another, both as device-side views
 * too, and their refusals. */
static void test_scatters(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(25);
    const int64_t self[3] = {3, 5, 4};
    for (size_t k = 0; k < sizeof scatter_cases / sizeof scatter_cases[0]; k++) {
        const scatter_case *c = &scatter_cases[k];
        for (int di = 0; di < 4; di++)
            for (int mixed = 0; mixed < 2; mixed++)
                for (layout lay = AS_IS; lay <= STEPPED; lay++) {
                    tt_context("%s case %zu, %s%s, %s", c->op, k, tj_dtype_name(all_dtypes[di]),
                               mixed ? " with src in another dtype" : "", layout_names[lay]);
                    tj_tensor *in[2] = {base_for(g, 3, self, lay, all_dtypes[di]),
                                        base_for(g, c->src_nd, c->src, lay, all_dtypes[(di + mixed) % 4])};
                    tt_cuda_check_views(c->op, in, 2, make_layout, &lay, c->attrs, c->n_attrs, 0, 0);
                }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- large shapes ---------------------------------------------------------------------------- */

/* Copies that take many blocks: contiguous of a transposed [500, 300] f64,
 * reshape of a stepped tensor, cat of wide pieces along dim 1, stack of many,
 * slice_backward into a big gradient. */
static void test_large_shapes(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(24);
    layout t = TRANSPOSED, s = STEPPED;
    tt_context("contiguous of a transposed [500, 300]");
    tj_tensor *a = base_for(g, 2, (int64_t[]){500, 300}, TRANSPOSED, TJ_F64);
    tt_cuda_check_views("aten::contiguous", &a, 1, make_layout, &t, NULL, 0, 0, 0);
    tt_context("reshape of a stepped [300, 400]");
    tj_tensor *b = base_for(g, 2, (int64_t[]){300, 400}, STEPPED, TJ_F32);
    tj_attr shape = L(400, 300);
    tt_cuda_check_views("aten::reshape", &b, 1, make_layout, &s, &shape, 1, 0, 0);
    tt_context("cat of [100, 1000], [100, 7] and [100, 1001] along dim 1");
    tj_tensor *pieces[3] = {tt_random(g, (int64_t[]){100, 1000}, 2, TJ_I64, -9, 9),
                            tt_random(g, (int64_t[]){100, 7}, 2, TJ_I64, -9, 9),
                            tt_random(g, (int64_t[]){100, 1001}, 2, TJ_F32, -9, 9)};
    tj_attr dim1 = {.i = 1};
    tt_cuda_check_op("aten::cat", pieces, 3, &dim1, 1, 0, 0);
    tt_context("stack of 12 x [10000]");
    tj_tensor *many[12];
    for (int i = 0; i < 12; i++) many[i] = tt_random(g, (int64_t[]){10000}, 1, TJ_F32, -1, 1);
    tt_cuda_check_op("aten::stack", many, 12, &dim1, 1, 0, 0);
    tt_context("slice_backward into [400, 600]");
    tj_tensor *grad = tt_random(g, (int64_t[]){400, 200}, 2, TJ_F64, -1, 1);
    tj_attr sb[5] = {L(400, 600), I(1), I(1), I(600), I(3)};
    tt_cuda_check_op("aten::slice_backward", &grad, 1, sb, 5, 0, 0);
    tt_context(NULL);
    tj_generator_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(test_single_input_rows),
        TT_SCOPED_TEST(test_cat_stack),
        TT_SCOPED_TEST(test_view_gradients),
        TT_SCOPED_TEST(test_scatters),
        TT_SCOPED_TEST(test_large_shapes),
    };
    return TT_CUDA_RUN(tests);
}
