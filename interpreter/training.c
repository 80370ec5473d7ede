/* training.c — programs that derive gradients: tj_compile differentiates the
 * graph (passes/autodiff.c) and compiles the extended forward graph and the
 * backward graph; tj_run keeps the saved values the backward graph reads (the
 * tape); tj_backward runs the backward graph on them once, returns the
 * gradients of the inputs asked for and accumulates those of the parameters,
 * which tj_program_grad reads by name, or hands each parameter's gradient to
 * the gradient hook as soon as the backward program has made it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "passes/pipeline.h"
#include "program.h"

static bool float_input(const tj_graph *g, int i) {
    const tj_type *t = tj_value_type(tj_graph_input((tj_graph *)g, i));
    return t->kind == TJ_TYPE_TENSOR && (t->dtype == TJ_F32 || t->dtype == TJ_F64);
}

/* Runs the passes on the backward graph, then drops the saved values it no
 * longer reads (a rule's use that the passes removed), from both graphs: the
 * forward pass keeps only what backward will read. */
static tj_status prune_saved(tj_gradient *gr, const char *passes) {
    /* one run (the graph is verified once), then dce for what the passes left dead */
    const char *pipeline = passes ? passes : tj_default_pipeline();
    size_t len = strlen(pipeline) + sizeof ",dce";
    char *with_dce = tjc_malloc(len);
    if (!with_dce) return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory");
    snprintf(with_dce, len, "%s,dce", pipeline);
    tj_status st = tjp_run_passes_trusted(gr->backward, with_dce);
    tjc_free(with_dce);
    if (st) return st;
    /* all at once: one by one shifted the saved values after each */
    int n_in = tj_graph_num_inputs(gr->backward), n_out = tj_graph_num_outputs(gr->forward);
    bool *unread = tjc_calloc((size_t)(n_in > n_out ? n_in : n_out) + 1, sizeof *unread);
    if (!unread) return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory");
    int n_unread = 0;
    for (int s = 0; s < gr->n_saved; s++)
        n_unread += unread[gr->n_outputs + s] =
            tj_value_num_uses(tj_graph_input(gr->backward, gr->n_outputs + s)) == 0;
    /* the forward graph's outputs are its n_outputs results, then the saved values, as the
     * backward graph's inputs are the results' gradients, then the saved values */
    if (n_unread) st = tj_block_remove_inputs(tj_graph_block(gr->backward), unread);
    if (n_unread && !st) st = tj_block_remove_outputs(tj_graph_block(gr->forward), unread);
    if (!st) gr->n_saved -= n_unread;
    tjc_free(unread);
    return st;
}

tj_program *tji_compile_training(const tj_graph *g, const tj_compile_options *opts) {
    int n_in = tj_graph_num_inputs(g);
    bool *wrt = tjc_calloc((size_t)(n_in ? n_in : 1), sizeof(bool));
    if (!wrt) return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory"), NULL;
    int any = 0;
    for (int i = 0, k = 0; i < n_in; i++) {
        if (tj_graph_input_binding(g, i)) wrt[i] = opts->grad_parameters && float_input(g, i);
        else wrt[i] = opts->requires_grad ? opts->requires_grad[k++] : false;
        any += wrt[i];
    }
    if (!any) {
        tjc_free(wrt);
        return tjc_error(TJ_ERR_ARG, "tj_compile: gradients were asked for, but no input or "
                         "parameter takes one"), NULL;
    }
    tj_gradient gr;
    tj_status st = tj_autodiff(g, wrt, &gr);
    tjc_free(wrt);
    if (st) return NULL;
    tj_compile_options plain = *opts;
    plain.requires_grad = NULL;
    plain.grad_parameters = false;
    if ((st = prune_saved(&gr, opts->passes))) {
        tj_gradient_free(&gr);
        return NULL;
    }
    /* the programs take autodiff's graphs (no copies); the backward one
     * already ran its passes in prune_saved */
    tj_graph *fw = gr.forward, *bw = gr.backward;
    gr.forward = gr.backward = NULL;
    tj_program *p = tji_compile_owned(fw, fw, &plain, NULL);
    tj_program *b = p ? tji_compile_owned(bw, bw, &plain, "") : NULL;
    if (!p) tj_graph_free(bw);
    if (!b) {
        tj_program_free(p);
        tj_gradient_free(&gr);
        return NULL;
    }
    p->backward = b;
    p->n_user_outputs = gr.n_outputs;
    p->n_grads = gr.n_grads;
    p->grad_of = gr.grad_of;
    gr.grad_of = NULL;
    p->param_grad = tjc_calloc((size_t)(p->n_graph_inputs ? p->n_graph_inputs : 1), sizeof(tj_tensor *));
    pthread_mutex_init(&p->tape_lock, NULL);
    tj_gradient_free(&gr);
    if (!p->param_grad) {
        tj_program_free(p);
        return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory"), NULL;
    }
    return p;
}

