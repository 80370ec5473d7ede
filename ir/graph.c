/* graph.c — graphs, blocks, nodes and values: creation, the node list with
 * its topological positions, use lists, names, and the editing API passes use
 * (insert, move, destroy, replace uses). Attributes live in attrs.c, copies in
 * clone.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ir_internal.h"

/* ---- creation ---------------------------------------------------------------- */

tj_node *tjir_node_new(tj_graph *g, tj_node_kind kind, int n_outputs) {
    tj_node *n = tjir_alloc(&g->node_arena, sizeof *n);
    if (!n) return NULL;
    n->inputs = n->inline_inputs;
    n->use_at = n->inline_use_at;
    n->cap_inputs = TJIR_INLINE_INPUTS;
    n->outputs = n->inline_outputs;
    n->cap_outputs = TJIR_INLINE_OUTPUTS;
    n->kind = kind;
    n->graph = g;
    n->id = g->next_node_id++;
    n->all_next = g->all_nodes;
    g->all_nodes = n;
    if (n_outputs > 0 &&
        !tjir_grow(&g->arena, (void **)&n->outputs, &n->cap_outputs, n_outputs, sizeof(tj_value *)))
        return NULL;
    for (int i = 0; i < n_outputs; i++)
        if (!tj_node_add_output(n, NULL)) return NULL;
    return n;
}

/* ---- types: one copy of each in a graph ------------------------------------ */

/* t with what its kind and rank leave unused zeroed, so that equal types are
 * equal bytes. */
static tj_type normalised(const tj_type *t) {
    tj_type n;
    memset(&n, 0, sizeof n);
    n.kind = t->kind;
    n.elem = t->elem;
    n.dtype = t->dtype;
    n.ndim = t->ndim;
    int rank = t->ndim < 0 ? 0 : t->ndim > TJ_MAX_DIMS ? TJ_MAX_DIMS : t->ndim;
    for (int d = 0; d < rank; d++) {
        n.sizes[d] = t->sizes[d];
        n.strides[d] = t->strides[d];
    }
    n.device_type = t->device_type;
    n.device_index = t->device_index;
    n.requires_grad = t->requires_grad;
    return n;
}

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* Over a normalised type: the unused sizes and strides are zero. */
static size_t type_slot(const tj_type *t, size_t cap) {
    uint64_t h = mix(mix(0, (uint64_t)t->kind << 32 | (uint32_t)t->elem), (uint64_t)t->dtype << 32 | (uint32_t)t->ndim);
    int rank = t->ndim < 0 ? 0 : t->ndim > TJ_MAX_DIMS ? TJ_MAX_DIMS : t->ndim;
    for (int d = 0; d < rank; d++) h = mix(mix(h, (uint64_t)t->sizes[d]), (uint64_t)t->strides[d]);
    h = mix(mix(h, (uint64_t)t->device_type << 32 | (uint32_t)t->device_index), (uint64_t)t->requires_grad);
    h *= 0xff51afd7ed558ccdull;
    return (size_t)(h ^ (h >> 32)) & (cap - 1);
}

static bool grow_types(tj_graph *g) {
    size_t cap = g->types_cap ? 2 * g->types_cap : 16;
    const tj_type **fresh = tjc_calloc(cap, sizeof *fresh);
    if (!fresh) return false;
    for (size_t i = 0; i < g->types_cap; i++) {
        if (!g->types[i]) continue;
        size_t s = type_slot(g->types[i], cap);
        while (fresh[s]) s = (s + 1) & (cap - 1);
        fresh[s] = g->types[i];
    }
    tjc_free(g->types);
    g->types = fresh;
    g->types_cap = cap;
    return true;
}

const tj_type *tjir_intern_type(tj_graph *g, const tj_type *t) {
    if (t == g->last_type) return t; /* a value's type given to the next one (clone, fuse) */
    tj_type n = normalised(t);
    if ((g->types_n + 1) * 2 > g->types_cap && !grow_types(g)) {
        tjc_error(TJ_ERR_MEMORY, "graph: out of memory");
        return NULL;
    }
    size_t s = type_slot(&n, g->types_cap);
    for (; g->types[s]; s = (s + 1) & (g->types_cap - 1))
        if (!memcmp(g->types[s], &n, sizeof n)) return g->last_type = g->types[s];
    tj_type *copy = tjir_alloc(&g->arena, sizeof *copy);
    if (!copy) return NULL;
    *copy = n;
    g->types[s] = copy;
    g->types_n++;
    return g->last_type = copy;
}

tj_value *tjir_value_new(tj_graph *g, tj_node *n, const tj_type *type) {
    tj_value *v = tjir_alloc(&g->value_arena, sizeof *v);
    if (!v) return NULL;
    if (type) {
        v->type = tjir_intern_type(g, type);
    } else {
        tj_type any = tj_type_tensor();
        v->type = tjir_intern_type(g, &any);
    }
    if (!v->type) return NULL;
    v->node = n;
    v->graph = g;
    v->id = g->next_value_id++;
    return v;
}

