/* dot.c — the Graphviz form of a graph: ops as boxes, graph inputs and the
 * return as ellipses, values as edges labelled with their name and type, and
 * each fusion group as a cluster holding its subgraph's nodes. Edges cross
 * cluster borders: a subgraph input is drawn from the outer value that feeds
 * it, and a fusion group's output from the inner node that computes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ir_internal.h"

typedef struct dot {
    tjir_buf b;
    unsigned flags;
    const tj_graph **graphs; /* main first, then subgraphs breadth first (the printer's order) */
    int n_graphs, cap_graphs;
    tjir_map index;          /* graph -> index + 1 */
    bool undefined_used;
} dot;

static int graph_index(const dot *d, const tj_graph *g) {
    return (int)(intptr_t)tjir_map_get(&d->index, g) - 1;
}

static bool collect(dot *d, const tj_graph *main) {
    if (!tjir_grow_heap((void **)&d->graphs, &d->cap_graphs, 1, sizeof *d->graphs)) return false;
    d->graphs[d->n_graphs++] = main;
    if (!tjir_map_put(&d->index, main, (void *)1)) return false;
    for (int k = 0; k < d->n_graphs; k++)
        for (const tj_node *n = d->graphs[k]->block.first; n; n = n->next) {
            if (!n->subgraph || tjir_map_get(&d->index, n->subgraph)) continue;
            if (!tjir_grow_heap((void **)&d->graphs, &d->cap_graphs, d->n_graphs + 1,
                                sizeof *d->graphs) ||
                !tjir_map_put(&d->index, n->subgraph, (void *)(intptr_t)(d->n_graphs + 1)))
                return false;
            d->graphs[d->n_graphs++] = n->subgraph;
        }
    return true;
}

/* Text inside a double-quoted label. */
static void put_escaped(tjir_buf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') tjir_buf_putn(b, "\\", 1);
        if (*s == '\n') tjir_buf_put(b, "\\n");
        else tjir_buf_putn(b, s, 1);
    }
}

/* The dot id of whatever computes v, looking through fusion-group borders. */
static void put_source(dot *d, const tj_value *v) {
    const tj_node *n = v->node;
    int gi = graph_index(d, n->graph);
    if (gi < 0 || n->destroyed) {
        d->undefined_used = true;
        tjir_buf_put(&d->b, "undefined");
        return;
    }
    if (n->kind == TJ_NODE_PARAM) {
        const tj_node *owner = n->graph->owner;
        if (!owner) tjir_buf_printf(&d->b, "g%din%d", gi, v->offset);
        else if (v->offset < owner->n_inputs) put_source(d, owner->inputs[v->offset]);
        else {
            d->undefined_used = true;
            tjir_buf_put(&d->b, "undefined");
        }
        return;
    }
    if (n->subgraph) {
        const tj_block *sb = &n->subgraph->block;
        if (v->offset < sb->ret->n_inputs) put_source(d, sb->ret->inputs[v->offset]);
        else {
            d->undefined_used = true;
            tjir_buf_put(&d->b, "undefined");
        }
        return;
    }
    tjir_buf_printf(&d->b, "g%dn%d", gi, n->id);
}

static void put_edge(dot *d, const tj_value *v, const char *target) {
    tjir_buf_put(&d->b, "  ");
    put_source(d, v);
    tjir_buf_printf(&d->b, " -> %s [label=\"", target);
    tjir_buf b2 = {0};
    if (v->name) tjir_buf_printf(&b2, "%%%s", v->name);
    else tjir_buf_printf(&b2, "%%%d", v->id);
    if (!(d->flags & TJ_PRINT_NO_TYPES)) {
        tjir_buf_put(&b2, "\n");
        tjir_put_type(&b2, v->type, d->flags | TJ_PRINT_NO_STRIDES);
    }
    if (b2.failed) d->b.failed = true;
    else if (b2.data) put_escaped(&d->b, b2.data);
    tjc_free(b2.data);
    tjir_buf_put(&d->b, "\"];\n");
}

