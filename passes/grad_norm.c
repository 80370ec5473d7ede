/* grad_norm.c — derivative rules of batch, layer and group normalisation and
 * of their backward ops (rows of core/ops_nn.def; grad_nn.c's table lists
 * them), plus the shape helpers of grad_nn.h.
 *
 * The choice: first-order rules emit the fused backward ops
 * (native_*_norm_backward), so a training step runs one kernel per norm; the
 * backward ops have rules of their own composed of primitive ops (sub, mul,
 * sum_to_size, mean, rsqrt, reshape, expand), after PyTorch's
 * batchnorm_double_backward and layer_norm_double_backward. So double backward
 * works, and since those rules emit only ops with rules, so does any order.
 *
 * A backward op is a function of all its inputs: the saved statistics it
 * reads (save_mean/save_invstd, mean/rstd) get gradients like any input. In a
 * derived graph those statistics are outputs of the forward op, so the
 * forward rules also take gradients for their statistic outputs (PyTorch's
 * drop them; here a second derivative needs them). The composite ops
 * (batch_norm, layer_norm, group_norm) return no statistics: their rules
 * recompute them from primitives (running batch_norm again would update the
 * running stats a second time) and pass them to the backward op, whose rule
 * then carries second derivatives through that recomputation.
 *
 * The three norms are one computation in a "work" shape in which statistics
 * and weight broadcast against the input:
 *   batch: x [N, C, *]              stats [1, C, 1...]    weight [1, C, 1...]
 *   layer: x [lead..., ns...]       stats [lead..., 1...] weight ns
 *   group: x [N, G, C/G, HxW]       stats [N, G, 1, 1]    weight [1, G, C/G, 1]
 * With K elements per statistic, xh = (x - mean) rstd and gxh = go w:
 *   gx = rstd (gxh - S(gxh)/K - xh S(gxh xh)/K)     S: summed to the stats' shape
 *   gw = P(go xh), gb = P(go)                       P: summed to the weight's shape
 * and, with the statistics held fixed (batch norm in eval), gx = rstd gxh.
 * rstd = (S((x - mean)^2)/K + eps)^(-1/2), the biased variance, as the kernels.
 */
#include <string.h>

#include "grad_nn.h"

#define G (c->grad_out[0])
#define IN(i) tjg_input(c, i)
#define OUT(i) tjg_output(c, i)
#define SET(i, v)                                   \
    do {                                            \
        if (c->needs[i]) c->grad_in[i] = (v);       \
    } while (0)

static tj_attr ints(const int64_t *v, int n) { return (tj_attr){.ints = {v, n}}; }

static bool has_sizes(const tj_type *t, const int64_t *sizes, int ndim) {
    return t->ndim == ndim &&
           (ndim == 0 || !memcmp(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim));
}

/* ---- shape helpers (grad_nn.h) ------------------------------------------------------- */

tjg_val tjg_nn_reshape(tjg_ctx *c, tjg_val a, const int64_t *sizes, int ndim) {
    if (!a || c->status) return NULL;
    tj_type t = tjg_type(c, a);
    if (has_sizes(&t, sizes, ndim)) return a;
    tj_attr s = ints(sizes, ndim);
    return tjg_op(c, TJ_OP_reshape, &a, 1, &s);
}

tjg_val tjg_nn_expand(tjg_ctx *c, tjg_val a, const int64_t *sizes, int ndim) {
    if (!a || c->status) return NULL;
    tj_type t = tjg_type(c, a);
    if (has_sizes(&t, sizes, ndim)) return a;
    tj_attr s = ints(sizes, ndim);
    return tjg_op(c, TJ_OP_expand, &a, 1, &s);
}

tjg_val tjg_nn_sum_to_sizes(tjg_ctx *c, tjg_val a, const int64_t *sizes, int ndim) {
    if (!a || c->status) return NULL;
    tj_type t = tjg_type(c, a);
    if (has_sizes(&t, sizes, ndim)) return a;
    tj_attr s = ints(sizes, ndim);
    return tjg_op(c, TJ_OP_sum_to_size, &a, 1, &s);
}