tj_graph *tj_graph_new(void) {
    tj_graph *g = tjc_calloc(1, sizeof *g);
    if (!g) {
        tjc_error(TJ_ERR_MEMORY, "tj_graph_new: out of memory");
        return NULL;
    }
    tjir_map_init(&g->names, true);
    tjir_map_init(&g->suffixes, true);
    g->block.graph = g;
    g->block.param = tjir_node_new(g, TJ_NODE_PARAM, 0);
    g->block.ret = tjir_node_new(g, TJ_NODE_RETURN, 0);
    if (!g->block.param || !g->block.ret) {
        tj_graph_free(g);
        return NULL;
    }
    g->block.param->block = g->block.ret->block = &g->block;
    g->block.param->pos = TJIR_POS_MIN - 1;
    g->block.ret->pos = TJIR_POS_MAX + 1;
    return g;
}

static bool writes_in_place(const tj_op_info *op) {
    return op && tj_op_schema(op)->mutates_inputs;
}

void tjir_set_op(tj_node *n, const tj_op_info *op) {
    if (writes_in_place(n->op)) n->graph->n_writers--;
    n->op = op;
    if (writes_in_place(op)) n->graph->n_writers++;
}

void tjir_release_node(tj_node *n) {
    if (writes_in_place(n->op)) n->graph->n_writers--; /* released once: destroyed or freed */
    if (n->tensor) tj_release(n->tensor);
    n->tensor = NULL;
    if (n->subgraph) {
        n->subgraph->owner = NULL;
        tj_graph_free(n->subgraph);
    }
    n->subgraph = NULL;
}

void tj_graph_free(tj_graph *g) {
    if (!g || g->owner) return;
    for (tj_node *n = g->all_nodes; n; n = n->all_next)
        if (!n->destroyed) tjir_release_node(n);
    tjir_meta_free(g);
    tjir_map_clear(&g->names);
    tjir_map_clear(&g->suffixes);
    tjir_arena_free(&g->arena);
    tjir_arena_free(&g->node_arena);
    tjir_arena_free(&g->value_arena);
    tjc_free(g->types);
    tjc_free(g);
}

/* A NULL handle given to an accessor: keeps an error already pending (it
 * names the call that returned the NULL), else names this one. */
#define NULL_ARG(fn, what) tjc_last_or(TJ_ERR_ARG, fn ": " what " is NULL")

bool tj_graph_writes_in_place(const tj_graph *g) {
    if (!g) return NULL_ARG("tj_graph_writes_in_place", "the graph"), false;
    return g->n_writers > 0;
}

tj_block *tj_graph_block(tj_graph *g) {
    return g ? &g->block : (NULL_ARG("tj_graph_block", "the graph"), NULL);
}
tj_node *tj_graph_owner(const tj_graph *g) {
    return g ? g->owner : (NULL_ARG("tj_graph_owner", "the graph"), NULL);
}

/* ---- use lists ------------------------------------------------------------------- */

bool tjir_add_use(tj_graph *g, tj_value *v, tj_node *user, int index) {
    if (!tjir_grow(&g->arena, (void **)&v->uses, &v->cap_uses, v->n_uses + 1, sizeof(tj_use)))
        return false;
    user->use_at[index] = v->n_uses;
    v->uses[v->n_uses++] = (tj_use){user, index};
    return true;
}

/* Where use (user, index) sits in v's list: use_at says, unless a list was
 * edited by hand (the verifier's tests break them on purpose). */
static int use_position(const tj_value *v, const tj_node *user, int index) {
    int p = user->use_at[index];
    if (p >= 0 && p < v->n_uses && v->uses[p].user == user && v->uses[p].index == index) return p;
    for (p = v->n_uses - 1; p >= 0; p--)
        if (v->uses[p].user == user && v->uses[p].index == index) return p;
    return -1;
}

/* O(1): the last use moves into the gap, so removing all n readers of a
 * value costs n, in any order (keeping the list's order cost n^2). */
void tjir_drop_use(tj_value *v, tj_node *user, int index) {
    int p = use_position(v, user, index);
    if (p < 0) return;
    tj_use last = v->uses[--v->n_uses];
    if (p == v->n_uses) return;
    v->uses[p] = last;
    last.user->use_at[last.index] = p;
}

/* A use's index shifts when an earlier input goes away. */
static void renumber_use(tj_value *v, tj_node *user, int from, int to) {
    int p = use_position(v, user, from);
    if (p < 0) return;
    v->uses[p].index = to;
    user->use_at[to] = p;
}

