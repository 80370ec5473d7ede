/* test_norm.c — batch, layer and group norm and their backward ops: each
 * case against a plain double-precision reference (shapes in the case
 * tables), running-stat updates, finite-difference checks of the backward
 * ops in f64, and the error messages for mismatched arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nn_cases.h"

static const char *const covered[] = {TT_NN_NORM_OPS};
static tj_generator *gen;

#define OWN(t) tt_nn_own(t)
#define EPS 1e-5

static void ops_exist(void **state) {
    (void)state;
    tt_nn_assert_ops_exist(covered, (int)(sizeof covered / sizeof *covered));
    /* the running stats are written in place, and the schemas say so */
    const char *mutating[2] = {"aten::batch_norm", "aten::native_batch_norm"};
    for (int i = 0; i < 2; i++) {
        const tj_schema *s = tj_op_schema(tj_op_find(mutating[i]));
        assert_true(s->mutates_inputs && !s->mutates_self);
        assert_true(s->args[3].mutated && s->args[4].mutated && !s->args[0].mutated);
        assert_int_equal(s->args[3].type, TJ_ARG_TENSOR_OPT);
    }
    const tj_schema *s = tj_op_schema(tj_op_find("tjit::batch_norm_stats"));
    assert_true(s->mutates_inputs && !s->mutates_self);
    assert_true(s->args[3].mutated && s->args[4].mutated && !s->args[0].mutated);
}

static double rtol_of(tj_dtype dt) { return dt == TJ_F32 ? 1e-4 : 1e-10; }

/* A random input, laid out non-contiguously when asked. */
static tj_tensor *input(const int64_t *sizes, int nd, tj_dtype dt, bool noncontig, double lo,
                        double hi) {
    tj_tensor *t = OWN(tt_random(gen, sizes, nd, dt, lo, hi));
    return noncontig ? OWN(tt_noncontiguous(gen, t)) : t;
}

static double *values(const tj_tensor *t, int64_t n, double fill) {
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    tt_ref r = t ? tt_ref_of(t) : (tt_ref){0};
    for (int64_t i = 0; i < n; i++) v[i] = t ? r.v[i] : fill;
    if (t) tt_ref_free(&r);
    return v;
}

static void assert_vec(const tj_tensor *t, const double *want, int64_t n, double rtol) {
    tt_ref r = tt_ref_new(&n, 1);
    memcpy(r.v, want, sizeof(double) * (size_t)n);
    r.ndim = tj_ndim(t); /* compare by values; sizes checked by the callers */
    memcpy(r.sizes, tj_sizes(t), sizeof(int64_t) * (size_t)r.ndim);
    tt_assert_close_ref(t, &r, rtol, rtol);
    tt_ref_free(&r);
}

/* ---- batch norm --------------------------------------------------------------------- */

/* x [N, C, S] row-major -> y; mean and invstd [C] are the statistics used;
 * rm, rv [C] are updated in training (when not NULL). */
static void ref_batch_norm(const tt_ref *x, const double *w, const double *b, double *rm,
                           double *rv, bool training, double mom, tt_ref *y, double *mean,
                           double *invstd) {
    int64_t N = x->sizes[0], C = x->sizes[1], S = x->numel / (N * C), M = N * S;
    for (int64_t c = 0; c < C; c++) {
        double m = 0, v = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++) m += x->v[(n * C + c) * S + s];
        m /= (double)M;
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++) {
                double d = x->v[(n * C + c) * S + s] - m;
                v += d * d;
            }
        v /= (double)M;
        if (training) {
            if (rm) {
                rm[c] = (1 - mom) * rm[c] + mom * m;
                rv[c] = (1 - mom) * rv[c] + mom * v * (double)M / (double)(M - 1);
            }
        } else {
            m = rm[c];
            v = rv[c];
        }
        mean[c] = m;
        invstd[c] = 1 / sqrt(v + EPS);
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (n * C + c) * S + s;
                y->v[i] = (x->v[i] - m) * invstd[c] * w[c] + b[c];
            }
    }
}