static void put_node_label(dot *d, const tj_node *n) {
    tjir_buf b2 = {0};
    tjir_buf_put(&b2, tj_node_name(n));
    for (int i = 0; i < n->n_attrs; i++) {
        if (n->attr_kinds[i] == TJ_ATTR_GRAPH) continue;
        tjir_buf_printf(&b2, "\n%s=", n->attr_names[i] ? n->attr_names[i] : "?");
        tjir_put_attr(&b2, n, i);
    }
    if (b2.failed) d->b.failed = true;
    else put_escaped(&d->b, b2.data);
    tjc_free(b2.data);
}

static void put_nodes(dot *d, const tj_graph *g, int depth) {
    int gi = graph_index(d, g);
    static const char spaces[] = "                                ";
    int width = depth < 15 ? 2 * depth + 2 : 32;
    const char *pad = spaces + (sizeof spaces - 1 - (size_t)width);
    for (const tj_node *n = g->block.first; n; n = n->next) {
        if (n->subgraph) {
            int k = graph_index(d, n->subgraph);
            tjir_buf_printf(&d->b, "%ssubgraph cluster_%d {\n%s  label=\"%s_%d\";\n%s  style=dashed;\n",
                            pad, k, pad, tj_node_name(n), k - 1, pad);
            put_nodes(d, n->subgraph, depth + 1);
            tjir_buf_printf(&d->b, "%s}\n", pad);
            continue;
        }
        tjir_buf_printf(&d->b, "%sg%dn%d [label=\"", pad, gi, n->id);
        put_node_label(d, n);
        tjir_buf_put(&d->b, n->kind == TJ_NODE_CONSTANT || n->kind == TJ_NODE_NONE
                                ? "\", style=rounded];\n" : "\"];\n");
    }
}

/* Edges into every drawn node of g and, through clusters, of its subgraphs. */
static void put_edges(dot *d, const tj_graph *g) {
    int gi = graph_index(d, g);
    char target[48];
    for (const tj_node *n = g->block.first; n; n = n->next) {
        if (n->subgraph) {
            put_edges(d, n->subgraph); /* its inputs arrive at the inner users */
            continue;
        }
        snprintf(target, sizeof target, "g%dn%d", gi, n->id);
        for (int i = 0; i < n->n_inputs; i++) put_edge(d, n->inputs[i], target);
    }
    if (g->owner) return; /* a subgraph's results are drawn where the fusion group is used */
    for (int i = 0; i < g->block.ret->n_inputs; i++) put_edge(d, g->block.ret->inputs[i], "g0out");
}

char *tj_graph_to_dot(const tj_graph *g, unsigned flags) {
    if (!g) {
        tjc_error(TJ_ERR_ARG, "tj_graph_to_dot: the graph is NULL");
        return NULL;
    }
    dot d = {.flags = flags};
    tjir_map_init(&d.index, false);
    if (!collect(&d, g)) d.b.failed = true;
    tjir_buf *b = &d.b;
    tjir_buf_put(b, "digraph tjit {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n"
                    "  edge [fontname=\"monospace\", fontsize=10];\n");
    const tj_block *blk = &g->block;
    for (int i = 0; i < blk->param->n_outputs; i++) {
        const tj_value *v = blk->param->outputs[i];
        tjir_buf_printf(b, "  g0in%d [shape=ellipse, label=\"", i);
        if (v->name) tjir_buf_printf(b, "%%%s", v->name);
        else tjir_buf_printf(b, "%%%d", v->id);
        tjir_buf_put(b, "\"];\n");
    }
    tjir_buf_put(b, "  g0out [shape=ellipse, label=\"return\"];\n");
    if (!b->failed) put_nodes(&d, g, 0);
    if (!b->failed) put_edges(&d, g);
    if (d.undefined_used) tjir_buf_put(b, "  undefined [shape=ellipse, color=red, label=\"?\"];\n");
    tjir_buf_put(b, "}\n");
    tjc_free(d.graphs);
    tjir_map_clear(&d.index);
    return tjir_buf_finish(b);
}
