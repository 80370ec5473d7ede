/* autodiff.c — deriving backward graphs (docs/autodiff.md).
 *
 * tj_autodiff splits a graph into PyTorch's Gradient layout:
 *   forward:  the graph, with the values backward needs appended as outputs
 *   backward: inputs  = a gradient per forward output, then the saved values
 *             outputs = the gradients of the inputs asked for
 * Values that need gradients are found forwards from the inputs asked for;
 * then the nodes are visited backwards and each one's rule (grad.h) appends
 * to the backward graph. A forward value becomes saved only when a rule reads
 * it, so saved values are exactly the ones backward reads. Ops whose rule
 * says they have no gradient stop gradients; an op that lists no rule at all
 * on a path that needs gradients is an error naming it.
 *
 * tj_grad_graph wires the two into one graph (inputs: the graph's, then a
 * gradient per output; outputs: the gradients asked for), which is an
 * ordinary graph: differentiating it again gives second derivatives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "grad.h"
#include "tjit/passes.h"

typedef struct diff {
    tj_graph *fwd, *bwd;
    tjg_graph_emitter emit;
    tjc_ptrmap needs;   /* fwd value -> 1 when it needs a gradient */
    tjc_ptrmap grad;    /* fwd value -> its gradient so far, a bwd value */
    tjc_ptrmap saved;   /* fwd value -> the bwd input standing for it */
    tj_value **saved_list;
    int n_saved, cap_saved;
    tj_node *node;      /* the forward node whose rule runs */
} diff;

static bool float_tensor(const tj_value *v) {
    const tj_type *t = tj_value_type(v);
    return t->kind == TJ_TYPE_TENSOR && (t->dtype == TJ_F32 || t->dtype == TJ_F64);
}

static bool incomplete(const tj_type *t) {
    if (t->kind != TJ_TYPE_TENSOR) return false;
    if (t->dtype == TJ_UNKNOWN || t->ndim == TJ_UNKNOWN) return true;
    for (int k = 0; k < t->ndim; k++)
        if (t->sizes[k] == TJ_UNKNOWN_DIM) return true;
    return false;
}

/* A graph read from text may leave values untyped; a gradient needs their
 * dtype (whether one flows) and sizes (its rule's shapes). So the outputs of
 * an op on the gradient's path get their types from its inputs' by the op's
 * shape rule; where that cannot be, the error names the value instead of
 * the gradient quietly stopping there. */
static tj_status complete_types(tj_node *n) {
    int n_in = tj_node_num_inputs(n), n_out = tj_node_num_outputs(n);
    bool need = false;
    for (int o = 0; o < n_out; o++) need |= incomplete(tj_value_type(tj_node_output(n, o)));
    if (!need) return TJ_OK;
    const tj_op_info *op = tj_node_op(n);
    const tj_type **in = tjc_calloc((size_t)(n_in ? n_in : 1), sizeof *in);
    tj_type *out = tjc_calloc((size_t)n_out, sizeof *out);
    tj_status st = in && out ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "autodiff: out of memory");
    for (int i = 0; !st && i < n_in; i++) {
        const tj_type *t = tj_value_type(tj_node_input(n, i));
        in[i] = t->kind == TJ_TYPE_NONE ? NULL : t;
    }
    int made = 0;
    if (!st && (st = tjg_infer_types(op, in, n_in, tj_node_attrs(n), out, n_out, &made)) == TJ_OK &&
        made != n_out)
        st = tjc_error(TJ_ERR_INTERNAL, "autodiff: %s typed %d outputs, expected %d", op->name, made,
                       n_out);
    for (int o = 0; !st && o < n_out; o++) st = tj_value_set_type(tj_node_output(n, o), &out[o]);
    /* sizes left unknown (a graph typed for several shapes) keep their types,
     * as before: only a dtype or rank nobody knows stops the gradient unseen */
    bool dtypes_known = true;
    for (int o = 0; o < n_out; o++) {
        const tj_type *t = tj_value_type(tj_node_output(n, o));
        dtypes_known &= t->kind != TJ_TYPE_TENSOR || (t->dtype != TJ_UNKNOWN && t->ndim != TJ_UNKNOWN);
    }
    if (st && st != TJ_ERR_MEMORY && dtypes_known) {
        tj_clear_error();
        st = TJ_OK;
    }
    if (st && st != TJ_ERR_MEMORY) {
        char cause[512];
        snprintf(cause, sizeof cause, "%s", tj_last_error());
        st = tjc_error(TJ_ERR_ARG, "autodiff: the outputs of %s (node %%%d) have no known type and "
                       "their inputs' types do not give one (%s); type them in the graph",
                       op->name, tj_node_id(n), cause);
    }
    tjc_free(in);
    tjc_free(out);
    return st;
}

