/* functionalize.c — writes in place into values of the graph's own become
 * their out-of-place forms, so the passes after it and autodiff see a pure
 * graph, as PyTorch's functionalization makes one.
 *
 * The tracer already records a write through a view as its out-of-place
 * form and scatters into the base (tracer/views.c); what stays is a write
 * straight into a value: %y = aten::mul_(%x, %s). When %x's memory is its
 * own and nothing else can see it (%x is made by an op that returns fresh
 * memory, and no view, reshape or list reads it), the write becomes
 * %y = aten::mul(%x, %s) (converted back to %x's dtype, as the write would
 * have stored it), and every read of %x after the write reads %y. A graph
 * input written so (the caller's memory) is functionalized the same way and
 * gets its final value with one aten::copy_ at the end of the graph, so a
 * replay updates it once. Writes into constants, into views, into values that
 * something aliases, and ops that write other arguments (batch_norm's
 * running statistics) stay as they are. */
#include <string.h>

#include "core/alloc.h"
#include "passes/grad.h"
#include "passes/passes_internal.h"

/* Whether n's result may share memory with its input 0: a view, an op that
 * may return its input (reshape, flatten, contiguous: the schema's
 * `Tensor(a)` return), a write in place, or a node that is not an op. */
static bool aliasing_op(const tj_node *n) {
    if (tj_node_kind_of(n) != TJ_NODE_OP) return true;
    const tj_schema *s = tj_op_schema(tj_node_op(n));
    return s->aliases_self || s->mutates_inputs;
}

/* A view nobody reads (the tracer leaves one behind when it makes a view
 * again after a write) cannot see the write. */
static bool read(const tj_node *n) {
    if (tj_node_kind_of(n) == TJ_NODE_OP && tj_op_schema(tj_node_op(n))->mutates_inputs) return true;
    for (int o = 0; o < tj_node_num_outputs(n); o++)
        if (tj_value_num_uses(tj_node_output(n, o))) return true;
    return false;
}

/* Whether user's input `index` shares memory with its result or is written:
 * input 0 of an op whose result may be it, a written argument, or any
 * input of a node that is not an op (a list holds its elements). */
static bool aliases_input(const tj_node *user, int index) {
    if (tj_node_kind_of(user) != TJ_NODE_OP) return true;
    const tj_schema *s = tj_op_schema(tj_node_op(user));
    if (!s->has_tensor_list && index < s->n_tensor_args && s->args[s->tensor_pos[index]].mutated)
        return true;
    return index == 0 && s->aliases_self;
}

/* Nothing but writer and plain reads sees v's memory. */
static bool unaliased(const tj_value *v, const tj_node *writer) {
    for (int u = 0; u < tj_value_num_uses(v); u++) {
        tj_use use = tj_value_use(v, u);
        if (use.user != writer && tj_node_kind_of(use.user) != TJ_NODE_RETURN &&
            aliases_input(use.user, use.index) && read(use.user))
            return false;
    }
    return true;
}

static bool is_input(const tj_value *v) { return tj_node_kind_of(tj_value_node(v)) == TJ_NODE_PARAM; }

/* %x's memory is the graph's own: made by an op that returns fresh memory. */
static bool own_memory(const tj_value *v, const tj_node *writer) {
    return !aliasing_op(tj_value_node(v)) && unaliased(v, writer);
}

/* copy_(input, value) at the end of the block: the input's final value. */
static tj_status copy_back(tj_graph *g, tj_value *input, tj_value *value) {
    tj_value *in[2] = {input, value};
    tj_node *c = tj_node_create_op(g, tjc_op(TJ_OP_copy_), in, 2, NULL, 0, 1);
    if (!c || tj_block_append(tj_graph_block(g), c) != TJ_OK ||
        tj_value_set_type(tj_node_output(c, 0), tj_value_type(input)) != TJ_OK)
        return tjc_last_or(TJ_ERR_MEMORY, "functionalize: out of memory");
    return TJ_OK;
}

/* n's out-of-place form before n, typed, in w's dtype. */
static tj_value *pure_form(tj_graph *g, tj_node *n, tj_value *w) {
    const tj_op_info *pure = tjc_op(tj_node_op(n)->inplace_of);
    int n_in = tj_node_num_inputs(n);
    const tj_type *in_types[TJ_MAX_ARGS];
    tj_value *in[TJ_MAX_ARGS];
    if (n_in > TJ_MAX_ARGS) return NULL;
    for (int i = 0; i < n_in; i++) in_types[i] = tj_value_type(in[i] = tj_node_input(n, i));
    tj_type t;
    int made = 0;
    if (tjg_infer_types(pure, in_types, n_in, tj_node_attrs(n), &t, 1, &made) != TJ_OK || made != 1)
        return NULL;
    tj_node *y = tj_node_create_op(g, pure, in, n_in, tj_node_attrs(n), tj_node_num_attrs(n), 1);
    if (!y || tj_node_insert_before(y, n) != TJ_OK ||
        tj_value_set_type(tj_node_output(y, 0), &t) != TJ_OK)
        return NULL;
    const tj_type *wt = tj_value_type(w);
    if (t.dtype == wt->dtype) return tj_node_output(y, 0);
    tj_attr to = {.dtype = (tj_dtype)wt->dtype};
    tj_value *yv = tj_node_output(y, 0);
    tj_node *cast = tj_node_create_op(g, tjc_op(TJ_OP_to_dtype), &yv, 1, &to, 1, 1);
    if (!cast || tj_node_insert_before(cast, n) != TJ_OK) return NULL;
    tj_type ct = t;
    ct.dtype = wt->dtype;
    return tj_value_set_type(tj_node_output(cast, 0), &ct) == TJ_OK ? tj_node_output(cast, 0) : NULL;
}

/* Reads of w after n (and of n's result) read y instead. Removing a use
 * moves the list's last into its place, which the walk down has passed. */
static tj_status redirect_later_reads(tj_node *n, tj_value *w, tj_value *y) {
    tj_status st = tj_value_replace_uses(tj_node_output(n, 0), y);
    for (int u = tj_value_num_uses(w) - 1; !st && u >= 0; u--) {
        tj_use use = tj_value_use(w, u);
        if (use.user != n && (tj_node_kind_of(use.user) == TJ_NODE_RETURN || !tj_node_is_before(use.user, n)))
            st = tj_node_set_input(use.user, use.index, y);
    }
    return st;
}

tj_status tj_pass_functionalize(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "functionalize: the graph is NULL");
    if (!tj_graph_writes_in_place(g)) return TJ_OK;
    tj_node *next;
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = next) {
        next = tj_node_next(n);
        const tj_op_info *op = tj_node_op(n);
        if (tj_node_kind_of(n) != TJ_NODE_OP || op->inplace_of < 0 || tj_node_num_outputs(n) != 1)
            continue;
        tj_value *w = tj_node_input(n, 0);
        bool input = is_input(w) && unaliased(w, n);
        if (!input && !own_memory(w, n)) continue;
        tj_value *y = pure_form(g, n, w);
        if (!y) return tjc_last_or(TJ_ERR_INTERNAL, "functionalize: cannot rewrite %s (node %%%d)",
                                   op->name, tj_node_id(n));
        tj_status st = redirect_later_reads(n, w, y);
        /* after the redirect, so that the copy's own use of the input stays;
         * later writes into y move the copy's read to their results */
        if (!st && input) st = copy_back(g, w, y);
        if (!st) st = tj_node_destroy(n);
        if (st) return st;
    }
    return TJ_OK;
}
