/* dce.c — dead-code elimination: removes nodes none of whose outputs is used,
 * keeping every node with an effect (passes_internal.h: writes into an input,
 * draws random numbers). Graph inputs are the program's interface and stay,
 * used or not. Fusion groups' subgraphs are cleaned the same way; a group's
 * own outputs stay (the fuser decides its interface). */
#include "passes/passes_internal.h"

tj_status tj_pass_dce(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "dce: the graph is NULL");
    tj_status st = tjp_for_subgraphs(g, tj_pass_dce);
    if (st) return st;
    /* backwards: users come before their definers, so a dead chain goes in one walk */
    for (tj_node *n = tj_block_last(tj_graph_block(g)), *prev; n; n = prev) {
        prev = tj_node_prev(n);
        bool used = false;
        for (int i = 0; i < tj_node_num_outputs(n) && !used; i++)
            used = tj_value_num_uses(tj_node_output(n, i)) > 0;
        if (used || tjp_has_effect(n)) continue;
        if ((st = tj_node_destroy(n))) return st;
    }
    return TJ_OK;
}
