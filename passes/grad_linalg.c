/* grad_linalg.c — derivative rules of the matmul, convolution and pooling
 * family (grad.h). g is the output's gradient.
 *
 * Every rule is a composition of ops with rules of their own, so backward
 * graphs differentiate again. The convolutions are linear in each operand, so
 * the backward ops' rules are conv2d and the other backward op with the roles
 * of the operands swapped (derived at each rule). The pooling ops are linear
 * in what they pool: avg_pool2d and avg_pool2d_backward are each other's
 * adjoint, likewise adaptive_avg_pool2d and its backward, and
 * max_pool2d_with_indices_backward's is max_pool2d_gather, which reads at the
 * same indices. The backward ops read their forward input only for its sizes,
 * so it gets no gradient. */
#include "grad.h"

#define G (c->grad_out[0])
#define IN(i) tjg_input(c, i)
#define SET(i, v)                                   \
    do {                                            \
        if (c->needs[i]) c->grad_in[i] = (v);       \
    } while (0)

static tjg_val t2(tjg_ctx *c, tjg_val a) { return a ? tjg_op(c, TJ_OP_t, &a, 1, NULL) : NULL; }
/* a with its last two dims swapped */
static tjg_val mT(tjg_ctx *c, tjg_val a) {
    tj_attr dims[2] = {{.i = -2}, {.i = -1}};
    return a ? tjg_op(c, TJ_OP_transpose, &a, 1, dims) : NULL;
}
static tjg_val mm(tjg_ctx *c, tjg_val a, tjg_val b) {
    return a && b ? tjg_op(c, TJ_OP_mm, (tjg_val[]){a, b}, 2, NULL) : NULL;
}
static tjg_val matmul(tjg_ctx *c, tjg_val a, tjg_val b) {
    return a && b ? tjg_op(c, TJ_OP_matmul, (tjg_val[]){a, b}, 2, NULL) : NULL;
}
static tjg_val reshape(tjg_ctx *c, tjg_val a, const int64_t *sizes, int n) {
    tj_attr shape = {.ints = {sizes, n}};
    return a ? tjg_op(c, TJ_OP_reshape, &a, 1, &shape) : NULL;
}
static tjg_val unsqueeze(tjg_ctx *c, tjg_val a, int64_t dim) {
    tj_attr d = {.i = dim};
    return a ? tjg_op(c, TJ_OP_unsqueeze, &a, 1, &d) : NULL;
}

/* mm: [n, k] @ [k, m] */
static tj_status d_mm(tjg_ctx *c) {
    if (c->needs[0]) SET(0, mm(c, G, t2(c, IN(1))));
    if (c->needs[1]) SET(1, mm(c, t2(c, IN(0)), G));
    return TJ_OK;
}

/* bmm: [b, n, k] @ [b, k, m] */
static tj_status d_bmm(tjg_ctx *c) {
    if (c->needs[0]) SET(0, tjg_op(c, TJ_OP_bmm, (tjg_val[]){G, mT(c, IN(1))}, 2, NULL));
    if (c->needs[1]) SET(1, tjg_op(c, TJ_OP_bmm, (tjg_val[]){mT(c, IN(0)), G}, 2, NULL));
    return TJ_OK;
}

/* matmul with PyTorch's rules: a 1-D operand acts as a row (left) or a column
 * (right) that the result drops; batch dims broadcast and are summed back. */
static tj_status d_matmul(tjg_ctx *c) {
    tjg_val a = IN(0), b = IN(1), g = G;
    tj_type ta = tjg_type(c, a), tb = tjg_type(c, b);
    if (ta.ndim == 1 && tb.ndim == 1) { /* a dot product */
        SET(0, tjg_mul(c, g, b));
        SET(1, tjg_mul(c, g, a));
        return TJ_OK;
    }
    tjg_val a2 = ta.ndim == 1 ? unsqueeze(c, a, 0) : a;  /* [1, k] */
    tjg_val b2 = tb.ndim == 1 ? unsqueeze(c, b, -1) : b; /* [k, 1] */
    tjg_val g2 = g;
    if (ta.ndim == 1) g2 = unsqueeze(c, g2, -2);
    if (tb.ndim == 1) g2 = unsqueeze(c, g2, -1);
    if (c->needs[0]) {
        tjg_val ga = tjg_sum_to(c, matmul(c, g2, mT(c, b2)), a2);
        SET(0, ta.ndim == 1 ? reshape(c, ga, ta.sizes, 1) : ga);
    }
    if (c->needs[1]) {
        tjg_val gb = tjg_sum_to(c, matmul(c, mT(c, a2), g2), b2);
        SET(1, tb.ndim == 1 ? reshape(c, gb, tb.sizes, 1) : gb);
    }
    return TJ_OK;
}

