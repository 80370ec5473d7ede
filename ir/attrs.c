/* attrs.c — node kinds and attributes: the prim:: kind table, attribute kinds
 * checked against op schemas, and the node constructors (op nodes, prim
 * nodes, constants, fusion groups). */
#include <stdio.h>
#include <string.h>

#include "ir_internal.h"

/* The prim kinds: one row each, in tj_node_kind order. Ops take their facts
 * from the op table instead. prim::Constant's value may be any constant kind;
 * the table lists TJ_ATTR_INT as a placeholder. */
static const tjir_prim prims[TJ_NUM_NODE_KINDS] = {
    [TJ_NODE_OP] = {"op", {NULL}, {0}, 0, false},
    [TJ_NODE_CONSTANT] = {"prim::Constant", {"value"}, {TJ_ATTR_INT}, 1, true},
    [TJ_NODE_NONE] = {"prim::None", {NULL}, {0}, 0, true},
    [TJ_NODE_FUSION_GROUP] = {"prim::FusionGroup", {"subgraph"}, {TJ_ATTR_GRAPH}, 1, true},
    [TJ_NODE_CONSTANT_CHUNK] = {"prim::ConstantChunk", {"chunks", "dim"},
                                {TJ_ATTR_INT, TJ_ATTR_INT}, 2, true},
    [TJ_NODE_LIST_CONSTRUCT] = {"prim::ListConstruct", {NULL}, {0}, 0, true},
    [TJ_NODE_LIST_UNPACK] = {"prim::ListUnpack", {NULL}, {0}, 0, true},
    [TJ_NODE_PARAM] = {"prim::Param", {NULL}, {0}, 0, false},
    [TJ_NODE_RETURN] = {"prim::Return", {NULL}, {0}, 0, false},
};

const tjir_prim *tjir_prim_info(tj_node_kind k) {
    return (unsigned)k < TJ_NUM_NODE_KINDS ? &prims[k] : NULL;
}

const char *tj_node_kind_name(tj_node_kind k) {
    if ((unsigned)k >= TJ_NUM_NODE_KINDS)
        return tjc_error(TJ_ERR_ARG, "tj_node_kind_name: invalid kind %d", (int)k), "invalid";
    return prims[k].name;
}

const char *tj_attr_kind_name(tj_attr_kind k) {
    static const char *const names[TJ_NUM_ATTR_KINDS] = {
        "int", "float", "bool", "str", "int[]", "float[]", "ScalarType",
        "None", "Generator", "Tensor", "Graph", "Scalar",
    };
    if ((unsigned)k >= TJ_NUM_ATTR_KINDS)
        return tjc_error(TJ_ERR_ARG, "tj_attr_kind_name: invalid kind %d", (int)k), "invalid";
    return names[k];
}

bool tjir_kind_is_constant_value(tj_attr_kind k) {
    return k == TJ_ATTR_INT || k == TJ_ATTR_FLOAT || k == TJ_ATTR_BOOL || k == TJ_ATTR_STR ||
           k == TJ_ATTR_INTS || k == TJ_ATTR_FLOATS || k == TJ_ATTR_TENSOR;
}

/* ---- attributes against schemas ---------------------------------------------------- */

tj_attr_kind tjir_attr_kind_for(const tj_arg *arg, const tj_attr *v) {
    switch (arg->type) {
    case TJ_ARG_INT: return TJ_ATTR_INT;
    case TJ_ARG_INTS: return TJ_ATTR_INTS;
    case TJ_ARG_FLOAT: return TJ_ATTR_FLOAT;
    case TJ_ARG_FLOAT_OPT: return tj_is_none(v->f) ? TJ_ATTR_NONE : TJ_ATTR_FLOAT;
    case TJ_ARG_FLOATS: return TJ_ATTR_FLOATS;
    case TJ_ARG_BOOL: return TJ_ATTR_BOOL;
    case TJ_ARG_STR: return TJ_ATTR_STR;
    case TJ_ARG_DTYPE: return TJ_ATTR_DTYPE;
    case TJ_ARG_GENERATOR: return v->gen ? TJ_ATTR_GENERATOR : TJ_ATTR_NONE;
    case TJ_ARG_SCALAR: return TJ_ATTR_SCALAR;
    case TJ_ARG_SCALAR_OPT: return tj_is_none(v->scalar.f) ? TJ_ATTR_NONE : TJ_ATTR_SCALAR;
    default: return TJ_NUM_ATTR_KINDS; /* tensors are inputs, not attributes */
    }
}

