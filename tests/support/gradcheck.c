/* gradcheck.c — see gradcheck.h. */
#include "tests/support/gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* TJIT_TEST_DEVICE=cuda runs every check's graphs on cuda:0: they are traced
 * on device copies of the inputs, and each run takes device copies of the
 * (host, perturbed) inputs and gives host copies of its outputs. */
bool tt_gradcheck_device_mode(void) {
    const char *d = getenv("TJIT_TEST_DEVICE");
    return d && !strcmp(d, "cuda");
}

static tj_tensor *to_test_device(tj_tensor *t) {
    return tjc_to_device(t, tt_gradcheck_device_mode() ? TJ_DEVICE_CUDA(0) : TJ_DEVICE_CPU);
}

static tj_status run_here(const tj_program *p, tj_tensor *const *in, int n_in, tj_tensor **out,
                          int n_out) {
    if (!tt_gradcheck_device_mode()) return tj_run(p, in, out);
    tj_tensor *dev[48];
    assert_true(n_in <= 48);
    /* inputs go where the graph was traced: a graph a test traced on host
     * tensors itself stays on the host */
    const tj_graph *g = tj_program_graph(p);
    bool per_input = tj_graph_num_inputs(g) == n_in;
    for (int i = 0; i < n_in; i++) {
        bool on_device = !per_input || tj_value_type(tj_graph_input(g, i))->device_type == TJ_CUDA;
        dev[i] = on_device ? to_test_device(in[i]) : tj_retain(in[i]);
        if (!dev[i]) fail_msg("to cuda:0: %s", tj_last_error());
    }
    tj_status st = tj_run(p, dev, out);
    for (int i = 0; i < n_in; i++) tj_release(dev[i]);
    for (int o = 0; st == TJ_OK && o < n_out; o++) {
        tj_tensor *host = tjc_to_device(out[o], TJ_DEVICE_CPU);
        if (!host) fail_msg("from cuda:0: %s", tj_last_error());
        tj_release(out[o]);
        out[o] = host;
    }
    return st;
}

tj_status tt_gradcheck_run(const tj_program *p, tj_tensor *const *in, tj_tensor **out) {
    return run_here(p, in, tj_program_num_inputs(p), out,
                    tj_graph_num_outputs(tj_program_graph(p)));
}

static tj_program *compile_plain(const tj_graph *g) {
    tj_compile_options o = {.passes = "dce"};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    return p;
}

/* sum over float outputs of <out, v> */
static double loss(const tj_program *p, tj_tensor *const *in, tj_tensor *const *v, int n_out) {
    tj_tensor *out[16];
    if (run_here(p, in, tj_program_num_inputs(p), out, n_out) != TJ_OK)
        fail_msg("run: %s", tj_last_error());
    double s = 0;
    for (int o = 0; o < n_out; o++) {
        if (tj_dtype_is_float(tj_tensor_dtype(out[o]))) {
            tt_ref a = tt_ref_of(out[o]), b = tt_ref_of(v[o]);
            for (int64_t k = 0; k < a.numel; k++) s += a.v[k] * b.v[k];
            tt_ref_free(&a);
            tt_ref_free(&b);
        }
        tj_release(out[o]);
    }
    return s;
}

static void set_element(tj_tensor *t, int64_t k, double value) {
    int64_t idx[TJ_MAX_DIMS];
    int64_t rem = k;
    for (int d = tj_ndim(t) - 1; d >= 0; d--) {
        idx[d] = rem % tj_sizes(t)[d];
        rem /= tj_sizes(t)[d];
    }
    int64_t off = 0;
    for (int d = 0; d < tj_ndim(t); d++) off += idx[d] * tj_strides(t)[d];
    ((double *)tj_data(t))[off] = value;
}

