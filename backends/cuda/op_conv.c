/* op_conv.c — CUDA kernels of conv1d, conv2d, conv_transpose2d and conv2d's
 * two backward ops.
 *
 * Two paths, chosen per call as ATen's _convolution chooses: cuDNN where the
 * device has it and takes the problem (tjcu_dnn_conv; inputs it cannot read
 * as they lie are packed first), else the backend's own kernels — the host
 * execution harness, and whatever cuDNN refuses. The own path is the CPU's
 * (backends/cpu/conv.c) on the GPU's pieces: for image n and group g, with
 * col = im2col(x[n, g]) of [C/g * kh * kw, Ho * Wo] and W_g the group's
 * weight as [C_out/g, C/g * kh * kw],
 *   forward          y[n, g]  = W_g @ col                 (one batched GEMM over n, g)
 *   grad of input    dx[n, g] = col2im(W_g^T @ dy[n, g])  (= conv_transpose2d)
 *   grad of weight   dW_g     = dy[g] @ col[g]^T          (images joined into the summed dim)
 * A 1x1 kernel with stride 1 and no padding has col == x itself, so forward
 * and grad of input hand the activations to the GEMM directly. Images go in
 * groups whose col fits COL_BUDGET; the weight gradient of later groups adds
 * to the first's (beta = 1).
 */
#include <stdatomic.h>
#include <stdio.h>

#include "backends/cuda/linalg.h"

/* Mirrors ConvArgs in kernels/conv.cu (same layout). */
typedef struct tjcu_conv_args {
    const void *x;
    void *y;
    const void *bias;
    int64_t bias_stride;
    int64_t nimg;
    int64_t c_in, h, w, c_out, kh, kw, ho, wo;
    int64_t sh, sw, ph, pw, dh, dw, groups;
    int64_t xs_n, xs_c, xs_h, xs_w;
    int64_t col_n, col_g, col_r;
} tjcu_conv_args;

/* Bytes of col (and packed grad_output) per group of images, unless a test
 * set another budget. */
#define COL_BUDGET ((int64_t)64 << 20)
static _Atomic int64_t col_budget;

void tjcu_conv_set_col_budget(int64_t bytes) { col_budget = bytes; }

/* An activation as [n, c, h, w] element strides (0 for dims it lacks). */
typedef struct act4 {
    char *p;
    int64_t sn, sc, sh, sw;
} act4;

static act4 act_at(void *p, const int64_t *strides, const tjc_conv_geom *g) {
    act4 v = {p, 0, 0, 0, 0};
    int d = 0;
    if (g->batched) v.sn = strides[d++];
    v.sc = strides[d++];
    if (g->spatial == 2) v.sh = strides[d++];
    v.sw = strides[d];
    return v;
}

static act4 act_of(const tj_tensor *t, const tjc_conv_geom *g) {
    return act_at(tjc_data_ptr(t), t->strides, g);
}

/* The step between positions of a [h, w] plane read as one run. */
static bool plane_step(int64_t h, int64_t w, const act4 *v, int64_t *step) {
    int64_t sizes[2] = {h, w}, strides[2] = {v->sh, v->sw};
    return tjcu_collapse(sizes, strides, 2, step);
}

static tjcu_conv_args args_of(const tjc_conv_geom *g) {
    return (tjcu_conv_args){.c_in = g->c_in, .h = g->h, .w = g->w, .c_out = g->c_out,
                            .kh = g->kh, .kw = g->kw, .ho = g->ho, .wo = g->wo,
                            .sh = g->sh, .sw = g->sw, .ph = g->ph, .pw = g->pw,
                            .dh = g->dh, .dw = g->dw, .groups = g->groups};
}

/* kernels/conv.cu's <base>_f32 or _f64 over total elements. */
/* PyTorch's CUDA convolutions take floats only (cuDNN and the GEMMs); the
 * CPU's i64 convolution has no CUDA counterpart, here as there. */
static tj_status float_only(const tjc_call *c) {
    if (tj_dtype_is_float(c->in[0]->dtype)) return TJ_OK;
    return tjc_error(TJ_ERR_DTYPE, "%s: on CUDA supports f32 and f64; got %s (integer "
                     "convolutions run on the CPU)", c->op->name, tj_dtype_name(c->in[0]->dtype));
}