/* The bwd value standing for fwd value v, saving v on first use. */
static tj_value *saved(diff *d, tj_value *v) {
    tj_value *s = tjc_ptrmap_get(&d->saved, v);
    if (s) return s;
    if (tj_node_kind_of(tj_value_node(v)) == TJ_NODE_NONE) return NULL;
    if (d->n_saved == d->cap_saved) {
        int cap = d->cap_saved ? 2 * d->cap_saved : 16;
        tj_value **grown = tjc_realloc(d->saved_list, sizeof *grown * (size_t)cap);
        if (!grown) return NULL;
        d->saved_list = grown;
        d->cap_saved = cap;
    }
    s = tj_graph_add_input(d->bwd, tj_value_type(v), NULL);
    if (!s || !tjc_ptrmap_put(&d->saved, v, s)) return NULL;
    d->saved_list[d->n_saved++] = v;
    return s;
}

static tjg_val rule_input(tjg_ctx *c, int i) {
    diff *d = c->driver;
    tj_value *v = tj_node_input(d->node, i);
    if (tj_node_kind_of(tj_value_node(v)) == TJ_NODE_NONE) return NULL;
    tj_value *s = saved(d, v);
    if (!s) c->status = tjc_last_or(TJ_ERR_MEMORY, "autodiff: out of memory");
    return s;
}

static tjg_val rule_output(tjg_ctx *c, int i) {
    diff *d = c->driver;
    tj_value *s = saved(d, tj_node_output(d->node, i));
    if (!s) c->status = tjc_last_or(TJ_ERR_MEMORY, "autodiff: out of memory");
    return s;
}

static tj_type rule_input_type(tjg_ctx *c, int i) {
    diff *d = c->driver;
    return *tj_value_type(tj_node_input(d->node, i));
}

static bool needs(const diff *d, const tj_value *v) { return tjc_ptrmap_has(&d->needs, v); }

/* Adds g to v's gradient. */
static tj_status accumulate(diff *d, tjg_ctx *c, tj_value *v, tj_value *g) {
    tj_value *old = tjc_ptrmap_get(&d->grad, v);
    tj_value *sum = old ? tjg_add(c, old, g) : g;
    if (!sum) return c->status ? c->status : TJ_ERR_INTERNAL;
    return tjc_ptrmap_put(&d->grad, v, sum) ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "autodiff: out of memory");
}

/* A write into a graph input that nothing reads afterwards (the tracer's
 * copy of an input's final value into it, when the model wrote the input
 * through a view): no gradient flows through it, and the input keeps none. */
static bool last_write_into_input(const tj_node *n) {
    tj_value *dst = tj_node_input(n, 0);
    if (tj_node_kind_of(tj_value_node(dst)) != TJ_NODE_PARAM) return false;
    for (int o = 0; o < tj_node_num_outputs(n); o++)
        if (tj_value_num_uses(tj_node_output(n, o))) return false;
    for (int u = 0; u < tj_value_num_uses(dst); u++) {
        const tj_node *user = tj_value_use(dst, u).user;
        if (user != n && !tj_node_is_before(user, n)) return false;
    }
    return true;
}

