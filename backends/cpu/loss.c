/* loss.c — CPU kernels of mse_loss, nll_loss, cross_entropy_loss,
 * binary_cross_entropy_with_logits and their backward ops (rows of
 * core/ops_nn.def). Elements are read and computed in double; mean and sum
 * go through tjnn_sum_blocks, so a loss does not change with the thread
 * count. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "nn.h"

/* The gradient factor of element i: grad_output[i] for reduction none, else
 * the scalar grad_output (divided by the count for mean). */
typedef struct grad_scale {
    const void *g;
    tj_dtype gd;
    bool per_element;
    double scalar;
} grad_scale;

static grad_scale grad_scale_of(const tj_tensor *g, int red, double count) {
    grad_scale s = {tjc_data_ptr(g), g->dtype, red == TJC_RED_NONE, 0};
    if (!s.per_element) s.scalar = tjnn_ld(s.g, s.gd, 0) / (red == TJC_RED_MEAN ? count : 1.0);
    return s;
}

static inline double grad_at(const grad_scale *s, int64_t i) {
    return s->per_element ? tjnn_ld(s->g, s->gd, i) : s->scalar;
}

/* Stores a reduced loss: sum, or sum / count for mean. */
static void store_reduced(tj_tensor *out, int red, double sum, double count) {
    tjnn_st(tjc_data_ptr(out), out->dtype, 0, red == TJC_RED_MEAN ? sum / count : sum);
}

/* ---- mse_loss ----------------------------------------------------------------------- */

typedef struct pair_ctx {
    const void *x, *t;
    tj_dtype xd, td;
} pair_ctx;

static double mse_block(int64_t lo, int64_t hi, const void *vctx) {
    const pair_ctx *p = vctx;
    double s = 0;
    for (int64_t i = lo; i < hi; i++) {
        double d = tjnn_ld(p->x, p->xd, i) - tjnn_ld(p->t, p->td, i);
        s += d * d;
    }
    return s;
}

tj_status tjcpu_mse_loss(const tjc_call *c) {
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    if (tjc_inputs_broadcast(c, 0, 2, sizes, &nd)) /* target and self broadcast */
        return tjc_kernel_with_inputs_expanded(c, 0, 2, sizes, nd, tjcpu_mse_loss);
    int red = tjc_nn_reduction(c, 0);
    tj_tensor *x = tjnn_contig(c->in[0]), *t = tjnn_contig(c->in[1]), *out = c->out[0];
    if (!x || !t) {
        tj_release(x), tj_release(t);
        return tj_last_status();
    }
    pair_ctx p = {tjc_data_ptr(x), tjc_data_ptr(t), x->dtype, t->dtype};
    int64_t n = tjc_numel(x->sizes, x->ndim);
    if (red == TJC_RED_NONE) {
        char *o = tjc_data_ptr(out);
        int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t i = 0; i < n; i++) tjnn_st(o, out->dtype, i, mse_block(i, i + 1, &p));
    } else {
        store_reduced(out, red, tjnn_sum_blocks(n, mse_block, &p), (double)n);
    }
    tj_release(x), tj_release(t);
    return TJ_OK;
}

/* in: grad_output, self, target; attrs: reduction. gi = 2 (x - t) g */
tj_status tjcpu_mse_loss_backward(const tjc_call *c) {
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    if (tjc_inputs_broadcast(c, 1, 2, sizes, &nd)) /* target broadcasts to self */
        return tjc_kernel_with_inputs_expanded(c, 2, 1, sizes, nd, tjcpu_mse_loss_backward);
    tj_tensor *g = tjnn_contig(c->in[0]), *x = tjnn_contig(c->in[1]), *t = tjnn_contig(c->in[2]);
    tj_status st = TJ_OK;
    if (!g || !x || !t) {
        st = tj_last_status();
    } else {
        int64_t n = tjc_numel(x->sizes, x->ndim);
        grad_scale gs = grad_scale_of(g, tjc_nn_reduction(c, 0), (double)n);
        const void *xp = tjc_data_ptr(x), *tp = tjc_data_ptr(t);
        char *o = tjc_data_ptr(c->out[0]);
        tj_dtype od = c->out[0]->dtype;
        int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t i = 0; i < n; i++)
            tjnn_st(o, od, i,
                    2.0 * (tjnn_ld(xp, x->dtype, i) - tjnn_ld(tp, t->dtype, i)) * grad_at(&gs, i));
    }
    tj_release(g), tj_release(x), tj_release(t);
    return st;
}