typedef struct bn_case {
    int nd;
    int64_t sizes[4];
    bool affine, stats, training, noncontig;
    tj_dtype dt;
} bn_case;

static const bn_case bn_cases[] = {
    {3, {4, 3, 5}, true, true, true, false, TJ_F64},    /* [N, C, L] */
    {3, {4, 3, 5}, true, true, true, true, TJ_F32},     /* non-contiguous */
    {2, {6, 4}, false, true, true, false, TJ_F32},      /* [N, C], no affine */
    {4, {2, 3, 4, 5}, true, false, true, true, TJ_F64}, /* no running stats */
    {3, {1, 3, 7}, true, true, true, false, TJ_F32},    /* batch size 1 */
    {4, {2, 3, 4, 5}, true, true, false, true, TJ_F32}, /* eval */
    {2, {1, 5}, true, true, false, false, TJ_F64},      /* eval, batch 1 */
    {4, {8, 16, 16, 16}, true, true, true, false, TJ_F32}, /* big enough for threads */
};

static void batch_norm_matches_reference(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof bn_cases / sizeof *bn_cases; k++) {
        const bn_case *cs = &bn_cases[k];
        int64_t C = cs->sizes[1];
        tj_tensor *x = input(cs->sizes, cs->nd, cs->dt, cs->noncontig, -2, 3);
        tj_tensor *w = cs->affine ? input(&C, 1, cs->dt, false, 0.5, 2) : NULL;
        tj_tensor *b = cs->affine ? input(&C, 1, cs->dt, false, -1, 1) : NULL;
        tj_tensor *rm = cs->stats ? input(&C, 1, cs->dt, false, -1, 1) : NULL;
        tj_tensor *rv = cs->stats ? input(&C, 1, cs->dt, false, 0.5, 2) : NULL;
        tj_tensor *rm2 = rm ? OWN(tj_clone(rm)) : NULL, *rv2 = rv ? OWN(tj_clone(rv)) : NULL;
        tj_tensor *rm3 = rm ? OWN(tj_clone(rm)) : NULL, *rv3 = rv ? OWN(tj_clone(rv)) : NULL;
        tt_ref rx = tt_ref_of(x), ry = tt_ref_new(cs->sizes, cs->nd);
        double *wv = values(w, C, 1), *bv = values(b, C, 0);
        double *rmv = values(rm, C, 0), *rvv = values(rv, C, 1), mean[16], invstd[16];
        ref_batch_norm(&rx, wv, bv, rm ? rmv : NULL, rm ? rvv : NULL, cs->training, 0.1, &ry,
                       mean, invstd);
        tj_tensor *out[3];
        int n = tj_native_batch_norm(x, w, b, rm, rv, cs->training, 0.1, EPS, out, 3);
        tt_nn_own_outputs(out, n, 3);
        double rt = rtol_of(cs->dt);
        tt_assert_close_ref(out[0], &ry, rt, rt);
        if (cs->training) {
            tt_assert_sizes(out[1], &C, 1);
            assert_vec(out[1], mean, C, rt);
            assert_vec(out[2], invstd, C, rt);
        } else { /* eval: empty save_mean and save_invstd, as PyTorch's */
            int64_t none = 0;
            tt_assert_sizes(out[1], &none, 1);
            tt_assert_sizes(out[2], &none, 1);
        }
        if (rm) { /* updated in place (training) or untouched (eval) */
            assert_vec(rm, rmv, C, rt);
            assert_vec(rv, rvv, C, rt);
        }
        /* the composite computes the same, and updates its own stats the same */
        tj_tensor *y2 = OWN(tj_batch_norm(x, w, b, rm2, rv2, cs->training, 0.1, EPS));
        tt_assert_close_ref(y2, &ry, rt, rt);
        if (rm2) assert_vec(rm2, rmv, C, rt);
        if (cs->training) { /* the statistics alone: the same values, the same update */
            tj_tensor *st[4];
            int ns = tj_batch_norm_stats(x, w, b, rm3, rv3, 0.1, EPS, st, 4);
            tt_nn_own_outputs(st, ns, 4);
            for (int k = 0; k < 4; k++) tt_assert_sizes(st[k], &C, 1);
            assert_vec(st[0], mean, C, rt);
            assert_vec(st[1], invstd, C, rt);
            double scale[16], shift[16];
            for (int64_t ch = 0; ch < C; ch++) {
                scale[ch] = wv[ch] * invstd[ch];
                shift[ch] = bv[ch] - mean[ch] * scale[ch];
            }
            assert_vec(st[2], scale, C, rt);
            assert_vec(st[3], shift, C, rt);
            if (rm3) assert_vec(rm3, rmv, C, rt), assert_vec(rv3, rvv, C, rt);
            /* x * scale + shift per channel: batch_norm's bits */
            int64_t col[TJ_MAX_DIMS] = {C};
            for (int d = 1; d < cs->nd - 1; d++) col[d] = 1;
            tj_tensor *y3 = OWN(tj_add(OWN(tj_mul(x, OWN(tj_reshape(st[2], col, cs->nd - 1)))),
                                       OWN(tj_reshape(st[3], col, cs->nd - 1)), 1.0));
            assert_non_null(y3);
            assert_memory_equal(tj_data(y3), tj_data(out[0]),
                                (size_t)tj_numel(y3) * (cs->dt == TJ_F32 ? 4 : 8));
        }
        tt_ref_free(&rx), tt_ref_free(&ry);
        free(wv), free(bv), free(rmv), free(rvv);
    }
    tt_nn_free_all();
}

