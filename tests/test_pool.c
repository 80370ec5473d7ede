/* test_pool.c — the pooling ops (max_pool2d(_with_indices), avg_pool2d,
 * adaptive_avg_pool2d, their backward ops and max_pool2d_gather, the adjoint
 * of max pooling's backward) against naive double-precision
 * loops: kernel/stride/padding/dilation/ceil_mode/count_include_pad
 * combinations, strided and channels-last inputs, unbatched inputs, f32 and
 * f64; the backward ops also against finite differences; NaN handling; and
 * the error messages. */
#include <math.h>
#include <stdlib.h>

#include "tests/linalg_testing.h"

static tj_generator *gen;

/* The pooling ops this test owns (kind nn, which other families share). */
static const char *const pool_ops[] = {
    "aten::max_pool2d_with_indices", "aten::max_pool2d", "aten::max_pool2d_with_indices_backward",
    "aten::avg_pool2d", "aten::avg_pool2d_backward", "aten::adaptive_avg_pool2d",
    "aten::_adaptive_avg_pool2d_backward", "tjit::max_pool2d_gather"};
enum { N_POOL_OPS = sizeof pool_ops / sizeof pool_ops[0] };

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64};
static double tol(tj_dtype d) { return d == TJ_F32 ? 1e-5 : 1e-12; }

/* A pooling window: input [n, c, h, w]; sh == 0 means stride = kernel. */
typedef struct pspec {
    int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil;
} pspec;

/* PyTorch's pooling output length: floor (or ceil) of the windows that fit,
 * dropping a last ceil-mode window that would start in the right padding. */
static int64_t pool_len(int64_t len, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil) {
    int64_t span = len + 2 * p - (d * (k - 1) + 1);
    int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (out - 1) * s >= len + p) out--;
    return out;
}

static void dims(const pspec *s, int64_t *oh, int64_t *ow) {
    int64_t sh = s->sh ? s->sh : s->kh, sw = s->sw ? s->sw : s->kw;
    *oh = pool_len(s->h, s->kh, s->ph, sh, s->dh, s->ceil);
    *ow = pool_len(s->w, s->kw, s->pw, sw, s->dw, s->ceil);
}

/* ---- naive references ----------------------------------------------------------------
 * max:  x [N, C, H, W] -> y, idx [N, C, OH, OW]
 *   y[n, c, oh, ow] = max_{ki, kj} x[n, c, oh*sh - ph + ki*dh, ow*sw - pw + kj*dw] over
 *   positions inside x; idx = ih * W + iw of the first maximum in row-major window order,
 *   a NaN counting as larger than anything.
 * avg:  y = (sum over the window's cells inside x) / divisor, where the window is
 *   rows [oh*sh - ph, +kh) cut at H + ph (columns likewise) and divisor is its area
 *   with count_include_pad, else the number of cells inside x.
 * adaptive: y[.., i, j] = mean of x over rows [floor(i*H/OH), ceil((i+1)*H/OH)) and
 *   columns [floor(j*W/OW), ceil((j+1)*W/OW)). */
static void ref_max(const pspec *s, const double *x, double *y, double *idx) {
    int64_t oh, ow, sh = s->sh ? s->sh : s->kh, sw = s->sw ? s->sw : s->kw;
    dims(s, &oh, &ow);
    for (int64_t p = 0; p < s->n * s->c; p++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double best = -INFINITY;
                int64_t at = -1;
                for (int64_t ki = 0; ki < s->kh; ki++)
                    for (int64_t kj = 0; kj < s->kw; kj++) {
                        int64_t ih = i * sh - s->ph + ki * s->dh, iw = j * sw - s->pw + kj * s->dw;
                        if (ih < 0 || ih >= s->h || iw < 0 || iw >= s->w) continue;
                        double v = x[(p * s->h + ih) * s->w + iw];
                        if (at < 0 || v > best || isnan(v)) best = v, at = ih * s->w + iw;
                    }
                y[(p * oh + i) * ow + j] = best;
                idx[(p * oh + i) * ow + j] = (double)at;
            }
}

