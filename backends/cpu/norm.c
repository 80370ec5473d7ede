/* norm.c — CPU kernels of batch, layer and group normalisation and their
 * backward ops (rows of core/ops_nn.def). Inputs are made contiguous, the
 * per-channel / per-row statistics are kept in double, and the element loops
 * (norm_t.inc) run over rows in parallel.
 *
 * Batch and group norm both see input [N, C, *] as N*C rows of HxW elements
 * and end in the same per-row affine map (x * a[r] + d[r]); their gradients
 * end in g * a[r] + x * b[r] + d[r]. */
#include <math.h>

#include "core/alloc.h"
#include "isa.h"
#include "nn.h"

#define T float
#define FN(name) name##_f32
#include "norm_t.inc"
#undef T
#undef FN
#define T double
#define FN(name) name##_f64
#include "norm_t.inc"
#undef T
#undef FN

/* Calls the f32 or f64 instance of a loop. */
#define BY_DTYPE(dt, name, ...) ((dt) == TJ_F32 ? name##_f32(__VA_ARGS__) : name##_f64(__VA_ARGS__))

static void *dp(const tj_tensor *t) { return tjc_data_ptr(t); }

/* v[0..n) into t; nothing when t is NULL or empty (eval mode's statistics) */
static void store(tj_tensor *t, const double *v, int64_t n) {
    if (!t || tjc_numel(t->sizes, t->ndim) < n) return;
    char *p = tjc_data_ptr(t);
    for (int64_t i = 0; i < n; i++) tjnn_st(p, t->dtype, i, v[i]);
}

/* Element c of a 1-D tensor, written through its stride (running stats). */
static void store_strided(tj_tensor *t, int64_t c, double v) {
    tjnn_st(tjc_data_ptr(t), t->dtype, c * t->strides[0], v);
}

static int64_t hxw_of(const tj_tensor *x) {
    int64_t n = 1;
    for (int d = 2; d < x->ndim; d++) n *= x->sizes[d];
    return n;
}

/* ---- batch norm --------------------------------------------------------------------- */

typedef struct bn_args {
    tj_tensor *input, *weight, *bias, *running_mean, *running_var;
    bool training;
    double momentum, eps;
} bn_args;

static bn_args bn_args_of(const tjc_call *c) {
    return (bn_args){c->in[0], c->in[1], c->in[2], c->in[3], c->in[4],
                     c->attr[0].b, c->attr[1].f, c->attr[2].f};
}

/* Training mode's statistics of contiguous x [N, C, S]: mean and invstd [C],
 * and the running statistics' update when a gives them; s1, s2 and ra are
 * scratch of N*C each. */
static void bn_batch_stats(const bn_args *a, const tj_tensor *x, double *mean, double *invstd,
                           double *s1, double *s2, double *ra) {
    int64_t N = x->sizes[0], C = x->sizes[1], S = hxw_of(x), rows = N * C;
    double cnt = (double)(N * S);
    BY_DTYPE(x->dtype, row_moments, dp(x), rows, S, NULL, s1, NULL);
    for (int64_t ch = 0; ch < C; ch++) {
        double s = 0;
        for (int64_t n = 0; n < N; n++) s += s1[n * C + ch];
        mean[ch] = s / cnt; /* PyTorch's batch statistics keep an infinite mean */
    }
    for (int64_t r = 0; r < rows; r++) ra[r] = mean[r % C];
    BY_DTYPE(x->dtype, row_moments, dp(x), rows, S, ra, NULL, s2); /* the sums are known */
    for (int64_t ch = 0; ch < C; ch++) {
        double q = 0;
        for (int64_t n = 0; n < N; n++) q += s2[n * C + ch];
        double var = q / cnt;
        invstd[ch] = tjnn_norm_rstd(var, a->eps);
        if (a->running_mean) { /* PyTorch's update: the variance unbiased */
            const tj_tensor *rm = a->running_mean, *rv = a->running_var;
            double m0 = tjnn_ld(tjc_data_ptr(rm), rm->dtype, ch * rm->strides[0]);
            double v0 = tjnn_ld(tjc_data_ptr(rv), rv->dtype, ch * rv->strides[0]);
            store_strided(a->running_mean, ch, (1 - a->momentum) * m0 + a->momentum * mean[ch]);
            store_strided(a->running_var, ch,
                          (1 - a->momentum) * v0 + a->momentum * var * cnt / (cnt - 1));
        }
    }
}

