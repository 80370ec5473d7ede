/* export_ops.c — export rules of the pointwise ops and the reductions, and
 * the table of every op's rule or the reason it has none (export_nn.c has
 * the rest). Inputs are cast to the dtype tjit computes in where it differs,
 * so that ONNX computes what tjit does; ops ONNX lacks are written with the
 * formula tjit's kernel uses (exact gelu through Erf, log1p, silu, lerp). */
#include <math.h>
#include <string.h>

#include "tjo.h"
#include "tjo_export.h"

/* ---- helpers (tjo_export.h) --------------------------------------------------------------- */

const tj_type *tjo_in_type(const tj_node *n, int i) { return tj_value_type(tj_node_input(n, i)); }
const tj_type *tjo_out_type(const tj_node *n, int k) { return tj_value_type(tj_node_output(n, k)); }
const tj_attr *tjo_nattr(const tj_node *n, const char *name) {
    int i = tj_node_attr_index(n, name);
    return i >= 0 ? tj_node_attr(n, i) : NULL;
}

const char *tjo_op1(tjo_exporter *ex, const char *op, const char *a, const char *out) {
    const char *o = out ? out : tjo_tmp(ex, op);
    return o && tjo_node(ex, op, &a, 1, &o, 1) ? o : NULL;
}

const char *tjo_op2(tjo_exporter *ex, const char *op, const char *a, const char *b, const char *out) {
    const char *ins[2] = {a, b}, *o = out ? out : tjo_tmp(ex, op);
    return a && b && o && tjo_node(ex, op, ins, 2, &o, 1) ? o : NULL;
}

const char *tjo_xcast(tjo_exporter *ex, const char *x, int from, int to, const char *out) {
    if (!x) return NULL;
    if (from == to) return out ? tjo_op1(ex, "Identity", x, out) : x;
    const char *o = out ? out : tjo_tmp(ex, "cast");
    Onnx__NodeProto *n = o ? tjo_node(ex, "Cast", &x, 1, &o, 1) : NULL;
    return n && tjo_set_int(ex, n, "to", tjo_onnx_dtype((tj_dtype)to)) ? o : NULL;
}

tj_status tjo_done(tjo_exporter *ex, const char *last) {
    if (last) return TJ_OK;
    return tj_last_status() ? tj_last_status() : tjo_export_error(ex, TJ_ERR_MEMORY, "out of memory");
}

static int dtype_of(const tj_node *n, int i) { return tjo_in_type(n, i)->dtype; }
static int out_dtype(const tj_node *n) { return tjo_out_type(n, 0)->dtype; }

/* The dtype a pointwise node computes in. */
static int compute_dtype(const tj_node *n) {
    const tj_op_info *op = tj_node_op(n);
    if (op->pw_rule == TJC_PW_COMPARE) {
        int d = dtype_of(n, 0);
        if (op->scalar_base >= 0) return tjc_promote_scalar((tj_dtype)d, &tj_node_attr(n, 0)->scalar);
        for (int i = 1; i < tj_node_num_inputs(n); i++) d = tjc_promote((tj_dtype)d, (tj_dtype)dtype_of(n, i));
        return d;
    }
    if (op->pw_rule == TJC_PW_LOGICAL) return TJ_BOOL;
    return out_dtype(n);
}

/* Input i cast to the compute dtype. */
static const char *in_as(tjo_exporter *ex, const tj_node *n, const char *const *in, int i, int dt) {
    return tjo_xcast(ex, in[i], dtype_of(n, i), dt, NULL);
}

/* ---- pointwise ----------------------------------------------------------------------------- */

