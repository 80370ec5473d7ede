/* verifier.c — checks the invariants of a graph (docs/ir.md, "Invariants"):
 *
 *   1. the node list is well linked and positions increase along it
 *   2. every value is defined once, by the node whose output it is
 *   3. every input is defined in the same graph, before its use
 *   4. use lists match inputs exactly (block outputs included)
 *   5. names are unique and match the graph's name table
 *   6. types are well formed
 *   7. op nodes agree with their schema: inputs, input types, outputs,
 *      attribute names, kinds and values
 *   8. prim nodes agree with their kind (Constant, None, ConstantChunk,
 *      ListConstruct, ListUnpack)
 *   9. a fusion group holds a subgraph it owns, with as many inputs and
 *      outputs as the node and matching kinds, and the subgraph verifies;
 *      its members have no effect (none writes memory or draws random
 *      numbers), so a group is pure and passes need not look inside it
 *  10. dim attributes (dim, dims, dim0, dim1, start_dim, end_dim of ops,
 *      prim::ConstantChunk's dim) are in range for the rank of the value they
 *      index, where that rank is known
 *
 * The first broken invariant is reported as TJ_ERR_INTERNAL with a message
 * that names the graph, the node and the invariant. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ir_internal.h"

typedef struct verifier {
    const char *where; /* "" or "in prim::FusionGroup_0 of node #3: " */
    const tj_graph *g;
    /* the values whose definition is passed: by id (ids are below the
     * graph's next_value_id), a direct lookup where a hash map spread over a
     * large graph's values missed the cache each time; a value whose id is out
     * of range or shared goes to the map instead, so the answer stays exact */
    const tj_value **defined_by_id;
    int n_ids;
    tjir_map defined;
    tjir_map names;    /* name -> value */
    long n_inputs;     /* inputs seen, to compare with uses counted */
    long n_uses;
} verifier;

static tj_status fail(verifier *v, const tj_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool is_defined(const verifier *v, const tj_value *x) {
    if (x->id >= 0 && x->id < v->n_ids && v->defined_by_id[x->id] == x) return true;
    return tjir_map_get(&v->defined, x) != NULL;
}

static bool mark_defined(verifier *v, const tj_value *x) {
    if (x->id >= 0 && x->id < v->n_ids && !v->defined_by_id[x->id]) {
        v->defined_by_id[x->id] = x;
        return true;
    }
    return tjir_map_put(&v->defined, x, (void *)1);
}

static tj_status fail(verifier *v, const tj_node *n, const char *fmt, ...) {
    char msg[512], node[160] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n && n->line)
        snprintf(node, sizeof node, "node #%d %s (line %d): ", n->id, tj_node_name(n), n->line);
    else if (n)
        snprintf(node, sizeof node, "node #%d %s: ", n->id, tj_node_name(n));
    return tjc_error(TJ_ERR_INTERNAL, "graph verify: %s%s%s", v->where, node, msg);
}

static const char *vname(const tj_value *x, char *buf, size_t n) {
    if (x->name) snprintf(buf, n, "%%%s", x->name);
    else snprintf(buf, n, "%%%d", x->id);
    return buf;
}

static tj_status oom(void) { return tjc_error(TJ_ERR_MEMORY, "graph verify: out of memory"); }

/* ---- structure ------------------------------------------------------------------------ */

static tj_status check_list(verifier *v) {
    const tj_block *b = &v->g->block;
    if (b->param->kind != TJ_NODE_PARAM || b->ret->kind != TJ_NODE_RETURN)
        return fail(v, NULL, "the block's sentinels are not prim::Param and prim::Return");
    if (b->param->n_inputs || b->ret->n_outputs)
        return fail(v, NULL, "prim::Param has inputs or prim::Return has outputs");
    int count = 0;
    const tj_node *prev = NULL;
    for (const tj_node *n = b->first; n; prev = n, n = n->next) {
        if (++count > b->n_nodes)
            return fail(v, n, "the block holds more nodes than it counts (%d)", b->n_nodes);
        if (n->prev != prev) return fail(v, n, "its prev link does not match the list");
        if (n->block != b || n->graph != v->g)
            return fail(v, n, "it is listed in a block it does not belong to");
        if (n->destroyed) return fail(v, n, "a destroyed node is still in the list");
        if ((unsigned)n->kind >= TJ_NUM_NODE_KINDS || n->kind == TJ_NODE_PARAM ||
            n->kind == TJ_NODE_RETURN)
            return fail(v, n, "kind %d cannot be in a node list", (int)n->kind);
        if (prev && prev->pos >= n->pos)
            return fail(v, n, "topological positions do not increase along the block");
    }
    if (prev != b->last) return fail(v, NULL, "the block's last node is not the list's end");
    if (count != b->n_nodes)
        return fail(v, NULL, "the block counts %d nodes but lists %d", b->n_nodes, count);
    return TJ_OK;
}

