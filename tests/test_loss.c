/* test_loss.c — mse_loss, nll_loss, cross_entropy_loss (with label smoothing) and
 * binary_cross_entropy_with_logits with every reduction against plain
 * double-precision references (shapes in the case tables), known values,
 * finite-difference checks of the backward ops, and error messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nn_cases.h"

static const char *const covered[] = {TT_NN_LOSS_OPS};
static const char *const reductions[3] = {"none", "mean", "sum"};
static tj_generator *gen;

#define OWN(t) tt_nn_own(t)

static void ops_exist(void **state) {
    (void)state;
    tt_nn_assert_ops_exist(covered, (int)(sizeof covered / sizeof *covered));
}

/* per-element losses reduced like PyTorch: none keeps them (sizes), mean
 * divides by denom */
static tt_ref reduce(const double *terms, int64_t n, const int64_t *sizes, int nd, int red,
                     double denom) {
    if (red == 0) {
        tt_ref r = tt_ref_new(sizes, nd);
        memcpy(r.v, terms, sizeof(double) * (size_t)n);
        return r;
    }
    tt_ref r = tt_ref_new(NULL, 0);
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += terms[i];
    r.v[0] = red == 1 ? s / denom : s;
    return r;
}

static tj_tensor *random_input(const int64_t *sizes, int nd, tj_dtype dt, bool noncontig,
                               double lo, double hi) {
    tj_tensor *t = OWN(tt_random(gen, sizes, nd, dt, lo, hi));
    return noncontig ? OWN(tt_noncontiguous(gen, t)) : t;
}

/* ---- mse_loss ----------------------------------------------------------------------- */

static void mse_loss_matches_reference(void **state) {
    (void)state;
    static const struct { int nd; int64_t sizes[3]; bool noncontig; tj_dtype dt; } cases[] = {
        {2, {3, 4}, false, TJ_F64}, {3, {2, 3, 5}, true, TJ_F32}, {1, {1}, false, TJ_F32},
        {2, {300, 200}, false, TJ_F32}, /* threads, blocked sums */
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tj_tensor *x = random_input(cases[k].sizes, cases[k].nd, cases[k].dt, cases[k].noncontig,
                                    -2, 2);
        tj_tensor *t = random_input(cases[k].sizes, cases[k].nd, cases[k].dt, false, -2, 2);
        tt_ref rx = tt_ref_of(x), rt = tt_ref_of(t);
        double *terms = malloc(sizeof(double) * (size_t)rx.numel);
        for (int64_t i = 0; i < rx.numel; i++) terms[i] = (rx.v[i] - rt.v[i]) * (rx.v[i] - rt.v[i]);
        for (int red = 0; red < 3; red++) {
            tt_ref want = reduce(terms, rx.numel, rx.sizes, rx.ndim, red, (double)rx.numel);
            tt_assert_close_ref(OWN(tj_mse_loss(x, t, reductions[red])), &want, 1e-5, 1e-6);
            tt_ref_free(&want);
        }
        free(terms);
        tt_ref_free(&rx), tt_ref_free(&rt);
    }
    int64_t three = 3;
    tj_tensor *a = OWN(tj_from_array((double[]){1, 2, 3}, &three, 1, TJ_F64));
    tj_tensor *z = OWN(tj_zeros(&three, 1, TJ_F64));
    tt_assert_values(OWN(tj_mse_loss(a, z, "sum")), ((double[]){14}), 1, 1e-12);
    tt_assert_values(OWN(tj_mse_loss(a, z, "mean")), ((double[]){14.0 / 3}), 1, 1e-12);
    tt_nn_free_all();
}

/* ---- nll_loss and cross_entropy_loss ------------------------------------------------ */

/* self [N, C, S] (1-D self: N = S = 1) of log-probabilities -> per-target
 * terms and the summed weights of the targets not ignored */
static double *ref_nll_terms(const tt_ref *x, const int64_t *t, const double *w, int64_t ignore,
                             double *total) {
    int64_t N = x->ndim == 1 ? 1 : x->sizes[0], C = x->sizes[x->ndim == 1 ? 0 : 1];
    int64_t S = x->numel / (N * C);
    double *terms = malloc(sizeof(double) * (size_t)(N * S + 1));
    *total = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
            int64_t k = t[n * S + s];
            double wk = k == ignore ? 0 : w ? w[k] : 1;
            terms[n * S + s] = k == ignore ? 0 : -wk * x->v[(n * C + k) * S + s];
            *total += wk;
        }
    return terms;
}

/* The label-smoothing terms of cross_entropy_loss per target: 0 where
 * ignored, else -sum_c w_c x[n, c, s] (PyTorch's smooth_loss). */
