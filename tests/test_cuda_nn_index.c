/* test_cuda_nn_index.c — the indexing and dropout ops on CUDA against the CPU
 * kernels: embedding (padding_idx), embedding_dense_backward (padding_idx,
 * scale_grad_by_freq), index_select, gather, scatter_add and one_hot
 * (num_classes given and inferred) over every dtype they take and the ones
 * they refuse, negative dims, repeated, empty and 0-dim indices,
 * non-contiguous inputs and shapes that take grid-stride loops; indices out of
 * range fail on both devices with the same message. native_dropout and
 * dropout give the CPU's values and mask bit for bit from the same seed and
 * offset, advance the generator alike, and share the default generator's
 * stream with the CPU; native_dropout_backward matches too. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/cuda_cases.h"

static tj_generator *gen;

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
static const tj_dtype all_dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};

static tj_tensor *rnd(const int64_t *s, int nd, tj_dtype dt, double lo, double hi) {
    return tt_random(gen, s, nd, dt, lo, hi);
}
static tj_tensor *strided(tj_tensor *t) { return tt_noncontiguous(gen, t); }
/* indices in [0, n) */
static tj_tensor *idx(const int64_t *s, int nd, int64_t n) {
    return rnd(s, nd, TJ_I64, 0, (double)(n - 1));
}

static void check(const char *op, tj_tensor *const *in, int n, const tj_attr *attrs, int na,
                  tj_dtype dt) {
    tt_cuda_check_op(op, in, n, attrs, na, tt_cuda_rtol(dt), tt_cuda_atol(dt));
}

/* t with element k (row-major, t contiguous) set to v */
static tj_tensor *poke(tj_tensor *t, int64_t k, int64_t v) {
    ((int64_t *)tj_data(t))[k] = v;
    return t;
}

/* ---- embedding ------------------------------------------------------------------------------ */

static void embedding_forms(void **state) {
    (void)state;
    int64_t ws[2] = {7, 5}, wt[2] = {5, 7};
    const struct {
        int nd;
        int64_t s[2];
    } ishapes[] = {{1, {6}}, {2, {2, 3}}, {0, {0}}, {1, {0}}};
    for (int d = 0; d < N_OF(all_dtypes); d++) {
        tj_dtype dt = all_dtypes[d];
        tt_context("embedding %s", tj_dtype_name(dt));
        tj_tensor *w = rnd(ws, 2, dt, -3, 3), *wT = tj_transpose(rnd(wt, 2, dt, -3, 3), 0, 1);
        for (int k = 0; k < N_OF(ishapes); k++) {
            tj_tensor *i = idx(ishapes[k].s, ishapes[k].nd, 7);
            tj_attr a[] = {{.i = k % 2 ? 2 : -1}, {.b = k == 1}};
            tj_tensor *in[] = {w, i}, *sin[] = {wT, ishapes[k].nd ? strided(i) : i};
            check("aten::embedding", in, 2, a, 2, dt);
            check("aten::embedding", sin, 2, a, 2, dt);
        }
    }
    int64_t empty[2] = {4, 0}, n = 3;
    tj_tensor *in[] = {rnd(empty, 2, TJ_F32, 0, 1), idx(&n, 1, 4)};
    tj_attr a[] = {{.i = -1}, {.b = false}};
    check("aten::embedding", in, 2, a, 2, TJ_F32);
    /* out of range on both, named alike; float indices refused on both */
    tj_tensor *w = rnd(ws, 2, TJ_F32, -1, 1);
    tj_tensor *bad1[] = {w, poke(idx(&n, 1, 7), 1, 7)}, *bad2[] = {w, poke(idx(&n, 1, 7), 2, -1)};
    tt_cuda_check_refused("aten::embedding", bad1, 2, a, 2);
    tt_cuda_check_refused("aten::embedding", bad2, 2, a, 2);
    tj_tensor *fin[] = {w, rnd(&n, 1, TJ_F32, 0, 3)};
    check("aten::embedding", fin, 2, a, 2, TJ_F32);
    tt_context(NULL);
}

/* Atomic adds take another order than the CPU's index order: f32 sums of many
 * rows differ in the last bits, so their tolerance grows with the repeats. */