static int use_order(const void *a, const void *b) {
    const tj_use *x = a, *y = b;
    if (x->user != y->user) return (uintptr_t)x->user < (uintptr_t)y->user ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Sets *twice to a use that x's use list holds twice, else NULL. Short lists
 * are compared pair by pair, long ones sorted: n log n for a value read by n
 * nodes. */
static tj_status repeated_use(const tj_value *x, const tj_use **twice) {
    enum { PAIRWISE_MAX = 16 };
    *twice = NULL;
    if (x->n_uses <= PAIRWISE_MAX) {
        for (int a = 0; a < x->n_uses; a++)
            for (int c = a + 1; c < x->n_uses; c++)
                if (x->uses[a].user == x->uses[c].user && x->uses[a].index == x->uses[c].index) {
                    *twice = &x->uses[a];
                    return TJ_OK;
                }
        return TJ_OK;
    }
    tj_use *sorted = tjc_malloc(sizeof *sorted * (size_t)x->n_uses);
    if (!sorted) return TJ_ERR_MEMORY;
    memcpy(sorted, x->uses, sizeof *sorted * (size_t)x->n_uses);
    qsort(sorted, (size_t)x->n_uses, sizeof *sorted, use_order);
    for (int a = 1; a < x->n_uses && !*twice; a++)
        if (!use_order(&sorted[a - 1], &sorted[a]))
            for (int u = 0; u < x->n_uses; u++) /* point into x's own list, not the copy */
                if (!use_order(&x->uses[u], &sorted[a])) {
                    *twice = &x->uses[u];
                    break;
                }
    tjc_free(sorted);
    return TJ_OK;
}

/* A value n defines: owned, typed, named uniquely; its uses are real inputs. */
static tj_status check_definition(verifier *v, const tj_node *n, int i) {
    const tj_value *x = n->outputs[i];
    char buf[80];
    if (!x) return fail(v, n, "output %d is NULL", i);
    if (x->node != n || x->offset != i)
        return fail(v, n, "output %d (%s) names another definer or position", i,
                    vname(x, buf, sizeof buf));
    if (is_defined(v, x)) return fail(v, n, "%s is defined twice", vname(x, buf, sizeof buf));
    if (x->graph != v->g)
        return fail(v, n, "output %d (%s) is marked as %s", i, vname(x, buf, sizeof buf),
                    x->graph ? "another graph's" : "removed");
    if (tj_type_check(x->type) != TJ_OK)
        return fail(v, n, "the type of %s is malformed: %s", vname(x, buf, sizeof buf),
                    tj_last_error());
    if (x->name) {
        const tj_value *holder = tjir_map_get(&v->names, x->name);
        if (holder)
            return fail(v, n, "the name '%s' is held by two values (%%%d and %%%d)", x->name,
                        holder->id, x->id);
        if (tjir_map_get(&v->g->names, x->name) != x)
            return fail(v, n, "the graph's name table does not map '%s' to its value", x->name);
        if (!tjir_map_put(&v->names, x->name, (void *)x)) return oom();
    }
    for (int u = 0; u < x->n_uses; u++) {
        const tj_use *use = &x->uses[u];
        const tj_node *user = use->user;
        if (!user || user->destroyed || user->graph != v->g ||
            (user->kind != TJ_NODE_RETURN && !user->block) || use->index < 0 ||
            use->index >= user->n_inputs || user->inputs[use->index] != x)
            return fail(v, n, "the use list of %s holds a use that is not an input",
                        vname(x, buf, sizeof buf));
    }
    const tj_use *twice = NULL;
    if (repeated_use(x, &twice) != TJ_OK) return oom();
    if (twice)
        return fail(v, n, "the use list of %s holds input %d of node #%d twice",
                    vname(x, buf, sizeof buf), twice->index, twice->user->id);
    v->n_uses += x->n_uses;
    if (!mark_defined(v, x)) return oom();
    return TJ_OK;
}

static bool has_use(const tj_value *x, const tj_node *user, int index) {
    for (int u = 0; u < x->n_uses; u++)
        if (x->uses[u].user == user && x->uses[u].index == index) return true;
    return false;
}

/* The use lists count as many uses as the nodes have inputs, every use is an
 * input holding its value (check_definition), and no list repeats a use: so
 * each input has its use, without searching a use list per input (which made
 * a value read by n nodes cost n^2). When the counts differ, this finds the
 * input whose use is missing, to name it. */
static tj_status missing_use(verifier *v) {
    const tj_block *b = &v->g->block;
    char buf[80];
    for (const tj_node *n = b->first;; n = n->next) {
        const tj_node *m = n ? n : b->ret;
        for (int i = 0; i < m->n_inputs; i++)
            if (!has_use(m->inputs[i], m, i))
                return fail(v, m, "the use list of %s lacks this node's input %d",
                            vname(m->inputs[i], buf, sizeof buf), i);
        if (!n) break;
    }
    return fail(v, NULL, "use lists hold %ld uses for %ld inputs (a stale or repeated use)",
                v->n_uses, v->n_inputs);
}

static tj_status check_inputs(verifier *v, const tj_node *n) {
    char buf[80];
    for (int i = 0; i < n->n_inputs; i++) {
        const tj_value *x = n->inputs[i];
        if (!x) return fail(v, n, "input %d is NULL", i);
        /* the value's own graph field: no read of its definer while it is defined */
        if (x->graph && x->graph != v->g)
            return fail(v, n, "input %d (%s) comes from another graph", i, vname(x, buf, sizeof buf));
        if (!is_defined(v, x)) {
            const tj_node *d = x->node;
            if (d->block == &v->g->block && !d->destroyed)
                return fail(v, n, "input %d (%s) is used before its definition (topological "
                            "order)", i, vname(x, buf, sizeof buf));
            return fail(v, n, "input %d (%s) is not defined in the graph (its node was removed "
                        "or never inserted)", i, vname(x, buf, sizeof buf));
        }
    }
    v->n_inputs += n->n_inputs;
    return TJ_OK;
}

/* ---- kinds --------------------------------------------------------------------------------- */

static const char *type_kind_name(tj_type_kind k) {
    static const char *const names[TJ_NUM_TYPE_KINDS] = {"Tensor", "int", "float", "bool",
                                                         "str", "NoneType", "list"};
    return (unsigned)k < TJ_NUM_TYPE_KINDS ? names[k] : "invalid";
}

/* ---- dims ------------------------------------------------------------------------------ */

/* Attributes that index the dims of an op's input 0 (of its output, one rank
 * more, for the ops that insert a dim). */
static bool is_dim_attr(const char *name) {
    static const char *const names[] = {"dim", "dims", "dim0", "dim1", "start_dim", "end_dim"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(name, names[k])) return true;
    return false;
}

static tj_status check_dim(verifier *v, const tj_node *n, const char *attr, int64_t dim,
                           int rank) {
    int64_t lo = rank > 0 ? -rank : -1, hi = rank > 0 ? rank - 1 : 0;
    if (dim >= lo && dim <= hi) return TJ_OK;
    return fail(v, n, "attribute %s=%lld is out of range for a value of %d dims (expected a dim "
                "in [%lld, %lld])", attr, (long long)dim, rank, (long long)lo, (long long)hi);
}

/* The rank the dims of op node n refer to, or -1 when unknown. */
static int dims_rank(const tj_node *n) {
    const tj_schema *s = tj_op_schema(n->op);
    for (int i = 0; i < n->n_attrs; i++) /* the backward ops of views: the input's sizes */
        if (!strcmp(s->args[s->attr_pos[i]].name, "input_sizes") &&
            n->attr_kinds[i] == TJ_ATTR_INTS)
            return n->attrs[i].ints.n;
    if (n->n_inputs < 1 || n->inputs[0]->type->kind != TJ_TYPE_TENSOR) return -1;
    int rank = n->inputs[0]->type->ndim;
    if (rank == TJ_UNKNOWN) return -1;
    const char *name = tj_op_name(n->op);
    if (!strcmp(name, "aten::unsqueeze") || !strcmp(name, "aten::stack")) rank++;
    return rank;
}

static tj_status check_op_dims(verifier *v, const tj_node *n) {
    const tj_schema *s = tj_op_schema(n->op);
    int rank = -2;
    for (int i = 0; i < n->n_attrs; i++) {
        const char *attr = s->args[s->attr_pos[i]].name;
        if (!is_dim_attr(attr)) continue;
        if (rank == -2) rank = dims_rank(n);
        if (rank < 0) return TJ_OK;
        tj_status st = TJ_OK;
        if (n->attr_kinds[i] == TJ_ATTR_INT) {
            st = check_dim(v, n, attr, n->attrs[i].i, rank);
        } else if (n->attr_kinds[i] == TJ_ATTR_INTS) {
            for (int k = 0; !st && k < n->attrs[i].ints.n; k++)
                st = check_dim(v, n, attr, n->attrs[i].ints.data[k], rank);
        }
        if (st) return st;
    }
    return TJ_OK;
}

static tj_status check_op(verifier *v, const tj_node *n) {
    if (!n->op) return fail(v, n, "an op node without an op");
    const tj_schema *s = tj_op_schema(n->op);
    if (s->has_tensor_list) {
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i]->type->kind != TJ_TYPE_TENSOR)
                return fail(v, n, "input %d must be a tensor, got %s", i,
                            type_kind_name(n->inputs[i]->type->kind));
    } else {
        if (n->n_inputs != s->n_tensor_args)
            return fail(v, n, "expected %d inputs by its schema, got %d", s->n_tensor_args,
                        n->n_inputs);
        for (int i = 0; i < n->n_inputs; i++) {
            const tj_arg *arg = &s->args[s->tensor_pos[i]];
            tj_type_kind k = n->inputs[i]->type->kind;
            bool ok = k == TJ_TYPE_TENSOR || (arg->type == TJ_ARG_TENSOR_OPT && k == TJ_TYPE_NONE);
            if (!ok)
                return fail(v, n, "input %d (%s) must be a tensor%s, got %s", i, arg->name,
                            arg->type == TJ_ARG_TENSOR_OPT ? " or None" : "", type_kind_name(k));
        }
    }
    if (s->n_outputs >= 0 ? n->n_outputs != s->n_outputs : n->n_outputs < 1)
        return fail(v, n, "expected %s%d outputs by its schema, got %d",
                    s->n_outputs < 0 ? "at least " : "", s->n_outputs < 0 ? 1 : s->n_outputs,
                    n->n_outputs);
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]->type->kind != TJ_TYPE_TENSOR)
            return fail(v, n, "output %d must be a tensor, got %s", i,
                        type_kind_name(n->outputs[i]->type->kind));
    if (n->n_attrs != s->n_attrs)
        return fail(v, n, "expected %d attributes by its schema, got %d", s->n_attrs, n->n_attrs);
    for (int i = 0; i < n->n_attrs; i++) {
        const tj_arg *arg = &s->args[s->attr_pos[i]];
        if (!n->attr_names[i] || strcmp(n->attr_names[i], arg->name) != 0)
            return fail(v, n, "attribute %d is named '%s', the schema says '%s'", i,
                        n->attr_names[i] ? n->attr_names[i] : "(null)", arg->name);
        if (tjir_check_op_attr(n->op, i, n->attr_kinds[i], &n->attrs[i]) != TJ_OK)
            return fail(v, n, "%s", tj_last_error());
    }
    return check_op_dims(v, n);
}