static const struct {
    int op;
    const char *onnx;
} direct[] = {
    {TJ_OP_neg, "Neg"},         {TJ_OP_abs, "Abs"},           {TJ_OP_exp, "Exp"},
    {TJ_OP_log, "Log"},         {TJ_OP_sqrt, "Sqrt"},         {TJ_OP_sin, "Sin"},
    {TJ_OP_cos, "Cos"},         {TJ_OP_tanh, "Tanh"},         {TJ_OP_sigmoid, "Sigmoid"},
    {TJ_OP_relu, "Relu"},       {TJ_OP_erf, "Erf"},           {TJ_OP_reciprocal, "Reciprocal"},
    {TJ_OP_sign, "Sign"},       {TJ_OP_floor, "Floor"},       {TJ_OP_ceil, "Ceil"},
    {TJ_OP_round, "Round"},     {TJ_OP_logical_not, "Not"},   {TJ_OP_mul, "Mul"},
    {TJ_OP_div, "Div"},         {TJ_OP_pow, "Pow"},           {TJ_OP_maximum, "Max"},
    {TJ_OP_minimum, "Min"},     {TJ_OP_eq, "Equal"},          {TJ_OP_lt, "Less"},
    {TJ_OP_le, "LessOrEqual"},  {TJ_OP_gt, "Greater"},        {TJ_OP_ge, "GreaterOrEqual"},
    {TJ_OP_logical_and, "And"}, {TJ_OP_logical_or, "Or"},     {TJ_OP_mul_scalar, "Mul"},
    {TJ_OP_div_scalar, "Div"},  {TJ_OP_pow_scalar, "Pow"},    {TJ_OP_maximum_scalar, "Max"},
    {TJ_OP_minimum_scalar, "Min"}, {TJ_OP_eq_scalar, "Equal"}, {TJ_OP_lt_scalar, "Less"},
    {TJ_OP_le_scalar, "LessOrEqual"}, {TJ_OP_gt_scalar, "Greater"},
    {TJ_OP_ge_scalar, "GreaterOrEqual"}, {TJ_OP_logical_and_scalar, "And"},
    {TJ_OP_logical_or_scalar, "Or"},
};

static const char *direct_name(int op) {
    for (size_t k = 0; k < sizeof direct / sizeof direct[0]; k++)
        if (direct[k].op == op) return direct[k].onnx;
    return NULL;
}

/* The second operand: input 1, or the scalar attribute of a *.Scalar form. */
static const char *operand_b(tjo_exporter *ex, const tj_node *n, const char *const *in, int dt) {
    if (tj_node_op(n)->scalar_base >= 0) return tjo_x_const_scalar(ex, tj_node_attr(n, 0)->f, (tj_dtype)dt);
    return in_as(ex, n, in, 1, dt);
}

static tj_status ex_direct(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n)), dt = compute_dtype(n);
    const char *onnx = direct_name(id);
    if ((id == TJ_OP_floor || id == TJ_OP_ceil || id == TJ_OP_round) && dt == TJ_I64)
        return tjo_done(ex, tjo_op1(ex, "Identity", in[0], out[0])); /* integers round to themselves */
    const char *a = in_as(ex, n, in, 0, dt);
    if (tj_node_op(n)->pw_arity == 1 && tj_node_op(n)->scalar_base < 0)
        return tjo_done(ex, tjo_op1(ex, onnx, a, out[0]));
    return tjo_done(ex, tjo_op2(ex, onnx, a, operand_b(ex, n, in, dt), out[0]));
}

/* a + alpha b and a - alpha b (tensor and scalar forms), a != b. */
static tj_status ex_add_sub(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n)), dt = out_dtype(n);
    bool sub = id == TJ_OP_sub || id == TJ_OP_sub_scalar;
    const char *a = in_as(ex, n, in, 0, dt), *b;
    if (tj_node_op(n)->scalar_base >= 0) {
        b = tjo_x_const_scalar(ex, tj_node_attr(n, 0)->f * tj_node_attr(n, 1)->f, (tj_dtype)dt);
    } else {
        b = in_as(ex, n, in, 1, dt);
        double alpha = tj_node_attr(n, 0)->f;
        if (alpha != 1.0) b = tjo_op2(ex, "Mul", b, tjo_x_const_scalar(ex, alpha, (tj_dtype)dt), NULL);
    }
    return tjo_done(ex, tjo_op2(ex, sub ? "Sub" : "Add", a, b, out[0]));
}