tjg_val tjg_nn_sum_all(tjg_ctx *c, tjg_val a) {
    tj_attr attrs[2] = {ints(NULL, 0), {.b = false}};
    return a ? tjg_op(c, TJ_OP_sum, &a, 1, attrs) : NULL;
}

/* a reshaped to the sizes of like (NULL stays NULL) */
static tjg_val reshape_like(tjg_ctx *c, tjg_val a, tjg_val like) {
    if (!a || c->status) return NULL;
    tj_type t = tjg_type(c, like);
    return tjg_nn_reshape(c, a, t.sizes, t.ndim);
}

/* ---- the shared computation ------------------------------------------------------------ */

typedef struct norm_fwd {
    tjg_val go, x, mean, rstd, w; /* in work shape; w NULL stands for ones */
    bool batch_stats;             /* mean and rstd are statistics of x */
    int64_t x_sizes[TJ_MAX_DIMS], stat_sizes[TJ_MAX_DIMS], w_sizes[TJ_MAX_DIMS];
    int nd, w_nd;
    double K; /* elements per statistic */
} norm_fwd;

typedef struct norm_grads {
    tjg_val go, x, mean, rstd, w;
} norm_grads;

static tjg_val sum_stat(tjg_ctx *c, const norm_fwd *f, tjg_val a) {
    return tjg_nn_sum_to_sizes(c, a, f->stat_sizes, f->nd);
}

/* mean over dims, kept */
static tjg_val mean_dims(tjg_ctx *c, tjg_val a, const int64_t *dims, int n) {
    tj_attr attrs[2] = {ints(dims, n), {.b = true}};
    return tjg_op(c, TJ_OP_mean, &a, 1, attrs);
}

static tjg_val rsqrt_plus(tjg_ctx *c, tjg_val a, double eps) {
    tjg_val s = tjg_add_scalar(c, a, eps);
    return tjg_op(c, TJ_OP_rsqrt, &s, 1, NULL);
}

static tjg_val cube(tjg_ctx *c, tjg_val a) { return tjg_mul(c, tjg_mul(c, a, a), a); }

/* The statistics of x over dims (kept), in work shape. */
static void batch_stats(tjg_ctx *c, tjg_val x, const int64_t *dims, int n, double eps,
                        tjg_val *mean, tjg_val *rstd) {
    *mean = mean_dims(c, x, dims, n);
    tjg_val xc = tjg_sub(c, x, *mean);
    *rstd = rsqrt_plus(c, mean_dims(c, tjg_mul(c, xc, xc), dims, n), eps);
}

/* The gradient of x through the statistic outputs of a forward op, from
 * mean = S(x)/K and d rstd/dx = -rstd^3 (x - mean)/K. */
static tjg_val stat_outputs_grad(tjg_ctx *c, const norm_fwd *f, tjg_val gmean, tjg_val grstd) {
    tjg_val r = NULL;
    if (grstd) {
        tjg_val k = tjg_mul(c, tjg_scale(c, grstd, -1.0 / f->K), cube(c, f->rstd));
        r = tjg_mul(c, tjg_sub(c, f->x, f->mean), k);
    }
    r = tjg_add(c, r, tjg_scale(c, gmean, 1.0 / f->K));
    return tjg_nn_expand(c, r, f->x_sizes, f->nd);
}

/* The vector-Jacobian product of (gx, gw, gb) above for incoming gradients
 * ggx (work shape of x), ggw and ggb (work shape of the weight); want says
 * which results to emit (the order of norm_grads). */