/* Calls cell(p, i, j, ih, iw, weight) for every input cell of every average window. */
#define FOR_AVG_CELLS(s, include_pad, body)                                                  \
    do {                                                                                     \
        int64_t oh_, ow_, sh_ = (s)->sh ? (s)->sh : (s)->kh, sw_ = (s)->sw ? (s)->sw : (s)->kw; \
        dims(s, &oh_, &ow_);                                                                 \
        for (int64_t p = 0; p < (s)->n * (s)->c; p++)                                        \
            for (int64_t i = 0; i < oh_; i++)                                                \
                for (int64_t j = 0; j < ow_; j++) {                                          \
                    int64_t h0 = i * sh_ - (s)->ph, w0 = j * sw_ - (s)->pw;                  \
                    int64_t h1 = h0 + (s)->kh < (s)->h + (s)->ph ? h0 + (s)->kh : (s)->h + (s)->ph; \
                    int64_t w1 = w0 + (s)->kw < (s)->w + (s)->pw ? w0 + (s)->kw : (s)->w + (s)->pw; \
                    int64_t inside = 0;                                                      \
                    for (int64_t ih = h0; ih < h1; ih++)                                     \
                        for (int64_t iw = w0; iw < w1; iw++)                                 \
                            inside += ih >= 0 && ih < (s)->h && iw >= 0 && iw < (s)->w;      \
                    double div = (include_pad) ? (double)((h1 - h0) * (w1 - w0)) : (double)inside; \
                    int64_t yi = (p * oh_ + i) * ow_ + j;                                    \
                    for (int64_t ih = h0; ih < h1; ih++)                                     \
                        for (int64_t iw = w0; iw < w1; iw++) {                               \
                            if (ih < 0 || ih >= (s)->h || iw < 0 || iw >= (s)->w) continue;  \
                            int64_t xi = (p * (s)->h + ih) * (s)->w + iw;                    \
                            body;                                                            \
                        }                                                                    \
                }                                                                            \
    } while (0)

static void ref_avg(const pspec *s, bool include_pad, const double *x, double *y) {
    int64_t oh, ow;
    dims(s, &oh, &ow);
    memset(y, 0, sizeof(double) * (size_t)(s->n * s->c * oh * ow));
    FOR_AVG_CELLS(s, include_pad, y[yi] += x[xi] / div);
}

static void ref_avg_backward(const pspec *s, bool include_pad, const double *gy, double *gx) {
    memset(gx, 0, sizeof(double) * (size_t)(s->n * s->c * s->h * s->w));
    FOR_AVG_CELLS(s, include_pad, gx[xi] += gy[yi] / div);
}

static void ref_adaptive(const pspec *s, int64_t oh, int64_t ow, const double *x, double *y,
                         const double *gy, double *gx) {
    for (int64_t p = 0; p < s->n * s->c; p++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                int64_t h0 = i * s->h / oh, h1 = ((i + 1) * s->h + oh - 1) / oh;
                int64_t w0 = j * s->w / ow, w1 = ((j + 1) * s->w + ow - 1) / ow;
                double area = (double)((h1 - h0) * (w1 - w0)), sum = 0;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        sum += x[(p * s->h + ih) * s->w + iw];
                        gx[(p * s->h + ih) * s->w + iw] += gy[(p * oh + i) * ow + j] / area;
                    }
                y[(p * oh + i) * ow + j] = sum / area;
            }
}

/* ---- the kernels over a table of windows ------------------------------------------------------ */

static const pspec cases[] = {
    /* n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ceil */
    {1, 1, 4, 4, 2, 2, 0, 0, 0, 0, 1, 1, false},
    {2, 3, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, false},
    {2, 3, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, true},
    {1, 2, 9, 9, 3, 2, 2, 3, 1, 1, 2, 2, true},
    {1, 2, 5, 5, 5, 5, 1, 1, 2, 2, 1, 1, false},
    {1, 2, 6, 7, 2, 3, 3, 2, 1, 1, 1, 1, true},
    {3, 4, 8, 8, 2, 2, 0, 0, 0, 0, 1, 1, false},
    {8, 16, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, false}, /* planes over threads */
    /* 2x2 of stride 2: max pooling's quads path inside, the general loop at a
     * ceil-mode edge or past an odd floor-mode edge */
    {2, 3, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, true},
    {1, 2, 5, 7, 2, 2, 0, 0, 0, 0, 1, 1, false},
};

