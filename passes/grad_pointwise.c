/* grad_pointwise.c — derivative rules of the pointwise family (grad.h).
 * g is the output's gradient, a b c the inputs, y the output. Every rule is a
 * composition of ops that have rules themselves, so backward graphs can be
 * differentiated again; broadcast operands get their gradient reduced with
 * tjg_sum_to. Piecewise constant ops (comparisons, floor, sign, ...) have no
 * rule: their gradient is zero almost everywhere. */
#include <math.h>
#include <string.h>

#include "grad.h"

#define G (c->grad_out[0])
#define IN(i) tjg_input(c, i)
#define OUT tjg_output(c, 0)
#define SET(i, v)                                   \
    do {                                            \
        if (c->needs[i]) c->grad_in[i] = (v);       \
    } while (0)

static tjg_val op1(tjg_ctx *c, int id, tjg_val a) { return a ? tjg_op(c, id, &a, 1, NULL) : NULL; }
static tjg_val cmp_scalar(tjg_ctx *c, int id, tjg_val a, double s) {
    tj_attr other = {.scalar = tj_scalar_float(s)};
    return tjg_op(c, id, &a, 1, &other);
}
static tjg_val cmp(tjg_ctx *c, int id, tjg_val a, tjg_val b) { return tjg_op(c, id, (tjg_val[]){a, b}, 2, NULL); }
static tjg_val where(tjg_ctx *c, tjg_val cond, tjg_val a, tjg_val b) {
    return tjg_op(c, TJ_OP_where, (tjg_val[]){cond, a, b}, 3, NULL);
}
static tjg_val square(tjg_ctx *c, tjg_val a) { return tjg_mul(c, a, a); }
/* 1 - a */
static tjg_val one_minus(tjg_ctx *c, tjg_val a) { return tjg_add_scalar(c, tjg_neg(c, a), 1.0); }
/* The first scalar argument of a .Scalar form or of lerp/clamp. */
static double scalar_attr(tjg_ctx *c, int k) { return c->attrs[k].f; }

/* ---- unary --------------------------------------------------------------------------- */

