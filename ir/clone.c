/* clone.c — copies: the public value map, node copies into any graph, whole
 * graph clones (ids kept, so even non-canonical prints match) and inlining a
 * graph's nodes before a node of another. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ir_internal.h"

struct tj_value_map {
    tjir_map m;
};

tj_value_map *tj_value_map_new(void) {
    tj_value_map *m = tjc_malloc(sizeof *m);
    if (!m) {
        tjc_error(TJ_ERR_MEMORY, "tj_value_map_new: out of memory");
        return NULL;
    }
    tjir_map_init(&m->m, false);
    return m;
}

void tj_value_map_free(tj_value_map *m) {
    if (!m) return;
    tjir_map_clear(&m->m);
    tjc_free(m);
}

tj_status tj_value_map_set(tj_value_map *m, const tj_value *from, tj_value *to) {
    if (!m || !from || !to) return tjc_error(TJ_ERR_ARG, "tj_value_map_set: NULL argument");
    return tjir_map_put(&m->m, from, to) ? TJ_OK : TJ_ERR_MEMORY;
}

tj_value *tj_value_map_get(const tj_value_map *m, const tj_value *from) {
    if (!m || !from)
        return tjc_error(TJ_ERR_ARG, "tj_value_map_get: the %s is NULL", m ? "value" : "map"), NULL;
    return tjir_map_get(&m->m, from); /* NULL when absent: not an error */
}

/* ---- nodes ------------------------------------------------------------------------- */

/* Copies n's kind and attributes into the fresh node c (subgraphs deep). */
static tj_status copy_attrs(tj_node *c, const tj_node *n) {
    tjir_set_op(c, n->op);
    c->line = n->line;
    c->n_attrs = n->n_attrs;
    if (!n->n_attrs) return TJ_OK;
    tjir_arena *a = &c->graph->arena;
    c->attrs = tjir_alloc(a, sizeof(tj_attr) * (size_t)n->n_attrs);
    c->attr_kinds = tjir_alloc(a, sizeof(tj_attr_kind) * (size_t)n->n_attrs);
    c->attr_names = tjir_alloc(a, sizeof(char *) * (size_t)n->n_attrs);
    if (!c->attrs || !c->attr_kinds || !c->attr_names) return TJ_ERR_MEMORY;
    for (int i = 0; i < n->n_attrs; i++) {
        c->attr_names[i] = n->attr_names[i]; /* static strings of the schema or prim table */
        if (n->attr_kinds[i] >= TJ_NUM_ATTR_KINDS) { /* unset: keep it so */
            c->attr_kinds[i] = n->attr_kinds[i];
            continue;
        }
        tj_status st = tjir_store_attr(c, i, n->attr_kinds[i], &n->attrs[i]);
        if (st) return st;
        if (n->attr_kinds[i] == TJ_ATTR_NONE || n->attr_kinds[i] == TJ_ATTR_GENERATOR)
            c->attrs[i] = n->attrs[i]; /* keeps the generator pointer */
    }
    if (n->tensor) c->tensor = tj_retain(n->tensor);
    if (n->subgraph) {
        c->subgraph = tj_graph_clone(n->subgraph, NULL);
        if (!c->subgraph) return TJ_ERR_MEMORY;
        c->subgraph->owner = c;
    }
    return TJ_OK;
}

/* Where clone_node finds an input's copy and records an output's. A whole
 * graph's clone (no map of the caller's) looks values up by id, as the
 * verifier does: at 200,000 nodes a hash map's probes missed the caches at
 * every input. A value whose id is out of range or taken goes to the map,
 * so the answer stays exact. Its copies' inputs are the clone's own values,
 * so they are added without tj_node_add_input's checks, which read each
 * input's defining node. */
typedef struct clone_ctx {
    tj_value_map *map;
    const tj_value **src_by_id; /* NULL: the map alone */
    tj_value **dst_by_id;
    int n_ids;
    bool trusted;
    const tj_type *src_type, *dst_type; /* the last output type copied, and its copy */
} clone_ctx;