/* running stats after two steps with momentum 0.5, by hand:
 * x = [[1], [3]] (N=2, C=1): mean 2, biased var 1, unbiased 2. */
static void batch_norm_running_stats_known_values(void **state) {
    (void)state;
    int64_t xs[2] = {2, 1}, one = 1;
    tj_tensor *x = OWN(tj_from_array((double[]){1, 3}, xs, 2, TJ_F64));
    tj_tensor *rm = OWN(tj_zeros(&one, 1, TJ_F64)), *rv = OWN(tj_ones(&one, 1, TJ_F64));
    tj_tensor *y = OWN(tj_batch_norm(x, NULL, NULL, rm, rv, true, 0.5, 0));
    tt_assert_values(y, ((double[]){-1, 1}), 2, 1e-12);
    tt_assert_values(rm, ((double[]){1}), 1, 1e-12);   /* 0.5 * 0 + 0.5 * 2 */
    tt_assert_values(rv, ((double[]){1.5}), 1, 1e-12); /* 0.5 * 1 + 0.5 * 2 */
    y = OWN(tj_batch_norm(x, NULL, NULL, rm, rv, true, 0.5, 0));
    tt_assert_values(rm, ((double[]){1.5}), 1, 1e-12);
    tt_assert_values(rv, ((double[]){1.75}), 1, 1e-12);
    /* eval uses them: (x - 1.5) / sqrt(1.75) */
    y = OWN(tj_batch_norm(x, NULL, NULL, rm, rv, false, 0.5, 0));
    tt_assert_values(y, ((double[]){-0.5 / sqrt(1.75), 1.5 / sqrt(1.75)}), 2, 1e-12);
    tt_nn_free_all();
}

/* ---- layer norm --------------------------------------------------------------------- */

typedef struct ln_case {
    int nd;
    int64_t sizes[4];
    int nn;
    int64_t ns[3];
    bool affine, noncontig;
    tj_dtype dt;
} ln_case;

static const ln_case ln_cases[] = {
    {3, {2, 3, 5}, 1, {5}, true, false, TJ_F64},    /* normalise the last dim */
    {3, {2, 3, 5}, 2, {3, 5}, true, true, TJ_F32},  /* the last two, non-contiguous */
    {2, {1, 8}, 1, {8}, false, false, TJ_F32},      /* batch 1, no affine */
    {1, {6}, 1, {6}, true, false, TJ_F64},          /* the whole tensor */
    {2, {64, 1024}, 1, {1024}, true, false, TJ_F32}, /* threads */
};

