/* import_pointwise.c — import rules of ONNX's elementwise ops: unary and
 * binary math, comparisons and logic, Where, Clip, Cast, Constant, Identity,
 * Dropout (inference), and the activations ONNX defines as functions, each
 * written with the same formula as ONNX's reference. An op whose ONNX result
 * dtype differs from tjit's for the given inputs (integer Div, say) is
 * refused rather than approximated. */
#include <math.h>
#include <string.h>

#include "tjo.h"


static const char *op_type(tjo_importer *im) { return im->node->op_type; }

/* The result must keep ONNX's dtype (that of input 0 unless said otherwise). */
static tj_status keep_dtype(tjo_importer *im, tjo_val *r, int want) {
    if (!r) TJO_FAIL();
    if (r->type.dtype != want)
        return tjo_unsupported(im, "tjit computes %s where ONNX gives %s for these inputs",
                               tj_dtype_name((tj_dtype)r->type.dtype),
                               tj_dtype_name((tj_dtype)want));
    return TJ_OK;
}

static tjo_val *scal(tjo_importer *im, int op_id, tjo_val *x, double v) {
    if (!x) return NULL;
    tj_attr a[2] = {{.scalar = tjo_scalar_for(x, v)}, {.scalar = tj_scalar_int(1)}};
    tjo_val *in[1] = {x};
    return tjo_emit1(im, op_id, in, 1, a);
}

static bool is_float(const tjo_val *v) { return v->type.dtype == TJ_F32 || v->type.dtype == TJ_F64; }

static tj_status need_float(tjo_importer *im, tjo_val *x) {
    if (!is_float(x))
        return tjo_unsupported(im, "input of dtype %s: tjit's form is for floating point",
                               tj_dtype_name((tj_dtype)x->type.dtype));
    return TJ_OK;
}

/* ---- unary and binary ops of the table ------------------------------------------------ */

static const struct {
    const char *onnx;
    int op;
    bool float_only;
} unary_ops[] = {
    {"Abs", TJ_OP_abs, false},          {"Neg", TJ_OP_neg, false},
    {"Exp", TJ_OP_exp, true},           {"Log", TJ_OP_log, true},
    {"Sqrt", TJ_OP_sqrt, true},         {"Sin", TJ_OP_sin, true},
    {"Cos", TJ_OP_cos, true},           {"Tanh", TJ_OP_tanh, true},
    {"Sigmoid", TJ_OP_sigmoid, true},   {"Relu", TJ_OP_relu, false},
    {"Erf", TJ_OP_erf, true},           {"Reciprocal", TJ_OP_reciprocal, true},
    {"Sign", TJ_OP_sign, false},        {"Floor", TJ_OP_floor, true},
    {"Ceil", TJ_OP_ceil, true},         {"Round", TJ_OP_round, true},
    {"Not", TJ_OP_logical_not, false},
};

static tj_status import_unary(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    for (size_t k = 0; k < sizeof unary_ops / sizeof unary_ops[0]; k++) {
        if (strcmp(unary_ops[k].onnx, op_type(im))) continue;
        if (unary_ops[k].float_only && (st = need_float(im, im->in[0]))) return st;
        out[0] = tjo_unary(im, unary_ops[k].op, im->in[0]);
        return keep_dtype(im, out[0], im->in[0]->type.dtype);
    }
    return tjo_node_error(im, TJ_ERR_INTERNAL, "no unary op");
}

static const struct {
    const char *onnx;
    int op;
    bool compares; /* gives bool */
} binary_ops[] = {
    {"Add", TJ_OP_add, false},          {"Sub", TJ_OP_sub, false},
    {"Mul", TJ_OP_mul, false},          {"Div", TJ_OP_div, false},
    {"Pow", TJ_OP_pow, false},          {"Equal", TJ_OP_eq, true},
    {"Less", TJ_OP_lt, true},           {"LessOrEqual", TJ_OP_le, true},
    {"Greater", TJ_OP_gt, true},        {"GreaterOrEqual", TJ_OP_ge, true},
    {"And", TJ_OP_logical_and, true},   {"Or", TJ_OP_logical_or, true},
    {"Xor", TJ_OP_ne, true},
};

