/* grad_nn.c — derivative rules of the softmax, loss, indexing and dropout
 * rows of core/ops_nn.def, and the family's table (tjg_rules_nn), which also
 * lists the normalisation rules of grad_norm.c. Backward ops that the rules
 * emit have rules of their own, composed of ops with rules, so second (and
 * higher) derivatives work. Integer inputs (targets, indices, masks) and the
 * integer or bool outputs of multi-output ops get no gradient. */
#include <string.h>

#include "grad_nn.h"

#define G (c->grad_out[0])
#define IN(i) tjg_input(c, i)
#define OUT tjg_output(c, 0)
#define SET(i, v)                                   \
    do {                                            \
        if (c->needs[i]) c->grad_in[i] = (v);       \
    } while (0)

/* sum over one dim, kept for broadcasting */
static tjg_val sum_dim(tjg_ctx *c, tjg_val a, int64_t dim) {
    tj_attr attrs[2] = {{.ints = {&dim, 1}}, {.b = true}};
    return a ? tjg_op(c, TJ_OP_sum, &a, 1, attrs) : NULL;
}
static tjg_val sum_all(tjg_ctx *c, tjg_val a) { return tjg_nn_sum_all(c, a); }
static tjg_val exp_(tjg_ctx *c, tjg_val a) { return a ? tjg_op(c, TJ_OP_exp, &a, 1, NULL) : NULL; }

static tjg_val backward_data(tjg_ctx *c, int op, tjg_val g, tjg_val y, int64_t dim, tjg_val like) {
    tj_attr attrs[2] = {{.i = dim}, {.dtype = (tj_dtype)tjg_type(c, like).dtype}};
    return tjg_op(c, op, (tjg_val[]){g, y}, 2, attrs);
}

/* softmax: y (g - sum(g y)) */
static tj_status d_softmax(tjg_ctx *c) {
    SET(0, backward_data(c, TJ_OP_softmax_backward_data, G, OUT, tjg_attr(c, "dim")->i, IN(0)));
    return TJ_OK;
}
/* log_softmax: g - exp(y) sum(g) */
static tj_status d_log_softmax(tjg_ctx *c) {
    SET(0, backward_data(c, TJ_OP_log_softmax_backward_data, G, OUT, tjg_attr(c, "dim")->i, IN(0)));
    return TJ_OK;
}
/* r = y (go - S(go y)), S summing over dim:
 * d/dgo = y gg - y S(gg y); d/dy = gg (go - S(go y)) - go S(gg y) */
static tj_status d_softmax_backward_data(tjg_ctx *c) {
    tjg_val go = IN(0), y = IN(1), gg = G;
    int64_t dim = tjg_attr(c, "dim")->i;
    tjg_val s_ggy = sum_dim(c, tjg_mul(c, gg, y), dim);
    if (c->needs[0]) SET(0, tjg_sub(c, tjg_mul(c, y, gg), tjg_mul(c, y, s_ggy)));
    if (c->needs[1]) {
        tjg_val inner = tjg_sub(c, go, sum_dim(c, tjg_mul(c, go, y), dim));
        SET(1, tjg_sub(c, tjg_mul(c, gg, inner), tjg_mul(c, go, s_ggy)));
    }
    return TJ_OK;
}
/* r = go - e^y S(go): d/dgo = gg - S(gg e^y); d/dy = -gg e^y S(go) */
static tj_status d_log_softmax_backward_data(tjg_ctx *c) {
    tjg_val go = IN(0), y = IN(1), gg = G, e = exp_(c, IN(1));
    int64_t dim = tjg_attr(c, "dim")->i;
    if (c->needs[0]) SET(0, tjg_sub(c, gg, sum_dim(c, tjg_mul(c, gg, e), dim)));
    if (c->needs[1]) SET(1, tjg_neg(c, tjg_mul(c, tjg_mul(c, gg, e), sum_dim(c, go, dim))));
    (void)y;
    return TJ_OK;
}

