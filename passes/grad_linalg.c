/* grad_linalg.c — derivative rules of the matmul, convolution and pooling
 * family (grad.h). g is the output's gradient. */
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
static tj_status d_linear(tjg_ctx *c) {
    tjg_val x = IN(0), w = IN(1), g = G;
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

const tjg_rule_entry tjg_rules_linalg[] = {
    {TJ_OP_mm, d_mm, NULL},
    {TJ_OP_bmm, d_bmm, NULL},
    {TJ_OP_matmul, d_matmul, NULL},
    {TJ_OP_addmm, d_addmm, NULL},
    {TJ_OP_linear, d_linear, NULL},
    {-1, NULL, NULL},
};