static tj_status ex_ne(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int dt = compute_dtype(n);
    const char *eq = tjo_op2(ex, "Equal", in_as(ex, n, in, 0, dt), operand_b(ex, n, in, dt), NULL);
    return tjo_done(ex, tjo_op1(ex, "Not", eq, out[0]));
}

static tj_status ex_where(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int dt = out_dtype(n);
    const char *ins[3] = {tjo_xcast(ex, in[0], dtype_of(n, 0), TJ_BOOL, NULL), in_as(ex, n, in, 1, dt),
                          in_as(ex, n, in, 2, dt)};
    if (!ins[0] || !ins[1] || !ins[2]) return tjo_done(ex, NULL);
    return tjo_done(ex, tjo_node(ex, "Where", ins, 3, out, 1) ? out[0] : NULL);
}

static tj_status ex_clamp(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int dt = out_dtype(n);
    double lo = tj_node_attr(n, 0)->f, hi = tj_node_attr(n, 1)->f;
    const char *ins[3] = {in_as(ex, n, in, 0, dt), tj_is_none(lo) ? "" : tjo_x_const_scalar(ex, lo, (tj_dtype)dt),
                          tj_is_none(hi) ? "" : tjo_x_const_scalar(ex, hi, (tj_dtype)dt)};
    if (!ins[0] || !ins[1] || !ins[2]) return tjo_done(ex, NULL);
    return tjo_done(ex, tjo_node(ex, "Clip", ins, 3, out, 1) ? out[0] : NULL);
}

/* The formulas of ops ONNX (opset 17) does not have. */
static tj_status ex_formula(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n)), dt = out_dtype(n);
    tj_dtype d = (tj_dtype)dt;
    const char *x = in_as(ex, n, in, 0, dt), *r = NULL;
    switch (id) {
    case TJ_OP_log1p: r = tjo_op1(ex, "Log", tjo_op2(ex, "Add", x, tjo_x_const_scalar(ex, 1, d), NULL), out[0]); break;
    case TJ_OP_expm1: r = tjo_op2(ex, "Sub", tjo_op1(ex, "Exp", x, NULL), tjo_x_const_scalar(ex, 1, d), out[0]); break;
    case TJ_OP_rsqrt: r = tjo_op1(ex, "Reciprocal", tjo_op1(ex, "Sqrt", x, NULL), out[0]); break;
    case TJ_OP_silu: r = tjo_op2(ex, "Mul", x, tjo_op1(ex, "Sigmoid", x, NULL), out[0]); break;
    case TJ_OP_gelu: {
        const char *inner;
        if (!strcmp(tj_node_attr(n, 0)->s, "tanh")) { /* tanh(sqrt(2/pi) (x + 0.044715 x^3)) */
            const char *x3 = tjo_op2(ex, "Mul", tjo_op2(ex, "Mul", x, x, NULL), x, NULL);
            const char *s = tjo_op2(ex, "Add", x, tjo_op2(ex, "Mul", x3, tjo_x_const_scalar(ex, 0.044715, d), NULL), NULL);
            inner = tjo_op1(ex, "Tanh", tjo_op2(ex, "Mul", s, tjo_x_const_scalar(ex, 0.7978845608028654, d), NULL), NULL);
        } else { /* erf(x / sqrt(2)) */
            inner = tjo_op1(ex, "Erf", tjo_op2(ex, "Mul", x, tjo_x_const_scalar(ex, 0.7071067811865476, d), NULL), NULL);
        }
        const char *half_x = tjo_op2(ex, "Mul", x, tjo_x_const_scalar(ex, 0.5, d), NULL);
        r = tjo_op2(ex, "Mul", half_x, tjo_op2(ex, "Add", inner, tjo_x_const_scalar(ex, 1, d), NULL), out[0]);
        break;
    }
    case TJ_OP_lerp:
    case TJ_OP_lerp_tensor: { /* a + w (b - a) */
        const char *b = in_as(ex, n, in, 1, dt);
        const char *w = id == TJ_OP_lerp ? tjo_x_const_scalar(ex, tj_node_attr(n, 0)->f, d) : in_as(ex, n, in, 2, dt);
        r = tjo_op2(ex, "Add", x, tjo_op2(ex, "Mul", w, tjo_op2(ex, "Sub", b, x, NULL), NULL), out[0]);
        break;
    }
    case TJ_OP_addcmul: { /* a + value b c */
        const char *bc = tjo_op2(ex, "Mul", in_as(ex, n, in, 1, dt), in_as(ex, n, in, 2, dt), NULL);
        double v = tj_node_attr(n, 0)->f;
        if (v != 1.0) bc = tjo_op2(ex, "Mul", bc, tjo_x_const_scalar(ex, v, d), NULL);
        r = tjo_op2(ex, "Add", x, bc, out[0]);
        break;
    }
    default: break;
    }
    return tjo_done(ex, r);
}

