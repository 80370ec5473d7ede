/* op_norm_backward.c — CUDA kernels of native_batch_norm_backward,
 * native_layer_norm_backward and native_group_norm_backward (rows of
 * core/ops_nn.def), with the CPU's formulas (backends/cpu/norm.c): the
 * gradients' sums as reductions on the engine in double, coefficients per
 * channel or group (norm.cu), then one element kernel for grad_input. */
#include <stdio.h>

#include "backends/cuda/op_norm.h"

static bool same_strides(const tj_tensor *a, const tj_tensor *b) {
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != 1 && a->strides[d] != b->strides[d]) return false;
    return true;
}

/* in: grad_out, input, weight, running_mean, running_var, save_mean,
 * save_invstd; attrs: train, eps. The mean used is save_mean (train) or
 * running_mean (eval); the reducer reads grad_out and input at the same
 * offsets, so they are made dense unless their strides agree. */
tj_status tjcu_native_batch_norm_backward(const tjc_call *c) {
    int train = c->attr[0].b;
    double eps = c->attr[1].f;
    const tj_tensor *xin = c->in[1];
    int64_t N = xin->sizes[0], C = xin->sizes[1], S = tjcu_norm_hxw(xin);
    double cnt = (double)(N * S);
    bool dense = !same_strides(c->in[0], c->in[1]);
    tj_tensor *g = dense ? tjcu_dense(c->op->name, c->device, c->in[0], "norm") : tj_retain(c->in[0]);
    tj_tensor *x = g ? (dense ? tjcu_dense(c->op->name, c->device, c->in[1], "norm")
                              : tj_retain(c->in[1]))
                     : NULL;
    const tj_tensor *mt = train ? c->in[5] : c->in[3], *vt = train ? c->in[6] : c->in[4];
    double *m = x ? tjcu_norm_doubles(c, mt, C) : NULL;
    double *buf = m ? tjcu_norm_scratch(c, 5 * C) : NULL;
    tj_status st = TJ_OK;
    if (!buf) {
        st = tj_last_status();
        goto done;
    }
    double *sg = buf, *sgxp = sg + C, *ra = sgxp + C, *rb = ra + C, *rd = rb + C;
    const char *sfx = tjcu_norm_sfx(x->dtype);
    char kernel[32];
    if (C > 0) {
        bool reduced[TJ_MAX_DIMS];
        int64_t out_strides[TJ_MAX_DIMS] = {0};
        for (int k = 0; k < x->ndim; k++) reduced[k] = k != 1;
        out_strides[1] = 1;
        tjcu_rgeom geo;
        tjcu_rgeom_build(&geo, x->ndim, x->sizes, x->strides, reduced, out_strides, false);
        tjcu_rargs a = {.in = tjc_data_ptr(g), .in2 = tjc_data_ptr(x), .out0 = sg, .out1 = sgxp,
                        .pa = m};
        snprintf(kernel, sizeof kernel, "gradsums_%s", sfx);
        st = tjcu_reduce_run(c->op->name, c->device, "norm", kernel, &geo, &a);
        tjcu_tensor_arg w = tjcu_norm_arg(c->in[2]), v = tjcu_norm_arg(vt);
        int wdt = c->in[2] ? (int)c->in[2]->dtype : 0, vdt = (int)vt->dtype;
        void *gw = tjc_data_ptr(c->out[1]), *gb = tjc_data_ptr(c->out[2]);
        void *args[] = {&C, &train, &eps, &cnt, &sg, &sgxp, &w, &wdt, &m, &v, &vdt,
                        &gw, &gb, &ra, &rb, &rd};
        snprintf(kernel, sizeof kernel, "bn_bwd_coef_%s", sfx);
        if (!st) st = tjcu_norm_elements(c, kernel, C, args);
    }
    if (!st && S > 0) {
        int64_t n = tjc_numel(x->sizes, x->ndim), P = C;
        tjcu_tensor_arg ga = tjcu_arg(g), xa = tjcu_arg(x);
        void *out = tjc_data_ptr(c->out[0]);
        void *args[] = {&ga, &xa, &out, &n, &S, &P, &ra, &rb, &rd};
        snprintf(kernel, sizeof kernel, "norm_affine3_%s", sfx);
        st = tjcu_norm_elements(c, kernel, n, args);
    }
done:
    if (m) tjcu_free(c->device, m);
    if (buf) tjcu_free(c->device, buf);
    tj_release(g);
    tj_release(x);
    return st;
}

/* in: grad_out, input, mean, rstd, weight, bias; attrs: normalized_shape.
 * Over [M, L]: per row s1 = sum g w and s2p = sum g w (x - mean) give
 * grad_input; per column the affine gradients. */