static tj_value *ctx_get(const clone_ctx *x, const tj_value *from) {
    if (x->src_by_id && from->id >= 0 && from->id < x->n_ids && x->src_by_id[from->id] == from)
        return x->dst_by_id[from->id];
    return tj_value_map_get(x->map, from);
}

static tj_status ctx_set(clone_ctx *x, const tj_value *from, tj_value *to) {
    if (x->src_by_id && from->id >= 0 && from->id < x->n_ids && !x->src_by_id[from->id]) {
        x->src_by_id[from->id] = from;
        x->dst_by_id[from->id] = to;
        return TJ_OK;
    }
    return tj_value_map_set(x->map, from, to);
}

/* tj_node_add_input without its checks: v is a live value of n's graph */
static tj_status append_trusted_input(tj_node *n, tj_value *v) {
    if (!tjir_reserve_inputs(n, n->n_inputs + 1) || !tjir_add_use(n->graph, v, n, n->n_inputs))
        return TJ_ERR_MEMORY;
    n->inputs[n->n_inputs++] = v;
    return TJ_OK;
}

static tj_node *clone_node(tj_graph *dst, const tj_node *n, clone_ctx *x, bool keep_ids) {
    tj_node *c = tjir_node_new(dst, n->kind, 0);
    if (!c) return NULL;
    tj_status st = copy_attrs(c, n);
    for (int i = 0; !st && i < n->n_inputs; i++) {
        tj_value *in = ctx_get(x, n->inputs[i]);
        if (!in) st = tjc_error(TJ_ERR_ARG, "tj_node_clone: input %d of %s has no counterpart in "
                                "the map", i, tj_node_name(n));
        else st = x->trusted ? append_trusted_input(c, in) : tj_node_add_input(c, in);
    }
    for (int i = 0; !st && i < n->n_outputs; i++) {
        const tj_value *o = n->outputs[i];
        /* the copy's interned type, when the last output had the same one */
        const tj_type *type = o->type == x->src_type && x->dst_type ? x->dst_type : o->type;
        tj_value *co = tj_node_add_output(c, type);
        if (!co) st = TJ_ERR_MEMORY;
        else {
            x->src_type = o->type;
            x->dst_type = co->type;
            if (keep_ids) co->id = o->id;
        }
        if (!st && o->name) st = tj_value_set_name(co, o->name);
        if (!st) st = ctx_set(x, o, co);
    }
    if (st) {
        for (int i = c->n_inputs - 1; i >= 0; i--) tjir_drop_use(c->inputs[i], c, i);
        c->n_inputs = 0;
        for (int i = 0; i < c->n_outputs; i++) {
            tj_value_set_name(c->outputs[i], NULL);
            c->outputs[i]->graph = NULL;
        }
        tjir_release_node(c);
        c->destroyed = true;
        return NULL;
    }
    return c;
}

tj_node *tj_node_clone(tj_graph *dst, const tj_node *n, tj_value_map *map) {
    if (!dst || !n || !map) {
        tjc_error(TJ_ERR_ARG, "tj_node_clone: NULL argument");
        return NULL;
    }
    if (n->kind == TJ_NODE_PARAM || n->kind == TJ_NODE_RETURN || n->destroyed) {
        tjc_error(TJ_ERR_ARG, "tj_node_clone: %s cannot be copied",
                  n->destroyed ? "a destroyed node" : tj_node_name(n));
        return NULL;
    }
    clone_ctx x = {.map = map};
    return clone_node(dst, n, &x, false);
}

/* ---- graphs ---------------------------------------------------------------------------- */