static tj_status d_neg(tjg_ctx *c) { SET(0, tjg_neg(c, G)); return TJ_OK; }
static tj_status d_abs(tjg_ctx *c) { SET(0, tjg_mul(c, G, op1(c, TJ_OP_sign, IN(0)))); return TJ_OK; }
static tj_status d_exp(tjg_ctx *c) { SET(0, tjg_mul(c, G, OUT)); return TJ_OK; }
static tj_status d_log(tjg_ctx *c) { SET(0, tjg_div(c, G, IN(0))); return TJ_OK; }
static tj_status d_log1p(tjg_ctx *c) { SET(0, tjg_div(c, G, tjg_add_scalar(c, IN(0), 1.0))); return TJ_OK; }
static tj_status d_expm1(tjg_ctx *c) { SET(0, tjg_mul(c, G, tjg_add_scalar(c, OUT, 1.0))); return TJ_OK; }
static tj_status d_sqrt(tjg_ctx *c) { SET(0, tjg_div(c, tjg_scale(c, G, 0.5), OUT)); return TJ_OK; }
static tj_status d_rsqrt(tjg_ctx *c) { /* -y^3 / 2 */
    tjg_val y = OUT;
    SET(0, tjg_mul(c, tjg_scale(c, G, -0.5), tjg_mul(c, square(c, y), y)));
    return TJ_OK;
}
static tj_status d_sin(tjg_ctx *c) { SET(0, tjg_mul(c, G, op1(c, TJ_OP_cos, IN(0)))); return TJ_OK; }
static tj_status d_cos(tjg_ctx *c) { SET(0, tjg_neg(c, tjg_mul(c, G, op1(c, TJ_OP_sin, IN(0))))); return TJ_OK; }
static tj_status d_tanh(tjg_ctx *c) { SET(0, tjg_mul(c, G, one_minus(c, square(c, OUT)))); return TJ_OK; }
static tj_status d_sigmoid(tjg_ctx *c) {
    tjg_val y = OUT;
    SET(0, tjg_mul(c, G, tjg_mul(c, y, one_minus(c, y))));
    return TJ_OK;
}
/* PyTorch's threshold_backward: 0 where the result is <= 0, g elsewhere (NaN included) */
static tj_status d_relu(tjg_ctx *c) {
    SET(0, where(c, cmp_scalar(c, TJ_OP_le_scalar, OUT, 0.0), tjg_zeros_like(c, G), G));
    return TJ_OK;
}
static tj_status d_silu(tjg_ctx *c) { /* s (1 + a (1 - s)), s = sigmoid(a) */
    tjg_val a = IN(0), s = op1(c, TJ_OP_sigmoid, a);
    SET(0, tjg_mul(c, G, tjg_mul(c, s, tjg_add_scalar(c, tjg_mul(c, a, one_minus(c, s)), 1.0))));
    return TJ_OK;
}
static tj_status d_gelu(tjg_ctx *c) {
    tjg_val x = IN(0);
    const tj_attr *approx = tjg_attr(c, "approximate");
    if (approx->s && !strcmp(approx->s, "tanh")) {
        /* y = x/2 (1 + t), t = tanh(k (x + 0.044715 x^3)):
         * y' = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 * 0.044715 x^2) */
        const double k = 0.79788456080286536; /* sqrt(2 / pi) */
        tjg_val x2 = square(c, x);
        tjg_val inner = tjg_scale(c, tjg_mul(c, x, tjg_add_scalar(c, tjg_scale(c, x2, 0.044715), 1.0)), k);
        tjg_val t = op1(c, TJ_OP_tanh, inner);
        tjg_val left = tjg_scale(c, tjg_add_scalar(c, t, 1.0), 0.5);
        tjg_val slope = tjg_scale(c, tjg_add_scalar(c, tjg_scale(c, x2, 3 * 0.044715), 1.0), k);
        tjg_val right = tjg_mul(c, tjg_scale(c, x, 0.5), tjg_mul(c, one_minus(c, square(c, t)), slope));
        SET(0, tjg_mul(c, G, tjg_add(c, left, right)));
    } else {
        /* y' = Phi(x) + x phi(x) */
        tjg_val cdf = tjg_scale(c, tjg_add_scalar(c, op1(c, TJ_OP_erf, tjg_scale(c, x, 0.70710678118654752)), 1.0), 0.5);
        tjg_val pdf = tjg_scale(c, op1(c, TJ_OP_exp, tjg_scale(c, square(c, x), -0.5)), 0.3989422804014327);
        SET(0, tjg_mul(c, G, tjg_add(c, cdf, tjg_mul(c, x, pdf))));
    }
    return TJ_OK;
}
static tj_status d_erf(tjg_ctx *c) { /* 2/sqrt(pi) e^(-a^2) */
    tjg_val e = op1(c, TJ_OP_exp, tjg_neg(c, square(c, IN(0))));
    SET(0, tjg_mul(c, G, tjg_scale(c, e, 1.1283791670955126)));
    return TJ_OK;
}
static tj_status d_reciprocal(tjg_ctx *c) { SET(0, tjg_neg(c, tjg_mul(c, G, square(c, OUT)))); return TJ_OK; }

/* ---- binary ---------------------------------------------------------------------------- */

