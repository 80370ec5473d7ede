/* grad_reduce.c — derivative rules of the reduction family (grad.h,
 * core/ops_reduce.def), after PyTorch's derivatives.yaml.
 *
 * g is the output's gradient, x the input, y the output. A reduction's
 * gradient is g put back in its keepdim form (size 1 at each reduced dim)
 * and broadcast over x: sum spreads it, the others weight it per element.
 * Every rule is a composition of ops that have rules themselves, so backward
 * graphs differentiate again. Masks (x == y and the like) are bool and carry
 * no gradient; mixing them into f32/f64 arithmetic promotes them to 0 and 1.
 *
 * Choices at the points where PyTorch has a choice too:
 *  - amax/amin (and the inf norms) share g evenly among tied elements;
 *    max.dim/min.dim give it all to the element at the returned index.
 *  - prod is exact at zeros to first order for any number of them: the
 *    gradient of element i is y / x_i away from zeros, the product of the
 *    other elements at the only zero, and 0 everywhere where there are two
 *    or more (as PyTorch's, even where the others hold an infinity).
 *    Because y / x_i keeps y (which depends on the zero) in the graph, the
 *    second derivative is exact too where at most one element is zero; with
 *    two or more zeros it misses the terms through the other zeros.
 *  - norms and std have gradient 0 where y == 0 (a subgradient); ord 0
 *    counts, so its gradient is 0.
 *  - var and std divide by max(0, N - correction) like the forward, so a
 *    reduction with no degrees of freedom gives inf or NaN gradients.
 */
#include <math.h>
#include <string.h>

#include "grad.h"

#define G (c->grad_out[0])
#define X tjg_input(c, 0)

/* The type of forward input i. In a graph this reads (so saves) the input;
 * every use for sizes alone goes through here. */
/* sizes and dtype only: the input itself is not saved for backward */
static tj_type in_type(tjg_ctx *c, int i) { return tjg_input_type(c, i); }

static tj_attr ints(const int64_t *v, int n) { return (tj_attr){.ints = {v, n}}; }

static tjg_val op1(tjg_ctx *c, int id, tjg_val a) { return a ? tjg_op(c, id, &a, 1, NULL) : NULL; }
static tjg_val eq0(tjg_ctx *c, tjg_val a) {
    tj_attr zero = {.scalar = tj_scalar_float(0.0)};
    return a ? tjg_op(c, TJ_OP_eq_scalar, &a, 1, &zero) : NULL;
}
static tjg_val where(tjg_ctx *c, tjg_val cond, tjg_val a, tjg_val b) {
    return tjg_op(c, TJ_OP_where, (tjg_val[]){cond, a, b}, 3, NULL);
}
/* a with 1 where a == 0 (the mask itself, promoted), constant there: a
 * denominator that is safe where its numerator is 0. */
static tjg_val nonzero(tjg_ctx *c, tjg_val a) {
    tjg_val zero = eq0(c, a);
    return where(c, zero, zero, a);
}

/* ---- the reduced dims and the keepdim form ------------------------------------------ */

typedef struct reduction {
    tj_type in;               /* x's type */
    bool red[TJ_MAX_DIMS];    /* which of x's dims are reduced */
    int64_t keep[TJ_MAX_DIMS]; /* the keepdim sizes: x's, with 1 at reduced dims */
    int64_t n;                /* elements per reduction */
    bool keepdim;
    tj_attr dims;             /* the dims as the op got them, for ops the rule emits */
} reduction;

/* Reads a dim list ([] is every dim) and keepdim; fails like the forward on
 * a bad dim, which the forward would have refused already. */
