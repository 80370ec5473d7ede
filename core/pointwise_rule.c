/* pointwise_rule.c — shape and dtype rules of pointwise ops and copies:
 * broadcasting and PyTorch's type promotion. */
#include <math.h>
#include <string.h>

#include "core.h"

tj_status tjc_broadcast_shapes(const char *op, const int64_t *a, int na, const int64_t *b, int nb,
                               int64_t *out, int *nout) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char ba[TJC_SIZES_BUF], bb[TJC_SIZES_BUF];
            return tjc_error(TJ_ERR_SHAPE, "%s: cannot broadcast sizes %s and %s", op,
                             tjc_fmt_sizes(ba, sizeof ba, a, na), tjc_fmt_sizes(bb, sizeof bb, b, nb));
        }
        out[i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    return TJ_OK;
}

/* Result dtype of the tensors in[from..n): 0-dim tensors count only when
 * their category is higher than that of the dimensioned ones (PyTorch). */
static tj_dtype promote_inputs(tj_tensor *const *in, int from, int n) {
    int have_dim = 0, have_zero = 0;
    tj_dtype dim_t = TJ_BOOL, zero_t = TJ_BOOL;
    for (int i = from; i < n; i++) {
        if (!in[i]) continue;
        if (in[i]->ndim > 0) {
            dim_t = have_dim++ ? tjc_promote(dim_t, in[i]->dtype) : in[i]->dtype;
        } else {
            zero_t = have_zero++ ? tjc_promote(zero_t, in[i]->dtype) : in[i]->dtype;
        }
    }
    if (!have_dim) return zero_t;
    if (have_zero && tjc_dtype_category(zero_t) > tjc_dtype_category(dim_t)) return zero_t;
    return dim_t;
}

/* Floating-point ops that PyTorch refuses on integer and bool tensors instead
 * of promoting them (its kernels exist for floating dtypes only). */
static bool float_inputs_only(const tj_op_info *op) {
    int base = op->inplace_of >= 0 ? op->inplace_of : op->id;
    return base == TJ_OP_gelu || base == TJ_OP_silu || base == TJ_OP_lerp ||
           base == TJ_OP_lerp_tensor;
}

const tj_op_info *tjc_pw_expr_op(const tj_op_info *op, const tj_attr *attrs) {
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    if (form->scalar_base < 0) return form;
    if (form->scalar_base == TJ_OP_pow && attrs) {
        double e = attrs[0].f;
        if (e == 0.5) return tjc_op(TJ_OP_sqrt);
        if (e == -0.5) return tjc_op(TJ_OP_rsqrt);
    }
    return tjc_op(form->scalar_base);
}

/* The Scalars that take part in type promotion, as PyTorch's wrapped numbers:
 * a .Scalar form's operand and clamp's bounds (not alpha, not addcmul's
 * value: those are converted to the computation's dtype). */
static tj_dtype promote_with_scalars(const tj_op_info *op, const tj_attr *attrs, tj_dtype r) {
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    if (form->scalar_base >= 0) return tjc_promote_scalar(r, &attrs[0].scalar);
    if (form->pw_rule == TJC_PW_ARITH_FS)
        for (int k = 0; k < op->schema.n_attrs; k++)
            if (!tj_is_none(attrs[k].scalar.f)) r = tjc_promote_scalar(r, &attrs[k].scalar);
    return r;
}

