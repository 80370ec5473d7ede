/* linalg_rules.c — shape and dtype rules of the matmul and convolution rows of
 * ops_linalg.def, and the geometry (core/linalg.h) their kernels read. */
#include <math.h>
#include <string.h>

#include "linalg.h"

#define SZ(buf, t) tjc_fmt_sizes(buf, sizeof buf, (t)->sizes, (t)->ndim)

/* Every tensor in ts (NULLs skipped) has the dtype of the first, and that
 * dtype is one the op takes. */
static tj_status check_dtypes(const tjc_call *c, const tj_tensor *const *ts, const int *pos, int n,
                              bool allow_int) {
    const tj_tensor *first = ts[0];
    for (int i = 1; i < n; i++) {
        if (!ts[i] || ts[i]->dtype == first->dtype) continue;
        return tjc_error(TJ_ERR_DTYPE, "%s: expected '%s' and '%s' to have the same dtype; got "
                         "%s and %s", c->op->name, tjc_input_name(c->op, pos[0]),
                         tjc_input_name(c->op, pos[i]), tj_dtype_name(first->dtype),
                         tj_dtype_name(ts[i]->dtype));
    }
    if (first->dtype == TJ_F32 || first->dtype == TJ_F64 || (allow_int && first->dtype == TJ_I64))
        return TJ_OK;
    return tjc_error(TJ_ERR_DTYPE, "%s: supports %s; got %s", c->op->name,
                     allow_int ? "f32, f64 and i64" : "f32 and f64", tj_dtype_name(first->dtype));
}

static tj_status need_ndim(const tjc_call *c, int pos, int lo, int hi, const char *what) {
    const tj_tensor *t = c->in[pos];
    if (t->ndim >= lo && t->ndim <= hi) return TJ_OK;
    char b[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: '%s' must be %s; got sizes %s", c->op->name,
                     tjc_input_name(c->op, pos), what, SZ(b, t));
}

/* ---- matmul ------------------------------------------------------------------ */

