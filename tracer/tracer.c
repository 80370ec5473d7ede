/* tracer.c — tj_trace: runs a model once with a recording hook installed and
 * builds its graph. Prefix tjt_.
 *
 * Every op the model calls (not the ops that kernels call inside themselves)
 * becomes one node. The tracer maps each tensor it has seen to the graph value
 * holding it, and keeps a reference to every such tensor until tracing ends,
 * so a tensor's address cannot be reused by another during the trace.
 *
 * Aliasing: each storage has a version, bumped whenever an op writes into it
 * in place. A mapping remembers the version it was made at. A write through a
 * view of a tensor made while tracing becomes the write's out-of-place form
 * and scatters into the view's base (views.c), so the graph stays free of
 * such writes; a view read after its storage was written is made again from
 * its base's current value, as PyTorch's functionalization does. The tensor
 * written in place directly is remapped to the op's output. A write that is
 * not the in-place form of another op (batch_norm's running statistics)
 * stays a write, and reading another view of that storage afterwards is an
 * error.
 *
 * Constants: a tensor made inside the trace (tj_zeros, tj_full, ...) becomes
 * a prim::Constant holding that tensor. Every replay shares the constant, so
 * the first write into its storage (directly or through a view) turns it into
 * a snapshot of its value at that point plus an aten::clone that the graph
 * reads instead: each replay then writes into a copy of its own, and the eager
 * run's later writes do not leak into the constant.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "tjit/runtime.h"
#include "tracer_internal.h"

static _Thread_local tracer *active;

void tjt_fail(tracer *tr, tj_status st, const char *fmt, ...) {
    if (tr->failed) return; /* the first failure names the cause */
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tjc_error(st, "tj_trace: %s", msg);
    tr->failed = true;
}

static bool hold(tracer *tr, tj_tensor *t) {
    if (tr->n_held == tr->cap_held) {
        int cap = tr->cap_held ? 2 * tr->cap_held : 64;
        tj_tensor **held = tjc_realloc(tr->held, sizeof *held * (size_t)cap);
        if (!held) return false;
        tr->held = held;
        tr->cap_held = cap;
    }
    tr->held[tr->n_held++] = tj_retain(t);
    return true;
}

uintptr_t tjt_version_of(const tracer *tr, const tj_tensor *t) {
    return (uintptr_t)tjc_ptrmap_get(&tr->version, t->storage);
}

void tjt_bump_version(tracer *tr, const tj_tensor *t) {
    if (!tjc_ptrmap_put(&tr->version, t->storage, (void *)(tjt_version_of(tr, t) + 1)))
        tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
}

/* Maps t to v as of its storage's current version. */
void tjt_map(tracer *tr, tj_tensor *t, tj_value *v) {
    bool known = tjc_ptrmap_has(&tr->value_of, t);
    if (!tjc_ptrmap_put(&tr->value_of, t, v) ||
        !tjc_ptrmap_put(&tr->stamp, t, (void *)(tjt_version_of(tr, t) + 1)) || (!known && !hold(tr, t)))
        tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
}

tj_value *tjt_append_node(tracer *tr, tj_node *n) {
    if (!n || tj_block_append(tj_graph_block(tr->g), n) != TJ_OK) {
        tjt_fail(tr, tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY, "cannot record a node: %s",
             tj_last_error());
        return NULL;
    }
    return tj_node_output(n, 0);
}

static tj_value *constant_value(tracer *tr, tj_tensor *t) {
    tj_value *v = tjt_append_node(tr, tj_node_create_tensor_constant(tr->g, t));
    if (v) tjt_map(tr, t, v);
    if (v && !tjc_ptrmap_put(&tr->constant_of, t->storage, v)) tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
    return v;
}

/* Before the first write into a constant's storage (see the top of the file):
 * replaces constant k by clone(snapshot of k) and returns the clone's value. */
static tj_value *privatize(tracer *tr, tj_value *k) {
    tj_node *kn = tj_value_node(k);
    tj_tensor *t = tj_node_tensor(kn), *snap = NULL;
    if (tjc_invoke_nested(tjc_op(TJ_OP_clone), &t, 1, NULL, &snap, 1) != 1) {
        tjt_fail(tr, tj_last_status(), "cannot copy a constant written in place: %s", tj_last_error());
        return NULL;
    }
    tj_node *copy = tj_node_create_tensor_constant(tr->g, snap);
    tj_release(snap); /* the node holds it */
    tj_value *cv = copy ? tj_node_output(copy, 0) : NULL;
    tj_node *clone = cv ? tj_node_create_op(tr->g, tjc_op(TJ_OP_clone), &cv, 1, NULL, 0, 1) : NULL;
    tj_value *out = clone ? tj_node_output(clone, 0) : NULL;
    if (!out || tj_node_insert_after(copy, kn) != TJ_OK || tj_node_insert_after(clone, copy) != TJ_OK ||
        tj_value_set_type(cv, tj_value_type(k)) != TJ_OK ||
        tj_value_set_type(out, tj_value_type(k)) != TJ_OK || tj_value_replace_uses(k, out) != TJ_OK ||
        tj_node_destroy(kn) != TJ_OK || !tjc_ptrmap_put(&tr->value_of, t, out) ||
        !tjc_ptrmap_put(&tr->constant_of, t->storage, NULL)) {
        tjt_fail(tr, tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY,
             "cannot copy a constant written in place: %s", tj_last_error());
        return NULL;
    }
    return out;
}

