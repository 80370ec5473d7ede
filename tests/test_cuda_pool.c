/* test_cuda_pool.c — the pooling ops on CUDA against the CPU kernels:
 * max_pool2d(_with_indices) (values and indices), its backward op and
 * tjit::max_pool2d_gather (with the forward's indices and with arbitrary ones
 * that repeat), avg_pool2d and adaptive_avg_pool2d and their backward ops,
 * over f32 and f64 (integers refused on both), 3-D and 4-D inputs, strides,
 * padding, dilation, ceil_mode and count_include_pad, non-contiguous inputs,
 * an empty batch, NaN and infinities, shapes that take grid-stride loops, and
 * indices outside their plane failing on both devices with the same message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/cuda_cases.h"

static tj_generator *gen;

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static tj_tensor *rnd(const int64_t *s, int nd, tj_dtype dt, double lo, double hi) {
    return tt_random(gen, s, nd, dt, lo, hi);
}

/* Exact: the kernels but max_pool2d's backward walk each window, or gather
 * each input element's shares, in the CPU's order and precision. */
static void check(const char *op, tj_tensor *const *in, int n, const tj_attr *attrs, int na) {
    tt_cuda_check_op(op, in, n, attrs, na, 0, 0);
}

/* A pooling window: kernel, stride (ns values; none means the kernel),
 * padding, dilation, ceil_mode. */
typedef struct win {
    int64_t k[2], s[2];
    int ns;
    int64_t p[2], d[2];
    bool ceil;
} win;

static const win wins[] = {
    {{2, 2}, {0, 0}, 0, {0, 0}, {1, 1}, false}, {{3, 3}, {1, 1}, 2, {1, 1}, {1, 1}, false},
    {{3, 2}, {2, 1}, 2, {1, 0}, {1, 1}, true},  {{2, 3}, {3, 2}, 2, {0, 1}, {1, 1}, true},
    {{3, 3}, {2, 2}, 1, {1, 1}, {2, 2}, true},  {{1, 1}, {1, 1}, 1, {0, 0}, {1, 1}, false},
};

static const struct {
    int nd;
    int64_t s[4];
} shapes[] = {{4, {2, 3, 7, 8}}, {3, {3, 6, 5}}, {4, {1, 2, 5, 5}}, {4, {0, 2, 6, 6}}};

/* max_pool2d's attrs: kernel, stride, padding, dilation, ceil_mode */
static void max_attrs(const win *w, tj_attr *a) {
    memset(a, 0, sizeof(tj_attr) * 5);
    a[0].ints.data = w->k, a[0].ints.n = 2;
    a[1].ints.data = w->s, a[1].ints.n = w->ns;
    a[2].ints.data = w->p, a[2].ints.n = 2;
    a[3].ints.data = w->d, a[3].ints.n = 2;
    a[4].b = w->ceil;
}

/* avg_pool2d's attrs: kernel, stride, padding, ceil_mode, count_include_pad */
static void avg_attrs(const win *w, bool include_pad, tj_attr *a) {
    max_attrs(w, a);
    a[3].b = w->ceil;
    a[4].b = include_pad;
}

/* A strided copy of x: channels last (a permuted buffer) for 4-D, else every
 * other element of a wider buffer. */
static tj_tensor *noncontig(tj_tensor *x) {
    if (tj_ndim(x) != 4) return tt_noncontiguous(gen, x);
    const int64_t *s = tj_sizes(x);
    int64_t nhwc[4] = {s[0], s[2], s[3], s[1]}, to_nchw[4] = {0, 3, 1, 2};
    tj_tensor *buf = tj_permute(rnd(nhwc, 4, tj_tensor_dtype(x), -1, 1), to_nchw, 4);
    assert_non_null(tj_copy_(buf, x));
    return buf;
}