static double *ref_smooth_terms(const tt_ref *x, const int64_t *t, const double *w, int64_t ignore) {
    int64_t N = x->ndim == 1 ? 1 : x->sizes[0], C = x->sizes[x->ndim == 1 ? 0 : 1];
    int64_t S = x->numel / (N * C);
    double *terms = malloc(sizeof(double) * (size_t)(N * S + 1));
    for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
            double sum = 0;
            for (int64_t c = 0; c < C; c++) sum -= (w ? w[c] : 1) * x->v[(n * C + c) * S + s];
            terms[n * S + s] = t[n * S + s] == ignore ? 0 : sum;
        }
    return terms;
}

typedef struct nll_case {
    int nd;
    int64_t sizes[4];
    bool weighted, noncontig;
    int64_t ignore;
    tj_dtype dt;
} nll_case;

static const nll_case nll_cases[] = {
    {2, {5, 4}, true, false, 2, TJ_F32},         /* [N, C], ignore a real class */
    {4, {3, 4, 2, 3}, false, true, -100, TJ_F64}, /* [N, C, d1, d2] */
    {1, {6}, true, false, -100, TJ_F64},          /* [C] with a 0-dim target */
    {2, {1, 3}, false, false, -100, TJ_F32},      /* batch size 1 */
    {2, {40000, 3}, true, false, -100, TJ_F32},   /* threads */
};

/* Random targets in [0, C) with about one in five set to ignore_index. */
static tj_tensor *random_targets(const nll_case *cs, int64_t **values) {
    int nt = 0;
    int64_t ts[4], C = cs->sizes[cs->nd == 1 ? 0 : 1];
    for (int d = 0; d < cs->nd; d++)
        if (d != (cs->nd == 1 ? 0 : 1)) ts[nt++] = cs->sizes[d];
    tj_tensor *t = OWN(tt_random(gen, ts, nt, TJ_I64, 0, (double)C - 1));
    tj_tensor *u = OWN(tt_random(gen, ts, nt, TJ_F64, 0, 1));
    int64_t *tv = tj_data(t);
    const double *uv = tj_data(u);
    for (int64_t i = 0; i < tj_numel(t); i++)
        if (uv[i] < 0.2) tv[i] = cs->ignore;
    *values = tv;
    return t;
}

static void nll_and_cross_entropy_match_reference(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof nll_cases / sizeof *nll_cases; k++) {
        const nll_case *cs = &nll_cases[k];
        int64_t C = cs->sizes[cs->nd == 1 ? 0 : 1], *tv;
        tj_tensor *logits = random_input(cs->sizes, cs->nd, cs->dt, cs->noncontig, -3, 3);
        tj_tensor *x = OWN(tj_log_softmax(logits, cs->nd == 1 ? 0 : 1));
        tj_tensor *t = random_targets(cs, &tv);
        tj_tensor *w = cs->weighted ? random_input(&C, 1, cs->dt, false, 0.5, 2) : NULL;
        tt_ref rx = tt_ref_of(x), rw = w ? tt_ref_of(w) : (tt_ref){0};
        double total;
        double *terms = ref_nll_terms(&rx, tv, w ? rw.v : NULL, cs->ignore, &total);
        double *smooth_terms = ref_smooth_terms(&rx, tv, w ? rw.v : NULL, cs->ignore);
        for (int red = 0; red < 3; red++) {
            tt_ref want = reduce(terms, tj_numel(t), tj_sizes(t), tj_ndim(t), red, total);
            tt_assert_close_ref(OWN(tj_nll_loss(x, t, w, reductions[red], cs->ignore)), &want,
                                1e-5, 1e-5);
            tt_assert_close_ref(OWN(tj_cross_entropy_loss(logits, t, w, reductions[red],
                                                          cs->ignore, 0.0)),
                                &want, 1e-5, 1e-5);
            /* label smoothing e: (1 - e) nll + e / C smooth, reduced alike */
            const double e = 0.3;
            tt_ref smooth = reduce(smooth_terms, tj_numel(t), tj_sizes(t), tj_ndim(t), red, total);
            for (int64_t i = 0; i < want.numel; i++)
                smooth.v[i] = (1 - e) * want.v[i] + e / (double)C * smooth.v[i];
            tt_assert_close_ref(OWN(tj_cross_entropy_loss(logits, t, w, reductions[red],
                                                          cs->ignore, e)),
                                &smooth, 1e-5, 1e-5);
            tt_ref_free(&smooth);
            tt_ref_free(&want);
        }
        free(terms);
        free(smooth_terms);
        tt_ref_free(&rx);
        if (w) tt_ref_free(&rw);
    }
    tt_nn_free_all();
}