tj_status tjc_pw_types(const tj_op_info *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                       tj_dtype *compute, tj_dtype *result) {
    if (float_inputs_only(op))
        for (int i = 0; i < n_in; i++) {
            if (in[i] && !tj_dtype_is_float(in[i]->dtype))
                return tjc_error(TJ_ERR_DTYPE, "%s: argument '%s' is %s, but the op takes only "
                                 "floating-point tensors (as in PyTorch); convert with tj_to_dtype "
                                 "first", op->name, tjc_input_name(op, i),
                                 tj_dtype_name(in[i]->dtype));
            if (i && in[i]->dtype != in[0]->dtype)
                return tjc_error(TJ_ERR_DTYPE, "%s: argument '%s' is %s but 'self' is %s; the op "
                                 "takes one dtype (as in PyTorch)", op->name,
                                 tjc_input_name(op, i), tj_dtype_name(in[i]->dtype),
                                 tj_dtype_name(in[0]->dtype));
        }
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    const tj_op_info *base = form->scalar_base >= 0 ? tjc_op(form->scalar_base) : form;
    if (base->id == TJ_OP_sub)
        for (int i = 0; i < n_in; i++)
            if (in[i] && in[i]->dtype == TJ_BOOL)
                return tjc_error(TJ_ERR_DTYPE, "%s: subtraction with a bool tensor is not "
                                 "supported (as in PyTorch); to invert a mask use "
                                 "tj_logical_not", op->name);
    tj_dtype r;
    if (op->pw_rule == TJC_PW_SELECT) {
        if (in[0]->dtype != TJ_BOOL)
            return tjc_error(TJ_ERR_DTYPE, "%s: argument '%s' must be bool, got %s", op->name,
                             tjc_input_name(op, 0), tj_dtype_name(in[0]->dtype));
        r = promote_inputs(in, 1, n_in);
    } else {
        r = promote_inputs(in, 0, n_in);
    }
    r = promote_with_scalars(op, attrs, r);
    switch (op->pw_rule) {
    case TJC_PW_ARITH_B:
        *compute = *result = r;
        break;
    case TJC_PW_ARITH:
    case TJC_PW_ARITH_FS:
        if (r == TJ_BOOL)
            return tjc_error(TJ_ERR_DTYPE, "%s: arithmetic on bool tensors is not supported; "
                             "convert with tj_to_dtype first", op->name);
        *compute = *result = r;
        break;
    case TJC_PW_FLOAT:
        *compute = *result = tj_dtype_is_float(r) ? r : TJ_F32;
        break;
    case TJC_PW_COMPARE:
        *compute = r;
        *result = TJ_BOOL;
        break;
    case TJC_PW_LOGICAL:
        *compute = *result = TJ_BOOL;
        break;
    case TJC_PW_SELECT:
        *compute = *result = r;
        break;
    }
    return TJ_OK;
}

/* In-place results must keep self's shape and fit its dtype. */
static tj_status check_inplace(const tj_op_info *op, const tj_tensor *self, const int64_t *sizes,
                               int ndim, tj_dtype result) {
    if (ndim != self->ndim || memcmp(sizes, self->sizes, sizeof(int64_t) * (size_t)ndim) != 0) {
        char bs[TJC_SIZES_BUF], bb[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: output with sizes %s does not match the broadcast "
                         "sizes %s", op->name, tjc_fmt_sizes(bs, sizeof bs, self->sizes, self->ndim),
                         tjc_fmt_sizes(bb, sizeof bb, sizes, ndim));
    }
    if (tjc_dtype_category(result) > tjc_dtype_category(self->dtype))
        return tjc_error(TJ_ERR_DTYPE, "%s: result type %s cannot be stored in the %s tensor "
                         "'self'", op->name, tj_dtype_name(result), tj_dtype_name(self->dtype));
    if (tjc_has_internal_overlap(self))
        return tjc_error(TJ_ERR_ARG, "%s: 'self' has elements that share memory (an expanded "
                         "tensor); clone it before writing in place", op->name);
    return TJ_OK;
}

/* PyTorch's checks of the Scalars that do not promote: an integer computation
 * refuses a float alpha (it would truncate it; addcmul's value and addmm's
 * beta are truncated, as in PyTorch), and integers do not take negative
 * integer powers. */