bool tjir_attr_fits(const tj_arg *arg, tj_attr_kind kind) {
    switch (arg->type) {
    case TJ_ARG_FLOAT_OPT: return kind == TJ_ATTR_FLOAT || kind == TJ_ATTR_NONE;
    case TJ_ARG_GENERATOR: return kind == TJ_ATTR_GENERATOR || kind == TJ_ATTR_NONE;
    case TJ_ARG_SCALAR_OPT: return kind == TJ_ATTR_SCALAR || kind == TJ_ATTR_NONE;
    default: return kind == tjir_attr_kind_for(arg, &(tj_attr){{0}});
    }
}

/* Why value v of kind does not suit attribute i of op, or TJ_OK. */
static tj_status check_op_attr(const tj_op_info *op, int i, tj_attr_kind kind, const tj_attr *v) {
    const tj_schema *s = tj_op_schema(op);
    const tj_arg *arg = &s->args[s->attr_pos[i]];
    if (!tjir_attr_fits(arg, kind))
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: expected %s, got %s", arg->name,
                         tj_op_name(op), tj_attr_kind_name(tjir_attr_kind_for(arg, &(tj_attr){{0}})),
                         tj_attr_kind_name(kind));
    if (kind == TJ_ATTR_FLOAT && arg->type == TJ_ARG_FLOAT_OPT && tj_is_none(v->f))
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: nan would read as None", arg->name,
                         tj_op_name(op));
    if (kind == TJ_ATTR_SCALAR && arg->type == TJ_ARG_SCALAR_OPT && tj_is_none(v->scalar.f))
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: nan would read as None", arg->name,
                         tj_op_name(op));
    if (kind == TJ_ATTR_STR && !v->s)
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: the string is NULL", arg->name,
                         tj_op_name(op));
    if (kind == TJ_ATTR_STR && arg->choices && tjc_choice_index(arg, v->s) < 0)
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: expected one of %s, got \"%s\"",
                         arg->name, tj_op_name(op), arg->choices, v->s);
    if (kind == TJ_ATTR_INTS && (v->ints.n < 0 || (v->ints.n && !v->ints.data)))
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: a bad list", arg->name, tj_op_name(op));
    if (kind == TJ_ATTR_INTS && arg->fixed_len && v->ints.n != arg->fixed_len && v->ints.n != 1)
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: expected %d values (or 1), got %d",
                         arg->name, tj_op_name(op), arg->fixed_len, v->ints.n);
    if (kind == TJ_ATTR_FLOATS && (v->floats.n < 0 || (v->floats.n && !v->floats.data)))
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: a bad list", arg->name, tj_op_name(op));
    if (kind == TJ_ATTR_DTYPE && (unsigned)v->dtype >= TJ_NUM_DTYPES)
        return tjc_error(TJ_ERR_ARG, "attribute '%s' of %s: invalid dtype %d", arg->name,
                         tj_op_name(op), (int)v->dtype);
    return TJ_OK;
}

tj_status tjir_check_op_attr(const tj_op_info *op, int i, tj_attr_kind kind, const tj_attr *v) {
    return check_op_attr(op, i, kind, v);
}