tj_status tjcu_native_layer_norm_backward(const tjc_call *c) {
    const tj_attr *ns = &c->attr[0];
    const tj_tensor *xin = c->in[1];
    int64_t L = tjc_numel(ns->ints.data, ns->ints.n), M = 1;
    for (int d = 0; d < xin->ndim - ns->ints.n; d++) M *= xin->sizes[d];
    tj_tensor *g = tjcu_dense(c->op->name, c->device, c->in[0], "norm");
    tj_tensor *x = g ? tjcu_dense(c->op->name, c->device, c->in[1], "norm") : NULL;
    double *mean = x ? tjcu_norm_doubles(c, c->in[2], M) : NULL;
    double *rstd = mean ? tjcu_norm_doubles(c, c->in[3], M) : NULL;
    double *buf = rstd ? tjcu_norm_scratch(c, 2 * M) : NULL;
    double *w = buf ? tjcu_norm_doubles(c, c->in[4], L) : NULL;
    tj_status st = TJ_OK;
    if (!buf || (c->in[4] && !w)) {
        st = tj_last_status();
        goto done;
    }
    double *s1 = buf, *s2p = buf + M;
    const char *sfx = tjcu_norm_sfx(x->dtype);
    const void *gp = tjc_data_ptr(g), *xp = tjc_data_ptr(x);
    if (M > 0) {
        tjcu_rargs a = {.in = gp, .in2 = xp, .out0 = s1, .out1 = s2p, .pa = mean, .pb = w};
        st = tjcu_norm_reduce_matrix(c, "lnrow", x->dtype, M, L, 1, &a);
    }
    if (!st) {
        int64_t n = M * L;
        tjcu_tensor_arg ga = tjcu_arg(g), xa = tjcu_arg(x);
        void *gx = tjc_data_ptr(c->out[0]);
        void *args[] = {&ga, &xa, &gx, &n, &L, &mean, &rstd, &w, &s1, &s2p};
        char kernel[32];
        snprintf(kernel, sizeof kernel, "ln_grad_input_%s", sfx);
        st = tjcu_norm_elements(c, kernel, n, args);
    }
    if (!st && L > 0) {
        tjcu_rargs a = {.in = gp, .in2 = xp, .out0 = tjc_data_ptr(c->out[1]),
                        .out1 = tjc_data_ptr(c->out[2]), .pa = mean, .pb = rstd};
        st = tjcu_norm_reduce_matrix(c, "lncol", x->dtype, M, L, 0, &a);
    }
done:
    if (mean) tjcu_free(c->device, mean);
    if (rstd) tjcu_free(c->device, rstd);
    if (buf) tjcu_free(c->device, buf);
    if (w) tjcu_free(c->device, w);
    tj_release(g);
    tj_release(x);
    return st;
}

/* in: grad_out, input, mean, rstd, weight; attrs: N, C, HxW, group. Per
 * (n, c) plane db = sum g and ds = sum g (x - mean of its group); then per
 * group the coefficients of grad_input, per channel the affine gradients. */
tj_status tjcu_native_group_norm_backward(const tjc_call *c) {
    int64_t N = c->attr[0].i, C = c->attr[1].i, S = c->attr[2].i, G = c->attr[3].i;
    int64_t D = C / G, NC = N * C, NG = N * G;
    tj_tensor *g = tjcu_dense(c->op->name, c->device, c->in[0], "norm");
    tj_tensor *x = g ? tjcu_dense(c->op->name, c->device, c->in[1], "norm") : NULL;
    double *mean = x ? tjcu_norm_doubles(c, c->in[2], NG) : NULL;
    double *rstd = mean ? tjcu_norm_doubles(c, c->in[3], NG) : NULL;
    double *buf = rstd ? tjcu_norm_scratch(c, 5 * NC) : NULL;
    tj_status st = TJ_OK;
    if (!buf) {
        st = tj_last_status();
        goto done;
    }
    double *db = buf, *ds = db + NC, *ra = ds + NC, *rb = ra + NC, *rd = rb + NC;
    const char *sfx = tjcu_norm_sfx(x->dtype);
    char kernel[32];
    if (NC > 0) {
        tjcu_rargs a = {.in = tjc_data_ptr(g), .in2 = tjc_data_ptr(x), .out0 = db, .out1 = ds,
                        .pa = mean, .i0 = C, .i1 = G, .i2 = D};
        st = tjcu_norm_reduce_matrix(c, "gradsums", x->dtype, NC, S, 1, &a);
        tjcu_tensor_arg w = tjcu_norm_arg(c->in[4]);
        int wdt = c->in[4] ? (int)c->in[4]->dtype : 0;
        void *args[] = {&N, &C, &G, &S, &db, &ds, &mean, &rstd, &w, &wdt, &ra, &rb, &rd};
        if (!st)
            st = tjcu_launch(c->op->name, c->device, "norm", "gn_bwd_coef",
                             (tjcu_dim3){(unsigned)((NG + 7) / 8), 1, 1}, (tjcu_dim3){32, 8, 1}, 0,
                             args);
    }
    if (!st && C > 0) {
        void *gw = tjc_data_ptr(c->out[1]), *gb = tjc_data_ptr(c->out[2]);
        void *args[] = {&N, &C, &G, &db, &ds, &rstd, &gw, &gb};
        snprintf(kernel, sizeof kernel, "gn_affine_grads_%s", sfx);
        st = tjcu_launch(c->op->name, c->device, "norm", kernel,
                         (tjcu_dim3){(unsigned)((C + 7) / 8), 1, 1}, (tjcu_dim3){32, 8, 1}, 0,
                         args);
    }
    if (!st && S > 0) {
        int64_t n = NC * S;
        tjcu_tensor_arg ga = tjcu_arg(g), xa = tjcu_arg(x);
        void *out = tjc_data_ptr(c->out[0]);
        void *args[] = {&ga, &xa, &out, &n, &S, &NC, &ra, &rb, &rd};
        snprintf(kernel, sizeof kernel, "norm_affine3_%s", sfx);
        st = tjcu_norm_elements(c, kernel, n, args);
    }
done:
    if (mean) tjcu_free(c->device, mean);
    if (rstd) tjcu_free(c->device, rstd);
    if (buf) tjcu_free(c->device, buf);
    tj_release(g);
    tj_release(x);
    return st;
}