static tj_status conv_launch(const tjc_call *c, tj_dtype dt, const char *base, tjcu_conv_args *a,
                             int64_t total) {
    if (total <= 0) return TJ_OK;
    char kernel[48];
    snprintf(kernel, sizeof kernel, "%s_%s", base, dt == TJ_F32 ? "f32" : "f64");
    void *args[] = {a};
    return tjcu_launch(c->op->name, c->device, "conv", kernel, tjcu_grid_for(c->device, total, 256),
                       (tjcu_dim3){256, 1, 1}, 0, args);
}

/* y[n, ch, pos] = bias[ch] for nimg images of channels x positions. */
static tj_status bias_fill(const tjc_call *c, const tj_tensor *bias, void *y, int64_t nimg,
                           int64_t channels, int64_t positions) {
    tjcu_conv_args a = {.y = y, .bias = tjc_data_ptr(bias), .bias_stride = bias->strides[0],
                        .nimg = nimg, .c_out = channels, .ho = 1, .wo = positions};
    return conv_launch(c, bias->dtype, "conv_bias_fill", &a, nimg * channels * positions);
}

/* A copy of t, contiguous, in scratch (*owned) when t is not; *p its data. */
static tj_status dense(const tjc_call *c, const tj_tensor *t, void **owned, void **p) {
    *owned = NULL;
    *p = tjc_data_ptr(t);
    if (tj_is_contiguous(t) || tj_numel(t) == 0) return TJ_OK;
    size_t es = tj_dtype_size(t->dtype);
    if (!(*owned = tjcu_malloc(c->device, (size_t)tj_numel(t) * es))) return tj_last_status();
    tjcu_tensor_arg a = tjcu_arg(t);
    *p = *owned;
    return tjcu_pack(c->op->name, c->device, &a, es, *owned);
}

static void release(const tjc_call *c, void *p) {
    if (p) tjcu_free(c->device, p);
}

/* The weight as a matrix [c_out, c_in / groups * kh * kw]: rows rs apart,
 * columns cs; packed when its inner dims do not form one run. */
typedef struct wmat {
    const char *p;
    int64_t rs, cs;
    void *owned;
} wmat;

static tj_status weight_matrix(const tjc_call *c, const tj_tensor *w, wmat *m) {
    int64_t rest = tjc_numel(w->sizes + 1, w->ndim - 1), step;
    m->owned = NULL;
    m->p = tjc_data_ptr(w);
    if (tjcu_collapse(w->sizes + 1, w->strides + 1, w->ndim - 1, &step)) {
        m->rs = w->sizes[0] > 1 ? w->strides[0] : rest;
        m->cs = step;
        return TJ_OK;
    }
    void *p;
    tj_status st = dense(c, w, &m->owned, &p);
    m->p = p, m->rs = rest, m->cs = 1;
    return st;
}

/* Images per group: col (bytes_per_image each) within the budget, at least 1. */
static int64_t images_per_group(int64_t n, int64_t bytes_per_image) {
    int64_t budget = col_budget > 0 ? col_budget : COL_BUDGET;
    int64_t k = bytes_per_image > 0 ? budget / bytes_per_image : n;
    return k < 1 ? 1 : k > n ? n : k;
}

static bool is_direct(const tjc_conv_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 &&
           g->h == g->ho && g->w == g->wo;
}

/* ---- forward ------------------------------------------------------------------------------ */