bool tjir_reserve_inputs(tj_node *n, int need) {
    int cap = n->cap_inputs, cap_at = n->cap_inputs;
    if (!tjir_grow(&n->graph->arena, (void **)&n->inputs, &cap, need, sizeof(tj_value *)) ||
        !tjir_grow(&n->graph->arena, (void **)&n->use_at, &cap_at, need, sizeof(int)))
        return false;
    n->cap_inputs = cap;
    return true;
}

static tj_status check_value(const char *fn, const tj_node *n, const tj_value *v) {
    if (!v) return tjc_error(TJ_ERR_ARG, "%s: the value is NULL", fn);
    if (!v->graph) return tjc_error(TJ_ERR_ARG, "%s: value %%%d was destroyed", fn, v->id);
    if (v->graph != n->graph)
        return tjc_error(TJ_ERR_ARG, "%s: value %%%d belongs to another graph", fn, v->id);
    return TJ_OK;
}

/* ---- blocks ------------------------------------------------------------------------ */

#define BLOCK_GET(fn, expr, bad) \
    do {                            \
        if (!b) return NULL_ARG(fn, "the block"), bad; \
        return expr;                \
    } while (0)
tj_graph *tj_block_graph(const tj_block *b) { BLOCK_GET("tj_block_graph", b->graph, NULL); }
int tj_block_num_inputs(const tj_block *b) {
    BLOCK_GET("tj_block_num_inputs", b->param->n_outputs, -1);
}
int tj_block_num_outputs(const tj_block *b) {
    BLOCK_GET("tj_block_num_outputs", b->ret->n_inputs, -1);
}
tj_node *tj_block_first(const tj_block *b) { BLOCK_GET("tj_block_first", b->first, NULL); }
tj_node *tj_block_last(const tj_block *b) { BLOCK_GET("tj_block_last", b->last, NULL); }
tj_node *tj_block_param(const tj_block *b) { BLOCK_GET("tj_block_param", b->param, NULL); }
tj_node *tj_block_return(const tj_block *b) { BLOCK_GET("tj_block_return", b->ret, NULL); }
int tj_block_num_nodes(const tj_block *b) { BLOCK_GET("tj_block_num_nodes", b->n_nodes, -1); }

/* Entry i of a list of n, or NULL with a message naming fn and the range. */
static tj_value *value_at(const char *fn, const char *what, tj_value *const *list, int n, int i) {
    if (i >= 0 && i < n) return list[i];
    tjc_error(TJ_ERR_ARG, "%s: %s %d is out of range (there %s %d)", fn, what, i,
              n == 1 ? "is" : "are", n);
    return NULL;
}

tj_value *tj_block_input(const tj_block *b, int i) {
    if (!b) return NULL_ARG("tj_block_input", "the block"), NULL;
    return value_at("tj_block_input", "input", b->param->outputs, b->param->n_outputs, i);
}

tj_value *tj_block_output(const tj_block *b, int i) {
    if (!b) return NULL_ARG("tj_block_output", "the block"), NULL;
    return value_at("tj_block_output", "output", b->ret->inputs, b->ret->n_inputs, i);
}

tj_value *tj_block_add_input(tj_block *b, const tj_type *type, const char *name) {
    if (!b) {
        NULL_ARG("tj_block_add_input", "the block");
        return NULL;
    }
    tj_value *v = tj_node_add_output(b->param, type);
    if (v && name && tj_value_set_name(v, name) != TJ_OK) return NULL;
    return v;
}

tj_status tj_block_remove_input(tj_block *b, int i) {
    if (!b) return NULL_ARG("tj_block_remove_input", "the block");
    return tj_node_remove_output(b->param, i);
}

tj_status tj_block_add_output(tj_block *b, tj_value *v) {
    if (!b) return NULL_ARG("tj_block_add_output", "the block");
    return tj_node_add_input(b->ret, v);
}

tj_status tj_block_set_output(tj_block *b, int i, tj_value *v) {
    if (!b) return NULL_ARG("tj_block_set_output", "the block");
    return tj_node_set_input(b->ret, i, v);
}

tj_status tj_block_remove_output(tj_block *b, int i) {
    if (!b) return NULL_ARG("tj_block_remove_output", "the block");
    return tj_node_remove_input(b->ret, i);
}

tj_status tj_block_remove_inputs(tj_block *b, const bool *remove) {
    if (!b) return NULL_ARG("tj_block_remove_inputs", "the block");
    if (!remove) return NULL_ARG("tj_block_remove_inputs", "remove");
    tj_node *p = b->param;
    for (int i = 0; i < p->n_outputs; i++)
        if (remove[i] && p->outputs[i]->n_uses)
            return tjc_error(TJ_ERR_ARG, "tj_block_remove_inputs: input %d still has %d uses", i,
                             p->outputs[i]->n_uses);
    int k = 0;
    for (int i = 0; i < p->n_outputs; i++) {
        tj_value *v = p->outputs[i];
        if (remove[i]) {
            tj_value_set_name(v, NULL);
            v->graph = NULL;
            continue;
        }
        v->offset = k;
        p->outputs[k++] = v;
    }
    p->n_outputs = k;
    return TJ_OK;
}