static tj_status check_scalar_params(const tjc_call *c, tj_dtype compute) {
    const tj_op_info *op = c->op;
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    const tj_schema *s = &op->schema;
    if (form->pw_rule == TJC_PW_ARITH_FS && tj_is_none(c->attr[0].f) && tj_is_none(c->attr[1].f))
        return tjc_error(TJ_ERR_ARG, "%s: at least one of 'min' and 'max' must be given (as in "
                         "PyTorch)", op->name);
    if (tj_dtype_is_float(compute)) return TJ_OK;
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        const tj_scalar *v = &c->attr[k].scalar;
        if ((arg->type != TJ_ARG_SCALAR && arg->type != TJ_ARG_SCALAR_OPT) ||
            tjc_scalar_kind(v) != TJ_SCALAR_FLOAT || (arg->type == TJ_ARG_SCALAR_OPT && tj_is_none(v->f)))
            continue;
        if (strcmp(arg->name, "alpha") == 0)
            return tjc_error(TJ_ERR_ARG, "%s: argument 'alpha' is the float %g, but an op on %s "
                             "tensors takes an integer alpha (as in PyTorch); write it as an "
                             "integer or convert the inputs to a floating dtype", op->name, v->f,
                             tj_dtype_name(compute));
        if (compute == TJ_I64 && !(v->f >= -0x1p63 && v->f < 0x1p63))
            return tjc_error(TJ_ERR_ARG, "%s: argument '%s' is %g, which cannot be converted to "
                             "i64 without overflow (as in PyTorch)", op->name, arg->name, v->f);
    }
    if (form->id == TJ_OP_pow_scalar && compute == TJ_I64 &&
        tjc_scalar_kind(&c->attr[0].scalar) != TJ_SCALAR_FLOAT && c->attr[0].scalar.i < 0)
        return tjc_error(TJ_ERR_ARG, "%s: Integers to negative integer powers are not allowed "
                         "(exponent %lld); convert to a floating dtype or write the exponent as "
                         "a float", op->name, (long long)c->attr[0].scalar.i);
    return TJ_OK;
}

tj_status tjc_infer_pointwise(const tjc_call *c, int *n_out) {
    const tj_op_info *op = c->op;
    int64_t sizes[TJ_MAX_DIMS];
    int ndim = 0;
    tj_status st;
    for (int i = 0; i < c->n_in; i++) {
        int64_t next[TJ_MAX_DIMS];
        if ((st = tjc_broadcast_shapes(op->name, sizes, ndim, c->in[i]->sizes, c->in[i]->ndim,
                                       next, &ndim)))
            return st;
        memcpy(sizes, next, sizeof(int64_t) * (size_t)ndim);
    }
    tj_dtype compute, result;
    if ((st = tjc_pw_types(op, c->in, c->n_in, c->attr, &compute, &result))) return st;
    if ((st = check_scalar_params(c, compute))) return st;
    *n_out = 1;
    if (op->inplace_of >= 0) {
        if ((st = check_inplace(op, c->in[0], sizes, ndim, result))) return st;
        c->meta[0].kind = TJC_OUT_SELF;
        return TJ_OK;
    }
    tjc_meta_new(&c->meta[0], result, sizes, ndim);
    return TJ_OK;
}

tj_status tjc_infer_clone(const tjc_call *c, int *n_out) {
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->in[0]->dtype, c->in[0]->sizes, c->in[0]->ndim);
    return TJ_OK;
}

tj_status tjc_infer_to_dtype(const tjc_call *c, int *n_out) {
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->attr[0].dtype, c->in[0]->sizes, c->in[0]->ndim);
    return TJ_OK;
}

tj_status tjc_infer_copy_(const tjc_call *c, int *n_out) {
    const tj_tensor *self = c->in[0], *src = c->in[1];
    /* one-way broadcasting: src stretches to self, never the other way */
    bool fits = src->ndim <= self->ndim;
    for (int d = 0; fits && d < src->ndim; d++) {
        int64_t s = src->sizes[d], t = self->sizes[self->ndim - src->ndim + d];
        fits = s == t || s == 1;
    }
    if (!fits) {
        char bs[TJC_SIZES_BUF], bb[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: source of sizes %s cannot be broadcast to the "
                         "destination's sizes %s", c->op->name,
                         tjc_fmt_sizes(bb, sizeof bb, src->sizes, src->ndim),
                         tjc_fmt_sizes(bs, sizeof bs, self->sizes, self->ndim));
    }
    if (tjc_has_internal_overlap(self))
        return tjc_error(TJ_ERR_ARG, "%s: 'self' has elements that share memory (an expanded "
                         "tensor); clone it before writing in place", c->op->name);
    *n_out = 1;
    c->meta[0].kind = TJC_OUT_SELF;
    return TJ_OK;
}