static void losses_have_known_values(void **state) {
    (void)state;
    /* nll of a uniform distribution, and cross entropy of equal logits, is log(C) */
    int64_t xs[2] = {4, 7}, N = 4;
    tj_tensor *uniform = OWN(tj_full(xs, 2, -log(7.0), TJ_F64));
    tj_tensor *t = OWN(tt_nn_ints((int64_t[]){0, 6, 3, 3}, &N, 1));
    tt_assert_values(OWN(tj_nll_loss(uniform, t, NULL, "mean", -100)), ((double[]){log(7.0)}), 1,
                     1e-12);
    tt_assert_values(OWN(tj_nll_loss(uniform, t, NULL, "sum", -100)), ((double[]){4 * log(7.0)}),
                     1, 1e-12);
    tj_tensor *zeros = OWN(tj_zeros(xs, 2, TJ_F32));
    tt_assert_values(OWN(tj_cross_entropy_loss(zeros, t, NULL, "mean", -100, 0.0)),
                     ((double[]){log(7.0)}), 1, 1e-6);
    /* a weighted mean divides by the weights of the targets: (2*1 + 3*4) / (2 + 3) */
    int64_t s22[2] = {2, 2}, two = 2;
    tj_tensor *lp = OWN(tj_from_array((double[]){-1, -2, -3, -4}, s22, 2, TJ_F64));
    tj_tensor *w = OWN(tj_from_array((double[]){2, 3}, &two, 1, TJ_F64));
    tj_tensor *t01 = OWN(tt_nn_ints((int64_t[]){0, 1}, &two, 1));
    tt_assert_values(OWN(tj_nll_loss(lp, t01, w, "mean", -100)), ((double[]){14.0 / 5}), 1, 1e-12);
    /* ignore_index 0 leaves target 1 alone: 3*4 / 3 */
    tt_assert_values(OWN(tj_nll_loss(lp, t01, w, "mean", 0)), ((double[]){4}), 1, 1e-12);
    /* every target ignored: the mean is 0/0, the sum 0 */
    tj_tensor *tig = OWN(tt_nn_ints((int64_t[]){-100, -100}, &two, 1));
    tt_assert_values(OWN(tj_nll_loss(lp, tig, w, "mean", -100)), ((double[]){NAN}), 1, 0);
    tt_assert_values(OWN(tj_nll_loss(lp, tig, w, "sum", -100)), ((double[]){0}), 1, 0);
    /* binary cross entropy with logits: log 2 at 0, finite at +-1000 */
    int64_t four = 4;
    tj_tensor *bx = OWN(tj_from_array((double[]){0, 1000, -1000, 1000}, &four, 1, TJ_F64));
    tj_tensor *by = OWN(tj_from_array((double[]){0.3, 1, 1, 0}, &four, 1, TJ_F64));
    tt_assert_values(OWN(tj_binary_cross_entropy_with_logits(bx, by, NULL, NULL, "none")),
                     ((double[]){log(2.0), 0, 1000, 1000}), 4, 1e-12);
    tt_nn_free_all();
}

/* ---- binary_cross_entropy_with_logits ----------------------------------------------- */

static void bce_with_logits_matches_reference(void **state) {
    (void)state;
    int64_t xs[3] = {2, 3, 4}, C = 4, ws[2] = {3, 1};
    for (int variant = 0; variant < 4; variant++) { /* plain, weight, pos_weight, both */
        tj_dtype dt = variant % 2 ? TJ_F32 : TJ_F64;
        tj_tensor *x = random_input(xs, 3, dt, variant == 3, -4, 4);
        tj_tensor *y = random_input(xs, 3, dt, false, 0, 1);
        tj_tensor *w = variant & 1 ? random_input(ws, 2, dt, false, 0.5, 2) : NULL;
        tj_tensor *pw = variant & 2 ? random_input(&C, 1, dt, false, 0.5, 3) : NULL;
        tt_ref rx = tt_ref_of(x), ry = tt_ref_of(y);
        tt_ref rw = w ? tt_ref_of(w) : (tt_ref){0}, rp = pw ? tt_ref_of(pw) : (tt_ref){0};
        double terms[24];
        for (int64_t i = 0; i < 24; i++) {
            double xv = rx.v[i], yv = ry.v[i];
            double wv = w ? rw.v[(i / 4) % 3] : 1, pv = pw ? rp.v[i % 4] : 1;
            /* -w [pw y log(sigmoid(x)) + (1 - y) log(1 - sigmoid(x))] */
            double ls = -log1p(exp(-xv)), l1s = -xv - log1p(exp(-xv));
            terms[i] = -wv * (pv * yv * ls + (1 - yv) * l1s);
        }
        for (int red = 0; red < 3; red++) {
            tt_ref want = reduce(terms, 24, xs, 3, red, 24);
            tt_assert_close_ref(OWN(tj_binary_cross_entropy_with_logits(x, y, w, pw,
                                                                        reductions[red])),
                                &want, 1e-5, 1e-5);
            tt_ref_free(&want);
        }
        tt_ref_free(&rx), tt_ref_free(&ry);
        if (w) tt_ref_free(&rw);
        if (pw) tt_ref_free(&rp);
    }
    tt_nn_free_all();
}

