/* test_conv.c — every op of kind conv (conv1d, conv2d, conv_transpose2d,
 * conv2d_backward_input, conv2d_backward_weight) against naive double-precision
 * loops: stride/padding/dilation/groups combinations, 1x1 (direct) kernels,
 * strided and channels-last inputs, permuted weights, batch of one and
 * unbatched inputs, f32 and f64; the backward ops also against finite
 * differences of the naive conv; and the error messages. */
#include <math.h>
#include <stdlib.h>

#include "tests/linalg_testing.h"

static tj_generator *gen;

/* The family as this test knows it; ops of kind conv added later must also
 * get a reference here, or test_coverage fails. */
static const char *const family[] = {"aten::conv1d", "aten::conv2d", "aten::conv_transpose2d.input",
                                     "tjit::conv2d_backward_input", "tjit::conv2d_backward_weight"};

/* i64 convolves too (exactly: the random values are small integers) */
static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64};
enum { N_DTYPES = sizeof dtypes / sizeof dtypes[0] };
static double tol(tj_dtype d) { return d == TJ_F32 ? 2e-4 : d == TJ_F64 ? 1e-11 : 0; }

/* A convolution: input [n, c, h, w], weight [o, c / g, kh, kw]. */
typedef struct cspec {
    int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
} cspec;

static int64_t ho_of(const cspec *s) { return (s->h + 2 * s->ph - s->dh * (s->kh - 1) - 1) / s->sh + 1; }
static int64_t wo_of(const cspec *s) { return (s->w + 2 * s->pw - s->dw * (s->kw - 1) - 1) / s->sw + 1; }

/* ---- naive references ----------------------------------------------------------------
 * x [N, C, H, W], w [O, C/G, KH, KW], b [O] (or NULL), y [N, O, HO, WO]:
 *   y[n, o, oh, ow] = b[o] + sum_{c < C/G, ki, kj} x[n, g*C/G + c, ih, iw] * w[o, c, ki, kj]
 *   with g = o / (O/G), ih = oh*sh - ph + ki*dh, iw = ow*sw - pw + kj*dw (0 outside x).
 * The two gradients scatter the same terms back:
 *   gx[n, g*C/G + c, ih, iw] += gy[n, o, oh, ow] * w[o, c, ki, kj]
 *   gw[o, c, ki, kj]         += gy[n, o, oh, ow] * x[n, g*C/G + c, ih, iw] */
#define FOR_TERMS(s, body)                                                                 \
    const int64_t HO_ = ho_of(s), WO_ = wo_of(s);                                          \
    for (int64_t n = 0; n < (s)->n; n++)                                                   \
        for (int64_t o = 0; o < (s)->o; o++)                                               \
            for (int64_t oh = 0; oh < HO_; oh++)                                           \
                for (int64_t ow = 0; ow < WO_; ow++)                                       \
                    for (int64_t c = 0; c < (s)->c / (s)->g; c++)                          \
                        for (int64_t ki = 0; ki < (s)->kh; ki++)                           \
                            for (int64_t kj = 0; kj < (s)->kw; kj++) {                     \
                                int64_t ih = oh * (s)->sh - (s)->ph + ki * (s)->dh;        \
                                int64_t iw = ow * (s)->sw - (s)->pw + kj * (s)->dw;        \
                                if (ih < 0 || ih >= (s)->h || iw < 0 || iw >= (s)->w)      \
                                    continue;                                              \
                                int64_t ci = o / ((s)->o / (s)->g) * ((s)->c / (s)->g) + c; \
                                int64_t xi = ((n * (s)->c + ci) * (s)->h + ih) * (s)->w + iw; \
                                int64_t yi = ((n * (s)->o + o) * HO_ + oh) * WO_ + ow;    \
                                int64_t wi = ((o * ((s)->c / (s)->g) + c) * (s)->kh + ki) * (s)->kw + kj; \
                                body;                                                      \
                            }

static void ref_conv(const cspec *s, const double *x, const double *w, const double *b, double *y) {
    int64_t P = ho_of(s) * wo_of(s);
    for (int64_t i = 0; i < s->n * s->o * P; i++) y[i] = b ? b[i / P % s->o] : 0;
    FOR_TERMS(s, y[yi] += x[xi] * w[wi]);
}