static const int channels_last[4] = {0, 2, 3, 1};

static tj_tensor *input(const int64_t *sizes, int nd, tj_dtype dt, int layout) {
    if (layout == 1) return lt_tensor(gen, sizes, nd, dt, LT_STRIDED, NULL);
    if (layout == 2 && nd == 4) return lt_tensor(gen, sizes, nd, dt, LT_PERMUTED, channels_last);
    return lt_tensor(gen, sizes, nd, dt, LT_CONTIGUOUS, NULL);
}

static void run_window_case(const pspec *s, tj_dtype dt, int layout, bool unbatched) {
    int64_t oh, ow;
    dims(s, &oh, &ow);
    int skip = unbatched ? 1 : 0, nd = 4 - skip;
    int64_t xs[4] = {s->n, s->c, s->h, s->w}, ys[4] = {s->n, s->c, oh, ow};
    int64_t k[2] = {s->kh, s->kw}, st[2] = {s->sh, s->sw}, pd[2] = {s->ph, s->pw};
    int64_t dl[2] = {s->dh, s->dw};
    int n_st = s->sh ? 2 : 0;
    tj_tensor *x = input(xs + skip, nd, dt, layout), *gy = input(ys + skip, nd, dt, (layout + 1) % 3);
    tt_ref rx = tt_ref_of(x), rgy = tt_ref_of(gy);
    tt_ref y = tt_ref_new(ys + skip, nd), idx = tt_ref_new(ys + skip, nd), gx = tt_ref_new(xs + skip, nd);

    /* max, with and without indices, and its backward from the returned indices */
    ref_max(s, rx.v, y.v, idx.v);
    tj_tensor *out[2] = {NULL, NULL};
    assert_int_equal(tj_max_pool2d_with_indices(x, k, 2, st, n_st, pd, 2, dl, 2, s->ceil, out, 2), 2);
    tt_assert_close_ref(out[0], &y, 0, 0);
    tt_assert_close_ref(out[1], &idx, 0, 0);
    assert_int_equal(tj_tensor_dtype(out[1]), TJ_I64);
    lt_mark("aten::max_pool2d_with_indices");
    tj_tensor *y2 = tj_max_pool2d(x, k, 2, st, n_st, pd, 2, dl, 2, s->ceil);
    tt_assert_close_ref(y2, &y, 0, 0);
    lt_mark("aten::max_pool2d");
    memset(gx.v, 0, sizeof(double) * (size_t)gx.numel);
    for (int64_t i = 0; i < idx.numel; i++) /* gx[plane, idx] += gy */
        gx.v[i / (oh * ow) * s->h * s->w + (int64_t)idx.v[i]] += rgy.v[i];
    tj_tensor *g = tj_max_pool2d_with_indices_backward(gy, x, k, 2, st, n_st, pd, 2, dl, 2, s->ceil,
                                                       out[1]);
    tt_assert_close_ref(g, &gx, tol(dt), tol(dt));
    lt_mark("aten::max_pool2d_with_indices_backward");
    /* read back at the indices, x gives its maxima */
    tj_tensor *gathered = tj_max_pool2d_gather(x, k, 2, st, n_st, pd, 2, dl, 2, s->ceil, out[1]);
    tt_assert_close_ref(gathered, &y, 0, 0);
    lt_mark("tjit::max_pool2d_gather");
    tj_release(gathered);
    tj_release(g);
    tj_release(y2);
    tj_release(out[0]);
    tj_release(out[1]);

    /* average, both divisors (no dilation: PyTorch's avg_pool2d has none) */
    if (s->dh == 1 && s->dw == 1)
        for (int inc = 0; inc < 2; inc++) {
            ref_avg(s, inc, rx.v, y.v);
            tj_tensor *a = tj_avg_pool2d(x, k, 2, st, n_st, pd, 2, s->ceil, inc);
            tt_assert_close_ref(a, &y, tol(dt), tol(dt));
            ref_avg_backward(s, inc, rgy.v, gx.v);
            tj_tensor *ga = tj_avg_pool2d_backward(gy, x, k, 2, st, n_st, pd, 2, s->ceil, inc);
            tt_assert_close_ref(ga, &gx, tol(dt), tol(dt));
            lt_mark("aten::avg_pool2d");
            lt_mark("aten::avg_pool2d_backward");
            tj_release(a);
            tj_release(ga);
        }
    tt_ref *refs[] = {&rx, &rgy, &y, &idx, &gx};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) tt_ref_free(refs[i]);
    tj_release(x);
    tj_release(gy);
}

