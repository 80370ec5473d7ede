/* test_cuda_conv.c — the CUDA convolutions (conv1d, conv2d, conv_transpose2d,
 * conv2d_backward_input, conv2d_backward_weight) against the CPU's kernels
 * on the same inputs: f32 and f64; stride, padding, dilation, groups
 * (depthwise included) and output_padding (below the stride, and below the
 * dilation only); 1x1 kernels (the direct product) strided or not; no images,
 * unbatched inputs, all-size-1 problems; inputs dense, strided and
 * channels-last, weights permuted, bias strided (the device gets the same
 * strides); the dtypes and shapes both devices refuse, with the same message;
 * and a problem large enough for many blocks.
 *
 * Tolerance: tt_product_tol(dtype, k), k the terms each output sums — C/g kh kw
 * for the forward op, O/g kh kw for the input's gradient, n ho wo for the
 * weight's.
 *
 * On a GPU (tjcu_has_libraries) one more test runs cuDNN, in heuristics and in
 * benchmark mode, against the backend's own kernels on the same device;
 * against the host execution harness it is skipped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/cuda_linalg_cases.h"
#include "tjit/ops_api.h"
#ifdef TJIT_HAVE_CUDA
#include "backends/cuda/linalg.h"
#endif

static tj_generator *gen;

static tj_tensor *rnd(const int64_t *sizes, int nd, tj_dtype dt) {
    return tt_random(gen, sizes, nd, dt, -1, 1);
}

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64};

/* A convolution: input [n, c, h, w], weight [o, c / g, kh, kw]. */
typedef struct cspec {
    int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
} cspec;

static const cspec cases[] = {
    /* n, c, h, w,  o, kh, kw,  sh, sw,  ph, pw,  dh, dw,  g */
    {2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1},
    {2, 4, 9, 8, 6, 3, 2, 2, 1, 1, 0, 1, 1, 2},    /* stride, padding, groups */
    {1, 6, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6},    /* depthwise */
    {3, 4, 10, 9, 2, 3, 3, 2, 3, 2, 1, 2, 2, 1},   /* dilation, uneven strides */
    {2, 5, 6, 7, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1},    /* 1x1: the direct product */
    {2, 8, 5, 4, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2},    /* 1x1 direct, grouped */
    {2, 4, 6, 6, 4, 1, 1, 2, 2, 0, 0, 1, 1, 2},    /* 1x1 strided: im2col */
    {0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1},    /* no images */
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},    /* every size 1 */
    {2, 2, 3, 3, 2, 3, 3, 1, 1, 2, 2, 1, 1, 1},    /* taps that reach only padding */
    {1, 2, 3, 3, 2, 5, 5, 1, 1, 1, 1, 1, 1, 1},    /* kernel fills the padded input */
    {4, 16, 20, 20, 24, 3, 3, 1, 1, 1, 1, 1, 1, 2}, /* many blocks */
};

static int64_t ho_of(const cspec *s) {
    return (s->h + 2 * s->ph - s->dh * (s->kh - 1) - 1) / s->sh + 1;
}
static int64_t wo_of(const cspec *s) {
    return (s->w + 2 * s->pw - s->dw * (s->kw - 1) - 1) / s->sw + 1;
}

