/* pool_rules.c — shape and dtype rules of the pooling rows of ops_linalg.def
 * (max, average and adaptive average pooling, their backward ops and
 * max_pool2d_gather), and the geometry (core/linalg.h) their kernels read.
 * Output sizes follow PyTorch's pooling_output_shape, ceil_mode included. */
#include <string.h>

#include "linalg.h"

#define SZ(buf, t) tjc_fmt_sizes(buf, sizeof buf, (t)->sizes, (t)->ndim)

typedef struct pool_attrs {
    int kernel, stride, padding, dilation, ceil_mode, count_include_pad;
} pool_attrs;

static int64_t pool_out_len(int64_t len, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil) {
    int64_t num = len + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1; /* floor division */
    /* in ceil mode the last window must start inside the input or left padding */
    if (ceil && (out - 1) * s >= len + p) out--;
    return out;
}

static tj_status check_act(const tjc_call *c, int pos, tjc_pool_geom *g) {
    const tj_tensor *t = c->in[pos];
    char b[TJC_SIZES_BUF];
    if (t->ndim != 3 && t->ndim != 4)
        return tjc_error(TJ_ERR_SHAPE, "%s: '%s' must be 3-D [C, H, W] or 4-D [N, C, H, W]; got "
                         "sizes %s", c->op->name, tjc_input_name(c->op, pos), SZ(b, t));
    /* average pooling takes i64 too (integer division), as PyTorch's CPU kernels */
    bool ints = c->op->id == TJ_OP_avg_pool2d || c->op->id == TJ_OP_avg_pool2d_backward;
    if (t->dtype != TJ_F32 && t->dtype != TJ_F64 && !(ints && t->dtype == TJ_I64))
        return tjc_error(TJ_ERR_DTYPE, "%s: supports %s; got %s for '%s'", c->op->name,
                         ints ? "f32, f64 and i64" : "f32 and f64", tj_dtype_name(t->dtype),
                         tjc_input_name(c->op, pos));
    int b0 = t->ndim == 4;
    g->batched = b0;
    g->n = b0 ? t->sizes[0] : 1;
    g->c = t->sizes[b0];
    g->h = t->sizes[b0 + 1];
    g->w = t->sizes[b0 + 2];
    if (g->c <= 0 || g->h <= 0 || g->w <= 0)
        return tjc_error(TJ_ERR_SHAPE, "%s: '%s' of sizes %s has an empty channel or spatial "
                         "dim", c->op->name, tjc_input_name(c->op, pos), SZ(b, t));
    return TJ_OK;
}

/* A tensor (grad_output, indices) that must have the pooled output's sizes. */
static tj_status check_pooled(const tjc_call *c, int pos, const tjc_pool_geom *g, tj_dtype dtype) {
    const tj_tensor *t = c->in[pos];
    int64_t want[4] = {g->n, g->c, g->oh, g->ow};
    const int64_t *w = g->batched ? want : want + 1;
    int nd = g->batched ? 4 : 3;
    char bt[TJC_SIZES_BUF], bw[TJC_SIZES_BUF];
    if (t->ndim != nd || memcmp(t->sizes, w, sizeof(int64_t) * (size_t)nd) != 0)
        return tjc_error(TJ_ERR_SHAPE, "%s: '%s' has sizes %s but the pooled output has %s",
                         c->op->name, tjc_input_name(c->op, pos), SZ(bt, t),
                         tjc_fmt_sizes(bw, sizeof bw, w, nd));
    if (t->dtype != dtype)
        return tjc_error(TJ_ERR_DTYPE, "%s: '%s' must be %s; got %s", c->op->name,
                         tjc_input_name(c->op, pos), tj_dtype_name(dtype), tj_dtype_name(t->dtype));
    return TJ_OK;
}