/* out = batch_norm(input), computed as input * scale + shift per channel;
 * out, save_mean, save_invstd, scale and shift may be NULL. */
static tj_status bn_forward(const char *op, const bn_args *a, tj_tensor *out,
                            tj_tensor *save_mean, tj_tensor *save_invstd, tj_tensor *scale,
                            tj_tensor *shift) {
    tj_tensor *x = tjnn_contig(a->input);
    if (!x) return tj_last_status();
    int64_t N = x->sizes[0], C = x->sizes[1], S = hxw_of(x), rows = N * C;
    double *buf = tjnn_scratch(op, 4 * C + 4 * rows);
    double *w = tjnn_doubles(a->weight, C, 1.0), *b = tjnn_doubles(a->bias, C, 0.0);
    if (!buf || !w || !b) {
        tjc_free(buf), tjc_free(w), tjc_free(b), tj_release(x);
        return tj_last_status();
    }
    double *mean = buf, *invstd = mean + C, *s1 = invstd + C, *s2 = s1 + rows;
    double *ra = s2 + rows, *rd = ra + rows;
    if (a->training) {
        bn_batch_stats(a, x, mean, invstd, s1, s2, ra);
    } else {
        const tj_tensor *rm = a->running_mean, *rv = a->running_var;
        for (int64_t ch = 0; ch < C; ch++) {
            mean[ch] = tjnn_ld(tjc_data_ptr(rm), rm->dtype, ch * rm->strides[0]);
            invstd[ch] = 1.0 / sqrt(tjnn_ld(tjc_data_ptr(rv), rv->dtype, ch * rv->strides[0]) +
                                    a->eps);
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t ch = r % C;
        ra[r] = w[ch] * invstd[ch];
        rd[r] = b[ch] - mean[ch] * ra[r];
    }
    if (out) BY_DTYPE(x->dtype, rows_affine, dp(x), dp(out), rows, S, ra, rd);
    store(save_mean, mean, C);
    store(save_invstd, invstd, C);
    if (rows >= C) store(scale, ra, C), store(shift, rd, C); /* rows [0, C) are channels 0..C-1 */
    tjc_free(buf), tjc_free(w), tjc_free(b), tj_release(x);
    return TJ_OK;
}

/* in: input, weight, bias, running_mean, running_var; attrs: momentum, eps.
 * scale and shift in the input's dtype, rounded as rows_affine rounds them,
 * so that input * scale + shift gives batch_norm's bits. */
tj_status TJCPU_ISA_NAME(tjcpu_batch_norm_stats)(const tjc_call *c) {
    bn_args a = {c->in[0], c->in[1], c->in[2], c->in[3], c->in[4], true, c->attr[0].f, c->attr[1].f};
    return bn_forward(c->op->name, &a, NULL, c->out[0], c->out[1], c->out[2], c->out[3]);
}

tj_status TJCPU_ISA_NAME(tjcpu_native_batch_norm)(const tjc_call *c) {
    bn_args a = bn_args_of(c);
    return bn_forward(c->op->name, &a, c->out[0], c->out[1], c->out[2], NULL, NULL);
}

tj_status TJCPU_ISA_NAME(tjcpu_batch_norm)(const tjc_call *c) {
    bn_args a = bn_args_of(c);
    return bn_forward(c->op->name, &a, c->out[0], NULL, NULL, NULL, NULL);
}

/* in: grad_out, input, weight, running_mean, running_var, save_mean,
 * save_invstd; attrs: train, eps. With xh = (x - mean) invstd, M values per
 * channel, k = w invstd:
 *   train: gx = k (g - sum(g)/M - xh sum(g xh)/M)      eval: gx = k g
 *   grad_weight = sum(g xh), grad_bias = sum(g). */
tj_status TJCPU_ISA_NAME(tjcpu_native_batch_norm_backward)(const tjc_call *c) {
    bool train = c->attr[0].b;
    double eps = c->attr[1].f;
    tj_tensor *g = tjnn_contig(c->in[0]), *x = tjnn_contig(c->in[1]);
    int64_t N = c->in[1]->sizes[0], C = c->in[1]->sizes[1], S = hxw_of(c->in[1]);
    int64_t rows = N * C;
    double *buf = tjnn_scratch(c->op->name, 5 * C + 5 * rows);
    double *w = tjnn_doubles(c->in[2], C, 1.0);
    double *m = tjnn_doubles(train ? c->in[5] : c->in[3], C, 0.0);
    double *v = tjnn_doubles(train ? c->in[6] : c->in[4], C, 0.0);
    tj_status st = TJ_OK;
    if (!g || !x || !buf || !w || !m || !v) {
        st = tj_last_status();
        goto done;
    }
    double *invstd = buf, *sg = invstd + C, *sgx = sg + C, *gw = sgx + C, *gb = gw + C;
    double *rsg = gb + C, *rsgx = rsg + rows, *ra = rsgx + rows, *rb = ra + rows, *rd = rb + rows;
    for (int64_t ch = 0; ch < C; ch++) invstd[ch] = train ? v[ch] : 1.0 / sqrt(v[ch] + eps);
    for (int64_t r = 0; r < rows; r++) ra[r] = m[r % C];
    BY_DTYPE(x->dtype, rows_grad_sums, dp(g), dp(x), rows, S, ra, rsg, rsgx);
    double cnt = (double)(N * S);
    for (int64_t ch = 0; ch < C; ch++) {
        double a1 = 0, a2 = 0;
        for (int64_t n = 0; n < N; n++) {
            a1 += rsg[n * C + ch];
            a2 += rsgx[n * C + ch];
        }
        sg[ch] = a1;
        /* sum(g xh); an empty batch's statistics are NaN, its sums 0 and so is
         * the gradient (the outputs do not depend on the weight) */
        sgx[ch] = N > 0 && S > 0 ? a2 * invstd[ch] : 0.0;
        gb[ch] = sg[ch];
        gw[ch] = sgx[ch];
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t ch = r % C;
        double k = w[ch] * invstd[ch];
        ra[r] = k;
        rb[r] = train ? -k * invstd[ch] * sgx[ch] / cnt : 0;
        rd[r] = train ? -k * sg[ch] / cnt + k * invstd[ch] * m[ch] * sgx[ch] / cnt : 0;
    }
    BY_DTYPE(x->dtype, rows_affine3, dp(g), dp(x), dp(c->out[0]), rows, S, ra, rb, rd);
    store(c->out[1], gw, C);
    store(c->out[2], gb, C);
done:
    tjc_free(buf), tjc_free(w), tjc_free(m), tjc_free(v);
    tj_release(g), tj_release(x);
    return st;
}

/* ---- layer norm --------------------------------------------------------------------- */

/* input [M, L] with L the product of normalized_shape (attr 0). */
static void ln_sizes(const tjc_call *c, const tj_tensor *x, int64_t *M, int64_t *L) {
    const tj_attr *ns = &c->attr[0];
    *L = tjc_numel(ns->ints.data, ns->ints.n);
    int64_t n = tjc_numel(x->sizes, x->ndim);
    *M = *L ? n / *L : 0;
    if (!*L) { /* an empty normalised slice: rows are the leading sizes */
        *M = 1;
        for (int d = 0; d < x->ndim - ns->ints.n; d++) *M *= x->sizes[d];
    }
}

static tj_status ln_forward(const tjc_call *c, tj_tensor *out, tj_tensor *mean_out,
                            tj_tensor *rstd_out) {
    double eps = c->attr[1].f;
    int64_t M, L;
    ln_sizes(c, c->in[0], &M, &L);
    tj_tensor *x = tjnn_contig(c->in[0]);
    double *buf = tjnn_scratch(c->op->name, 2 * M);
    double *w = c->in[1] ? tjnn_doubles(c->in[1], L, 1.0) : NULL;
    double *b = c->in[2] ? tjnn_doubles(c->in[2], L, 0.0) : NULL;
    tj_status st = TJ_OK;
    if (!x || !buf || (c->in[1] && !w) || (c->in[2] && !b)) {
        st = tj_last_status();
    } else {
        double *mean = buf, *rstd = buf + M;
        BY_DTYPE(x->dtype, row_stats, dp(x), M, L, eps, mean, rstd);
        BY_DTYPE(x->dtype, ln_apply, dp(x), dp(out), M, L, mean, rstd, w, b);
        store(mean_out, mean, M);
        store(rstd_out, rstd, M);
    }
    tjc_free(buf), tjc_free(w), tjc_free(b), tj_release(x);
    return st;
}

tj_status TJCPU_ISA_NAME(tjcpu_native_layer_norm)(const tjc_call *c) {
    return ln_forward(c, c->out[0], c->out[1], c->out[2]);
}

tj_status TJCPU_ISA_NAME(tjcpu_layer_norm)(const tjc_call *c) { return ln_forward(c, c->out[0], NULL, NULL); }

void TJCPU_ISA_NAME(tjcpu_layer_norm_row)(const void *x, const void *w, const void *b, void *y, int64_t n,
                                          tj_dtype t, double eps) {
    if (t == TJ_F32) ln_row_f32(x, w, b, y, n, eps);
    else ln_row_f64(x, w, b, y, n, eps);
}

/* in: grad_out, input, mean, rstd, weight, bias; attrs: normalized_shape */
tj_status TJCPU_ISA_NAME(tjcpu_native_layer_norm_backward)(const tjc_call *c) {
    int64_t M, L;
    ln_sizes(c, c->in[1], &M, &L);
    tj_tensor *g = tjnn_contig(c->in[0]), *x = tjnn_contig(c->in[1]);
    double *mean = tjnn_doubles(c->in[2], M, 0.0), *rstd = tjnn_doubles(c->in[3], M, 0.0);
    double *w = c->in[4] ? tjnn_doubles(c->in[4], L, 1.0) : NULL;
    double *buf = tjnn_scratch(c->op->name, 2 * L);
    tj_status st = TJ_OK;
    if (!g || !x || !mean || !rstd || (c->in[4] && !w) || !buf) {
        st = tj_last_status();
    } else {
        double *gw = buf, *gb = buf + L;
        BY_DTYPE(x->dtype, ln_grad_input, dp(g), dp(x), dp(c->out[0]), M, L, mean, rstd, w);
        BY_DTYPE(x->dtype, ln_grad_affine, dp(g), dp(x), M, L, mean, rstd, gw, gb);
        store(c->out[1], gw, L);
        store(c->out[2], gb, L);
    }
    tjc_free(mean), tjc_free(rstd), tjc_free(w), tjc_free(buf);
    tj_release(g), tj_release(x);
    return st;
}

/* ---- group norm --------------------------------------------------------------------- */

/* input [N, C, HxW] in G groups of C/G channels; mean and rstd [N, G]. */
static tj_status gn_forward(const tjc_call *c, int64_t G, double eps, tj_tensor *out,
                            tj_tensor *mean_out, tj_tensor *rstd_out) {
    const tj_tensor *in = c->in[0];
    int64_t N = in->sizes[0], C = in->sizes[1], S = hxw_of(in), D = C / G;
    tj_tensor *x = tjnn_contig(c->in[0]);
    double *buf = tjnn_scratch(c->op->name, 2 * N * G + 2 * N * C);
    double *w = tjnn_doubles(c->in[1], C, 1.0), *b = tjnn_doubles(c->in[2], C, 0.0);
    tj_status st = TJ_OK;
    if (!x || !buf || !w || !b) {
        st = tj_last_status();
    } else {
        double *mean = buf, *rstd = mean + N * G, *ra = rstd + N * G, *rd = ra + N * C;
        BY_DTYPE(x->dtype, row_stats, dp(x), N * G, D * S, eps, mean, rstd);
        for (int64_t r = 0; r < N * C; r++) {
            int64_t n = r / C, ch = r % C, k = n * G + ch / D;
            ra[r] = rstd[k] * w[ch];
            rd[r] = b[ch] - mean[k] * ra[r];
        }
        BY_DTYPE(x->dtype, rows_affine, dp(x), dp(out), N * C, S, ra, rd);
        store(mean_out, mean, N * G);
        store(rstd_out, rstd, N * G);
    }
    tjc_free(buf), tjc_free(w), tjc_free(b), tj_release(x);
    return st;
}

/* in: input, weight, bias; attrs: N, C, HxW, group, eps */
tj_status TJCPU_ISA_NAME(tjcpu_native_group_norm)(const tjc_call *c) {
    return gn_forward(c, c->attr[3].i, c->attr[4].f, c->out[0], c->out[1], c->out[2]);
}

/* in: input, weight, bias; attrs: num_groups, eps */
tj_status TJCPU_ISA_NAME(tjcpu_group_norm)(const tjc_call *c) {
    return gn_forward(c, c->attr[0].i, c->attr[1].f, c->out[0], NULL, NULL);
}

/* in: grad_out, input, mean, rstd, weight; attrs: N, C, HxW, group. Per (n,
 * group) with r = rstd, s = 1 / (D HxW), and per channel sums db = sum(g),
 * ds = sum(g (x - mean)):
 *   gx = r w g - r^3 s sum_c(w ds) (x - mean) - r s sum_c(w db)
 *   grad_weight = sum_n ds r, grad_bias = sum_n db. */
tj_status TJCPU_ISA_NAME(tjcpu_native_group_norm_backward)(const tjc_call *c) {
    int64_t N = c->attr[0].i, C = c->attr[1].i, S = c->attr[2].i, G = c->attr[3].i;
    int64_t D = C / G, NC = N * C;
    tj_tensor *g = tjnn_contig(c->in[0]), *x = tjnn_contig(c->in[1]);
    double *mean = tjnn_doubles(c->in[2], N * G, 0.0), *rstd = tjnn_doubles(c->in[3], N * G, 0.0);
    double *w = tjnn_doubles(c->in[4], C, 1.0);
    double *buf = tjnn_scratch(c->op->name, 6 * NC + 2 * C);
    tj_status st = TJ_OK;
    if (!g || !x || !mean || !rstd || !w || !buf) {
        st = tj_last_status();
        goto done;
    }
    double *shift = buf, *db = shift + NC, *ds = db + NC, *ra = ds + NC, *rb = ra + NC;
    double *rd = rb + NC, *gw = rd + NC, *gb = gw + C;
    for (int64_t r = 0; r < NC; r++) shift[r] = mean[(r / C) * G + (r % C) / D];
    BY_DTYPE(x->dtype, rows_grad_sums, dp(g), dp(x), NC, S, shift, db, ds);
    double s = 1.0 / (double)(D * S);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < G; k++) {
            double sum_wds = 0, sum_wdb = 0, r = rstd[n * G + k], m = mean[n * G + k];
            for (int64_t ch = k * D; ch < (k + 1) * D; ch++) {
                sum_wds += w[ch] * ds[n * C + ch];
                sum_wdb += w[ch] * db[n * C + ch];
            }
            double c2 = -sum_wds * r * r * r * s;
            for (int64_t ch = k * D; ch < (k + 1) * D; ch++) {
                ra[n * C + ch] = r * w[ch];
                rb[n * C + ch] = c2;
                rd[n * C + ch] = -c2 * m - r * s * sum_wdb;
            }
        }
    for (int64_t ch = 0; ch < C; ch++) {
        double aw = 0, ab = 0;
        for (int64_t n = 0; n < N; n++) {
            aw += S ? ds[n * C + ch] * rstd[n * G + ch / D] : 0.0; /* empty rows: NaN stats, no gradient */
            ab += db[n * C + ch];
        }
        gw[ch] = aw;
        gb[ch] = ab;
    }
    BY_DTYPE(x->dtype, rows_affine3, dp(g), dp(x), dp(c->out[0]), NC, S, ra, rb, rd);
    store(c->out[1], gw, C);
    store(c->out[2], gb, C);
done:
    tjc_free(mean), tjc_free(rstd), tjc_free(w), tjc_free(buf);
    tj_release(g), tj_release(x);
    return st;
}