tj_status tj_block_remove_outputs(tj_block *b, const bool *remove) {
    if (!b) return NULL_ARG("tj_block_remove_outputs", "the block");
    if (!remove) return NULL_ARG("tj_block_remove_outputs", "remove");
    tj_node *r = b->ret;
    int k = 0;
    for (int i = 0; i < r->n_inputs; i++) {
        if (remove[i]) {
            tjir_drop_use(r->inputs[i], r, i);
            continue;
        }
        if (k != i) {
            renumber_use(r->inputs[i], r, i, k);
            r->inputs[k] = r->inputs[i];
        }
        k++;
    }
    r->n_inputs = k;
    return TJ_OK;
}

tj_status tj_block_append(tj_block *b, tj_node *n) {
    if (!b) return NULL_ARG("tj_block_append", "the block");
    return tj_node_insert_before(n, b->ret);
}

tj_value *tj_graph_add_input(tj_graph *g, const tj_type *type, const char *name) {
    return tj_block_add_input(tj_graph_block(g), type, name);
}
int tj_graph_num_inputs(const tj_graph *g) {
    return g ? tj_block_num_inputs(&g->block) : (NULL_ARG("tj_graph_num_inputs", "the graph"), -1);
}
tj_value *tj_graph_input(const tj_graph *g, int i) {
    if (!g) return NULL_ARG("tj_graph_input", "the graph"), NULL;
    return value_at("tj_graph_input", "input", g->block.param->outputs,
                    g->block.param->n_outputs, i);
}
tj_status tj_graph_add_output(tj_graph *g, tj_value *v) {
    return tj_block_add_output(tj_graph_block(g), v);
}
int tj_graph_num_outputs(const tj_graph *g) {
    return g ? tj_block_num_outputs(&g->block) : (NULL_ARG("tj_graph_num_outputs", "the graph"), -1);
}
tj_value *tj_graph_output(const tj_graph *g, int i) {
    if (!g) return NULL_ARG("tj_graph_output", "the graph"), NULL;
    return value_at("tj_graph_output", "output", g->block.ret->inputs, g->block.ret->n_inputs, i);
}

/* ---- positions ------------------------------------------------------------------------
 * Each node in a block has a position; positions increase along the list, so
 * "a before b" is one comparison. Appending adds TJIR_POS_STEP; an insertion
 * takes the midpoint of its neighbours. When they are adjacent, the nodes
 * around the new one are spaced out again: a window of 2, 4, 8, ... nodes
 * centred on it grows until the positions around the window leave every node
 * of it at least TJIR_POS_MIN_GAP, and only that window is renumbered (the
 * whole block only when it is crowded throughout). Repeated insertions at
 * one place, which a pass placing each new node before the same node makes,
 * then renumber a few nodes every ~log2(TJIR_POS_MIN_GAP) insertions instead
 * of the whole block: insertion stays O(log n) amortised. */

#define TJIR_POS_MIN_GAP (INT64_C(1) << 20)

static void respace_all(tj_block *b) {
    int64_t step = TJIR_POS_STEP;
    int64_t room = (TJIR_POS_MAX - TJIR_POS_MIN) / ((int64_t)b->n_nodes + 1);
    if (room < step) step = room;
    int64_t p = TJIR_POS_MIN;
    for (tj_node *n = b->first; n; n = n->next) n->pos = (p += step);
}

/* Spaces out the nodes around n, which has no room (see above). */
static void respace_around(tj_node *n) {
    tj_node *first = n, *last = n;
    int64_t count = 1;
    for (int64_t want = 2;; want *= 2) {
        while (count < want && (first->prev || last->next)) {
            if (first->prev && (count % 2 || !last->next)) first = first->prev;
            else last = last->next;
            count++;
        }
        int64_t lo = first->prev ? first->prev->pos : TJIR_POS_MIN;
        int64_t hi = last->next ? last->next->pos : TJIR_POS_MAX;
        int64_t gap = (hi - lo) / (count + 1);
        if (gap >= TJIR_POS_MIN_GAP) {
            int64_t p = lo;
            for (tj_node *m = first;; m = m->next) {
                m->pos = (p += gap);
                if (m == last) return;
            }
        }
        if (!first->prev && !last->next) break;
    }
    respace_all(n->block);
}

static void assign_pos(tj_node *n) {
    int64_t lo = n->prev ? n->prev->pos : TJIR_POS_MIN;
    int64_t hi = n->next ? n->next->pos : TJIR_POS_MAX;
    if (!n->next && lo <= TJIR_POS_MAX - TJIR_POS_STEP) { /* appending: the common case */
        n->pos = lo + TJIR_POS_STEP;
        return;
    }
    if (hi - lo >= 2) {
        n->pos = lo + (hi - lo) / 2;
        return;
    }
    respace_around(n);
}