static void release_all(tj_tensor **t, int n) {
    for (int i = 0; t && i < n; i++) {
        tj_release(t[i]);
        t[i] = NULL;
    }
}

void tji_training_free(tj_program *p) {
    if (!p->backward) return;
    tj_program_free(p->backward);
    release_all(p->tape, p->n_tape);
    tjc_free(p->tape);
    release_all(p->param_grad, p->n_graph_inputs);
    tjc_free(p->param_grad);
    tjc_free(p->grad_of);
    pthread_mutex_destroy(&p->tape_lock);
}

tj_status tji_tape_store(tj_program *p, tj_tensor **saved, int n) {
    tj_tensor **tape = tjc_malloc(sizeof(tj_tensor *) * (size_t)(n ? n : 1));
    if (!tape) {
        release_all(saved, n);
        return tjc_error(TJ_ERR_MEMORY, "tj_run: out of memory keeping the values saved for "
                         "tj_backward");
    }
    memcpy(tape, saved, sizeof(tj_tensor *) * (size_t)n);
    pthread_mutex_lock(&p->tape_lock);
    release_all(p->tape, p->n_tape);
    tjc_free(p->tape);
    p->tape = tape;
    p->n_tape = n;
    p->tape_full = true;
    p->ran = true;
    pthread_mutex_unlock(&p->tape_lock);
    return TJ_OK;
}

/* Takes the tape (the caller releases it); an error when there is none. */
static tj_status take_tape(tj_program *p, tj_tensor ***tape, int *n) {
    pthread_mutex_lock(&p->tape_lock);
    tj_status st = TJ_OK;
    if (!p->tape_full) {
        st = tjc_error(TJ_ERR_ARG, p->ran ? "tj_backward: the gradients of the last tj_run were "
                       "already computed; run forward again first"
                       : "tj_backward: no forward to differentiate; call tj_run first");
    } else {
        *tape = p->tape;
        *n = p->n_tape;
        p->tape = NULL;
        p->n_tape = 0;
        p->tape_full = false;
    }
    pthread_mutex_unlock(&p->tape_lock);
    return st;
}

/* A gradient seed where the output lives. */
static tj_tensor *filled_like(const tj_type *t, double value) {
    tj_device dev = {t->device_type == TJ_CUDA ? TJ_CUDA : TJ_CPU,
                     t->device_type == TJ_CUDA ? t->device_index : 0};
    return tj_full_on(t->sizes, t->ndim, value, (tj_dtype)t->dtype, dev);
}

/* The backward program's "output ready": a parameter's gradient goes to the
 * hook; an input's waits for the end of tj_backward. */
static tj_status grad_ready(void *ctx, int k, tj_tensor *grad, int remaining) {
    tj_program *p = ctx;
    int gi = p->grad_of[k];
    if (!p->bound[gi]) return TJ_OK;
    tj_clear_error();
    tj_status st = p->hook.ready(p->hook.ctx, gi, grad, remaining);
    if (st && tj_last_status() == TJ_OK) {
        const char *name = tj_value_name(tj_graph_input(p->graph, gi));
        st = tjc_error(st, "tj_backward: the gradient hook refused the gradient of '%s' (%s)",
                       name ? name : "?", tj_status_name(st));
    }
    return st;
}

/* Calls the hook's finish with the backward status; returns what tj_backward
 * returns: the backward status (its message kept), else finish's. */
static tj_status finish_hook(tj_program *p, tj_status st) {
    tj_grad_hook h = p->hook; /* finish may remove the hook */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st ? tj_last_error() : "");
    tj_clear_error();
    tj_status fst = h.finish ? h.finish(h.ctx, st) : TJ_OK;
    if (st) return tjc_error(st, "%s", msg);
    if (fst && tj_last_status() == TJ_OK)
        tjc_error(fst, "tj_backward: the gradient hook's finish failed (%s)", tj_status_name(fst));
    return fst;
}

static tj_status accumulate(tj_program *p, int gi, tj_tensor *grad) {
    if (!p->param_grad[gi]) {
        p->param_grad[gi] = tj_retain(grad);
        return TJ_OK;
    }
    tj_tensor *args[2] = {p->param_grad[gi], grad}, *res;
    tj_attr alpha = {.scalar = tj_scalar_int(1)};
    if (tjc_invoke_nested(tjc_op(TJ_OP_add_), args, 2, &alpha, &res, 1) != 1) return tj_last_status();
    tj_release(res);
    return TJ_OK;
}