static void ref_grad_input(const cspec *s, const double *gy, const double *w, double *gx) {
    memset(gx, 0, sizeof(double) * (size_t)(s->n * s->c * s->h * s->w));
    FOR_TERMS(s, gx[xi] += gy[yi] * w[wi]);
}

static void ref_grad_weight(const cspec *s, const double *gy, const double *x, double *gw) {
    memset(gw, 0, sizeof(double) * (size_t)(s->o * (s->c / s->g) * s->kh * s->kw));
    FOR_TERMS(s, gw[wi] += gy[yi] * x[xi]);
}

/* ---- conv2d, conv1d and the two backward ops over a table of convolutions -------------- */

static const cspec conv_cases[] = {
    /* n, c, h, w,  o, kh, kw,  sh, sw,  ph, pw,  dh, dw,  g */
    {1, 3, 7, 7, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1},
    {2, 4, 8, 6, 6, 3, 2, 2, 1, 1, 0, 1, 1, 2},
    {2, 6, 9, 9, 6, 3, 3, 2, 2, 2, 2, 2, 2, 3},
    {1, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4},     /* depthwise */
    {2, 8, 5, 4, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1},     /* 1x1: direct GEMM */
    {2, 8, 5, 4, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2},     /* 1x1 direct, grouped */
    {2, 4, 5, 5, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1},     /* 1x1 strided: im2col */
    {1, 2, 3, 3, 2, 5, 5, 1, 1, 1, 1, 1, 1, 1},     /* kernel fills the padded input */
    {1, 3, 6, 5, 2, 2, 3, 3, 2, 1, 1, 2, 1, 1},
    {4, 8, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},  /* big enough to split images over threads */
    {2, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2},
    {1, 16, 24, 24, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},  /* one image: BLAS threads inside */
    {1, 64, 32, 32, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},  /* col built in several bands of rows */
};

/* Memory orders for [n, c, h, w] activations and [o, c, kh, kw] weights. */
static const int channels_last[4] = {0, 2, 3, 1};
static const int weight_c_outer[4] = {1, 0, 2, 3};

static tj_tensor *act_tensor(const int64_t *sizes, int nd, tj_dtype dt, int layout) {
    if (layout == 1) return lt_tensor(gen, sizes, nd, dt, LT_STRIDED, NULL);
    if (layout == 2 && nd == 4) return lt_tensor(gen, sizes, nd, dt, LT_PERMUTED, channels_last);
    return lt_tensor(gen, sizes, nd, dt, LT_CONTIGUOUS, NULL);
}

static tj_tensor *weight_tensor(const int64_t *sizes, int nd, tj_dtype dt, int layout) {
    if (layout == 1 && nd == 4) return lt_tensor(gen, sizes, nd, dt, LT_PERMUTED, weight_c_outer);
    if (layout == 2 && nd == 4) return lt_tensor(gen, sizes, nd, dt, LT_PERMUTED, channels_last);
    if (layout == 3) return lt_tensor(gen, sizes, nd, dt, LT_STRIDED, NULL);
    return lt_tensor(gen, sizes, nd, dt, LT_CONTIGUOUS, NULL);
}

/* Runs conv (2-D, or 1-D when s has h == kh == 1 and one_d) forward and both
 * backward ops on one case and layout choice. unbatched drops the n dim. */
