/* program.c — compiled programs: tj_compile lowers a verified copy of a graph
 * to register code and binds its parameters; tj_run checks the inputs against
 * the traced types and runs the code in a frame of its own, so one program can
 * run on several threads at once. */
#include <stdlib.h>
#include <string.h>

#include "program.h"

void tj_program_free(tj_program *p) {
    if (!p) return;
    tji_training_free(p);
    tji_code_free(&p->code);
    for (int i = 0; p->bound && i < p->n_graph_inputs; i++) tj_release(p->bound[i]);
    free(p->bound);
    free(p->user_input);
    tj_graph_free(p->graph);
    free(p);
}

tj_program *tj_compile(const tj_graph *g, const tj_compile_options *opts) {
    if (!g) return tjc_last_or(TJ_ERR_ARG, "tj_compile: graph is NULL"), NULL;
    if (tj_graph_verify(g) != TJ_OK) return NULL;
    if (opts && (opts->requires_grad || opts->grad_parameters)) return tji_compile_training(g, opts);
    return tji_compile_plain(g, opts);
}

tj_program *tji_compile_plain(const tj_graph *g, const tj_compile_options *opts) {
    tj_program *p = calloc(1, sizeof *p);
    if (!p) return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory"), NULL;
    if (opts) p->opts = *opts;
    p->graph = tj_graph_clone(g, NULL);
    int n_inputs = p->graph ? tj_graph_num_inputs(p->graph) : 0;
    p->bound = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof(tj_tensor *));
    p->user_input = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof(int));
    if (!p->graph || !p->bound || !p->user_input) {
        tj_program_free(p);
        return tjc_error(TJ_ERR_MEMORY, "tj_compile: out of memory"), NULL;
    }
    p->n_graph_inputs = n_inputs;
    for (int i = 0; i < n_inputs; i++) {
        p->bound[i] = tj_retain(tj_graph_input_binding(g, i));
        if (!p->bound[i]) p->user_input[p->n_user++] = i;
        /* tj_graph_clone copies nodes, not bindings: tj_program_graph shows them too */
        else if (tj_graph_bind_input(p->graph, i, p->bound[i]) != TJ_OK) {
            tj_program_free(p);
            return NULL;
        }
    }
    /* the passes rewrite the program's own copy; inputs keep their positions */
    if (tj_run_passes(p->graph, p->opts.passes ? p->opts.passes : tj_default_pipeline()) != TJ_OK) {
        tj_program_free(p);
        return NULL;
    }
    const char *backend_name = p->opts.backend ? p->opts.backend : "portable";
    const tjf_backend *backend = tjf_find_backend(backend_name);
    if (!backend) {
        tj_program_free(p);
        return tjc_error(TJ_ERR_ARG, "tj_compile: no fusion backend named '%s'", backend_name), NULL;
    }
    if (tji_lower(p->graph, backend, &p->code) != TJ_OK) {
        tj_program_free(p);
        return NULL;
    }
    return p;
}

int tj_program_num_inputs(const tj_program *p) { return p ? p->n_user : -1; }
int tj_program_num_outputs(const tj_program *p) {
    return p ? (p->backward ? p->n_user_outputs : p->code.n_outputs) : -1;
}
const tj_graph *tj_program_graph(const tj_program *p) { return p ? p->graph : NULL; }
char *tj_program_code_to_string(const tj_program *p) { return p ? tji_code_to_string(&p->code) : NULL; }

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

tj_status tj_run(const tj_program *p, tj_tensor *const *inputs, tj_tensor **outputs) {
    if (!p) return tjc_last_or(TJ_ERR_ARG, "tj_run: program is NULL");
    if ((p->n_user && !inputs) || (p->code.n_outputs && !outputs))
        return tjc_error(TJ_ERR_ARG, "tj_run: the input or output array is NULL");
    /* replayed ops are not recorded, so a tracer would take the results for
     * parameters and bake this run's values into its graph */
    if (tjc_record_hook() && tjc_op_depth() == 0)
        return tjc_error(TJ_ERR_UNSUPPORTED, "tj_run: cannot replay a program while tracing on "
                         "this thread (the trace would keep this run's results as parameters); "
                         "call the model function itself");
    for (int k = 0; k < p->n_user; k++) {
        tj_status st = check_input(p, k, inputs[k]);
        if (st) return st;
    }
    enum { SMALL = 128 };
    tj_tensor *in_small[SMALL], *frame_small[SMALL] = {0};
    int n_in = p->code.n_inputs;
    tj_tensor **in = n_in <= SMALL ? in_small : malloc(sizeof(tj_tensor *) * (size_t)n_in);
    tj_tensor **frame = p->code.n_regs <= SMALL ? frame_small
                                                : calloc((size_t)p->code.n_regs, sizeof(tj_tensor *));
    /* a program that differentiates also returns the saved values: they go
     * to its tape for tj_backward, not to the caller */
    tj_tensor **all = p->backward ? calloc((size_t)p->code.n_outputs, sizeof(tj_tensor *)) : outputs;
    int n_user_out = p->backward ? p->n_user_outputs : p->code.n_outputs;
    tj_status st = TJ_OK;
    if (!in || !frame || !all) {
        st = tjc_error(TJ_ERR_MEMORY, "tj_run: out of memory");
    } else {
        for (int i = 0; i < n_in; i++) in[i] = p->bound[i];
        for (int k = 0; k < p->n_user; k++) in[p->user_input[k]] = inputs[k];
        st = tji_execute(&p->code, in, frame, all);
        if (st == TJ_OK && p->backward) {
            for (int i = 0; i < n_user_out; i++) outputs[i] = all[i];
            tji_tape_store((tj_program *)p, all + n_user_out, p->code.n_outputs - n_user_out);
        }
        if (st == TJ_OK)
            for (int i = 0; i < n_user_out; i++) tjc_scope_track(outputs[i]);
    }
    if (all != outputs) free(all);
    if (in != in_small) free(in);
    if (frame != frame_small) free(frame);
    return st;
}