/* Before opset 7, B broadcasts only with broadcast=1, its dims lined up with
 * A's from `axis` (by default at the end, as numpy does). */
static tjo_val *legacy_broadcast(tjo_importer *im, tjo_val *a, tjo_val *b) {
    int64_t on, axis;
    if (im->opset >= 7) return b;
    if (!tjo_attr_int(im, "broadcast", 0, &on) || !tjo_attr_int(im, "axis", INT64_MIN, &axis)) return NULL;
    if (!on || axis == INT64_MIN) return b;
    int ra = a->type.ndim, rb = b->type.ndim, ax;
    if (!tjo_axis(im, axis, ra, "axis", &ax)) return NULL;
    if (ax + rb > ra) {
        tjo_node_error(im, TJ_ERR_SHAPE, "B of rank %d does not fit at axis %d of rank %d", rb, ax, ra);
        return NULL;
    }
    int64_t sizes[TJ_MAX_DIMS];
    for (int d = 0; d < ra - ax; d++) sizes[d] = d < rb ? b->type.sizes[d] : 1;
    return tjo_reshape(im, b, sizes, ra - ax);
}

static tj_status import_binary(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 2, 2);
    if (st) return st;
    tjo_val *b = legacy_broadcast(im, im->in[0], im->in[1]);
    if (!b) TJO_FAIL();
    for (size_t k = 0; k < sizeof binary_ops / sizeof binary_ops[0]; k++) {
        if (strcmp(binary_ops[k].onnx, op_type(im))) continue;
        if (!binary_ops[k].compares && im->in[0]->type.dtype == TJ_BOOL)
            return tjo_unsupported(im, "bool inputs: tjit's arithmetic takes numbers");
        out[0] = tjo_binary(im, binary_ops[k].op, im->in[0], b);
        return keep_dtype(im, out[0], binary_ops[k].compares ? TJ_BOOL : im->in[0]->type.dtype);
    }
    return tjo_node_error(im, TJ_ERR_INTERNAL, "no binary op");
}

/* Max, Min, Sum, Mean: any number of inputs, broadcast together. */
static tj_status import_variadic(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 64);
    if (st) return st;
    const char *t = op_type(im);
    int op = !strcmp(t, "Max") ? TJ_OP_maximum : !strcmp(t, "Min") ? TJ_OP_minimum : TJ_OP_add;
    tjo_val *acc = im->in[0];
    if (acc->type.dtype == TJ_BOOL) return tjo_unsupported(im, "bool inputs");
    for (int i = 1; i < im->n_in; i++) {
        if (!im->in[i]) return tjo_node_error(im, TJ_ERR_PARSE, "input[%d] is empty", i);
        TJO_NEED(acc = tjo_binary(im, op, acc, im->in[i]));
    }
    if (!strcmp(t, "Mean")) {
        if ((st = need_float(im, acc))) return st;
        TJO_NEED(acc = scal(im, TJ_OP_div_scalar, acc, (double)im->n_in));
    }
    if (acc == im->in[0] && im->n_in == 1) acc = tjo_unary(im, TJ_OP_clone, acc);
    out[0] = acc;
    return keep_dtype(im, acc, im->in[0]->type.dtype);
}

static tj_status import_where(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 3, 3);
    if (st) return st;
    if (im->in[0]->type.dtype != TJ_BOOL) return tjo_node_error(im, TJ_ERR_PARSE, "condition is not bool");
    tjo_val *in[3] = {im->in[0], im->in[1], im->in[2]};
    out[0] = tjo_emit1(im, TJ_OP_where, in, 3, NULL);
    return keep_dtype(im, out[0], im->in[1]->type.dtype);
}