tj_status tj_backward(tj_program *p, tj_tensor *const *grad_outputs, tj_tensor **grad_inputs) {
    if (!p) return tjc_last_or(TJ_ERR_ARG, "tj_backward: program is NULL");
    if (!p->backward)
        return tjc_error(TJ_ERR_ARG, "tj_backward: the program was compiled without gradients "
                         "(set requires_grad or grad_parameters in tj_compile_options)");
    bool hooked = p->has_hook;
    tj_tensor **tape = NULL;
    int n_tape = 0;
    tj_status st = take_tape(p, &tape, &n_tape);
    if (st) return hooked ? finish_hook(p, st) : st;
    tj_program *b = p->backward;
    int n_out = p->n_user_outputs, n_b = b->n_user;
    tj_tensor **in = tjc_calloc((size_t)(n_b ? n_b : 1), sizeof(tj_tensor *));
    tj_tensor **grads = tjc_calloc((size_t)(p->n_grads ? p->n_grads : 1), sizeof(tj_tensor *));
    if (!in || !grads) st = tjc_error(TJ_ERR_MEMORY, "tj_backward: out of memory");
    /* the gradients of ones made here are this call's own: the hook runs in
     * the caller's scope, so none is open while the backward program runs */
    tj_scope_begin();
    for (int o = 0; !st && o < n_out; o++) {
        const tj_type *t = tj_value_type(tj_graph_input(b->graph, b->user_input[o]));
        in[o] = grad_outputs && grad_outputs[o] ? grad_outputs[o]
                                                : tj_retain(filled_like(t, tj_dtype_is_float((tj_dtype)t->dtype) ? 1.0 : 0.0));
        if (!in[o]) st = tj_last_status();
    }
    tj_scope_end();
    for (int s = 0; !st && s < n_tape; s++) in[n_out + s] = tape[s];
    if (!st && n_out + n_tape != n_b)
        st = tjc_error(TJ_ERR_INTERNAL, "tj_backward: %d saved values for %d inputs", n_tape, n_b - n_out);
    tji_ready ready = {grad_ready, p};
    if (!st) st = tji_run_ready(b, in, grads, hooked ? &ready : NULL); /* grads are this call's */
    int user_k = 0;
    bool filled = !st && grad_inputs; /* grad_inputs are this call's from here on */
    for (int i = 0; !st && grad_inputs && i < p->n_graph_inputs; i++)
        if (!p->bound[i]) grad_inputs[user_k++] = NULL;
    for (int k = 0; !st && k < p->n_grads; k++) {
        int gi = p->grad_of[k];
        if (p->bound[gi]) { /* a parameter: accumulated here, or by the hook */
            if (!hooked) st = accumulate(p, gi, grads[k]);
        } else if (grad_inputs) { /* an input: returned like any result */
            int k_user = 0;
            for (int j = 0; j < gi; j++) k_user += !p->bound[j];
            grad_inputs[k_user] = tj_retain(grads[k]);
        }
    }
    if (hooked) st = finish_hook(p, st);
    if (grad_inputs && !st && !tjc_scope_reserve(p->n_user)) st = TJ_ERR_MEMORY;
    if (filled && st) release_all(grad_inputs, p->n_user);
    for (int k = 0; grad_inputs && !st && k < p->n_user; k++)
        if (grad_inputs[k]) tjc_scope_track(grad_inputs[k]);
    for (int o = 0; in && o < n_out; o++)
        if (!(grad_outputs && grad_outputs[o])) tj_release(in[o]);
    release_all(grads, p->n_grads);
    release_all(tape, n_tape);
    tjc_free(tape);
    tjc_free(in);
    tjc_free(grads);
    return st;
}

/* The graph input index of the parameter named name, for fn's messages. */
static tj_status find_param(const tj_program *p, const char *fn, const char *name, int *gi) {
    for (int i = 0; i < p->n_graph_inputs; i++) {
        const char *n = tj_value_name(tj_graph_input(p->graph, i));
        if (!n || strcmp(n, name) != 0) continue;
        if (!p->bound[i])
            return tjc_error(TJ_ERR_ARG, "%s: '%s' is an input, not a parameter; its gradient "
                             "comes from tj_backward", fn, name);
        *gi = i;
        return TJ_OK;
    }
    return tjc_error(TJ_ERR_ARG, "%s: the program has no parameter named '%s'", fn, name);
}

tj_tensor *tj_program_grad(const tj_program *p, const char *name) {
    if (!p || !name) return tjc_error(TJ_ERR_ARG, "tj_program_grad: NULL argument"), NULL;
    int i;
    if (find_param(p, "tj_program_grad", name, &i)) return NULL;
    if (!p->backward || !p->param_grad[i])
        return tjc_error(TJ_ERR_ARG, "tj_program_grad: '%s' has no gradient%s", name,
                         p->backward ? " yet (call tj_backward)" : " (compiled without "
                         "grad_parameters)"), NULL;
    if (!tjc_scope_reserve(1)) return NULL;
    tj_tensor *g = tj_retain(p->param_grad[i]);
    tjc_scope_track(g);
    return g;
}