static void layer_norm_matches_reference(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof ln_cases / sizeof *ln_cases; k++) {
        const ln_case *cs = &ln_cases[k];
        tj_tensor *x = input(cs->sizes, cs->nd, cs->dt, cs->noncontig, -2, 3);
        tj_tensor *w = cs->affine ? input(cs->ns, cs->nn, cs->dt, false, 0.5, 2) : NULL;
        tj_tensor *b = cs->affine ? input(cs->ns, cs->nn, cs->dt, false, -1, 1) : NULL;
        int64_t L = 1, stat[4];
        for (int d = 0; d < cs->nn; d++) L *= cs->ns[d];
        for (int d = 0; d < cs->nd; d++) stat[d] = d < cs->nd - cs->nn ? cs->sizes[d] : 1;
        tt_ref rx = tt_ref_of(x), ry = tt_ref_new(cs->sizes, cs->nd);
        int64_t M = rx.numel / L;
        double *wv = values(w, L, 1), *bv = values(b, L, 0), *mean = values(NULL, M, 0);
        double *rstd = values(NULL, M, 0);
        for (int64_t i = 0; i < M; i++) {
            double m = 0, v = 0;
            for (int64_t j = 0; j < L; j++) m += rx.v[i * L + j];
            m /= (double)L;
            for (int64_t j = 0; j < L; j++) v += (rx.v[i * L + j] - m) * (rx.v[i * L + j] - m);
            mean[i] = m;
            rstd[i] = 1 / sqrt(v / (double)L + EPS);
            for (int64_t j = 0; j < L; j++)
                ry.v[i * L + j] = (rx.v[i * L + j] - m) * rstd[i] * wv[j] + bv[j];
        }
        tj_tensor *out[3];
        int n = tj_native_layer_norm(x, cs->ns, cs->nn, w, b, EPS, out, 3);
        tt_nn_own_outputs(out, n, 3);
        double rt = rtol_of(cs->dt);
        tt_assert_close_ref(out[0], &ry, rt, rt);
        tt_assert_sizes(out[1], stat, cs->nd);
        tt_assert_sizes(out[2], stat, cs->nd);
        assert_vec(out[1], mean, M, rt);
        assert_vec(out[2], rstd, M, rt);
        tt_assert_close_ref(OWN(tj_layer_norm(x, cs->ns, cs->nn, w, b, EPS)), &ry, rt, rt);
        tt_ref_free(&rx), tt_ref_free(&ry);
        free(wv), free(bv), free(mean), free(rstd);
    }
    tt_nn_free_all();
}

/* ---- group norm --------------------------------------------------------------------- */

typedef struct gn_case {
    int nd;
    int64_t sizes[4];
    int64_t groups;
    bool affine, noncontig;
    tj_dtype dt;
} gn_case;

static const gn_case gn_cases[] = {
    {4, {2, 6, 3, 2}, 3, true, false, TJ_F64},   /* [N, C, H, W] */
    {3, {1, 4, 5}, 2, true, true, TJ_F32},       /* batch 1, non-contiguous */
    {2, {3, 4}, 2, true, false, TJ_F64},         /* HxW = 1 */
    {4, {2, 6, 3, 2}, 1, false, false, TJ_F32},  /* one group, no affine */
    {4, {2, 6, 3, 2}, 6, true, false, TJ_F32},   /* a group per channel */
    {4, {4, 32, 16, 16}, 8, true, false, TJ_F32}, /* threads */
};

/* A constant row normalises to exactly 0, with and without the affine part
 * and in both dtypes (PyTorch gives 0; x * rstd - mean * rstd would not). */
