/* test_index.c — embedding, embedding_dense_backward, index_select, gather,
 * scatter_add and one_hot against plain reference loops (shapes in the
 * tests), non-contiguous operands, several dtypes, finite-difference checks
 * of the gradients they provide, and out-of-range errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nn_cases.h"

static const char *const covered[] = {TT_NN_INDEX_OPS};
static tj_generator *gen;

#define OWN(t) tt_nn_own(t)

static void ops_exist(void **state) {
    (void)state;
    tt_nn_assert_ops_exist(covered, (int)(sizeof covered / sizeof *covered));
}

static tj_tensor *randt(const int64_t *sizes, int nd, tj_dtype dt, double lo, double hi) {
    return OWN(tt_random(gen, sizes, nd, dt, lo, hi));
}

/* Row-major offset of a multi-index. */
static int64_t offset_of(const int64_t *idx, const int64_t *sizes, int nd) {
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off = off * sizes[d] + idx[d];
    return off;
}

static void expect_error(tj_tensor *t, tj_status st, const char *needle) {
    assert_null(t);
    assert_int_equal(tj_last_status(), st);
    tt_assert_error(needle);
    tj_clear_error();
}

/* ---- embedding ---------------------------------------------------------------------- */

static void embedding_matches_reference(void **state) {
    (void)state;
    int64_t ws[2] = {10, 4}, is[2] = {2, 3}, out_sizes[3] = {2, 3, 4};
    for (int variant = 0; variant < 3; variant++) { /* f32, f64 non-contiguous, i64 */
        tj_dtype dt = variant == 0 ? TJ_F32 : variant == 1 ? TJ_F64 : TJ_I64;
        tj_tensor *w = randt(ws, 2, dt, -5, 5);
        if (variant == 1) w = OWN(tt_noncontiguous(gen, w));
        tj_tensor *idx = randt(is, 2, TJ_I64, 0, 9);
        tt_ref rw = tt_ref_of(w), ri = tt_ref_of(idx), want = tt_ref_new(out_sizes, 3);
        for (int64_t i = 0; i < 6; i++)
            for (int64_t j = 0; j < 4; j++) want.v[i * 4 + j] = rw.v[(int64_t)ri.v[i] * 4 + j];
        tt_assert_close_ref(OWN(tj_embedding(w, idx, -1, false)), &want, 0, 0);
        tt_ref_free(&rw), tt_ref_free(&ri), tt_ref_free(&want);
    }
    int64_t two = 2;
    tj_tensor *w = randt(ws, 2, TJ_F32, -1, 1);
    expect_error(tj_embedding(w, OWN(tt_nn_ints((int64_t[]){3, 10}, &two, 1)), -1, false),
                 TJ_ERR_ARG, "aten::embedding: index 10 is out of range for the rows of 'weight' "
                 "of size 10 (index element 1)");
    expect_error(tj_embedding(w, OWN(tt_nn_ints((int64_t[]){-1, 0}, &two, 1)), -1, false),
                 TJ_ERR_ARG, "index -1 is out of range");
    expect_error(tj_embedding(w, OWN(tj_zeros(&two, 1, TJ_F32)), -1, false), TJ_ERR_DTYPE,
                 "aten::embedding: argument 'indices' must be an i64 tensor of indices, got f32");
    expect_error(tj_embedding(OWN(tj_zeros(&two, 1, TJ_F32)), OWN(tj_zeros(&two, 1, TJ_I64)), -1,
                              false),
                 TJ_ERR_SHAPE, "argument 'weight' must be 2-D [num_embeddings, embedding_dim]");
    tt_nn_free_all();
}

static void embedding_backward_matches_reference(void **state) {
    (void)state;
    int64_t V = 50, D = 8, is[2] = {40, 500}, gs[3] = {40, 500, 8};
    for (int variant = 0; variant < 4; variant++) {
        int64_t pad = variant & 1 ? 2 : -1;
        bool by_freq = variant & 2;
        tj_tensor *idx = randt(is, 2, TJ_I64, 0, (double)V - 1);
        tj_tensor *g = randt(gs, 3, TJ_F64, -1, 1);
        if (variant == 3) g = OWN(tt_noncontiguous(gen, g));
        tt_ref ri = tt_ref_of(idx), rg = tt_ref_of(g);
        int64_t out_sizes[2] = {V, D}, count[50] = {0};
        tt_ref want = tt_ref_new(out_sizes, 2);
        for (int64_t i = 0; i < ri.numel; i++) count[(int64_t)ri.v[i]]++;
        for (int64_t i = 0; i < ri.numel; i++) {
            int64_t v = (int64_t)ri.v[i];
            if (v == pad) continue;
            for (int64_t j = 0; j < D; j++)
                want.v[v * D + j] += rg.v[i * D + j] / (by_freq ? (double)count[v] : 1.0);
        }
        tt_assert_close_ref(OWN(tj_embedding_dense_backward(g, idx, V, pad, by_freq)), &want,
                            1e-12, 1e-12);
        tt_ref_free(&ri), tt_ref_free(&rg), tt_ref_free(&want);
    }
    tt_nn_free_all();
}