static tj_status check_placement(const char *fn, tj_node *n, tj_node *pos, bool before) {
    if (!n || !pos) return tjc_error(TJ_ERR_ARG, "%s: a node is NULL", fn);
    if (n->destroyed || pos->destroyed)
        return tjc_error(TJ_ERR_ARG, "%s: the node was destroyed", fn);
    if (n->kind == TJ_NODE_PARAM || n->kind == TJ_NODE_RETURN)
        return tjc_error(TJ_ERR_ARG, "%s: %s cannot move", fn, tj_node_kind_name(n->kind));
    if (n->graph != pos->graph)
        return tjc_error(TJ_ERR_ARG, "%s: the nodes belong to different graphs", fn);
    if (!pos->block) return tjc_error(TJ_ERR_ARG, "%s: the position is not in a block", fn);
    if (n == pos) return tjc_error(TJ_ERR_ARG, "%s: a node cannot be placed next to itself", fn);
    if ((before && pos->kind == TJ_NODE_PARAM) || (!before && pos->kind == TJ_NODE_RETURN))
        return tjc_error(TJ_ERR_ARG, "%s: nothing goes %s %s", fn, before ? "before" : "after",
                         tj_node_kind_name(pos->kind));
    return TJ_OK;
}

static void unlink_node(tj_node *n) {
    tj_block *b = n->block;
    if (!b) return;
    if (n->prev) n->prev->next = n->next;
    else b->first = n->next;
    if (n->next) n->next->prev = n->prev;
    else b->last = n->prev;
    n->prev = n->next = NULL;
    n->block = NULL;
    b->n_nodes--;
}

/* Links n (in no block) after `after`, which is NULL for the front. */
static void link_after(tj_block *b, tj_node *n, tj_node *after) {
    n->block = b;
    n->prev = after;
    n->next = after ? after->next : b->first;
    if (n->next) n->next->prev = n;
    else b->last = n;
    if (after) after->next = n;
    else b->first = n;
    b->n_nodes++;
    assign_pos(n);
}

static tj_status place(const char *fn, tj_node *n, tj_node *pos, bool before, bool moving) {
    tj_status st = check_placement(fn, n, pos, before);
    if (st) return st;
    if (!moving && n->block)
        return tjc_error(TJ_ERR_ARG, "%s: the node is already in a block (move it instead)", fn);
    unlink_node(n);
    tj_block *b = pos->block;
    tj_node *after;
    if (before) after = pos->kind == TJ_NODE_RETURN ? b->last : pos->prev;
    else after = pos->kind == TJ_NODE_PARAM ? NULL : pos;
    link_after(b, n, after);
    return TJ_OK;
}

tj_status tj_node_insert_before(tj_node *n, tj_node *pos) {
    return place("tj_node_insert_before", n, pos, true, false);
}
tj_status tj_node_insert_after(tj_node *n, tj_node *pos) {
    return place("tj_node_insert_after", n, pos, false, false);
}
tj_status tj_node_move_before(tj_node *n, tj_node *pos) {
    return place("tj_node_move_before", n, pos, true, true);
}
tj_status tj_node_move_after(tj_node *n, tj_node *pos) {
    return place("tj_node_move_after", n, pos, false, true);
}

bool tj_node_is_before(const tj_node *a, const tj_node *b) {
    if (!a || !b) return NULL_ARG("tj_node_is_before", "a node"), false;
    if (!a->block || a->block != b->block) return false;
    return a->pos < b->pos;
}

/* ---- nodes ----------------------------------------------------------------------------- */

#define NODE_GET(fn, expr, bad) \
    do {                           \
        if (!n) return NULL_ARG(fn, "the node"), bad; \
        return expr;               \
    } while (0)
tj_node_kind tj_node_kind_of(const tj_node *n) {
    NODE_GET("tj_node_kind_of", n->kind, TJ_NUM_NODE_KINDS);
}
const tj_op_info *tj_node_op(const tj_node *n) {
    NODE_GET("tj_node_op", n->kind == TJ_NODE_OP ? n->op : NULL, NULL);
}
const char *tj_node_name(const tj_node *n) {
    NODE_GET("tj_node_name", n->kind == TJ_NODE_OP ? tj_op_name(n->op) : tj_node_kind_name(n->kind),
             NULL);
}
int tj_node_id(const tj_node *n) { NODE_GET("tj_node_id", n->id, -1); }
tj_graph *tj_node_graph(const tj_node *n) { NODE_GET("tj_node_graph", n->graph, NULL); }
tj_block *tj_node_block(const tj_node *n) { NODE_GET("tj_node_block", n->block, NULL); }
int tj_node_num_inputs(const tj_node *n) { NODE_GET("tj_node_num_inputs", n->n_inputs, -1); }
int tj_node_num_outputs(const tj_node *n) { NODE_GET("tj_node_num_outputs", n->n_outputs, -1); }
tj_value *tj_node_input(const tj_node *n, int i) {
    NODE_GET("tj_node_input", value_at("tj_node_input", "input", n->inputs, n->n_inputs, i), NULL);
}
tj_value *tj_node_output(const tj_node *n, int i) {
    NODE_GET("tj_node_output", value_at("tj_node_output", "output", n->outputs, n->n_outputs, i),
             NULL);
}
tj_node *tj_node_next(const tj_node *n) { NODE_GET("tj_node_next", n->next, NULL); }
tj_node *tj_node_prev(const tj_node *n) { NODE_GET("tj_node_prev", n->prev, NULL); }