/* max_pool2d(_with_indices), the backward op and the gather for one input and window */
static void max_case(tj_tensor *x, const win *w) {
    tj_dtype dt = tj_tensor_dtype(x);
    tj_attr a[5];
    max_attrs(w, a);
    tj_tensor *in[] = {x};
    check("aten::max_pool2d", in, 1, a, 5);
    check("aten::max_pool2d_with_indices", in, 1, a, 5);
    /* the pooled sizes and valid indices, from the CPU */
    tj_tensor *out[2];
    if (tj_max_pool2d_with_indices(x, w->k, 2, w->s, w->ns, w->p, 2, w->d, 2, w->ceil, out,
                                   2) != 2) {
        tj_clear_error(); /* refused, on both devices as checked above */
        return;
    }
    const int64_t *ps = tj_sizes(out[0]);
    int nd = tj_ndim(out[0]);
    int64_t hw = tj_size(x, -1) * tj_size(x, -2);
    tj_tensor *g = rnd(ps, nd, dt, -1, 1), *any = rnd(ps, nd, TJ_I64, 0, (double)(hw - 1));
    /* with the forward's indices, and with arbitrary ones that repeat: the
     * atomic adds then take another order than the CPU's */
    tj_tensor *b1[] = {g, x, out[1]}, *b2[] = {tt_noncontiguous(gen, g), x, any};
    tt_cuda_check_op("aten::max_pool2d_with_indices_backward", b1, 3, a, 5, 1e-5, 1e-6);
    tt_cuda_check_op("aten::max_pool2d_with_indices_backward", b2, 3, a, 5, 1e-5, 1e-6);
    tj_tensor *g1[] = {x, out[1]}, *g2[] = {x, tt_noncontiguous(gen, any)};
    check("tjit::max_pool2d_gather", g1, 2, a, 5);
    check("tjit::max_pool2d_gather", g2, 2, a, 5);
}

static void avg_case(tj_tensor *x, const win *w) {
    tj_dtype dt = tj_tensor_dtype(x);
    for (int inc = 0; inc < 2; inc++) {
        tj_attr a[5];
        avg_attrs(w, inc, a);
        tj_tensor *in[] = {x}, *out = NULL;
        check("aten::avg_pool2d", in, 1, a, 5);
        out = tj_avg_pool2d(x, w->k, 2, w->s, w->ns, w->p, 2, w->ceil, inc);
        tj_clear_error();
        if (!out) continue;
        tj_tensor *g = rnd(tj_sizes(out), tj_ndim(out), dt, -1, 1);
        tj_tensor *b1[] = {g, x}, *b2[] = {tt_noncontiguous(gen, g), x};
        check("aten::avg_pool2d_backward", b1, 2, a, 5);
        check("aten::avg_pool2d_backward", b2, 2, a, 5);
    }
}

static void adaptive_case(tj_tensor *x, int64_t oh, int64_t ow) {
    tj_dtype dt = tj_tensor_dtype(x);
    int64_t os[2] = {oh, ow}, gs[4];
    int nd = tj_ndim(x);
    memcpy(gs, tj_sizes(x), sizeof(int64_t) * (size_t)nd);
    gs[nd - 2] = oh, gs[nd - 1] = ow;
    tj_attr a[] = {{.ints = {os, 2}}};
    tj_tensor *in[] = {x}, *g = rnd(gs, nd, dt, -1, 1);
    check("aten::adaptive_avg_pool2d", in, 1, a, 1);
    tj_tensor *b1[] = {g, x}, *b2[] = {tt_noncontiguous(gen, g), x};
    check("aten::_adaptive_avg_pool2d_backward", b1, 2, NULL, 0);
    check("aten::_adaptive_avg_pool2d_backward", b2, 2, NULL, 0);
}

static void pools_over_windows_and_shapes(void **state) {
    (void)state;
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < N_OF(shapes); k++) {
            tj_dtype dt = d ? TJ_F64 : TJ_F32;
            tj_tensor *x = rnd(shapes[k].s, shapes[k].nd, dt, -4, 4), *xs = noncontig(x);
            for (int w = 0; w < N_OF(wins); w++) {
                tt_context("pool %s shape %d window %d", tj_dtype_name(dt), k, w);
                max_case(x, &wins[w]);
                max_case(xs, &wins[w]);
                if (wins[w].d[0] != 1) continue; /* average pooling has no dilation */
                avg_case(x, &wins[w]);
                avg_case(xs, &wins[w]);
            }
            const int64_t outs[][2] = {{1, 1}, {3, 2}, {4, 5}, {9, 11}};
            for (int o = 0; o < 4; o++) {
                tt_context("adaptive %s shape %d out %d", tj_dtype_name(dt), k, o);
                adaptive_case(x, outs[o][0], outs[o][1]);
                adaptive_case(xs, outs[o][0], outs[o][1]);
            }
        }
    tt_context(NULL);
}