static tj_status ex_copy(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n));
    if (id == TJ_OP_to_dtype) return tjo_done(ex, tjo_xcast(ex, in[0], dtype_of(n, 0), out_dtype(n), out[0]));
    if (id == TJ_OP_zeros_like) {
        const char *shape = tjo_op1(ex, "Shape", in[0], NULL);
        tj_tensor *zero = tjc_alloc((int64_t[]){1}, 1, (tj_dtype)out_dtype(n));
        if (!zero || !shape) return tjo_done(ex, NULL);
        memset(tjc_data_ptr(zero), 0, tj_dtype_size(tj_tensor_dtype(zero)));
        Onnx__NodeProto *c = tjo_node(ex, "ConstantOfShape", &shape, 1, out, 1);
        bool ok = c && tjo_set_tensor(ex, c, "value", zero);
        tj_release(zero);
        if (!ok) return tjo_done(ex, NULL);
        return TJ_OK;
    }
    return tjo_done(ex, tjo_op1(ex, "Identity", in[0], out[0])); /* clone, contiguous */
}

/* ---- reductions ------------------------------------------------------------------------------ */

/* The dims of a reduction node (empty: all), normalised. */
static int reduce_dims(const tj_node *n, const char *attr, int64_t *dims) {
    const tj_attr *a = tjo_nattr(n, attr);
    int r = tjo_in_type(n, 0)->ndim;
    for (int k = 0; k < a->ints.n; k++) dims[k] = a->ints.data[k] < 0 ? a->ints.data[k] + (r ? r : 1) : a->ints.data[k];
    return a->ints.n;
}

/* A Reduce* node over dims (none: all), in opset's form: axes as input
 * (ReduceSum from 13, all from 18) or as attribute. */
const char *tjo_reduce(tjo_exporter *ex, const char *op, const char *x, const int64_t *dims, int nd,
                       bool keep, const char *out) {
    bool as_input = !strcmp(op, "ReduceSum") ? ex->opset >= 13 : ex->opset >= 18;
    const char *ins[2] = {x, nd && as_input ? tjo_x_const_ints(ex, dims, nd) : NULL};
    const char *o = out ? out : tjo_tmp(ex, op);
    if (!x || !o || (nd && as_input && !ins[1])) return NULL;
    Onnx__NodeProto *node = tjo_node(ex, op, ins, nd && as_input ? 2 : 1, &o, 1);
    if (!node || !tjo_set_int(ex, node, "keepdims", keep)) return NULL;
    if (nd && !as_input && !tjo_set_ints(ex, node, "axes", dims, nd)) return NULL;
    return o;
}

static tj_status ex_reduce(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n)), dt = out_dtype(n);
    int64_t dims[TJ_MAX_DIMS];
    int nd = reduce_dims(n, "dim", dims);
    bool keep = tjo_nattr(n, "keepdim")->b;
    const char *x = tjo_xcast(ex, in[0], dtype_of(n, 0), dt, NULL);
    const char *op = id == TJ_OP_sum ? "ReduceSum" : id == TJ_OP_mean ? "ReduceMean" : id == TJ_OP_prod ? "ReduceProd"
                   : id == TJ_OP_amax ? "ReduceMax" : id == TJ_OP_amin ? "ReduceMin" : "ReduceLogSumExp";
    return tjo_done(ex, tjo_reduce(ex, op, x, dims, nd, keep, out[0]));
}

