/* anchor.c — the anchors of epilogue groups (fuser.h): which matrix products
 * and convolutions take their pointwise users into a group, and the fuser's
 * rules for groups that hold one (docs/passes.md, "Epilogue groups"). The
 * group runner that blocks them by rows is group_anchor.c. */

#include "fuse_rules.h"

static const tj_type *type_of(const tj_value *v) { return tj_value_type(v); }


/* On the CPU, or on no device the type names (IR text without one): the
 * group then runs op by op should its inputs live elsewhere. */
static bool on_cpu(const tj_type *t) { return t->device_type == TJ_CPU || t->device_type == TJ_UNKNOWN; }

static bool is_product(const tj_node *n) {
    if (tj_node_kind_of(n) != TJ_NODE_OP) return false;
    tj_op_kind k = tj_op_kind_of(tj_node_op(n));
    return k == TJ_KIND_MATMUL || k == TJ_KIND_CONV;
}

static tjf_anchor_kind kind_of(const tj_op_info *op) {
    switch (op->id) {
    case TJ_OP_linear: return TJF_ANCHOR_LINEAR;
    case TJ_OP_mm: return TJF_ANCHOR_MM;
    case TJ_OP_matmul: return TJF_ANCHOR_MATMUL;
    case TJ_OP_conv2d: return TJF_ANCHOR_CONV2D;
    default: return TJF_ANCHOR_NONE;
    }
}

/* The operands' dims an anchor of kind needs (-1: at least 2). */
static bool dims_fit(tjf_anchor_kind kind, const tj_node *n) {
    int nd[3] = {0};
    for (int i = 0; i < tj_node_num_inputs(n) && i < 3; i++) nd[i] = type_of(tj_node_input(n, i))->ndim;
    switch (kind) {
    case TJF_ANCHOR_LINEAR: return tj_node_num_inputs(n) == 3 && nd[0] >= 2 && nd[1] == 2 && nd[2] == 1;
    case TJF_ANCHOR_MM: return tj_node_num_inputs(n) == 2 && nd[0] == 2 && nd[1] == 2;
    case TJF_ANCHOR_MATMUL: return tj_node_num_inputs(n) == 2 && nd[0] >= 2 && nd[1] == 2;
    case TJF_ANCHOR_CONV2D: return tj_node_num_inputs(n) == 3 && nd[0] == 4 && nd[1] == 4 && nd[2] == 1;
    default: return false;
    }
}

tjf_verdict tjf_check_anchor_node(const tj_node *n) {
    if (!is_product(n)) return (tjf_verdict){.reason = TJF_OP_KIND};
    tjf_anchor_kind kind = kind_of(tj_node_op(n));
    if (kind == TJF_ANCHOR_NONE || tj_node_num_outputs(n) != 1)
        return (tjf_verdict){.reason = TJF_ANCHOR_FORM};
    const tj_value *y = tj_node_output(n, 0);
    for (int i = 0; i < tj_node_num_inputs(n); i++)
        if (!tjf_known_tensor(tj_node_input(n, i))) return (tjf_verdict){.reason = TJF_ANCHOR_FORM};
    if (!tjf_known_tensor(y)) return (tjf_verdict){.reason = TJF_ANCHOR_FORM};
    const tj_type *ty = type_of(y);
    if (!on_cpu(ty)) return (tjf_verdict){.reason = TJF_ANCHOR_DEVICE};
    if (ty->dtype != TJ_F32 && ty->dtype != TJ_F64) return (tjf_verdict){.reason = TJF_ANCHOR_FORM};
    for (int i = 0; i < tj_node_num_inputs(n); i++) {
        const tj_type *t = type_of(tj_node_input(n, i));
        if (!on_cpu(t)) return (tjf_verdict){.reason = TJF_ANCHOR_DEVICE};
        if (t->dtype != ty->dtype) return (tjf_verdict){.reason = TJF_ANCHOR_FORM};
    }
    if (!dims_fit(kind, n) || ty->ndim < 2) return (tjf_verdict){.reason = TJF_ANCHOR_FORM};
    return (tjf_verdict){.reason = TJF_FUSIBLE};
}

tjf_anchor_kind tjf_anchor_op(const tj_node *n) {
    if (!is_product(n) || tjf_check_anchor_node(n).reason != TJF_FUSIBLE) return TJF_ANCHOR_NONE;
    return kind_of(tj_node_op(n));
}

const tj_node *tjf_anchor_node(const tj_graph *subgraph) {
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)subgraph)); x; x = tj_node_next(x))
        if (tjf_anchor_op(x) != TJF_ANCHOR_NONE) return x;
    return NULL;
}

int tjf_anchor_row_dims(tjf_anchor_kind kind, int ndim) {
    return kind == TJF_ANCHOR_CONV2D ? 1 : ndim - 1;
}

/* Whether the anchor r inside group c reads a result of p. */
static bool feeds_anchor(const tj_node *p, const tj_node *c, const tj_node *r) {
    if (r == c) return true; /* c is the product itself: all of its operands come from outside */
    const tj_block *b = tj_graph_block(tj_node_subgraph(c));
    for (int i = 0; i < tj_node_num_inputs(r); i++) {
        const tj_value *v = tj_node_input(r, i);
        for (int j = 0; j < tj_block_num_inputs(b); j++)
            if (tj_block_input(b, j) == v && tj_value_node(tj_node_input(c, j)) == p) return true;
    }
    return false;
}

tjf_verdict tjf_check_anchors(const tj_node *a, const tj_node *b, const tj_node *anchor_a,
                              const tj_node *anchor_b, bool row) {
    if (!anchor_a && !anchor_b) return (tjf_verdict){.reason = TJF_FUSIBLE};
    if (anchor_a && anchor_b) return (tjf_verdict){.reason = TJF_TWO_ANCHORS};
    if (row) return (tjf_verdict){.reason = TJF_ANCHOR_ROW};
    const tj_node *r = anchor_a ? anchor_a : anchor_b;
    if (anchor_b && feeds_anchor(a, b, anchor_b)) return (tjf_verdict){.reason = TJF_ANCHOR_OPERAND};
    const tj_type *rt = type_of(tj_node_output(r, 0));
    const tj_node *members[2] = {a, b};
    for (int m = 0; m < 2; m++)
        for (int o = 0; o < tj_node_num_outputs(members[m]); o++)
            if (!tjf_same_sizes(type_of(tj_node_output(members[m], o)), rt))
                return (tjf_verdict){.reason = TJF_ANCHOR_SIZES, .value = tj_node_output(members[m], o)};
    return (tjf_verdict){.reason = TJF_FUSIBLE};
}
