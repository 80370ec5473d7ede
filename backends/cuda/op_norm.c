/* op_norm.c — CUDA kernels of batch, layer and group normalisation
 * forward (native_batch_norm, batch_norm, native_layer_norm, layer_norm,
 * native_group_norm, group_norm, and tjit::batch_norm_stats: batch_norm's
 * statistics without the normalisation), the helpers the norm kernels share
 * (op_norm.h), and tjcu_register_norm for softmax and the norms.
 *
 * Each op: its statistics as a reduction on the engine (reduce_plan.h) into
 * double scratch, a small kernel of norm.cu that turns them into the saved
 * statistics and per-channel (or per-plane) coefficients, and one element
 * kernel that applies them. Semantics are the CPU's (backends/cpu/norm.c):
 * statistics in double, the variance biased for normalising and unbiased
 * for the running variance, weight and bias of any float dtype. The
 * composite forms (batch_norm, layer_norm, group_norm) compute with the same
 * kernels and skip the saved statistics, as their CPU kernels do. */
#include <stdio.h>

#include "backends/cuda/op_norm.h"

/* ---- shared helpers ------------------------------------------------------------------------ */

tjcu_tensor_arg tjcu_norm_arg(const tj_tensor *t) {
    if (t) return tjcu_arg(t);
    tjcu_tensor_arg none = {0};
    return none;
}

double *tjcu_norm_scratch(const tjc_call *c, int64_t n) {
    return tjcu_malloc(c->device, sizeof(double) * (size_t)(n > 0 ? n : 1));
}

const char *tjcu_norm_sfx(tj_dtype d) { return d == TJ_F32 ? "f32" : "f64"; }

int64_t tjcu_norm_hxw(const tj_tensor *x) {
    int64_t n = 1;
    for (int d = 2; d < x->ndim; d++) n *= x->sizes[d];
    return n;
}

tj_status tjcu_norm_elements(const tjc_call *c, const char *kernel, int64_t n, void **args) {
    if (n == 0) return TJ_OK;
    return tjcu_launch(c->op->name, c->device, "norm", kernel, tjcu_grid_for(c->device, n, 256),
                       (tjcu_dim3){256, 1, 1}, 0, args);
}

double *tjcu_norm_doubles(const tjc_call *c, const tj_tensor *t, int64_t n) {
    if (!t) return NULL;
    double *p = tjcu_norm_scratch(c, n);
    if (!p) return NULL;
    tjcu_tensor_arg a = tjcu_arg(t);
    int dt = (int)t->dtype;
    void *args[] = {&a, &dt, &n, &p};
    if (tjcu_norm_elements(c, "norm_to_double", n, args)) {
        tjcu_free(c->device, p);
        return NULL;
    }
    return p;
}

tj_status tjcu_norm_reduce_matrix(const tjc_call *c, const char *base, tj_dtype dtype,
                                  int64_t rows, int64_t cols, int dim, tjcu_rargs *a) {
    int64_t sizes[2] = {rows, cols}, strides[2] = {cols, 1};
    int64_t out_strides[2] = {dim == 1 ? 1 : 0, dim == 0 ? 1 : 0};
    bool reduced[2] = {dim == 0, dim == 1};
    tjcu_rgeom g;
    tjcu_rgeom_build(&g, 2, sizes, strides, reduced, out_strides, false);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "%s_%s", base, tjcu_norm_sfx(dtype));
    return tjcu_reduce_run(c->op->name, c->device, "norm", kernel, &g, a);
}

/* ---- batch norm ------------------------------------------------------------------------------ */

typedef struct bn_args {
    tj_tensor *x, *w, *b, *rm, *rv, *out; /* out NULL: the statistics alone */
    int training;
    double momentum, eps;
} bn_args;

/* out (when not NULL) = x * a + d per channel; save_mean, save_invstd, scale and
 * shift (the coefficients a and d) written when not NULL. */