/* i64 average pooling divides toward zero, as PyTorch's: sums and their
 * divisors in double (exact for these small integers), then truncated. */
static void test_avg_pool_i64(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const pspec *s = &cases[c];
        if (s->dh != 1 || s->dw != 1) continue;
        int64_t oh, ow;
        dims(s, &oh, &ow);
        int64_t xs[4] = {s->n, s->c, s->h, s->w}, ys[4] = {s->n, s->c, oh, ow};
        int64_t k[2] = {s->kh, s->kw}, st[2] = {s->sh, s->sw}, pd[2] = {s->ph, s->pw};
        int n_st = s->sh ? 2 : 0;
        tj_tensor *x = tt_random(gen, xs, 4, TJ_I64, -9, 9), *gy = tt_random(gen, ys, 4, TJ_I64, -9, 9);
        tt_ref rx = tt_ref_of(x), rgy = tt_ref_of(gy), y = tt_ref_new(ys, 4), gx = tt_ref_new(xs, 4);
        double *divs = calloc((size_t)y.numel + 1, sizeof(double));
        for (int inc = 0; inc < 2; inc++) {
            memset(y.v, 0, sizeof(double) * (size_t)y.numel);
            memset(gx.v, 0, sizeof(double) * (size_t)gx.numel);
            FOR_AVG_CELLS(s, inc, (y.v[yi] += rx.v[xi], divs[yi] = div));
            for (int64_t i = 0; i < y.numel; i++) y.v[i] = divs[i] ? trunc(y.v[i] / divs[i]) : 0;
            FOR_AVG_CELLS(s, inc, gx.v[xi] += trunc(rgy.v[yi] / div));
            tj_tensor *a = tj_avg_pool2d(x, k, 2, st, n_st, pd, 2, s->ceil, inc);
            assert_int_equal(tj_tensor_dtype(a), TJ_I64);
            tt_assert_close_ref(a, &y, 0, 0);
            tj_tensor *ga = tj_avg_pool2d_backward(gy, x, k, 2, st, n_st, pd, 2, s->ceil, inc);
            tt_assert_close_ref(ga, &gx, 0, 0);
            tj_release(a);
            tj_release(ga);
        }
        free(divs);
        tt_ref *refs[] = {&rx, &rgy, &y, &gx};
        for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) tt_ref_free(refs[i]);
        tj_release(x);
        tj_release(gy);
    }
}

static void test_max_and_avg(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t d = 0; d < 2; d++)
            for (int l = 0; l < 3; l++) {
                run_window_case(&cases[c], dtypes[d], l, false);
                if (cases[c].n == 1) run_window_case(&cases[c], dtypes[d], l, true);
            }
}