static tj_tensor *embedding_fwd(tj_tensor *const *in, const void *ctx) {
    return tj_embedding(in[0], (tj_tensor *)ctx, -1, false);
}

static void embedding_backward_matches_finite_differences(void **state) {
    (void)state;
    int64_t ws[2] = {5, 3}, is[2] = {2, 4}, gs[3] = {2, 4, 3};
    tj_tensor *in[1] = {OWN(tt_nn_randd(gen, ws, 2, -1, 1))};
    tj_tensor *idx = OWN(tt_nn_ints((int64_t[]){0, 4, 4, 1, 2, 0, 4, 3}, is, 2));
    tj_tensor *g = OWN(tt_nn_randd(gen, gs, 3, -1, 1));
    tt_nn_check_grad(embedding_fwd, idx, in, 0, g,
                     OWN(tj_embedding_dense_backward(g, idx, 5, -1, false)), 1e-7);
    tt_nn_free_all();
}

/* ---- index_select ------------------------------------------------------------------- */

static void index_select_matches_reference(void **state) {
    (void)state;
    int64_t xs[3] = {4, 5, 6}, three = 3;
    tj_tensor *idx = OWN(tt_nn_ints((int64_t[]){3, 0, 3}, &three, 1));
    for (int dim = -1; dim < 3; dim++)
        for (int dt = TJ_F32; dt <= TJ_BOOL; dt++) {
            tj_tensor *x = randt(xs, 3, (tj_dtype)dt, -9, 9);
            if (dt == TJ_F64) x = OWN(tt_noncontiguous(gen, x));
            int d = dim < 0 ? dim + 3 : dim;
            int64_t os[3] = {4, 5, 6};
            os[d] = 3;
            tt_ref rx = tt_ref_of(x), want = tt_ref_new(os, 3);
            int64_t p[3] = {0, 0, 0}, k = 0;
            const int64_t sel[3] = {3, 0, 3};
            do {
                int64_t q[3] = {p[0], p[1], p[2]};
                q[d] = sel[p[d]];
                want.v[k++] = rx.v[offset_of(q, xs, 3)];
            } while (tt_next_index(p, os, 3));
            tt_assert_close_ref(OWN(tj_index_select(x, dim, idx)), &want, 0, 0);
            tt_ref_free(&rx), tt_ref_free(&want);
        }
    /* a 0-dim index selects one slice and keeps the dim */
    tj_tensor *x = randt(xs, 3, TJ_F32, -1, 1), *one = OWN(tt_nn_ints((int64_t[]){2}, NULL, 0));
    int64_t os[3] = {4, 1, 6};
    tt_assert_sizes(OWN(tj_index_select(x, 1, one)), os, 3);
    expect_error(tj_index_select(x, 0, OWN(tt_nn_ints((int64_t[]){1, 4, 0}, &three, 1))),
                 TJ_ERR_ARG, "aten::index_select: index 4 is out of range for the selected dim "
                 "of 'self' of size 4 (index element 1)");
    int64_t s2[2] = {1, 3};
    expect_error(tj_index_select(x, 0, OWN(tt_nn_ints((int64_t[]){1, 2, 0}, s2, 2))),
                 TJ_ERR_SHAPE, "argument 'index' must be 0-D or 1-D, got sizes [1, 3]");
    tt_nn_free_all();
}

/* ---- gather and scatter_add --------------------------------------------------------- */

/* index [2, 4, 3] against self [3, 4, 5]: smaller in the other dims, and
 * along dim it may be any length */