static tj_status bn_forward(const tjc_call *c, const bn_args *ba, tj_tensor *save_mean,
                            tj_tensor *save_invstd, tj_tensor *scale, tj_tensor *shift) {
    tj_tensor *x = ba->x;
    int64_t N = x->sizes[0], C = x->sizes[1], S = tjcu_norm_hxw(x);
    int training = ba->training;
    double momentum = ba->momentum, eps = ba->eps, cnt = (double)(N * S);
    double *buf = tjcu_norm_scratch(c, 4 * C);
    if (!buf) return tj_last_status();
    double *mean = buf, *m2 = mean + C, *a = m2 + C, *d = a + C;
    tj_status st = TJ_OK;
    if (training && C > 0) { /* moments per channel: every dim but 1 reduced */
        bool reduced[TJ_MAX_DIMS];
        int64_t out_strides[TJ_MAX_DIMS] = {0};
        for (int k = 0; k < x->ndim; k++) reduced[k] = k != 1;
        out_strides[1] = 1;
        tjcu_rgeom g;
        tjcu_rgeom_build(&g, x->ndim, x->sizes, x->strides, reduced, out_strides, false);
        tjcu_rargs ra = {.in = tjc_data_ptr(x), .out0 = mean, .out1 = m2};
        char kernel[32];
        snprintf(kernel, sizeof kernel, "moments_%s", tjcu_norm_sfx(x->dtype));
        st = tjcu_reduce_run(c->op->name, c->device, "norm", kernel, &g, &ra);
    }
    if (!st && C > 0) {
        tjcu_tensor_arg w = tjcu_norm_arg(ba->w), b = tjcu_norm_arg(ba->b);
        tjcu_tensor_arg rm = tjcu_norm_arg(ba->rm), rv = tjcu_norm_arg(ba->rv);
        int wdt = ba->w ? (int)ba->w->dtype : 0, bdt = ba->b ? (int)ba->b->dtype : 0;
        int rmdt = ba->rm ? (int)ba->rm->dtype : 0, rvdt = ba->rv ? (int)ba->rv->dtype : 0;
        /* eval mode's save_mean and save_invstd are empty */
        bool saved = save_mean && tjc_numel(save_mean->sizes, save_mean->ndim) == C;
        void *sm = saved ? tjc_data_ptr(save_mean) : NULL;
        void *si = saved ? tjc_data_ptr(save_invstd) : NULL;
        void *args[] = {&C,  &training, &momentum, &eps, &cnt, &mean, &m2, &w,  &wdt, &b,
                        &bdt, &rm,      &rmdt,     &rv,  &rvdt, &sm,  &si, &a,  &d};
        char kernel[32];
        snprintf(kernel, sizeof kernel, "bn_coef_%s", tjcu_norm_sfx(x->dtype));
        st = tjcu_norm_elements(c, kernel, C, args);
    }
    for (int k = 0; k < 2 && !st && C > 0; k++) { /* scale and shift, rounded as the affine rounds */
        tj_tensor *t = k ? shift : scale;
        if (!t) continue;
        tjcu_tensor_arg ta = tjcu_arg(t);
        int tdt = (int)t->dtype;
        double *v = k ? d : a;
        void *args[] = {&v, &C, &ta, &tdt};
        st = tjcu_norm_elements(c, "norm_from_double", C, args);
    }
    if (!st && ba->out) {
        int64_t n = tjc_numel(x->sizes, x->ndim), P = C;
        tjcu_tensor_arg xa = tjcu_arg(x);
        void *y = tjc_data_ptr(ba->out), *args[] = {&xa, &y, &n, &S, &P, &a, &d};
        char kernel[32];
        snprintf(kernel, sizeof kernel, "norm_affine_%s", tjcu_norm_sfx(x->dtype));
        if (S > 0) st = tjcu_norm_elements(c, kernel, n, args);
    }
    tjcu_free(c->device, buf);
    return st;
}

/* in: input, weight, bias, running_mean, running_var; attrs: training, momentum, eps */
static bn_args bn_args_of(const tjc_call *c) {
    return (bn_args){c->in[0], c->in[1], c->in[2], c->in[3], c->in[4], c->out[0],
                     c->attr[0].b, c->attr[1].f, c->attr[2].f};
}

static tj_status cuda_native_batch_norm(const tjc_call *c) {
    bn_args a = bn_args_of(c);
    return bn_forward(c, &a, c->out[1], c->out[2], NULL, NULL);
}

