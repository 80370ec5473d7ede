/* program.c — compiled programs: tj_compile lowers a verified copy of a graph
 * to register code and binds its parameters; tj_run checks the inputs against
 * the traced types and runs the code in a frame of its own, so one program can
 * run on several threads at once. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "passes/pipeline.h"
#include "profile.h"
#include "program.h"

void tj_program_free(tj_program *p) {
    if (!p) return;
    tji_training_free(p);
    for (int i = 0; i < atomic_load(&p->n_plans); i++) tji_plan_free(p->plans[i]);
    pthread_mutex_destroy(&p->plan_lock);
    tjc_free(p->plan_error);
    tji_code_free(&p->code);
    for (int i = 0; p->bound && i < p->n_graph_inputs; i++) tj_release(p->bound[i]);
    tjc_free(p->bound);
    tjc_free(p->user_input);
    tj_graph_free(p->graph);
    tjc_free(p);
}

tj_program *tj_compile(const tj_graph *g, const tj_compile_options *opts) {
    if (!g) return tjc_last_or(TJ_ERR_ARG, "tj_compile: graph is NULL"), NULL;
    if (tj_graph_verify(g) != TJ_OK) return NULL;
    if (opts && (opts->requires_grad || opts->grad_parameters)) return tji_compile_training(g, opts);
    return tji_compile_plain(g, opts);
}

/* Adds the plan of the graph inputs in[] (the lock held); false when the
 * program replays op by op instead. */
static tji_plan *add_plan(tj_program *p, const tji_sig_entry *sig) {
    if (p->plan_refused || p->opts.dynamic_replay || atomic_load(&p->n_plans) == TJI_MAX_PLANS)
        return NULL;
    tji_plan *plan = tji_plan_build(&p->code, sig);
    if (!plan && tj_last_status() == TJ_ERR_MEMORY) {
        /* memory was short: this run replays op by op, a later one plans again */
        tj_clear_error();
        return NULL;
    }
    if (!plan) {
        /* a program whose code cannot be planned for one signature (a node on
         * a device without planned kernels) cannot be for others either */
        p->plan_refused = true;
        tjc_free(p->plan_error);
        p->plan_error = tjc_strdup(tj_last_error());
        tj_clear_error(); /* replay goes on op by op: not an error of tj_run's caller */
        return NULL;
    }
    int n = atomic_load(&p->n_plans);
    p->plans[n] = plan;
    atomic_store_explicit(&p->n_plans, n + 1, memory_order_release);
    return plan;
}

/* Plans the traced signature at compile time, when the graph's input types
 * give every input's geometry (parameters: their tensors'). */
