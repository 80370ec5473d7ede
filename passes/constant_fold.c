/* constant_fold.c — constant folding: an op node whose inputs are all tensor
 * constants (or absent optionals, prim::None) and which has no effect runs
 * once, at compile time, through the op table (tjc_invoke_nested: not traced,
 * not tracked by scopes), and its outputs become tensor constants. Nodes are
 * visited in order, so a chain folds in one walk.
 *
 * Limits: a node is left alone when
 *  - one of its results would hold more than TJP_FOLD_MAX_NUMEL elements
 *    (a compile-time result is kept in the program for its whole life);
 *  - one of its results may be written in place later (its alias class is
 *    mutated): a constant is shared by every replay and must not change;
 *  - one of its constants is written in place somewhere (a hand-written
 *    graph may do that): its value at compile time need not be the one the
 *    node reads at run time;
 *  - the op fails on those constants: it is kept, to fail at run time with
 *    its own message.
 * Results that are not contiguous become contiguous copies, so that the
 * folded constant prints and reads back with the same layout. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "passes/passes_internal.h"

#define TJP_FOLD_MAX_NUMEL ((int64_t)1 << 20)

static bool too_big_type(const tj_type *t) {
    if (t->kind != TJ_TYPE_TENSOR || t->ndim == TJ_UNKNOWN) return false;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == TJ_UNKNOWN_DIM) return false;
        if (t->sizes[d] > TJP_FOLD_MAX_NUMEL) return true;
        n *= t->sizes[d];
        if (n > TJP_FOLD_MAX_NUMEL) return true;
    }
    return false;
}

/* Whether n can be folded, judging by the graph alone. al: NULL when the
 * graph writes nothing in place. */
static bool foldable(tjp_alias *al, const tj_node *n) {
    if (tj_node_kind_of(n) != TJ_NODE_OP || tjp_has_effect(n)) return false;
    int ni = tj_node_num_inputs(n), tensors = 0;
    for (int i = 0; i < ni; i++) {
        const tj_node *d = tj_value_node(tj_node_input(n, i));
        if (tj_node_kind_of(d) == TJ_NODE_NONE) continue;
        if (tj_node_kind_of(d) != TJ_NODE_CONSTANT || !tj_node_tensor(d)) return false;
        /* a constant this walk made is unknown to the analysis, and unwritten */
        const tj_value *c = tj_node_input(n, i);
        if (al && tjp_alias_class(al, c) >= 0 && (tjp_alias_flags(al, c) & TJP_ALIAS_MUTATED))
            return false;
        tensors++;
    }
    if (!tensors) return false;
    for (int i = 0; i < tj_node_num_outputs(n); i++) {
        const tj_value *v = tj_node_output(n, i);
        if (too_big_type(tj_value_type(v))) return false;
        if (al && (tjp_alias_flags(al, v) & TJP_ALIAS_MUTATED)) return false;
    }
    return true;
}

static void release_all(tj_tensor **t, int n) {
    for (int i = 0; i < n; i++) tj_release(t[i]);
}

/* Runs n on its constants; fills out[0..n_out) with contiguous results, or
 * returns false (nothing held) when the op fails or a result is too big. */
static bool evaluate(const tj_node *n, tj_tensor **out, int n_out) {
    int ni = tj_node_num_inputs(n);
    tj_tensor **in = tjc_calloc((size_t)(ni ? ni : 1), sizeof *in);
    if (!in) return false;
    for (int i = 0; i < ni; i++) in[i] = tj_node_tensor(tj_value_node(tj_node_input(n, i)));
    int k = tjc_invoke_nested(tj_node_op(n), in, ni, tj_node_attrs(n), out, n_out);
    tjc_free(in);
    if (k != n_out) {
        if (k > 0) release_all(out, k);
        tj_clear_error(); /* the node stays and reports this at run time */
        return false;
    }
    bool ok = true;
    for (int i = 0; i < n_out && ok; i++) {
        if (tj_numel(out[i]) > TJP_FOLD_MAX_NUMEL) ok = false;
        else if (!tj_is_contiguous(out[i])) {
            tj_tensor *c = NULL;
            if (tjc_invoke_nested(tjc_op(TJ_OP_clone), &out[i], 1, NULL, &c, 1) != 1) ok = false;
            else {
                tj_release(out[i]);
                out[i] = c;
            }
        }
    }
    if (!ok) {
        release_all(out, n_out);
        tj_clear_error();
    }
    return ok;
}

/* Replaces n by one constant node per result. */
static tj_status replace(tj_graph *g, tj_node *n, tj_tensor **res, int n_out) {
    tj_status st = TJ_OK;
    for (int i = 0; i < n_out && !st; i++) {
        tj_node *c = tj_node_create_tensor_constant(g, res[i]);
        if (!c) return tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
        if ((st = tj_node_insert_before(c, n))) return st;
        tj_value *old = tj_node_output(n, i), *now = tj_node_output(c, 0);
        tj_type ty = *tj_value_type(now);
        ty.requires_grad = tj_value_type(old)->requires_grad;
        if ((st = tj_value_set_type(now, &ty))) return st;
        if ((st = tjp_replace_value(old, now))) return st;
    }
    if (st) return st;
    /* the node, then the constants it read if nothing else reads them */
    tjp_remove_if_dead(n);
    return TJ_OK;
}

tj_status tj_pass_constant_fold(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "constant_fold: the graph is NULL");
    tjp_alias al = {0}, *alp = tj_graph_writes_in_place(g) ? &al : NULL;
    tj_status st = alp ? tjp_alias_build(&al, g) : TJ_OK;
    if (st) return st;
    enum { SMALL = 16 };
    for (tj_node *n = tj_block_first(tj_graph_block(g)), *next; n && !st; n = next) {
        next = tj_node_next(n);
        if (!foldable(alp, n)) continue;
        int n_out = tj_node_num_outputs(n);
        tj_tensor *small[SMALL] = {0};
        tj_tensor **res = n_out <= SMALL ? small : tjc_calloc((size_t)n_out, sizeof *res);
        if (!res) {
            st = tjc_error(TJ_ERR_MEMORY, "constant_fold: out of memory");
            break;
        }
        if (evaluate(n, res, n_out)) {
            st = replace(g, n, res, n_out);
            release_all(res, n_out); /* the constant nodes hold their own references */
        }
        if (res != small) tjc_free(res);
    }
    tjp_alias_free(&al);
    return st;
}