static tj_status mark_needs(diff *d, const bool *wrt) {
    tj_graph *g = d->fwd;
    for (int i = 0; i < tj_graph_num_inputs(g); i++)
        if (wrt[i]) {
            tj_value *v = tj_graph_input(g, i);
            if (!float_tensor(v))
                return tjc_error(TJ_ERR_DTYPE, "autodiff: input %d is not a floating-point tensor, "
                                 "so it has no gradient", i);
            if (!tjc_ptrmap_put(&d->needs, v, (void *)1))
                return tjc_error(TJ_ERR_MEMORY, "autodiff: out of memory");
        }
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n)) {
        bool any = false;
        for (int i = 0; i < tj_node_num_inputs(n); i++) any |= needs(d, tj_node_input(n, i));
        if (!any) continue;
        const tj_op_info *op = tj_node_op(n);
        if (!op)
            return tjc_error(TJ_ERR_UNSUPPORTED, "autodiff: node %%%d (%s) cannot be differentiated; "
                             "differentiate before fusion", tj_node_id(n), tj_node_name(n));
        const tjg_rule_entry *e = tjg_rule_for(op);
        if (!e)
            return tjc_error(TJ_ERR_UNSUPPORTED, "autodiff: %s (node %%%d) has no derivative rule",
                             op->name, tj_node_id(n));
        if (!e->rule) continue; /* no gradient flows through it */
        if (op->schema.mutates_self) {
            tj_value *dst = tj_node_input(n, 0);
            bool input = tj_node_kind_of(tj_value_node(dst)) == TJ_NODE_PARAM;
            if (!needs(d, dst) && last_write_into_input(n)) continue;
            if (input && needs(d, dst))
                return tjc_error(TJ_ERR_UNSUPPORTED, "autodiff: %s (node %%%d) writes in place into "
                                 "graph input %d, which requires a gradient: a leaf that requires "
                                 "grad cannot be written in place (PyTorch refuses it too); write "
                                 "into a clone of it", op->name, tj_node_id(n), tj_value_offset(dst));
            return tjc_error(TJ_ERR_UNSUPPORTED, "autodiff: %s (node %%%d) writes in place into a "
                             "value that needs a gradient; use its out-of-place form",
                             op->name, tj_node_id(n));
        }
        tj_status st = complete_types(n);
        if (st) return st;
        for (int o = 0; o < tj_node_num_outputs(n); o++)
            if (float_tensor(tj_node_output(n, o)) &&
                !tjc_ptrmap_put(&d->needs, tj_node_output(n, o), (void *)1))
                return tjc_error(TJ_ERR_MEMORY, "autodiff: out of memory");
    }
    return TJ_OK;
}

/* The rule's argument arrays: on the stack for up to SMALL operands, else
 * on the heap (a cat or chunk of hundreds of tensors, an unrolled sequence). */
enum { SMALL = 16 };

typedef struct rule_args {
    tjg_val grad_out_s[SMALL], grad_in_s[SMALL];
    bool want_s[SMALL];
    tjg_val *grad_out, *grad_in;
    bool *want;
} rule_args;

static bool rule_args_init(rule_args *a, int n_in, int n_out) {
    bool big_in = n_in > SMALL, big_out = n_out > SMALL;
    a->grad_in = big_in ? tjc_calloc((size_t)n_in, sizeof *a->grad_in) : a->grad_in_s;
    a->want = big_in ? tjc_calloc((size_t)n_in, sizeof *a->want) : a->want_s;
    a->grad_out = big_out ? tjc_calloc((size_t)n_out, sizeof *a->grad_out) : a->grad_out_s;
    return a->grad_in && a->want && a->grad_out;
}

static void rule_args_free(rule_args *a) {
    if (a->grad_in != a->grad_in_s) tjc_free(a->grad_in);
    if (a->want != a->want_s) tjc_free(a->want);
    if (a->grad_out != a->grad_out_s) tjc_free(a->grad_out);
}

static tj_status run_rule(diff *d, tj_node *n) {
    const tj_op_info *op = tj_node_op(n);
    const tjg_rule_entry *e = tjg_rule_for(op);
    int n_in = tj_node_num_inputs(n), n_out = tj_node_num_outputs(n);
    rule_args a;
    if (!rule_args_init(&a, n_in, n_out)) {
        rule_args_free(&a);
        return tjc_error(TJ_ERR_MEMORY, "autodiff: out of memory");
    }
    tjg_val *grad_out = a.grad_out, *grad_in = a.grad_in;
    bool *want = a.want;
    bool any_out = false, any_in = false;
    for (int o = 0; o < n_out; o++) any_out |= (grad_out[o] = tjc_ptrmap_get(&d->grad, tj_node_output(n, o))) != NULL;
    for (int i = 0; i < n_in; i++) any_in |= (want[i] = needs(d, tj_node_input(n, i)));
    if (!any_out || !any_in || !e || !e->rule) {
        rule_args_free(&a);
        return TJ_OK;
    }
    d->node = n;
    tjg_ctx c = {.e = &d->emit.base, .op = op, .attrs = tj_node_attrs(n), .n_in = n_in,
                 .n_out = n_out, .grad_out = grad_out, .needs = want, .grad_in = grad_in,
                 .input_fn = rule_input, .output_fn = rule_output,
                 .input_type_fn = rule_input_type, .driver = d};
    memset(grad_in, 0, sizeof(tjg_val) * (size_t)n_in);
    tj_status st = e->rule(&c);
    if (!st) st = c.status;
    for (int i = 0; !st && i < n_in; i++)
        if (want[i] && grad_in[i]) st = accumulate(d, &c, tj_node_input(n, i), grad_in[i]);
    if (st && !tj_last_status()) tjc_error(st, "autodiff: the rule of %s failed", op->name);
    rule_args_free(&a);
    return st;
}