tj_status tj_node_add_input(tj_node *n, tj_value *v) {
    if (!n) return tjc_error(TJ_ERR_ARG, "tj_node_add_input: the node is NULL");
    tj_status st = check_value("tj_node_add_input", n, v);
    if (st) return st;
    if (n->kind == TJ_NODE_PARAM)
        return tjc_error(TJ_ERR_ARG, "tj_node_add_input: prim::Param takes no inputs");
    if (!tjir_reserve_inputs(n, n->n_inputs + 1) || !tjir_add_use(n->graph, v, n, n->n_inputs))
        return TJ_ERR_MEMORY;
    n->inputs[n->n_inputs++] = v;
    return TJ_OK;
}

tj_status tj_node_set_input(tj_node *n, int i, tj_value *v) {
    if (!n || i < 0 || i >= n->n_inputs)
        return tjc_error(TJ_ERR_ARG, "tj_node_set_input: no input %d", i);
    tj_status st = check_value("tj_node_set_input", n, v);
    if (st) return st;
    if (n->inputs[i] == v) return TJ_OK;
    /* room first, so that nothing fails once the old use is gone */
    if (!tjir_grow(&n->graph->arena, (void **)&v->uses, &v->cap_uses, v->n_uses + 1, sizeof(tj_use)))
        return TJ_ERR_MEMORY;
    tjir_drop_use(n->inputs[i], n, i);
    tjir_add_use(n->graph, v, n, i);
    n->inputs[i] = v;
    return TJ_OK;
}

tj_status tj_node_remove_input(tj_node *n, int i) {
    if (!n || i < 0 || i >= n->n_inputs)
        return tjc_error(TJ_ERR_ARG, "tj_node_remove_input: no input %d", i);
    tjir_drop_use(n->inputs[i], n, i);
    for (int k = i + 1; k < n->n_inputs; k++) {
        renumber_use(n->inputs[k], n, k, k - 1);
        n->inputs[k - 1] = n->inputs[k];
    }
    n->n_inputs--;
    return TJ_OK;
}

tj_value *tj_node_add_output(tj_node *n, const tj_type *type) {
    if (!n) {
        tjc_error(TJ_ERR_ARG, "tj_node_add_output: the node is NULL");
        return NULL;
    }
    if (n->kind == TJ_NODE_RETURN) {
        tjc_error(TJ_ERR_ARG, "tj_node_add_output: prim::Return has no outputs");
        return NULL;
    }
    if (type && tj_type_check(type) != TJ_OK) return NULL;
    tj_graph *g = n->graph;
    if (!tjir_grow(&g->arena, (void **)&n->outputs, &n->cap_outputs, n->n_outputs + 1,
                   sizeof(tj_value *)))
        return NULL;
    tj_value *v = tjir_value_new(g, n, type);
    if (!v) return NULL;
    v->offset = n->n_outputs;
    n->outputs[n->n_outputs++] = v;
    return v;
}

tj_status tj_node_remove_output(tj_node *n, int i) {
    if (!n || i < 0 || i >= n->n_outputs)
        return tjc_error(TJ_ERR_ARG, "tj_node_remove_output: no output %d", i);
    tj_value *v = n->outputs[i];
    if (v->n_uses)
        return tjc_error(TJ_ERR_ARG, "tj_node_remove_output: output %d of %s still has %d uses",
                         i, tj_node_name(n), v->n_uses);
    tj_value_set_name(v, NULL);
    v->graph = NULL;
    for (int k = i + 1; k < n->n_outputs; k++) {
        n->outputs[k - 1] = n->outputs[k];
        n->outputs[k - 1]->offset = k - 1;
    }
    n->n_outputs--;
    return TJ_OK;
}