/* nll_loss: its backward op; weight gets no gradient (as in PyTorch) */
static tj_status d_nll_loss(tjg_ctx *c) {
    tj_attr attrs[2] = {*tjg_attr(c, "reduction"), *tjg_attr(c, "ignore_index")};
    SET(0, tjg_op(c, TJ_OP_nll_loss_backward, (tjg_val[]){G, IN(0), IN(1), IN(2)}, 4, attrs));
    return TJ_OK;
}
/* nll_loss_backward is linear in grad_output with a coefficient that
 * does not depend on self: its gradient is nll_loss of the incoming one. */
static tj_status d_nll_loss_backward(tjg_ctx *c) {
    tj_attr attrs[2] = {*tjg_attr(c, "reduction"), *tjg_attr(c, "ignore_index")};
    SET(0, tjg_op(c, TJ_OP_nll_loss, (tjg_val[]){G, IN(2), IN(3)}, 3, attrs));
    return TJ_OK;
}
/* The summed weights of the targets not ignored (their count without weights):
 * the mean's denominator, as core/loss_composite.c computes it. */
static tjg_val kept_total(tjg_ctx *c, tjg_val t, tjg_val keep, tjg_val w) {
    if (!w) return tjg_nn_sum_all(c, keep);
    tj_type tt = tjg_type(c, t);
    int64_t n = 1;
    for (int d = 0; d < tt.ndim; d++) n *= tt.sizes[d];
    tjg_val idx = tjg_nn_reshape(c, tjg_mul(c, t, keep), &n, 1); /* an ignored one reads class 0 */
    tj_attr d0 = {.i = 0};
    tjg_val wt = tjg_op(c, TJ_OP_index_select, (tjg_val[]){w, idx}, 2, &d0);
    return tjg_nn_sum_all(c, tjg_mul(c, wt, tjg_nn_reshape(c, keep, &n, 1)));
}

/* cross_entropy_loss = nll_loss(log_softmax(x, class dim)), and with
 * label_smoothing e over C classes (1 - e) of that plus e / C of the
 * smoothing term (core/loss_composite.c), whose gradient with respect to the
 * log-probabilities is -w_c p where target != ignore_index (0 elsewhere),
 * p = g (none, sum) or g / total (mean). */
static tj_status d_cross_entropy_loss(tjg_ctx *c) {
    tjg_val x = IN(0), t = IN(1), w = IN(2);
    tj_type tx = tjg_type(c, x);
    int64_t dim = tx.ndim >= 2 ? 1 : 0;
    double e = tjg_attr(c, "label_smoothing")->f;
    tj_attr d = {.i = dim};
    tjg_val lsm = tjg_op(c, TJ_OP_log_softmax, &x, 1, &d);
    tj_attr attrs[2] = {*tjg_attr(c, "reduction"), *tjg_attr(c, "ignore_index")};
    tjg_val gl = tjg_op(c, TJ_OP_nll_loss_backward, (tjg_val[]){G, lsm, t, w}, 4, attrs);
    if (e > 0 && !c->status) {
        tj_attr ignore = {.scalar = tj_scalar_int(attrs[1].i)};
        tjg_val keep = tjg_op(c, TJ_OP_ne_scalar, &t, 1, &ignore);
        tjg_val p = G;
        if (!strcmp(attrs[0].s, "mean")) p = tjg_div(c, G, kept_total(c, t, keep, w));
        /* where, not a product: an ignored position's 0 holds even against p = g / 0 */
        tjg_val kept = tjg_op(c, TJ_OP_where, (tjg_val[]){keep, p, tjg_zeros_like(c, p)}, 3, NULL);
        tjg_val k = tjg_op(c, TJ_OP_unsqueeze, &kept, 1, &d);
        if (w) {
            int64_t shape[TJ_MAX_DIMS];
            for (int i = 0; i < tx.ndim; i++) shape[i] = i == dim ? tx.sizes[dim] : 1;
            k = tjg_mul(c, k, tjg_nn_reshape(c, w, shape, tx.ndim));
        }
        k = tjg_nn_expand(c, k, tx.sizes, tx.ndim);
        gl = tjg_add(c, tjg_scale(c, gl, 1 - e), tjg_scale(c, k, -e / (double)tx.sizes[dim]));
    }
    SET(0, backward_data(c, TJ_OP_log_softmax_backward_data, gl, lsm, dim, x));
    return TJ_OK;
}