tj_status tjir_store_attr(tj_node *n, int i, tj_attr_kind kind, const tj_attr *v) {
    tjir_arena *a = &n->graph->arena;
    tj_attr copy = {{0}};
    switch (kind) {
    case TJ_ATTR_STR:
        if (!(copy.s = tjir_strdup(a, v->s))) return TJ_ERR_MEMORY;
        break;
    case TJ_ATTR_INTS: {
        int64_t *d = tjir_alloc(a, sizeof(int64_t) * (size_t)v->ints.n);
        if (!d) return TJ_ERR_MEMORY;
        if (v->ints.n) memcpy(d, v->ints.data, sizeof(int64_t) * (size_t)v->ints.n);
        copy.ints.data = d;
        copy.ints.n = v->ints.n;
        break;
    }
    case TJ_ATTR_FLOATS: {
        double *d = tjir_alloc(a, sizeof(double) * (size_t)v->floats.n);
        if (!d) return TJ_ERR_MEMORY;
        if (v->floats.n) memcpy(d, v->floats.data, sizeof(double) * (size_t)v->floats.n);
        copy.floats.data = d;
        copy.floats.n = v->floats.n;
        break;
    }
    case TJ_ATTR_NONE: {
        /* the representation tj_invoke expects: NaN for float?, NULL for Generator? */
        bool gen = false;
        if (n->kind == TJ_NODE_OP) {
            const tj_schema *s = tj_op_schema(n->op);
            gen = s->args[s->attr_pos[i]].type == TJ_ARG_GENERATOR;
        }
        if (gen) copy.gen = NULL;
        else copy.f = TJ_NONE;
        break;
    }
    case TJ_ATTR_TENSOR:
    case TJ_ATTR_GRAPH:
        break; /* held by n->tensor / n->subgraph */
    case TJ_ATTR_SCALAR: /* one representation per value, so CSE and printing agree */
        switch (tjc_scalar_kind(&v->scalar)) {
        case TJ_SCALAR_INT: copy.scalar = tj_scalar_int(v->scalar.i); break;
        case TJ_SCALAR_BOOL: copy.scalar = tj_scalar_bool(v->scalar.i != 0); break;
        default: copy.scalar = tj_scalar_float(v->scalar.f); break;
        }
        break;
    default:
        copy = *v;
    }
    n->attrs[i] = copy;
    n->attr_kinds[i] = kind;
    return TJ_OK;
}

tj_status tjir_init_attrs(tj_node *n, bool defaults) {
    tjir_arena *a = &n->graph->arena;
    int count;
    if (n->kind == TJ_NODE_OP) count = tj_op_schema(n->op)->n_attrs;
    else count = prims[n->kind].n_attrs;
    n->n_attrs = count;
    if (!count) return TJ_OK;
    n->attrs = tjir_alloc(a, sizeof(tj_attr) * (size_t)count);
    n->attr_kinds = tjir_alloc(a, sizeof(tj_attr_kind) * (size_t)count);
    n->attr_names = tjir_alloc(a, sizeof(char *) * (size_t)count);
    if (!n->attrs || !n->attr_kinds || !n->attr_names) return TJ_ERR_MEMORY;
    for (int i = 0; i < count; i++) {
        n->attr_kinds[i] = TJ_NUM_ATTR_KINDS; /* unset */
        if (n->kind != TJ_NODE_OP) {
            n->attr_names[i] = prims[n->kind].attrs[i];
            if (defaults) n->attr_kinds[i] = prims[n->kind].kinds[i];
            continue;
        }
        const tj_schema *s = tj_op_schema(n->op);
        const tj_arg *arg = &s->args[s->attr_pos[i]];
        n->attr_names[i] = arg->name;
        if (!defaults) continue;
        if (!arg->has_default)
            return tjc_error(TJ_ERR_ARG, "%s: attribute '%s' has no default; give the attributes",
                             tj_op_name(n->op), arg->name);
        tj_status st = tjir_store_attr(n, i, tjir_attr_kind_for(arg, &arg->def), &arg->def);
        if (st) return st;
    }
    return TJ_OK;
}

/* ---- constructors -------------------------------------------------------------------------- */

static tj_status add_inputs(tj_node *n, tj_value *const *inputs, int n_inputs) {
    if (n_inputs < 0 || (n_inputs > 0 && !inputs))
        return tjc_error(TJ_ERR_ARG, "%s: bad inputs", tj_node_name(n));
    if (n_inputs > 0 && !tjir_reserve_inputs(n, n_inputs)) return tj_last_status();
    for (int i = 0; i < n_inputs; i++) {
        tj_status st = tj_node_add_input(n, inputs[i]);
        if (st) return st;
    }
    return TJ_OK;
}

/* Undoes a half-made node: it never reached a block, so dropping its uses is enough. */
static tj_node *abandon(tj_node *n) {
    for (int i = n->n_inputs - 1; i >= 0; i--) tjir_drop_use(n->inputs[i], n, i);
    n->n_inputs = 0;
    for (int i = 0; i < n->n_outputs; i++) n->outputs[i]->graph = NULL;
    tjir_release_node(n);
    n->destroyed = true;
    return NULL;
}