static bool reduction_of(tjg_ctx *c, const tj_attr *dims, bool keepdim, reduction *r) {
    memset(r, 0, sizeof *r);
    r->in = in_type(c, 0);
    r->keepdim = keepdim;
    r->dims = *dims;
    if (c->status) return false;
    int nd = r->in.ndim;
    for (int i = 0; i < dims->ints.n; i++) {
        int d;
        if ((c->status = tjc_wrap_dim(c->op->name, dims->ints.data[i], nd, &d))) return false;
        if (nd) r->red[d] = true;
    }
    r->n = 1;
    for (int d = 0; d < nd; d++) {
        if (dims->ints.n == 0) r->red[d] = true;
        r->keep[d] = r->red[d] ? 1 : r->in.sizes[d];
        if (r->red[d]) r->n *= r->in.sizes[d];
    }
    return true;
}

static bool reduction_attrs(tjg_ctx *c, reduction *r) {
    return reduction_of(c, tjg_attr(c, "dim"), tjg_attr(c, "keepdim")->b, r);
}

/* v (an output's shape) in the keepdim form. */
static tjg_val keep_form(tjg_ctx *c, const reduction *r, tjg_val v) {
    if (!v || r->keepdim || c->status) return v;
    tj_attr shape = ints(r->keep, r->in.ndim);
    return tjg_op(c, TJ_OP_reshape, &v, 1, &shape);
}

/* v (keepdim form) broadcast over x's sizes. */
static tjg_val spread(tjg_ctx *c, const reduction *r, tjg_val v) {
    if (!v || c->status) return NULL;
    tj_attr size = ints(r->in.sizes, r->in.ndim);
    return tjg_op(c, TJ_OP_expand, &v, 1, &size);
}

/* sum(v, the reduced dims, keepdim=True) */
static tjg_val sum_keep(tjg_ctx *c, const reduction *r, tjg_val v) {
    tj_attr a[2] = {r->dims, {.b = true}};
    return v ? tjg_op(c, TJ_OP_sum, &v, 1, a) : NULL;
}

/* ---- rules ------------------------------------------------------------------------- */

static tj_status d_sum(tjg_ctx *c) {
    reduction r;
    if (!c->needs[0] || !reduction_attrs(c, &r)) return c->status;
    c->grad_in[0] = spread(c, &r, keep_form(c, &r, G));
    return TJ_OK;
}

static tj_status d_mean(tjg_ctx *c) {
    reduction r;
    if (!c->needs[0] || !reduction_attrs(c, &r)) return c->status;
    c->grad_in[0] = spread(c, &r, tjg_scale(c, keep_form(c, &r, G), 1.0 / (double)r.n));
    return TJ_OK;
}

static tj_status d_prod(tjg_ctx *c) {
    reduction r;
    if (!c->needs[0] || !reduction_attrs(c, &r)) return c->status;
    tjg_val x = X, y = keep_form(c, &r, tjg_output(c, 0)), g = keep_form(c, &r, G);
    tjg_val zero = eq0(c, x);
    tjg_val x1 = where(c, zero, zero, x); /* x with its zeros made 1, which x does not move */
    tjg_val others = tjg_div(c, y, x1); /* y / x_i: exact unless x_i is 0 */
    tj_attr pa[2] = {r.dims, {.b = true}};
    tjg_val p_nonzero = tjg_op(c, TJ_OP_prod, &x1, 1, pa);
    tj_attr one = {.scalar = tj_scalar_float(1.0)};
    tjg_val n_zero = sum_keep(c, &r, zero);
    tjg_val lone = tjg_op(c, TJ_OP_eq_scalar, &n_zero, 1, &one);
    tjg_val many = tjg_op(c, TJ_OP_gt_scalar, &n_zero, 1, &one);
    tjg_val none = tjg_zeros_like(c, p_nonzero);
    tjg_val at_zero = where(c, lone, p_nonzero, none);
    /* two zeros or more: 0 everywhere, even where y / x_i is 0 * inf */
    tjg_val away = where(c, many, tjg_zeros_like(c, others), others);
    c->grad_in[0] = tjg_mul(c, g, where(c, zero, at_zero, away));
    return TJ_OK;
}