tj_status tjc_mm_geometry(const tjc_call *c, tjc_mm_geom *g) {
    memset(g, 0, sizeof *g);
    const char *op = c->op->name;
    int id = c->op->id;
    int ia = id == TJ_OP_addmm ? 1 : 0, ib = ia + 1;
    const tj_tensor *a = c->in[ia], *b = c->in[ib];
    tj_status st;
    {
        const tj_tensor *ts[3] = {a, b, NULL};
        int pos[3] = {ia, ib, 0};
        int n = 2;
        if (id == TJ_OP_addmm) ts[n] = c->in[0], pos[n++] = 0;
        if (id == TJ_OP_linear) ts[n] = c->in[2], pos[n++] = 2;
        if ((st = check_dtypes(c, ts, pos, n, true))) return st;
    }
    if (id == TJ_OP_mm || id == TJ_OP_addmm) {
        if ((st = need_ndim(c, ia, 2, 2, "a matrix (2-D)")) || (st = need_ndim(c, ib, 2, 2, "a matrix (2-D)")))
            return st;
    } else if (id == TJ_OP_bmm) {
        if ((st = need_ndim(c, 0, 3, 3, "a batch of matrices (3-D)")) ||
            (st = need_ndim(c, 1, 3, 3, "a batch of matrices (3-D)")))
            return st;
    } else if (id == TJ_OP_linear) {
        if ((st = need_ndim(c, 0, 1, TJ_MAX_DIMS, "at least 1-D")) ||
            (st = need_ndim(c, 1, 1, 2, "a matrix [out_features, in_features] or a vector [in_features]")))
            return st;
    } else if ((st = need_ndim(c, 0, 1, TJ_MAX_DIMS, "at least 1-D")) ||
               (st = need_ndim(c, 1, 1, TJ_MAX_DIMS, "at least 1-D"))) {
        return st;
    }
    g->dtype = a->dtype;
    g->a = a;
    g->b = b;

    /* A as [batch..., m, k]: a vector is one row */
    int na = a->ndim, a_nb = na >= 2 ? na - 2 : 0;
    int64_t ka;
    if (na == 1) {
        g->m = 1, ka = a->sizes[0], g->a_rs = 0, g->a_cs = a->strides[0];
    } else {
        g->m = a->sizes[na - 2], ka = a->sizes[na - 1];
        g->a_rs = a->strides[na - 2], g->a_cs = a->strides[na - 1];
    }
    /* B as [batch..., k, n]: a vector is one column; linear's weight is used
     * transposed, which only swaps its strides */
    int nb = b->ndim, b_nb = 0;
    int64_t kb;
    if (id == TJ_OP_linear && nb == 2) {
        kb = b->sizes[1], g->n = b->sizes[0], g->b_rs = b->strides[1], g->b_cs = b->strides[0];
    } else if (nb == 1) { /* also linear's vector weight: input @ weight, as in PyTorch */
        kb = b->sizes[0], g->n = 1, g->b_rs = b->strides[0], g->b_cs = 0;
    } else {
        b_nb = nb - 2;
        kb = b->sizes[nb - 2], g->n = b->sizes[nb - 1];
        g->b_rs = b->strides[nb - 2], g->b_cs = b->strides[nb - 1];
    }
    g->k = ka;
    if (ka != kb) {
        char ba[TJC_SIZES_BUF], bb[TJC_SIZES_BUF];
        if (id == TJ_OP_linear)
            return tjc_error(TJ_ERR_SHAPE, "%s: cannot multiply input %s by weight %s transposed: "
                             "in_features %lld and %lld differ", op, SZ(ba, a), SZ(bb, b),
                             (long long)ka, (long long)kb);
        return tjc_error(TJ_ERR_SHAPE, "%s: cannot multiply %s by %s: inner sizes %lld and %lld "
                         "differ", op, SZ(ba, a), SZ(bb, b), (long long)ka, (long long)kb);
    }

    /* batch dims broadcast against each other (bmm: must be equal) */
    int nbatch = a_nb > b_nb ? a_nb : b_nb;
    for (int i = 0; i < nbatch; i++) {
        int da = a_nb - nbatch + i, db = b_nb - nbatch + i;
        int64_t sa = da >= 0 ? a->sizes[da] : 1, sb = db >= 0 ? b->sizes[db] : 1;
        if (sa != sb && (id == TJ_OP_bmm || (sa != 1 && sb != 1))) {
            char ba[TJC_SIZES_BUF], bb[TJC_SIZES_BUF];
            return tjc_error(TJ_ERR_SHAPE, "%s: batch sizes of %s and %s %s: %lld and %lld at "
                             "batch dim %d", op, SZ(ba, a), SZ(bb, b),
                             id == TJ_OP_bmm ? "differ" : "do not broadcast", (long long)sa,
                             (long long)sb, i);
        }
        g->batch[i] = sa == 1 ? sb : sa;
        g->a_bs[i] = da >= 0 && sa != 1 ? a->strides[da] : 0;
        g->b_bs[i] = db >= 0 && sb != 1 ? b->strides[db] : 0;
    }
    g->nbatch = nbatch;
    int nd = 0;
    for (int i = 0; i < nbatch; i++) g->out_sizes[nd++] = g->batch[i];
    if (na != 1) g->out_sizes[nd++] = g->m;
    if (nb != 1) g->out_sizes[nd++] = g->n;
    g->out_ndim = nd;

    /* the added tensor must broadcast to the result */
    const tj_tensor *add = id == TJ_OP_addmm ? c->in[0] : id == TJ_OP_linear ? c->in[2] : NULL;
    if (add) {
        bool fits = add->ndim <= nd;
        for (int i = 1; fits && i <= add->ndim; i++) {
            int64_t s = add->sizes[add->ndim - i];
            fits = s == 1 || s == g->out_sizes[nd - i];
        }
        if (!fits) {
            char ba[TJC_SIZES_BUF], bb[TJC_SIZES_BUF];
            return tjc_error(TJ_ERR_SHAPE, "%s: '%s' of sizes %s does not broadcast to the "
                             "product's sizes %s", op, tjc_input_name(c->op, id == TJ_OP_addmm ? 0 : 2),
                             SZ(ba, add), tjc_fmt_sizes(bb, sizeof bb, g->out_sizes, nd));
        }
    }
    if (id == TJ_OP_addmm && g->dtype == TJ_I64) { /* float Scalars truncate, as in PyTorch */
        double beta = c->attr[0].f, alpha = c->attr[1].f;
        if (!(fabs(beta) < 0x1p63) || !(fabs(alpha) < 0x1p63))
            return tjc_error(TJ_ERR_ARG, "%s: beta %g or alpha %g cannot be converted to i64 "
                             "without overflow (as in PyTorch)", op, beta, alpha);
    }
    return TJ_OK;
}

tj_status tjc_infer_mm(const tjc_call *c, int *n_out) {
    tjc_mm_geom g;
    tj_status st = tjc_mm_geometry(c, &g);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], g.dtype, g.out_sizes, g.out_ndim);
    return TJ_OK;
}

/* ---- convolution ---------------------------------------------------------------- */