static tj_status d_add(tjg_ctx *c) {
    SET(0, tjg_sum_to_input(c, G, 0));
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, tjg_scale(c, G, tjg_attr(c, "alpha")->f), 1));
    return TJ_OK;
}
static tj_status d_sub(tjg_ctx *c) {
    SET(0, tjg_sum_to_input(c, G, 0));
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, tjg_scale(c, G, -tjg_attr(c, "alpha")->f), 1));
    return TJ_OK;
}
static tj_status d_mul(tjg_ctx *c) {
    if (c->needs[0]) SET(0, tjg_sum_to_input(c, tjg_mul(c, G, IN(1)), 0));
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, tjg_mul(c, G, IN(0)), 1));
    return TJ_OK;
}
static tj_status d_div(tjg_ctx *c) { /* a/b: g/b and -g a/b^2 = -(g/b) y */
    tjg_val gb = tjg_div(c, G, IN(1));
    if (c->needs[0]) SET(0, tjg_sum_to_input(c, gb, 0));
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, tjg_neg(c, tjg_mul(c, gb, OUT)), 1));
    return TJ_OK;
}
static tj_status d_pow(tjg_ctx *c) { /* a^b: b a^(b-1) (0 where b == 0) and a^b log a (0 where a == 0) */
    tjg_val a = IN(0), b = IN(1);
    if (c->needs[0]) {
        tjg_val pw = tjg_op(c, TJ_OP_pow, (tjg_val[]){a, tjg_add_scalar(c, b, -1.0)}, 2, NULL);
        tjg_val d = tjg_mul(c, G, tjg_mul(c, b, pw));
        d = where(c, cmp_scalar(c, TJ_OP_eq_scalar, b, 0.0), tjg_zeros_like(c, d), d);
        SET(0, tjg_sum_to(c, d, a));
    }
    if (c->needs[1]) {
        tjg_val term = tjg_mul(c, OUT, op1(c, TJ_OP_log, a));
        tjg_val zero = cmp_scalar(c, TJ_OP_eq_scalar, a, 0.0);
        term = where(c, zero, tjg_zeros_like(c, term), term);
        SET(1, tjg_sum_to(c, tjg_mul(c, G, term), b));
    }
    return TJ_OK;
}
/* maximum/minimum, as PyTorch: the loser gets 0, a tie half each, anything
 * else (a NaN on either side) all of g. */
static tj_status d_extremum(tjg_ctx *c, int lose_op) {
    tjg_val a = IN(0), b = IN(1), g = G;
    tjg_val half = tjg_scale(c, g, 0.5), zero = tjg_zeros_like(c, g);
    tjg_val tie = cmp(c, TJ_OP_eq, a, b);
    if (c->needs[0]) {
        tjg_val mine = where(c, tie, half, where(c, cmp(c, lose_op, a, b), zero, g));
        SET(0, tjg_sum_to(c, mine, a));
    }
    if (c->needs[1]) {
        tjg_val theirs = where(c, tie, half, where(c, cmp(c, lose_op, b, a), zero, g));
        SET(1, tjg_sum_to(c, theirs, b));
    }
    return TJ_OK;
}
static tj_status d_maximum(tjg_ctx *c) { return d_extremum(c, TJ_OP_lt); }
static tj_status d_minimum(tjg_ctx *c) { return d_extremum(c, TJ_OP_gt); }

/* ---- .Scalar forms: the C double is not differentiated ---------------------------- */

static tj_status d_add_scalar(tjg_ctx *c) { SET(0, tjg_sum_to_input(c, G, 0)); return TJ_OK; }
static tj_status d_mul_scalar(tjg_ctx *c) { SET(0, tjg_sum_to_input(c, tjg_scale(c, G, scalar_attr(c, 0)), 0)); return TJ_OK; }
static tj_status d_div_scalar(tjg_ctx *c) { SET(0, tjg_sum_to_input(c, tjg_scale(c, G, 1.0 / scalar_attr(c, 0)), 0)); return TJ_OK; }
static tj_status d_pow_scalar(tjg_ctx *c) { /* s a^(s-1) */
    double s = scalar_attr(c, 0);
    tjg_val a = IN(0);
    if (s == 0.0) {
        SET(0, tjg_zeros_like(c, a));
        return TJ_OK;
    }
    tj_attr e = {.scalar = tj_scalar_float(s - 1.0)};
    tjg_val pw = s == 1.0 ? NULL : tjg_op(c, TJ_OP_pow_scalar, &a, 1, &e);
    tjg_val d = pw ? tjg_scale(c, pw, s) : NULL;
    SET(0, tjg_sum_to(c, d ? tjg_mul(c, G, d) : G, a));
    return TJ_OK;
}
static tj_status d_extremum_scalar(tjg_ctx *c, int lose_op) {
    double s = scalar_attr(c, 0);
    tjg_val a = IN(0), g = G;
    tjg_val tie = cmp_scalar(c, TJ_OP_eq_scalar, a, s);
    tjg_val kept = where(c, cmp_scalar(c, lose_op, a, s), tjg_zeros_like(c, g), g);
    SET(0, tjg_sum_to(c, where(c, tie, tjg_scale(c, g, 0.5), kept), a));
    return TJ_OK;
}
static tj_status d_maximum_scalar(tjg_ctx *c) { return d_extremum_scalar(c, TJ_OP_lt_scalar); }
static tj_status d_minimum_scalar(tjg_ctx *c) { return d_extremum_scalar(c, TJ_OP_gt_scalar); }