/* g shared evenly among the elements where mask holds (ties of amax/amin);
 * sign, when given, multiplies each share (the inf norms). */
static tjg_val share(tjg_ctx *c, const reduction *r, tjg_val g, tjg_val mask, tjg_val sign) {
    tjg_val each = tjg_div(c, g, sum_keep(c, r, mask));
    return tjg_mul(c, each, sign ? tjg_mul(c, sign, mask) : mask);
}

static tj_status d_amax(tjg_ctx *c) { /* amin too */
    reduction r;
    if (!c->needs[0] || !reduction_attrs(c, &r)) return c->status;
    tjg_val x = X, y = keep_form(c, &r, tjg_output(c, 0));
    tjg_val mask = tjg_op(c, TJ_OP_eq, (tjg_val[]){x, y}, 2, NULL);
    c->grad_in[0] = share(c, &r, keep_form(c, &r, G), mask, NULL);
    return TJ_OK;
}

/* max.dim/min.dim: g goes to the element at the index: one_hot of the
 * indices, its class dim moved to dim, is the mask. */
static tj_status d_max_dim(tjg_ctx *c) {
    if (!c->needs[0] || !G) return TJ_OK;
    int64_t dim = tjg_attr(c, "dim")->i;
    bool keepdim = tjg_attr(c, "keepdim")->b;
    tj_type t = in_type(c, 0);
    if (c->status) return c->status;
    int d;
    if ((c->status = tjc_wrap_dim(c->op->name, dim, t.ndim, &d))) return c->status;
    if (t.ndim == 0) { /* one element: it is the max */
        c->grad_in[0] = G;
        return TJ_OK;
    }
    tjg_val idx = tjg_output(c, 1), g = G;
    tj_attr dim_attr = {.i = d};
    if (keepdim) idx = tjg_op(c, TJ_OP_squeeze_dim, &idx, 1, &dim_attr);
    else g = tjg_op(c, TJ_OP_unsqueeze, &g, 1, &dim_attr);
    tj_attr classes = {.i = t.sizes[d]};
    tjg_val hot = tjg_op(c, TJ_OP_one_hot, &idx, 1, &classes); /* [..., n] */
    int64_t perm[TJ_MAX_DIMS];
    for (int k = 0, j = 0; k < t.ndim; k++) perm[k] = k == d ? t.ndim - 1 : j++;
    tj_attr pa = ints(perm, t.ndim);
    tjg_val mask = tjg_op(c, TJ_OP_permute, &hot, 1, &pa);
    c->grad_in[0] = tjg_mul(c, g, mask);
    return TJ_OK;
}

/* var and std: d var / dx = 2 (x - mean) / max(0, N - correction). */
static tj_status d_var_std(tjg_ctx *c, bool is_std) {
    reduction r;
    if (!c->needs[0] || !reduction_attrs(c, &r)) return c->status;
    double dof = (double)r.n - (double)tjg_attr(c, "correction")->i;
    if (dof < 0) dof = 0;
    tjg_val x = X, g = keep_form(c, &r, G);
    tj_attr ma[2] = {r.dims, {.b = true}};
    tjg_val centered = tjg_sub(c, x, tjg_op(c, TJ_OP_mean, &x, 1, ma));
    /* std = sqrt(var): the var gradient over 2 std; 0 where std is 0 (x == mean there) */
    tjg_val w = is_std ? tjg_div(c, tjg_scale(c, g, 1.0 / dof),
                                 nonzero(c, keep_form(c, &r, tjg_output(c, 0))))
                       : tjg_scale(c, g, 2.0 / dof);
    c->grad_in[0] = tjg_mul(c, w, centered);
    return TJ_OK;
}
static tj_status d_var(tjg_ctx *c) { return d_var_std(c, false); }
static tj_status d_std(tjg_ctx *c) { return d_var_std(c, true); }