static void layer_norm_of_a_constant_row_is_zero(void **state) {
    (void)state;
    const tj_dtype dts[2] = {TJ_F32, TJ_F64};
    for (int k = 0; k < 2; k++) {
        int64_t sizes[2] = {3, 4}, n = 4;
        tj_tensor *x = tj_full(sizes, 2, 3.0, dts[k]);
        tj_tensor *w = tj_full(&n, 1, 2.0, dts[k]), *b = tj_full(&n, 1, 0.0, dts[k]);
        for (int affine = 0; affine < 2; affine++) {
            tj_tensor *y = tj_layer_norm(x, &n, 1, affine ? w : NULL, affine ? b : NULL, EPS);
            assert_non_null(y);
            tt_ref r = tt_ref_of(y);
            for (int64_t i = 0; i < r.numel; i++)
                if (r.v[i] != 0.0) fail_msg("%s%s: element %lld is %g, not 0", tj_dtype_name(dts[k]),
                                            affine ? " with weight and bias" : "", (long long)i, r.v[i]);
            tt_ref_free(&r);
            tj_release(y);
        }
        tj_release(x);
        tj_release(w);
        tj_release(b);
    }
}

static void group_norm_matches_reference(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof gn_cases / sizeof *gn_cases; k++) {
        const gn_case *cs = &gn_cases[k];
        int64_t N = cs->sizes[0], C = cs->sizes[1], G = cs->groups, S = 1;
        for (int d = 2; d < cs->nd; d++) S *= cs->sizes[d];
        tj_tensor *x = input(cs->sizes, cs->nd, cs->dt, cs->noncontig, -2, 3);
        tj_tensor *w = cs->affine ? input(&C, 1, cs->dt, false, 0.5, 2) : NULL;
        tj_tensor *b = cs->affine ? input(&C, 1, cs->dt, false, -1, 1) : NULL;
        tt_ref rx = tt_ref_of(x), ry = tt_ref_new(cs->sizes, cs->nd);
        double *wv = values(w, C, 1), *bv = values(b, C, 0);
        double *mean = values(NULL, N * G, 0), *rstd = values(NULL, N * G, 0);
        int64_t len = C / G * S;
        for (int64_t r = 0; r < N * G; r++) {
            const double *p = rx.v + r * len;
            double m = 0, v = 0;
            for (int64_t j = 0; j < len; j++) m += p[j];
            m /= (double)len;
            for (int64_t j = 0; j < len; j++) v += (p[j] - m) * (p[j] - m);
            mean[r] = m;
            rstd[r] = 1 / sqrt(v / (double)len + EPS);
            for (int64_t j = 0; j < len; j++) {
                int64_t c = (r % G) * (C / G) + j / S;
                ry.v[r * len + j] = (p[j] - m) * rstd[r] * wv[c] + bv[c];
            }
        }
        tj_tensor *out[3];
        int n = tj_native_group_norm(x, w, b, N, C, S, G, EPS, out, 3);
        tt_nn_own_outputs(out, n, 3);
        double rt = rtol_of(cs->dt);
        int64_t stat[2] = {N, G};
        tt_assert_close_ref(out[0], &ry, rt, rt);
        tt_assert_sizes(out[1], stat, 2);
        assert_vec(out[1], mean, N * G, rt);
        assert_vec(out[2], rstd, N * G, rt);
        tt_assert_close_ref(OWN(tj_group_norm(x, G, w, b, EPS)), &ry, rt, rt);
        tt_ref_free(&rx), tt_ref_free(&ry);
        free(wv), free(bv), free(mean), free(rstd);
    }
    tt_nn_free_all();
}

/* ---- backward ops against finite differences (f64, tiny sizes) ---------------------- */

typedef struct bn_fd {
    tj_tensor *rm, *rv;
    bool training;
} bn_fd;

/* in: x, weight, bias */
static tj_tensor *bn_forward(tj_tensor *const *in, const void *ctx) {
    const bn_fd *p = ctx;
    return tj_batch_norm(in[0], in[1], in[2], p->rm, p->rv, p->training, 0.1, EPS);
}