/* Clip: min and max are 0-dim tensors (inputs since opset 11). */
static tj_status import_clip(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 3);
    if (st) return st;
    tjo_val *x = im->in[0], *lo = tjo_has_input(im, 1) ? im->in[1] : NULL,
            *hi = tjo_has_input(im, 2) ? im->in[2] : NULL;
    if (x->type.dtype == TJ_BOOL) return tjo_unsupported(im, "bool input");
    if (im->opset < 11) { /* min and max were attributes */
        double a, b;
        if (!tjo_attr_float(im, "min", -INFINITY, &a) || !tjo_attr_float(im, "max", INFINITY, &b)) TJO_FAIL();
        lo = tjo_attr(im, "min") ? tjo_scalar(im, a, (tj_dtype)x->type.dtype) : NULL;
        hi = tjo_attr(im, "max") ? tjo_scalar(im, b, (tj_dtype)x->type.dtype) : NULL;
        if ((tjo_attr(im, "min") && !lo) || (tjo_attr(im, "max") && !hi)) TJO_FAIL();
    }
    bool const_bounds = (!lo || (lo->t && !lo->param)) && (!hi || (hi->t && !hi->param));
    if (!lo && !hi) { /* Clip without bounds copies x (aten::clamp takes at least one) */
        out[0] = tjo_unary(im, TJ_OP_clone, x);
    } else if (is_float(x) && const_bounds) {
        double b[2] = {TJ_NONE, TJ_NONE};
        if (lo && tj_item(lo->t, &b[0]) != TJ_OK) TJO_FAIL();
        if (hi && tj_item(hi->t, &b[1]) != TJ_OK) TJO_FAIL();
        tj_attr a[2] = {{.scalar = tjo_scalar_for(x, b[0])}, {.scalar = tjo_scalar_for(x, b[1])}};
        tjo_val *in[1] = {x};
        out[0] = tjo_emit1(im, TJ_OP_clamp, in, 1, a);
    } else {
        tjo_val *r = x;
        if (lo) r = tjo_binary(im, TJ_OP_maximum, r, lo);
        if (hi) r = tjo_binary(im, TJ_OP_minimum, r, hi);
        if (r == x) r = tjo_unary(im, TJ_OP_clone, x);
        out[0] = r;
    }
    return keep_dtype(im, out[0], x->type.dtype);
}

static tj_status import_identity(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    out[0] = im->in[0];
    return TJ_OK;
}

static tj_status import_cast(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    bool like = !strcmp(op_type(im), "CastLike");
    tj_status st = tjo_need_inputs(im, like ? 2 : 1, like ? 2 : 1);
    if (st) return st;
    int to;
    if (like) {
        to = im->in[1]->type.dtype;
    } else {
        int64_t t;
        if (!tjo_attr_int(im, "to", -1, &t)) TJO_FAIL();
        if (t < 0) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'to' is required");
        to = tjo_dtype_from_onnx((int)t);
        if (to < 0) return tjo_unsupported(im, "attribute 'to': %s has no tjit dtype", tjo_onnx_dtype_name((int)t));
    }
    out[0] = tjo_cast(im, im->in[0], (tj_dtype)to);
    if (out[0] == im->in[0]) out[0] = tjo_unary(im, TJ_OP_clone, out[0]);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_constant(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    if (im->n_in) return tjo_node_error(im, TJ_ERR_PARSE, "a Constant takes no inputs");
    const Onnx__AttributeProto *a = im->node->n_attribute == 1 ? im->node->attribute[0] : NULL;
    if (!a) return tjo_node_error(im, TJ_ERR_PARSE, "expected exactly one value attribute");
    tj_tensor *t = NULL;
    if (!strcmp(a->name, "value")) {
        if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t)
            return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'value': expected a tensor");
        t = tjo_tensor_from_proto(a->t, "attribute 'value'");
        if (!t) return tjo_node_error(im, tj_last_status(), "%s", tj_last_error());
    } else if (!strcmp(a->name, "value_float") || !strcmp(a->name, "value_int")) {
        bool f = a->name[6] == 'f';
        if (a->type != (f ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT))
            return tjo_node_error(im, TJ_ERR_PARSE, "attribute '%s' has the wrong type", a->name);
        out[0] = tjo_scalar(im, f ? (double)a->f : (double)a->i, f ? TJ_F32 : TJ_I64);
        if (!f && out[0]) *(int64_t *)tjc_data_ptr(out[0]->t) = a->i; /* exactly, beyond 2^53 */
        return out[0] ? TJ_OK : tj_last_status();
    } else {
        bool f = !strcmp(a->name, "value_floats");
        if (a->type != (f ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))
            return tjo_node_error(im, TJ_ERR_PARSE, "attribute '%s' has the wrong type", a->name);
        int64_t n = f ? (int64_t)a->n_floats : (int64_t)a->n_ints;
        t = tjc_alloc(&n, 1, f ? TJ_F32 : TJ_I64);
        if (!t) TJO_FAIL();
        if (n) memcpy(tjc_data_ptr(t), f ? (void *)a->floats : (void *)a->ints, (size_t)n * (f ? 4 : 8));
    }
    out[0] = tjo_const_val(im, t);
    return out[0] ? TJ_OK : tj_last_status();
}

