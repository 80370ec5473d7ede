/* import_reduce.c — import rules of ONNX's reductions (ReduceSum, ReduceMean,
 * ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSumExp,
 * ReduceSumSquare, ReduceLogSum) and of ArgMax / ArgMin. ONNX's missing
 * axes reduce every dim, as tjit's empty dim list does. */
#include <string.h>

#include "tjo.h"


static const struct {
    const char *onnx;
    int op;
} reductions[] = {
    {"ReduceSum", TJ_OP_sum},           {"ReduceMean", TJ_OP_mean},
    {"ReduceMax", TJ_OP_amax},          {"ReduceMin", TJ_OP_amin},
    {"ReduceProd", TJ_OP_prod},         {"ReduceL1", TJ_OP_linalg_vector_norm},
    {"ReduceL2", TJ_OP_linalg_vector_norm}, {"ReduceLogSumExp", TJ_OP_logsumexp},
    {"ReduceSumSquare", TJ_OP_sum},     {"ReduceLogSum", TJ_OP_sum},
};

static tj_status import_reduce(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    const char *t = im->node->op_type;
    if (im->n_in < 1 || im->n_in > 2 || !im->in[0])
        return tjo_node_error(im, TJ_ERR_PARSE, "expected the data and optional axes");
    tjo_val *x = im->in[0];
    int r = x->type.ndim, n = 0;
    int64_t keep, noop, axes[TJ_MAX_DIMS];
    if (!tjo_attr_int(im, "keepdims", 1, &keep) || !tjo_attr_int(im, "noop_with_empty_axes", 0, &noop)) TJO_FAIL();
    const int64_t *attr;
    int na;
    if (!tjo_attr_ints(im, "axes", &attr, &na)) TJO_FAIL();
    if (attr) {
        if (na > TJ_MAX_DIMS) return tjo_node_error(im, TJ_ERR_PARSE, "%d axes", na);
        memcpy(axes, attr, sizeof *attr * (size_t)na);
        n = na;
    } else if (tjo_has_input(im, 1) && !tjo_const_ints(im, 1, "axes", axes, &n, TJ_MAX_DIMS)) {
        TJO_FAIL();
    }
    bool seen[TJ_MAX_DIMS] = {0};
    for (int k = 0; k < n; k++) {
        int a;
        if (!tjo_axis(im, axes[k], r, "axes entry", &a)) TJO_FAIL();
        if (seen[a]) return tjo_node_error(im, TJ_ERR_PARSE, "axis %d is repeated", a);
        seen[a] = true;
        axes[k] = a;
    }
    if (n == 0 && noop) {
        out[0] = tjo_unary(im, TJ_OP_clone, x);
        return out[0] ? TJ_OK : tj_last_status();
    }
    int op = -1;
    for (size_t k = 0; k < sizeof reductions / sizeof reductions[0]; k++)
        if (!strcmp(reductions[k].onnx, t)) op = reductions[k].op;
    if (x->type.dtype == TJ_BOOL) return tjo_unsupported(im, "bool input");
    tjo_val *src = x;
    if (!strcmp(t, "ReduceSumSquare")) src = tjo_binary(im, TJ_OP_mul, x, x);
    tj_attr a[3];
    int k = 0;
    if (op == TJ_OP_linalg_vector_norm) a[k++].f = t[7] == '1' ? 1.0 : 2.0;
    a[k++].ints.data = axes, a[k - 1].ints.n = n;
    a[k++].b = keep != 0;
    tjo_val *in[1] = {src};
    tjo_val *y = src ? tjo_emit1(im, op, in, 1, a) : NULL;
    if (!strcmp(t, "ReduceLogSum")) y = tjo_unary(im, TJ_OP_log, y);
    if (!y) TJO_FAIL();
    if (y->type.dtype != x->type.dtype)
        return tjo_unsupported(im, "tjit computes %s where ONNX gives %s", tj_dtype_name((tj_dtype)y->type.dtype),
                               tj_dtype_name((tj_dtype)x->type.dtype));
    out[0] = y;
    return TJ_OK;
}

static tj_status import_arg(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    if (im->n_in != 1 || !im->in[0]) return tjo_node_error(im, TJ_ERR_PARSE, "expected one input");
    tjo_val *x = im->in[0];
    int64_t axis, keep, last;
    int ax;
    if (!tjo_attr_int(im, "axis", 0, &axis) || !tjo_attr_int(im, "keepdims", 1, &keep) ||
        !tjo_attr_int(im, "select_last_index", 0, &last) || !tjo_axis(im, axis, x->type.ndim, "axis", &ax))
        TJO_FAIL();
    if (last) return tjo_unsupported(im, "attribute 'select_last_index' 1: tjit's ties give the first index");
    if (x->type.dtype == TJ_BOOL) return tjo_unsupported(im, "bool input");
    int64_t dim = ax;
    tj_attr a[2] = {{.ints = {&dim, 1}}, {.b = keep != 0}};
    tjo_val *in[1] = {x};
    out[0] = tjo_emit1(im, im->node->op_type[3] == 'M' && im->node->op_type[4] == 'a' ? TJ_OP_argmax : TJ_OP_argmin,
                       in, 1, a);
    return out[0] ? TJ_OK : tj_last_status();
}

const tjo_import_rule tjo_rules_reduce[] = {
    {"ReduceSum", "keepdims|noop_with_empty_axes|axes", import_reduce},
    {"ReduceMean", "keepdims|axes", import_reduce},
    {"ReduceMax", "keepdims|axes", import_reduce},
    {"ReduceMin", "keepdims|axes", import_reduce},
    {"ReduceProd", "keepdims|axes", import_reduce},
    {"ReduceL1", "keepdims|axes", import_reduce},
    {"ReduceL2", "keepdims|axes", import_reduce},
    {"ReduceLogSumExp", "keepdims|axes", import_reduce},
    {"ReduceSumSquare", "keepdims|axes", import_reduce},
    {"ReduceLogSum", "keepdims|axes", import_reduce},
    {"ArgMax", "axis|keepdims|select_last_index", import_arg},
    {"ArgMin", "axis|keepdims|select_last_index", import_arg},
    {NULL, NULL, NULL},
};