/* ---- ternary and copies ------------------------------------------------------------- */

static tj_status d_where(tjg_ctx *c) {
    tjg_val cond = IN(0), g = G, zero = tjg_zeros_like(c, g);
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, where(c, cond, g, zero), 1));
    if (c->needs[2]) SET(2, tjg_sum_to_input(c, where(c, cond, zero, g), 2));
    return TJ_OK;
}
static tj_status d_clamp(tjg_ctx *c) { /* passes where min <= a <= max */
    tjg_val a = IN(0), mask = NULL;
    double lo = c->attrs[0].f, hi = c->attrs[1].f;
    if (!tj_is_none(lo)) mask = cmp_scalar(c, TJ_OP_ge_scalar, a, lo);
    if (!tj_is_none(hi)) {
        tjg_val m = cmp_scalar(c, TJ_OP_le_scalar, a, hi);
        mask = mask ? cmp(c, TJ_OP_logical_and, mask, m) : m;
    }
    SET(0, tjg_sum_to(c, mask ? tjg_mul(c, G, mask) : G, a));
    return TJ_OK;
}
static tj_status d_lerp(tjg_ctx *c) { /* a + w (b - a) */
    double w = scalar_attr(c, 0);
    if (c->needs[0]) SET(0, tjg_sum_to_input(c, tjg_scale(c, G, 1.0 - w), 0));
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, tjg_scale(c, G, w), 1));
    return TJ_OK;
}
static tj_status d_lerp_tensor(tjg_ctx *c) {
    tjg_val a = IN(0), b = IN(1), w = IN(2);
    if (c->needs[0]) SET(0, tjg_sum_to(c, tjg_mul(c, G, one_minus(c, w)), a));
    if (c->needs[1]) SET(1, tjg_sum_to(c, tjg_mul(c, G, w), b));
    if (c->needs[2]) SET(2, tjg_sum_to(c, tjg_mul(c, G, tjg_sub(c, b, a)), w));
    return TJ_OK;
}
static tj_status d_addcmul(tjg_ctx *c) { /* a + v t1 t2 */
    double v = tjg_attr(c, "value")->f;
    if (c->needs[0]) SET(0, tjg_sum_to_input(c, G, 0));
    if (c->needs[1]) SET(1, tjg_sum_to_input(c, tjg_scale(c, tjg_mul(c, G, IN(2)), v), 1));
    if (c->needs[2]) SET(2, tjg_sum_to_input(c, tjg_scale(c, tjg_mul(c, G, IN(1)), v), 2));
    return TJ_OK;
}
static tj_status d_clone(tjg_ctx *c) { SET(0, G); return TJ_OK; }
static tj_status d_to_dtype(tjg_ctx *c) { SET(0, tjg_sum_to_input(c, G, 0)); return TJ_OK; }
static tj_status d_copy_(tjg_ctx *c) { /* self is overwritten: only src gets a gradient */
    SET(1, tjg_sum_to_input(c, G, 1));
    return TJ_OK;
}

#define PIECEWISE "piecewise constant: its gradient is zero almost everywhere"
#define BOOLEAN "its result is bool: nothing to differentiate"