static tj_status ex_norm(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int dt = out_dtype(n);
    double ord = tj_node_attr(n, 0)->f;
    int64_t dims[TJ_MAX_DIMS];
    int nd = reduce_dims(n, "dim", dims);
    bool keep = tjo_nattr(n, "keepdim")->b;
    const char *x = tjo_xcast(ex, in[0], dtype_of(n, 0), dt, NULL), *r;
    if (ord == 2) r = tjo_reduce(ex, "ReduceL2", x, dims, nd, keep, out[0]);
    else if (ord == 1) r = tjo_reduce(ex, "ReduceL1", x, dims, nd, keep, out[0]);
    else if (isinf(ord)) r = tjo_reduce(ex, ord > 0 ? "ReduceMax" : "ReduceMin", tjo_op1(ex, "Abs", x, NULL), dims, nd, keep, out[0]);
    else if (ord == 0) {
        const char *nz = tjo_xcast(ex, tjo_op1(ex, "Not", tjo_op2(ex, "Equal", x, tjo_x_const_scalar(ex, 0, (tj_dtype)dt), NULL), NULL), TJ_BOOL, dt, NULL);
        r = tjo_reduce(ex, "ReduceSum", nz, dims, nd, keep, out[0]);
    } else { /* (sum |x|^p)^(1/p) */
        const char *p = tjo_op2(ex, "Pow", tjo_op1(ex, "Abs", x, NULL), tjo_x_const_scalar(ex, ord, (tj_dtype)dt), NULL);
        r = tjo_op2(ex, "Pow", tjo_reduce(ex, "ReduceSum", p, dims, nd, keep, NULL),
                    tjo_x_const_scalar(ex, 1.0 / ord, (tj_dtype)dt), out[0]);
    }
    return tjo_done(ex, r);
}

/* var and std: the mean squared deviation times N / max(0, N - correction). */
static tj_status ex_var(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n)), dt = out_dtype(n);
    int64_t dims[TJ_MAX_DIMS], count = 1;
    int nd = reduce_dims(n, "dim", dims);
    const tj_type *t = tjo_in_type(n, 0);
    bool keep = tjo_nattr(n, "keepdim")->b;
    for (int d = 0; d < t->ndim; d++) {
        bool reduced = nd == 0;
        for (int k = 0; k < nd; k++) reduced |= dims[k] == d;
        if (reduced) count *= t->sizes[d];
    }
    double corr = (double)tjo_nattr(n, "correction")->i, denom = (double)count - corr;
    const char *x = in[0];
    const char *mean = tjo_reduce(ex, "ReduceMean", x, dims, nd, true, NULL);
    const char *dev = tjo_op2(ex, "Sub", x, mean, NULL);
    const char *msd = tjo_reduce(ex, "ReduceMean", tjo_op2(ex, "Mul", dev, dev, NULL), dims, nd, keep, NULL);
    double scale = denom > 0 ? (double)count / denom : INFINITY;
    const char *var = tjo_op2(ex, "Mul", msd, tjo_x_const_scalar(ex, scale, (tj_dtype)dt), id == TJ_OP_var ? out[0] : NULL);
    return tjo_done(ex, id == TJ_OP_var ? var : tjo_op1(ex, "Sqrt", var, out[0]));
}