static void gather_matches_reference(void **state) {
    (void)state;
    int64_t xs[3] = {3, 4, 5};
    for (int dim = 0; dim < 3; dim++)
        for (int dt = TJ_F32; dt <= TJ_I64; dt++) {
            int64_t is[3] = {2, 4, 3};
            is[dim] = 6;
            tj_tensor *x = randt(xs, 3, (tj_dtype)dt, -9, 9);
            if (dt != TJ_I64) x = OWN(tt_noncontiguous(gen, x));
            tj_tensor *idx = randt(is, 3, TJ_I64, 0, (double)xs[dim] - 1);
            tt_ref rx = tt_ref_of(x), ri = tt_ref_of(idx), want = tt_ref_new(is, 3);
            int64_t p[3] = {0, 0, 0}, k = 0;
            do {
                int64_t q[3] = {p[0], p[1], p[2]};
                q[dim] = (int64_t)ri.v[k];
                want.v[k++] = rx.v[offset_of(q, xs, 3)];
            } while (tt_next_index(p, is, 3));
            tt_assert_close_ref(OWN(tj_gather(x, dim, idx)), &want, 0, 0);
            tt_ref_free(&rx), tt_ref_free(&ri), tt_ref_free(&want);
        }
    tj_tensor *x = randt(xs, 3, TJ_F32, -1, 1);
    int64_t big[3] = {3, 5, 5}, flat[2] = {3, 4};
    expect_error(tj_gather(x, 0, OWN(tj_zeros(big, 3, TJ_I64))), TJ_ERR_SHAPE,
                 "aten::gather: argument 'index' of sizes [3, 5, 5] is larger than 'self' of "
                 "sizes [3, 4, 5] in dim 1");
    expect_error(tj_gather(x, 0, OWN(tj_zeros(flat, 2, TJ_I64))), TJ_ERR_SHAPE,
                 "argument 'index' (2 dims) must have as many dims as 'self' (3)");
    tj_tensor *bad = OWN(tj_zeros(xs, 3, TJ_I64));
    ((int64_t *)tj_data(bad))[7] = 5;
    expect_error(tj_gather(x, 2, bad), TJ_ERR_ARG,
                 "aten::gather: index 5 is out of range for the gathered dim of 'self' of size 5 "
                 "(index element 7)");
    tt_nn_free_all();
}

/* self [3, 4, 5], index [2, 4, 3] (dim's length any), src [3, 5, 4] */
static void scatter_add_matches_reference(void **state) {
    (void)state;
    int64_t xs[3] = {3, 4, 5};
    for (int dim = 0; dim < 3; dim++)
        for (int dt = TJ_F32; dt <= TJ_I64; dt++) {
            int64_t is[3] = {2, 4, 3}, ss[3] = {3, 5, 4};
            is[dim] = 6, ss[dim] = 7;
            tj_tensor *x = randt(xs, 3, (tj_dtype)dt, -9, 9);
            tj_tensor *src = randt(ss, 3, (tj_dtype)dt, -9, 9);
            if (dt == TJ_F64) src = OWN(tt_noncontiguous(gen, src));
            if (dt == TJ_I64) x = OWN(tt_noncontiguous(gen, x));
            tj_tensor *idx = randt(is, 3, TJ_I64, 0, (double)xs[dim] - 1);
            tt_ref rx = tt_ref_of(x), ri = tt_ref_of(idx), rs = tt_ref_of(src);
            int64_t p[3] = {0, 0, 0}, k = 0;
            do {
                int64_t q[3] = {p[0], p[1], p[2]};
                q[dim] = (int64_t)ri.v[k++];
                rx.v[offset_of(q, xs, 3)] += rs.v[offset_of(p, ss, 3)];
            } while (tt_next_index(p, is, 3));
            tt_assert_close_ref(OWN(tj_scatter_add(x, dim, idx, src)), &rx, 1e-6, 1e-5);
            tt_ref_free(&rx), tt_ref_free(&ri), tt_ref_free(&rs);
        }
    tt_nn_free_all();
}

/* Many collisions, threads on: exact in i64, and one result at any thread count. */
static void scatter_add_is_deterministic(void **state) {
    (void)state;
    int64_t xs[2] = {16, 300}, is[2] = {2000, 300};
    tj_tensor *x = OWN(tj_zeros(xs, 2, TJ_F32));
    tj_tensor *idx = randt(is, 2, TJ_I64, 0, 15), *src = randt(is, 2, TJ_F32, -1, 1);
    tj_set_num_threads(1);
    tj_tensor *one = OWN(tj_scatter_add(x, 0, idx, src));
    tj_set_num_threads(2);
    tj_tensor *two = OWN(tj_scatter_add(x, 0, idx, src));
    tj_set_num_threads(0);
    assert_memory_equal(tj_data(one), tj_data(two), sizeof(float) * 16 * 300);
    tj_tensor *ones = OWN(tj_ones(is, 2, TJ_I64));
    tj_tensor *counts = OWN(tj_scatter_add(OWN(tj_zeros(xs, 2, TJ_I64)), 0, idx, ones));
    const int64_t *c = tj_data(counts);
    int64_t total = 0;
    for (int64_t i = 0; i < 16 * 300; i++) total += c[i];
    assert_int_equal(total, 2000 * 300);
    tj_tensor *fx = OWN(tj_zeros(xs, 2, TJ_F64));
    expect_error(tj_scatter_add(fx, 0, idx, src), TJ_ERR_DTYPE,
                 "aten::scatter_add: argument 'src' (f32) must have the dtype of 'self' (f64)");
    int64_t small[2] = {2000, 200};
    expect_error(tj_scatter_add(x, 0, idx, OWN(tj_zeros(small, 2, TJ_F32))), TJ_ERR_SHAPE,
                 "argument 'index' of sizes [2000, 300] is larger than 'src' of sizes "
                 "[2000, 200] in dim 1");
    tt_nn_free_all();
}