/* The three conv2d ops (or conv1d forward when one_d: h == kh == 1) on case s. */
static void run_case(const cspec *s, tj_dtype dt, tt_layout xl, int wl, int bias_kind,
                     bool unbatched, bool one_d) {
    int sp = one_d ? 1 : 2, skip = unbatched ? 1 : 0, nd = sp + 2 - skip;
    int64_t HO = ho_of(s), WO = wo_of(s);
    int64_t xs[4] = {s->n, s->c, s->h, s->w}, ws[4] = {s->o, s->c / s->g, s->kh, s->kw};
    int64_t ys[4] = {s->n, s->o, HO, WO}, bs[1] = {s->o};
    if (one_d) xs[2] = xs[3], ws[2] = ws[3], ys[2] = ys[3];
    tj_tensor *x = tt_in_layout(gen, rnd(xs + skip, nd, dt), xl);
    tj_tensor *w = rnd(ws, sp + 2, dt);
    if (wl == 1 && !one_d) { /* [o, c/g, kh, kw] stored with c/g outermost */
        int64_t to[4] = {1, 0, 2, 3};
        w = tj_permute(tj_contiguous(tj_permute(w, to, 4)), to, 4);
    } else if (wl == 2) {
        w = tt_in_layout(gen, w, TT_STRIDED);
    }
    tj_tensor *b = bias_kind ? rnd(bs, 1, dt) : NULL;
    if (bias_kind == 2) b = tt_in_layout(gen, b, TT_STRIDED);
    tj_tensor *gy = tt_in_layout(gen, rnd(ys + skip, nd, dt), xl == TT_DENSE ? TT_STRIDED : xl);

    int64_t st[2] = {s->sh, s->sw}, pd[2] = {s->ph, s->pw}, dl[2] = {s->dh, s->dw};
    int off = one_d ? 1 : 0;
    tj_attr fa[4] = {{.ints = {st + off, sp}}, {.ints = {pd + off, sp}}, {.ints = {dl + off, sp}},
                     {.i = s->g}};
    tt_context("%s n%lld c%lld %lldx%lld o%lld k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld "
               "g%lld %s x %s w %d bias %d%s", one_d ? "conv1d" : "conv2d", (long long)s->n,
               (long long)s->c, (long long)s->h, (long long)s->w, (long long)s->o,
               (long long)s->kh, (long long)s->kw, (long long)s->sh, (long long)s->sw,
               (long long)s->ph, (long long)s->pw, (long long)s->dh, (long long)s->dw,
               (long long)s->g, tj_dtype_name(dt), tt_layout_name(xl), wl, bias_kind,
               unbatched ? " unbatched" : "");
    double tf = tt_product_tol(dt, s->c / s->g * s->kh * s->kw);
    tj_tensor *fin[3] = {x, w, b};
    tt_cuda_check_op(one_d ? "aten::conv1d" : "aten::conv2d", fin, 3, fa, 4, tf, tf);
    if (one_d) return;

    tj_attr ba[5] = {{.ints = {xs + skip, nd}}, fa[0], fa[1], fa[2], fa[3]};
    double ti = tt_product_tol(dt, s->o / s->g * s->kh * s->kw);
    tj_tensor *bin[2] = {gy, w};
    tt_cuda_check_op("tjit::conv2d_backward_input", bin, 2, ba, 5, ti, ti);
    ba[0] = (tj_attr){.ints = {ws, 4}};
    double tw = tt_product_tol(dt, s->n * HO * WO);
    tj_tensor *win[2] = {gy, x};
    tt_cuda_check_op("tjit::conv2d_backward_weight", win, 2, ba, 5, tw, tw);
}

static void test_conv2d_and_backward(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < 3; l++) {
                tt_layout xl = l == 0 ? TT_DENSE : l == 1 ? TT_STRIDED : TT_CHANNELS_LAST;
                bool big = cases[k].c >= 16;
                if (big && l > 0) continue;
                int v = (int)(k + (size_t)l) % 3; /* weight layout and bias kind */
                run_case(&cases[k], dtypes[d], xl, v, v, false, false);
                if (cases[k].n == 1 && l < 2) run_case(&cases[k], dtypes[d], xl, l, 1, true, false);
            }
    tt_context(NULL);
}

static void test_conv1d(void **state) {
    (void)state;
    static const cspec c1[] = {
        /* n, c, h, w,  o, kh, kw,  sh, sw,  ph, pw,  dh, dw,  g */
        {2, 3, 1, 9, 4, 1, 3, 1, 1, 1, 1, 1, 1, 1},
        {3, 4, 1, 12, 6, 1, 4, 1, 3, 1, 2, 1, 2, 2},
        {1, 4, 1, 7, 4, 1, 1, 1, 1, 1, 0, 1, 1, 4},
        {0, 2, 1, 5, 2, 1, 2, 1, 1, 1, 0, 1, 1, 1},
        {2, 6, 1, 200, 8, 1, 5, 1, 2, 1, 2, 1, 1, 1},
    };
    for (size_t k = 0; k < sizeof c1 / sizeof c1[0]; k++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < 2; l++) {
                run_case(&c1[k], dtypes[d], l ? TT_STRIDED : TT_DENSE, l ? 2 : 0, (int)k % 3,
                         false, true);
                if (c1[k].n == 1) run_case(&c1[k], dtypes[d], TT_DENSE, 0, 1, true, true);
            }
    tt_context(NULL);
}

