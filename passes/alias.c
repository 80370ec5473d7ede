/* alias.c — the conservative alias analysis of passes_internal.h: a
 * union-find over the values of a block, classes joined wherever two values
 * may share memory, with flags saying whether a class is written in place,
 * returned, or comes from outside the program. Peephole, CSE, constant
 * folding and canonicalize consult it before changing what aliases what. */
#include <stdint.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "passes/passes_internal.h"

static int find(tjp_alias *a, int x) {
    while (a->parent[x] != x) {
        a->parent[x] = a->parent[a->parent[x]];
        x = a->parent[x];
    }
    return x;
}

static void join(tjp_alias *a, int x, int y) {
    x = find(a, x);
    y = find(a, y);
    if (x == y) return;
    a->parent[y] = x;
    a->flags[x] |= a->flags[y];
}

static int number(tjp_alias *a, const tj_value *v) {
    return (int)(intptr_t)tjc_ptrmap_get(&a->index, v) - 1;
}

/* Numbers v as a class of its own; -1 when out of memory. */
static int add_value(tjp_alias *a, const tj_value *v, unsigned flags) {
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 64;
        int *parent = tjc_realloc(a->parent, sizeof *parent * (size_t)cap);
        if (parent) a->parent = parent;
        unsigned *fl = tjc_realloc(a->flags, sizeof *fl * (size_t)cap);
        if (fl) a->flags = fl;
        if (!parent || !fl) return -1;
        a->cap = cap;
    }
    int k = a->n;
    if (!tjc_ptrmap_put(&a->index, v, (void *)(intptr_t)(k + 1))) return -1;
    a->parent[k] = k;
    a->flags[k] = flags;
    a->n++;
    return k;
}

static void flag(tjp_alias *a, const tj_value *v, unsigned f) {
    int k = number(a, v);
    if (k >= 0) a->flags[find(a, k)] |= f;
}

static void join_values(tjp_alias *a, const tj_value *x, const tj_value *y) {
    int i = number(a, x), j = number(a, y);
    if (i >= 0 && j >= 0) join(a, i, j);
}

/* Whether n's outputs may share memory with all of its inputs (rather than
 * being fresh tensors). */
static bool outputs_alias_inputs(const tj_node *n) {
    switch (tj_node_kind_of(n)) {
    case TJ_NODE_OP: {
        const tj_schema *s = tj_op_schema(tj_node_op(n));
        return s->aliases_self || s->mutates_self;
    }
    case TJ_NODE_CONSTANT_CHUNK:
    case TJ_NODE_LIST_CONSTRUCT:
    case TJ_NODE_LIST_UNPACK:
    case TJ_NODE_FUSION_GROUP: return true; /* groups: conservatively, a result may pass an input through */
    default: return false;
    }
}

tj_status tjp_alias_build(tjp_alias *a, tj_graph *g) {
    *a = (tjp_alias){0};
    tjc_ptrmap_init(&a->index);
    tj_block *b = tj_graph_block(g);
    int first_input = -1;
    for (int i = 0; i < tj_block_num_inputs(b); i++) {
        int k = add_value(a, tj_block_input(b, i), TJP_ALIAS_EXTERNAL);
        if (k < 0) goto oom;
        if (first_input < 0) first_input = k;
        else join(a, first_input, k);
    }
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) {
        unsigned f = tj_node_kind_of(n) == TJ_NODE_CONSTANT ? TJP_ALIAS_EXTERNAL : 0;
        for (int i = 0; i < tj_node_num_outputs(n); i++)
            if (add_value(a, tj_node_output(n, i), f) < 0) goto oom;
        if (outputs_alias_inputs(n)) {
            /* ops alias their input 0 only; the prim kinds all of theirs */
            int ni = tj_node_kind_of(n) == TJ_NODE_OP ? 1 : tj_node_num_inputs(n);
            for (int i = 0; i < tj_node_num_outputs(n); i++)
                for (int j = 0; j < ni && j < tj_node_num_inputs(n); j++)
                    join_values(a, tj_node_output(n, i), tj_node_input(n, j));
        }
        for (int j = 0; j < tj_node_num_inputs(n); j++)
            if (tjp_writes_input(n, j)) flag(a, tj_node_input(n, j), TJP_ALIAS_MUTATED);
    }
    for (int i = 0; i < tj_block_num_outputs(b); i++)
        flag(a, tj_block_output(b, i), TJP_ALIAS_OUTPUT);
    return TJ_OK;
oom:
    tjp_alias_free(a);
    return tjc_error(TJ_ERR_MEMORY, "alias analysis: out of memory");
}

void tjp_alias_free(tjp_alias *a) {
    tjc_ptrmap_free(&a->index);
    tjc_free(a->parent);
    tjc_free(a->flags);
    *a = (tjp_alias){0};
}

int tjp_alias_class(tjp_alias *a, const tj_value *v) {
    int k = number(a, v);
    return k < 0 ? -1 : find(a, k);
}

void tjp_alias_replaced(tjp_alias *a, const tj_value *r, const tj_value *x) {
    join_values(a, x, r);
}

unsigned tjp_alias_flags(tjp_alias *a, const tj_value *v) {
    int k = tjp_alias_class(a, v);
    return k < 0 ? TJP_ALIAS_MUTATED | TJP_ALIAS_OUTPUT | TJP_ALIAS_EXTERNAL : a->flags[k];
}