typedef struct gather_ctx {
    int dim;
    tj_tensor *index;
} gather_ctx;

static tj_tensor *gather_fwd(tj_tensor *const *in, const void *v) {
    const gather_ctx *c = v;
    return tj_gather(in[0], c->dim, c->index);
}

/* gather's gradient is scatter_add of the output gradient into zeros */
static void gather_gradient_is_scatter_add(void **state) {
    (void)state;
    int64_t xs[2] = {3, 4}, is[2] = {5, 4};
    gather_ctx c = {0, OWN(tt_random(gen, is, 2, TJ_I64, 0, 2))};
    tj_tensor *in[1] = {OWN(tt_nn_randd(gen, xs, 2, -1, 1))};
    tj_tensor *g = OWN(tt_nn_randd(gen, is, 2, -1, 1));
    tj_tensor *grad = OWN(tj_scatter_add(OWN(tj_zeros(xs, 2, TJ_F64)), 0, c.index, g));
    tt_nn_check_grad(gather_fwd, &c, in, 0, g, grad, 1e-7);
    tt_nn_free_all();
}

/* ---- one_hot ------------------------------------------------------------------------ */

static void one_hot_matches_reference(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3}, two = 2;
    tj_tensor *x = OWN(tt_nn_ints((int64_t[]){0, 4, 2, 2, 1, 0}, s23, 2));
    for (int explicit_classes = 0; explicit_classes < 2; explicit_classes++) {
        int64_t C = explicit_classes ? 7 : 5, os[3] = {2, 3, C};
        tj_tensor *y = OWN(tj_one_hot(x, explicit_classes ? 7 : -1));
        assert_int_equal(tj_tensor_dtype(y), TJ_I64);
        tt_ref want = tt_ref_new(os, 3);
        const int64_t *xv = tj_data(x);
        for (int64_t i = 0; i < 6; i++) want.v[i * C + xv[i]] = 1;
        tt_assert_close_ref(y, &want, 0, 0);
        tt_ref_free(&want);
    }
    tj_tensor *strided = OWN(tj_slice(x, 1, 0, 3, 2)); /* [[0, 2], [2, 0]] */
    int64_t os[3] = {2, 2, 3};
    tt_assert_sizes(OWN(tj_one_hot(strided, -1)), os, 3);
    expect_error(tj_one_hot(x, 3), TJ_ERR_ARG,
                 "aten::one_hot: class value 4 is out of range for num_classes 3 (element 1)");
    expect_error(tj_one_hot(OWN(tt_nn_ints((int64_t[]){1, -1}, &two, 1)), 3), TJ_ERR_ARG,
                 "class value -1 is out of range");
    int64_t zero = 0;
    expect_error(tj_one_hot(OWN(tj_zeros(&zero, 1, TJ_I64)), -1), TJ_ERR_ARG,
                 "cannot infer num_classes from an empty tensor");
    tt_assert_sizes(OWN(tj_one_hot(OWN(tj_zeros(&zero, 1, TJ_I64)), 4)), ((int64_t[]){0, 4}), 2);
    expect_error(tj_one_hot(OWN(tj_zeros(&two, 1, TJ_F32)), -1), TJ_ERR_DTYPE,
                 "aten::one_hot: argument 'self' must be an i64 tensor of indices, got f32");
    tt_nn_free_all();
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(4242);
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
        cmocka_unit_test(embedding_matches_reference),
        cmocka_unit_test(embedding_backward_matches_reference),
        cmocka_unit_test(embedding_backward_matches_finite_differences),
        cmocka_unit_test(index_select_matches_reference),
        cmocka_unit_test(gather_matches_reference),
        cmocka_unit_test(scatter_add_matches_reference),
        cmocka_unit_test(scatter_add_is_deterministic),
        cmocka_unit_test(gather_gradient_is_scatter_add),
        cmocka_unit_test(one_hot_matches_reference),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
