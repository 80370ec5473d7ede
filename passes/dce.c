/* dce.c — dead-code elimination: removes nodes none of whose outputs is used,
 * keeping every node with an effect (passes_internal.h: writes into an input,
 * draws random numbers). Graph inputs are the program's interface and stay,
 * used or not. Fusion groups' subgraphs are cleaned the same way; a group's
 * own outputs stay (the fuser decides its interface). */
#include "core/alloc.h"
#include "passes/passes_internal.h"

static bool dead(const tj_node *n) {
    if (tj_node_kind_of(n) == TJ_NODE_PARAM) return false;
    for (int i = 0; i < tj_node_num_outputs(n); i++)
        if (tj_value_num_uses(tj_node_output(n, i)) > 0) return false;
    return !tjp_has_effect(n);
}

typedef struct stack {
    tj_node **v;
    int n, cap;
} stack;

static bool push(stack *s, tj_node *n) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        tj_node **grown = tjc_realloc(s->v, sizeof *grown * (size_t)cap);
        if (!grown) return false;
        s->v = grown;
        s->cap = cap;
    }
    tj_node_set_scratch(n, 1); /* on the stack: pushed once */
    s->v[s->n++] = n;
    return true;
}

/* One walk forwards finds the dead nodes (a graph without any costs just that
 * walk, in the order the nodes lie in memory); removing one may leave the
 * definers of its inputs dead, which join the work list then. A node's
 * scratch word says whether it was pushed. */
tj_status tj_pass_dce(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "dce: the graph is NULL");
    tj_status st = tjp_for_subgraphs(g, tj_pass_dce);
    if (st) return st;
    stack work = {0};
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n && !st; n = tj_node_next(n)) {
        tj_node_set_scratch(n, 0);
        if (dead(n) && !push(&work, n)) st = tjc_error(TJ_ERR_MEMORY, "dce: out of memory");
    }
    while (work.n && !st) {
        tj_node *n = work.v[--work.n];
        int n_in = tj_node_num_inputs(n);
        /* the definers, read before n goes; each is looked at again once n is gone */
        int first = work.n;
        for (int i = 0; i < n_in && !st; i++) {
            tj_node *d = tj_value_node(tj_node_input(n, i));
            if (tj_node_kind_of(d) == TJ_NODE_PARAM || tj_node_scratch(d) == 1) continue;
            if (!push(&work, d)) st = tjc_error(TJ_ERR_MEMORY, "dce: out of memory");
        }
        if (!st) st = tj_node_destroy(n);
        /* keep only the definers that n's removal left dead */
        int kept = first;
        for (int k = first; k < work.n; k++) {
            tj_node *d = work.v[k];
            if (dead(d)) work.v[kept++] = d;
            else tj_node_set_scratch(d, 0);
        }
        work.n = kept;
    }
    tjc_free(work.v);
    return st;
}