static norm_grads norm_vjp(tjg_ctx *c, const norm_fwd *f, const bool want[5], tjg_val ggx,
                           tjg_val ggw, tjg_val ggb) {
    norm_grads r = {0};
    bool w_go = want[0], w_x = want[1], w_mean = want[2], w_rstd = want[3];
    bool w_w = want[4] && f->w;
    double k = 1.0 / f->K;
    tjg_val xc = tjg_sub(c, f->x, f->mean), xh = tjg_mul(c, xc, f->rstd);
    tjg_val gxh = f->w ? tjg_mul(c, f->go, f->w) : f->go;
    tjg_val gu = tjg_mul(c, ggx, f->rstd); /* the gradient of u = gx / rstd */
    tjg_val u = gxh, B = NULL, gA = NULL, gB = NULL;
    if (f->batch_stats && ggx) { /* every term with the statistics' sums has a factor ggx */
        B = sum_stat(c, f, tjg_mul(c, gxh, xh));
        if (w_rstd) {
            tjg_val A = sum_stat(c, f, gxh);
            u = tjg_sub(c, gxh, tjg_scale(c, tjg_add(c, tjg_mul(c, xh, B), A), k));
        }
        gA = tjg_scale(c, sum_stat(c, f, gu), -k);
        gB = tjg_scale(c, sum_stat(c, f, tjg_mul(c, gu, xh)), -k);
    }
    if (w_go || w_w) {
        tjg_val g_gxh = tjg_add(c, tjg_add(c, gu, tjg_mul(c, gB, xh)), gA);
        if (w_go) {
            tjg_val g = f->w ? tjg_mul(c, g_gxh, f->w) : g_gxh;
            g = tjg_add(c, tjg_add(c, g, tjg_mul(c, ggw, xh)), ggb);
            r.go = tjg_nn_expand(c, g, f->x_sizes, f->nd);
        }
        if (w_w) r.w = tjg_nn_sum_to_sizes(c, tjg_mul(c, g_gxh, f->go), f->w_sizes, f->w_nd);
    }
    if (w_x || w_mean || w_rstd) {
        tjg_val g_xh = tjg_scale(c, tjg_neg(c, tjg_mul(c, gu, B)), k);
        g_xh = tjg_add(c, tjg_add(c, g_xh, tjg_mul(c, gB, gxh)), tjg_mul(c, ggw, f->go));
        tjg_val g_xc = tjg_mul(c, g_xh, f->rstd);
        if (w_x) r.x = tjg_nn_expand(c, g_xc, f->x_sizes, f->nd);
        if (w_mean) r.mean = tjg_neg(c, sum_stat(c, f, g_xc));
        if (w_rstd)
            r.rstd = tjg_add(c, sum_stat(c, f, tjg_mul(c, ggx, u)),
                             sum_stat(c, f, tjg_mul(c, g_xh, xc)));
    }
    return r;
}

/* ---- batch norm ---------------------------------------------------------------------- */

/* Work shapes of batch norm on x [N, C, *]; false with c->status set when x
 * has no tensor type. */
static bool bn_shape(tjg_ctx *c, tjg_val x, norm_fwd *f) {
    tj_type t = tjg_type(c, x);
    if (c->status || t.ndim < 2) {
        if (!c->status) c->status = tjc_error(TJ_ERR_INTERNAL, "%s's rule: input of %d dims",
                                              c->op->name, t.ndim);
        return false;
    }
    f->nd = f->w_nd = t.ndim;
    double n = 1;
    for (int d = 0; d < t.ndim; d++) {
        f->x_sizes[d] = t.sizes[d];
        f->stat_sizes[d] = f->w_sizes[d] = d == 1 ? t.sizes[1] : 1;
        n *= (double)t.sizes[d];
    }
    f->K = t.sizes[1] ? n / (double)t.sizes[1] : 1;
    return true;
}

static tjg_val as_channel(tjg_ctx *c, const norm_fwd *f, tjg_val v) {
    return tjg_nn_reshape(c, v, f->stat_sizes, f->nd);
}
static tjg_val as_vector(tjg_ctx *c, const norm_fwd *f, tjg_val v) {
    return tjg_nn_reshape(c, v, &f->stat_sizes[1], 1);
}