static void plan_traced_signature(tj_program *p) {
    int n = p->code.n_inputs;
    tji_sig_entry *sig = tjc_calloc((size_t)(n ? n : 1), sizeof *sig);
    if (!sig) return;
    bool complete = true;
    for (int i = 0; i < n && complete; i++) {
        if (p->bound[i]) {
            tji_signature_of(&p->bound[i], 1, &sig[i]);
            continue;
        }
        const tj_type *t = tj_value_type(tj_graph_input(p->graph, i));
        complete = t->kind == TJ_TYPE_TENSOR && t->dtype != TJ_UNKNOWN && t->ndim != TJ_UNKNOWN &&
                   t->device_type != TJ_UNKNOWN;
        for (int d = 0; complete && d < t->ndim; d++)
            complete = t->sizes[d] != TJ_UNKNOWN_DIM && t->strides[d] != TJ_UNKNOWN_DIM;
        if (!complete) break;
        tji_sig_entry *e = &sig[i];
        e->present = true;
        e->dtype = (tj_dtype)t->dtype;
        e->device = (tj_device){(tj_device_type)t->device_type,
                                t->device_type == TJ_CPU ? 0 : t->device_index};
        e->ndim = t->ndim;
        memcpy(e->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        memcpy(e->strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    }
    if (complete) {
        pthread_mutex_lock(&p->plan_lock);
        add_plan(p, sig);
        pthread_mutex_unlock(&p->plan_lock);
    }
    tjc_free(sig);
}

/* The plan for the graph inputs in[], made when new; NULL: replay op by op. */
static tji_plan *plan_for(const tj_program *cp, tj_tensor *const *in) {
    tj_program *p = (tj_program *)cp; /* the plan cache is the program's own state */
    int n = atomic_load_explicit(&p->n_plans, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (tji_plan_matches(p->plans[i], in)) return p->plans[i];
    if (p->plan_refused || p->opts.dynamic_replay || n == TJI_MAX_PLANS) return NULL;
    pthread_mutex_lock(&p->plan_lock);
    tji_plan *plan = NULL;
    n = atomic_load(&p->n_plans);
    for (int i = 0; i < n && !plan; i++)
        if (tji_plan_matches(p->plans[i], in)) plan = p->plans[i];
    if (!plan) {
        tji_sig_entry *sig = tjc_calloc((size_t)(p->code.n_inputs ? p->code.n_inputs : 1), sizeof *sig);
        if (sig) {
            tji_signature_of(in, p->code.n_inputs, sig);
            for (int i = 0; i < p->code.n_inputs; i++)
                if (p->code.input_regs[i] < 0) sig[i].present = false;
            plan = add_plan(p, sig);
            tjc_free(sig);
        }
    }
    pthread_mutex_unlock(&p->plan_lock);
    return plan;
}

tj_program *tji_compile_plain(const tj_graph *g, const tj_compile_options *opts) {
    return tji_compile_owned(tj_graph_clone(g, NULL), g, opts, NULL);
}

tj_program *tji_compile_owned(tj_graph *own, const tj_graph *g, const tj_compile_options *opts,
                              const char *passes) {
    tj_program *p = tjc_calloc(1, sizeof *p);
    if (!p) {
        tj_graph_free(own);
        return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory"), NULL;
    }
    if (opts) p->opts = *opts;
    pthread_mutex_init(&p->plan_lock, NULL);
    p->graph = own;
    int n_inputs = p->graph ? tj_graph_num_inputs(p->graph) : 0;
    p->bound = tjc_calloc((size_t)(n_inputs ? n_inputs : 1), sizeof(tj_tensor *));
    p->user_input = tjc_calloc((size_t)(n_inputs ? n_inputs : 1), sizeof(int));
    if (!p->graph) { /* the clone's own message says why */
        tj_program_free(p);
        return tjc_last_or(TJ_ERR_INTERNAL, "tj_compile: copying the graph failed"), NULL;
    }
    if (!p->bound || !p->user_input) {
        tj_program_free(p);
        return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory"), NULL;
    }
    p->n_graph_inputs = n_inputs;
    for (int i = 0; i < n_inputs; i++) {
        p->bound[i] = tj_retain(tj_graph_input_binding(g, i));
        if (!p->bound[i]) p->user_input[p->n_user++] = i;
        /* tj_graph_clone copies nodes, not bindings: tj_program_graph shows them too */
        else if (g != p->graph && tj_graph_bind_input(p->graph, i, p->bound[i]) != TJ_OK) {
            tj_program_free(p);
            return NULL;
        }
    }
    /* the passes rewrite the program's own graph; inputs keep their positions */
    if (!passes) passes = p->opts.passes ? p->opts.passes : tj_default_pipeline();
    if (*passes && tjp_run_passes_trusted(p->graph, passes) != TJ_OK) {
        tj_program_free(p);
        return NULL;
    }
    const char *backend_name = p->opts.backend ? p->opts.backend : tjf_default_backend_name();
    const tjf_backend *backend = tjf_find_backend(backend_name);
    if (!backend) {
        tjc_error(TJ_ERR_ARG, "tj_compile: no fusion backend named '%s'%s", backend_name,
                  p->opts.backend ? "" : " (from TJIT_BACKEND)");
        tj_program_free(p);
        return NULL;
    }
    if (tji_lower(p->graph, backend, &p->code) != TJ_OK) {
        tj_program_free(p);
        return NULL;
    }
    plan_traced_signature(p);
    return p;
}

/* A NULL program: keeps an error already pending (it names the call that
 * returned the NULL, e.g. tj_compile), else names this one. */
#define PROGRAM_GET(fn, expr, bad) \
    do {                              \
        if (!p) return tjc_last_or(TJ_ERR_ARG, fn ": program is NULL"), bad; \
        return expr;                  \
    } while (0)
int tj_program_num_inputs(const tj_program *p) { PROGRAM_GET("tj_program_num_inputs", p->n_user, -1); }
int tj_program_num_outputs(const tj_program *p) {
    PROGRAM_GET("tj_program_num_outputs", p->backward ? p->n_user_outputs : p->code.n_outputs, -1);
}
const tj_graph *tj_program_graph(const tj_program *p) {
    PROGRAM_GET("tj_program_graph", p->graph, NULL);
}
char *tj_program_code_to_string(const tj_program *p) {
    PROGRAM_GET("tj_program_code_to_string", tji_code_to_string(&p->code), NULL);
}

static tj_status check_input(const tj_program *p, int k, const tj_tensor *t) {
    int gi = p->user_input[k];
    tj_value *v = tj_graph_input(p->graph, gi);
    const char *name = tj_value_name(v) ? tj_value_name(v) : "";
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_run: input %d%s%s%s is NULL", k, *name ? " ('" : "",
                               name, *name ? "')" : "");
    const tj_type *ty = tj_value_type(v);
    if (ty->kind != TJ_TYPE_TENSOR) return TJ_OK;
    char got[TJC_SIZES_BUF], want[TJC_SIZES_BUF];
    if (ty->dtype != TJ_UNKNOWN && ty->dtype != (int)tj_tensor_dtype(t))
        return tjc_error(TJ_ERR_DTYPE, "tj_run: input %d%s%s%s is %s but the program was traced "
                         "with %s", k, *name ? " ('" : "", name, *name ? "')" : "",
                         tj_dtype_name(tj_tensor_dtype(t)), tj_dtype_name((tj_dtype)ty->dtype));
    if (ty->device_type != TJ_UNKNOWN && ty->device_type != (int)tj_tensor_device(t).type)
        return tjc_error(TJ_ERR_DEVICE, "tj_run: input %d%s%s%s is on another device than the "
                         "traced one", k, *name ? " ('" : "", name, *name ? "')" : "");
    if (ty->ndim == TJ_UNKNOWN) return TJ_OK;
    bool same_rank = ty->ndim == tj_ndim(t), same_sizes = same_rank;
    for (int d = 0; same_sizes && d < ty->ndim; d++)
        same_sizes = ty->sizes[d] == TJ_UNKNOWN_DIM || ty->sizes[d] == tj_sizes(t)[d];
    if (same_sizes || (same_rank && p->opts.allow_size_change)) return TJ_OK;
    int64_t traced[TJ_MAX_DIMS];
    for (int d = 0; d < ty->ndim; d++) traced[d] = ty->sizes[d] == TJ_UNKNOWN_DIM ? -1 : ty->sizes[d];
    return tjc_error(TJ_ERR_SHAPE, "tj_run: input %d%s%s%s has sizes %s but the program was "
                     "traced with %s%s", k, *name ? " ('" : "", name, *name ? "')" : "",
                     tjc_fmt_sizes(got, sizeof got, tj_sizes(t), tj_ndim(t)),
                     tjc_fmt_sizes(want, sizeof want, traced, ty->ndim),
                     same_rank ? "; retrace, or compile with allow_size_change" : "");
}

/* The register interpreter's replay (code.h): op by op, checking and
 * allocating as it goes. Programs that cannot be planned, and profiled
 * replays, take it. */
static tj_status run_dynamic(const tj_program *p, tj_tensor *const *in, tj_tensor **all,
                             const tji_ready *ready) {
    enum { SMALL = 128 };
    tj_tensor *frame_small[SMALL] = {0};
    tj_tensor **frame = p->code.n_regs <= SMALL ? frame_small
                                                : tjc_calloc((size_t)p->code.n_regs, sizeof(tj_tensor *));
    if (!frame) return tjc_error(TJ_ERR_MEMORY, "tj_run: out of memory");
    tj_status st = tji_execute(&p->code, in, frame, all, ready);
    if (frame != frame_small) tjc_free(frame);
    return st;
}

/* tj_run, and tji_run_ready (to_scope false: the outputs are not handed to
 * the caller's scope). */
static tj_status run(const tj_program *p, tj_tensor *const *inputs, tj_tensor **outputs,
                     const tji_ready *ready, bool to_scope) {
    if (!p) return tjc_last_or(TJ_ERR_ARG, "tj_run: program is NULL");
    if ((p->n_user && !inputs) || (p->code.n_outputs && !outputs))
        return tjc_error(TJ_ERR_ARG, "tj_run: the input or output array is NULL");
    /* replayed ops are not recorded, so a tracer would take the results for
     * parameters and bake this run's values into its graph */
    if (tjc_record_hook() && tjc_op_depth() == 0)
        return tjc_error(TJ_ERR_UNSUPPORTED, "tj_run: cannot replay a program while tracing on "
                         "this thread (the trace would keep this run's results as parameters); "
                         "call the model function itself");
    enum { SMALL = 128 };
    tj_tensor *in_small[SMALL], *all_small[SMALL];
    int n_in = p->code.n_inputs, n_all = p->code.n_outputs;
    tj_tensor **in = n_in <= SMALL ? in_small : tjc_malloc(sizeof(tj_tensor *) * (size_t)n_in);
    /* a program that differentiates also returns the saved values: they go
     * to its tape for tj_backward, not to the caller */
    tj_tensor **all = !p->backward ? outputs
                      : n_all <= SMALL ? all_small
                                       : tjc_malloc(sizeof(tj_tensor *) * (size_t)n_all);
    int n_user_out = p->backward ? p->n_user_outputs : n_all;
    tj_status st = TJ_OK;
    if (!in || !all) {
        st = tjc_error(TJ_ERR_MEMORY, "tj_run: out of memory");
    } else {
        for (int i = 0; i < n_in; i++) in[i] = p->bound[i];
        for (int k = 0; k < p->n_user; k++) in[p->user_input[k]] = inputs[k];
        /* the guard: inputs like the first plan's need no further check */
        tji_plan *plan = atomic_load_explicit(&p->n_plans, memory_order_acquire) &&
                                 tji_plan_matches(p->plans[0], in) ? p->plans[0] : NULL;
        for (int k = 0; !plan && k < p->n_user && !st; k++) st = check_input(p, k, inputs[k]);
        bool profiling = tji_profiling(&p->code);
        if (!st && !plan && !profiling) plan = plan_for(p, in);
        if (!st && plan && !profiling)
            st = p->opts.cuda_graph ? tji_plan_execute_graph(plan, in, p->bound, all, ready)
                                    : tji_plan_execute(plan, in, all, ready);
        else if (!st)
            st = run_dynamic(p, in, all, ready);
        if (st == TJ_OK && to_scope && !tjc_scope_reserve(n_user_out)) { /* the tape is left as it was */
            st = TJ_ERR_MEMORY;
            for (int i = 0; i < n_all; i++) {
                tj_release(all[i]);
                all[i] = NULL;
            }
        }
        if (st == TJ_OK && p->backward) {
            st = tji_tape_store((tj_program *)p, all + n_user_out, n_all - n_user_out);
            for (int i = 0; i < n_user_out; i++) {
                if (st) tj_release(all[i]);
                outputs[i] = st ? NULL : all[i];
            }
        }
        if (st == TJ_OK && to_scope)
            for (int i = 0; i < n_user_out; i++) tjc_scope_track(outputs[i]);
    }
    if (all != outputs && all != all_small) tjc_free(all);
    if (in != in_small) tjc_free(in);
    return st;
}

tj_status tj_run(const tj_program *p, tj_tensor *const *inputs, tj_tensor **outputs) {
    return run(p, inputs, outputs, NULL, true);
}

tj_status tji_run_ready(const tj_program *p, tj_tensor *const *inputs, tj_tensor **outputs,
                        const tji_ready *ready) {
    return run(p, inputs, outputs, ready, false);
}