/* Attribute positions per op: -1 where the op has none. */
typedef struct conv_attrs {
    int size, stride, padding, output_padding, dilation, groups;
} conv_attrs;

static conv_attrs attrs_of(int id) {
    if (id == TJ_OP_conv_transpose2d) return (conv_attrs){-1, 0, 1, 2, 4, 3};
    if (id == TJ_OP_conv2d_backward_input || id == TJ_OP_conv2d_backward_weight)
        return (conv_attrs){0, 1, 2, -1, 3, 4};
    return (conv_attrs){-1, 0, 1, -1, 2, 3};
}

/* (h, w) of an int[1] or int[2] attribute; conv1d's height takes dflt. */
static void pair(const tj_attr *a, int spatial, int64_t dflt, int64_t *h, int64_t *w) {
    if (spatial == 1) {
        *h = dflt;
        *w = tjc_ints_at(a, 0);
    } else {
        *h = tjc_ints_at(a, 0);
        *w = tjc_ints_at(a, 1);
    }
}

static tj_status bad_pair(const char *op, int spatial, const char *name, const char *must,
                          int64_t h, int64_t w) {
    if (spatial == 1)
        return tjc_error(TJ_ERR_ARG, "%s: %s must be %s; got [%lld]", op, name, must, (long long)w);
    return tjc_error(TJ_ERR_ARG, "%s: %s must be %s; got [%lld, %lld]", op, name, must,
                     (long long)h, (long long)w);
}

static tj_status check_params(const char *op, const tjc_conv_geom *g, int64_t oph, int64_t opw) {
    int sp = g->spatial;
    if (g->sh <= 0 || g->sw <= 0) return bad_pair(op, sp, "stride", "positive", g->sh, g->sw);
    if (g->dh <= 0 || g->dw <= 0) return bad_pair(op, sp, "dilation", "positive", g->dh, g->dw);
    if (g->ph < 0 || g->pw < 0) return bad_pair(op, sp, "padding", "non-negative", g->ph, g->pw);
    if (oph < 0 || opw < 0) return bad_pair(op, sp, "output_padding", "non-negative", oph, opw);
    /* larger output padding would add rows that no input element reaches */
    if ((oph >= g->sh && oph >= g->dh) || (opw >= g->sw && opw >= g->dw))
        return bad_pair(op, sp, "output_padding", "smaller than either stride or dilation", oph,
                        opw);
    if (g->groups <= 0)
        return tjc_error(TJ_ERR_ARG, "%s: groups must be positive; got %lld", op,
                         (long long)g->groups);
    return TJ_OK;
}

/* The forward convolution's output size along one dim, or an error when the
 * dilated kernel does not fit in the padded input. */
static tj_status out_len(const char *op, const tjc_conv_geom *g, const char *input, bool is_h,
                         int64_t *out) {
    int64_t len = is_h ? g->h : g->w, k = is_h ? g->kh : g->kw, p = is_h ? g->ph : g->pw;
    int64_t d = is_h ? g->dh : g->dw, s = is_h ? g->sh : g->sw;
    int64_t span = d * (k - 1) + 1;
    if (len + 2 * p < span) {
        if (g->spatial == 1)
            return tjc_error(TJ_ERR_SHAPE, "%s: kernel size %lld (dilated %lld) is larger than "
                             "the padded input length %lld (input %s, padding %lld)", op,
                             (long long)k, (long long)span, (long long)(len + 2 * p), input,
                             (long long)p);
        return tjc_error(TJ_ERR_SHAPE, "%s: kernel %lldx%lld (dilated %lldx%lld) is larger than "
                         "the padded input %lldx%lld (input %s, padding [%lld, %lld])", op,
                         (long long)g->kh, (long long)g->kw, (long long)(g->dh * (g->kh - 1) + 1),
                         (long long)(g->dw * (g->kw - 1) + 1), (long long)(g->h + 2 * g->ph),
                         (long long)(g->w + 2 * g->pw), input, (long long)g->ph, (long long)g->pw);
    }
    *out = (len + 2 * p - span) / s + 1;
    return TJ_OK;
}

/* Reads [n?, c, (h,) w] of an activation-like tensor into n, c, h, w. */
static void act_sizes(const int64_t *s, int batched, int spatial, int64_t *n, int64_t *c,
                      int64_t *h, int64_t *w) {
    *n = batched ? s[0] : 1;
    *c = s[batched];
    *h = spatial == 2 ? s[batched + 1] : 1;
    *w = s[batched + spatial];
}