/* ---- backward ops against finite differences (f64) ---------------------------------- */

typedef struct loss_ctx {
    tj_tensor *target, *weight, *pos_weight;
    const char *reduction;
    int64_t ignore;
} loss_ctx;

static tj_tensor *mse_fwd(tj_tensor *const *in, const void *v) {
    const loss_ctx *c = v;
    return tj_mse_loss(in[0], c->target, c->reduction);
}
static tj_tensor *nll_fwd(tj_tensor *const *in, const void *v) {
    const loss_ctx *c = v;
    return tj_nll_loss(in[0], c->target, c->weight, c->reduction, c->ignore);
}
static tj_tensor *ce_fwd(tj_tensor *const *in, const void *v) {
    const loss_ctx *c = v;
    return tj_cross_entropy_loss(in[0], c->target, c->weight, c->reduction, c->ignore, 0.0);
}
static tj_tensor *bce_fwd(tj_tensor *const *in, const void *v) {
    const loss_ctx *c = v;
    return tj_binary_cross_entropy_with_logits(in[0], c->target, c->weight, c->pos_weight,
                                               c->reduction);
}

/* grad_output: self's or target's sizes for none, else 0-dim */
static tj_tensor *grad_output(int red, const tj_tensor *like) {
    return red ? OWN(tt_nn_randd(gen, NULL, 0, 0.5, 2))
               : OWN(tt_nn_randd(gen, tj_sizes(like), tj_ndim(like), -1, 1));
}

static void loss_backward_matches_finite_differences(void **state) {
    (void)state;
    int64_t xs[3] = {4, 3, 2}, ts[2] = {4, 2}, C = 3, bs[2] = {3, 2};
    for (int red = 0; red < 3; red++) {
        loss_ctx c = {.reduction = reductions[red], .ignore = 1};
        tj_tensor *in[1] = {OWN(tt_nn_randd(gen, xs, 3, -2, 2))};
        /* mse */
        c.target = OWN(tt_nn_randd(gen, xs, 3, -2, 2));
        tj_tensor *g = grad_output(red, in[0]);
        tt_nn_check_grad(mse_fwd, &c, in, 0, g,
                         OWN(tj_mse_loss_backward(g, in[0], c.target, c.reduction)), 1e-6);
        /* nll over [N, C, d] with weights and an ignored class */
        c.target = OWN(tt_random(gen, ts, 2, TJ_I64, 0, 2));
        c.weight = OWN(tt_nn_randd(gen, &C, 1, 0.5, 2));
        g = grad_output(red, c.target);
        tt_nn_check_grad(nll_fwd, &c, in, 0, g,
                         OWN(tj_nll_loss_backward(g, in[0], c.target, c.weight, c.reduction, 1)),
                         1e-6);
        /* cross entropy: its decomposition's backward, nll then log_softmax */
        tj_tensor *lp = OWN(tj_log_softmax(in[0], 1));
        tj_tensor *gl = OWN(tj_nll_loss_backward(g, lp, c.target, c.weight, c.reduction, 1));
        tt_nn_check_grad(ce_fwd, &c, in, 0, g,
                         OWN(tj_log_softmax_backward_data(gl, lp, 1, TJ_F64)), 1e-6);
        /* bce with weight [3, 2] and pos_weight [2] broadcast to [4, 3, 2] */
        c.target = OWN(tt_nn_randd(gen, xs, 3, 0, 1));
        c.weight = OWN(tt_nn_randd(gen, bs, 2, 0.5, 2));
        c.pos_weight = OWN(tt_nn_randd(gen, &bs[1], 1, 0.5, 3));
        g = grad_output(red, in[0]);
        tt_nn_check_grad(bce_fwd, &c, in, 0, g,
                         OWN(tj_binary_cross_entropy_with_logits_backward(
                             g, in[0], c.target, c.weight, c.pos_weight, c.reduction)),
                         1e-6);
    }
    tt_nn_free_all();
}