/* addmm: beta self + alpha m1 @ m2 */
static tj_status d_addmm(tjg_ctx *c) {
    double beta = tjg_attr(c, "beta")->f, alpha = tjg_attr(c, "alpha")->f;
    if (c->needs[0]) SET(0, tjg_sum_to(c, tjg_scale(c, G, beta), IN(0)));
    if (c->needs[1]) SET(1, tjg_scale(c, mm(c, G, t2(c, IN(2))), alpha));
    if (c->needs[2]) SET(2, tjg_scale(c, mm(c, t2(c, IN(1)), G), alpha));
    return TJ_OK;
}

/* linear: x [..., in] @ W^T [in, out] + b [out] */
/* linear with a vector weight [in] is x @ w: y drops x's last dim */
static tj_status d_linear_vector(tjg_ctx *c) {
    tjg_val x = IN(0), w = IN(1), g = G;
    tj_type tx = tjg_type(c, x);
    tjg_val gx = tx.ndim == 1 ? g : unsqueeze(c, g, -1); /* g broadcast along in */
    if (c->needs[0]) SET(0, tjg_mul(c, gx, w));
    if (c->needs[1]) {
        int64_t rows = 1, in = tx.sizes[tx.ndim - 1];
        for (int d = 0; d + 1 < tx.ndim; d++) rows *= tx.sizes[d];
        if (tx.ndim == 1) SET(1, tjg_mul(c, g, x));
        else SET(1, matmul(c, reshape(c, g, &rows, 1), reshape(c, x, (int64_t[]){rows, in}, 2)));
    }
    if (c->n_in > 2 && c->needs[2]) SET(2, tjg_sum_to(c, g, IN(2)));
    return TJ_OK;
}

static tj_status d_linear(tjg_ctx *c) {
    tjg_val x = IN(0), w = IN(1), g = G;
    if (tjg_type(c, w).ndim == 1) return d_linear_vector(c);
    if (c->needs[0]) SET(0, matmul(c, g, w));
    if (c->needs[1]) { /* g^T x over all leading dims */
        tj_type tx = tjg_type(c, x), tg = tjg_type(c, g);
        int64_t rows = 1;
        for (int d = 0; d + 1 < tx.ndim; d++) rows *= tx.sizes[d];
        int64_t gs[2] = {rows, tg.ndim ? tg.sizes[tg.ndim - 1] : 1};
        int64_t xs[2] = {rows, tx.ndim ? tx.sizes[tx.ndim - 1] : 1};
        tjg_val g2 = tg.ndim == 2 ? g : reshape(c, g, gs, 2);
        tjg_val x2 = tx.ndim == 2 ? x : reshape(c, x, xs, 2);
        if (tx.ndim == 1) { /* x [in], g [out]: an outer product */
            g2 = unsqueeze(c, g, -1);
            x2 = unsqueeze(c, x, 0);
            SET(1, mm(c, g2, x2));
        } else {
            SET(1, mm(c, t2(c, g2), x2));
        }
    }
    if (c->n_in > 2 && c->needs[2]) SET(2, tjg_sum_to(c, g, IN(2)));
    return TJ_OK;
}

/* ---- convolution ------------------------------------------------------------------
 * The 2-D ops take stride, padding, dilation and groups under the same names
 * whatever their position in the schema; conv1d runs as a conv2d of height 1. */

typedef struct conv_args {
    tj_attr stride, padding, dilation, groups;
} conv_args;

static conv_args conv_args_of(tjg_ctx *c) {
    return (conv_args){*tjg_attr(c, "stride"), *tjg_attr(c, "padding"), *tjg_attr(c, "dilation"),
                       *tjg_attr(c, "groups")};
}