static void embedding_backward_forms(void **state) {
    (void)state;
    int64_t is[2] = {4, 6}, gs[3] = {4, 6, 5}, V = 9;
    for (int d = 0; d < 2; d++) {
        tj_dtype dt = d ? TJ_F64 : TJ_F32;
        tt_context("embedding_dense_backward %s", tj_dtype_name(dt));
        tj_tensor *i = idx(is, 2, V), *g = rnd(gs, 3, dt, -1, 1);
        for (int pad = -1; pad <= 3; pad += 4)
            for (int freq = 0; freq < 2; freq++) {
                tj_attr a[] = {{.i = V}, {.i = pad}, {.b = freq}};
                tj_tensor *in[] = {g, i}, *sin[] = {strided(g), strided(i)};
                tt_cuda_check_op("aten::embedding_dense_backward", in, 2, a, 3, 1e-5, 1e-5);
                tt_cuda_check_op("aten::embedding_dense_backward", sin, 2, a, 3, 1e-5, 1e-5);
            }
        int64_t none = 0, g0[2] = {0, 5};
        tj_attr a[] = {{.i = V}, {.i = -1}, {.b = true}};
        tj_tensor *ein[] = {rnd(g0, 2, dt, -1, 1), idx(&none, 1, V)};
        check("aten::embedding_dense_backward", ein, 2, a, 3, dt);
        tj_tensor *sc[] = {rnd((int64_t[]){5}, 1, dt, -1, 1), tj_scalar_tensor(4, TJ_I64)};
        check("aten::embedding_dense_backward", sc, 2, a, 3, dt);
        tj_tensor *bad[] = {g, poke(idx(is, 2, V), 5, V)};
        tt_cuda_check_refused("aten::embedding_dense_backward", bad, 2, a, 3);
    }
    tj_attr a[] = {{.i = V}, {.i = -1}, {.b = false}};
    tj_tensor *iin[] = {rnd(gs, 3, TJ_I64, -1, 1), idx(is, 2, V)};
    check("aten::embedding_dense_backward", iin, 2, a, 3, TJ_F32);
    tt_context(NULL);
}

/* ---- index_select, gather, scatter_add ------------------------------------------------------ */

static void index_select_forms(void **state) {
    (void)state;
    int64_t xs[3] = {4, 5, 6}, k = 7, none = 0;
    for (int d = 0; d < N_OF(all_dtypes); d++) {
        tj_dtype dt = all_dtypes[d];
        tj_tensor *x = rnd(xs, 3, dt, -5, 5);
        int64_t perm[3] = {1, 2, 0};
        tj_tensor *xp = tj_permute(rnd((int64_t[]){6, 4, 5}, 3, dt, -5, 5), perm, 3);
        for (int dim = -1; dim < 3; dim++) {
            tt_context("index_select %s dim %d", tj_dtype_name(dt), dim);
            int64_t size = xs[dim < 0 ? 2 : dim];
            tj_tensor *i = idx(&k, 1, size), *i0 = tj_scalar_tensor((double)(size - 1), TJ_I64);
            tj_attr a[] = {{.i = dim}};
            tj_tensor *c1[] = {x, i}, *c2[] = {xp, strided(i)}, *c3[] = {x, i0};
            tj_tensor *c4[] = {x, idx(&none, 1, size)};
            check("aten::index_select", c1, 2, a, 1, dt);
            check("aten::index_select", c2, 2, a, 1, dt);
            check("aten::index_select", c3, 2, a, 1, dt);
            check("aten::index_select", c4, 2, a, 1, dt);
        }
    }
    tj_tensor *x = rnd(xs, 3, TJ_F32, -1, 1);
    tj_attr a[] = {{.i = 1}};
    tj_tensor *bad[] = {x, poke(idx(&k, 1, 5), 6, 5)}, *neg[] = {x, poke(idx(&k, 1, 5), 0, -2)};
    tt_cuda_check_refused("aten::index_select", bad, 2, a, 1);
    tt_cuda_check_refused("aten::index_select", neg, 2, a, 1);
    tj_tensor *fl[] = {x, rnd(&k, 1, TJ_F64, 0, 3)};
    check("aten::index_select", fl, 2, a, 1, TJ_F32);
    tt_context(NULL);
}