/* ---- nll_loss ----------------------------------------------------------------------- */

/* self [N, C, S] (a 1-D self is N = S = 1), target [N, S], weight [C]. */
typedef struct nll_ctx {
    const void *x;
    tj_dtype xd;
    const int64_t *t;
    const double *w;
    int64_t C, S, ignore;
} nll_ctx;

static void nll_sizes(const tj_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    if (x->ndim == 1) {
        *N = 1, *C = x->sizes[0], *S = 1;
        return;
    }
    *N = x->sizes[0], *C = x->sizes[1], *S = 1;
    for (int d = 2; d < x->ndim; d++) *S *= x->sizes[d];
}

/* Every target is a class index or ignore_index; the message names op. */
static tj_status check_targets(const char *op, const int64_t *t, int64_t n, int64_t C,
                               int64_t ignore) {
    for (int64_t i = 0; i < n; i++)
        if (t[i] != ignore && (t[i] < 0 || t[i] >= C))
            return tjc_error(TJ_ERR_ARG, "%s: target %lld is out of bounds for %lld classes "
                             "(target element %lld; ignore_index is %lld)", op, (long long)t[i],
                             (long long)C, (long long)i, (long long)ignore);
    return TJ_OK;
}

/* -w[t] x[n, t, s] for target element i = n S + s, 0 when ignored */
static inline double nll_term(const nll_ctx *p, int64_t i) {
    int64_t k = p->t[i];
    if (k == p->ignore) return 0;
    int64_t n = i / p->S, s = i % p->S;
    return -p->w[k] * tjnn_ld(p->x, p->xd, (n * p->C + k) * p->S + s);
}

static double nll_block(int64_t lo, int64_t hi, const void *vctx) {
    double s = 0;
    for (int64_t i = lo; i < hi; i++) s += nll_term(vctx, i);
    return s;
}

static double weight_block(int64_t lo, int64_t hi, const void *vctx) {
    const nll_ctx *p = vctx;
    double s = 0;
    for (int64_t i = lo; i < hi; i++)
        if (p->t[i] != p->ignore) s += p->w[p->t[i]];
    return s;
}

/* Contiguous self and target, the weights as doubles, the checked targets. */
typedef struct nll_inputs {
    tj_tensor *x, *t;
    double *w;
    int64_t N, C, S;
    nll_ctx ctx;
} nll_inputs;

static tj_status nll_open(const char *op, tj_tensor *self, tj_tensor *target, tj_tensor *weight,
                          int64_t ignore, nll_inputs *in) {
    memset(in, 0, sizeof *in);
    nll_sizes(self, &in->N, &in->C, &in->S);
    in->x = tjnn_contig(self);
    in->t = tjnn_contig(target);
    in->w = tjnn_doubles(weight, in->C, 1.0);
    if (!in->x || !in->t || !in->w) return tj_last_status();
    const int64_t *tp = (const int64_t *)tjc_data_ptr(in->t);
    in->ctx = (nll_ctx){tjc_data_ptr(in->x), in->x->dtype, tp, in->w, in->C, in->S, ignore};
    return check_targets(op, tp, in->N * in->S, in->C, ignore);
}

static void nll_close(nll_inputs *in) {
    tj_release(in->x), tj_release(in->t);
    tjc_free(in->w);
}