/* aten::dropout in training returns no mask, so its gradient cannot be
 * formed: like PyTorch's JIT, differentiate native_dropout instead, whose
 * mask the backward graph saves. */
static tj_status dropout_with_mask(tj_graph *g) {
    const tj_op_info *dropout = tjc_op(TJ_OP_dropout), *native = tjc_op(TJ_OP_native_dropout);
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n)) {
        if (tj_node_op(n) != dropout) continue;
        const tj_attr *a = tj_node_attrs(n); /* p, train, generator */
        if (!a[1].b || !(a[0].f > 0 && a[0].f < 1)) continue;
        tj_value *x = tj_node_input(n, 0);
        const tj_type *tx = tj_value_type(x);
        tj_type types[2];
        int made = 0;
        tj_status st = tjg_infer_types(native, &tx, 1, a, types, 2, &made);
        tj_node *m = st ? NULL : tj_node_create_op(g, native, &x, 1, a, native->schema.n_attrs, 2);
        if (!m) return st ? st : tj_last_status();
        if ((st = tj_node_insert_before(m, n))) return st;
        for (int k = 0; k < 2 && !st; k++) st = tj_value_set_type(tj_node_output(m, k), &types[k]);
        if (st || (st = tj_value_replace_uses(tj_node_output(n, 0), tj_node_output(m, 0))) ||
            (st = tj_node_destroy(n)))
            return st;
        n = m;
    }
    return TJ_OK;
}

void tj_gradient_free(tj_gradient *gr) {
    if (!gr) return;
    tj_graph_free(gr->forward);
    tj_graph_free(gr->backward);
    tjc_free(gr->grad_of);
    memset(gr, 0, sizeof *gr);
}

static void diff_free(diff *d) {
    tjc_ptrmap_free(&d->needs);
    tjc_ptrmap_free(&d->grad);
    tjc_ptrmap_free(&d->saved);
    tjc_free(d->saved_list);
}

