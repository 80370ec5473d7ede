/* canonicalize.c — a deterministic order of a block's nodes, so that graphs
 * equal in structure print byte-identically under TJ_PRINT_CANONICAL however
 * they were built.
 *
 *  1. Every value gets a structural hash: graph input i hashes its position;
 *     a node hashes its kind or op, attributes (tensor constants by value),
 *     its inputs' hashes (as an unordered pair for commutative ops) and, for
 *     a node with an effect, its rank among the effects.
 *  2. The two inputs of a commutative op are sorted by (hash, name).
 *  3. The nodes are ordered by a depth-first walk from the graph outputs in
 *     order, each node placed after what it needs: its inputs' definers in
 *     input order, then its ordering constraints. Effects keep their relative
 *     order, and a node reading memory that an effect writes stays on its
 *     side of that write. Nodes with an effect that no output needs come
 *     next, in their order, then the remaining (dead) nodes in their order:
 *     run dce first for those to be canonical too.
 * Fusion groups' subgraphs are canonicalised the same way. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "passes/passes_internal.h"

typedef struct ints {
    int *v;
    int n, cap;
} ints;

static bool ints_push(ints *a, int x) {
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 4;
        int *v = tjc_realloc(a->v, sizeof *v * (size_t)cap);
        if (!v) return false;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

typedef struct canon {
    tj_graph *g;
    int n;              /* nodes in the block */
    tj_node **node;     /* by position in the original order */
    /* each node's scratch: its position (-1: the block's inputs); each
     * value's: its hash */
    ints *after;        /* by position: positions of nodes it must follow besides its inputs */
    bool *effect;       /* by position: tjp_has_effect, asked once (a group's walks its subgraph) */
    tjp_alias al;
    bool oom;
} canon;

static int pos_of(const tj_node *n) { return (int)tj_node_scratch(n); }

static uint64_t value_hash(const tj_value *v) { return (uint64_t)tj_value_scratch(v); }

static void set_hash(tj_value *v, uint64_t h) { tj_value_set_scratch(v, (int64_t)h); }

/* ---- 1 and 2: hashes, and commutative inputs sorted -------------------------------------- */

static int compare_values(const tj_value *a, const tj_value *b) {
    uint64_t ha = value_hash(a), hb = value_hash(b);
    if (ha != hb) return ha < hb ? -1 : 1;
    const char *na = tj_value_name(a), *nb = tj_value_name(b);
    if (!na || !nb) return (na != NULL) - (nb != NULL);
    return strcmp(na, nb);
}

static void hash_nodes(canon *c) {
    tj_block *b = tj_graph_block(c->g);
    for (int i = 0; i < tj_block_num_inputs(b); i++)
        set_hash(tj_block_input(b, i), tjp_hash_u64(0x1a2b3c, (uint64_t)i));
    uint64_t effects = 0;
    for (int k = 0; k < c->n; k++) {
        tj_node *n = c->node[k];
        uint64_t h = tjp_hash_str(0, tj_node_name(n));
        h = tjp_hash_u64(h, (uint64_t)tj_node_num_outputs(n));
        int ni = tj_node_num_inputs(n);
        h = tjp_hash_u64(h, (uint64_t)ni);
        if (tjp_is_commutative(n)) {
            uint64_t a = value_hash(tj_node_input(n, 0)), bb = value_hash(tj_node_input(n, 1));
            h = tjp_hash_u64(tjp_hash_u64(h, a < bb ? a : bb), a < bb ? bb : a);
            if (compare_values(tj_node_input(n, 0), tj_node_input(n, 1)) > 0) {
                tj_value *x = tj_node_input(n, 0), *y = tj_node_input(n, 1);
                if (tj_node_set_input(n, 0, y) != TJ_OK || tj_node_set_input(n, 1, x) != TJ_OK)
                    c->oom = true;
            }
        } else {
            for (int i = 0; i < ni; i++) h = tjp_hash_u64(h, value_hash(tj_node_input(n, i)));
        }
        h = tjp_hash_attrs(h, n);
        if (c->effect[k]) h = tjp_hash_u64(h, ++effects);
        for (int i = 0; i < tj_node_num_outputs(n); i++)
            set_hash(tj_node_output(n, i), tjp_hash_u64(h, (uint64_t)i));
    }
}

/* ---- ordering constraints ------------------------------------------------------------------- */

static void must_follow(canon *c, int later, int earlier) {
    if (earlier >= 0 && earlier != later && !ints_push(&c->after[later], earlier)) c->oom = true;
}

/* Effects in their order; per alias class, readers after the last write
 * before them, and each write after the reads since the previous one. */
