/* test_cuda_nn.c — the losses on CUDA against the CPU kernels: mse_loss,
 * nll_loss, cross_entropy_loss, binary_cross_entropy_with_logits and their
 * backward ops, with every reduction, f32, f64 and mixed dtypes (and the
 * dtypes they refuse), weights, pos_weight and ignore_index, non-contiguous
 * inputs, size-0, size-1 and 0-dim tensors, special values, shapes that take
 * grid-stride loops and multi-block reductions, and bad targets failing on
 * both devices with the same message. The indexing and dropout ops are in
 * test_cuda_nn_index.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/cuda_cases.h"

static tj_generator *gen;

/* cross_entropy_loss checks its targets itself, then runs log_softmax and
 * nll_loss on the device: its values are compared where the softmax family's
 * kernel is in the CUDA table (main says so when it is not). */
static bool have_log_softmax(void) {
    const tjc_device_backend *b = tjc_device_backend_of(TJ_CUDA);
    return b && b->kernels[TJ_OP_log_softmax];
}

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
static const char *const reductions[] = {"none", "mean", "sum"};

static tj_tensor *rnd(const int64_t *s, int nd, tj_dtype dt, double lo, double hi) {
    return tt_random(gen, s, nd, dt, lo, hi);
}
static tj_tensor *strided(tj_tensor *t) { return tt_noncontiguous(gen, t); }

/* Checks op in[0..n) with attrs at the tolerances of dtype dt. */
static void check(const char *op, tj_tensor *const *in, int n, const tj_attr *attrs, int na,
                  tj_dtype dt) {
    tt_cuda_check_op(op, in, n, attrs, na, tt_cuda_rtol(dt), tt_cuda_atol(dt));
}

/* grad_output of a loss's backward: the loss's sizes for none, else 0-dim. */
static tj_tensor *grad_for(const char *red, const int64_t *s, int nd, tj_dtype dt) {
    return strcmp(red, "none") ? rnd(NULL, 0, dt, -2, 2) : rnd(s, nd, dt, -2, 2);
}

/* f32 (or f64) values that include inf, -inf, nan, -0, a denormal and large ones. */
static tj_tensor *specials(tj_dtype dt, int64_t n) {
    double v[] = {INFINITY, -INFINITY, NAN, -0.0, 0.0, dt == TJ_F32 ? 1e-40 : 1e-310, 40, -40,
                  1e-3, -7.5};
    tj_tensor *t = rnd(&n, 1, dt, -3, 3);
    for (int64_t i = 0; i < n && i < N_OF(v); i++) {
        if (dt == TJ_F32) ((float *)tj_data(t))[i] = (float)v[i];
        else ((double *)tj_data(t))[i] = v[i];
    }
    return t;
}

/* ---- mse_loss -------------------------------------------------------------------------- */

static const struct {
    int nd;
    int64_t s[4];
} loss_shapes[] = {{2, {3, 5}}, {3, {2, 1, 4}}, {1, {1}}, {0, {0}}, {2, {0, 3}}};

static const tj_dtype pairs[][2] = {{TJ_F32, TJ_F32}, {TJ_F64, TJ_F64}, {TJ_F32, TJ_F64}};

static void mse_case(tj_tensor *x, tj_tensor *t, tj_dtype out) {
    for (int r = 0; r < 3; r++) {
        tj_attr a[] = {{.s = reductions[r]}};
        tj_tensor *in[] = {x, t};
        check("aten::mse_loss", in, 2, a, 1, out);
        tj_tensor *g = grad_for(reductions[r], tj_sizes(x), tj_ndim(x), tj_tensor_dtype(x));
        tj_tensor *bin[] = {g, x, t};
        check("aten::mse_loss_backward", bin, 3, a, 1, out);
    }
}