tj_status tjc_conv_geometry(const tjc_call *c, tjc_conv_geom *g, int64_t *out_sizes,
                            int *out_ndim) {
    memset(g, 0, sizeof *g);
    const char *op = c->op->name;
    int id = c->op->id;
    bool transposed = id == TJ_OP_conv_transpose2d, bwd_in = id == TJ_OP_conv2d_backward_input,
         bwd_w = id == TJ_OP_conv2d_backward_weight;
    int spatial = g->spatial = id == TJ_OP_conv1d ? 1 : 2;
    conv_attrs at = attrs_of(id);
    tj_status st;
    {
        const tj_tensor *ts[3] = {c->in[0], c->in[1], c->n_in > 2 ? c->in[2] : NULL};
        int pos[3] = {0, 1, 2};
        /* i64 convolves, as PyTorch's CPU kernels do (the CUDA ones refuse it) */
        if ((st = check_dtypes(c, ts, pos, c->n_in, true))) return st;
    }
    pair(&c->attr[at.stride], spatial, 1, &g->sh, &g->sw);
    pair(&c->attr[at.padding], spatial, 0, &g->ph, &g->pw);
    pair(&c->attr[at.dilation], spatial, 1, &g->dh, &g->dw);
    int64_t oph = 0, opw = 0;
    if (at.output_padding >= 0) pair(&c->attr[at.output_padding], spatial, 0, &oph, &opw);
    g->groups = c->attr[at.groups].i;
    if ((st = check_params(op, g, oph, opw))) return st;

    /* the op's tensors: x is the forward input, go the forward output (or its
     * gradient); the weight comes as a tensor or, for backward_weight, as sizes */
    const tj_tensor *act = c->in[0];
    const tj_tensor *x = bwd_w ? c->in[1] : (bwd_in || transposed) ? NULL : c->in[0];
    const tj_tensor *go = (bwd_w || bwd_in || transposed) ? c->in[0] : NULL;
    int lo = spatial + 1;
    if ((st = need_ndim(c, 0, lo, lo + 1, spatial == 1 ? "2-D [C, L] or 3-D [N, C, L]"
                                                       : "3-D [C, H, W] or 4-D [N, C, H, W]")))
        return st;
    int batched = g->batched = act->ndim == lo + 1;
    int64_t wsz[4]; /* the forward weight's sizes, as [c_out, c_in/groups, (kh,) kw] */
    char bw[TJC_SIZES_BUF], bx[TJC_SIZES_BUF] = "", bg[TJC_SIZES_BUF] = "";
    if (bwd_w) {
        const tj_attr *ws = &c->attr[at.size];
        if (ws->ints.n != spatial + 2)
            return tjc_error(TJ_ERR_ARG, "%s: weight_size must have %d values; got %d", op,
                             spatial + 2, ws->ints.n);
        if ((st = need_ndim(c, 1, act->ndim, act->ndim, "of the same rank as grad_output")))
            return st;
        memcpy(wsz, ws->ints.data, sizeof(int64_t) * (size_t)(spatial + 2));
        tjc_fmt_sizes(bw, sizeof bw, wsz, spatial + 2);
    } else {
        if ((st = need_ndim(c, 1, spatial + 2, spatial + 2,
                            spatial == 1 ? "3-D [out, in / groups, k]"
                                         : "4-D [out, in / groups, kh, kw]")))
            return st;
        memcpy(wsz, c->in[1]->sizes, sizeof(int64_t) * (size_t)(spatial + 2));
        SZ(bw, c->in[1]);
    }
    for (int d = 0; d < spatial + 2; d++)
        if (wsz[d] <= 0)
            return tjc_error(TJ_ERR_SHAPE, "%s: weight %s has an empty dim", op, bw);
    /* conv_transpose2d's weight [c_in_t, c_out_t / groups, kh, kw] is the
     * forward weight [c_out, c_in / groups, kh, kw] of the same numbers */
    g->c_out = wsz[0];
    g->c_in = wsz[1] * g->groups;
    g->kh = spatial == 2 ? wsz[2] : 1;
    g->kw = wsz[spatial + 1];
    if (g->c_out % g->groups)
        return tjc_error(TJ_ERR_SHAPE, "%s: weight %s has %lld %s channels, not divisible by "
                         "groups=%lld", op, bw, (long long)g->c_out,
                         transposed ? "input" : "output", (long long)g->groups);

    int64_t gn = 0;
    if (x) {
        int64_t xc;
        act_sizes(x->sizes, batched, spatial, &g->n, &xc, &g->h, &g->w);
        SZ(bx, x);
        if (xc != g->c_in)
            return tjc_error(TJ_ERR_SHAPE, "%s: weight %s with groups=%lld expects %lld input "
                             "channels (%lld per group), but input %s has %lld", op, bw,
                             (long long)g->groups, (long long)g->c_in, (long long)wsz[1], bx,
                             (long long)xc);
    }
    if (go) {
        int64_t gc;
        act_sizes(go->sizes, batched, spatial, &gn, &gc, &g->ho, &g->wo);
        SZ(bg, go);
        if (gc != g->c_out)
            return tjc_error(TJ_ERR_SHAPE, "%s: weight %s expects %lld channels in '%s', but "
                             "'%s' %s has %lld", op, bw, (long long)g->c_out,
                             tjc_input_name(c->op, 0), tjc_input_name(c->op, 0), bg, (long long)gc);
        if (!x) g->n = gn;
    }
    if (bwd_in) {
        const tj_attr *is = &c->attr[at.size];
        char bi[TJC_SIZES_BUF];
        tjc_fmt_sizes(bi, sizeof bi, is->ints.data, is->ints.n);
        if (is->ints.n != act->ndim)
            return tjc_error(TJ_ERR_ARG, "%s: input_size must have %d values (the rank of "
                             "grad_output); got %s", op, act->ndim, bi);
        int64_t in, ic;
        act_sizes(is->ints.data, batched, spatial, &in, &ic, &g->h, &g->w);
        if (in != gn || ic != g->c_in || g->h < 0 || g->w < 0) /* empty: an empty gradient */
            return tjc_error(TJ_ERR_SHAPE, "%s: input_size %s does not fit grad_output %s and "
                             "weight %s with groups=%lld", op, bi, bg, bw, (long long)g->groups);
        tjc_fmt_sizes(bx, sizeof bx, is->ints.data, is->ints.n);
    }
    if (transposed) {
        /* as PyTorch: the spatial dims must not be empty (the derivative, a
         * convolution over the output, would find no room for the kernel) */
        if (g->ho <= 0 || g->wo <= 0)
            return tjc_error(TJ_ERR_SHAPE, "%s: input %s has an empty spatial dim", op, bg);
        g->h = (g->ho - 1) * g->sh - 2 * g->ph + g->dh * (g->kh - 1) + oph + 1;
        g->w = (g->wo - 1) * g->sw - 2 * g->pw + g->dw * (g->kw - 1) + opw + 1;
        if (g->h <= 0 || g->w <= 0)
            return tjc_error(TJ_ERR_SHAPE, "%s: input %s with weight %s, stride, padding and "
                             "dilation gives a non-positive output size %lldx%lld", op, bg, bw,
                             (long long)g->h, (long long)g->w);
    } else {
        int64_t ho, wo;
        if ((st = out_len(op, g, bx, true, &ho)) || (st = out_len(op, g, bx, false, &wo)))
            return st;
        if (go && (gn != g->n || ho != g->ho || wo != g->wo))
            return tjc_error(TJ_ERR_SHAPE, "%s: grad_output %s does not match the output of a "
                             "convolution of input %s with weight %s (stride, padding, dilation "
                             "as given)", op, bg, bx, bw);
        g->ho = ho, g->wo = wo;
    }

    /* bias: one value per output channel of the op */
    const tj_tensor *bias = c->n_in > 2 ? c->in[2] : NULL;
    int64_t out_ch = transposed ? g->c_in : g->c_out;
    if (bias && (bias->ndim != 1 || bias->sizes[0] != out_ch)) {
        char bb[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: bias must be 1-D with %lld values (the output "
                         "channels); got sizes %s", op, (long long)out_ch, SZ(bb, bias));
    }

    if (out_sizes) {
        int nd = 0;
        if (bwd_w) {
            memcpy(out_sizes, wsz, sizeof(int64_t) * (size_t)(spatial + 2));
            nd = spatial + 2;
        } else {
            bool to_input = bwd_in || transposed;
            if (batched) out_sizes[nd++] = g->n;
            out_sizes[nd++] = to_input ? g->c_in : g->c_out;
            if (spatial == 2) out_sizes[nd++] = to_input ? g->h : g->ho;
            out_sizes[nd++] = to_input ? g->w : g->wo;
        }
        *out_ndim = nd;
    }
    return TJ_OK;
}

tj_status tjc_infer_conv(const tjc_call *c, int *n_out) {
    tjc_conv_geom g;
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    tj_status st = tjc_conv_geometry(c, &g, sizes, &nd);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->in[0]->dtype, sizes, nd);
    return TJ_OK;
}