static void run_conv(const cspec *s, tj_dtype dt, int xl, int wl, bool bias, bool one_d,
                     bool unbatched) {
    int64_t ho = ho_of(s), wo = wo_of(s);
    int64_t xs[4] = {s->n, s->c, s->h, s->w}, ws[4] = {s->o, s->c / s->g, s->kh, s->kw};
    int64_t ys[4] = {s->n, s->o, ho, wo}, bs[1] = {s->o};
    int64_t x1[3] = {s->n, s->c, s->w}, w1[3] = {s->o, s->c / s->g, s->kw}, y1[3] = {s->n, s->o, wo};
    const int64_t *xsz = one_d ? x1 : xs, *wsz = one_d ? w1 : ws, *ysz = one_d ? y1 : ys;
    int nd = one_d ? 3 : 4, skip = unbatched ? 1 : 0;
    tj_tensor *x = act_tensor(xsz + skip, nd - skip, dt, xl);
    tj_tensor *w = weight_tensor(wsz, nd, dt, wl);
    tj_tensor *b = bias ? tt_random(gen, bs, 1, dt, -1, 1) : NULL;
    tj_tensor *gy = act_tensor(ysz + skip, nd - skip, dt, (xl + 1) % 3);
    tt_ref rx = tt_ref_of(x), rw = tt_ref_of(w), rgy = tt_ref_of(gy);
    tt_ref rb = b ? tt_ref_of(b) : (tt_ref){0};
    tt_ref want_y = tt_ref_new(ysz + skip, nd - skip), want_gx = tt_ref_new(xsz + skip, nd - skip);
    tt_ref want_gw = tt_ref_new(wsz, nd);
    ref_conv(s, rx.v, rw.v, b ? rb.v : NULL, want_y.v);
    ref_grad_input(s, rgy.v, rw.v, want_gx.v);
    ref_grad_weight(s, rgy.v, rx.v, want_gw.v);

    int64_t stride[2] = {s->sh, s->sw}, pad[2] = {s->ph, s->pw}, dil[2] = {s->dh, s->dw};
    tj_tensor *y = one_d ? tj_conv1d(x, w, b, stride + 1, 1, pad + 1, 1, dil + 1, 1, s->g)
                         : tj_conv2d(x, w, b, stride, 2, pad, 2, dil, 2, s->g);
    tt_assert_close_ref(y, &want_y, tol(dt), tol(dt));
    lt_mark(one_d ? "aten::conv1d" : "aten::conv2d");
    if (!one_d) {
        tj_tensor *gx = tj_conv2d_backward_input(gy, w, xsz + skip, nd - skip, stride, 2, pad, 2,
                                                 dil, 2, s->g);
        tt_assert_close_ref(gx, &want_gx, tol(dt), tol(dt));
        tj_tensor *gw = tj_conv2d_backward_weight(gy, x, wsz, nd, stride, 2, pad, 2, dil, 2, s->g);
        tt_assert_close_ref(gw, &want_gw, tol(dt), 4 * tol(dt));
        lt_mark("tjit::conv2d_backward_input");
        lt_mark("tjit::conv2d_backward_weight");
        tj_release(gx);
        tj_release(gw);
    }
    tj_release(y);
    tt_ref *refs[] = {&rx, &rw, &rgy, &want_y, &want_gx, &want_gw};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) tt_ref_free(refs[i]);
    if (b) tt_ref_free(&rb);
    tj_release(x);
    tj_release(w);
    tj_release(b);
    tj_release(gy);
}

static void test_conv2d_and_backward(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof conv_cases / sizeof conv_cases[0]; k++)
        for (size_t d = 0; d < N_DTYPES; d++)
            for (int xl = 0; xl < 3; xl++)
                for (int wl = 0; wl < 4; wl++) {
                    const cspec *s = &conv_cases[k];
                    /* big cases (for the thread and band paths) with fewer layouts, to stay quick */
                    bool big = s->n * s->o * s->h * s->w * s->c > 40000;
                    if (big && (xl + wl) % 3 != 0) continue;
                    run_conv(s, dtypes[d], xl, wl, (k + (size_t)wl) % 2 == 0, false, false);
                    if (s->n == 1 && !big) run_conv(s, dtypes[d], xl, wl, true, false, true);
                }
}