static void mse_loss_forms(void **state) {
    (void)state;
    for (int p = 0; p < N_OF(pairs); p++)
        for (int k = 0; k < N_OF(loss_shapes); k++) {
            tt_context("mse_loss %s/%s shape %d", tj_dtype_name(pairs[p][0]),
                       tj_dtype_name(pairs[p][1]), k);
            const int64_t *s = loss_shapes[k].s;
            int nd = loss_shapes[k].nd;
            tj_tensor *x = rnd(s, nd, pairs[p][0], -3, 3), *t = rnd(s, nd, pairs[p][1], -3, 3);
            mse_case(x, t, pairs[p][1] == TJ_F64 ? TJ_F64 : pairs[p][0]);
            if (nd) mse_case(strided(x), strided(t), pairs[p][1] == TJ_F64 ? TJ_F64 : pairs[p][0]);
        }
    int64_t s[2] = {6, 4};
    tj_tensor *x = rnd(s, 2, TJ_F32, -1, 1);
    tj_tensor *tt = tj_transpose(rnd((int64_t[]){4, 6}, 2, TJ_F32, -1, 1), 0, 1);
    mse_case(x, tt, TJ_F32);
    /* a numel-1 grad_output of another rank for the reduced forms */
    tj_tensor *g = rnd((int64_t[]){1, 1}, 2, TJ_F32, -1, 1), *in[] = {g, x, tt};
    tj_attr mean[] = {{.s = "mean"}};
    check("aten::mse_loss_backward", in, 3, mean, 1, TJ_F32);
    for (int d = 0; d < 2; d++) {
        tj_dtype dt = d ? TJ_F64 : TJ_F32;
        tt_context("mse_loss special values %s", tj_dtype_name(dt));
        mse_case(specials(dt, 12), rnd((int64_t[]){12}, 1, dt, -1, 1), dt);
    }
    tt_context(NULL);
}

static void mse_loss_promotes_and_broadcasts(void **state) {
    (void)state;
    int64_t s[2] = {2, 3};
    tj_tensor *f = rnd(s, 2, TJ_F32, -1, 1), *i = rnd(s, 2, TJ_I64, -3, 3);
    tj_tensor *b = rnd(s, 2, TJ_BOOL, 0, 1), *w = rnd((int64_t[]){3, 2}, 2, TJ_F32, -1, 1);
    tj_attr a[] = {{.s = "mean"}};
    /* integer and bool operands promote with a float one; i64 with bool, or sizes that
     * do not broadcast, are refused */
    tj_tensor *row = rnd((int64_t[]){3}, 1, TJ_F64, -1, 1);
    tj_tensor *cases[][2] = {{i, f}, {f, i}, {b, f}, {f, w}, {i, b}, {f, row}, {row, f}};
    for (int k = 0; k < N_OF(cases); k++) check("aten::mse_loss", cases[k], 2, a, 1, TJ_F32);
}

/* ---- nll_loss and cross_entropy_loss ------------------------------------------------------ */

/* Class indices in [0, C) for target sizes s, every third one ignore (when
 * ignore is not a class). */
static tj_tensor *targets(const int64_t *s, int nd, int64_t C, int64_t ignore) {
    tj_tensor *t = rnd(s, nd, TJ_I64, 0, (double)(C - 1));
    int64_t n = tj_numel(t), *p = tj_data(t);
    for (int64_t i = 2; ignore < 0 && i < n; i += 3) p[i] = ignore;
    return t;
}

static const struct {
    int nd;
    int64_t x[4];
} nll_shapes[] = {{2, {5, 4}}, {1, {4}}, {4, {3, 4, 2, 3}}, {2, {0, 4}}, {2, {1, 1}}};

/* target sizes: self's without the class dim */
static int target_sizes(const int64_t *x, int nd, int64_t *t) {
    int n = 0;
    for (int d = 0; d < nd; d++)
        if (d != (nd == 1 ? 0 : 1)) t[n++] = x[d];
    return n;
}

/* nll_loss, nll_loss_backward and cross_entropy_loss for every reduction */
static void nll_case(tj_tensor *x, tj_tensor *t, tj_tensor *w, int64_t ignore) {
    tj_dtype dt = tj_tensor_dtype(x);
    for (int r = 0; r < 3; r++) {
        tj_attr a[] = {{.s = reductions[r]}, {.i = ignore}};
        tj_tensor *in[] = {x, t, w};
        check("aten::nll_loss", in, 3, a, 2, dt);
        tj_tensor *g = grad_for(reductions[r], tj_sizes(t), tj_ndim(t), dt), *bin[] = {g, x, t, w};
        check("aten::nll_loss_backward", bin, 4, a, 2, dt);
        for (int e = 0; e < 2 && have_log_softmax(); e++) { /* without and with label smoothing */
            tj_attr ce[] = {{.s = reductions[r]}, {.i = ignore}, {.f = e ? 0.2 : 0.0}};
            check("aten::cross_entropy_loss", in, 3, ce, 3, dt);
        }
    }
}