static tj_status forward_own(const tjc_call *c, const tjc_conv_geom *g, bool bias_done) {
    tj_tensor *x = c->in[0], *bias = c->in[2], *out = c->out[0];
    tj_dtype dt = x->dtype;
    size_t es = tj_dtype_size(dt);
    int64_t G = g->groups, cg = g->c_in / G, cog = g->c_out / G, ckk = cg * g->kh * g->kw;
    int64_t P = g->ho * g->wo;
    char *y = tjc_data_ptr(out);
    tj_status st = TJ_OK;
    if (bias && !bias_done && (st = bias_fill(c, bias, y, g->n, g->c_out, P))) return st;
    wmat wm;
    if ((st = weight_matrix(c, c->in[1], &wm))) {
        release(c, wm.owned);
        return st;
    }
    act4 xv = act_of(x, g);
    int64_t xstep;
    tjcu_gemm gm = {.dtype = dt, .m = cog, .n = P, .k = ckk,
                    .a = wm.p, .a_rs = wm.rs, .a_cs = wm.cs,
                    .c_rs = P, .c_cs = 1, .nbatch = 2,
                    .a_bs = {0, cog * wm.rs}, .c_bs = {g->c_out * P, cog * P},
                    .alpha = 1.0, .beta = bias ? 1.0 : 0.0};
    if (is_direct(g) && plane_step(g->h, g->w, &xv, &xstep)) {
        gm.batch[0] = g->n, gm.batch[1] = G;
        gm.b = xv.p, gm.b_rs = xv.sc, gm.b_cs = xstep;
        gm.b_bs[0] = xv.sn, gm.b_bs[1] = cg * xv.sc;
        gm.c = y;
        st = tjcu_gemm_run(c->op->name, c->device, &gm);
        release(c, wm.owned);
        return st;
    }
    int64_t per_image = G * ckk * P, group = images_per_group(g->n, per_image * (int64_t)es);
    char *col = tjcu_malloc(c->device, (size_t)(group * per_image) * es);
    if (!col) st = tj_last_status();
    for (int64_t n0 = 0; !st && n0 < g->n; n0 += group) {
        int64_t cnt = n0 + group <= g->n ? group : g->n - n0;
        tjcu_conv_args a = args_of(g);
        a.x = xv.p + (size_t)(n0 * xv.sn) * es, a.y = col, a.nimg = cnt;
        a.xs_n = xv.sn, a.xs_c = xv.sc, a.xs_h = xv.sh, a.xs_w = xv.sw;
        a.col_n = per_image, a.col_g = ckk * P, a.col_r = P;
        if ((st = conv_launch(c, dt, "conv_im2col", &a, cnt * g->c_in * g->kh * g->kw * P)))
            break;
        gm.batch[0] = cnt, gm.batch[1] = G;
        gm.b = col, gm.b_rs = P, gm.b_cs = 1;
        gm.b_bs[0] = per_image, gm.b_bs[1] = ckk * P;
        gm.c = y + (size_t)(n0 * g->c_out * P) * es;
        st = tjcu_gemm_run(c->op->name, c->device, &gm);
    }
    release(c, col);
    release(c, wm.owned);
    return st;
}

tj_status tjcu_conv_forward(const tjc_call *c) {
    tjc_conv_geom g;
    tj_status st = tjc_conv_geometry(c, &g, NULL, NULL);
    if (!st) st = float_only(c);
    if (st) return st;
    if (tjc_numel(c->out[0]->sizes, c->out[0]->ndim) == 0) return TJ_OK;
    tj_tensor *bias = c->in[2];
    bool bias_done = false;
    if (tjcu_linalg_libraries(c->device)) {
        void *xo = NULL, *wo = NULL, *xp, *wp;
        bool used = false;
        char *y = tjc_data_ptr(c->out[0]);
        if (!(st = dense(c, c->in[0], &xo, &xp)) && !(st = dense(c, c->in[1], &wo, &wp)) &&
            !(st = bias ? bias_fill(c, bias, y, g.n, g.c_out, g.ho * g.wo) : TJ_OK)) {
            bias_done = bias != NULL;
            st = tjcu_dnn_conv(c->op->name, c->device, TJCU_CONV_FORWARD, &g, c->in[0]->dtype, xp,
                               wp, y, bias ? 1.0 : 0.0, &used);
        }
        release(c, xo);
        release(c, wo);
        if (st || used) return st;
    }
    return forward_own(c, &g, bias_done);
}

/* ---- gradient of the input (and conv_transpose2d) ----------------------------------------- */