static tj_status check_constant(verifier *v, const tj_node *n) {
    if (n->n_inputs != 0 || n->n_outputs != 1)
        return fail(v, n, "expected no inputs and 1 output, got %d and %d", n->n_inputs,
                    n->n_outputs);
    if (n->n_attrs != 1 || !tjir_kind_is_constant_value(n->attr_kinds[0]))
        return fail(v, n, "expected one value attribute of a constant kind");
    tj_attr_kind k = n->attr_kinds[0];
    if (k == TJ_ATTR_TENSOR && !n->tensor) return fail(v, n, "a tensor constant without a tensor");
    tj_type want = tjir_constant_type(k, &n->attrs[0], n->tensor);
    const tj_type *got = n->outputs[0]->type;
    if (got->kind != want.kind || (want.kind == TJ_TYPE_LIST && got->elem != want.elem))
        return fail(v, n, "its output is typed %s, its value is a %s", type_kind_name(got->kind),
                    tj_attr_kind_name(k));
    if (k != TJ_ATTR_TENSOR) return TJ_OK;
    if (got->dtype != TJ_UNKNOWN && got->dtype != want.dtype)
        return fail(v, n, "its output's dtype differs from its tensor's");
    if (got->ndim != TJ_UNKNOWN) {
        if (got->ndim != want.ndim) return fail(v, n, "its output's rank differs from its tensor's");
        for (int d = 0; d < got->ndim; d++)
            if (got->sizes[d] != TJ_UNKNOWN_DIM && got->sizes[d] != want.sizes[d])
                return fail(v, n, "its output's size at dim %d differs from its tensor's", d);
    }
    return TJ_OK;
}