/* in: self, target, weight; attrs: reduction, ignore_index */
tj_status tjcpu_nll_loss(const tjc_call *c) {
    int red = tjc_nn_reduction(c, 0);
    nll_inputs in;
    tj_status st = nll_open(c->op->name, c->in[0], c->in[1], c->in[2], c->attr[1].i, &in);
    if (!st) {
        int64_t n = in.N * in.S;
        tj_tensor *out = c->out[0];
        if (red == TJC_RED_NONE) {
            char *o = tjc_data_ptr(out);
            int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
            for (int64_t i = 0; i < n; i++) tjnn_st(o, out->dtype, i, nll_term(&in.ctx, i));
        } else {
            double sum = tjnn_sum_blocks(n, nll_block, &in.ctx);
            /* mean divides by the summed weights of the targets not ignored
             * (0/0 = NaN when every target is ignored, as PyTorch) */
            double total = red == TJC_RED_MEAN ? tjnn_sum_blocks(n, weight_block, &in.ctx) : 1;
            store_reduced(out, red, sum, total);
        }
    }
    nll_close(&in);
    return st;
}

/* in: grad_output, self, target, weight; attrs: reduction, ignore_index.
 * gi[n, t, s] = -w[t] g', zero elsewhere and at ignored targets. */
tj_status tjcpu_nll_loss_backward(const tjc_call *c) {
    int red = tjc_nn_reduction(c, 0);
    nll_inputs in;
    tj_tensor *g = tjnn_contig(c->in[0]);
    tj_status st = nll_open(c->op->name, c->in[1], c->in[2], c->in[3], c->attr[1].i, &in);
    if (!st && !g) st = tj_last_status();
    if (!st) {
        int64_t n = in.N * in.S;
        double total = red == TJC_RED_MEAN ? tjnn_sum_blocks(n, weight_block, &in.ctx) : 1;
        grad_scale gs = grad_scale_of(g, red, total);
        tj_tensor *out = c->out[0];
        char *o = tjc_data_ptr(out);
        memset(o, 0, (size_t)tjc_numel(out->sizes, out->ndim) * tj_dtype_size(out->dtype));
        int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t i = 0; i < n; i++) {
            int64_t k = in.ctx.t[i];
            if (k == in.ctx.ignore) continue;
            int64_t at = (i / in.S * in.C + k) * in.S + i % in.S;
            tjnn_st(o, out->dtype, at, -in.w[k] * grad_at(&gs, i));
        }
    }
    tj_release(g);
    nll_close(&in);
    return st;
}

/* ---- cross_entropy_loss ------------------------------------------------------------- */

/* in: self, target, weight; attrs: reduction, ignore_index, label_smoothing.
 * log_softmax over the class dim, then nll_loss and the smoothing term:
 * calls of those ops (core/loss_composite.c), so the composite computes
 * exactly what its decomposition does. */
tj_status tjcpu_cross_entropy_loss(const tjc_call *c) {
    tj_tensor *x = c->in[0];
    /* check targets first so that an error names this op, not nll_loss */
    int64_t N, C, S;
    nll_sizes(x, &N, &C, &S);
    tj_tensor *t = tjnn_contig(c->in[1]);
    if (!t) return tj_last_status();
    tj_status st = check_targets(c->op->name, (const int64_t *)tjc_data_ptr(t), N * S, C,
                                 c->attr[1].i);
    tj_release(t);
    if (st) return st;
    tj_tensor *loss = tjc_cross_entropy(c);
    st = loss ? tjcpu_copy(c->out[0], loss) : tj_last_status();
    tj_release(loss);
    return st;
}

/* ---- binary_cross_entropy_with_logits ----------------------------------------------- */

typedef struct bce_ctx {
    const void *x, *y;
    tj_dtype xd, yd;
    const double *w, *pw; /* broadcast to self's elements; NULL: ones */
} bce_ctx;

/* softplus(-x) = log(1 + exp(-x)), finite for any x */
static inline double softplus_neg(double x) { return log1p(exp(-fabs(x))) + (x < 0 ? -x : 0); }

static inline double sigmoid(double x) {
    if (x >= 0) return 1 / (1 + exp(-x));
    double e = exp(x);
    return e / (1 + e);
}

/* (1 - y) x + (1 + (pw - 1) y) softplus(-x), times w */
static inline double bce_term(const bce_ctx *p, int64_t i) {
    double x = tjnn_ld(p->x, p->xd, i), y = tjnn_ld(p->y, p->yd, i);
    double pw = p->pw ? p->pw[i] : 1, w = p->w ? p->w[i] : 1;
    return w * ((1 - y) * x + (1 + (pw - 1) * y) * softplus_neg(x));
}