/* Inference: the identity, and a mask of ones. */
static tj_status import_dropout(tjo_importer *im, tjo_val **out, int n_out) {
    tj_status st = tjo_need_inputs(im, 1, 3);
    if (st) return st;
    int64_t is_test;
    if (!tjo_attr_int(im, "is_test", im->opset < 7 ? 0 : 1, &is_test)) TJO_FAIL();
    if (!is_test) return tjo_unsupported(im, "attribute 'is_test' 0: only inference is supported");
    if (tjo_has_input(im, 2)) {
        const tjo_val *tm = im->in[2];
        double on = 1;
        if (!tm->t || tm->param || tj_item(tm->t, &on) != TJ_OK || on != 0)
            return tjo_unsupported(im, "input training_mode: only inference (false) is supported");
    }
    out[0] = im->in[0];
    if (n_out > 1) {
        const tj_type *t = &im->in[0]->type;
        tj_tensor *mask = tjc_alloc(t->sizes, t->ndim, TJ_BOOL);
        if (!mask) TJO_FAIL();
        memset(tjc_data_ptr(mask), 1, (size_t)tj_numel(mask));
        if (!(out[1] = tjo_const_val(im, mask))) TJO_FAIL();
    }
    return TJ_OK;
}

/* ---- activations defined by formulas ----------------------------------------------------- */

static tjo_val *relu_lo(tjo_importer *im, tjo_val *x) { /* min(x, 0) */
    return scal(im, TJ_OP_minimum_scalar, x, 0.0);
}

