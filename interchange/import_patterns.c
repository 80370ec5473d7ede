/* import_patterns.c — high-level ops recovered from the forms ONNX writes
 * them in, after a model is imported: a linear layer on an input of more
 * than two dims is MatMul(x, Transpose(W)) then Add(bias) in ONNX (Gemm
 * takes 2-D inputs only; tjit's export and PyTorch's write it so), and
 * becomes aten::linear(x, W, bias) again when W and the bias are graph
 * inputs (parameters); and exact gelu, which ONNX before opset 20 writes
 * with Erf, becomes aten::gelu. Only when the intermediate values have no
 * other use. */
#include <stdio.h>
#include <string.h>

#include "passes/grad.h"
#include "tjo.h"

static tj_node *single_user_def(tj_value *v) {
    tj_node *n = tj_value_node(v);
    if (tj_value_num_uses(v) != 1 || tj_node_kind_of(n) != TJ_NODE_OP) return NULL;
    return n;
}

static bool is_op(const tj_node *n, int id) { return n && tj_op_id(tj_node_op(n)) == id; }

static bool is_graph_input(const tj_graph *g, const tj_value *v) {
    return tj_value_node(v) == tj_block_param(tj_graph_block((tj_graph *)g));
}

/* add(matmul(x, transpose(W)), b) -> linear(x, W, b); n is the add. */
static tj_status try_linear(tj_graph *g, tj_node *add) {
    if (tj_node_attr(add, 0)->f != 1.0) return TJ_OK; /* alpha */
    for (int side = 0; side < 2; side++) {
        tj_value *mm_out = tj_node_input(add, side), *bias = tj_node_input(add, 1 - side);
        tj_node *mm = single_user_def(mm_out);
        if (!is_op(mm, TJ_OP_matmul)) continue;
        tj_node *tr = single_user_def(tj_node_input(mm, 1));
        if (!is_op(tr, TJ_OP_t) && !is_op(tr, TJ_OP_transpose)) continue;
        tj_value *w = tj_node_input(tr, 0), *x = tj_node_input(mm, 0);
        const tj_type *wt = tj_value_type(w), *bt = tj_value_type(bias), *xt = tj_value_type(x);
        if (wt->ndim != 2 || bt->ndim != 1 || xt->ndim < 2 || bt->sizes[0] != wt->sizes[0] ||
            !is_graph_input(g, w) || !is_graph_input(g, bias) || wt->dtype != xt->dtype ||
            bt->dtype != xt->dtype)
            continue;
        tj_value *ins[3] = {x, w, bias};
        const tj_type *types[3] = {xt, wt, bt};
        tj_type out;
        int made = 0;
        if (tjg_infer_types(tjc_op(TJ_OP_linear), types, 3, NULL, &out, 1, &made) != TJ_OK) {
            tj_clear_error(); /* not a linear layer after all: keep the nodes */
            continue;
        }
        tj_node *lin = tj_node_create_op(g, tjc_op(TJ_OP_linear), ins, 3, NULL, 0, 1);
        tj_value *res = tj_node_output(add, 0);
        const char *name = tj_value_name(res);
        char keep[256] = "";
        if (name) snprintf(keep, sizeof keep, "%s", name);
        if (name && tj_value_set_name(res, NULL) != TJ_OK) return tj_last_status(); /* the name moves */
        if (!lin || tj_node_insert_before(lin, add) != TJ_OK ||
            tj_value_set_type(tj_node_output(lin, 0), &out) != TJ_OK ||
            tj_value_replace_uses(res, tj_node_output(lin, 0)) != TJ_OK || tj_node_destroy(add) != TJ_OK ||
            tj_node_destroy(mm) != TJ_OK || tj_node_destroy(tr) != TJ_OK)
            return tj_last_status();
        if (keep[0] && tj_value_set_name(tj_node_output(lin, 0), keep) != TJ_OK) return tj_last_status();
        return TJ_OK;
    }
    return TJ_OK;
}

/* Whether v is a 0-dim constant equal to c in its dtype. */
static bool is_const(const tj_value *v, double c) {
    tj_node *n = tj_value_node(v);
    if (tj_node_kind_of(n) != TJ_NODE_CONSTANT || !tj_node_tensor(n) || tj_ndim(tj_node_tensor(n)) != 0)
        return false;
    const tj_tensor *t = tj_node_tensor(n);
    double v0 = tj_get(t, NULL);
    return tj_tensor_dtype(t) == TJ_F32 ? (float)v0 == (float)c : v0 == c;
}

/* The input of binary node n that is not the constant c, or NULL. */
static tj_value *other_than(const tj_node *n, double c) {
    if (is_const(tj_node_input(n, 1), c)) return tj_node_input(n, 0);
    if (is_const(tj_node_input(n, 0), c)) return tj_node_input(n, 1);
    return NULL;
}

/* mul(mul(x, 0.5), add(erf(mul(x, 1/sqrt 2)), 1)) -> gelu(x): exact gelu as
 * tjit writes it (and PyTorch's form with a Div by sqrt 2 is not matched). */
static tj_status try_gelu(tj_graph *g, tj_node *outer) {
    for (int side = 0; side < 2; side++) {
        tj_node *half = single_user_def(tj_node_input(outer, side));
        tj_node *plus = single_user_def(tj_node_input(outer, 1 - side));
        if (!is_op(half, TJ_OP_mul) || !is_op(plus, TJ_OP_add) || tj_node_attr(plus, 0)->f != 1.0) continue;
        tj_value *x = other_than(half, 0.5), *e = other_than(plus, 1.0);
        tj_node *erf = e ? single_user_def(e) : NULL;
        tj_node *scaled = is_op(erf, TJ_OP_erf) ? single_user_def(tj_node_input(erf, 0)) : NULL;
        if (!x || !is_op(scaled, TJ_OP_mul) || other_than(scaled, 0.7071067811865476) != x) continue;
        const tj_type *xt = tj_value_type(x);
        if (xt->dtype != TJ_F32 && xt->dtype != TJ_F64) continue;
        tj_attr a = {.s = "none"};
        tj_node *gelu = tj_node_create_op(g, tjc_op(TJ_OP_gelu), &x, 1, &a, 1, 1);
        tj_value *res = tj_node_output(outer, 0);
        const char *name = tj_value_name(res);
        char keep[256] = "";
        if (name) snprintf(keep, sizeof keep, "%s", name);
        if (name && tj_value_set_name(res, NULL) != TJ_OK) return tj_last_status();
        tj_type t = *tj_value_type(res);
        if (!gelu || tj_node_insert_before(gelu, outer) != TJ_OK ||
            tj_value_set_type(tj_node_output(gelu, 0), &t) != TJ_OK ||
            tj_value_replace_uses(res, tj_node_output(gelu, 0)) != TJ_OK || tj_node_destroy(outer) != TJ_OK ||
            tj_node_destroy(half) != TJ_OK || tj_node_destroy(plus) != TJ_OK || tj_node_destroy(erf) != TJ_OK ||
            tj_node_destroy(scaled) != TJ_OK)
            return tj_last_status();
        if (keep[0] && tj_value_set_name(tj_node_output(gelu, 0), keep) != TJ_OK) return tj_last_status();
        return TJ_OK;
    }
    return TJ_OK;
}

tj_status tjo_recover_patterns(tj_graph *g) {
    tj_node *next;
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = next) {
        next = tj_node_next(n);
        tj_status st = is_op(n, TJ_OP_add) ? try_linear(g, n) : is_op(n, TJ_OP_mul) ? try_gelu(g, n) : TJ_OK;
        if (st) return st;
    }
    return TJ_OK;
}