tj_node *tj_node_create_op(tj_graph *g, const tj_op_info *op, tj_value *const *inputs,
                           int n_inputs, const tj_attr *attrs, int n_attrs, int n_outputs) {
    if (!g || !op) {
        tjc_error(TJ_ERR_ARG, "tj_node_create_op: %s is NULL", g ? "the op" : "the graph");
        return NULL;
    }
    const tj_schema *s = tj_op_schema(op);
    const char *name = tj_op_name(op);
    if (!s->has_tensor_list && n_inputs != s->n_tensor_args) {
        tjc_error(TJ_ERR_ARG, "%s takes %d inputs, got %d", name, s->n_tensor_args, n_inputs);
        return NULL;
    }
    if (attrs && n_attrs != s->n_attrs) {
        tjc_error(TJ_ERR_ARG, "%s takes %d attributes, got %d", name, s->n_attrs, n_attrs);
        return NULL;
    }
    if (n_outputs < 0) n_outputs = s->n_outputs;
    if (n_outputs < 0 || (s->n_outputs >= 0 && n_outputs != s->n_outputs)) {
        if (s->n_outputs < 0) tjc_error(TJ_ERR_ARG, "%s: give the number of outputs", name);
        else tjc_error(TJ_ERR_ARG, "%s has %d outputs, not %d", name, s->n_outputs, n_outputs);
        return NULL;
    }
    tj_node *n = tjir_node_new(g, TJ_NODE_OP, 0);
    if (!n) return NULL;
    tjir_set_op(n, op);
    if (tjir_init_attrs(n, attrs == NULL)) return abandon(n);
    for (int i = 0; attrs && i < n_attrs; i++) {
        const tj_arg *arg = &s->args[s->attr_pos[i]];
        tj_attr_kind kind = tjir_attr_kind_for(arg, &attrs[i]);
        if (check_op_attr(op, i, kind, &attrs[i]) || tjir_store_attr(n, i, kind, &attrs[i]))
            return abandon(n);
    }
    if (add_inputs(n, inputs, n_inputs)) return abandon(n);
    for (int i = 0; i < n_outputs; i++)
        if (!tj_node_add_output(n, NULL)) return abandon(n);
    return n;
}

tj_node *tj_node_create(tj_graph *g, tj_node_kind kind, tj_value *const *inputs, int n_inputs,
                        int n_outputs) {
    if (!g) {
        tjc_error(TJ_ERR_ARG, "tj_node_create: the graph is NULL");
        return NULL;
    }
    if ((unsigned)kind >= TJ_NUM_NODE_KINDS || kind == TJ_NODE_OP || kind == TJ_NODE_CONSTANT ||
        kind == TJ_NODE_PARAM || kind == TJ_NODE_RETURN) {
        tjc_error(TJ_ERR_ARG, "tj_node_create: kind %s has its own constructor",
                  tj_node_kind_name(kind));
        return NULL;
    }
    if (n_outputs < 0) {
        tjc_error(TJ_ERR_ARG, "tj_node_create: %d outputs", n_outputs);
        return NULL;
    }
    tj_node *n = tjir_node_new(g, kind, 0);
    if (!n) return NULL;
    if (tjir_init_attrs(n, true) || add_inputs(n, inputs, n_inputs)) return abandon(n);
    tj_type none = tj_type_scalar(TJ_TYPE_NONE);
    for (int i = 0; i < n_outputs; i++)
        if (!tj_node_add_output(n, kind == TJ_NODE_NONE ? &none : NULL)) return abandon(n);
    return n;
}

tj_type tjir_constant_type(tj_attr_kind kind, const tj_attr *v, const tj_tensor *t) {
    (void)v;
    switch (kind) {
    case TJ_ATTR_INT: return tj_type_scalar(TJ_TYPE_INT);
    case TJ_ATTR_FLOAT: return tj_type_scalar(TJ_TYPE_FLOAT);
    case TJ_ATTR_BOOL: return tj_type_scalar(TJ_TYPE_BOOL);
    case TJ_ATTR_STR: return tj_type_scalar(TJ_TYPE_STR);
    case TJ_ATTR_INTS: return tj_type_list(TJ_TYPE_INT);
    case TJ_ATTR_FLOATS: return tj_type_list(TJ_TYPE_FLOAT);
    case TJ_ATTR_TENSOR: return t ? tj_type_of_tensor(t) : tj_type_tensor();
    default: return tj_type_tensor();
    }
}