/* (sum |x|^p)^(1/p): g sign(x) |x|^(p-1) / y^(p-1), with the cases p = 1, 2
 * and +-inf written out; 0 where y == 0. */
static tj_status d_norm(tjg_ctx *c) {
    reduction r;
    if (!c->needs[0] || !reduction_attrs(c, &r)) return c->status;
    double p = tjg_attr(c, "ord")->f;
    if (p == 0) return TJ_OK; /* a count: piecewise constant */
    tjg_val x = X, g = keep_form(c, &r, G);
    if (p == 1) {
        c->grad_in[0] = tjg_mul(c, g, op1(c, TJ_OP_sign, x));
        return TJ_OK;
    }
    tjg_val y = keep_form(c, &r, tjg_output(c, 0));
    if (isinf(p)) { /* the elements of largest (smallest) |x| share g */
        tjg_val mask = tjg_op(c, TJ_OP_eq, (tjg_val[]){op1(c, TJ_OP_abs, x), y}, 2, NULL);
        c->grad_in[0] = share(c, &r, g, mask, op1(c, TJ_OP_sign, x));
        return TJ_OK;
    }
    if (p == 2) {
        c->grad_in[0] = tjg_mul(c, tjg_div(c, g, nonzero(c, y)), x);
        return TJ_OK;
    }
    /* |x| made 1 at zeros, where sign(x) = 0 makes the term 0 anyway (and
     * |0|^(p-1) would be inf for p < 1) */
    tj_attr e = {.scalar = tj_scalar_float(p - 1)};
    tjg_val ax = nonzero(c, op1(c, TJ_OP_abs, x));
    tjg_val num = tjg_mul(c, op1(c, TJ_OP_sign, x), tjg_op(c, TJ_OP_pow_scalar, &ax, 1, &e));
    tjg_val ys = nonzero(c, y);
    tjg_val den = tjg_op(c, TJ_OP_pow_scalar, &ys, 1, &e);
    c->grad_in[0] = tjg_mul(c, tjg_div(c, g, den), num);
    return TJ_OK;
}

/* log sum exp x: softmax-like weights exp(x - y). */
static tj_status d_logsumexp(tjg_ctx *c) {
    reduction r;
    if (!c->needs[0] || !reduction_attrs(c, &r)) return c->status;
    tjg_val y = keep_form(c, &r, tjg_output(c, 0));
    tjg_val w = op1(c, TJ_OP_exp, tjg_sub(c, X, y));
    c->grad_in[0] = tjg_mul(c, keep_form(c, &r, G), w);
    return TJ_OK;
}

/* sum_to_size: the gradient spreads back over the broadcast dims. */
static tj_status d_sum_to_size(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = in_type(c, 0);
    tj_attr size = ints(t.sizes, t.ndim);
    c->grad_in[0] = tjg_op(c, TJ_OP_expand, &c->grad_out[0], 1, &size);
    return TJ_OK;
}

#define INDEX "its result is an integer index: nothing to differentiate"

const tjg_rule_entry tjg_rules_reduce[] = {
    {TJ_OP_sum, d_sum, NULL},
    {TJ_OP_mean, d_mean, NULL},
    {TJ_OP_prod, d_prod, NULL},
    {TJ_OP_amax, d_amax, NULL},
    {TJ_OP_amin, d_amax, NULL},
    {TJ_OP_max_dim, d_max_dim, NULL},
    {TJ_OP_min_dim, d_max_dim, NULL},
    {TJ_OP_argmax, NULL, INDEX},
    {TJ_OP_argmin, NULL, INDEX},
    {TJ_OP_var, d_var, NULL},
    {TJ_OP_std, d_std, NULL},
    {TJ_OP_linalg_vector_norm, d_norm, NULL},
    {TJ_OP_logsumexp, d_logsumexp, NULL},
    {TJ_OP_sum_to_size, d_sum_to_size, NULL},
    {-1, NULL, NULL},
};