static tj_status verify_graph(const tj_graph *g, const char *where);

/* Why op has an effect, or NULL. */
static const char *effect_of(const tj_op_info *op) {
    const tj_schema *s = tj_op_schema(op);
    if (s->mutates_self || s->mutates_inputs) return "writes its input in place";
    return tjc_op_is_random(op) ? "draws random numbers" : NULL;
}

static tj_status check_fusion(verifier *v, const tj_node *n) {
    const tj_graph *sub = n->subgraph;
    if (!sub) return fail(v, n, "a fusion group without a subgraph");
    if (n->n_attrs != 1 || n->attr_kinds[0] != TJ_ATTR_GRAPH)
        return fail(v, n, "its subgraph attribute is not a graph");
    if (sub->owner != n) return fail(v, n, "its subgraph names another owner");
    if (tj_graph_num_inputs(sub) != n->n_inputs)
        return fail(v, n, "it has %d inputs, its subgraph %d", n->n_inputs,
                    tj_graph_num_inputs(sub));
    if (tj_graph_num_outputs(sub) != n->n_outputs)
        return fail(v, n, "it has %d outputs, its subgraph %d", n->n_outputs,
                    tj_graph_num_outputs(sub));
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i]->type->kind != tj_graph_input(sub, i)->type->kind)
            return fail(v, n, "input %d is a %s, the subgraph's a %s", i,
                        type_kind_name(n->inputs[i]->type->kind),
                        type_kind_name(tj_graph_input(sub, i)->type->kind));
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]->type->kind != tj_graph_output(sub, i)->type->kind)
            return fail(v, n, "output %d is a %s, the subgraph's a %s", i,
                        type_kind_name(n->outputs[i]->type->kind),
                        type_kind_name(tj_graph_output(sub, i)->type->kind));
    for (const tj_node *m = sub->block.first; m; m = m->next) {
        const char *effect = m->kind == TJ_NODE_OP && m->op ? effect_of(m->op) : NULL;
        if (effect)
            return fail(v, n, "its member %s %s; a fusion group holds only ops without effects",
                        tj_op_name(m->op), effect);
    }
    char where[400];
    snprintf(where, sizeof where, "%sin the subgraph of node #%d: ", v->where, n->id);
    return verify_graph(sub, where);
}