const tjg_rule_entry tjg_rules_pointwise[] = {
    {TJ_OP_neg, d_neg, NULL}, {TJ_OP_abs, d_abs, NULL}, {TJ_OP_exp, d_exp, NULL},
    {TJ_OP_log, d_log, NULL}, {TJ_OP_log1p, d_log1p, NULL}, {TJ_OP_expm1, d_expm1, NULL},
    {TJ_OP_sqrt, d_sqrt, NULL}, {TJ_OP_rsqrt, d_rsqrt, NULL}, {TJ_OP_sin, d_sin, NULL},
    {TJ_OP_cos, d_cos, NULL}, {TJ_OP_tanh, d_tanh, NULL}, {TJ_OP_sigmoid, d_sigmoid, NULL},
    {TJ_OP_relu, d_relu, NULL}, {TJ_OP_gelu, d_gelu, NULL}, {TJ_OP_silu, d_silu, NULL},
    {TJ_OP_erf, d_erf, NULL}, {TJ_OP_reciprocal, d_reciprocal, NULL},
    {TJ_OP_sign, NULL, PIECEWISE}, {TJ_OP_floor, NULL, PIECEWISE}, {TJ_OP_ceil, NULL, PIECEWISE},
    {TJ_OP_round, NULL, PIECEWISE}, {TJ_OP_logical_not, NULL, BOOLEAN},
    {TJ_OP_add, d_add, NULL}, {TJ_OP_sub, d_sub, NULL}, {TJ_OP_mul, d_mul, NULL},
    {TJ_OP_div, d_div, NULL}, {TJ_OP_pow, d_pow, NULL}, {TJ_OP_maximum, d_maximum, NULL},
    {TJ_OP_minimum, d_minimum, NULL}, {TJ_OP_eq, NULL, BOOLEAN}, {TJ_OP_ne, NULL, BOOLEAN},
    {TJ_OP_lt, NULL, BOOLEAN}, {TJ_OP_le, NULL, BOOLEAN}, {TJ_OP_gt, NULL, BOOLEAN},
    {TJ_OP_ge, NULL, BOOLEAN}, {TJ_OP_logical_and, NULL, BOOLEAN},
    {TJ_OP_logical_or, NULL, BOOLEAN},
    {TJ_OP_add_scalar, d_add_scalar, NULL}, {TJ_OP_sub_scalar, d_add_scalar, NULL},
    {TJ_OP_mul_scalar, d_mul_scalar, NULL}, {TJ_OP_div_scalar, d_div_scalar, NULL},
    {TJ_OP_pow_scalar, d_pow_scalar, NULL}, {TJ_OP_maximum_scalar, d_maximum_scalar, NULL},
    {TJ_OP_minimum_scalar, d_minimum_scalar, NULL}, {TJ_OP_eq_scalar, NULL, BOOLEAN},
    {TJ_OP_ne_scalar, NULL, BOOLEAN}, {TJ_OP_lt_scalar, NULL, BOOLEAN},
    {TJ_OP_le_scalar, NULL, BOOLEAN}, {TJ_OP_gt_scalar, NULL, BOOLEAN},
    {TJ_OP_ge_scalar, NULL, BOOLEAN}, {TJ_OP_logical_and_scalar, NULL, BOOLEAN},
    {TJ_OP_logical_or_scalar, NULL, BOOLEAN},
    {TJ_OP_where, d_where, NULL}, {TJ_OP_clamp, d_clamp, NULL}, {TJ_OP_lerp, d_lerp, NULL},
    {TJ_OP_lerp_tensor, d_lerp_tensor, NULL}, {TJ_OP_addcmul, d_addcmul, NULL},
    {TJ_OP_clone, d_clone, NULL}, {TJ_OP_to_dtype, d_to_dtype, NULL},
    {TJ_OP_zeros_like, NULL, "its result does not depend on its input's values"},
    {TJ_OP_copy_, d_copy_, NULL},
    {-1, NULL, NULL},
};