tj_status tj_autodiff(const tj_graph *g, const bool *wrt, tj_gradient *out) {
    if (!out) return tjc_error(TJ_ERR_ARG, "tj_autodiff: out is NULL");
    memset(out, 0, sizeof *out);
    if (!g) return tjc_last_or(TJ_ERR_ARG, "tj_autodiff: the graph is NULL");
    if (!wrt) return tjc_error(TJ_ERR_ARG, "tj_autodiff: wrt is NULL");
    diff d = {0};
    tjc_ptrmap_init(&d.needs);
    tjc_ptrmap_init(&d.grad);
    tjc_ptrmap_init(&d.saved);
    d.fwd = tj_graph_clone(g, NULL);
    d.bwd = tj_graph_new();
    tj_status st = d.fwd && d.bwd ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "tj_autodiff: out of memory");
    for (int i = 0; !st && i < tj_graph_num_inputs(g); i++)
        if (tj_graph_input_binding(g, i)) st = tj_graph_bind_input(d.fwd, i, tj_graph_input_binding(g, i));
    if (!st) st = dropout_with_mask(d.fwd);
    if (!st) st = tj_pass_functionalize(d.fwd); /* a write into a value of its own has a pure form */
    if (!st) st = mark_needs(&d, wrt);
    tjg_graph_emitter_init(&d.emit, d.bwd);
    int n_outputs = d.fwd ? tj_graph_num_outputs(d.fwd) : 0;
    /* one gradient input per forward output; the ones that need none are unused */
    tjg_ctx seed = {.e = &d.emit.base, .op = tjc_op(TJ_OP_add)};
    for (int o = 0; !st && o < n_outputs; o++) {
        tj_value *v = tj_graph_output(d.fwd, o);
        tj_value *gin = tj_graph_add_input(d.bwd, tj_value_type(v), NULL);
        if (!gin) st = tj_last_status();
        else if (needs(&d, v)) st = accumulate(&d, &seed, v, gin);
    }
    for (tj_node *n = d.fwd ? tj_block_last(tj_graph_block(d.fwd)) : NULL; !st && n; n = tj_node_prev(n))
        if (tj_node_kind_of(n) == TJ_NODE_OP) st = run_rule(&d, n);
    /* the gradients asked for; zeros where no path reaches an input */
    int n_grads = 0;
    int n_in = d.fwd ? tj_graph_num_inputs(d.fwd) : 0;
    out->grad_of = tjc_calloc((size_t)(n_in ? n_in : 1), sizeof(int));
    if (!st && !out->grad_of) st = tjc_error(TJ_ERR_MEMORY, "tj_autodiff: out of memory");
    for (int i = 0; !st && i < n_in; i++) {
        if (!wrt[i]) continue;
        tj_value *x = tj_graph_input(d.fwd, i);
        tj_value *gx = tjc_ptrmap_get(&d.grad, x);
        tjg_ctx zc = {.e = &d.emit.base, .op = tjc_op(TJ_OP_zeros_like)};
        if (!gx) gx = tjg_zeros_like(&zc, saved(&d, x));
        st = gx ? tj_graph_add_output(d.bwd, gx) : (zc.status ? zc.status : tj_last_status());
        out->grad_of[n_grads++] = i;
    }
    for (int s = 0; !st && s < d.n_saved; s++) st = tj_graph_add_output(d.fwd, d.saved_list[s]);
    if (!st) {
        out->forward = d.fwd;
        out->backward = d.bwd;
        out->n_outputs = n_outputs;
        out->n_saved = d.n_saved;
        out->n_grads = n_grads;
    } else {
        tj_graph_free(d.fwd);
        tj_graph_free(d.bwd);
        tjc_free(out->grad_of);
        out->grad_of = NULL;
    }
    diff_free(&d);
    return st;
}

tj_graph *tj_grad_graph(const tj_graph *g, const bool *wrt) {
    tj_gradient gr;
    if (tj_autodiff(g, wrt, &gr) != TJ_OK) return NULL;
    tj_graph *out = tj_graph_new();
    int n_in = tj_graph_num_inputs(g), n_out = gr.n_outputs;
    tj_value **fin = tjc_calloc((size_t)(n_in + 1), sizeof *fin);
    tj_value **fout = tjc_calloc((size_t)(n_out + gr.n_saved + 1), sizeof *fout);
    tj_value **bin = tjc_calloc((size_t)(n_out + gr.n_saved + 1), sizeof *bin);
    tj_value **bout = tjc_calloc((size_t)(gr.n_grads + 1), sizeof *bout);
    tj_status st = out && fin && fout && bin && bout ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "out of memory");
    for (int i = 0; !st && i < n_in; i++) {
        tj_value *gi = tj_graph_input(g, i);
        if (!(fin[i] = tj_graph_add_input(out, tj_value_type(gi), tj_value_name(gi)))) st = tj_last_status();
        else if (tj_graph_input_binding(g, i)) st = tj_graph_bind_input(out, i, tj_graph_input_binding(g, i));
    }
    for (int o = 0; !st && o < n_out; o++) /* one gradient per output */
        if (!(bin[o] = tj_graph_add_input(out, tj_value_type(tj_graph_output(g, o)), NULL))) st = tj_last_status();
    tj_node *end = out ? tj_block_return(tj_graph_block(out)) : NULL;
    if (!st) st = tj_graph_insert_before(end, gr.forward, fin, fout);
    for (int s = 0; !st && s < gr.n_saved; s++) bin[n_out + s] = fout[n_out + s];
    if (!st) st = tj_graph_insert_before(end, gr.backward, bin, bout);
    for (int k = 0; !st && k < gr.n_grads; k++) st = tj_graph_add_output(out, bout[k]);
    tjc_free(fin);
    tjc_free(fout);
    tjc_free(bin);
    tjc_free(bout);
    tj_gradient_free(&gr);
    if (st) {
        tj_graph_free(out);
        return NULL;
    }
    return out;
}