/* max.dim, min.dim: values and indices; argmax, argmin. */
static tj_status ex_arg(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n));
    bool with_values = id == TJ_OP_max_dim || id == TJ_OP_min_dim;
    bool is_max = id == TJ_OP_max_dim || id == TJ_OP_argmax;
    bool keep = tjo_nattr(n, "keepdim")->b;
    const tj_type *t = tjo_in_type(n, 0);
    int64_t dim;
    const char *x = in[0];
    if (with_values) {
        dim = tj_node_attr(n, 0)->i;
    } else {
        int64_t dims[TJ_MAX_DIMS];
        if (reduce_dims(n, "dim", dims) == 0) { /* over the flattened input */
            int64_t flat = -1;
            x = tjo_op2(ex, "Reshape", x, tjo_x_const_ints(ex, &flat, 1), NULL);
            Onnx__NodeProto *a;
            const char *idx = tjo_tmp(ex, "arg");
            if (!x || !idx || !(a = tjo_node(ex, is_max ? "ArgMax" : "ArgMin", &x, 1, &idx, 1)) ||
                !tjo_set_int(ex, a, "axis", 0) || !tjo_set_int(ex, a, "keepdims", 0))
                return tjo_done(ex, NULL);
            int64_t shape[TJ_MAX_DIMS];
            for (int d = 0; d < t->ndim; d++) shape[d] = 1;
            return tjo_done(ex, tjo_op2(ex, "Reshape", idx, tjo_x_const_ints(ex, shape, keep ? t->ndim : 0), out[0]));
        }
        dim = dims[0];
    }
    if (dim < 0) dim += t->ndim ? t->ndim : 1;
    if (with_values && !tjo_reduce(ex, is_max ? "ReduceMax" : "ReduceMin", x, &dim, 1, keep, out[0]))
        return tjo_done(ex, NULL);
    const char *idx = with_values ? out[1] : out[0];
    Onnx__NodeProto *a = tjo_node(ex, is_max ? "ArgMax" : "ArgMin", &x, 1, &idx, 1);
    return tjo_done(ex, a && tjo_set_int(ex, a, "axis", dim) && tjo_set_int(ex, a, "keepdims", keep) ? idx : NULL);
}

/* sum_to_size: ReduceSum over the broadcast dims, then the target sizes. */
static tj_status ex_sum_to_size(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0), *o = tjo_out_type(n, 0);
    const tj_attr *size = tj_node_attr(n, 0);
    int64_t dims[TJ_MAX_DIMS];
    int nd = 0, lead = t->ndim - size->ints.n;
    for (int d = 0; d < t->ndim; d++)
        if (d < lead || (size->ints.data[d - lead] == 1 && t->sizes[d] != 1)) dims[nd++] = d;
    const char *x = tjo_xcast(ex, in[0], t->dtype, o->dtype, NULL);
    const char *r = nd ? tjo_reduce(ex, "ReduceSum", x, dims, nd, true, NULL) : x;
    return tjo_done(ex, tjo_op2(ex, "Reshape", r, tjo_x_const_ints(ex, size->ints.data, size->ints.n), out[0]));
}

/* ---- the table ------------------------------------------------------------------------------------ */