tj_status tj_node_destroy(tj_node *n) {
    if (!n) return tjc_error(TJ_ERR_ARG, "tj_node_destroy: the node is NULL");
    if (n->destroyed) return tjc_error(TJ_ERR_ARG, "tj_node_destroy: destroyed twice");
    if (n->kind == TJ_NODE_PARAM || n->kind == TJ_NODE_RETURN)
        return tjc_error(TJ_ERR_ARG, "tj_node_destroy: %s belongs to its block",
                         tj_node_kind_name(n->kind));
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]->n_uses)
            return tjc_error(TJ_ERR_ARG, "tj_node_destroy: output %d of %s still has %d uses", i,
                             tj_node_name(n), n->outputs[i]->n_uses);
    for (int i = n->n_inputs - 1; i >= 0; i--) tjir_drop_use(n->inputs[i], n, i);
    n->n_inputs = 0;
    for (int i = 0; i < n->n_outputs; i++) {
        tj_value_set_name(n->outputs[i], NULL);
        n->outputs[i]->graph = NULL;
    }
    unlink_node(n);
    tjir_release_node(n);
    n->destroyed = true;
    return TJ_OK;
}

/* ---- values ------------------------------------------------------------------------------ */

const tj_type *tj_value_type(const tj_value *v) {
    return v ? v->type : (NULL_ARG("tj_value_type", "the value"), NULL);
}

tj_status tj_value_set_type(tj_value *v, const tj_type *type) {
    if (!v || !type) return tjc_error(TJ_ERR_ARG, "tj_value_set_type: NULL argument");
    tj_status st = tj_type_check(type);
    if (st) return st;
    const tj_type *interned = tjir_intern_type(v->node->graph, type);
    if (!interned) return TJ_ERR_MEMORY;
    v->type = interned;
    return TJ_OK;
}

#define VALUE_GET(fn, expr, bad) \
    do {                            \
        if (!v) return NULL_ARG(fn, "the value"), bad; \
        return expr;                \
    } while (0)
const char *tj_value_name(const tj_value *v) { VALUE_GET("tj_value_name", v->name, NULL); }
int tj_value_id(const tj_value *v) { VALUE_GET("tj_value_id", v->id, -1); }
int64_t tj_value_scratch(const tj_value *v) { VALUE_GET("tj_value_scratch", v->scratch, 0); }
tj_status tj_value_set_scratch(tj_value *v, int64_t x) {
    if (!v) return NULL_ARG("tj_value_set_scratch", "the value");
    v->scratch = x;
    return TJ_OK;
}
int64_t tj_node_scratch(const tj_node *n) { NODE_GET("tj_node_scratch", n->scratch, 0); }
tj_status tj_node_set_scratch(tj_node *n, int64_t x) {
    if (!n) return NULL_ARG("tj_node_set_scratch", "the node");
    n->scratch = x;
    return TJ_OK;
}
tj_node *tj_value_node(const tj_value *v) { VALUE_GET("tj_value_node", v->node, NULL); }
int tj_value_offset(const tj_value *v) { VALUE_GET("tj_value_offset", v->offset, -1); }
tj_graph *tj_value_graph(const tj_value *v) { VALUE_GET("tj_value_graph", v->node->graph, NULL); }
int tj_value_num_uses(const tj_value *v) { VALUE_GET("tj_value_num_uses", v->n_uses, -1); }
tj_use tj_value_use(const tj_value *v, int i) {
    if (!v) return NULL_ARG("tj_value_use", "the value"), (tj_use){NULL, -1};
    if (i < 0 || i >= v->n_uses) {
        tjc_error(TJ_ERR_ARG, "tj_value_use: use %d is out of range (the value has %d)", i,
                  v->n_uses);
        return (tj_use){NULL, -1};
    }
    return v->uses[i];
}

/* ---- names: suffix counters --------------------------------------------------------------
 * A taken name x becomes the first free of x.1, x.2, ... The graph remembers
 * per base the k for which x.1 ... x.k are all taken, so the n-th copy of a
 * name costs O(1) lookups, not n. Freeing x.j with j <= k lowers k to j - 1. */

static int64_t suffix_count(tj_graph *g, const char *base) {
    return (int64_t)(intptr_t)tjir_map_get(&g->suffixes, base) - 1; /* -1: none recorded */
}

static void set_suffix_count(tj_graph *g, const char *base, int64_t k) {
    /* an existing entry keeps its key; a new one needs a copy that lives with the graph */
    const char *key = tjir_map_get(&g->suffixes, base) ? base : tjir_strdup(&g->arena, base);
    if (key) tjir_map_put(&g->suffixes, key, (void *)(intptr_t)(k + 1)); /* a hint: failure is harmless */
}

/* A name x.j leaving the graph: x.1 ... x.(j-1) may be all that stays taken. */
static void name_released(tj_graph *g, const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name || dot[1] < '1' || dot[1] > '9' || strspn(dot + 1, "0123456789") != strlen(dot + 1) ||
        strlen(dot + 1) > 15)
        return;
    char base[4200];
    size_t n = (size_t)(dot - name);
    if (n >= sizeof base) return;
    memcpy(base, name, n);
    base[n] = '\0';
    int64_t j = strtoll(dot + 1, NULL, 10), k = suffix_count(g, base);
    if (k >= j) set_suffix_count(g, base, j - 1);
}