/* mse_loss: its backward op; the target's gradient is the negation */
static tj_status d_mse_loss(tjg_ctx *c) {
    tj_attr r = *tjg_attr(c, "reduction");
    tjg_val x = IN(0);
    tj_type tx = tjg_type(c, x), tt = tjg_type(c, IN(1));
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    if (c->status) return c->status;
    bool known = tx.ndim >= 0 && tt.ndim >= 0;
    for (int d = 0; known && d < tx.ndim; d++) known = tx.sizes[d] >= 0;
    for (int d = 0; known && d < tt.ndim; d++) known = tt.sizes[d] >= 0;
    /* a target larger than self: self's gradient at the broadcast sizes, summed back
     * (tjg_nn_expand leaves x as it is when the sizes are its own) */
    if (known && !tjc_broadcast_shapes(c->op->name, tx.sizes, tx.ndim, tt.sizes, tt.ndim, sizes, &nd))
        x = tjg_nn_expand(c, x, sizes, nd);
    tjg_val gx = tjg_op(c, TJ_OP_mse_loss_backward, (tjg_val[]){G, x, IN(1)}, 3, &r);
    SET(0, tjg_sum_to_input(c, gx, 0));
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, tjg_neg(c, gx), 1));
    return TJ_OK;
}
/* r = go * k (x - t), k = 2 (2/N for mean; go is 0-dim unless reduction none) */
static tj_status d_mse_loss_backward(tjg_ctx *c) {
    tjg_val go = IN(0), x = IN(1), t = IN(2), gg = G;
    const char *red = tjg_attr(c, "reduction")->s;
    tj_type tx = tjg_type(c, x);
    double k = 2.0;
    if (!strcmp(red, "mean")) {
        int64_t n = 1;
        for (int d = 0; d < tx.ndim; d++) n *= tx.sizes[d];
        k = n ? 2.0 / (double)n : 0.0;
    }
    tjg_val diff = tjg_sub(c, x, t);
    if (c->needs[0]) {
        tjg_val gd = tjg_scale(c, tjg_mul(c, gg, diff), k);
        SET(0, strcmp(red, "none") ? sum_all(c, gd) : gd);
    }
    tjg_val gx = tjg_scale(c, tjg_mul(c, gg, go), k);
    if (c->needs[1]) SET(1, tjg_sum_to(c, gx, x));
    if (c->needs[2]) SET(2, tjg_sum_to(c, tjg_neg(c, gx), t));
    return TJ_OK;
}

/* ---- binary_cross_entropy_with_logits ------------------------------------------------
 * Per element, with s = sigmoid(x), sp = softplus(-x), lw = 1 + (pw - 1) t
 * (1 without pos_weight, where pw t is t):
 *   loss = w ((1 - t) x + lw sp),   d/dx = w (lw s - pw t)
 * and g' the loss's gradient per element: g (none, sum) or g / numel (mean). */

static tjg_val op1(tjg_ctx *c, int id, tjg_val a) { return a ? tjg_op(c, id, &a, 1, NULL) : NULL; }

static tjg_val per_element(tjg_ctx *c, tjg_val g, const char *reduction, tjg_val x) {
    if (strcmp(reduction, "mean")) return g;
    tj_type t = tjg_type(c, x);
    double n = 1;
    for (int d = 0; d < t.ndim; d++) n *= (double)t.sizes[d];
    return tjg_scale(c, g, n ? 1.0 / n : 0.0);
}

/* softplus(-x) = -a + log(e^a + e^(a - x)) for any a; a = min(x, 0) keeps
 * both exponents <= 0, and since the expression does not depend on a, its
 * derivatives are right whatever min's derivative does at the tie. */