static void test_adaptive(void **state) {
    (void)state;
    const int64_t shapes[][4] = {{2, 3, 7, 5}, {1, 2, 4, 4}, {4, 16, 20, 18}};
    const int64_t outs[][2] = {{1, 1}, {3, 2}, {4, 4}, {10, 6}, {7, 5}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++)
            for (size_t d = 0; d < 2; d++)
                for (int l = 0; l < 3; l++) {
                    const int64_t *xs = shapes[s];
                    const pspec sp_ = {.n = xs[0], .c = xs[1], .h = xs[2], .w = xs[3]}, *sp = &sp_;
                    tj_dtype dt = dtypes[d];
                    int64_t ys[4] = {xs[0], xs[1], outs[o][0], outs[o][1]};
                    tj_tensor *x = input(xs, 4, dt, l), *gy = input(ys, 4, dt, (l + 2) % 3);
                    tt_ref rx = tt_ref_of(x), rgy = tt_ref_of(gy), y = tt_ref_new(ys, 4),
                           gx = tt_ref_new(xs, 4);
                    ref_adaptive(sp, outs[o][0], outs[o][1], rx.v, y.v, rgy.v, gx.v);
                    tj_tensor *a = tj_adaptive_avg_pool2d(x, outs[o], 2);
                    tt_assert_close_ref(a, &y, tol(dt), tol(dt));
                    tj_tensor *ga = tj_adaptive_avg_pool2d_backward(gy, x);
                    tt_assert_close_ref(ga, &gx, tol(dt), tol(dt));
                    lt_mark("aten::adaptive_avg_pool2d");
                    lt_mark("aten::_adaptive_avg_pool2d_backward");
                    tj_release(a);
                    tj_release(ga);
                    tt_ref *refs[] = {&rx, &rgy, &y, &gx};
                    for (size_t i = 0; i < 4; i++) tt_ref_free(refs[i]);
                    tj_release(x);
                    tj_release(gy);
                }
}

/* ---- backward ops against finite differences ---------------------------------------------
 * L(x) = sum(gy * pool(x)); with distinct random inputs the max's argmax does not move
 * under a small step, and the averages are linear, so central differences match. */
typedef enum { FD_MAX, FD_AVG, FD_ADAPTIVE } fd_kind;

static tj_tensor *pool_fwd(fd_kind kind, tj_tensor *x) {
    int64_t k[2] = {3, 2}, st[2] = {2, 1}, pd[2] = {1, 1}, dl[2] = {1, 2}, os[2] = {2, 3};
    if (kind == FD_MAX) return tj_max_pool2d(x, k, 2, st, 2, pd, 2, dl, 2, true);
    if (kind == FD_AVG) return tj_avg_pool2d(x, k, 2, st, 2, pd, 2, true, false);
    return tj_adaptive_avg_pool2d(x, os, 2);
}

static void test_backward_finite_differences(void **state) {
    (void)state;
    int64_t xs[4] = {1, 2, 5, 5}, k[2] = {3, 2}, st[2] = {2, 1}, pd[2] = {1, 1}, dl[2] = {1, 2};
    for (int kind = FD_MAX; kind <= FD_ADAPTIVE; kind++) {
        tj_tensor *x = tt_random(gen, xs, 4, TJ_F64, -1, 1);
        tj_tensor *y = pool_fwd(kind, x);
        tj_tensor *gy = tt_random(gen, tj_sizes(y), 4, TJ_F64, -1, 1);
        tj_tensor *gx = NULL;
        if (kind == FD_MAX) {
            tj_tensor *out[2];
            assert_int_equal(tj_max_pool2d_with_indices(x, k, 2, st, 2, pd, 2, dl, 2, true, out, 2), 2);
            gx = tj_max_pool2d_with_indices_backward(gy, x, k, 2, st, 2, pd, 2, dl, 2, true, out[1]);
            tj_release(out[0]);
            tj_release(out[1]);
        } else if (kind == FD_AVG) {
            gx = tj_avg_pool2d_backward(gy, x, k, 2, st, 2, pd, 2, true, false);
        } else {
            gx = tj_adaptive_avg_pool2d_backward(gy, x);
        }
        assert_non_null(gx);
        double *xv = tj_data(x), eps = 1e-6;
        tt_ref rgy = tt_ref_of(gy), rgx = tt_ref_of(gx);
        for (int64_t i = 0; i < tj_numel(x); i++) {
            double keep = xv[i], l[2];
            for (int side = 0; side < 2; side++) {
                xv[i] = keep + (side ? -eps : eps);
                tj_tensor *yy = pool_fwd(kind, x);
                tt_ref ry = tt_ref_of(yy);
                l[side] = 0;
                for (int64_t j = 0; j < ry.numel; j++) l[side] += rgy.v[j] * ry.v[j];
                tt_ref_free(&ry);
                tj_release(yy);
            }
            xv[i] = keep;
            double fd = (l[0] - l[1]) / (2 * eps);
            if (fabs(fd - rgx.v[i]) > 1e-6) {
                fprintf(stderr, "kind %d element %lld: op %.12g, finite differences %.12g\n", kind,
                        (long long)i, rgx.v[i], fd);
                fail();
            }
        }
        tt_ref_free(&rgy);
        tt_ref_free(&rgx);
        tj_release(x);
        tj_release(y);
        tj_release(gy);
        tj_release(gx);
    }
}