static void gather_forms(void **state) {
    (void)state;
    int64_t xs[3] = {4, 5, 6}, is[3] = {3, 7, 4};
    for (int d = 0; d < N_OF(all_dtypes); d++) {
        tj_dtype dt = all_dtypes[d];
        tj_tensor *x = rnd(xs, 3, dt, -5, 5);
        tj_tensor *xt = tj_transpose(rnd((int64_t[]){6, 5, 4}, 3, dt, -5, 5), 0, 2);
        for (int dim = -3; dim < 3; dim++) {
            tt_context("gather %s dim %d", tj_dtype_name(dt), dim);
            int w = dim < 0 ? dim + 3 : dim;
            int64_t s[3] = {is[0], w == 1 ? 7 : 2, is[2]}; /* beyond self only along dim */
            tj_tensor *i = idx(s, 3, xs[w]);
            tj_attr a[] = {{.i = dim}};
            tj_tensor *c1[] = {x, i}, *c2[] = {xt, strided(i)};
            check("aten::gather", c1, 2, a, 1, dt);
            check("aten::gather", c2, 2, a, 1, dt);
        }
        tj_attr a0[] = {{.i = 0}};
        tj_tensor *z[] = {tj_scalar_tensor(3, dt), tj_scalar_tensor(0, TJ_I64)};
        check("aten::gather", z, 2, a0, 1, dt);
    }
    tt_context(NULL);
    tj_tensor *x = rnd(xs, 3, TJ_F64, -1, 1);
    tj_attr a[] = {{.i = 2}};
    tj_tensor *bad[] = {x, poke(idx(is, 3, 6), 17, 6)};
    tt_cuda_check_refused("aten::gather", bad, 2, a, 1);
    int64_t big[3] = {5, 5, 6};
    tj_tensor *shape[] = {x, idx(big, 3, 4)}; /* index larger than self outside dim */
    check("aten::gather", shape, 2, a, 1, TJ_F64);
}

/* Repeated indices add atomically in another order than the CPU's: f32 sums
 * get a small absolute tolerance. */
static void scatter_add_forms(void **state) {
    (void)state;
    int64_t xs[2] = {4, 5}, is[2] = {6, 3}, ss[2] = {7, 4};
    const tj_dtype dts[] = {TJ_F32, TJ_F64, TJ_I64};
    for (int d = 0; d < N_OF(dts); d++) {
        tj_dtype dt = dts[d];
        tj_tensor *x = rnd(xs, 2, dt, -9, 9), *src = rnd(ss, 2, dt, -9, 9);
        for (int dim = -2; dim < 2; dim++) {
            tt_context("scatter_add %s dim %d", tj_dtype_name(dt), dim);
            int w = dim < 0 ? dim + 2 : dim;
            int64_t s[2] = {w == 0 ? 6 : 4, 3};
            tj_tensor *i = idx(s, 2, xs[w]);
            tj_attr a[] = {{.i = dim}};
            tj_tensor *c1[] = {x, i, src}, *c2[] = {strided(x), strided(i), strided(src)};
            tt_cuda_check_op("aten::scatter_add", c1, 3, a, 1, 1e-5, 1e-5);
            tt_cuda_check_op("aten::scatter_add", c2, 3, a, 1, 1e-5, 1e-5);
        }
        tj_attr a0[] = {{.i = 0}};
        tj_tensor *z[] = {tj_scalar_tensor(2, dt), tj_scalar_tensor(0, TJ_I64),
                          tj_scalar_tensor(5, dt)};
        check("aten::scatter_add", z, 3, a0, 1, dt);
        int64_t e[2] = {0, 3};
        tj_tensor *em[] = {x, idx(e, 2, 4), src};
        check("aten::scatter_add", em, 3, a0, 1, dt);
    }
    tt_context(NULL);
    tj_attr a[] = {{.i = 0}};
    tj_tensor *x = rnd(xs, 2, TJ_F32, -1, 1), *src = rnd(ss, 2, TJ_F32, -1, 1);
    tj_tensor *bad[] = {x, poke(idx(is, 2, 4), 4, 4), src};
    tt_cuda_check_refused("aten::scatter_add", bad, 3, a, 1);
    tj_tensor *b = rnd(xs, 2, TJ_BOOL, 0, 1);
    tj_tensor *bin[] = {b, idx(is, 2, 4), rnd(ss, 2, TJ_BOOL, 0, 1)};
    tj_tensor *mix[] = {x, idx(is, 2, 4), rnd(ss, 2, TJ_F64, -1, 1)};
    check("aten::scatter_add", bin, 3, a, 1, TJ_BOOL);
    check("aten::scatter_add", mix, 3, a, 1, TJ_F32);
}