static void nll_loss_forms(void **state) {
    (void)state;
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < N_OF(nll_shapes); k++) {
            tj_dtype dt = d ? TJ_F64 : TJ_F32;
            const int64_t *xs = nll_shapes[k].x;
            int nd = nll_shapes[k].nd;
            int64_t C = xs[nd == 1 ? 0 : 1], ts[4];
            int tn = target_sizes(xs, nd, ts);
            tt_context("nll_loss %s shape %d", tj_dtype_name(dt), k);
            tj_tensor *x = rnd(xs, nd, dt, -5, 0);
            tj_tensor *w32 = rnd(&C, 1, TJ_F32, 0.1, 2), *w64 = rnd(&C, 1, TJ_F64, 0.1, 2);
            for (int ig = 0; ig < 2; ig++) { /* ignore_index -100 in the data, or class 1 */
                int64_t ignore = ig ? (C > 1 ? 1 : 0) : -100;
                tj_tensor *t = targets(ts, tn, C, ignore);
                nll_case(x, t, NULL, ignore);
                nll_case(x, t, w32, ignore);
                nll_case(strided(x), tn ? strided(t) : t, strided(w64), ignore);
            }
        }
    /* every target ignored: the mean is 0/0 = NaN on both */
    int64_t xs[2] = {3, 4}, ts[1] = {3};
    tj_tensor *x = rnd(xs, 2, TJ_F32, -5, 0), *t = tj_full(ts, 1, -100, TJ_I64);
    nll_case(x, t, NULL, -100);
    /* class-major self through a transpose */
    tj_tensor *xt = tj_transpose(rnd((int64_t[]){4, 3}, 2, TJ_F64, -5, 0), 0, 1);
    nll_case(xt, targets(ts, 1, 4, -100), rnd((int64_t[]){4}, 1, TJ_F64, 0, 1), -100);
    tt_context(NULL);
}

static void nll_loss_bad_targets(void **state) {
    (void)state;
    int64_t xs[2] = {4, 3}, ts[1] = {4};
    tj_tensor *x = rnd(xs, 2, TJ_F32, -5, 0), *g = rnd(NULL, 0, TJ_F32, -1, 1);
    const int64_t bad[] = {3, -1, -100, 1000};
    for (int k = 0; k < N_OF(bad); k++) {
        tj_tensor *t = targets(ts, 1, 3, -100);
        ((int64_t *)tj_data(t))[k % 4] = bad[k];
        int64_t ignore = bad[k] == -100 ? 0 : -100; /* -100 is bad once it is not ignored */
        for (int r = 0; r < 3; r++) {
            tj_attr a[] = {{.s = reductions[r]}, {.i = ignore}};
            tj_tensor *in[] = {x, t, NULL}, *bin[] = {g, x, t, NULL};
            tt_cuda_check_refused("aten::nll_loss", in, 3, a, 2);
            tj_attr ce[] = {{.s = reductions[r]}, {.i = ignore}, {.f = 0}};
            tt_cuda_check_refused("aten::cross_entropy_loss", in, 3, ce, 3);
            if (r) tt_cuda_check_refused("aten::nll_loss_backward", bin, 4, a, 2);
        }
    }
    /* refused on both: label smoothing, float targets, an f32 weight of the wrong size */
    tj_tensor *t = targets(ts, 1, 3, -100), *tf = rnd(ts, 1, TJ_F32, 0, 2);
    tj_attr ls[] = {{.s = "mean"}, {.i = -100}, {.f = 0.1}}, a[] = {{.s = "mean"}, {.i = -100}};
    tj_tensor *in[] = {x, t, NULL}, *fin[] = {x, tf, NULL};
    tj_tensor *win[] = {x, t, rnd((int64_t[]){4}, 1, TJ_F32, 0, 1)};
    check("aten::cross_entropy_loss", in, 3, ls, 3, TJ_F32);
    check("aten::nll_loss", fin, 3, a, 2, TJ_F32);
    check("aten::nll_loss", win, 3, a, 2, TJ_F32);
    tj_tensor *xi = rnd(xs, 2, TJ_I64, -5, 0), *iin[] = {xi, t, NULL};
    check("aten::nll_loss", iin, 3, a, 2, TJ_F32);
}

/* ---- binary_cross_entropy_with_logits ------------------------------------------------------ */

static void bce_case(tj_tensor *x, tj_tensor *y, tj_tensor *w, tj_tensor *pw) {
    tj_dtype dt = tj_tensor_dtype(x);
    for (int r = 0; r < 3; r++) {
        tj_attr a[] = {{.s = reductions[r]}};
        tj_tensor *in[] = {x, y, w, pw};
        check("aten::binary_cross_entropy_with_logits", in, 4, a, 1, dt);
        tj_tensor *g = grad_for(reductions[r], tj_sizes(x), tj_ndim(x), dt);
        tj_tensor *bin[] = {g, x, y, w, pw};
        check("aten::binary_cross_entropy_with_logits_backward", bin, 5, a, 1, dt);
    }
}