static tj_status backward_input_own(const tjc_call *c, const tjc_conv_geom *g, bool bias_done) {
    tj_tensor *bias = c->n_in > 2 ? c->in[2] : NULL, *dx = c->out[0];
    tj_dtype dt = dx->dtype;
    size_t es = tj_dtype_size(dt);
    int64_t G = g->groups, cg = g->c_in / G, cog = g->c_out / G, ckk = cg * g->kh * g->kw;
    int64_t P = g->ho * g->wo, HW = g->h * g->w;
    char *dxd = tjc_data_ptr(dx);
    tj_status st = TJ_OK;
    /* grad_output [cog, P] per image and group: its plane must be one run */
    act4 gv = act_of(c->in[0], g);
    int64_t gstep;
    void *gown = NULL;
    if (!plane_step(g->ho, g->wo, &gv, &gstep)) {
        void *p;
        if ((st = dense(c, c->in[0], &gown, &p))) {
            release(c, gown);
            return st;
        }
        int64_t strides[TJ_MAX_DIMS];
        tjc_contiguous_strides(c->in[0]->sizes, c->in[0]->ndim, strides);
        gv = act_at(p, strides, g);
        gstep = 1;
    }
    wmat wm;
    if ((st = weight_matrix(c, c->in[1], &wm))) {
        release(c, wm.owned);
        release(c, gown);
        return st;
    }
    /* W_g^T: the group's rows of the weight matrix, read transposed */
    tjcu_gemm gm = {.dtype = dt, .m = ckk, .n = P, .k = cog,
                    .a = wm.p, .a_rs = wm.cs, .a_cs = wm.rs,
                    .b = gv.p, .b_rs = gv.sc, .b_cs = gstep,
                    .c_cs = 1, .nbatch = 2,
                    .a_bs = {0, cog * wm.rs}, .b_bs = {gv.sn, cog * gv.sc},
                    .alpha = 1.0, .beta = 0.0};
    if (is_direct(g)) {
        if (bias && !bias_done) st = bias_fill(c, bias, dxd, g->n, g->c_in, HW);
        gm.batch[0] = g->n, gm.batch[1] = G;
        gm.c = dxd, gm.c_rs = HW;
        gm.c_bs[0] = g->c_in * HW, gm.c_bs[1] = cg * HW;
        gm.beta = bias ? 1.0 : 0.0;
        if (!st) st = tjcu_gemm_run(c->op->name, c->device, &gm);
    } else {
        int64_t per_image = G * ckk * P, group = images_per_group(g->n, per_image * (int64_t)es);
        char *col = tjcu_malloc(c->device, (size_t)(group * per_image) * es);
        if (!col) st = tj_last_status();
        for (int64_t n0 = 0; !st && n0 < g->n; n0 += group) {
            int64_t cnt = n0 + group <= g->n ? group : g->n - n0;
            gm.batch[0] = cnt, gm.batch[1] = G;
            gm.b = gv.p + (size_t)(n0 * gv.sn) * es;
            gm.c = col, gm.c_rs = P;
            gm.c_bs[0] = per_image, gm.c_bs[1] = ckk * P;
            if ((st = tjcu_gemm_run(c->op->name, c->device, &gm))) break;
            tjcu_conv_args a = args_of(g);
            a.x = col, a.y = dxd + (size_t)(n0 * g->c_in * HW) * es, a.nimg = cnt;
            a.col_n = per_image, a.col_g = ckk * P, a.col_r = P;
            if (bias) a.bias = tjc_data_ptr(bias), a.bias_stride = bias->strides[0];
            st = conv_launch(c, dt, "conv_col2im", &a, cnt * g->c_in * HW);
        }
        release(c, col);
    }
    release(c, wm.owned);
    release(c, gown);
    return st;
}

tj_status tjcu_conv_backward_input(const tjc_call *c) {
    tjc_conv_geom g;
    tj_status st = tjc_conv_geometry(c, &g, NULL, NULL);
    if (!st) st = float_only(c);
    if (st) return st;
    tj_tensor *bias = c->n_in > 2 ? c->in[2] : NULL, *dx = c->out[0];
    if (tjc_numel(dx->sizes, dx->ndim) == 0) return TJ_OK;
    bool bias_done = false;
    if (tjcu_linalg_libraries(c->device)) {
        void *go = NULL, *wo = NULL, *gp, *wp;
        bool used = false;
        char *dxd = tjc_data_ptr(dx);
        if (!(st = dense(c, c->in[0], &go, &gp)) && !(st = dense(c, c->in[1], &wo, &wp)) &&
            !(st = bias ? bias_fill(c, bias, dxd, g.n, g.c_in, g.h * g.w) : TJ_OK)) {
            bias_done = bias != NULL;
            st = tjcu_dnn_conv(c->op->name, c->device, TJCU_CONV_BACKWARD_DATA, &g, dx->dtype, dxd,
                               wp, gp, bias ? 1.0 : 0.0, &used);
        }
        release(c, go);
        release(c, wo);
        if (st || used) return st;
    }
    return backward_input_own(c, &g, bias_done);
}