static tjg_val softplus_neg(tjg_ctx *c, tjg_val x) {
    tj_attr zero = {.scalar = tj_scalar_float(0.0)};
    tjg_val a = tjg_op(c, TJ_OP_minimum_scalar, &x, 1, &zero);
    tjg_val e = tjg_add(c, op1(c, TJ_OP_exp, a), op1(c, TJ_OP_exp, tjg_sub(c, a, x)));
    return tjg_sub(c, op1(c, TJ_OP_log, e), a);
}

/* lw s - pw t */
static tjg_val bce_slope(tjg_ctx *c, tjg_val s, tjg_val t, tjg_val pw, tjg_val lw) {
    return tjg_sub(c, lw ? tjg_mul(c, lw, s) : s, pw ? tjg_mul(c, pw, t) : t);
}

static tjg_val log_weight(tjg_ctx *c, tjg_val t, tjg_val pw) {
    return pw ? tjg_add_scalar(c, tjg_mul(c, tjg_add_scalar(c, pw, -1.0), t), 1.0) : NULL;
}

/* self through the backward op; target, weight and pos_weight from the
 * formula (PyTorch differentiates only self and target). */
static tj_status d_bce_with_logits(tjg_ctx *c) {
    const tj_attr *red = tjg_attr(c, "reduction");
    tjg_val x = IN(0), t = IN(1), w = IN(2), pw = IN(3);
    if (c->needs[0])
        SET(0, tjg_op(c, TJ_OP_binary_cross_entropy_with_logits_backward,
                      (tjg_val[]){G, x, t, w, pw}, 5, red));
    if (!c->needs[1] && !c->needs[2] && !c->needs[3]) return TJ_OK;
    tjg_val g = per_element(c, G, red->s, x), sp = softplus_neg(c, x);
    tjg_val gw = w ? tjg_mul(c, g, w) : g;
    if (c->needs[1]) { /* w (-x + (pw - 1) sp) */
        tjg_val d = tjg_neg(c, x);
        if (pw) d = tjg_add(c, d, tjg_mul(c, tjg_add_scalar(c, pw, -1.0), sp));
        SET(1, tjg_sum_to_input(c, tjg_mul(c, gw, d), 1));
    }
    if (c->needs[2]) { /* (1 - t) x + lw sp */
        tjg_val lw = log_weight(c, t, pw);
        tjg_val term = tjg_mul(c, tjg_add_scalar(c, tjg_neg(c, t), 1.0), x);
        term = tjg_add(c, term, lw ? tjg_mul(c, lw, sp) : sp);
        SET(2, tjg_sum_to(c, tjg_mul(c, g, term), w));
    }
    if (c->needs[3]) SET(3, tjg_sum_to(c, tjg_mul(c, gw, tjg_mul(c, t, sp)), pw)); /* w t sp */
    return TJ_OK;
}

/* r = g' w (lw s - pw t) with g' from go:
 *   d/dgo  = gg w (lw s - pw t), summed over elements (and / numel) unless none
 *   d/dx   = gg g' w lw s (1 - s)        d/dt  = gg g' w ((pw - 1) s - pw)
 *   d/dw   = gg g' (lw s - pw t)         d/dpw = gg g' w t (s - 1) */