/* The value a tensor the model reads stands for; a tensor the tracer has not
 * seen is a parameter: a new graph input bound to it. */
tj_value *tjt_value_for(tracer *tr, tj_tensor *t, const char *reader, const char *arg) {
    tj_value *v = tjc_ptrmap_get(&tr->value_of, t);
    if (v) {
        uintptr_t stamp = (uintptr_t)tjc_ptrmap_get(&tr->stamp, t) - 1;
        if (stamp == tjt_version_of(tr, t)) return v;
        if ((v = tjt_view_again(tr, t)) || tr->failed) return v;
        tjt_fail(tr, TJ_ERR_UNSUPPORTED, "%s reads '%s', whose memory was written in place "
                 "through another view of it after it was made, by an op the graph keeps as a "
                 "write (not the in-place form of another op): clone the tensor before writing "
                 "into it", reader, arg);
        return NULL;
    }
    if (tjc_ptrmap_has(&tr->created, t)) return constant_value(tr, t);
    char name[64];
    const char *given = tj_tensor_name(t);
    if (!given) snprintf(name, sizeof name, "param_%d", tr->n_params);
    tj_type ty = tj_type_of_tensor(t);
    v = tj_graph_add_input(tr->g, &ty, given ? given : name);
    if (!v || tj_graph_bind_input(tr->g, tj_graph_num_inputs(tr->g) - 1, t) != TJ_OK) {
        tjt_fail(tr, TJ_ERR_MEMORY, "cannot add a parameter input: %s", tj_last_error());
        return NULL;
    }
    tr->n_params++;
    tjt_map(tr, t, v);
    if (!tjc_ptrmap_put(&tr->param_of, t, v)) tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
    return v;
}

static void *on_before(void *ctx, const tj_op_info *op, tj_tensor *const *in, int n_in,
                       const tj_attr *attrs, int n_attrs) {
    tracer *tr = ctx;
    pending *pd = &tr->pend;
    pd->op = NULL;
    if (tr->failed) return pd;
    if (n_in > pd->cap) {
        tj_value **values = tjc_realloc(pd->values, sizeof *values * (size_t)n_in);
        if (values) pd->values = values;
        tj_tensor **tensors = tjc_realloc(pd->tensors, sizeof *tensors * (size_t)n_in);
        if (tensors) pd->tensors = tensors;
        if (!values || !tensors) {
            tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
            return pd;
        }
        pd->cap = n_in;
    }
    const tj_schema *s = tj_op_schema(op);
    for (int i = 0; i < n_in && !tr->failed; i++) {
        pd->tensors[i] = in[i];
        if (!in[i]) {
            pd->values[i] = tjt_append_node(tr, tj_node_create(tr->g, TJ_NODE_NONE, NULL, 0, 1));
            continue;
        }
        const char *arg = tjc_input_name(op, i);
        pd->values[i] = tjt_value_for(tr, in[i], tj_op_name(op), arg);
    }
    for (int i = 0; i < n_in && !tr->failed && !s->has_tensor_list; i++) {
        tj_value *k = in[i] && s->args[s->tensor_pos[i]].mutated
                          ? tjc_ptrmap_get(&tr->constant_of, in[i]->storage) : NULL;
        tj_value *private = k ? privatize(tr, k) : NULL;
        for (int j = 0; private && j < n_in; j++)
            if (pd->values[j] == k) pd->values[j] = private;
    }
    pd->op = op;
    pd->n_in = n_in;
    pd->attrs = attrs;
    pd->n_attrs = n_attrs;
    return pd;
}