/* ---- gradient of the weight ---------------------------------------------------------------- */

static tj_status backward_weight_own(const tjc_call *c, const tjc_conv_geom *g) {
    tj_tensor *x = c->in[1], *dw = c->out[0];
    tj_dtype dt = dw->dtype;
    size_t es = tj_dtype_size(dt);
    int64_t G = g->groups, cg = g->c_in / G, cog = g->c_out / G, ckk = cg * g->kh * g->kw;
    int64_t P = g->ho * g->wo;
    act4 xv = act_of(x, g), gv = act_of(c->in[0], g);
    /* per image: its col [G, ckk, P] and its grad_output [G, cog, P] */
    int64_t per_image = (G * ckk + g->c_out) * P;
    int64_t group = images_per_group(g->n, per_image * (int64_t)es);
    char *col = tjcu_malloc(c->device, (size_t)(group * per_image) * es);
    if (!col) return tj_last_status();
    char *dyp = col + (size_t)(group * G * ckk * P) * es;
    tj_status st = TJ_OK;
    for (int64_t n0 = 0; !st && n0 < g->n; n0 += group) {
        int64_t cnt = n0 + group <= g->n ? group : g->n - n0, kdim = cnt * P;
        /* col as [G, ckk, cnt, P]: the images join the positions in the summed dim */
        tjcu_conv_args a = args_of(g);
        a.x = xv.p + (size_t)(n0 * xv.sn) * es, a.y = col, a.nimg = cnt;
        a.xs_n = xv.sn, a.xs_c = xv.sc, a.xs_h = xv.sh, a.xs_w = xv.sw;
        a.col_n = P, a.col_g = ckk * kdim, a.col_r = kdim;
        if ((st = conv_launch(c, dt, "conv_im2col", &a, cnt * g->c_in * g->kh * g->kw * P)))
            break;
        /* grad_output as [G, cog, cnt, ho, wo], packed to [G, cog, cnt * P] */
        tjcu_tensor_arg v = {.data = gv.p + (size_t)(n0 * gv.sn) * es, .ndim = 5, .contiguous = 0,
                             .sizes = {G, cog, cnt, g->ho, g->wo},
                             .strides = {cog * gv.sc, gv.sc, gv.sn, gv.sh, gv.sw}};
        if ((st = tjcu_pack(c->op->name, c->device, &v, es, dyp))) break;
        tjcu_gemm gm = {.dtype = dt, .m = cog, .n = ckk, .k = kdim,
                        .a = dyp, .a_rs = kdim, .a_cs = 1,
                        .b = col, .b_rs = 1, .b_cs = kdim,
                        .c = tjc_data_ptr(dw), .c_rs = ckk, .c_cs = 1, .nbatch = 1,
                        .batch = {G}, .a_bs = {cog * kdim}, .b_bs = {ckk * kdim},
                        .c_bs = {cog * ckk}, .alpha = 1.0, .beta = n0 > 0 ? 1.0 : 0.0};
        st = tjcu_gemm_run(c->op->name, c->device, &gm);
    }
    release(c, col);
    return st;
}

tj_status tjcu_conv_backward_weight(const tjc_call *c) {
    tjc_conv_geom g;
    tj_status st = tjc_conv_geometry(c, &g, NULL, NULL);
    if (!st) st = float_only(c);
    if (st) return st;
    tj_tensor *dw = c->out[0];
    if (g.n == 0) /* a sum over no images */
        return tjcu_memset(c->device, tjc_data_ptr(dw), 0,
                           (size_t)tjc_numel(dw->sizes, dw->ndim) * tj_dtype_size(dw->dtype));
    if (tjcu_linalg_libraries(c->device)) {
        void *go = NULL, *xo = NULL, *gp, *xp;
        bool used = false;
        if (!(st = dense(c, c->in[0], &go, &gp)) && !(st = dense(c, c->in[1], &xo, &xp)))
            st = tjcu_dnn_conv(c->op->name, c->device, TJCU_CONV_BACKWARD_FILTER, &g, dw->dtype,
                               xp, tjc_data_ptr(dw), gp, 0.0, &used);
        release(c, go);
        release(c, xo);
        if (st || used) return st;
    }
    return backward_weight_own(c, &g);
}