static tj_status check_plain_value(const char *fn, tj_attr_kind kind, const tj_attr *v) {
    if (!v) return tjc_error(TJ_ERR_ARG, "%s: the value is NULL", fn);
    if (!tjir_kind_is_constant_value(kind) || kind == TJ_ATTR_TENSOR)
        return tjc_error(TJ_ERR_ARG, "%s: a %s cannot be a constant here", fn,
                         tj_attr_kind_name(kind));
    if (kind == TJ_ATTR_STR && !v->s) return tjc_error(TJ_ERR_ARG, "%s: the string is NULL", fn);
    if ((kind == TJ_ATTR_INTS && (v->ints.n < 0 || (v->ints.n && !v->ints.data))) ||
        (kind == TJ_ATTR_FLOATS && (v->floats.n < 0 || (v->floats.n && !v->floats.data))))
        return tjc_error(TJ_ERR_ARG, "%s: a bad list", fn);
    return TJ_OK;
}

tj_node *tj_node_create_constant(tj_graph *g, tj_attr_kind kind, const tj_attr *value) {
    if (!g) {
        tjc_error(TJ_ERR_ARG, "tj_node_create_constant: the graph is NULL");
        return NULL;
    }
    if (check_plain_value("tj_node_create_constant", kind, value)) return NULL;
    tj_node *n = tjir_node_new(g, TJ_NODE_CONSTANT, 0);
    if (!n) return NULL;
    tj_type type = tjir_constant_type(kind, value, NULL);
    if (tjir_init_attrs(n, false) || tjir_store_attr(n, 0, kind, value) ||
        !tj_node_add_output(n, &type))
        return abandon(n);
    return n;
}

tj_node *tj_node_create_tensor_constant(tj_graph *g, tj_tensor *t) {
    if (!g || !t) {
        tjc_error(TJ_ERR_ARG, "tj_node_create_tensor_constant: %s is NULL",
                  g ? "the tensor" : "the graph");
        return NULL;
    }
    tj_node *n = tjir_node_new(g, TJ_NODE_CONSTANT, 0);
    if (!n) return NULL;
    tj_type type = tj_type_of_tensor(t);
    if (tjir_init_attrs(n, false) || tjir_store_attr(n, 0, TJ_ATTR_TENSOR, NULL) ||
        !tj_node_add_output(n, &type))
        return abandon(n);
    n->tensor = tj_retain(t);
    return n;
}

/* A subgraph may hang under one node only, and never under itself. */
static tj_status check_subgraph(const char *fn, tj_graph *g, tj_graph *sub) {
    if (!sub) return tjc_error(TJ_ERR_ARG, "%s: the subgraph is NULL", fn);
    if (sub->owner) return tjc_error(TJ_ERR_ARG, "%s: the subgraph already belongs to a node", fn);
    for (tj_graph *up = g; up; up = up->owner ? up->owner->graph : NULL)
        if (up == sub) return tjc_error(TJ_ERR_ARG, "%s: a graph cannot contain itself", fn);
    return TJ_OK;
}

tj_node *tj_node_create_fusion_group(tj_graph *g, tj_graph *subgraph, tj_value *const *inputs,
                                     int n_inputs) {
    if (!g) {
        tjc_error(TJ_ERR_ARG, "tj_node_create_fusion_group: the graph is NULL");
        return NULL;
    }
    if (check_subgraph("tj_node_create_fusion_group", g, subgraph)) return NULL;
    tj_node *n = tj_node_create(g, TJ_NODE_FUSION_GROUP, inputs, n_inputs, 0);
    if (!n) return NULL;
    for (int i = 0; i < tj_graph_num_outputs(subgraph); i++)
        if (!tj_node_add_output(n, tj_value_type(tj_graph_output(subgraph, i)))) return abandon(n);
    n->subgraph = subgraph;
    subgraph->owner = n;
    return n;
}