static void batch_norm_backward_matches_finite_differences(void **state) {
    (void)state;
    int64_t xs[3] = {3, 2, 2}, C = 2;
    for (int mode = 0; mode < 3; mode++) { /* train, eval, train without weight */
        bool training = mode != 1, affine = mode != 2;
        tj_tensor *in[3] = {OWN(tt_nn_randd(gen, xs, 3, -2, 2)),
                            affine ? OWN(tt_nn_randd(gen, &C, 1, 0.5, 2)) : NULL,
                            affine ? OWN(tt_nn_randd(gen, &C, 1, -1, 1)) : NULL};
        bn_fd ctx = {training ? NULL : OWN(tt_nn_randd(gen, &C, 1, -1, 1)),
                     training ? NULL : OWN(tt_nn_randd(gen, &C, 1, 0.5, 2)), training};
        tj_tensor *fw[3], *gy = OWN(tt_nn_randd(gen, xs, 3, -1, 1)), *gr[3];
        tt_nn_own_outputs(fw, tj_native_batch_norm(in[0], in[1], in[2], ctx.rm, ctx.rv, training,
                                                   0.1, EPS, fw, 3), 3);
        int n = tj_native_batch_norm_backward(gy, in[0], in[1], ctx.rm, ctx.rv, fw[1], fw[2],
                                              training, EPS, gr, 3);
        tt_nn_own_outputs(gr, n, 3);
        tt_assert_sizes(gr[1], &C, 1);
        for (int k = 0; k < (affine ? 3 : 1); k++)
            tt_nn_check_grad(bn_forward, &ctx, in, k, gy, gr[k], 1e-6);
    }
    tt_nn_free_all();
}

static const int64_t ln_shape[2] = {3, 4};

static tj_tensor *ln_forward(tj_tensor *const *in, const void *ctx) {
    (void)ctx;
    return tj_layer_norm(in[0], ln_shape, 2, in[1], in[2], EPS);
}

static void layer_norm_backward_matches_finite_differences(void **state) {
    (void)state;
    int64_t xs[3] = {2, 3, 4};
    for (int affine = 0; affine < 2; affine++) {
        tj_tensor *in[3] = {OWN(tt_nn_randd(gen, xs, 3, -2, 2)),
                            affine ? OWN(tt_nn_randd(gen, ln_shape, 2, 0.5, 2)) : NULL,
                            affine ? OWN(tt_nn_randd(gen, ln_shape, 2, -1, 1)) : NULL};
        tj_tensor *fw[3], *gy = OWN(tt_nn_randd(gen, xs, 3, -1, 1)), *gr[3];
        tt_nn_own_outputs(fw, tj_native_layer_norm(in[0], ln_shape, 2, in[1], in[2], EPS, fw, 3),
                          3);
        int n = tj_native_layer_norm_backward(gy, in[0], ln_shape, 2, fw[1], fw[2], in[1], in[2],
                                              gr, 3);
        tt_nn_own_outputs(gr, n, 3);
        tt_assert_sizes(gr[1], ln_shape, 2);
        for (int k = 0; k < (affine ? 3 : 1); k++)
            tt_nn_check_grad(ln_forward, NULL, in, k, gy, gr[k], 1e-6);
    }
    tt_nn_free_all();
}

static tj_tensor *gn_forward(tj_tensor *const *in, const void *ctx) {
    (void)ctx;
    return tj_group_norm(in[0], 2, in[1], in[2], EPS);
}