static tjg_val conv2d(tjg_ctx *c, tjg_val x, tjg_val w, const conv_args *a) {
    tj_attr at[4] = {a->stride, a->padding, a->dilation, a->groups};
    return x && w ? tjg_op(c, TJ_OP_conv2d, (tjg_val[]){x, w, NULL}, 3, at) : NULL;
}

/* conv2d's gradient with respect to an input of type tx */
static tjg_val conv_bwd_input(tjg_ctx *c, tjg_val g, tjg_val w, const tj_type *tx,
                              const conv_args *a) {
    tj_attr at[5] = {{.ints = {tx->sizes, tx->ndim}}, a->stride, a->padding, a->dilation,
                     a->groups};
    return g && w ? tjg_op(c, TJ_OP_conv2d_backward_input, (tjg_val[]){g, w}, 2, at) : NULL;
}

/* conv2d's gradient with respect to a weight of type tw */
static tjg_val conv_bwd_weight(tjg_ctx *c, tjg_val g, tjg_val x, const tj_type *tw,
                               const conv_args *a) {
    tj_attr at[5] = {{.ints = {tw->sizes, tw->ndim}}, a->stride, a->padding, a->dilation,
                     a->groups};
    return g && x ? tjg_op(c, TJ_OP_conv2d_backward_weight, (tjg_val[]){g, x}, 2, at) : NULL;
}

/* The bias's gradient: g summed over every dim but the channel one. */
static tjg_val bias_grad(tjg_ctx *c, tjg_val g, int spatial) {
    if (!g) return NULL;
    tj_type t = tjg_type(c, g);
    int64_t dims[TJ_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < t.ndim; d++)
        if (d != t.ndim - spatial - 1) dims[n++] = d;
    tj_attr at[2] = {{.ints = {dims, n}}, {.b = false}};
    return tjg_op(c, TJ_OP_sum, &g, 1, at);
}

static tj_status d_conv2d(tjg_ctx *c) {
    conv_args a = conv_args_of(c);
    if (c->needs[0]) {
        tj_type tx = tjg_input_type(c, 0);
        SET(0, conv_bwd_input(c, G, IN(1), &tx, &a));
    }
    if (c->needs[1]) {
        tj_type tw = tjg_input_type(c, 1);
        SET(1, conv_bwd_weight(c, G, IN(0), &tw, &a));
    }
    if (c->n_in > 2 && c->needs[2]) SET(2, bias_grad(c, G, 2));
    return TJ_OK;
}

/* t with a dim of size 1 before its last */
static tj_type with_height(tj_type t) {
    t.sizes[t.ndim] = t.sizes[t.ndim - 1];
    t.sizes[t.ndim - 1] = 1;
    t.ndim++;
    return t;
}

static tj_status d_conv1d(tjg_ctx *c) {
    conv_args a1 = conv_args_of(c);
    int64_t st[2] = {1, tjc_ints_at(&a1.stride, 0)}, pd[2] = {0, tjc_ints_at(&a1.padding, 0)};
    int64_t dl[2] = {1, tjc_ints_at(&a1.dilation, 0)};
    conv_args a = {{.ints = {st, 2}}, {.ints = {pd, 2}}, {.ints = {dl, 2}}, a1.groups};
    tjg_val g2 = (c->needs[0] || c->needs[1]) ? unsqueeze(c, G, -2) : NULL;
    if (c->needs[0]) {
        tj_type tx = tjg_input_type(c, 0), tx2 = with_height(tx);
        tjg_val dx = conv_bwd_input(c, g2, unsqueeze(c, IN(1), -2), &tx2, &a);
        SET(0, reshape(c, dx, tx.sizes, tx.ndim));
    }
    if (c->needs[1]) {
        tj_type tw = tjg_input_type(c, 1), tw2 = with_height(tw);
        tjg_val dw = conv_bwd_weight(c, g2, unsqueeze(c, IN(0), -2), &tw2, &a);
        SET(1, reshape(c, dw, tw.sizes, tw.ndim));
    }
    if (c->n_in > 2 && c->needs[2]) SET(2, bias_grad(c, G, 1));
    return TJ_OK;
}