void tt_gradcheck_graph(const tj_graph *g, tj_tensor *const *inputs, const bool *wrt, double atol,
                        double rtol, const char *label) {
    int n_in = tj_graph_num_inputs(g), n_out = tj_graph_num_outputs(g);
    assert_true(n_in <= 16 && n_out <= 16);
    tj_graph *gg = tj_grad_graph(g, wrt);
    if (!gg) fail_msg("%s: tj_grad_graph: %s", label, tj_last_error());
    tj_program *fp = compile_plain(g), *gp = compile_plain(gg);
    tj_generator *gen = tj_generator_new(77);
    tj_tensor *in[16], *v[16], *all[32], *grads[16];
    for (int i = 0; i < n_in; i++) in[i] = tj_clone(inputs[i]); /* contiguous, perturbed in place */
    for (int o = 0; o < n_out; o++) {
        const tj_type *t = tj_value_type(tj_graph_output(g, o));
        v[o] = tt_random(gen, t->sizes, t->ndim, (tj_dtype)t->dtype, -1, 1);
    }
    for (int i = 0; i < n_in; i++) all[i] = in[i];
    for (int o = 0; o < n_out; o++) all[n_in + o] = v[o];
    int n_grads = 0;
    for (int i = 0; i < n_in; i++) n_grads += wrt[i];
    if (run_here(gp, all, n_in + n_out, grads, n_grads) != TJ_OK)
        fail_msg("%s: running the gradient graph: %s", label, tj_last_error());
    int k = 0;
    for (int i = 0; i < n_in; i++) {
        if (!wrt[i]) continue;
        tt_ref analytic = tt_ref_of(grads[k]);
        tt_ref x = tt_ref_of(in[i]);
        for (int64_t e = 0; e < x.numel; e++) {
            double h = 1e-6 * (fabs(x.v[e]) > 1 ? fabs(x.v[e]) : 1.0);
            set_element(in[i], e, x.v[e] + h);
            double up = loss(fp, in, v, n_out);
            set_element(in[i], e, x.v[e] - h);
            double down = loss(fp, in, v, n_out);
            set_element(in[i], e, x.v[e]);
            double numeric = (up - down) / (2 * h);
            if (!(fabs(analytic.v[e] - numeric) <= atol + rtol * fabs(numeric)))
                fail_msg("%s: d/d input %d, element %lld: derived %.12g, finite difference %.12g",
                         label, i, (long long)e, analytic.v[e], numeric);
        }
        tt_ref_free(&analytic);
        tt_ref_free(&x);
        tj_release(grads[k++]);
    }
    for (int i = 0; i < n_in; i++) tj_release(in[i]);
    for (int o = 0; o < n_out; o++) tj_release(v[o]);
    tj_generator_free(gen);
    tj_program_free(fp);
    tj_program_free(gp);
    tj_graph_free(gg);
}

typedef struct one_call {
    const tj_op_info *op;
    const tj_attr *attrs;
    int n_in;            /* the op's tensor inputs, absent ones included */
    const bool *present; /* which of them the graph has as inputs */
    const bool *keep;    /* which of the op's outputs the graph returns (NULL: all) */
    int n_op_out;        /* the op's outputs */
} one_call;

static tj_status call_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    const one_call *oc = ctx;
    tj_tensor *full[16], *all[64];
    for (int i = 0, k = 0; i < oc->n_in; i++) full[i] = oc->present[i] ? in[k++] : NULL;
    (void)n_in;
    tj_scope_begin();
    int n = tj_invoke(tj_op_id(oc->op), full, oc->n_in, oc->attrs, tj_op_schema(oc->op)->n_attrs, all,
                      oc->n_op_out);
    int kept = 0;
    for (int i = 0; i < n; i++)
        if ((!oc->keep || oc->keep[i]) && kept < n_out) tj_keep(out[kept++] = all[i]);
    tj_scope_end();
    return n == oc->n_op_out && kept == n_out ? TJ_OK
           : tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
}

/* The op's output count on these inputs. */
static int count_outputs(const tj_op_info *op, tj_tensor *const *in, int n_in, const tj_attr *attrs) {
    tj_tensor *out[64];
    tj_scope_begin();
    int n = tj_invoke(tj_op_id(op), in, n_in, attrs, tj_op_schema(op)->n_attrs, out, 64);
    tj_scope_end();
    return n;
}

/* The present inputs, in order. */
static int present_inputs(tj_tensor *const *inputs, int n_in, tj_tensor **present, bool *mask) {
    int n = 0;
    for (int i = 0; i < n_in; i++) {
        mask[i] = inputs[i] != NULL;
        if (inputs[i]) present[n++] = inputs[i];
    }
    return n;
}

tj_graph *tt_op_graph(const tj_op_info *op, tj_tensor *const *inputs, int n_in, const tj_attr *attrs) {
    return tt_op_graph_outputs(op, inputs, n_in, attrs, NULL);
}