static tj_status import_activation(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    const char *t = op_type(im);
    bool prelu = !strcmp(t, "PRelu");
    tj_status st = tjo_need_inputs(im, prelu ? 2 : 1, prelu ? 2 : 1);
    if (st) return st;
    tjo_val *x = im->in[0], *r = NULL;
    if ((st = need_float(im, x))) return st;
    double alpha, beta, gamma;
    if (!strcmp(t, "Elu") || !strcmp(t, "Selu")) {
        bool selu = t[0] == 'S';
        if (!tjo_attr_float(im, "alpha", selu ? 1.67326319217681884765625 : 1.0, &alpha) ||
            !tjo_attr_float(im, "gamma", 1.05070102214813232421875, &gamma))
            TJO_FAIL();
        /* clip(x, 0, inf) + (exp(clip(x, -inf, 0)) - 1) * alpha  [* gamma] */
        tjo_val *neg = scal(im, TJ_OP_mul_scalar, scal(im, TJ_OP_sub_scalar, tjo_unary(im, TJ_OP_exp, relu_lo(im, x)), 1.0), alpha);
        tjo_val *pos = tjo_unary(im, TJ_OP_relu, x);
        if (selu) {
            pos = scal(im, TJ_OP_mul_scalar, pos, gamma);
            neg = scal(im, TJ_OP_mul_scalar, neg, gamma);
        }
        r = tjo_binary(im, TJ_OP_add, pos, neg);
    } else if (!strcmp(t, "Celu")) {
        if (!tjo_attr_float(im, "alpha", 1.0, &alpha)) TJO_FAIL();
        /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
        tjo_val *e = scal(im, TJ_OP_sub_scalar, tjo_unary(im, TJ_OP_exp, scal(im, TJ_OP_div_scalar, x, alpha)), 1.0);
        r = tjo_binary(im, TJ_OP_add, tjo_unary(im, TJ_OP_relu, x), relu_lo(im, scal(im, TJ_OP_mul_scalar, e, alpha)));
    } else if (!strcmp(t, "LeakyRelu")) {
        if (!tjo_attr_float(im, "alpha", 0.01, &alpha)) TJO_FAIL();
        r = tjo_binary(im, TJ_OP_add, tjo_unary(im, TJ_OP_relu, x), scal(im, TJ_OP_mul_scalar, relu_lo(im, x), alpha));
    } else if (!strcmp(t, "HardSigmoid") || !strcmp(t, "HardSwish")) {
        bool swish = !strcmp(t, "HardSwish");
        if (swish) alpha = 1.0 / 6, beta = 0.5;
        else if (!tjo_attr_float(im, "alpha", 0.2, &alpha) || !tjo_attr_float(im, "beta", 0.5, &beta))
            TJO_FAIL();
        tj_attr a[2] = {{.scalar = tjo_scalar_for(x, 0.0)}, {.scalar = tjo_scalar_for(x, 1.0)}};
        tjo_val *in[1] = {scal(im, TJ_OP_add_scalar, scal(im, TJ_OP_mul_scalar, x, alpha), beta)};
        r = in[0] ? tjo_emit1(im, TJ_OP_clamp, in, 1, a) : NULL;
        if (swish) r = tjo_binary(im, TJ_OP_mul, x, r);
    } else if (!strcmp(t, "Softplus")) {
        r = tjo_unary(im, TJ_OP_log, scal(im, TJ_OP_add_scalar, tjo_unary(im, TJ_OP_exp, x), 1.0));
    } else if (!strcmp(t, "Softsign")) {
        r = tjo_binary(im, TJ_OP_div, x, scal(im, TJ_OP_add_scalar, tjo_unary(im, TJ_OP_abs, x), 1.0));
    } else if (!strcmp(t, "ThresholdedRelu")) {
        if (!tjo_attr_float(im, "alpha", 1.0, &alpha)) TJO_FAIL();
        tjo_val *in[3] = {scal(im, TJ_OP_gt_scalar, x, alpha), x, tjo_scalar(im, 0.0, (tj_dtype)x->type.dtype)};
        r = tjo_emit1(im, TJ_OP_where, in, 3, NULL);
    } else if (prelu) {
        tjo_val *slope = im->in[1];
        if (im->opset < 7 && slope->type.ndim == 1 && slope->type.sizes[0] != 1 && x->type.ndim >= 2) {
            int64_t sizes[TJ_MAX_DIMS]; /* before opset 7 a slope per channel: dim 1 */
            for (int d = 0; d < x->type.ndim - 1; d++) sizes[d] = d ? 1 : slope->type.sizes[0];
            slope = tjo_reshape(im, slope, sizes, x->type.ndim - 1);
        }
        tjo_val *in[3] = {scal(im, TJ_OP_lt_scalar, x, 0.0), tjo_binary(im, TJ_OP_mul, slope, x), x};
        r = tjo_emit1(im, TJ_OP_where, in, 3, NULL);
    } else if (!strcmp(t, "Shrink")) {
        double lambd, bias;
        if (!tjo_attr_float(im, "lambd", 0.5, &lambd) || !tjo_attr_float(im, "bias", 0.0, &bias)) TJO_FAIL();
        tjo_val *zero = tjo_scalar(im, 0.0, (tj_dtype)x->type.dtype);
        tjo_val *hi[3] = {scal(im, TJ_OP_gt_scalar, x, lambd), scal(im, TJ_OP_sub_scalar, x, bias), zero};
        tjo_val *in[3] = {scal(im, TJ_OP_lt_scalar, x, -lambd), scal(im, TJ_OP_add_scalar, x, bias),
                          tjo_emit1(im, TJ_OP_where, hi, 3, NULL)};
        r = tjo_emit1(im, TJ_OP_where, in, 3, NULL);
    } else if (!strcmp(t, "Cosh") || !strcmp(t, "Sinh")) {
        tjo_val *e = tjo_unary(im, TJ_OP_exp, x), *ne = tjo_unary(im, TJ_OP_exp, tjo_unary(im, TJ_OP_neg, x));
        r = scal(im, TJ_OP_mul_scalar, tjo_binary(im, t[3] == 'h' && t[0] == 'C' ? TJ_OP_add : TJ_OP_sub, e, ne), 0.5);
    }
    out[0] = r;
    return keep_dtype(im, r, x->type.dtype);
}