/* ---- errors ------------------------------------------------------------------------- */

static void expect_error(tj_tensor *t, tj_status st, const char *needle) {
    assert_null(t);
    assert_int_equal(tj_last_status(), st);
    tt_assert_error(needle);
    tj_clear_error();
}

static void bad_arguments_are_clear_errors(void **state) {
    (void)state;
    int64_t xs[2] = {4, 5}, N = 4, three = 3, s23[2] = {2, 3}, bs[2] = {2, 4};
    tj_tensor *x = OWN(tt_random(gen, xs, 2, TJ_F32, -1, 1));
    tj_tensor *t = OWN(tt_nn_ints((int64_t[]){0, 4, 7, 1}, &N, 1));
    tj_tensor *ok = OWN(tt_nn_ints((int64_t[]){0, 4, 2, 1}, &N, 1));
    tj_tensor *tf = OWN(tj_zeros(&N, 1, TJ_F32)), *w4 = OWN(tj_ones(&N, 1, TJ_F32));
    expect_error(tj_nll_loss(x, tf, NULL, "mean", -100), TJ_ERR_DTYPE,
                 "aten::nll_loss: argument 'target' must be an i64 tensor of indices, got f32");
    expect_error(tj_nll_loss(x, t, NULL, "mean", -100), TJ_ERR_ARG,
                 "aten::nll_loss: target 7 is out of bounds for 5 classes (target element 2");
    expect_error(tj_cross_entropy_loss(x, t, NULL, "sum", -100, 0.0), TJ_ERR_ARG,
                 "aten::cross_entropy_loss: target 7 is out of bounds for 5 classes");
    expect_error(tj_nll_loss(x, OWN(tj_zeros(&three, 1, TJ_I64)), NULL, "mean", -100),
                 TJ_ERR_SHAPE, "aten::nll_loss: argument 'target' must have sizes [4] to match "
                 "'self' of sizes [4, 5] (classes in dim 1), got [3]");
    expect_error(tj_nll_loss(x, ok, w4, "mean", -100), TJ_ERR_SHAPE,
                 "aten::nll_loss: argument 'weight' must have sizes [5] (one per class), got [4]");
    expect_error(tj_nll_loss(x, ok, NULL, "avg", -100), TJ_ERR_ARG,
                 "argument 'reduction' must be one of none|mean|sum; got 'avg'");
    expect_error(tj_cross_entropy_loss(x, ok, NULL, "mean", -100, 1.5), TJ_ERR_ARG,
                 "aten::cross_entropy_loss: label_smoothing must be between 0.0 and 1.0; got 1.5");
    expect_error(tj_mse_loss(x, OWN(tj_zeros(&three, 1, TJ_F32)), "mean"), TJ_ERR_SHAPE,
                 "aten::mse_loss: cannot broadcast sizes [4, 5] and [3]");
    expect_error(tj_mse_loss(OWN(tj_zeros(&three, 1, TJ_I64)), OWN(tj_zeros(&three, 1, TJ_BOOL)), "mean"),
                 TJ_ERR_DTYPE, "aten::mse_loss: 'self' (i64) and 'target' (bool) promote to i64");
    tj_tensor *bx = OWN(tj_zeros(bs, 2, TJ_F32));
    expect_error(tj_binary_cross_entropy_with_logits(bx, bx, NULL, OWN(tj_ones(&three, 1,
                                                     TJ_F32)), "mean"),
                 TJ_ERR_SHAPE, "argument 'pos_weight' of sizes [3] does not broadcast to the "
                 "sizes of 'self' [2, 4]");
    expect_error(tj_mse_loss_backward(OWN(tj_zeros(s23, 2, TJ_F32)), x, x, "none"),
                 TJ_ERR_SHAPE,
                 "aten::mse_loss_backward: argument 'grad_output' must have sizes [4, 5], got "
                 "[2, 3]");
    expect_error(tj_nll_loss_backward(OWN(tj_zeros(s23, 2, TJ_F32)), x, ok, NULL, "mean", -100),
                 TJ_ERR_SHAPE, "argument 'grad_output' must have sizes [], got [2, 3]");
    tt_nn_free_all();
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(7);
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
        cmocka_unit_test(mse_loss_matches_reference),
        cmocka_unit_test(nll_and_cross_entropy_match_reference),
        cmocka_unit_test(losses_have_known_values),
        cmocka_unit_test(bce_with_logits_matches_reference),
        cmocka_unit_test(loss_backward_matches_finite_differences),
        cmocka_unit_test(bad_arguments_are_clear_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