/* ---- one_hot --------------------------------------------------------------------------------- */

static void one_hot_forms(void **state) {
    (void)state;
    int64_t s[2] = {3, 4}, n0 = 0;
    tj_tensor *x = idx(s, 2, 5);
    const int64_t classes[] = {5, 8, -1};
    for (int k = 0; k < N_OF(classes); k++) {
        tt_context("one_hot num_classes %lld", (long long)classes[k]);
        tj_attr a[] = {{.i = classes[k]}};
        tj_tensor *c1[] = {x}, *c2[] = {strided(x)}, *c3[] = {tj_scalar_tensor(3, TJ_I64)};
        check("aten::one_hot", c1, 1, a, 1, TJ_I64);
        check("aten::one_hot", c2, 1, a, 1, TJ_I64);
        check("aten::one_hot", c3, 1, a, 1, TJ_I64);
    }
    tt_context(NULL);
    tj_attr three[] = {{.i = 3}}, infer[] = {{.i = -1}}, zero[] = {{.i = 0}};
    tj_tensor *empty[] = {idx(&n0, 1, 3)};
    check("aten::one_hot", empty, 1, three, 1, TJ_I64);
    check("aten::one_hot", empty, 1, infer, 1, TJ_I64); /* refused on both */
    tj_tensor *over[] = {poke(idx(s, 2, 3), 7, 3)}, *neg[] = {poke(idx(s, 2, 3), 2, -1)};
    tt_cuda_check_refused("aten::one_hot", over, 1, three, 1);
    tt_cuda_check_refused("aten::one_hot", neg, 1, infer, 1);
    tt_cuda_check_refused("aten::one_hot", neg, 1, zero, 1);
    tj_tensor *fl[] = {rnd(s, 2, TJ_F32, 0, 2)};
    check("aten::one_hot", fl, 1, three, 1, TJ_I64);
}

/* ---- dropout --------------------------------------------------------------------------------- */

/* Runs op on x on the CPU and on CUDA, each from its own generator at the same
 * seed and offset: values and mask equal bit for bit, offsets advanced alike. */
static void check_dropout(const char *name, tj_tensor *x, double p, bool train) {
    tj_generator *gc = tj_generator_new(0), *gd = tj_generator_new(0);
    tj_generator_set_state(gc, 0x5eed + (uint64_t)(p * 100), 4242);
    tj_generator_set_state(gd, 0x5eed + (uint64_t)(p * 100), 4242);
    const tj_op_info *op = tj_op_find(name);
    tj_tensor *cpu[2], *dev[2], *xd = tt_cuda_copy_like(x);
    tj_attr ac[] = {{.f = p}, {.b = train}, {.gen = gc}};
    tj_attr ad[] = {{.f = p}, {.b = train}, {.gen = gd}};
    int n = tj_invoke(tj_op_id(op), &x, 1, ac, 3, cpu, 2);
    assert_true(n >= 1);
    assert_int_equal(tj_invoke(tj_op_id(op), &xd, 1, ad, 3, dev, 2), n);
    assert_int_equal(tj_generator_offset(gd), tj_generator_offset(gc));
    assert_int_equal(tj_generator_offset(gc), 4242 + (train ? (uint64_t)tj_numel(x) : 0));
    for (int k = 0; k < n; k++) {
        tj_tensor *host = tj_to_device(dev[k], TJ_DEVICE_CPU);
        tt_ref r = tt_ref_of(cpu[k]);
        tt_assert_close_ref(host, &r, 0, 0);
        tt_ref_free(&r);
        if (k == 1) assert_memory_equal(tj_data(host), tj_data(cpu[k]), (size_t)tj_numel(x));
    }
    tj_release(xd);
    tj_generator_free(gc);
    tj_generator_free(gd);
    tt_cuda_count_case();
}