static tj_status cuda_batch_norm(const tjc_call *c) {
    bn_args a = bn_args_of(c);
    return bn_forward(c, &a, NULL, NULL, NULL, NULL);
}

/* in: input, weight, bias, running_mean, running_var; attrs: momentum, eps */
static tj_status cuda_batch_norm_stats(const tjc_call *c) {
    bn_args a = {c->in[0], c->in[1], c->in[2], c->in[3], c->in[4], NULL, 1, c->attr[0].f,
                 c->attr[1].f};
    return bn_forward(c, &a, c->out[0], c->out[1], c->out[2], c->out[3]);
}

/* ---- layer norm ------------------------------------------------------------------------------
 * in: input, weight, bias; attrs: normalized_shape, eps. The input is seen
 * as [M, L] with L the product of normalized_shape. */

static void ln_sizes(const tjc_call *c, const tj_tensor *x, int64_t *M, int64_t *L) {
    const tj_attr *ns = &c->attr[0];
    *L = tjc_numel(ns->ints.data, ns->ints.n);
    *M = 1;
    for (int d = 0; d < x->ndim - ns->ints.n; d++) *M *= x->sizes[d];
}

static tj_status ln_forward(const tjc_call *c, tj_tensor *mean_out, tj_tensor *rstd_out) {
    double eps = c->attr[1].f;
    int64_t M, L;
    ln_sizes(c, c->in[0], &M, &L);
    tj_tensor *x = tjcu_dense(c->op->name, c->device, c->in[0], "norm");
    double *buf = x ? tjcu_norm_scratch(c, 3 * M) : NULL;
    double *w = buf ? tjcu_norm_doubles(c, c->in[1], L) : NULL;
    double *b = buf && (!c->in[1] || w) ? tjcu_norm_doubles(c, c->in[2], L) : NULL;
    tj_status st = TJ_OK;
    if (!x || !buf || (c->in[1] && !w) || (c->in[2] && !b)) {
        st = tj_last_status();
        goto done;
    }
    double *mean = buf, *m2 = mean + M, *rstd = m2 + M;
    const char *sfx = tjcu_norm_sfx(x->dtype);
    char kernel[32];
    if (M > 0) {
        tjcu_rargs ra = {.in = tjc_data_ptr(x), .out0 = mean, .out1 = m2};
        st = tjcu_norm_reduce_matrix(c, "moments", x->dtype, M, L, 1, &ra);
        void *mo = mean_out ? tjc_data_ptr(mean_out) : NULL;
        void *ro = rstd_out ? tjc_data_ptr(rstd_out) : NULL;
        void *args[] = {&mean, &m2, &M, &L, &eps, &rstd, &mo, &ro};
        snprintf(kernel, sizeof kernel, "ln_stats_%s", sfx);
        if (!st) st = tjcu_norm_elements(c, kernel, M, args);
    }
    if (!st) {
        int64_t n = M * L;
        tjcu_tensor_arg xa = tjcu_arg(x);
        void *y = tjc_data_ptr(c->out[0]), *args[] = {&xa, &y, &n, &L, &mean, &rstd, &w, &b};
        snprintf(kernel, sizeof kernel, "ln_apply_%s", sfx);
        st = tjcu_norm_elements(c, kernel, n, args);
    }
done:
    if (buf) tjcu_free(c->device, buf);
    if (w) tjcu_free(c->device, w);
    if (b) tjcu_free(c->device, b);
    tj_release(x);
    return st;
}

static tj_status cuda_native_layer_norm(const tjc_call *c) {
    return ln_forward(c, c->out[1], c->out[2]);
}

static tj_status cuda_layer_norm(const tjc_call *c) { return ln_forward(c, NULL, NULL); }

/* ---- group norm --------------------------------------------------------------------------------
 * input [N, C, *] seen as N*G groups of D*S values (D = C/G channels of S). */