static tj_status check_prim(verifier *v, const tj_node *n) {
    const tjir_prim *pr = tjir_prim_info(n->kind);
    if (n->kind != TJ_NODE_CONSTANT && n->kind != TJ_NODE_FUSION_GROUP) {
        if (n->n_attrs != pr->n_attrs) return fail(v, n, "expected %d attributes, got %d",
                                                   pr->n_attrs, n->n_attrs);
        for (int i = 0; i < n->n_attrs; i++)
            if (n->attr_kinds[i] != pr->kinds[i] || !n->attr_names[i] ||
                strcmp(n->attr_names[i], pr->attrs[i]) != 0)
                return fail(v, n, "attribute %d is not %s '%s'", i, tj_attr_kind_name(pr->kinds[i]),
                            pr->attrs[i]);
    }
    switch (n->kind) {
    case TJ_NODE_CONSTANT: return check_constant(v, n);
    case TJ_NODE_FUSION_GROUP: return check_fusion(v, n);
    case TJ_NODE_NONE:
        if (n->n_inputs || n->n_outputs != 1 || n->outputs[0]->type->kind != TJ_TYPE_NONE)
            return fail(v, n, "expected no inputs and one NoneType output");
        return TJ_OK;
    case TJ_NODE_CONSTANT_CHUNK:
        if (n->n_inputs != 1 || n->inputs[0]->type->kind != TJ_TYPE_TENSOR)
            return fail(v, n, "expected one tensor input");
        if (n->attrs[0].i < 1 || n->n_outputs != n->attrs[0].i)
            return fail(v, n, "chunks=%lld but %d outputs", (long long)n->attrs[0].i, n->n_outputs);
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i]->type->kind != TJ_TYPE_TENSOR)
                return fail(v, n, "output %d must be a tensor", i);
        if (n->inputs[0]->type->ndim == TJ_UNKNOWN) return TJ_OK;
        return check_dim(v, n, "dim", n->attrs[1].i, n->inputs[0]->type->ndim);
    case TJ_NODE_LIST_CONSTRUCT:
        if (n->n_outputs != 1 || n->outputs[0]->type->kind != TJ_TYPE_LIST)
            return fail(v, n, "expected one list output");
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i]->type->kind != n->outputs[0]->type->elem)
                return fail(v, n, "input %d is a %s in a list of %s", i,
                            type_kind_name(n->inputs[i]->type->kind),
                            type_kind_name(n->outputs[0]->type->elem));
        return TJ_OK;
    case TJ_NODE_LIST_UNPACK:
        if (n->n_inputs != 1 || n->inputs[0]->type->kind != TJ_TYPE_LIST)
            return fail(v, n, "expected one list input");
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i]->type->kind != n->inputs[0]->type->elem)
                return fail(v, n, "output %d is a %s from a list of %s", i,
                            type_kind_name(n->outputs[i]->type->kind),
                            type_kind_name(n->inputs[0]->type->elem));
        return TJ_OK;
    default: return fail(v, n, "unknown kind");
    }
}