/* NaN wins a max window (its index too), infinities pass through */
static void special_values(void **state) {
    (void)state;
    int64_t s[4] = {1, 2, 4, 4};
    for (int d = 0; d < 2; d++) {
        tj_dtype dt = d ? TJ_F64 : TJ_F32;
        tj_tensor *x = rnd(s, 4, dt, -1, 1);
        double v[] = {NAN, INFINITY, -INFINITY, -0.0, NAN, -INFINITY};
        const int at[] = {0, 5, 10, 15, 21, 26};
        for (int k = 0; k < N_OF(v); k++) {
            if (dt == TJ_F32) ((float *)tj_data(x))[at[k]] = (float)v[k];
            else ((double *)tj_data(x))[at[k]] = v[k];
        }
        tt_context("special values %s", tj_dtype_name(dt));
        for (int w = 0; w < 3; w++) {
            max_case(x, &wins[w]);
            avg_case(x, &wins[w]);
        }
        adaptive_case(x, 3, 3);
    }
    tt_context(NULL);
}

static void refusals_and_bad_indices(void **state) {
    (void)state;
    int64_t s[4] = {2, 3, 6, 6}, ps[4] = {2, 3, 3, 3}, small[4] = {1, 1, 1, 1};
    tj_tensor *xi = rnd(s, 4, TJ_I64, -4, 4), *x = rnd(s, 4, TJ_F32, -1, 1);
    tj_attr a[5], big_pad[5], av[5];
    max_attrs(&wins[0], a);
    win wp = {{2, 2}, {0, 0}, 0, {2, 2}, {1, 1}, false}; /* padding beyond half the kernel */
    max_attrs(&wp, big_pad);
    avg_attrs(&wins[0], true, av);
    tj_tensor *ii[] = {xi}, *one[] = {rnd(small, 4, TJ_F32, 0, 1)}, *xx[] = {x};
    check("aten::max_pool2d", ii, 1, a, 5);
    { /* i64 averages on the CPU (as PyTorch's); CUDA refuses it, as PyTorch's does */
        tj_tensor *on_cpu = NULL, *on_dev = NULL, *dev = tt_cuda_copy_like(xi);
        int op = tj_op_id(tj_op_find("aten::avg_pool2d"));
        assert_int_equal(tj_invoke(op, ii, 1, av, 5, &on_cpu, 1), 1);
        assert_int_equal(tj_invoke(op, &dev, 1, av, 5, &on_dev, 1), -1);
        tt_assert_error("aten::avg_pool2d: on CUDA supports f32 and f64; got i64");
        tj_clear_error();
        tj_release(dev);
    }
    check("aten::max_pool2d", one, 1, a, 5);
    check("aten::max_pool2d", xx, 1, big_pad, 5);
    int64_t zero[2] = {0, 2};
    tj_attr ad[] = {{.ints = {zero, 2}}};
    check("aten::adaptive_avg_pool2d", xx, 1, ad, 1);
    /* an index outside its 6x6 plane: the CPU's message from both */
    const int64_t bad[] = {36, -1, 1000};
    tj_tensor *g = rnd(ps, 4, TJ_F32, -1, 1);
    for (int k = 0; k < N_OF(bad); k++) {
        tj_tensor *ind = rnd(ps, 4, TJ_I64, 0, 35);
        ((int64_t *)tj_data(ind))[7 + 11 * k] = bad[k];
        tj_tensor *b[] = {g, x, ind}, *ga[] = {x, ind};
        tt_cuda_check_refused("aten::max_pool2d_with_indices_backward", b, 3, a, 5);
        tt_cuda_check_refused("tjit::max_pool2d_gather", ga, 2, a, 5);
    }
    tj_tensor *fl[] = {g, x, rnd(ps, 4, TJ_F32, 0, 35)};
    check("aten::max_pool2d_with_indices_backward", fl, 3, a, 5);
}

/* 204800-element inputs: grid-stride loops over every kernel */
static void pools_large(void **state) {
    (void)state;
    int64_t s[4] = {8, 16, 40, 40};
    tj_tensor *x = rnd(s, 4, TJ_F32, -1, 1);
    tt_context("large");
    max_case(x, &wins[1]);
    avg_case(x, &wins[2]);
    adaptive_case(x, 7, 7);
    tt_context(NULL);
}

int main(void) {
    gen = tj_generator_new(4093);
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(pools_over_windows_and_shapes),
        TT_SCOPED_TEST(special_values),
        TT_SCOPED_TEST(refusals_and_bad_indices),
        TT_SCOPED_TEST(pools_large),
    };
    int rc = TT_CUDA_RUN(tests);
    tj_generator_free(gen);
    return rc;
}