static void on_after(void *ctx, void *token, tj_tensor *const *out, int n_out) {
    tracer *tr = ctx;
    pending *pd = token;
    if (tr->failed || !pd->op || !out) return; /* a failed op: the model sees its error */
    if (tjt_write_through_view(tr, pd)) {
        pd->op = NULL;
        return;
    }
    tj_node *n = tj_node_create_op(tr->g, pd->op, pd->values, pd->n_in, pd->attrs, pd->n_attrs, n_out);
    if (!tjt_append_node(tr, n)) return;
    const tj_schema *s = tj_op_schema(pd->op);
    bool list = s->has_tensor_list;
    /* a write in place makes every other view of the storage stale ... */
    for (int k = 0; k < pd->n_in && !list; k++)
        if (s->args[s->tensor_pos[k]].mutated && pd->tensors[k]) tjt_bump_version(tr, pd->tensors[k]);
    /* ... but not the outputs (an in-place op's output is its input) ... */
    for (int i = 0; i < n_out; i++) {
        tj_type ty = tj_type_of_tensor(out[i]);
        if (tj_value_set_type(tj_node_output(n, i), &ty) != TJ_OK) {
            tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
            pd->op = NULL;
            return;
        }
        tjt_map(tr, out[i], tj_node_output(n, i));
        /* a view (or a reshape, flatten, contiguous that returned one) */
        if (s->aliases_self && pd->tensors[0] && out[i] != pd->tensors[0] &&
            tj_shares_storage(out[i], pd->tensors[0]))
            tjt_record_view(tr, pd->tensors[0], out, i, pd->op, pd->attrs, pd->n_attrs);
    }
    /* ... nor the other tensors written, which stand for the same value */
    for (int k = 0; k < pd->n_in && !list; k++) {
        tj_tensor *t = pd->tensors[k];
        if (!s->args[s->tensor_pos[k]].mutated || !t || (n_out && out[0] == t)) continue;
        if (!tjc_ptrmap_put(&tr->stamp, t, (void *)(tjt_version_of(tr, t) + 1)))
            tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
    }
    pd->op = NULL;
}

static void on_created(void *ctx, tj_tensor *t) {
    tracer *tr = ctx;
    if (!tjc_ptrmap_put(&tr->created, t, (void *)1) || !hold(tr, t)) tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
}

static void on_host_read(void *ctx, const tj_tensor *t, const char *what) {
    tracer *tr = ctx;
    char msg[300];
    const char *name = tj_tensor_name(t);
    snprintf(msg, sizeof msg, "%s read %s%s%s on the host while tracing: the graph keeps the "
             "value it had then as a constant", what, name ? "'" : "a tensor's data",
             name ? name : "", name ? "'" : "");
    tj_graph_add_warning(tr->g, msg);
}

/* ---- tj_trace -------------------------------------------------------------------- */

static void tracer_free(tracer *tr) {
    for (int i = 0; i < tr->n_held; i++) tj_release(tr->held[i]);
    tjc_free(tr->held);
    tjc_free(tr->pend.values);
    tjc_free(tr->pend.tensors);
    tjc_ptrmap_free(&tr->value_of);
    tjc_ptrmap_free(&tr->stamp);
    tjc_ptrmap_free(&tr->version);
    tjc_ptrmap_free(&tr->created);
    tjc_ptrmap_free(&tr->constant_of);
    tjt_views_free(tr);
}

static tj_status add_outputs(tracer *tr, tj_tensor **out, int n_out) {
    for (int i = 0; i < n_out && !tr->failed; i++) {
        tj_tensor *t = out[i];
        if (!t) {
            tjt_fail(tr, TJ_ERR_ARG, "the model returned TJ_OK but output %d is NULL", i);
            break;
        }
        tj_value *v = NULL;
        if (tjc_ptrmap_has(&tr->value_of, t) || tjc_ptrmap_has(&tr->created, t)) {
            char what[32];
            snprintf(what, sizeof what, "output %d", i);
            v = tjt_value_for(tr, t, "the model's return", what);
        } else {
            const char *name = tj_tensor_name(t);
            tjt_fail(tr, TJ_ERR_ARG, "output %d%s%s%s does not depend on the trace: it is not an "
                 "input, and no op made or read it while tracing", i, name ? " ('" : "",
                 name ? name : "", name ? "')" : "");
        }
        if (v && tj_graph_add_output(tr->g, v) != TJ_OK)
            tjt_fail(tr, TJ_ERR_MEMORY, "cannot add output %d: %s", i, tj_last_error());
    }
    return tr->failed ? tj_last_status() : TJ_OK;
}