/* The own kernels take the images in groups whose im2col fits a budget; the
 * weight's gradient adds each group's to the sum before it. A budget of one
 * byte makes every image a group. */
static void test_image_groups(void **state) {
    (void)state;
#ifdef TJIT_HAVE_CUDA
    tjcu_conv_set_col_budget(1);
#endif
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        if (cases[k].n > 1 && cases[k].c < 16)
            for (int d = 0; d < 2; d++)
                run_case(&cases[k], dtypes[d], (tt_layout)(k % 3), (int)k % 3, 1, false, false);
    static const cspec c1 = {3, 4, 1, 12, 6, 1, 4, 1, 3, 1, 2, 1, 2, 2};
    run_case(&c1, TJ_F32, TT_STRIDED, 2, 2, false, true);
#ifdef TJIT_HAVE_CUDA
    tjcu_conv_set_col_budget(0);
#endif
    tt_context(NULL);
}

/* ---- conv_transpose2d -------------------------------------------------------------------- */

typedef struct tspec {
    int64_t n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, g;
} tspec;

static void test_conv_transpose2d(void **state) {
    (void)state;
    static const tspec tc[] = {
        /* n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, g */
        {1, 2, 3, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {2, 4, 4, 3, 6, 3, 2, 2, 2, 1, 0, 1, 1, 1, 1, 2},  /* output_padding < stride */
        {1, 2, 3, 3, 2, 2, 2, 1, 1, 0, 0, 1, 1, 2, 2, 1},  /* output_padding < dilation only */
        {2, 3, 5, 5, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},  /* 1x1: the direct product */
        {1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, 2, 2, 1},  /* 1x1 with output padding */
        {2, 6, 4, 4, 4, 3, 3, 2, 1, 1, 1, 1, 0, 1, 2, 2},
        {0, 2, 3, 3, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},  /* no images */
        {3, 16, 8, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, /* many blocks */
    };
    for (size_t k = 0; k < sizeof tc / sizeof tc[0]; k++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < 3; l++) {
                const tspec *s = &tc[k];
                tj_dtype dt = dtypes[d];
                tt_layout xl = l == 0 ? TT_DENSE : l == 1 ? TT_STRIDED : TT_CHANNELS_LAST;
                int64_t xs[4] = {s->n, s->cin, s->h, s->w};
                int64_t ws[4] = {s->cin, s->cout / s->g, s->kh, s->kw}, bs[1] = {s->cout};
                tj_tensor *x = tt_in_layout(gen, rnd(xs, 4, dt), xl);
                tj_tensor *w = tt_in_layout(gen, rnd(ws, 4, dt), l == 2 ? TT_STRIDED : TT_DENSE);
                tj_tensor *b = l == 1 ? NULL : rnd(bs, 1, dt);
                if (l == 2) b = tt_in_layout(gen, b, TT_STRIDED);
                int64_t st[2] = {s->sh, s->sw}, pd[2] = {s->ph, s->pw}, op[2] = {s->oph, s->opw};
                int64_t dl[2] = {s->dh, s->dw};
                tj_attr at[5] = {{.ints = {st, 2}}, {.ints = {pd, 2}}, {.ints = {op, 2}},
                                 {.i = s->g}, {.ints = {dl, 2}}};
                tj_tensor *in[3] = {x, w, b};
                double tol = tt_product_tol(dt, s->cin / s->g * s->kh * s->kw);
                tt_context("conv_transpose2d case %zu %s %s", k, tj_dtype_name(dt),
                           tt_layout_name(xl));
                tt_cuda_check_op("aten::conv_transpose2d.input", in, 3, at, 5, tol, tol);
                if (s->n == 1 && l == 0) { /* unbatched */
                    tj_tensor *u[3] = {rnd(xs + 1, 3, dt), w, b};
                    tt_cuda_check_op("aten::conv_transpose2d.input", u, 3, at, 5, tol, tol);
                }
            }
    tt_context(NULL);
}

/* A 1x1 transposed convolution whose output padding (below the dilation) adds
 * a row and a column that no input reaches: they hold the bias alone. */
static void test_conv_transpose2d_padding_values(void **state) {
    (void)state;
    int64_t xs[4] = {1, 1, 2, 2}, ws[4] = {1, 1, 1, 1}, one[1] = {1};
    const float xv[4] = {1, 2, 3, 4}, wv[1] = {2}, bv[1] = {0.5f};
    tj_tensor *x = tj_to_device(tj_from_array(xv, xs, 4, TJ_F32), TT_CUDA0);
    tj_tensor *w = tj_to_device(tj_from_array(wv, ws, 4, TJ_F32), TT_CUDA0);
    tj_tensor *b = tj_to_device(tj_from_array(bv, one, 1, TJ_F32), TT_CUDA0);
    int64_t st[2] = {1, 1}, pd[2] = {0, 0}, op[2] = {1, 1}, dl[2] = {2, 2};
    tj_tensor *y = tj_conv_transpose2d(x, w, b, st, 2, pd, 2, op, 2, 1, dl, 2);
    assert_non_null(y);
    const double want[9] = {2.5, 4.5, 0.5, 6.5, 8.5, 0.5, 0.5, 0.5, 0.5};
    tt_assert_values(tj_to_device(y, TJ_DEVICE_CPU), want, 9, 0);
}

/* ---- refusals: the same message on both devices --------------------------------------------- */

static void test_refusals(void **state) {
    (void)state;
    int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {3, 2, 3, 3}, big[4] = {3, 2, 7, 7};
    int64_t odd[4] = {3, 1, 3, 3};
    int64_t st[2] = {1, 1}, pd[2] = {0, 0}, dl[2] = {1, 1};
    tj_attr fa[4] = {{.ints = {st, 2}}, {.ints = {pd, 2}}, {.ints = {dl, 2}}, {.i = 1}};
    tj_tensor *ints[3] = {tt_random(gen, xs, 4, TJ_I64, -3, 3),
                          tt_random(gen, ws, 4, TJ_I64, -3, 3), NULL};
    tj_tensor *mixed[3] = {rnd(xs, 4, TJ_F32), rnd(ws, 4, TJ_F64), NULL};
    tj_tensor *too_big[3] = {rnd(xs, 4, TJ_F32), rnd(big, 4, TJ_F32), NULL};
    tj_tensor *channels[3] = {rnd(xs, 4, TJ_F32), rnd(odd, 4, TJ_F32), NULL};
    tj_tensor *bools[3] = {tj_ones(xs, 4, TJ_BOOL), tj_ones(ws, 4, TJ_BOOL), NULL};
    tt_context("conv2d refusals");
    { /* i64 convolves on the CPU (as PyTorch's); CUDA refuses it, as PyTorch's does */
        tj_tensor *on_cpu = NULL, *dev[2] = {tt_cuda_copy_like(ints[0]), tt_cuda_copy_like(ints[1])};
        int op = tj_op_id(tj_op_find("aten::conv2d"));
        assert_int_equal(tj_invoke(op, ints, 3, fa, 4, &on_cpu, 1), 1);
        tj_tensor *on_dev = NULL, *din[3] = {dev[0], dev[1], NULL};
        assert_int_equal(tj_invoke(op, din, 3, fa, 4, &on_dev, 1), -1);
        tt_assert_error("aten::conv2d: on CUDA supports f32 and f64; got i64");
        tj_clear_error();
        tj_release(dev[0]);
        tj_release(dev[1]);
    }
    tt_cuda_check_refused("aten::conv2d", mixed, 3, fa, 4);
    tt_cuda_check_refused("aten::conv2d", too_big, 3, fa, 4);
    tt_cuda_check_refused("aten::conv2d", channels, 3, fa, 4);
    tt_cuda_check_refused("aten::conv2d", bools, 3, fa, 4);
    int64_t gys[4] = {1, 3, 3, 3};
    tj_attr ba[5] = {{.ints = {ws, 4}}, fa[0], fa[1], fa[2], fa[3]};
    tj_tensor *wb[2] = {tj_ones(gys, 4, TJ_BOOL), bools[0]};
    tt_cuda_check_refused("tjit::conv2d_backward_weight", wb, 2, ba, 5);
    tt_context(NULL);
}

/* ---- on a GPU: cuDNN against the own kernels ------------------------------------------------- */

#ifdef TJIT_HAVE_CUDA
/* op on cuda:0 through cuDNN and through the own kernels, compared. */
static void compare_paths(const char *name, tj_tensor *const *in, int n_in, const tj_attr *at,
                          int n_at, double tol) {
    tj_tensor *dev[3] = {NULL, NULL, NULL}, *lib = NULL, *own = NULL;
    for (int i = 0; i < n_in; i++) dev[i] = tt_cuda_copy_like(in[i]);
    int id = tj_op_id(tj_op_find(name));
    assert_int_equal(tj_invoke(id, dev, n_in, at, n_at, &lib, 1), 1);
    tjcu_linalg_set_libraries(false);
    int n = tj_invoke(id, dev, n_in, at, n_at, &own, 1);
    tjcu_linalg_set_libraries(true);
    assert_int_equal(n, 1);
    tt_ref r = tt_ref_of(tj_to_device(own, TJ_DEVICE_CPU));
    tt_assert_close_ref(tj_to_device(lib, TJ_DEVICE_CPU), &r, tol, tol);
    tt_ref_free(&r);
    for (int i = 0; i < n_in; i++) tj_release(dev[i]);
}

static void test_cudnn_against_own_kernels(void **state) {
    (void)state;
    if (!tjcu_has_libraries(TT_CUDA0)) skip();
    for (int bench = 0; bench < 2; bench++) {
        tj_cuda_set_cudnn_benchmark(bench == 1);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            for (int d = 0; d < 2; d++) {
                const cspec *s = &cases[k];
                tj_dtype dt = dtypes[d];
                int64_t xs[4] = {s->n, s->c, s->h, s->w}, ws[4] = {s->o, s->c / s->g, s->kh, s->kw};
                int64_t ys[4] = {s->n, s->o, ho_of(s), wo_of(s)}, bs[1] = {s->o};
                tj_tensor *x = tt_in_layout(gen, rnd(xs, 4, dt), (tt_layout)(k % 4));
                tj_tensor *w = rnd(ws, 4, dt), *b = rnd(bs, 1, dt), *gy = rnd(ys, 4, dt);
                int64_t st[2] = {s->sh, s->sw}, pd[2] = {s->ph, s->pw}, dl[2] = {s->dh, s->dw};
                tj_attr fa[4] = {{.ints = {st, 2}}, {.ints = {pd, 2}}, {.ints = {dl, 2}},
                                 {.i = s->g}};
                tj_attr ba[5] = {{.ints = {xs, 4}}, fa[0], fa[1], fa[2], fa[3]};
                tt_context("cuDNN (benchmark %d) against own kernels, case %zu %s", bench, k,
                           tj_dtype_name(dt));
                tj_tensor *fin[3] = {x, w, b}, *bin[2] = {gy, w}, *win[2] = {gy, x};
                compare_paths("aten::conv2d", fin, 3, fa, 4,
                              tt_product_tol(dt, s->c / s->g * s->kh * s->kw));
                compare_paths("tjit::conv2d_backward_input", bin, 2, ba, 5,
                              tt_product_tol(dt, s->o / s->g * s->kh * s->kw));
                ba[0] = (tj_attr){.ints = {ws, 4}};
                compare_paths("tjit::conv2d_backward_weight", win, 2, ba, 5,
                              tt_product_tol(dt, s->n * ho_of(s) * wo_of(s)));
            }
    }
    tj_cuda_set_cudnn_benchmark(false);
    tt_context(NULL);
}
#endif

int main(void) {
    gen = tj_generator_new(424242);
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(test_conv2d_and_backward),
        TT_SCOPED_TEST(test_conv1d),
        TT_SCOPED_TEST(test_image_groups),
        TT_SCOPED_TEST(test_conv_transpose2d),
        TT_SCOPED_TEST(test_conv_transpose2d_padding_values),
        TT_SCOPED_TEST(test_refusals),
#ifdef TJIT_HAVE_CUDA
        TT_SCOPED_TEST(test_cudnn_against_own_kernels),
#endif
    };
    int rc = TT_CUDA_RUN(tests);
    tj_generator_free(gen);
    return rc;
}