tj_graph *tj_graph_clone(const tj_graph *g, tj_value_map *map) {
    if (!g) {
        tjc_error(TJ_ERR_ARG, "tj_graph_clone: the graph is NULL");
        return NULL;
    }
    tj_value_map *local = map ? map : tj_value_map_new();
    tj_graph *c = local ? tj_graph_new() : NULL;
    tj_status st = c ? TJ_OK : TJ_ERR_MEMORY;
    clone_ctx x = {.map = local, .trusted = true};
    if (!map && !st && g->next_value_id > 0) {
        x.n_ids = g->next_value_id;
        x.src_by_id = tjc_calloc((size_t)x.n_ids, sizeof *x.src_by_id);
        x.dst_by_id = tjc_malloc(sizeof *x.dst_by_id * (size_t)x.n_ids);
        if (!x.src_by_id || !x.dst_by_id) st = tjc_error(TJ_ERR_MEMORY, "tj_graph_clone: out of memory");
    }
    const tj_block *b = &g->block;
    for (int i = 0; !st && i < b->param->n_outputs; i++) {
        const tj_value *in = b->param->outputs[i];
        tj_value *ci = tj_graph_add_input(c, in->type, in->name);
        if (!ci) st = TJ_ERR_MEMORY;
        else {
            ci->id = in->id;
            st = ctx_set(&x, in, ci);
        }
    }
    for (const tj_node *n = b->first; !st && n; n = n->next) {
        tj_node *cn = clone_node(c, n, &x, true);
        st = cn ? tj_block_append(&c->block, cn) : tj_last_status();
    }
    for (int i = 0; !st && i < b->ret->n_inputs; i++) {
        tj_value *out = ctx_get(&x, b->ret->inputs[i]);
        st = out ? tj_graph_add_output(c, out)
                 : tjc_error(TJ_ERR_ARG, "tj_graph_clone: output %d is not defined in the graph", i);
    }
    tjc_free(x.src_by_id);
    tjc_free(x.dst_by_id);
    if (local != map) tj_value_map_free(local);
    if (st) {
        tj_graph_free(c);
        return NULL;
    }
    c->next_value_id = g->next_value_id;
    return c;
}

tj_status tj_graph_insert_before(tj_node *pos, const tj_graph *src, tj_value *const *inputs,
                                 tj_value **outputs) {
    if (!pos || !src || (src->block.param->n_outputs && !inputs) ||
        (src->block.ret->n_inputs && !outputs))
        return tjc_error(TJ_ERR_ARG, "tj_graph_insert_before: NULL argument");
    if (!pos->block || pos->kind == TJ_NODE_PARAM)
        return tjc_error(TJ_ERR_ARG, "tj_graph_insert_before: the position is not in a block");
    tj_graph *dst = pos->graph;
    if (dst == src) return tjc_error(TJ_ERR_ARG, "tj_graph_insert_before: a graph into itself");
    tj_value_map *map = tj_value_map_new();
    if (!map) return TJ_ERR_MEMORY;
    const tj_block *b = &src->block;
    tj_status st = TJ_OK;
    for (int i = 0; !st && i < b->param->n_outputs; i++) {
        if (!inputs[i] || inputs[i]->node->graph != dst)
            st = tjc_error(TJ_ERR_ARG, "tj_graph_insert_before: input %d is not a value of the "
                           "destination graph", i);
        else st = tj_value_map_set(map, b->param->outputs[i], inputs[i]);
    }
    tj_node *first = NULL; /* the first copy, to undo from on failure */
    clone_ctx x = {.map = map};
    for (const tj_node *n = b->first; !st && n; n = n->next) {
        tj_node *c = clone_node(dst, n, &x, false);
        st = c ? tj_node_insert_before(c, pos) : tj_last_status();
        if (!st && !first) first = c;
    }
    for (int i = 0; !st && i < b->ret->n_inputs; i++) {
        outputs[i] = tj_value_map_get(map, b->ret->inputs[i]);
        if (!outputs[i]) st = tjc_error(TJ_ERR_ARG, "tj_graph_insert_before: output %d of the "
                                        "source is not defined in it", i);
    }
    tj_value_map_free(map);
    if (st && first) { /* copies use only earlier copies: destroy from the back */
        tj_node *stop = first->prev;
        for (tj_node *n = pos->kind == TJ_NODE_RETURN ? pos->block->last : pos->prev; n != stop;) {
            tj_node *prev = n->prev;
            tj_node_destroy(n);
            n = prev;
        }
    }
    return st;
}