/* v cut or zero-extended along dim to len */
static tjg_val fit_dim(tjg_ctx *c, tjg_val v, int dim, int64_t len) {
    if (!v) return NULL;
    tj_type t = tjg_type(c, v);
    if (t.sizes[dim] == len) return v;
    if (t.sizes[dim] > len) {
        tj_attr at[3] = {{.i = dim}, {.i = 0}, {.i = len}};
        return tjg_op(c, TJ_OP_narrow, &v, 1, at);
    }
    int64_t have = t.sizes[dim];
    t.sizes[dim] = len;
    tj_attr at[5] = {{.ints = {t.sizes, t.ndim}}, {.i = dim}, {.i = 0}, {.i = have}, {.i = 1}};
    return tjg_op(c, TJ_OP_slice_backward, &v, 1, at);
}

/* conv_transpose2d(x, w) is conv2d_backward_input(x, w) into an output of its
 * own size, so its gradients are conv2d's with x in the place of grad_output:
 * dx = conv2d(g, w) and dw = conv2d_backward_weight(x, g). An output_padding
 * of at least the stride (allowed when the dilation is larger) gives g rows
 * that no element of x reaches in the forward op, and conv2d(g, w) one more
 * row per stride: dx drops those rows, and x gets zero rows to match. */
static tj_status d_conv_transpose2d(tjg_ctx *c) {
    conv_args a = conv_args_of(c);
    tjg_val g = G;
    if (c->needs[0] || c->needs[1]) {
        tj_type tx = tjg_input_type(c, 0), tw = tjg_input_type(c, 1), tg = tjg_type(c, g);
        int64_t rows[2]; /* conv2d(g, w)'s spatial sizes */
        for (int i = 0; i < 2; i++) {
            int64_t s = tjc_ints_at(&a.stride, i), p = tjc_ints_at(&a.padding, i);
            int64_t d = tjc_ints_at(&a.dilation, i), k = tw.sizes[2 + i];
            rows[i] = (tg.sizes[tg.ndim - 2 + i] + 2 * p - d * (k - 1) - 1) / s + 1;
        }
        if (c->needs[0]) {
            tjg_val dx = conv2d(c, g, IN(1), &a);
            for (int d = tx.ndim - 2; d < tx.ndim; d++) dx = fit_dim(c, dx, d, tx.sizes[d]);
            SET(0, dx);
        }
        if (c->needs[1]) {
            tjg_val x = IN(0);
            for (int i = 0; i < 2; i++) x = fit_dim(c, x, tx.ndim - 2 + i, rows[i]);
            SET(1, conv_bwd_weight(c, x, g, &tw, &a));
        }
    }
    if (c->n_in > 2 && c->needs[2]) SET(2, bias_grad(c, g, 2));
    return TJ_OK;
}

/* conv2d_backward_input(g, w) = A_w^T g, where A_w is conv2d with w:
 * <gg, A_w^T g> = <A_w gg, g>, linear in g and in w. */
static tj_status d_conv2d_backward_input(tjg_ctx *c) {
    conv_args a = conv_args_of(c);
    if (c->needs[0]) SET(0, conv2d(c, G, IN(1), &a));
    if (c->needs[1]) {
        tj_type tw = tjg_input_type(c, 1);
        SET(1, conv_bwd_weight(c, IN(0), G, &tw, &a));
    }
    return TJ_OK;
}

/* conv2d_backward_weight(g, x) = B(g, x) with <gg, B(g, x)> = <g, conv2d(x, gg)>. */
static tj_status d_conv2d_backward_weight(tjg_ctx *c) {
    conv_args a = conv_args_of(c);
    if (c->needs[0]) SET(0, conv2d(c, IN(1), G, &a));
    if (c->needs[1]) {
        tj_type tx = tjg_input_type(c, 1);
        SET(1, conv_bwd_input(c, IN(0), G, &tx, &a));
    }
    return TJ_OK;
}

/* ---- pooling ------------------------------------------------------------------------
 * Each op and the op its rule emits take the same attributes in the same
 * order (kernel_size, stride, padding, [dilation,] ceil_mode, ...), so rules
 * pass the forward node's attributes on as they are. */