static void test_conv1d(void **state) {
    (void)state;
    /* n, c, l, o, k, s, p, d, g as 2-D specs of height 1 */
    static const cspec cases[] = {
        {1, 3, 1, 9, 4, 1, 3, 1, 1, 0, 0, 1, 1, 1},
        {2, 4, 1, 11, 6, 1, 3, 1, 2, 0, 2, 1, 2, 2},
        {2, 6, 1, 8, 3, 1, 1, 1, 1, 0, 0, 1, 1, 3},
        {1, 2, 1, 5, 2, 1, 5, 1, 3, 0, 1, 1, 1, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (size_t d = 0; d < N_DTYPES; d++)
            for (int xl = 0; xl < 2; xl++) {
                run_conv(&cases[k], dtypes[d], xl, xl ? 3 : 0, k % 2 == 0, true, false);
                if (cases[k].n == 1) run_conv(&cases[k], dtypes[d], xl, 0, true, true, true);
            }
}

/* ---- conv_transpose2d ------------------------------------------------------------------
 * x [N, Cin, H, W], w [Cin, Cout/G, KH, KW], b [Cout], y [N, Cout, HO, WO] with
 * HO = (H - 1)*sh - 2*ph + dh*(KH - 1) + oph + 1 (WO likewise):
 *   y[n, g*Cout/G + co, ih*sh - ph + ki*dh, iw*sw - pw + kj*dw] += x[n, ci, ih, iw] * w[ci, co, ki, kj]
 *   with g = ci / (Cin/G), then + b[co] everywhere. */
typedef struct tspec {
    int64_t n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, g;
} tspec;

static void ref_conv_transpose(const tspec *s, const double *x, const double *w, const double *b,
                               double *y, int64_t HO, int64_t WO) {
    int64_t cog = s->cout / s->g, cig = s->cin / s->g;
    for (int64_t i = 0; i < s->n * s->cout * HO * WO; i++) y[i] = b ? b[i / (HO * WO) % s->cout] : 0;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t ci = 0; ci < s->cin; ci++)
            for (int64_t ih = 0; ih < s->h; ih++)
                for (int64_t iw = 0; iw < s->w; iw++)
                    for (int64_t co = 0; co < cog; co++)
                        for (int64_t ki = 0; ki < s->kh; ki++)
                            for (int64_t kj = 0; kj < s->kw; kj++) {
                                int64_t oh = ih * s->sh - s->ph + ki * s->dh;
                                int64_t ow = iw * s->sw - s->pw + kj * s->dw;
                                if (oh < 0 || oh >= HO || ow < 0 || ow >= WO) continue;
                                int64_t oc = ci / cig * cog + co;
                                y[((n * s->cout + oc) * HO + oh) * WO + ow] +=
                                    x[((n * s->cin + ci) * s->h + ih) * s->w + iw] *
                                    w[((ci * cog + co) * s->kh + ki) * s->kw + kj];
                            }
}

static void test_conv_transpose2d(void **state) {
    (void)state;
    static const tspec cases[] = {
        /* n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, g */
        {1, 2, 3, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {2, 4, 4, 3, 6, 3, 2, 2, 2, 1, 0, 1, 1, 1, 1, 2},
        {1, 2, 3, 3, 2, 2, 2, 1, 1, 0, 0, 1, 1, 2, 2, 1},  /* output_padding < dilation */
        {2, 3, 5, 5, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},  /* 1x1: direct */
        {2, 6, 4, 4, 4, 3, 3, 2, 1, 1, 1, 1, 0, 1, 2, 2},
        {4, 16, 8, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, /* images over threads */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (size_t d = 0; d < N_DTYPES; d++)
            for (int l = 0; l < 3; l++) {
                const tspec *s = &cases[k];
                tj_dtype dt = dtypes[d];
                int64_t HO = (s->h - 1) * s->sh - 2 * s->ph + s->dh * (s->kh - 1) + s->oph + 1;
                int64_t WO = (s->w - 1) * s->sw - 2 * s->pw + s->dw * (s->kw - 1) + s->opw + 1;
                int64_t xs[4] = {s->n, s->cin, s->h, s->w}, ws[4] = {s->cin, s->cout / s->g, s->kh, s->kw};
                int64_t ys[4] = {s->n, s->cout, HO, WO}, bs[1] = {s->cout};
                tj_tensor *x = act_tensor(xs, 4, dt, l), *w = weight_tensor(ws, 4, dt, l);
                tj_tensor *b = l != 1 ? tt_random(gen, bs, 1, dt, -1, 1) : NULL;
                tt_ref rx = tt_ref_of(x), rw = tt_ref_of(w), want = tt_ref_new(ys, 4);
                tt_ref rb = b ? tt_ref_of(b) : (tt_ref){0};
                ref_conv_transpose(s, rx.v, rw.v, b ? rb.v : NULL, want.v, HO, WO);
                int64_t st[2] = {s->sh, s->sw}, pd[2] = {s->ph, s->pw}, op[2] = {s->oph, s->opw};
                int64_t dl[2] = {s->dh, s->dw};
                tj_tensor *y = tj_conv_transpose2d(x, w, b, st, 2, pd, 2, op, 2, s->g, dl, 2);
                tt_assert_close_ref(y, &want, tol(dt), tol(dt));
                lt_mark("aten::conv_transpose2d.input");
                tj_release(y);
                if (s->n == 1) { /* unbatched: the same numbers without the n dim */
                    tj_tensor *x3 = tjc_make_view(x, xs + 1, tj_strides(x) + 1, 3,
                                                  tj_storage_offset(x));
                    tt_ref want3 = want;
                    want3.ndim = 3;
                    memmove(want3.sizes, want3.sizes + 1, 3 * sizeof(int64_t));
                    y = tj_conv_transpose2d(x3, w, b, st, 2, pd, 2, op, 2, s->g, dl, 2);
                    tt_assert_close_ref(y, &want3, tol(dt), tol(dt));
                    tj_release(y);
                    tj_release(x3);
                }
                tt_ref_free(&rx);
                tt_ref_free(&rw);
                tt_ref_free(&want);
                if (b) tt_ref_free(&rb);
                tj_release(x);
                tj_release(w);
                tj_release(b);
            }
}

/* ---- the backward ops against finite differences of the naive conv -----------------------
 * L(x, w) = sum(gy * conv(x, w)); dL/dx[i] ~ (L(x + e_i) - L(x - e_i)) / 2e, exact up to
 * rounding since L is linear in each argument. */
static double loss(const cspec *s, const double *x, const double *w, const double *gy, double *y) {
    ref_conv(s, x, w, NULL, y);
    double l = 0;
    for (int64_t i = 0; i < s->n * s->o * ho_of(s) * wo_of(s); i++) l += gy[i] * y[i];
    return l;
}

static void check_fd(const tj_tensor *got, double *v, int64_t n, const cspec *s, double *x,
                     double *w, const double *gy, double *y) {
    const double eps = 1e-3;
    tt_ref g = tt_ref_of(got);
    assert_int_equal(g.numel, n);
    for (int64_t i = 0; i < n; i++) {
        double keep = v[i];
        v[i] = keep + eps;
        double up = loss(s, x, w, gy, y);
        v[i] = keep - eps;
        double down = loss(s, x, w, gy, y);
        v[i] = keep;
        double fd = (up - down) / (2 * eps);
        if (fabs(fd - g.v[i]) > 1e-8 * (1 + fabs(fd))) {
            fprintf(stderr, "element %lld: op gives %.12g, finite differences %.12g\n",
                    (long long)i, g.v[i], fd);
            fail();
        }
    }
    tt_ref_free(&g);
}

static void test_backward_finite_differences(void **state) {
    (void)state;
    static const cspec cases[] = {
        {2, 4, 5, 5, 4, 3, 3, 2, 1, 1, 1, 1, 2, 2},
        {1, 3, 4, 6, 2, 2, 3, 1, 2, 0, 1, 2, 1, 1},
        {2, 2, 3, 3, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const cspec *s = &cases[k];
        int64_t xs[4] = {s->n, s->c, s->h, s->w}, ws[4] = {s->o, s->c / s->g, s->kh, s->kw};
        int64_t ys[4] = {s->n, s->o, ho_of(s), wo_of(s)};
        tj_tensor *x = tt_random(gen, xs, 4, TJ_F64, -1, 1), *w = tt_random(gen, ws, 4, TJ_F64, -1, 1);
        tj_tensor *gy = tt_random(gen, ys, 4, TJ_F64, -1, 1);
        tt_ref rx = tt_ref_of(x), rw = tt_ref_of(w), rgy = tt_ref_of(gy), y = tt_ref_new(ys, 4);
        int64_t st[2] = {s->sh, s->sw}, pd[2] = {s->ph, s->pw}, dl[2] = {s->dh, s->dw};
        tj_tensor *gx = tj_conv2d_backward_input(gy, w, xs, 4, st, 2, pd, 2, dl, 2, s->g);
        tj_tensor *gw = tj_conv2d_backward_weight(gy, x, ws, 4, st, 2, pd, 2, dl, 2, s->g);
        assert_non_null(gx);
        assert_non_null(gw);
        check_fd(gx, rx.v, rx.numel, s, rx.v, rw.v, rgy.v, y.v);
        check_fd(gw, rw.v, rw.numel, s, rx.v, rw.v, rgy.v, y.v);
        tj_release(gx);
        tj_release(gw);
        tt_ref_free(&rx);
        tt_ref_free(&rw);
        tt_ref_free(&rgy);
        tt_ref_free(&y);
        tj_release(x);
        tj_release(w);
        tj_release(gy);
    }
}

/* ---- errors ----------------------------------------------------------------------------------- */

static tj_tensor *zeros4(tj_dtype dt, int nd, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t s[4] = {a, b, c, d};
    return tj_zeros(s, nd, dt);
}

static void expect_null(tj_tensor *t, const char *msg) {
    assert_null(t);
    tt_assert_error(msg);
    tj_clear_error();
}

static void test_errors(void **state) {
    (void)state;
    int64_t one[2] = {1, 1}, zero[2] = {0, 0}, s01[2] = {0, 1}, neg[2] = {-1, -1}, isz[4] = {1, 4, 6, 6};
    tj_tensor *x = zeros4(TJ_F32, 4, 1, 4, 5, 5), *w8 = zeros4(TJ_F32, 4, 8, 3, 3, 3);
    tj_tensor *w7 = zeros4(TJ_F32, 4, 7, 2, 3, 3), *w4 = zeros4(TJ_F32, 4, 4, 4, 3, 3);
    tj_tensor *wd = zeros4(TJ_F64, 4, 4, 4, 3, 3), *xi = zeros4(TJ_I64, 4, 1, 4, 5, 5);
    tj_tensor *wi = zeros4(TJ_I64, 4, 4, 4, 3, 3), *x3 = zeros4(TJ_F32, 4, 1, 2, 3, 3);
    tj_tensor *w5 = zeros4(TJ_F32, 4, 2, 2, 5, 5), *b3 = zeros4(TJ_F32, 1, 3, 0, 0, 0);
    tj_tensor *x2d = zeros4(TJ_F32, 2, 4, 5, 0, 0), *gy = zeros4(TJ_F32, 4, 1, 4, 3, 3);
    tj_tensor *l1 = zeros4(TJ_F32, 3, 1, 2, 4, 0), *k1 = zeros4(TJ_F32, 3, 2, 2, 5, 0);

    expect_null(tj_conv2d(x, w8, NULL, one, 2, zero, 2, one, 2, 2),
                "aten::conv2d: weight [8, 3, 3, 3] with groups=2 expects 6 input channels (3 per "
                "group), but input [1, 4, 5, 5] has 4");
    expect_null(tj_conv2d(x, w7, NULL, one, 2, zero, 2, one, 2, 2),
                "aten::conv2d: weight [7, 2, 3, 3] has 7 output channels, not divisible by groups=2");
    expect_null(tj_conv2d(x, w4, NULL, s01, 2, zero, 2, one, 2, 1),
                "aten::conv2d: stride must be positive; got [0, 1]");
    expect_null(tj_conv2d(x, w4, NULL, one, 2, neg, 2, one, 2, 1),
                "aten::conv2d: padding must be non-negative; got [-1, -1]");
    expect_null(tj_conv2d(x, w4, NULL, one, 2, zero, 2, zero, 2, 1),
                "aten::conv2d: dilation must be positive; got [0, 0]");
    expect_null(tj_conv2d(x, w4, NULL, one, 2, zero, 2, one, 2, 0),
                "aten::conv2d: groups must be positive; got 0");
    expect_null(tj_conv2d(x3, w5, NULL, one, 2, zero, 2, one, 2, 1),
                "aten::conv2d: kernel 5x5 (dilated 5x5) is larger than the padded input 3x3 "
                "(input [1, 2, 3, 3], padding [0, 0])");
    expect_null(tj_conv1d(l1, k1, NULL, one, 1, zero, 1, one, 1, 1),
                "aten::conv1d: kernel size 5 (dilated 5) is larger than the padded input length 4");
    expect_null(tj_conv2d(x, wd, NULL, one, 2, zero, 2, one, 2, 1),
                "aten::conv2d: expected 'input' and 'weight' to have the same dtype; got f32 and f64");
    tj_tensor *bool_x = zeros4(TJ_BOOL, 4, 1, 4, 5, 5), *bool_w = zeros4(TJ_BOOL, 4, 4, 4, 3, 3);
    expect_null(tj_conv2d(bool_x, bool_w, NULL, one, 2, zero, 2, one, 2, 1),
                "aten::conv2d: supports f32, f64 and i64; got bool");
    tj_release(bool_x);
    tj_release(bool_w);
    expect_null(tj_conv2d(x, w4, b3, one, 2, zero, 2, one, 2, 1),
                "aten::conv2d: bias must be 1-D with 4 values (the output channels); got sizes [3]");
    expect_null(tj_conv2d(x2d, w4, NULL, one, 2, zero, 2, one, 2, 1),
                "aten::conv2d: 'input' must be 3-D [C, H, W] or 4-D [N, C, H, W]; got sizes [4, 5]");
    expect_null(tj_conv_transpose2d(x, w4, NULL, one, 2, zero, 2, one, 2, 1, one, 2),
                "aten::conv_transpose2d.input: output_padding must be smaller than either stride "
                "or dilation; got [1, 1]");
    expect_null(tj_conv2d_backward_input(gy, w4, isz, 4, one, 2, zero, 2, one, 2, 1),
                "tjit::conv2d_backward_input: grad_output [1, 4, 3, 3] does not match the output "
                "of a convolution of input [1, 4, 6, 6] with weight [4, 4, 3, 3]");
    expect_null(tj_conv2d_backward_input(gy, w4, isz, 3, one, 2, zero, 2, one, 2, 1),
                "tjit::conv2d_backward_input: input_size must have 4 values");
    expect_null(tj_conv2d_backward_weight(gy, x, isz, 3, one, 2, zero, 2, one, 2, 1),
                "tjit::conv2d_backward_weight: weight_size must have 4 values; got 3");

    tj_tensor *all[] = {x, w8, w7, w4, wd, xi, wi, x3, w5, b3, x2d, gy, l1, k1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tj_release(all[i]);
}

static void test_coverage(void **state) {
    (void)state;
    lt_check_coverage(TJ_KIND_CONV, family, sizeof family / sizeof family[0]);
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(99);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tj_generator_free(gen);
    return 0;
}

/* conv_transpose2d refuses an input with an empty spatial dim, as PyTorch
 * does: its derivative (a convolution over the output) had no room for the
 * kernel; conv2d's input gradient of such an input is empty. Both found by
 * the graph fuzzer's gradient checks. */
static void convolutions_of_empty_spatial_inputs(void **state) {
    (void)state;
    tj_scope_begin();
    int64_t xs[4] = {1, 1, 0, 3}, ws[4] = {1, 1, 3, 1}, one = 1, zero = 0, pad[2] = {1, 0},
            dil[2] = {2, 1};
    tj_tensor *x = tj_zeros(xs, 4, TJ_F64), *w = tj_zeros(ws, 4, TJ_F64);
    assert_null(tj_conv_transpose2d(x, w, NULL, &one, 1, pad, 2, &zero, 1, 1, dil, 2));
    tt_assert_error("empty spatial dim");
    tj_clear_error();
    /* conv2d takes one when the padding leaves room for the kernel; the
     * gradient of its input is then empty, not an error */
    int64_t w2s[4] = {2, 1, 2, 1}, pad2[2] = {1, 0};
    tj_tensor *w2 = tj_zeros(w2s, 4, TJ_F64);
    tj_tensor *y = tj_conv2d(x, w2, NULL, &one, 1, pad2, 2, &one, 1, 1);
    assert_non_null(y);
    tj_tensor *gx = tj_conv2d_backward_input(y, w2, xs, 4, &one, 1, pad2, 2, &one, 1, 1);
    if (!gx) fail_msg("conv2d_backward_input: %s", tj_last_error());
    tt_assert_sizes(gx, xs, 4);
    tj_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(convolutions_of_empty_spatial_inputs),
        cmocka_unit_test(test_conv2d_and_backward),
        cmocka_unit_test(test_conv1d),
        cmocka_unit_test(test_conv_transpose2d),
        cmocka_unit_test(test_backward_finite_differences),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_coverage), /* last: it reads what the others checked */
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