static tj_status d_bce_with_logits_backward(tjg_ctx *c) {
    const char *red = tjg_attr(c, "reduction")->s;
    tjg_val go = IN(0), x = IN(1), t = IN(2), w = IN(3), pw = IN(4), gg = G;
    tjg_val s = op1(c, TJ_OP_sigmoid, x), lw = log_weight(c, t, pw);
    tjg_val ggw = w ? tjg_mul(c, gg, w) : gg;
    tjg_val slope = c->needs[0] || c->needs[3] ? bce_slope(c, s, t, pw, lw) : NULL;
    if (c->needs[0]) {
        tjg_val v = tjg_mul(c, ggw, slope);
        if (strcmp(red, "none")) {
            tj_type tg = tjg_type(c, go);
            v = per_element(c, sum_all(c, v), red, x);
            v = tjg_nn_reshape(c, v, tg.sizes, tg.ndim); /* grad_output may be [1] */
        }
        SET(0, v);
    }
    tjg_val gp = per_element(c, go, red, x);
    tjg_val a = tjg_mul(c, ggw, gp); /* gg g' w */
    if (c->needs[1]) {
        tjg_val ds = tjg_mul(c, s, tjg_add_scalar(c, tjg_neg(c, s), 1.0));
        SET(1, tjg_sum_to(c, tjg_mul(c, lw ? tjg_mul(c, a, lw) : a, ds), x));
    }
    if (c->needs[2]) {
        tjg_val d = pw ? tjg_sub(c, tjg_mul(c, tjg_add_scalar(c, pw, -1.0), s), pw) : NULL;
        SET(2, tjg_sum_to(c, d ? tjg_mul(c, a, d) : tjg_neg(c, a), t));
    }
    if (c->needs[3]) SET(3, tjg_sum_to(c, tjg_mul(c, tjg_mul(c, gg, gp), slope), w));
    if (c->needs[4])
        SET(4, tjg_sum_to(c, tjg_mul(c, a, tjg_mul(c, t, tjg_add_scalar(c, s, -1.0))), pw));
    return TJ_OK;
}

/* ---- indexing ----------------------------------------------------------------------- */

static tj_attr int_attr(int64_t v) { return (tj_attr){.i = v}; }

/* zeros of forward input i's sizes (src's dtype) with src's elements added
 * at index along dim; input i is not saved for its sizes */
static tjg_val scatter_into_zeros(tjg_ctx *c, int i, const tj_attr *dim, tjg_val index,
                                  tjg_val src) {
    if (!src || c->status) return NULL;
    tj_type t = tjg_input_type(c, i);
    tj_attr size = {.ints = {t.sizes, t.ndim}};
    tjg_val zeros = tjg_op(c, TJ_OP_new_zeros, &src, 1, &size);
    return tjg_op(c, TJ_OP_scatter_add, (tjg_val[]){zeros, index, src}, 3, dim);
}

/* The weight's gradient sums rows of g into [num_weights, D]. */
static tj_status d_embedding(tjg_ctx *c) {
    tj_type tw = tjg_input_type(c, 0); /* the table is not saved for its sizes */
    if (c->status) return c->status;
    tj_attr a[3] = {int_attr(tw.sizes[0]), *tjg_attr(c, "padding_idx"),
                    *tjg_attr(c, "scale_grad_by_freq")};
    SET(0, tjg_op(c, TJ_OP_embedding_dense_backward, (tjg_val[]){G, IN(1)}, 2, a));
    return TJ_OK;
}

/* Linear in grad_output: r[v] = sum over i with indices[i] = v != padding_idx
 * of g[i] (divided by v's count with scale_grad_by_freq), so grad_output's
 * gradient is embedding(gg, indices) with padding positions zeroed and each
 * row divided by its index's count. The counts come from the op itself
 * (embedding_dense_backward of ones), so they match the kernel's. */
static tj_status d_embedding_dense_backward(tjg_ctx *c) {
    tjg_val idx = IN(1), gg = G;
    int64_t V = tjg_attr(c, "num_weights")->i, pad = tjg_attr(c, "padding_idx")->i;
    bool by_freq = tjg_attr(c, "scale_grad_by_freq")->b;
    tj_attr plain[2] = {int_attr(-1), {.b = false}};
    tjg_val r = tjg_op(c, TJ_OP_embedding, (tjg_val[]){gg, idx}, 2, plain);
    tj_type ti = tjg_type(c, idx);
    if (c->status) return c->status;
    int64_t col[TJ_MAX_DIMS]; /* indices' sizes, then 1: broadcasts over the embedding dim */
    for (int d = 0; d < ti.ndim; d++) col[d] = ti.sizes[d];
    col[ti.ndim] = 1;
    if (pad >= 0) {
        tj_attr p = {.scalar = tj_scalar_int(pad)};
        tjg_val keep = tjg_op(c, TJ_OP_ne_scalar, &idx, 1, &p);
        r = tjg_mul(c, r, tjg_nn_reshape(c, keep, col, ti.ndim + 1));
    }
    if (by_freq) {
        tj_attr size = {.ints = {col, ti.ndim + 1}};
        tjg_val ones = tjg_add_scalar(c, tjg_op(c, TJ_OP_new_zeros, &gg, 1, &size), 1.0);
        tj_attr a[3] = {int_attr(V), int_attr(-1), {.b = false}};
        tjg_val counts = tjg_op(c, TJ_OP_embedding_dense_backward, (tjg_val[]){ones, idx}, 2, a);
        r = tjg_div(c, r, tjg_op(c, TJ_OP_embedding, (tjg_val[]){counts, idx}, 2, plain));
    }
    SET(0, r);
    return TJ_OK;
}