/* native_batch_norm_backward(g, x, weight, ...) into out[3]: in training from
 * the batch statistics sm, si ([C]), in eval from the running stats. */
static void bn_backward(tjg_ctx *c, bool train, double eps, tjg_val x, tjg_val sm, tjg_val si,
                        tjg_val out[3]) {
    tjg_val in[7] = {G, x, IN(1), train ? NULL : IN(3), train ? NULL : IN(4), sm, si};
    tj_attr a[2] = {{.b = train}, {.f = eps}};
    tjg_op_n(c, TJ_OP_native_batch_norm_backward, in, 7, a, out, 3);
}

/* Running stats are updated in place and get no gradient. */
tj_status tjg_nn_d_native_batch_norm(tjg_ctx *c) {
    bool train = tjg_attr(c, "training")->b;
    double eps = tjg_attr(c, "eps")->f;
    norm_fwd f = {.x = IN(0)};
    if (!bn_shape(c, f.x, &f)) return c->status;
    tjg_val gx = NULL, out[3] = {NULL, NULL, NULL};
    if (G) {
        bn_backward(c, train, eps, f.x, train ? OUT(1) : NULL, train ? OUT(2) : NULL, out);
        gx = out[0];
        SET(1, out[1]);
        SET(2, out[2]);
    }
    /* in eval the statistic outputs are the running stats' */
    if (train && c->needs[0] && (c->grad_out[1] || c->grad_out[2])) {
        f.mean = as_channel(c, &f, OUT(1));
        f.rstd = as_channel(c, &f, OUT(2));
        tjg_val extra = stat_outputs_grad(c, &f, as_channel(c, &f, c->grad_out[1]),
                                          as_channel(c, &f, c->grad_out[2]));
        gx = tjg_add(c, gx, extra);
    }
    SET(0, gx);
    return TJ_OK;
}

tj_status tjg_nn_d_batch_norm(tjg_ctx *c) {
    bool train = tjg_attr(c, "training")->b;
    double eps = tjg_attr(c, "eps")->f;
    norm_fwd f = {.x = IN(0)};
    if (!G || !bn_shape(c, f.x, &f)) return c->status;
    tjg_val sm = NULL, si = NULL, out[3] = {NULL, NULL, NULL};
    if (train) {
        int64_t dims[TJ_MAX_DIMS];
        int n = 0;
        for (int d = 0; d < f.nd; d++)
            if (d != 1) dims[n++] = d;
        batch_stats(c, f.x, dims, n, eps, &sm, &si);
        sm = as_vector(c, &f, sm);
        si = as_vector(c, &f, si);
    }
    bn_backward(c, train, eps, f.x, sm, si, out);
    SET(0, out[0]);
    SET(1, out[1]);
    SET(2, out[2]);
    return TJ_OK;
}

/* inputs: grad_out, input, weight, running_mean, running_var, save_mean,
 * save_invstd; in eval rstd = rsqrt(running_var + eps), so running_var's
 * gradient is rstd's times -rstd^3/2. */
tj_status tjg_nn_d_native_batch_norm_backward(tjg_ctx *c) {
    bool train = tjg_attr(c, "train")->b;
    double eps = tjg_attr(c, "eps")->f;
    norm_fwd f = {.go = IN(0), .x = IN(1), .batch_stats = train};
    if (!bn_shape(c, f.x, &f)) return c->status;
    f.w = as_channel(c, &f, IN(2));
    int mi = train ? 5 : 3, ri = train ? 6 : 4;
    f.mean = as_channel(c, &f, IN(mi));
    f.rstd = train ? as_channel(c, &f, IN(ri)) : rsqrt_plus(c, as_channel(c, &f, IN(ri)), eps);
    bool want[5] = {c->needs[0], c->needs[1], c->needs[mi], c->needs[ri], c->needs[2]};
    norm_grads g = norm_vjp(c, &f, want, c->grad_out[0], as_channel(c, &f, c->grad_out[1]),
                            as_channel(c, &f, c->grad_out[2]));
    SET(0, g.go);
    SET(1, g.x);
    SET(2, as_vector(c, &f, g.w));
    SET(mi, as_vector(c, &f, g.mean));
    tjg_val grstd = g.rstd;
    if (!train) grstd = tjg_mul(c, grstd, tjg_scale(c, cube(c, f.rstd), -0.5));
    SET(ri, as_vector(c, &f, grstd));
    return TJ_OK;
}