tj_status tj_node_set_subgraph(tj_node *n, tj_graph *subgraph) {
    if (!n) return tjc_error(TJ_ERR_ARG, "tj_node_set_subgraph: the node is NULL");
    int i = tj_node_attr_index(n, "subgraph");
    if (i < 0) return tjc_error(TJ_ERR_ARG, "tj_node_set_subgraph: %s holds no subgraph",
                                tj_node_name(n));
    tj_status st = check_subgraph("tj_node_set_subgraph", n->graph, subgraph);
    if (st) return st;
    if (n->subgraph) {
        n->subgraph->owner = NULL;
        tj_graph_free(n->subgraph);
    }
    n->subgraph = subgraph;
    subgraph->owner = n;
    n->attr_kinds[i] = TJ_ATTR_GRAPH;
    return TJ_OK;
}

/* ---- attribute access ------------------------------------------------------------------------ */

/* A NULL node: keeps an error already pending (it names the call that
 * returned the NULL), else names this one. */
#define NODE_GET(fn, expr, bad) \
    do {                           \
        if (!n) return tjc_last_or(TJ_ERR_ARG, fn ": the node is NULL"), bad; \
        return expr;               \
    } while (0)
int tj_node_num_attrs(const tj_node *n) { NODE_GET("tj_node_num_attrs", n->n_attrs, -1); }
const tj_attr *tj_node_attrs(const tj_node *n) { NODE_GET("tj_node_attrs", n->attrs, NULL); }
tj_tensor *tj_node_tensor(const tj_node *n) { NODE_GET("tj_node_tensor", n->tensor, NULL); }
tj_graph *tj_node_subgraph(const tj_node *n) { NODE_GET("tj_node_subgraph", n->subgraph, NULL); }

/* Whether n has attribute i; else sets an error naming fn. */
static bool has_attr(const char *fn, const tj_node *n, int i) {
    if (!n) return tjc_last_or(TJ_ERR_ARG, "%s: the node is NULL", fn), false;
    if (i >= 0 && i < n->n_attrs) return true;
    tjc_error(TJ_ERR_ARG, "%s: %s has no attribute %d (it has %d)", fn, tj_node_name(n), i,
              n->n_attrs);
    return false;
}

const char *tj_node_attr_name(const tj_node *n, int i) {
    return has_attr("tj_node_attr_name", n, i) ? n->attr_names[i] : NULL;
}
tj_attr_kind tj_node_attr_kind(const tj_node *n, int i) {
    return has_attr("tj_node_attr_kind", n, i) ? n->attr_kinds[i] : TJ_NUM_ATTR_KINDS;
}
const tj_attr *tj_node_attr(const tj_node *n, int i) {
    return has_attr("tj_node_attr", n, i) ? &n->attrs[i] : NULL;
}

int tj_node_attr_index(const tj_node *n, const char *name) {
    if (!n || !name)
        return tjc_last_or(TJ_ERR_ARG, "tj_node_attr_index: the %s is NULL", n ? "name" : "node"),
               -1;
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attr_names[i] && strcmp(n->attr_names[i], name) == 0) return i;
    return -1;
}

tj_status tj_node_set_attr(tj_node *n, const char *name, tj_attr_kind kind, const tj_attr *value) {
    if (!n || !name || !value) return tjc_error(TJ_ERR_ARG, "tj_node_set_attr: NULL argument");
    int i = tj_node_attr_index(n, name);
    if (i < 0)
        return tjc_error(TJ_ERR_ARG, "tj_node_set_attr: %s has no attribute '%s'",
                         tj_node_name(n), name);
    tj_status st;
    if (n->kind == TJ_NODE_OP) {
        st = check_op_attr(n->op, i, kind, value);
    } else if (n->kind == TJ_NODE_CONSTANT) {
        st = check_plain_value("tj_node_set_attr", kind, value);
    } else if (kind != prims[n->kind].kinds[i] || kind == TJ_ATTR_GRAPH) {
        st = tjc_error(TJ_ERR_ARG, "tj_node_set_attr: attribute '%s' of %s is a %s, not a %s",
                       name, tj_node_name(n), tj_attr_kind_name(prims[n->kind].kinds[i]),
                       tj_attr_kind_name(kind));
    } else {
        st = check_plain_value("tj_node_set_attr", kind, value);
    }
    if (st) return st;
    if (n->tensor && kind != TJ_ATTR_TENSOR) {
        tj_release(n->tensor);
        n->tensor = NULL;
    }
    return tjir_store_attr(n, i, kind, value);
}