static double bce_block(int64_t lo, int64_t hi, const void *vctx) {
    double s = 0;
    for (int64_t i = lo; i < hi; i++) s += bce_term(vctx, i);
    return s;
}

/* Contiguous self and target; weight and pos_weight broadcast to self's
 * sizes as f64 (NULL stays NULL). */
typedef struct bce_inputs {
    tj_tensor *x, *y, *w, *pw;
    bce_ctx ctx;
} bce_inputs;

static tj_tensor *expand_f64(tj_tensor *t, const tj_tensor *like, tj_status *st) {
    if (!t || *st) return NULL;
    tj_tensor *e = tjc_alloc(like->sizes, like->ndim, TJ_F64);
    *st = e ? tjcpu_copy(e, t) : tj_last_status();
    return e;
}

static tj_status bce_open(tj_tensor *x, tj_tensor *y, tj_tensor *w, tj_tensor *pw,
                          bce_inputs *in) {
    tj_status st = TJ_OK;
    in->x = tjnn_contig(x);
    in->y = tjnn_contig(y);
    if (!in->x || !in->y) st = tj_last_status();
    in->w = expand_f64(w, x, &st);
    in->pw = expand_f64(pw, x, &st);
    if (!st)
        in->ctx = (bce_ctx){tjc_data_ptr(in->x), tjc_data_ptr(in->y), x->dtype, y->dtype,
                            in->w ? (const double *)tjc_data_ptr(in->w) : NULL,
                            in->pw ? (const double *)tjc_data_ptr(in->pw) : NULL};
    return st;
}

static void bce_close(bce_inputs *in) {
    tj_release(in->x), tj_release(in->y), tj_release(in->w), tj_release(in->pw);
}

/* in: self, target, weight, pos_weight; attrs: reduction */
tj_status tjcpu_bce_with_logits(const tjc_call *c) {
    int red = tjc_nn_reduction(c, 0);
    tj_tensor *out = c->out[0];
    bce_inputs in;
    tj_status st = bce_open(c->in[0], c->in[1], c->in[2], c->in[3], &in);
    if (!st) {
        int64_t n = tjc_numel(c->in[0]->sizes, c->in[0]->ndim);
        if (red == TJC_RED_NONE) {
            char *o = tjc_data_ptr(out);
            int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
            for (int64_t i = 0; i < n; i++) tjnn_st(o, out->dtype, i, bce_term(&in.ctx, i));
        } else {
            store_reduced(out, red, tjnn_sum_blocks(n, bce_block, &in.ctx), (double)n);
        }
    }
    bce_close(&in);
    return st;
}

/* in: grad_output, self, target, weight, pos_weight; attrs: reduction.
 * d/dx = w ((1 + (pw - 1) y) sigmoid(x) - pw y) */
tj_status tjcpu_bce_with_logits_backward(const tjc_call *c) {
    int red = tjc_nn_reduction(c, 0);
    tj_tensor *g = tjnn_contig(c->in[0]), *out = c->out[0];
    bce_inputs in;
    tj_status st = bce_open(c->in[1], c->in[2], c->in[3], c->in[4], &in);
    if (!st && !g) st = tj_last_status();
    if (!st) {
        const bce_ctx *p = &in.ctx;
        int64_t n = tjc_numel(out->sizes, out->ndim);
        grad_scale gs = grad_scale_of(g, red, (double)n);
        char *o = tjc_data_ptr(out);
        int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t i = 0; i < n; i++) {
            double xv = tjnn_ld(p->x, p->xd, i), yv = tjnn_ld(p->y, p->yd, i);
            double pwv = p->pw ? p->pw[i] : 1, wv = p->w ? p->w[i] : 1;
            double d = wv * ((1 + (pwv - 1) * yv) * sigmoid(xv) - pwv * yv);
            tjnn_st(o, out->dtype, i, d * grad_at(&gs, i));
        }
    }
    tj_release(g);
    bce_close(&in);
    return st;
}