static void dropout_matches_the_cpu_bit_for_bit(void **state) {
    (void)state;
    int64_t s[2] = {37, 29}, big[2] = {300, 401}, empty[2] = {0, 4};
    const double ps[] = {0.0, 0.3, 0.5, 1.0};
    for (int d = 0; d < 2; d++) {
        tj_dtype dt = d ? TJ_F64 : TJ_F32;
        tj_tensor *x = rnd(s, 2, dt, -2, 2), *xs = strided(x);
        tj_tensor *xT = tj_transpose(rnd((int64_t[]){29, 37}, 2, dt, -2, 2), 0, 1);
        for (int k = 0; k < N_OF(ps); k++)
            for (int train = 0; train < 2; train++) {
                tt_context("dropout %s p %g train %d", tj_dtype_name(dt), ps[k], train);
                check_dropout("aten::native_dropout", x, ps[k], train);
                check_dropout("aten::dropout", xs, ps[k], train);
                check_dropout("aten::native_dropout", xT, ps[k], train);
            }
        check_dropout("aten::native_dropout", rnd(big, 2, dt, -2, 2), 0.4, true);
        check_dropout("aten::native_dropout", rnd(empty, 2, dt, -2, 2), 0.4, true);
        check_dropout("aten::dropout", tj_scalar_tensor(1.5, dt), 0.4, true);
    }
    tt_context(NULL);
    /* refused on both: integer input, p outside [0, 1] */
    tj_tensor *xi = rnd(s, 2, TJ_I64, -2, 2), *xf = rnd(s, 2, TJ_F32, -1, 1);
    tj_attr a[] = {{.f = 0.5}, {.b = true}, {.gen = NULL}};
    tj_attr bad_p[] = {{.f = 1.5}, {.b = true}, {.gen = NULL}};
    check("aten::native_dropout", &xi, 1, a, 3, TJ_F32);
    check("aten::dropout", &xf, 1, bad_p, 3, TJ_F32);
}

/* This binary's only draws from the default generator: a CPU draw, a CUDA draw
 * and a CPU draw take counters [0, n), [n, 2n) and [2n, 3n) of seed 0. */
static void default_generator_is_one_stream(void **state) {
    (void)state;
    int64_t n = 1000;
    tj_tensor *x = tj_ones(&n, 1, TJ_F32), *xd = tt_cuda_copy_like(x);
    tj_tensor *masks[3], *out[2];
    for (int k = 0; k < 3; k++) {
        assert_int_equal(tj_native_dropout(k == 1 ? xd : x, 0.5, true, NULL, out, 2), 2);
        masks[k] = tj_to_device(out[1], TJ_DEVICE_CPU);
    }
    tj_generator *g = tj_generator_new(0);
    for (int k = 0; k < 3; k++) {
        tj_generator_set_state(g, 0, (uint64_t)(k * n));
        assert_int_equal(tj_native_dropout(x, 0.5, true, g, out, 2), 2);
        assert_memory_equal(tj_data(out[1]), tj_data(masks[k]), (size_t)n);
    }
    tj_generator_free(g);
    tj_release(xd);
    tt_cuda_count_case();
}