/* index_select = gather with the index broadcast along the other dims, so
 * its gradient scatters g back the same way. */
static tj_status d_index_select(tjg_ctx *c) {
    const tj_attr *dim = tjg_attr(c, "dim");
    tjg_val g = G;
    tj_type tg = tjg_type(c, g);
    int d = -1;
    if (!c->status) c->status = tjc_wrap_dim(c->op->name, dim->i, tg.ndim, &d);
    if (c->status) return c->status;
    int64_t line[TJ_MAX_DIMS];
    for (int k = 0; k < tg.ndim; k++) line[k] = k == d ? tg.sizes[d] : 1;
    tjg_val index = tjg_nn_expand(c, tjg_nn_reshape(c, IN(1), line, tg.ndim), tg.sizes, tg.ndim);
    SET(0, scatter_into_zeros(c, 0, dim, index, g));
    return TJ_OK;
}

static tj_status d_gather(tjg_ctx *c) {
    SET(0, scatter_into_zeros(c, 0, tjg_attr(c, "dim"), IN(1), G));
    return TJ_OK;
}

/* self: g. src: gather(g) has index's sizes; src may be larger in any dim,
 * and its elements past the index get nothing (slice_backward pads zeros). */
static tj_status d_scatter_add(tjg_ctx *c) {
    SET(0, G);
    if (!c->needs[2]) return TJ_OK;
    const tj_attr *dim = tjg_attr(c, "dim");
    tjg_val index = IN(1), r = tjg_op(c, TJ_OP_gather, (tjg_val[]){G, index}, 2, dim);
    tj_type ti = tjg_type(c, index), ts = tjg_input_type(c, 2);
    if (c->status) return c->status;
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, ti.sizes, sizeof(int64_t) * (size_t)ti.ndim);
    for (int d = 0; d < ti.ndim; d++) {
        if (ti.sizes[d] == ts.sizes[d]) continue;
        sizes[d] = ts.sizes[d];
        tj_attr a[5] = {{.ints = {sizes, ti.ndim}}, int_attr(d), int_attr(0), int_attr(ti.sizes[d]),
                        int_attr(1)};
        r = tjg_op(c, TJ_OP_slice_backward, &r, 1, a);
    }
    SET(2, r);
    return TJ_OK;
}

/* ---- dropout -------------------------------------------------------------------------- */

/* Kept elements are scaled by 1/(1-p) in training (0 when p = 1); eval is
 * the identity. */
static double dropout_scale(double p, bool train) {
    return !train ? 1.0 : p < 1 ? 1 / (1 - p) : 0.0;
}

static tjg_val dropout_backward(tjg_ctx *c, tjg_val g, tjg_val mask, double scale) {
    tj_attr s = {.f = scale};
    return g ? tjg_op(c, TJ_OP_native_dropout_backward, (tjg_val[]){g, mask}, 2, &s) : NULL;
}

/* g mask scale; the mask (bool) gets nothing */
static tj_status d_native_dropout(tjg_ctx *c) {
    double p = tjg_attr(c, "p")->f;
    bool train = tjg_attr(c, "train")->b;
    if (!train) SET(0, G); /* the mask is all true: nothing to save */
    else SET(0, dropout_backward(c, G, tjg_output(c, 1), dropout_scale(p, train)));
    return TJ_OK;
}