tj_graph *tt_op_graph_outputs(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                              const tj_attr *attrs, const bool *keep) {
    tj_attr defaults[TJ_MAX_ARGS];
    const tj_schema *s = tj_op_schema(op);
    if (!attrs) {
        for (int k = 0; k < s->n_attrs; k++) defaults[k] = s->args[s->attr_pos[k]].def;
        attrs = defaults;
    }
    bool mask[16];
    tj_tensor *present[16];
    assert_true(n_in <= 16);
    int n_present = present_inputs(inputs, n_in, present, mask);
    int n_op_out = count_outputs(op, inputs, n_in, attrs), n_out = 0;
    if (n_op_out < 1) return NULL;
    for (int o = 0; o < n_op_out; o++) n_out += !keep || keep[o];
    one_call oc = {op, attrs, n_in, mask, keep, n_op_out};
    if (!tt_gradcheck_device_mode()) return tj_trace(call_model, &oc, present, n_present, n_out, NULL);
    tj_tensor *dev[16];
    for (int i = 0; i < n_present; i++)
        if (!(dev[i] = to_test_device(present[i]))) fail_msg("to cuda:0: %s", tj_last_error());
    tj_graph *g = tj_trace(call_model, &oc, dev, n_present, n_out, NULL);
    for (int i = 0; i < n_present; i++) tj_release(dev[i]);
    return g;
}

static void default_wrt(const tj_graph *g, const bool *wrt, bool *out) {
    for (int i = 0; i < tj_graph_num_inputs(g); i++) {
        const tj_type *t = tj_value_type(tj_graph_input(g, i));
        bool is_float = t->kind == TJ_TYPE_TENSOR && (t->dtype == TJ_F32 || t->dtype == TJ_F64);
        out[i] = is_float && (!wrt || wrt[i]);
    }
}

/* wrt over the op's inputs, as a mask over the present ones */
static void present_wrt(tj_tensor *const *inputs, int n_in, const bool *wrt, bool *out) {
    for (int i = 0, k = 0; i < n_in; i++)
        if (inputs[i]) out[k++] = !wrt || wrt[i];
}

void tt_gradcheck_op(const tj_op_info *op, tj_tensor *const *inputs, int n_in, const tj_attr *attrs,
                     const bool *wrt, const char *label) {
    tt_gradcheck_op_outputs(op, inputs, n_in, attrs, wrt, NULL, label);
}

void tt_gradcheck_op_outputs(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                             const tj_attr *attrs, const bool *wrt, const bool *keep,
                             const char *label) {
    tj_graph *g = tt_op_graph_outputs(op, inputs, n_in, attrs, keep);
    if (!g) fail_msg("%s: tracing %s: %s", label, tj_op_name(op), tj_last_error());
    bool w0[16], w[16], mask[16];
    tj_tensor *present[16];
    present_inputs(inputs, n_in, present, mask);
    present_wrt(inputs, n_in, wrt, w0);
    default_wrt(g, w0, w);
    tt_gradcheck_graph(g, present, w, 1e-6, 1e-5, label);
    tj_graph_free(g);
}

void tt_gradgradcheck_op(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                         const tj_attr *attrs, const bool *wrt, const char *label) {
    tt_gradgradcheck_op_outputs(op, inputs, n_in, attrs, wrt, NULL, label);
}

void tt_gradgradcheck_op_outputs(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                                 const tj_attr *attrs, const bool *wrt, const bool *keep,
                                 const char *label) {
    tj_graph *g = tt_op_graph_outputs(op, inputs, n_in, attrs, keep);
    if (!g) fail_msg("%s: tracing %s: %s", label, tj_op_name(op), tj_last_error());
    bool w0[16], w[16], mask[16];
    tj_tensor *present[16];
    present_inputs(inputs, n_in, present, mask);
    present_wrt(inputs, n_in, wrt, w0);
    default_wrt(g, w0, w);
    tj_graph *gg = tj_grad_graph(g, w);
    if (!gg) fail_msg("%s: tj_grad_graph: %s", label, tj_last_error());
    /* the gradient graph's inputs: g's inputs, then a gradient per output */
    int n = tj_graph_num_inputs(gg), n_g = tj_graph_num_inputs(g);
    tj_tensor *all[32];
    bool w2[32];
    tj_generator *gen = tj_generator_new(78);
    for (int i = 0; i < n; i++) {
        if (i < n_g) {
            all[i] = tj_retain(present[i]);
            w2[i] = w[i];
        } else {
            const tj_type *t = tj_value_type(tj_graph_input(gg, i));
            all[i] = tt_random(gen, t->sizes, t->ndim, (tj_dtype)t->dtype, -1, 1);
            w2[i] = t->dtype == TJ_F64;
        }
    }
    char second[256];
    snprintf(second, sizeof second, "%s (second order)", label);
    tt_gradcheck_graph(gg, all, w2, 1e-5, 1e-4, second);
    for (int i = 0; i < n; i++) tj_release(all[i]);
    tj_generator_free(gen);
    tj_graph_free(gg);
    tj_graph_free(g);
}