static void dropout_backward_forms(void **state) {
    (void)state;
    int64_t s[2] = {23, 17}, big[1] = {100003};
    for (int d = 0; d < 2; d++) {
        tj_dtype dt = d ? TJ_F64 : TJ_F32;
        tt_context("native_dropout_backward %s", tj_dtype_name(dt));
        tj_tensor *g = rnd(s, 2, dt, -3, 3), *m = rnd(s, 2, TJ_BOOL, 0, 1);
        tj_attr a[] = {{.f = 1 / 0.7}};
        tj_tensor *c1[] = {g, m}, *c2[] = {strided(g), strided(m)};
        tj_tensor *c3[] = {rnd(big, 1, dt, -3, 3), rnd(big, 1, TJ_BOOL, 0, 1)};
        tj_tensor *c4[] = {tj_scalar_tensor(2, dt), tj_scalar_tensor(1, TJ_BOOL)};
        check("aten::native_dropout_backward", c1, 2, a, 1, dt);
        check("aten::native_dropout_backward", c2, 2, a, 1, dt);
        check("aten::native_dropout_backward", c3, 2, a, 1, dt);
        check("aten::native_dropout_backward", c4, 2, a, 1, dt);
    }
    tt_context(NULL);
    tj_tensor *g = rnd(s, 2, TJ_F32, -1, 1), *mf = rnd(s, 2, TJ_F32, 0, 1);
    tj_attr a[] = {{.f = 2}};
    tj_tensor *bad[] = {g, mf}, *bad_g[] = {rnd(s, 2, TJ_I64, -2, 2), rnd(s, 2, TJ_BOOL, 0, 1)};
    check("aten::native_dropout_backward", bad, 2, a, 1, TJ_F32);
    check("aten::native_dropout_backward", bad_g, 2, a, 1, TJ_F32);
}

/* ---- large shapes: grid-stride loops --------------------------------------------------------- */

static void indexing_large(void **state) {
    (void)state;
    int64_t ws[2] = {1000, 128}, n = 800, xs[2] = {400, 300}, k = 350, gs[2] = {300, 350};
    int64_t ss[2] = {300, 1000}, os[2] = {100, 1000}, rows = 20000, ids = 4000, gsz[2] = {4000, 32};
    tj_attr e[] = {{.i = 3}, {.b = false}}, d0[] = {{.i = 0}}, d1[] = {{.i = 1}};
    tj_tensor *c1[] = {rnd(ws, 2, TJ_F32, -1, 1), idx(&n, 1, 1000)};
    check("aten::embedding", c1, 2, e, 2, TJ_F32);
    tj_tensor *x = rnd(xs, 2, TJ_F64, -1, 1);
    tj_tensor *c2[] = {x, idx(&k, 1, 400)}, *c3[] = {x, idx(gs, 2, 300)};
    check("aten::index_select", c2, 2, d0, 1, TJ_F64);
    check("aten::gather", c3, 2, d1, 1, TJ_F64);
    /* ~3 adds per element of out, ~80 per embedding row: f32 order effects */
    tj_tensor *c4[] = {rnd(os, 2, TJ_F32, -1, 1), idx(ss, 2, 100), rnd(ss, 2, TJ_F32, -1, 1)};
    tt_cuda_check_op("aten::scatter_add", c4, 3, d0, 1, 1e-5, 1e-5);
    tj_tensor *c5[] = {rnd(os, 2, TJ_I64, -1000, 1000), idx(ss, 2, 100), rnd(ss, 2, TJ_I64, -9, 9)};
    check("aten::scatter_add", c5, 3, d0, 1, TJ_I64);
    tj_attr eb[] = {{.i = 50}, {.i = 7}, {.b = true}};
    tj_tensor *c6[] = {rnd(gsz, 2, TJ_F32, -1, 1), idx(&ids, 1, 50)};
    tt_cuda_check_op("aten::embedding_dense_backward", c6, 2, eb, 3, 1e-4, 1e-4);
    tj_attr ten[] = {{.i = 10}};
    tj_tensor *c7[] = {idx(&rows, 1, 10)};
    check("aten::one_hot", c7, 1, ten, 1, TJ_I64);
}

int main(void) {
    gen = tj_generator_new(7031);
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(default_generator_is_one_stream),
        TT_SCOPED_TEST(embedding_forms),
        TT_SCOPED_TEST(embedding_backward_forms),
        TT_SCOPED_TEST(index_select_forms),
        TT_SCOPED_TEST(gather_forms),
        TT_SCOPED_TEST(scatter_add_forms),
        TT_SCOPED_TEST(one_hot_forms),
        TT_SCOPED_TEST(dropout_matches_the_cpu_bit_for_bit),
        TT_SCOPED_TEST(dropout_backward_forms),
        TT_SCOPED_TEST(indexing_large),
    };
    int rc = TT_CUDA_RUN(tests);
    tj_generator_free(gen);
    return rc;
}