/* IsNaN, IsInf: comparisons giving bool. */
static tj_status import_isnan_isinf(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    tjo_val *x = im->in[0];
    if ((st = need_float(im, x))) return st;
    if (!strcmp(op_type(im), "IsNaN")) {
        out[0] = tjo_binary(im, TJ_OP_ne, x, x);
        return out[0] ? TJ_OK : tj_last_status();
    }
    int64_t pos, neg;
    if (!tjo_attr_int(im, "detect_positive", 1, &pos) || !tjo_attr_int(im, "detect_negative", 1, &neg)) TJO_FAIL();
    tjo_val *p = pos ? scal(im, TJ_OP_eq_scalar, x, INFINITY) : NULL;
    tjo_val *n = neg ? scal(im, TJ_OP_eq_scalar, x, -INFINITY) : NULL;
    if (p && n) out[0] = tjo_binary(im, TJ_OP_logical_or, p, n);
    else out[0] = p ? p : n ? n : scal(im, TJ_OP_ne_scalar, tjo_unary(im, TJ_OP_abs, x), INFINITY);
    if (!pos && !neg && out[0]) out[0] = tjo_binary(im, TJ_OP_logical_and, out[0], tjo_scalar(im, 0, TJ_BOOL));
    return out[0] ? TJ_OK : tj_last_status();
}

const tjo_import_rule tjo_rules_pointwise[] = {
    {"Abs", "", import_unary}, {"Neg", "", import_unary}, {"Exp", "", import_unary},
    {"Log", "", import_unary}, {"Sqrt", "", import_unary}, {"Sin", "", import_unary},
    {"Cos", "", import_unary}, {"Tanh", "", import_unary}, {"Sigmoid", "", import_unary},
    {"Relu", "", import_unary}, {"Erf", "", import_unary}, {"Reciprocal", "", import_unary},
    {"Sign", "", import_unary}, {"Floor", "", import_unary}, {"Ceil", "", import_unary},
    {"Round", "", import_unary}, {"Not", "", import_unary},
    {"Add", "broadcast|axis", import_binary}, {"Sub", "broadcast|axis", import_binary}, {"Mul", "broadcast|axis", import_binary},
    {"Div", "broadcast|axis", import_binary}, {"Pow", "broadcast|axis", import_binary}, {"Equal", "broadcast|axis", import_binary},
    {"Less", "broadcast|axis", import_binary}, {"LessOrEqual", "", import_binary}, {"Greater", "broadcast|axis", import_binary},
    {"GreaterOrEqual", "", import_binary}, {"And", "broadcast|axis", import_binary}, {"Or", "broadcast|axis", import_binary},
    {"Xor", "broadcast|axis", import_binary},
    {"Max", "", import_variadic}, {"Min", "", import_variadic}, {"Sum", "", import_variadic},
    {"Mean", "", import_variadic},
    {"Where", "", import_where}, {"Clip", "min|max", import_clip}, {"Identity", "", import_identity},
    {"Cast", "to", import_cast}, {"CastLike", "", import_cast},
    {"Constant", "value|value_float|value_floats|value_int|value_ints", import_constant},
    {"Dropout", "seed|ratio|is_test", import_dropout},
    {"Elu", "alpha", import_activation}, {"Selu", "alpha|gamma", import_activation},
    {"Celu", "alpha", import_activation}, {"LeakyRelu", "alpha", import_activation},
    {"HardSigmoid", "alpha|beta", import_activation}, {"HardSwish", "", import_activation},
    {"Softplus", "", import_activation}, {"Softsign", "", import_activation},
    {"ThresholdedRelu", "alpha", import_activation}, {"PRelu", "", import_activation},
    {"Shrink", "lambd|bias", import_activation}, {"Cosh", "", import_activation},
    {"Sinh", "", import_activation},
    {"IsNaN", "", import_isnan_isinf}, {"IsInf", "detect_positive|detect_negative", import_isnan_isinf},
    {NULL, NULL, NULL},
};