tj_status tj_program_set_grad(tj_program *p, const char *name, tj_tensor *grad) {
    if (!p || !name) return tjc_error(TJ_ERR_ARG, "tj_program_set_grad: NULL argument");
    int i;
    tj_status st = find_param(p, "tj_program_set_grad", name, &i);
    if (st) return st;
    bool takes_grad = false;
    for (int k = 0; p->backward && k < p->n_grads; k++) takes_grad |= p->grad_of[k] == i;
    if (!takes_grad)
        return tjc_error(TJ_ERR_ARG, "tj_program_set_grad: '%s' takes no gradient%s", name,
                         p->backward ? "" : " (the program was compiled without gradients: set "
                         "grad_parameters in tj_compile_options)");
    const tj_tensor *param = p->bound[i];
    if (grad) {
        char want[TJC_SIZES_BUF], got[TJC_SIZES_BUF];
        if (tj_tensor_dtype(grad) != tj_tensor_dtype(param))
            return tjc_error(TJ_ERR_DTYPE, "tj_program_set_grad: the gradient of '%s' must be %s "
                             "like the parameter, not %s", name,
                             tj_dtype_name(tj_tensor_dtype(param)), tj_dtype_name(tj_tensor_dtype(grad)));
        bool same = tj_ndim(grad) == tj_ndim(param);
        for (int d = 0; same && d < tj_ndim(param); d++) same = tj_sizes(grad)[d] == tj_sizes(param)[d];
        if (!same)
            return tjc_error(TJ_ERR_SHAPE, "tj_program_set_grad: the gradient of '%s' must have "
                             "the parameter's sizes %s, not %s", name,
                             tjc_fmt_sizes(want, sizeof want, tj_sizes(param), tj_ndim(param)),
                             tjc_fmt_sizes(got, sizeof got, tj_sizes(grad), tj_ndim(grad)));
        if (!tjc_same_device(tj_tensor_device(grad), tj_tensor_device(param)))
            return tjc_error(TJ_ERR_DEVICE, "tj_program_set_grad: the gradient of '%s' must be on "
                             "the parameter's device", name);
    }
    tj_release(p->param_grad[i]);
    p->param_grad[i] = tj_retain(grad);
    return TJ_OK;
}

tj_status tj_program_set_grad_hook(tj_program *p, const tj_grad_hook *hook) {
    if (!p) return tjc_error(TJ_ERR_ARG, "tj_program_set_grad_hook: program is NULL");
    if (!p->backward)
        return tjc_error(TJ_ERR_ARG, "tj_program_set_grad_hook: the program was compiled without "
                         "gradients (set grad_parameters in tj_compile_options)");
    if (!hook) {
        memset(&p->hook, 0, sizeof p->hook);
        p->has_hook = false;
        return TJ_OK;
    }
    if (!hook->ready)
        return tjc_error(TJ_ERR_ARG, "tj_program_set_grad_hook: the hook's ready is NULL");
    if (p->has_hook)
        return tjc_error(TJ_ERR_ARG, "tj_program_set_grad_hook: a gradient hook is installed "
                         "already; remove it first (tj_program_set_grad_hook(p, NULL))");
    p->hook = *hook;
    p->has_hook = true;
    return TJ_OK;
}

void tj_program_zero_grad(tj_program *p) {
    if (!p) tjc_last_or(TJ_ERR_ARG, "tj_program_zero_grad: program is NULL");
    if (p && p->param_grad) release_all(p->param_grad, p->n_graph_inputs);
}

tj_status tj_program_saved(const tj_program *p, int *n_tensors, int64_t *n_bytes) {
    if (!p) return tjc_error(TJ_ERR_ARG, "tj_program_saved: program is NULL");
    int n = 0;
    int64_t bytes = 0;
    if (p->backward) {
        pthread_mutex_lock((pthread_mutex_t *)&p->tape_lock);
        if (p->tape_full)
            for (int i = 0; i < p->n_tape; i++) {
                n++;
                bytes += tj_numel(p->tape[i]) * (int64_t)tj_dtype_size(tj_tensor_dtype(p->tape[i]));
            }
        pthread_mutex_unlock((pthread_mutex_t *)&p->tape_lock);
    }
    if (n_tensors) *n_tensors = n;
    if (n_bytes) *n_bytes = bytes;
    return TJ_OK;
}

const tj_graph *tj_program_backward_graph(const tj_program *p) {
    if (!p) return tjc_last_or(TJ_ERR_ARG, "tj_program_backward_graph: program is NULL"), NULL;
    return p && p->backward ? p->backward->graph : NULL;
}