/* ---- layer norm ---------------------------------------------------------------------- */

/* Work shapes of layer norm on x (input i) normalised over ns: the work
 * shape is x's own; dims receives the normalised dims (may be NULL). */
static bool ln_shape(tjg_ctx *c, tjg_val x, const tj_attr *ns, norm_fwd *f, int64_t *dims) {
    tj_type t = tjg_type(c, x);
    int k = ns->ints.n, lead = t.ndim - k;
    if (c->status || k < 1 || lead < 0) {
        if (!c->status) c->status = tjc_error(TJ_ERR_INTERNAL, "%s's rule: bad normalized_shape",
                                              c->op->name);
        return false;
    }
    f->nd = t.ndim;
    f->w_nd = k;
    double L = 1;
    for (int d = 0; d < t.ndim; d++) {
        f->x_sizes[d] = t.sizes[d];
        f->stat_sizes[d] = d < lead ? t.sizes[d] : 1;
        if (d >= lead) {
            f->w_sizes[d - lead] = t.sizes[d];
            L *= (double)t.sizes[d];
            if (dims) dims[d - lead] = d;
        }
    }
    f->K = L;
    return true;
}

tj_status tjg_nn_d_native_layer_norm(tjg_ctx *c) {
    const tj_attr *ns = tjg_attr(c, "normalized_shape");
    norm_fwd f = {.x = IN(0)};
    if (!ln_shape(c, f.x, ns, &f, NULL)) return c->status;
    tjg_val gx = NULL;
    if (G) { /* bias does not enter the backward op: not passed, not saved */
        tjg_val out[3] = {NULL, NULL, NULL}, in[6] = {G, f.x, OUT(1), OUT(2), IN(1), NULL};
        tjg_op_n(c, TJ_OP_native_layer_norm_backward, in, 6, ns, out, 3);
        gx = out[0];
        SET(1, out[1]);
        SET(2, out[2]);
    }
    if (c->needs[0] && (c->grad_out[1] || c->grad_out[2])) {
        f.mean = OUT(1);
        f.rstd = OUT(2);
        gx = tjg_add(c, gx, stat_outputs_grad(c, &f, c->grad_out[1], c->grad_out[2]));
    }
    SET(0, gx);
    return TJ_OK;
}

tj_status tjg_nn_d_layer_norm(tjg_ctx *c) {
    const tj_attr *ns = tjg_attr(c, "normalized_shape");
    double eps = tjg_attr(c, "eps")->f;
    int64_t dims[TJ_MAX_DIMS];
    norm_fwd f = {.x = IN(0)};
    if (!G || !ln_shape(c, f.x, ns, &f, dims)) return c->status;
    tjg_val mean, rstd, out[3] = {NULL, NULL, NULL};
    batch_stats(c, f.x, dims, ns->ints.n, eps, &mean, &rstd);
    tjg_val in[6] = {G, f.x, mean, rstd, IN(1), NULL};
    tjg_op_n(c, TJ_OP_native_layer_norm_backward, in, 6, ns, out, 3);
    SET(0, out[0]);
    SET(1, out[1]);
    SET(2, out[2]);
    return TJ_OK;
}

/* inputs: grad_out, input, mean, rstd, weight, bias (which enters nothing);
 * mean and rstd may come in any sizes with the statistics' count. */