static tj_status gn_forward(const tjc_call *c, int64_t G, double eps, tj_tensor *mean_out,
                            tj_tensor *rstd_out) {
    const tj_tensor *in = c->in[0];
    int64_t N = in->sizes[0], C = in->sizes[1], S = tjcu_norm_hxw(in), D = C / G;
    int64_t NG = N * G, NC = N * C, L = D * S;
    tj_tensor *x = tjcu_dense(c->op->name, c->device, c->in[0], "norm");
    double *buf = x ? tjcu_norm_scratch(c, 2 * NG + 2 * NC) : NULL;
    tj_status st = TJ_OK;
    if (!x || !buf) {
        st = tj_last_status();
        goto done;
    }
    double *mean = buf, *m2 = mean + NG, *a = m2 + NG, *d = a + NC;
    const char *sfx = tjcu_norm_sfx(x->dtype);
    char kernel[32];
    if (NG > 0) {
        tjcu_rargs ra = {.in = tjc_data_ptr(x), .out0 = mean, .out1 = m2};
        st = tjcu_norm_reduce_matrix(c, "moments", x->dtype, NG, L, 1, &ra);
        tjcu_tensor_arg w = tjcu_norm_arg(c->in[1]), b = tjcu_norm_arg(c->in[2]);
        int wdt = c->in[1] ? (int)c->in[1]->dtype : 0, bdt = c->in[2] ? (int)c->in[2]->dtype : 0;
        void *mo = mean_out ? tjc_data_ptr(mean_out) : NULL;
        void *ro = rstd_out ? tjc_data_ptr(rstd_out) : NULL;
        void *args[] = {&N, &C, &G, &L, &eps, &mean, &m2, &w, &wdt, &b, &bdt, &mo, &ro, &a, &d};
        snprintf(kernel, sizeof kernel, "gn_coef_%s", sfx);
        if (!st) st = tjcu_norm_elements(c, kernel, NG > NC ? NG : NC, args);
    }
    if (!st && S > 0) {
        int64_t n = NC * S;
        tjcu_tensor_arg xa = tjcu_arg(x);
        void *y = tjc_data_ptr(c->out[0]), *args[] = {&xa, &y, &n, &S, &NC, &a, &d};
        snprintf(kernel, sizeof kernel, "norm_affine_%s", sfx);
        st = tjcu_norm_elements(c, kernel, n, args);
    }
done:
    if (buf) tjcu_free(c->device, buf);
    tj_release(x);
    return st;
}

/* in: input, weight, bias; attrs: N, C, HxW, group, eps */
static tj_status cuda_native_group_norm(const tjc_call *c) {
    return gn_forward(c, c->attr[3].i, c->attr[4].f, c->out[1], c->out[2]);
}

/* in: input, weight, bias; attrs: num_groups, eps */
static tj_status cuda_group_norm(const tjc_call *c) {
    return gn_forward(c, c->attr[0].i, c->attr[1].f, NULL, NULL);
}

/* ---- the family's table rows ------------------------------------------------------------------ */

void tjcu_register_norm(tjc_kernel_fn *kernels) {
    kernels[TJ_OP_softmax] = tjcu_softmax;
    kernels[TJ_OP_log_softmax] = tjcu_log_softmax;
    kernels[TJ_OP_softmax_backward_data] = tjcu_softmax_backward_data;
    kernels[TJ_OP_log_softmax_backward_data] = tjcu_log_softmax_backward_data;
    kernels[TJ_OP_native_batch_norm] = cuda_native_batch_norm;
    kernels[TJ_OP_batch_norm_stats] = cuda_batch_norm_stats;
    kernels[TJ_OP_batch_norm] = cuda_batch_norm;
    kernels[TJ_OP_native_batch_norm_backward] = tjcu_native_batch_norm_backward;
    kernels[TJ_OP_native_layer_norm] = cuda_native_layer_norm;
    kernels[TJ_OP_layer_norm] = cuda_layer_norm;
    kernels[TJ_OP_native_layer_norm_backward] = tjcu_native_layer_norm_backward;
    kernels[TJ_OP_native_group_norm] = cuda_native_group_norm;
    kernels[TJ_OP_group_norm] = cuda_group_norm;
    kernels[TJ_OP_native_group_norm_backward] = tjcu_native_group_norm_backward;
}