/* A NaN wins its windows, and its index is reported. */
static void test_max_nan(void **state) {
    (void)state;
    double v[16] = {1, 2, 3, 4, 5, NAN, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    int64_t xs[4] = {1, 1, 4, 4}, k[2] = {2, 2};
    tj_tensor *x = tj_from_array(v, xs, 4, TJ_F64), *out[2];
    assert_int_equal(tj_max_pool2d_with_indices(x, k, 2, NULL, 0, (int64_t[]){0}, 1, (int64_t[]){1},
                                                1, false, out, 2), 2);
    tt_ref y = tt_ref_of(out[0]), idx = tt_ref_of(out[1]);
    assert_true(isnan(y.v[0]));
    assert_true(idx.v[0] == 5);
    assert_true(y.v[1] == 8 && y.v[2] == 14 && y.v[3] == 16);
    assert_true(idx.v[1] == 7 && idx.v[2] == 13 && idx.v[3] == 15);
    tt_ref_free(&y);
    tt_ref_free(&idx);
    tj_release(out[0]);
    tj_release(out[1]);
    tj_release(x);
    /* ties and -inf windows: the first element of the window, in row-major order */
    for (int k2 = 0; k2 < 2; k2++) {
        double same[16];
        for (int i = 0; i < 16; i++) same[i] = k2 ? -INFINITY : 3.0;
        x = tj_from_array(same, xs, 4, TJ_F64);
        assert_int_equal(tj_max_pool2d_with_indices(x, k, 2, NULL, 0, (int64_t[]){0}, 1,
                                                    (int64_t[]){1}, 1, false, out, 2), 2);
        idx = tt_ref_of(out[1]);
        assert_true(idx.v[0] == 0 && idx.v[1] == 2 && idx.v[2] == 8 && idx.v[3] == 10);
        tt_ref_free(&idx);
        tj_release(out[0]);
        tj_release(out[1]);
        tj_release(x);
    }
}

/* ---- errors ----------------------------------------------------------------------------------- */

static void expect_null(tj_tensor *t, const char *msg) {
    assert_null(t);
    tt_assert_error(msg);
    tj_clear_error();
}

static void test_errors(void **state) {
    (void)state;
    int64_t s4[4] = {1, 2, 5, 5}, s2[4] = {1, 1, 2, 2}, g3[4] = {1, 2, 3, 3}, g2[4] = {1, 2, 2, 2};
    int64_t k3[2] = {3, 3}, k0[2] = {0, 3}, p2[2] = {2, 2}, p0[2] = {0, 0}, one[2] = {1, 1};
    int64_t st3[3] = {1, 1, 1}, o0[2] = {0, 2}, flat[2] = {5, 5};
    tj_tensor *x = tj_zeros(s4, 4, TJ_F32), *small = tj_zeros(s2, 4, TJ_F32);
    tj_tensor *xi = tj_zeros(s4, 4, TJ_I64), *x2d = tj_zeros(flat, 2, TJ_F32);
    tj_tensor *gy = tj_zeros(g3, 4, TJ_F32), *gbad = tj_zeros(g2, 4, TJ_F32);
    tj_tensor *ind = tj_full(g3, 4, 99, TJ_I64);

    expect_null(tj_max_pool2d(x, k3, 2, NULL, 0, p2, 2, one, 2, false),
                "aten::max_pool2d: padding [2, 2] must be at most half of kernel_size [3, 3]");
    expect_null(tj_max_pool2d(small, k3, 2, NULL, 0, p0, 2, one, 2, false),
                "aten::max_pool2d: input [1, 1, 2, 2] is too small for kernel_size [3, 3]");
    expect_null(tj_max_pool2d(x, k3, 2, st3, 3, p0, 2, one, 2, false),
                "aten::max_pool2d: stride takes 2 values, one for both, or none for kernel_size; got 3");
    expect_null(tj_avg_pool2d(x, k0, 2, NULL, 0, p0, 2, false, true),
                "aten::avg_pool2d: kernel_size must be positive; got [0, 3]");
    expect_null(tj_max_pool2d(xi, k3, 2, NULL, 0, p0, 2, one, 2, false),
                "aten::max_pool2d: supports f32 and f64; got i64 for 'self'");
    expect_null(tj_max_pool2d(x2d, k3, 2, NULL, 0, p0, 2, one, 2, false),
                "aten::max_pool2d: 'self' must be 3-D [C, H, W] or 4-D [N, C, H, W]; got sizes [5, 5]");
    expect_null(tj_avg_pool2d_backward(gbad, x, k3, 2, one, 2, p0, 2, false, true),
                "aten::avg_pool2d_backward: 'grad_output' has sizes [1, 2, 2, 2] but the pooled "
                "output has [1, 2, 3, 3]");
    expect_null(tj_max_pool2d_with_indices_backward(gy, x, k3, 2, one, 2, p0, 2, one, 2, false, ind),
                "aten::max_pool2d_with_indices_backward: an element of 'indices' lies outside its "
                "5x5 input plane");
    expect_null(tj_max_pool2d_with_indices_backward(gy, x, k3, 2, one, 2, p0, 2, one, 2, false, gy),
                "aten::max_pool2d_with_indices_backward: 'indices' must be i64; got f32");
    expect_null(tj_max_pool2d_gather(x, k3, 2, one, 2, p0, 2, one, 2, false, ind),
                "tjit::max_pool2d_gather: an element of 'indices' lies outside its 5x5 input plane");
    expect_null(tj_max_pool2d_gather(x, k3, 2, one, 2, p0, 2, one, 2, false, gbad),
                "tjit::max_pool2d_gather: 'indices' has sizes [1, 2, 2, 2] but the pooled output "
                "has [1, 2, 3, 3]");
    expect_null(tj_adaptive_avg_pool2d(x, (int64_t[]){-1, 2}, 2),
                "aten::adaptive_avg_pool2d: output_size must not be negative; got [-1, 2]");
    expect_null(tj_adaptive_avg_pool2d(x, o0, 1), /* PyTorch's refusal; int[2] takes one elsewhere */
                "aten::adaptive_avg_pool2d: output_size must be 2 numbers; got 1");
    tj_tensor *empty = tj_adaptive_avg_pool2d(x, o0, 2); /* [0, 2] is an empty output, as in PyTorch */
    assert_non_null(empty);
    assert_int_equal(tj_numel(empty), 0);
    tj_release(empty);

    tj_tensor *all[] = {x, small, xi, x2d, gy, gbad, ind};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tj_release(all[i]);
}

static void test_coverage(void **state) {
    (void)state;
    lt_check_coverage(TJ_NUM_KINDS, pool_ops, N_POOL_OPS);
    for (int i = 0; i < N_POOL_OPS; i++)
        assert_int_equal(tj_op_kind_of(tj_op_find(pool_ops[i])), TJ_KIND_NN);
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(7);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tj_generator_free(gen);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_and_avg),
        cmocka_unit_test(test_avg_pool_i64),
        cmocka_unit_test(test_adaptive),
        cmocka_unit_test(test_backward_finite_differences),
        cmocka_unit_test(test_max_nan),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_coverage), /* last: it reads what the others checked */
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