tj_status tjg_nn_d_native_layer_norm_backward(tjg_ctx *c) {
    const tj_attr *ns = tjg_attr(c, "normalized_shape");
    norm_fwd f = {.go = IN(0), .x = IN(1), .w = IN(4), .batch_stats = true};
    if (!ln_shape(c, f.x, ns, &f, NULL)) return c->status;
    f.mean = tjg_nn_reshape(c, IN(2), f.stat_sizes, f.nd);
    f.rstd = tjg_nn_reshape(c, IN(3), f.stat_sizes, f.nd);
    bool want[5] = {c->needs[0], c->needs[1], c->needs[2], c->needs[3], c->needs[4]};
    norm_grads g = norm_vjp(c, &f, want, c->grad_out[0], c->grad_out[1], c->grad_out[2]);
    SET(0, g.go);
    SET(1, g.x);
    if (c->needs[2]) SET(2, reshape_like(c, g.mean, IN(2)));
    if (c->needs[3]) SET(3, reshape_like(c, g.rstd, IN(3)));
    SET(4, g.w);
    return TJ_OK;
}

/* ---- group norm ---------------------------------------------------------------------- */

/* Work shapes of group norm for N, C, HxW and G groups; the input's own
 * sizes (x) are kept in sizes/nd for reshaping back. */
typedef struct gn_geom {
    int64_t N, C, S, groups;
    int64_t sizes[TJ_MAX_DIMS], stat2[2];
    int nd;
} gn_geom;

static bool gn_shape(tjg_ctx *c, tjg_val x, int64_t N, int64_t C, int64_t S, int64_t Gr,
                     norm_fwd *f, gn_geom *gm) {
    tj_type t = tjg_type(c, x);
    if (c->status || Gr <= 0 || C % Gr) {
        if (!c->status) c->status = tjc_error(TJ_ERR_INTERNAL, "%s's rule: bad groups",
                                              c->op->name);
        return false;
    }
    *gm = (gn_geom){.N = N, .C = C, .S = S, .groups = Gr, .stat2 = {N, Gr}, .nd = t.ndim};
    memcpy(gm->sizes, t.sizes, sizeof(int64_t) * (size_t)t.ndim);
    int64_t D = C / Gr;
    int64_t xs[4] = {N, Gr, D, S}, ss[4] = {N, Gr, 1, 1}, ws[4] = {1, Gr, D, 1};
    memcpy(f->x_sizes, xs, sizeof xs);
    memcpy(f->stat_sizes, ss, sizeof ss);
    memcpy(f->w_sizes, ws, sizeof ws);
    f->nd = f->w_nd = 4;
    f->K = (double)(D * S);
    return true;
}

static tjg_val to_work(tjg_ctx *c, const norm_fwd *f, tjg_val v) {
    return tjg_nn_reshape(c, v, f->x_sizes, 4);
}
static tjg_val to_stat(tjg_ctx *c, const norm_fwd *f, tjg_val v) {
    return tjg_nn_reshape(c, v, f->stat_sizes, 4);
}
static tjg_val to_wshape(tjg_ctx *c, const norm_fwd *f, tjg_val v) {
    return tjg_nn_reshape(c, v, f->w_sizes, 4);
}

/* native_group_norm_backward(g, x, mean, rstd, weight) into out[3] */
static void gn_backward(tjg_ctx *c, const gn_geom *gm, tjg_val x, tjg_val mean, tjg_val rstd,
                        tjg_val out[3]) {
    tjg_val in[5] = {G, x, mean, rstd, IN(1)};
    tj_attr a[4] = {{.i = gm->N}, {.i = gm->C}, {.i = gm->S}, {.i = gm->groups}};
    tjg_op_n(c, TJ_OP_native_group_norm_backward, in, 5, a, out, 3);
}