static tjg_val max_pool_backward(tjg_ctx *c, tjg_val g, tjg_val x, tjg_val indices) {
    return g ? tjg_op(c, TJ_OP_max_pool2d_with_indices_backward, (tjg_val[]){g, x, indices}, 3,
                      c->attrs)
             : NULL;
}

static tj_status d_max_pool2d_with_indices(tjg_ctx *c) {
    if (c->grad_out[0]) SET(0, max_pool_backward(c, c->grad_out[0], IN(0), tjg_output(c, 1)));
    return TJ_OK;
}

/* The indices are found again rather than kept by the forward op. */
static tj_status d_max_pool2d(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tjg_val x = IN(0), out[2] = {NULL, NULL};
    if (tjg_op_n(c, TJ_OP_max_pool2d_with_indices, &x, 1, c->attrs, out, 2) == 2)
        SET(0, max_pool_backward(c, G, x, out[1]));
    return TJ_OK;
}

static tj_status d_max_pool2d_with_indices_backward(tjg_ctx *c) {
    if (c->needs[0]) SET(0, tjg_op(c, TJ_OP_max_pool2d_gather, (tjg_val[]){G, IN(2)}, 2, c->attrs));
    return TJ_OK;
}

static tj_status d_max_pool2d_gather(tjg_ctx *c) {
    SET(0, max_pool_backward(c, G, IN(0), IN(1)));
    return TJ_OK;
}

static tj_status d_avg_pool2d(tjg_ctx *c) {
    SET(0, tjg_op(c, TJ_OP_avg_pool2d_backward, (tjg_val[]){G, IN(0)}, 2, c->attrs));
    return TJ_OK;
}

static tj_status d_avg_pool2d_backward(tjg_ctx *c) {
    SET(0, tjg_op(c, TJ_OP_avg_pool2d, &G, 1, c->attrs));
    return TJ_OK;
}

static tj_status d_adaptive_avg_pool2d(tjg_ctx *c) {
    SET(0, tjg_op(c, TJ_OP_adaptive_avg_pool2d_backward, (tjg_val[]){G, IN(0)}, 2, NULL));
    return TJ_OK;
}

/* back to grad_output's sizes: the forward op's output_size */
static tj_status d_adaptive_avg_pool2d_backward(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = tjg_input_type(c, 0);
    tj_attr size = {.ints = {t.sizes + t.ndim - 2, 2}};
    SET(0, tjg_op(c, TJ_OP_adaptive_avg_pool2d, &G, 1, &size));
    return TJ_OK;
}

/* Every op of the family has a rule; max_pool2d_with_indices' second output
 * (the indices) is i64, so no gradient reaches it. */
const tjg_rule_entry tjg_rules_linalg[] = {
    {TJ_OP_mm, d_mm, NULL},
    {TJ_OP_bmm, d_bmm, NULL},
    {TJ_OP_matmul, d_matmul, NULL},
    {TJ_OP_addmm, d_addmm, NULL},
    {TJ_OP_linear, d_linear, NULL},
    {TJ_OP_conv1d, d_conv1d, NULL},
    {TJ_OP_conv2d, d_conv2d, NULL},
    {TJ_OP_conv_transpose2d, d_conv_transpose2d, NULL},
    {TJ_OP_conv2d_backward_input, d_conv2d_backward_input, NULL},
    {TJ_OP_conv2d_backward_weight, d_conv2d_backward_weight, NULL},
    {TJ_OP_max_pool2d_with_indices, d_max_pool2d_with_indices, NULL},
    {TJ_OP_max_pool2d, d_max_pool2d, NULL},
    {TJ_OP_max_pool2d_with_indices_backward, d_max_pool2d_with_indices_backward, NULL},
    {TJ_OP_max_pool2d_gather, d_max_pool2d_gather, NULL},
    {TJ_OP_avg_pool2d, d_avg_pool2d, NULL},
    {TJ_OP_avg_pool2d_backward, d_avg_pool2d_backward, NULL},
    {TJ_OP_adaptive_avg_pool2d, d_adaptive_avg_pool2d, NULL},
    {TJ_OP_adaptive_avg_pool2d_backward, d_adaptive_avg_pool2d_backward, NULL},
    {-1, NULL, NULL},
};