static void effect_order(canon *c) {
    int nclass = c->al.n;
    int *last_write = tjc_malloc(sizeof *last_write * (size_t)(nclass ? nclass : 1));
    ints *readers = tjc_calloc((size_t)(nclass ? nclass : 1), sizeof *readers);
    if (!last_write || !readers) {
        c->oom = true;
        tjc_free(last_write);
        tjc_free(readers);
        return;
    }
    for (int k = 0; k < nclass; k++) last_write[k] = -1;
    int last_effect = -1;
    for (int p = 0; p < c->n; p++) {
        tj_node *n = c->node[p];
        if (c->effect[p]) {
            must_follow(c, p, last_effect);
            last_effect = p;
        }
        for (int i = 0; i < tj_node_num_inputs(n); i++) {
            int k = tjp_alias_class(&c->al, tj_node_input(n, i));
            if (k < 0) continue;
            must_follow(c, p, last_write[k]);
            if (tjp_writes_input(n, i)) { /* a fusion group writes nothing */
                for (int r = 0; r < readers[k].n; r++) must_follow(c, p, readers[k].v[r]);
                readers[k].n = 0;
                last_write[k] = p;
            } else if (!ints_push(&readers[k], p)) {
                c->oom = true;
            }
        }
    }
    for (int k = 0; k < nclass; k++) tjc_free(readers[k].v);
    tjc_free(readers);
    tjc_free(last_write);
}

/* ---- 3: the walk -------------------------------------------------------------------------------- */

typedef struct frame {
    int node, next; /* next: the dependency to visit next */
} frame;

/* The k-th thing node p needs: its inputs' definers, then its constraints. */
static int dependency(canon *c, int p, int k) {
    tj_node *n = c->node[p];
    int ni = tj_node_num_inputs(n);
    if (k < ni) return pos_of(tj_value_node(tj_node_input(n, k))); /* -1 for graph inputs */
    k -= ni;
    return k < c->after[p].n ? c->after[p].v[k] : -2;
}

/* Appends root and everything it needs, not yet placed, to order[]. */
static void visit(canon *c, int root, char *state, int *order, int *n_order, frame *stack) {
    if (root < 0 || state[root]) return;
    int top = 0;
    stack[top++] = (frame){root, 0};
    state[root] = 1;
    while (top) {
        frame *f = &stack[top - 1];
        int d = dependency(c, f->node, f->next++);
        if (d == -2) { /* all needs placed */
            order[(*n_order)++] = f->node;
            state[f->node] = 2;
            top--;
        } else if (d >= 0 && !state[d]) {
            state[d] = 1;
            stack[top++] = (frame){d, 0};
        }
    }
}

static tj_status reorder(canon *c) {
    char *state = tjc_calloc((size_t)c->n + 1, 1);
    int *order = tjc_malloc(sizeof *order * ((size_t)c->n + 1));
    frame *stack = tjc_malloc(sizeof *stack * ((size_t)c->n + 1));
    tj_status st = TJ_OK;
    if (!state || !order || !stack) {
        st = tjc_error(TJ_ERR_MEMORY, "canonicalize: out of memory");
        goto done;
    }
    int n_order = 0;
    tj_block *b = tj_graph_block(c->g);
    for (int i = 0; i < tj_block_num_outputs(b); i++)
        visit(c, pos_of(tj_value_node(tj_block_output(b, i))), state, order, &n_order, stack);
    for (int p = 0; p < c->n; p++)
        if (c->effect[p]) visit(c, p, state, order, &n_order, stack);
    for (int p = 0; p < c->n; p++) visit(c, p, state, order, &n_order, stack);
    tj_node *ret = tj_block_return(b);
    for (int k = 0; k < n_order && !st; k++) st = tj_node_move_before(c->node[order[k]], ret);
done:
    tjc_free(state);
    tjc_free(order);
    tjc_free(stack);
    return st;
}

tj_status tj_pass_canonicalize(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "canonicalize: the graph is NULL");
    tj_status st = tjp_for_subgraphs(g, tj_pass_canonicalize);
    if (st) return st;
    canon c = {.g = g, .n = tj_block_num_nodes(tj_graph_block(g))};
    c.node = tjc_malloc(sizeof *c.node * ((size_t)c.n + 1));
    c.after = tjc_calloc((size_t)c.n + 1, sizeof *c.after);
    c.effect = tjc_malloc(sizeof *c.effect * ((size_t)c.n + 1));
    if (!c.node || !c.after || !c.effect) c.oom = true;
    int p = 0;
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n && !c.oom; n = tj_node_next(n), p++) {
        c.node[p] = n;
        c.effect[p] = tjp_has_effect(n);
        tj_node_set_scratch(n, p);
    }
    tj_block *blk = tj_graph_block(g);
    if (tj_block_num_inputs(blk)) tj_node_set_scratch(tj_value_node(tj_block_input(blk, 0)), -1);
    if (!c.oom) hash_nodes(&c);
    /* with no write in place, effects keep their order and reads need none:
     * an empty analysis knows no class */
    bool writes = !c.oom && tj_graph_writes_in_place(g);
    if (!c.oom && (st = writes ? tjp_alias_build(&c.al, g) : TJ_OK) == TJ_OK) {
        effect_order(&c);
        if (!c.oom) st = reorder(&c);
        tjp_alias_free(&c.al);
    }
    if (c.oom && !st) st = tjc_error(TJ_ERR_MEMORY, "canonicalize: out of memory");
    for (int k = 0; c.after && k < c.n; k++) tjc_free(c.after[k].v);
    tjc_free(c.after);
    tjc_free(c.effect);
    tjc_free(c.node);
    return st;
}