static tj_graph *trace_once(tj_model_fn fn, void *ctx, tj_tensor *const *inputs, int n_in, int n_out) {
    tracer tr = {0};
    tjc_ptrmap_init(&tr.value_of);
    tjc_ptrmap_init(&tr.stamp);
    tjc_ptrmap_init(&tr.version);
    tjc_ptrmap_init(&tr.created);
    tjc_ptrmap_init(&tr.constant_of);
    tjc_ptrmap_init(&tr.link_of);
    tjc_ptrmap_init(&tr.param_of);
    tr.g = tj_graph_new();
    tj_tensor **out = tjc_calloc((size_t)(n_out ? n_out : 1), sizeof *out);
    if (!tr.g || !out) tjt_fail(&tr, TJ_ERR_MEMORY, "out of memory");
    for (int i = 0; i < n_in && !tr.failed; i++) {
        if (!inputs[i]) {
            tjt_fail(&tr, TJ_ERR_ARG, "input %d is NULL", i);
            break;
        }
        /* one tensor maps to one value: a second input would silently stand
         * for the first on replay */
        for (int j = 0; j < i; j++)
            if (inputs[j] == inputs[i])
                tjt_fail(&tr, TJ_ERR_ARG, "inputs %d and %d are the same tensor, which the graph "
                     "cannot tell apart on replay: pass distinct tensors (clone one)", j, i);
        if (tr.failed) break;
        tj_type ty = tj_type_of_tensor(inputs[i]);
        tj_value *v = tj_graph_add_input(tr.g, &ty, tj_tensor_name(inputs[i]));
        if (!v) tjt_fail(&tr, TJ_ERR_MEMORY, "cannot add input %d: %s", i, tj_last_error());
        else tjt_map(&tr, inputs[i], v);
        if (v && !tjc_ptrmap_put(&tr.param_of, inputs[i], v)) tjt_fail(&tr, TJ_ERR_MEMORY, "out of memory");
    }
    if (!tr.failed) {
        /* The model's outputs, like any tj_ function's results, belong to the
         * innermost open scope: this one, so that they are released here
         * whether or not the caller has a scope open. */
        tj_scope_begin();
        tj_record_hook hook = {&tr, on_before, on_after, on_created, on_host_read};
        const tj_record_hook *previous = tj_set_record_hook(&hook);
        active = &tr;
        tj_status st = fn(ctx, inputs, n_in, out, n_out);
        active = NULL;
        tj_set_record_hook(previous);
        if (st != TJ_OK && !tr.failed) {
            char cause[768];
            snprintf(cause, sizeof cause, "%s", tj_last_error());
            tjt_fail(&tr, st, "the model failed: %s", *cause ? cause : tj_status_name(st));
        }
        if (!tr.failed) add_outputs(&tr, out, n_out);
        tjt_copy_back_params(&tr);
        tj_scope_end();
    }
    tjc_free(out);
    tracer_free(&tr);
    if (tr.failed) {
        tj_graph_free(tr.g);
        return NULL;
    }
    return tr.g;
}

/* The first line where two texts differ, as "line N:\n  a\n  b". */
static void first_difference(const char *a, const char *b, char *buf, size_t n) {
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    int ka = (int)strcspn(la, "\n"), kb = (int)strcspn(lb, "\n");
    snprintf(buf, n, "line %d:\n  first trace:  %.*s\n  second trace: %.*s", line, ka, la, kb, lb);
}

tj_graph *tj_trace(tj_model_fn fn, void *ctx, tj_tensor *const *inputs, int n_in, int n_out,
                   const tj_trace_options *opts) {
    if (!fn) return tjc_error(TJ_ERR_ARG, "tj_trace: the model function is NULL"), NULL;
    if (n_in < 0 || n_out < 1 || (n_in > 0 && !inputs))
        return tjc_error(TJ_ERR_ARG, "tj_trace: needs an input array for n_in=%d inputs and at "
                         "least one output (n_out=%d)", n_in, n_out), NULL;
    if (active || tjc_op_depth() != 0)
        return tjc_error(TJ_ERR_UNSUPPORTED, "tj_trace: already tracing on this thread"), NULL;
    tj_graph *g = trace_once(fn, ctx, inputs, n_in, n_out);
    if (!g || !opts || !opts->check_inputs) return g;
    tj_graph *again = trace_once(fn, ctx, opts->check_inputs, n_in, n_out);
    if (!again) {
        tj_graph_free(g);
        return NULL;
    }
    unsigned flags = TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES; /* structure, not sizes */
    char *a = tj_graph_to_string(g, flags), *b = tj_graph_to_string(again, flags);
    tj_graph_free(again);
    if (!a || !b || strcmp(a, b) != 0) {
        char diff[1024] = "";
        if (a && b) first_difference(a, b, diff, sizeof diff);
        tjc_error(TJ_ERR_ARG, "tj_trace: the model traces differently on the check inputs, at %s",
                  diff);
        tj_graph_free(g);
        g = NULL;
    }
    tjc_free(a);
    tjc_free(b);
    return g;
}