static void forget_name(tj_graph *g, tj_value *v) {
    if (!v->name) return;
    tjir_map_del(&g->names, v->name);
    name_released(g, v->name);
    v->name = NULL;
}

bool tjir_claim_name(tj_value *v, const char *name) {
    tj_graph *g = v->node->graph;
    tj_value *holder = tjir_map_get(&g->names, name);
    if (holder == v) return true;
    if (holder) return false;
    const char *copy = tjir_strdup(&g->arena, name);
    if (!copy || !tjir_map_put(&g->names, copy, v)) return false;
    forget_name(g, v);
    v->name = copy;
    return true;
}

tj_status tj_value_set_name(tj_value *v, const char *name) {
    if (!v) return tjc_error(TJ_ERR_ARG, "tj_value_set_name: the value is NULL");
    tj_graph *g = v->node->graph;
    if (!name || !*name) {
        forget_name(g, v);
        return TJ_OK;
    }
    size_t n = strlen(name);
    if (n > SIZE_MAX - 32)
        return tjc_error(TJ_ERR_ARG, "tj_value_set_name: a name of %zu bytes", n);
    /* room for a leading '_' and a ".<int>" suffix */
    char *clean = tjc_malloc(n + 32);
    if (!clean) return tjc_error(TJ_ERR_MEMORY, "tj_value_set_name: out of memory");
    size_t k = 0;
    if (name[0] >= '0' && name[0] <= '9') clean[k++] = '_';
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.';
        clean[k++] = ok ? c : '_';
    }
    clean[k] = '\0';
    if (v->name && strcmp(v->name, clean) == 0) {
        tjc_free(clean);
        return TJ_OK;
    }
    /* a taken name x or x.3 becomes x.1, x.2, ...: the first free one */
    size_t base = k;
    size_t dot = k;
    while (dot > 0 && clean[dot - 1] >= '0' && clean[dot - 1] <= '9') dot--;
    if (dot > 1 && dot < k && clean[dot - 1] == '.') base = dot - 1;
    tj_status st = TJ_OK;
    long suffix = 0; /* 0: the name as given */
    while (!tjir_claim_name(v, clean)) {
        if (tjir_map_get(&g->names, clean) == NULL) { /* failed for lack of memory */
            st = tjc_error(TJ_ERR_MEMORY, "tj_value_set_name: out of memory");
            break;
        }
        clean[base] = '\0';
        int64_t known = suffix_count(g, clean);
        if (suffix == 0) suffix = known > 0 ? (long)known : 0; /* x.1 ... x.known are taken */
        else if (known < suffix) set_suffix_count(g, clean, suffix); /* and so is x.suffix */
        snprintf(clean + base, 24, ".%ld", ++suffix);
    }
    if (st == TJ_OK && suffix > 0) {
        clean[base] = '\0';
        if (suffix_count(g, clean) == suffix - 1) set_suffix_count(g, clean, suffix);
    }
    tjc_free(clean);
    return st;
}

static tj_status replace_uses(const char *fn, tj_value *v, tj_value *with, const tj_node *after) {
    if (!v || !with) return tjc_error(TJ_ERR_ARG, "%s: a value is NULL", fn);
    if (v->node->graph != with->node->graph)
        return tjc_error(TJ_ERR_ARG, "%s: the values belong to different graphs", fn);
    if (v == with) return TJ_OK;
    if (!tjir_grow(&v->node->graph->arena, (void **)&with->uses, &with->cap_uses,
                   with->n_uses + v->n_uses, sizeof(tj_use)))
        return TJ_ERR_MEMORY;
    int kept = 0;
    for (int i = 0; i < v->n_uses; i++) {
        tj_use u = v->uses[i];
        bool later = !after || u.user->kind == TJ_NODE_RETURN || tj_node_is_before(after, u.user);
        if (!later) {
            u.user->use_at[u.index] = kept;
            v->uses[kept++] = u;
            continue;
        }
        u.user->inputs[u.index] = with;
        u.user->use_at[u.index] = with->n_uses;
        with->uses[with->n_uses++] = u;
    }
    v->n_uses = kept;
    return TJ_OK;
}

tj_status tj_value_replace_uses(tj_value *v, tj_value *with) {
    return replace_uses("tj_value_replace_uses", v, with, NULL);
}

tj_status tj_value_replace_uses_after(tj_value *v, tj_value *with, const tj_node *after) {
    if (!after) return tjc_error(TJ_ERR_ARG, "tj_value_replace_uses_after: the node is NULL");
    return replace_uses("tj_value_replace_uses_after", v, with, after);
}