static void group_norm_backward_matches_finite_differences(void **state) {
    (void)state;
    int64_t xs[3] = {2, 4, 3}, C = 4;
    for (int affine = 0; affine < 2; affine++) {
        tj_tensor *in[3] = {OWN(tt_nn_randd(gen, xs, 3, -2, 2)),
                            affine ? OWN(tt_nn_randd(gen, &C, 1, 0.5, 2)) : NULL,
                            affine ? OWN(tt_nn_randd(gen, &C, 1, -1, 1)) : NULL};
        tj_tensor *fw[3], *gy = OWN(tt_nn_randd(gen, xs, 3, -1, 1)), *gr[3];
        tt_nn_own_outputs(fw, tj_native_group_norm(in[0], in[1], in[2], 2, 4, 3, 2, EPS, fw, 3), 3);
        int n = tj_native_group_norm_backward(gy, in[0], fw[1], fw[2], in[1], 2, 4, 3, 2, gr, 3);
        tt_nn_own_outputs(gr, n, 3);
        for (int k = 0; k < (affine ? 3 : 1); k++)
            tt_nn_check_grad(gn_forward, NULL, in, k, gy, gr[k], 1e-6);
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

static void mismatches_are_clear_errors(void **state) {
    (void)state;
    int64_t xs[3] = {2, 3, 5}, four = 4, five = 5, three = 3, bad_ns = 4, x2[2] = {1, 3};
    tj_tensor *x = OWN(tt_random(gen, xs, 3, TJ_F32, -1, 1));
    tj_tensor *w4 = OWN(tj_ones(&four, 1, TJ_F32)), *w3 = OWN(tj_ones(&three, 1, TJ_F32));
    tj_tensor *out[3] = {NULL, NULL, NULL};
    expect_error(tj_layer_norm(x, &bad_ns, 1, NULL, NULL, EPS), TJ_ERR_SHAPE,
                 "aten::layer_norm: normalized_shape [4] does not match the trailing sizes of "
                 "argument 'input' [2, 3, 5]");
    expect_error(tj_layer_norm(x, &five, 1, w4, NULL, EPS), TJ_ERR_SHAPE,
                 "aten::layer_norm: argument 'weight' must have sizes [5], got [4]");
    expect_error(tj_layer_norm(x, NULL, 0, NULL, NULL, EPS), TJ_ERR_ARG,
                 "normalized_shape must have at least 1 dim");
    expect_error(tj_group_norm(x, 2, NULL, NULL, EPS), TJ_ERR_ARG,
                 "aten::group_norm: the number of groups 2 must be positive and divide the "
                 "number of channels 3 (input sizes [2, 3, 5])");
    assert_int_equal(tj_native_group_norm(x, NULL, NULL, 3, 3, 5, 1, EPS, out, 3), -1);
    tt_assert_error("aten::native_group_norm: N=3, C=3, HxW=5 do not describe argument 'input' "
                    "of sizes [2, 3, 5]");
    tj_clear_error();
    expect_error(tj_group_norm(x, 3, w4, NULL, EPS), TJ_ERR_SHAPE,
                 "aten::group_norm: argument 'weight' must have sizes [3] (one per channel), got "
                 "[4]");
    expect_error(tj_batch_norm(x, w4, NULL, NULL, NULL, true, 0.1, EPS), TJ_ERR_SHAPE,
                 "aten::batch_norm: argument 'weight' must have sizes [3] (one per channel)");
    expect_error(tj_batch_norm(x, NULL, NULL, w3, NULL, true, 0.1, EPS), TJ_ERR_ARG,
                 "running_mean and running_var must be given together");
    expect_error(tj_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1, EPS), TJ_ERR_ARG,
                 "running_mean and running_var are required when training is false");
    tj_tensor *one_each = OWN(tt_random(gen, x2, 2, TJ_F32, -1, 1));
    /* one value per channel while training: aten's op computes it (x - mean is 0 up to
     * rounding), though torch.nn.functional refuses it */
    tj_tensor *y1 = OWN(tj_batch_norm(one_each, NULL, NULL, NULL, NULL, true, 0.1, EPS));
    assert_non_null(y1);
    for (int i = 0; i < 3; i++) assert_true(fabs(((const float *)tj_data(y1))[i]) < 1e-3);
    tj_tensor *xi = OWN(tj_zeros(xs, 3, TJ_I64));
    expect_error(tj_batch_norm(xi, NULL, NULL, NULL, NULL, true, 0.1, EPS), TJ_ERR_DTYPE,
                 "aten::batch_norm: argument 'input' must be a floating tensor (f32 or f64), "
                 "got i64");
    expect_error(tj_batch_norm(w3, NULL, NULL, NULL, NULL, true, 0.1, EPS), TJ_ERR_SHAPE,
                 "must have at least 2 dims [N, C, *], got sizes [3]");
    assert_int_equal(tj_native_batch_norm_backward(x, x, NULL, NULL, NULL, NULL, NULL, true, EPS,
                                                   out, 3), -1);
    tt_assert_error("save_mean and save_invstd are required when train is true");
    tj_clear_error();
    tj_tensor *four_out[4];
    assert_int_equal(tj_batch_norm_stats(x, NULL, NULL, w4, w4, 0.1, EPS, four_out, 4), -1);
    tt_assert_error("tjit::batch_norm_stats: argument 'running_mean' must have sizes [3] (one "
                    "per channel), got [4]");
    tj_clear_error();
    assert_int_equal(tj_batch_norm_stats(x, NULL, NULL, w3, NULL, 0.1, EPS, four_out, 4), -1);
    tt_assert_error("running_mean and running_var must be given together");
    tj_clear_error();
    assert_int_equal(tj_batch_norm_stats(xi, NULL, NULL, NULL, NULL, 0.1, EPS, four_out, 4), -1);
    tt_assert_error("tjit::batch_norm_stats: argument 'input' must be a floating tensor");
    tj_clear_error();
    tt_nn_free_all();
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(1234);
    return gen ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tj_generator_free(gen);
    return 0;
}

/* Empty rows: the statistics are NaN (a mean of nothing) but the outputs do
 * not depend on the weight, so its gradient is 0, not NaN (found by the
 * graph fuzzer's gradient checks). */
static void empty_input_gives_zero_weight_gradient(void **state) {
    (void)state;
    tj_scope_begin();
    int64_t gsz[3] = {1, 2, 0}, two = 2;
    tj_tensor *x = tj_zeros(gsz, 3, TJ_F64), *w = tj_full(&two, 1, 0.5, TJ_F64);
    tj_tensor *fw[3], *bw[3];
    assert_int_equal(tj_native_group_norm(x, w, NULL, 1, 2, 0, 1, 1e-5, fw, 3), 3);
    assert_int_equal(tj_native_group_norm_backward(fw[0], x, fw[1], fw[2], w, 1, 2, 0, 1, bw, 3), 3);
    double zeros[2] = {0, 0};
    tt_assert_values(bw[1], zeros, 2, 0);
    tt_assert_values(bw[2], zeros, 2, 0);
    /* batch norm's backward on an empty batch with NaN saved statistics */
    int64_t bsz[2] = {0, 2};
    tj_tensor *xb = tj_zeros(bsz, 2, TJ_F64), *nan = tj_full(&two, 1, NAN, TJ_F64);
    assert_int_equal(tj_native_batch_norm_backward(xb, xb, w, NULL, NULL, nan, nan, true, 1e-5, bw, 3), 3);
    tt_assert_values(bw[1], zeros, 2, 0);
    tt_assert_values(bw[2], zeros, 2, 0);
    tj_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_input_gives_zero_weight_gradient),
        cmocka_unit_test(ops_exist),
        cmocka_unit_test(layer_norm_of_a_constant_row_is_zero),
        cmocka_unit_test(batch_norm_matches_reference),
        cmocka_unit_test(batch_norm_running_stats_known_values),
        cmocka_unit_test(layer_norm_matches_reference),
        cmocka_unit_test(group_norm_matches_reference),
        cmocka_unit_test(batch_norm_backward_matches_finite_differences),
        cmocka_unit_test(layer_norm_backward_matches_finite_differences),
        cmocka_unit_test(group_norm_backward_matches_finite_differences),
        cmocka_unit_test(mismatches_are_clear_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