/* ---- driver ---------------------------------------------------------------------------------- */

static tj_status run(verifier *v) {
    const tj_block *b = &v->g->block;
    tj_status st = check_list(v);
    for (int i = 0; !st && i < b->param->n_outputs; i++) st = check_definition(v, b->param, i);
    for (const tj_node *n = b->first; n && !st; n = n->next) {
        st = check_inputs(v, n);
        if (!st) st = n->kind == TJ_NODE_OP ? check_op(v, n) : check_prim(v, n);
        for (int i = 0; !st && i < n->n_outputs; i++) st = check_definition(v, n, i);
    }
    if (!st) st = check_inputs(v, b->ret);
    if (!st && v->n_uses != v->n_inputs) st = missing_use(v);
    return st;
}

static tj_status verify_graph(const tj_graph *g, const char *where) {
    verifier v = {.where = where, .g = g};
    tjir_map_init(&v.defined, false);
    tjir_map_init(&v.names, true);
    v.n_ids = g->next_value_id > 0 ? g->next_value_id : 0;
    v.defined_by_id = tjc_calloc((size_t)(v.n_ids ? v.n_ids : 1), sizeof *v.defined_by_id);
    tj_status st = v.defined_by_id ? run(&v) : oom();
    tjc_free(v.defined_by_id);
    tjir_map_clear(&v.defined);
    tjir_map_clear(&v.names);
    return st;
}

tj_status tj_graph_verify(const tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "tj_graph_verify: the graph is NULL");
    return verify_graph(g, "");
}