static void bce_forms(void **state) {
    (void)state;
    for (int p = 0; p < N_OF(pairs); p++) {
        tj_dtype xd = pairs[p][0], yd = pairs[p][1];
        int64_t s[2] = {4, 5}, c = 5, col[2] = {4, 1};
        tt_context("bce %s/%s", tj_dtype_name(xd), tj_dtype_name(yd));
        tj_tensor *x = rnd(s, 2, xd, -30, 30), *y = rnd(s, 2, yd, 0, 1);
        tj_tensor *wc = rnd(&c, 1, yd, 0.5, 2), *wcol = rnd(col, 2, TJ_F64, 0.5, 2);
        tj_tensor *wfull = rnd(s, 2, TJ_F32, 0, 2), *pw = rnd(&c, 1, TJ_F32, 0.5, 3);
        bce_case(x, y, NULL, NULL);
        bce_case(x, y, wc, NULL);
        bce_case(x, y, wcol, pw);
        bce_case(strided(x), strided(y), strided(wfull), strided(pw));
        bce_case(x, y, NULL, rnd(NULL, 0, xd, 0.5, 3)); /* a 0-dim pos_weight broadcasts */
    }
    const struct {
        int nd;
        int64_t s[3];
    } shapes[] = {{0, {0}}, {2, {0, 3}}, {3, {3, 1, 4}}, {1, {1}}};
    for (int k = 0; k < N_OF(shapes); k++) {
        tt_context("bce shape %d", k);
        tj_tensor *x = rnd(shapes[k].s, shapes[k].nd, TJ_F64, -4, 4);
        bce_case(x, rnd(shapes[k].s, shapes[k].nd, TJ_F64, 0, 1), NULL, NULL);
    }
    for (int d = 0; d < 2; d++) {
        tj_dtype dt = d ? TJ_F64 : TJ_F32;
        tt_context("bce special values %s", tj_dtype_name(dt));
        int64_t n = 12;
        bce_case(specials(dt, n), rnd(&n, 1, dt, 0, 1), NULL, rnd(&n, 1, dt, 0.5, 2));
    }
    tt_context(NULL);
    /* refused on both: integer self, a weight that does not broadcast */
    int64_t s[2] = {2, 3}, bad = 2;
    tj_tensor *xi = rnd(s, 2, TJ_I64, -2, 2), *y = rnd(s, 2, TJ_F32, 0, 1);
    tj_tensor *x = rnd(s, 2, TJ_F32, -2, 2), *w = rnd(&bad, 1, TJ_F32, 0, 1);
    tj_attr a[] = {{.s = "sum"}};
    tj_tensor *in1[] = {xi, y, NULL, NULL}, *in2[] = {x, y, w, NULL};
    check("aten::binary_cross_entropy_with_logits", in1, 4, a, 1, TJ_F32);
    check("aten::binary_cross_entropy_with_logits", in2, 4, a, 1, TJ_F32);
}

/* ---- large shapes: grid-stride loops and multi-block reductions --------------------------- */

static void losses_large(void **state) {
    (void)state;
    int64_t s[2] = {317, 331}, xs[2] = {2000, 50}, ts[1] = {2000}, C = 50;
    for (int d = 0; d < 2; d++) {
        tj_dtype dt = d ? TJ_F64 : TJ_F32;
        tt_context("large losses %s", tj_dtype_name(dt));
        tj_tensor *x = rnd(s, 2, dt, -3, 3);
        mse_case(x, rnd(s, 2, dt, -3, 3), dt);
        bce_case(x, rnd(s, 2, dt, 0, 1), rnd((int64_t[]){331}, 1, dt, 0.5, 2), NULL);
        nll_case(rnd(xs, 2, dt, -6, 0), targets(ts, 1, C, -100), rnd(&C, 1, dt, 0.1, 1), -100);
    }
    tt_context(NULL);
}

int main(void) {
    gen = tj_generator_new(20251);
    if (tj_cuda_is_available() && !have_log_softmax())
        printf("test_cuda_nn: cross_entropy_loss's values not compared: log_softmax has no CUDA "
               "kernel in this build (its target checks are)\n");
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(mse_loss_forms),       TT_SCOPED_TEST(mse_loss_promotes_and_broadcasts),
        TT_SCOPED_TEST(nll_loss_forms),       TT_SCOPED_TEST(nll_loss_bad_targets),
        TT_SCOPED_TEST(bce_forms),            TT_SCOPED_TEST(losses_large),
    };
    int rc = TT_CUDA_RUN(tests);
    tj_generator_free(gen);
    return rc;
}
