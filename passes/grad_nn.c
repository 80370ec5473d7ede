/* grad_nn.c — derivative rules of the normalisation, softmax, loss, indexing
 * and dropout family (grad.h). Backward ops that the rules emit have rules of
 * their own, composed of ops with rules, so second derivatives work. */
#include <string.h>

#include "grad.h"

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
static tjg_val sum_all(tjg_ctx *c, tjg_val a) {
    tj_attr attrs[2] = {{.ints = {NULL, 0}}, {.b = false}};
    return a ? tjg_op(c, TJ_OP_sum, &a, 1, attrs) : NULL;
}
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
/* cross_entropy_loss = nll_loss(log_softmax(x, class dim)) */
static tj_status d_cross_entropy_loss(tjg_ctx *c) {
    if (tjg_attr(c, "label_smoothing")->f != 0.0)
        return c->status = tjc_error(TJ_ERR_UNSUPPORTED, "aten::cross_entropy_loss: no derivative "
                                     "with label_smoothing");
    tjg_val x = IN(0);
    int64_t dim = tjg_type(c, x).ndim >= 2 ? 1 : 0;
    tj_attr d = {.i = dim};
    tjg_val lsm = tjg_op(c, TJ_OP_log_softmax, &x, 1, &d);
    tj_attr attrs[2] = {*tjg_attr(c, "reduction"), *tjg_attr(c, "ignore_index")};
    tjg_val gl = tjg_op(c, TJ_OP_nll_loss_backward, (tjg_val[]){G, lsm, IN(1), IN(2)}, 4, attrs);
    SET(0, backward_data(c, TJ_OP_log_softmax_backward_data, gl, lsm, dim, x));
    return TJ_OK;
}

/* mse_loss: its backward op; the target's gradient is the negation */
static tj_status d_mse_loss(tjg_ctx *c) {
    tj_attr r = *tjg_attr(c, "reduction");
    tjg_val gx = tjg_op(c, TJ_OP_mse_loss_backward, (tjg_val[]){G, IN(0), IN(1)}, 3, &r);
    SET(0, gx);
    if (c->needs[1]) SET(1, tjg_sum_to(c, tjg_neg(c, gx), IN(1)));
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
    {-1, NULL, NULL},
};