static const tjo_export_entry rules[] = {
#define DIRECT(id) {TJ_OP_##id, ex_direct, NULL}
    DIRECT(neg), DIRECT(abs), DIRECT(exp), DIRECT(log), DIRECT(sqrt), DIRECT(sin), DIRECT(cos),
    DIRECT(tanh), DIRECT(sigmoid), DIRECT(relu), DIRECT(erf), DIRECT(reciprocal), DIRECT(sign),
    DIRECT(floor), DIRECT(ceil), DIRECT(round), DIRECT(logical_not), DIRECT(mul), DIRECT(div),
    DIRECT(pow), DIRECT(maximum), DIRECT(minimum), DIRECT(eq), DIRECT(lt), DIRECT(le), DIRECT(gt),
    DIRECT(ge), DIRECT(logical_and), DIRECT(logical_or), DIRECT(mul_scalar), DIRECT(div_scalar),
    DIRECT(pow_scalar), DIRECT(maximum_scalar), DIRECT(minimum_scalar), DIRECT(eq_scalar),
    DIRECT(lt_scalar), DIRECT(le_scalar), DIRECT(gt_scalar), DIRECT(ge_scalar),
    DIRECT(logical_and_scalar), DIRECT(logical_or_scalar),
#undef DIRECT
    {TJ_OP_add, ex_add_sub, "Add (Mul by alpha when alpha != 1)"},
    {TJ_OP_sub, ex_add_sub, "Sub (Mul by alpha when alpha != 1)"},
    {TJ_OP_add_scalar, ex_add_sub, "Add of a constant"}, {TJ_OP_sub_scalar, ex_add_sub, "Sub of a constant"},
    {TJ_OP_ne, ex_ne, "Not(Equal)"}, {TJ_OP_ne_scalar, ex_ne, "Not(Equal)"},
    {TJ_OP_where, ex_where, "Where"}, {TJ_OP_clamp, ex_clamp, "Clip"},
    {TJ_OP_log1p, ex_formula, "Log(Add(x, 1)) (ONNX has no Log1p)"},
    {TJ_OP_expm1, ex_formula, "Sub(Exp(x), 1) (ONNX has no Expm1)"},
    {TJ_OP_rsqrt, ex_formula, "Reciprocal(Sqrt)"},
    {TJ_OP_silu, ex_formula, "Mul(x, Sigmoid(x))"},
    {TJ_OP_gelu, ex_formula, "exact: x/2 (1 + Erf(x/sqrt 2)); tanh: with Tanh (Gelu is opset 20)"},
    {TJ_OP_lerp, ex_formula, "a + w (b - a)"}, {TJ_OP_lerp_tensor, ex_formula, "a + w (b - a)"},
    {TJ_OP_addcmul, ex_formula, "Add(a, Mul(value, Mul(b, c)))"},
    {TJ_OP_clone, ex_copy, "Identity"}, {TJ_OP_to_dtype, ex_copy, "Cast"},
    {TJ_OP_zeros_like, ex_copy, "ConstantOfShape(Shape(x))"}, {TJ_OP_contiguous, ex_copy, "Identity"},
    {TJ_OP_copy_, NULL, "writes into its input; ONNX values are immutable"},
    {TJ_OP_sum, ex_reduce, "ReduceSum"}, {TJ_OP_mean, ex_reduce, "ReduceMean"},
    {TJ_OP_prod, ex_reduce, "ReduceProd"}, {TJ_OP_amax, ex_reduce, "ReduceMax"},
    {TJ_OP_amin, ex_reduce, "ReduceMin"}, {TJ_OP_logsumexp, ex_reduce, "ReduceLogSumExp"},
    {TJ_OP_linalg_vector_norm, ex_norm, "ReduceL2, ReduceL1, Reduce{Max,Min}(Abs), or Pow(ReduceSum(Pow(Abs)))"},
    {TJ_OP_var, ex_var, "ReduceMean of squared deviations, scaled for the correction (ONNX has no Var)"},
    {TJ_OP_std, ex_var, "Sqrt of var's form"},
    {TJ_OP_max_dim, ex_arg, "ReduceMax and ArgMax"}, {TJ_OP_min_dim, ex_arg, "ReduceMin and ArgMin"},
    {TJ_OP_argmax, ex_arg, "ArgMax (Reshape to 1-D first for dim=[])"},
    {TJ_OP_argmin, ex_arg, "ArgMin (Reshape to 1-D first for dim=[])"},
    {TJ_OP_sum_to_size, ex_sum_to_size, "ReduceSum and Reshape"},
    {-1, NULL, NULL},
};

tjo_export_fn tjo_export_rule(int op_id, const char **text) {
    for (const tjo_export_entry *e = rules; e->op >= 0; e++)
        if (e->op == op_id) {
            *text = e->text ? e->text : direct_name(op_id);
            return e->fn;
        }
    const tj_op_info *op = tjc_op(op_id);
    if (op->inplace_of >= 0) {
        *text = "writes into its input (in place); ONNX values are immutable";
        return NULL;
    }
    for (const tjo_export_entry *e = tjo_export_rules_nn; e->op >= 0; e++)
        if (e->op == op_id) {
            *text = e->text;
            return e->fn;
        }
    *text = "tjit has no ONNX form for it";
    return NULL;
}

const char *tj_onnx_export_form(const tj_op_info *op, bool *exportable) {
    if (!exportable) return tjc_error(TJ_ERR_ARG, "tj_onnx_export_form: exportable is NULL"), NULL;
    *exportable = false;
    if (!op) return tjc_last_or(TJ_ERR_ARG, "tj_onnx_export_form: the op is NULL"), "no op";
    const char *text = NULL;
    *exportable = tjo_export_rule(op->id, &text) != NULL;
    return text;
}