tj_status tjg_nn_d_native_group_norm(tjg_ctx *c) {
    norm_fwd f = {0};
    gn_geom gm;
    tjg_val x = IN(0);
    if (!gn_shape(c, x, tjg_attr(c, "N")->i, tjg_attr(c, "C")->i, tjg_attr(c, "HxW")->i,
                  tjg_attr(c, "group")->i, &f, &gm))
        return c->status;
    tjg_val gx = NULL;
    if (G) {
        tjg_val out[3] = {NULL, NULL, NULL};
        gn_backward(c, &gm, x, OUT(1), OUT(2), out);
        gx = out[0];
        SET(1, out[1]);
        SET(2, out[2]);
    }
    if (c->needs[0] && (c->grad_out[1] || c->grad_out[2])) {
        f.x = to_work(c, &f, x);
        f.mean = to_stat(c, &f, OUT(1));
        f.rstd = to_stat(c, &f, OUT(2));
        tjg_val extra = stat_outputs_grad(c, &f, to_stat(c, &f, c->grad_out[1]),
                                          to_stat(c, &f, c->grad_out[2]));
        gx = tjg_add(c, gx, tjg_nn_reshape(c, extra, gm.sizes, gm.nd));
    }
    SET(0, gx);
    return TJ_OK;
}

tj_status tjg_nn_d_group_norm(tjg_ctx *c) {
    tjg_val x = IN(0);
    if (!G) return c->status;
    tj_type t = tjg_type(c, x);
    int64_t S = 1;
    for (int d = 2; d < t.ndim; d++) S *= t.sizes[d];
    norm_fwd f = {0};
    gn_geom gm;
    if (!c->status && t.ndim < 2)
        c->status = tjc_error(TJ_ERR_INTERNAL, "%s's rule: input of %d dims", c->op->name, t.ndim);
    if (c->status || !gn_shape(c, x, t.sizes[0], t.sizes[1], S, tjg_attr(c, "num_groups")->i,
                               &f, &gm))
        return c->status;
    static const int64_t dims[2] = {2, 3};
    tjg_val mean, rstd, out[3] = {NULL, NULL, NULL};
    batch_stats(c, to_work(c, &f, x), dims, 2, tjg_attr(c, "eps")->f, &mean, &rstd);
    gn_backward(c, &gm, x, tjg_nn_reshape(c, mean, gm.stat2, 2),
                tjg_nn_reshape(c, rstd, gm.stat2, 2), out);
    SET(0, out[0]);
    SET(1, out[1]);
    SET(2, out[2]);
    return TJ_OK;
}

/* inputs: grad_out, input, mean, rstd, weight; attrs N, C, HxW, group */
tj_status tjg_nn_d_native_group_norm_backward(tjg_ctx *c) {
    norm_fwd f = {.batch_stats = true};
    gn_geom gm;
    tjg_val x = IN(1);
    if (!gn_shape(c, x, tjg_attr(c, "N")->i, tjg_attr(c, "C")->i, tjg_attr(c, "HxW")->i,
                  tjg_attr(c, "group")->i, &f, &gm))
        return c->status;
    f.go = to_work(c, &f, IN(0));
    f.x = to_work(c, &f, x);
    f.mean = to_stat(c, &f, IN(2));
    f.rstd = to_stat(c, &f, IN(3));
    f.w = to_wshape(c, &f, IN(4));
    bool want[5] = {c->needs[0], c->needs[1], c->needs[2], c->needs[3], c->needs[4]};
    norm_grads g = norm_vjp(c, &f, want, to_work(c, &f, c->grad_out[0]),
                            to_wshape(c, &f, c->grad_out[1]), to_wshape(c, &f, c->grad_out[2]));
    SET(0, tjg_nn_reshape(c, g.go, gm.sizes, gm.nd));
    SET(1, tjg_nn_reshape(c, g.x, gm.sizes, gm.nd));
    if (c->needs[2]) SET(2, reshape_like(c, g.mean, IN(2)));
    if (c->needs[3]) SET(3, reshape_like(c, g.rstd, IN(3)));
    SET(4, tjg_nn_reshape(c, g.w, &gm.C, 1));
    return TJ_OK;
}