static tj_status window_params(const tjc_call *c, pool_attrs at, int x_pos, tjc_pool_geom *g) {
    const char *op = c->op->name;
    const tj_attr *k = &c->attr[at.kernel], *s = &c->attr[at.stride], *p = &c->attr[at.padding];
    g->kh = tjc_ints_at(k, 0), g->kw = tjc_ints_at(k, 1);
    if (s->ints.n == 0) {
        g->sh = g->kh, g->sw = g->kw;
    } else if (s->ints.n <= 2) {
        g->sh = tjc_ints_at(s, 0), g->sw = tjc_ints_at(s, 1);
    } else {
        return tjc_error(TJ_ERR_ARG, "%s: stride takes 2 values, one for both, or none for "
                         "kernel_size; got %d", op, s->ints.n);
    }
    g->ph = tjc_ints_at(p, 0), g->pw = tjc_ints_at(p, 1);
    g->dh = g->dw = 1;
    if (at.dilation >= 0)
        g->dh = tjc_ints_at(&c->attr[at.dilation], 0), g->dw = tjc_ints_at(&c->attr[at.dilation], 1);
    g->ceil_mode = c->attr[at.ceil_mode].b;
    g->count_include_pad = at.count_include_pad >= 0 && c->attr[at.count_include_pad].b;
    struct { const char *name; int64_t h, w; bool ok; } checks[] = {
        {"kernel_size", g->kh, g->kw, g->kh > 0 && g->kw > 0},
        {"stride", g->sh, g->sw, g->sh > 0 && g->sw > 0},
        {"dilation", g->dh, g->dw, g->dh > 0 && g->dw > 0},
        {"padding", g->ph, g->pw, g->ph >= 0 && g->pw >= 0},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!checks[i].ok)
            return tjc_error(TJ_ERR_ARG, "%s: %s must be %s; got [%lld, %lld]", op, checks[i].name,
                             i == 3 ? "non-negative" : "positive", (long long)checks[i].h,
                             (long long)checks[i].w);
    if (g->ph > g->kh / 2 || g->pw > g->kw / 2)
        return tjc_error(TJ_ERR_ARG, "%s: padding [%lld, %lld] must be at most half of "
                         "kernel_size [%lld, %lld]", op, (long long)g->ph, (long long)g->pw,
                         (long long)g->kh, (long long)g->kw);
    tj_status st = check_act(c, x_pos, g);
    if (st) return st;
    g->oh = pool_out_len(g->h, g->kh, g->ph, g->sh, g->dh, g->ceil_mode);
    g->ow = pool_out_len(g->w, g->kw, g->pw, g->sw, g->dw, g->ceil_mode);
    if (g->oh < 1 || g->ow < 1) {
        char b[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: input %s is too small for kernel_size [%lld, %lld] "
                         "with padding [%lld, %lld] and dilation [%lld, %lld]: the output would "
                         "be %lldx%lld", op, SZ(b, c->in[x_pos]), (long long)g->kh,
                         (long long)g->kw, (long long)g->ph, (long long)g->pw, (long long)g->dh,
                         (long long)g->dw, (long long)g->oh, (long long)g->ow);
    }
    return TJ_OK;
}

static bool is_backward(int id) {
    return id == TJ_OP_max_pool2d_with_indices_backward || id == TJ_OP_avg_pool2d_backward ||
           id == TJ_OP_adaptive_avg_pool2d_backward;
}

tj_status tjc_pool_geometry(const tjc_call *c, tjc_pool_geom *g) {
    memset(g, 0, sizeof *g);
    int id = c->op->id;
    tj_status st;
    bool backward = is_backward(id);
    int x_pos = backward ? 1 : 0;
    if (id == TJ_OP_adaptive_avg_pool2d || id == TJ_OP_adaptive_avg_pool2d_backward) {
        if ((st = check_act(c, x_pos, g))) return st;
        if (backward) {
            const tj_tensor *go = c->in[0];
            if (go->ndim != c->in[1]->ndim)
                return tjc_error(TJ_ERR_SHAPE, "%s: grad_output and self must have the same "
                                 "rank; got %d and %d", c->op->name, go->ndim, c->in[1]->ndim);
            g->oh = go->sizes[go->ndim - 2], g->ow = go->sizes[go->ndim - 1];
        } else {
            if (c->attr[0].ints.n != 2) /* PyTorch's check, though int[2] takes one elsewhere */
                return tjc_error(TJ_ERR_ARG, "%s: output_size must be 2 numbers; got %d",
                                 c->op->name, c->attr[0].ints.n);
            g->oh = tjc_ints_at(&c->attr[0], 0), g->ow = tjc_ints_at(&c->attr[0], 1);
        }
        if (g->oh < 0 || g->ow < 0)
            return tjc_error(TJ_ERR_ARG, "%s: output_size must not be negative; got [%lld, %lld]",
                             c->op->name, (long long)g->oh, (long long)g->ow);
    } else {
        bool is_max = id == TJ_OP_max_pool2d_with_indices || id == TJ_OP_max_pool2d ||
                      id == TJ_OP_max_pool2d_with_indices_backward ||
                      id == TJ_OP_max_pool2d_gather;
        pool_attrs at = is_max ? (pool_attrs){0, 1, 2, 3, 4, -1} : (pool_attrs){0, 1, 2, -1, 3, 4};
        if ((st = window_params(c, at, x_pos, g))) return st;
    }
    if (backward) {
        if ((st = check_pooled(c, 0, g, c->in[1]->dtype))) return st;
        if (id == TJ_OP_max_pool2d_with_indices_backward && (st = check_pooled(c, 2, g, TJ_I64)))
            return st;
    }
    if (id == TJ_OP_max_pool2d_gather && (st = check_pooled(c, 1, g, TJ_I64))) return st;
    return TJ_OK;
}

tj_status tjc_infer_pool(const tjc_call *c, int *n_out) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int id = c->op->id;
    bool backward = is_backward(id);
    const tj_tensor *x = c->in[backward ? 1 : 0];
    tjc_meta *m = &c->meta[0];
    m->kind = TJC_OUT_NEW;
    m->dtype = x->dtype;
    m->ndim = x->ndim;
    memcpy(m->sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    *n_out = 1;
    if (!backward) { /* the pooled sizes; backward ops return self's */
        m->sizes[x->ndim - 2] = g.oh;
        m->sizes[x->ndim - 1] = g.ow;
    }
    if (id == TJ_OP_max_pool2d_with_indices) {
        c->meta[1] = *m;
        c->meta[1].dtype = TJ_I64;
        *n_out = 2;
    }
    return TJ_OK;
}