/* Linear in grad_output with the same mask and scale. */
static tj_status d_native_dropout_backward(tjg_ctx *c) {
    SET(0, dropout_backward(c, G, IN(1), tjg_attr(c, "scale")->f));
    return TJ_OK;
}

/* dropout returns no mask, and the generator has moved on by the time a
 * backward graph runs, so a training-mode gradient cannot be rebuilt from the
 * node. tj_autodiff rewrites training-mode dropout into native_dropout first
 * (passes/autodiff.c), so in graphs this rule sees only the cases whose mask
 * is known; the error is for eager callers. */
static tj_status d_dropout(tjg_ctx *c) {
    double p = tjg_attr(c, "p")->f;
    bool train = tjg_attr(c, "train")->b;
    if (!train || p == 0) SET(0, G); /* everything kept, scale 1 */
    else if (p < 1)
        return c->status = tjc_error(TJ_ERR_UNSUPPORTED, "aten::dropout: no derivative in training "
                                     "mode with 0 < p < 1, since it returns no mask; use "
                                     "aten::native_dropout, which does");
    return TJ_OK; /* p = 1: everything dropped, a zero gradient */
}

const tjg_rule_entry tjg_rules_nn[] = {
    {TJ_OP_softmax, d_softmax, NULL},
    {TJ_OP_log_softmax, d_log_softmax, NULL},
    {TJ_OP_softmax_backward_data, d_softmax_backward_data, NULL},
    {TJ_OP_log_softmax_backward_data, d_log_softmax_backward_data, NULL},
    {TJ_OP_nll_loss, d_nll_loss, NULL},
    {TJ_OP_nll_loss_backward, d_nll_loss_backward, NULL},
    {TJ_OP_cross_entropy_loss, d_cross_entropy_loss, NULL},
    {TJ_OP_mse_loss, d_mse_loss, NULL},
    {TJ_OP_mse_loss_backward, d_mse_loss_backward, NULL},
    {TJ_OP_binary_cross_entropy_with_logits, d_bce_with_logits, NULL},
    {TJ_OP_binary_cross_entropy_with_logits_backward, d_bce_with_logits_backward, NULL},
    {TJ_OP_native_batch_norm, tjg_nn_d_native_batch_norm, NULL},
    {TJ_OP_batch_norm, tjg_nn_d_batch_norm, NULL},
    {TJ_OP_native_batch_norm_backward, tjg_nn_d_native_batch_norm_backward, NULL},
    {TJ_OP_batch_norm_stats, NULL,
     "split_batch_norm writes it into differentiated graphs only (the pipeline runs after "
     "autodiff); differentiate aten::batch_norm, whose rule covers the statistics"},
    {TJ_OP_native_layer_norm, tjg_nn_d_native_layer_norm, NULL},
    {TJ_OP_layer_norm, tjg_nn_d_layer_norm, NULL},
    {TJ_OP_native_layer_norm_backward, tjg_nn_d_native_layer_norm_backward, NULL},
    {TJ_OP_native_group_norm, tjg_nn_d_native_group_norm, NULL},
    {TJ_OP_group_norm, tjg_nn_d_group_norm, NULL},
    {TJ_OP_native_group_norm_backward, tjg_nn_d_native_group_norm_backward, NULL},
    {TJ_OP_embedding, d_embedding, NULL},
    {TJ_OP_embedding_dense_backward, d_embedding_dense_backward, NULL},
    {TJ_OP_index_select, d_index_select, NULL},
    {TJ_OP_gather, d_gather, NULL},
    {TJ_OP_scatter_add, d_scatter_add, NULL},
    {TJ_OP_one_hot, NULL, "its input and its result are integers: nothing to differentiate"},
    {TJ_OP_native_dropout, d_native_dropout, NULL},
    {TJ_OP_dropout, d_dropout, NULL},
    {TJ_OP_native_dropout_backward, d_native_dropout_backward, NULL},
    {-1, NULL, NULL},
};
