/* test_rewrites.c — the graph rewrites merge_linears and fold_batch_norm on
 * traced models (an LSTM cell; a convolution followed by an eval-mode
 * batch_norm), in f32 and f64, on the portable and LLVM fusion backends:
 *  - the default pipeline rewrites the pattern (the compiled graph's ops say
 *    so) and computes what the pipeline without the pass computes, within
 *    the bounds of fused code;
 *  - with gradients, the forward and backward programs agree with the
 *    pipeline without the pass on the gradients of inputs and parameters;
 *  - a graph rewritten before autodiff differentiates to the same gradients
 *    (the chain rule through the rewritten ops);
 *  - addmm accumulates in place only where the plan may let it;
 *  - split_batch_norm on the same convolution with a training-mode
 *    batch_norm: its multiply-add joins the relu's group, the outputs, the
 *    gradients and the running statistics' update equal the unsplit graph's;
 *  - a CUDA graph is left as it is.
 * The golden cases under tests/passes/{merge_linears,fold_batch_norm}/ show
 * each condition under which the passes keep off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/fuser.h"
#include "tests/support/testing.h"

enum { MAX_PARAMS = 6 };

typedef struct model {
    tj_tensor *p[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    int n_params;
    /* the conv model's variant */
    bool conv1d, conv_bias, affine, training;
} model;

static const char *backends[] = {"portable", "llvm"};
/* llvm last: a build without LLVM checks the portable runner only */
static int n_backends(void) { return tjf_find_backend("llvm") ? 2 : 1; }
static const tj_dtype dtypes[] = {TJ_F32, TJ_F64};

/* The default pipeline without one pass. */
static void pipeline_without(const char *pass, char *out, size_t cap) {
    char name[64];
    snprintf(name, sizeof name, ",%s", pass);
    const char *def = tj_default_pipeline(), *at = strstr(def, name);
    assert_non_null(at);
    snprintf(out, cap, "%.*s%s", (int)(at - def), def, at + strlen(name));
}

static int count_ops(const tj_graph *g, const char *op) {
    int k = 0;
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g)); n; n = tj_node_next(n))
        k += !strcmp(tj_node_name(n), op);
    return k;
}

static tj_tensor *param(model *m, tj_generator *gen, const char *name, const int64_t *sizes, int ndim,
                        tj_dtype dt, double lo, double hi) {
    tj_tensor *t = tt_random(gen, sizes, ndim, dt, lo, hi);
    assert_int_equal(tj_tensor_set_name(t, name), TJ_OK);
    m->names[m->n_params] = name;
    m->p[m->n_params++] = t;
    return t;
}

/* ---- the models ------------------------------------------------------------------------- */

/* B * 4H is big enough for merge_linears to pay for summing the biases */
enum { B = 40, IN = 5, H = 16, N = 2, CIN = 3, C = 4, SIDE = 6 };

/* x, h, c -> h', c' (the gates of examples/models/lstm.c, in any dtype) */
static tj_status lstm_cell(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    model *m = ctx;
    tj_scope_begin();
    tj_tensor *from_x = tj_linear(in[0], m->p[0], m->p[2]);
    tj_tensor *from_h = tj_linear(in[1], m->p[1], m->p[3]);
    tj_tensor *gates = tj_add(from_x, from_h, 1.0), *g[4];
    tj_status st = tj_chunk(gates, 4, 1, g, 4) == 4 ? TJ_OK : tj_last_status();
    if (!st) {
        tj_tensor *c = tj_add(tj_mul(tj_sigmoid(g[1]), in[2]), tj_mul(tj_sigmoid(g[0]), tj_tanh(g[2])), 1.0);
        out[0] = tj_keep(tj_mul(tj_sigmoid(g[3]), tj_tanh(c)));
        out[1] = tj_keep(c);
        st = out[0] && out[1] ? TJ_OK : tj_last_status();
    }
    tj_scope_end();
    return st;
}

static void lstm_make(model *m, tj_generator *gen, tj_dtype dt, tj_tensor **in) {
    *m = (model){0};
    int64_t wi[2] = {4 * H, IN}, wh[2] = {4 * H, H}, b[1] = {4 * H};
    param(m, gen, "weight_ih", wi, 2, dt, -0.5, 0.5);
    param(m, gen, "weight_hh", wh, 2, dt, -0.5, 0.5);
    param(m, gen, "bias_ih", b, 1, dt, -0.5, 0.5);
    param(m, gen, "bias_hh", b, 1, dt, -0.5, 0.5);
    int64_t xs[2] = {B, IN}, hs[2] = {B, H};
    in[0] = tt_random(gen, xs, 2, dt, -1, 1);
    in[1] = tt_random(gen, hs, 2, dt, -1, 1);
    in[2] = tt_random(gen, hs, 2, dt, -1, 1);
}

/* x -> relu(batch_norm(conv(x, w, b), gamma, beta, mean, var, training)) */
static tj_status conv_bn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    model *m = ctx;
    tj_scope_begin();
    int64_t one = 1, pad = 1;
    tj_tensor *bias = m->conv_bias ? m->p[1] : NULL;
    tj_tensor *y = m->conv1d ? tj_conv1d(in[0], m->p[0], bias, &one, 1, &pad, 1, &one, 1, 1)
                             : tj_conv2d(in[0], m->p[0], bias, &one, 1, &pad, 1, &one, 1, 1);
    tj_tensor *gamma = m->affine ? m->p[2] : NULL, *beta = m->affine ? m->p[3] : NULL;
    tj_tensor *z = tj_batch_norm(y, gamma, beta, m->p[4], m->p[5], m->training, 0.1, 1e-3);
    out[0] = tj_keep(tj_relu(z));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static void conv_make(model *m, tj_generator *gen, tj_dtype dt, tj_tensor **in, bool conv1d,
                      bool conv_bias, bool affine) {
    *m = (model){.conv1d = conv1d, .conv_bias = conv_bias, .affine = affine};
    int64_t w[4] = {C, CIN, 3, 3}, v[1] = {C};
    param(m, gen, "conv.weight", w, conv1d ? 3 : 4, dt, -0.5, 0.5);
    param(m, gen, "conv.bias", v, 1, dt, -0.5, 0.5);
    param(m, gen, "bn.weight", v, 1, dt, 0.5, 1.5);
    param(m, gen, "bn.bias", v, 1, dt, -0.5, 0.5);
    param(m, gen, "bn.running_mean", v, 1, dt, -0.5, 0.5);
    param(m, gen, "bn.running_var", v, 1, dt, 0.5, 2.0);
    int64_t xs[4] = {N, CIN, SIDE, SIDE};
    in[0] = tt_random(gen, xs, conv1d ? 3 : 4, dt, -1, 1);
}

/* ---- comparing programs -------------------------------------------------------------------- */

static tj_program *compile(const tj_graph *g, const char *passes, const char *backend, bool grads,
                           int n_in) {
    bool wants[4] = {true, true, true, true};
    tj_compile_options o = {.passes = passes, .backend = backend, .grad_parameters = grads,
                            .requires_grad = grads ? wants : NULL};
    (void)n_in;
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("tj_compile (%s, %s): %s", passes ? passes : "default", backend, tj_last_error());
    return p;
}

static void assert_close(tj_tensor *got, tj_tensor *want, tj_dtype dt, const char *what) {
    assert_non_null(got);
    assert_non_null(want);
    tt_context("%s", what);
    tt_ref ref = tt_ref_of(want);
    tt_assert_sizes(got, ref.sizes, ref.ndim);
    /* fused code and a product summed in another order: the bounds of fused code */
    tt_assert_close_ref(got, &ref, dt == TJ_F32 ? 1e-5 : 1e-12, dt == TJ_F32 ? 1e-5 : 1e-12);
    tt_ref_free(&ref);
    tt_context(NULL);
}

/* Runs a and b (compiled with gradients when grads) on the same inputs and
 * compares outputs, and with grads the gradients of every input and of the
 * first n_compared parameters of m. What they return belongs to the test's
 * scope. */
static void compare_programs(tj_program *a, tj_program *b, tj_tensor **in, int n_in, int n_out,
                             const model *m, int n_compared, bool grads, tj_dtype dt) {
    tj_tensor *oa[2], *ob[2];
    assert_int_equal(tj_run(a, in, oa), TJ_OK);
    assert_int_equal(tj_run(b, in, ob), TJ_OK);
    for (int k = 0; k < n_out; k++) assert_close(oa[k], ob[k], dt, "an output");
    if (grads) {
        tj_tensor *ga[4] = {0}, *gb[4] = {0};
        assert_int_equal(tj_backward(a, NULL, ga), TJ_OK);
        assert_int_equal(tj_backward(b, NULL, gb), TJ_OK);
        for (int k = 0; k < n_in; k++) {
            assert_close(ga[k], gb[k], dt, "an input's gradient");
        }
        for (int k = 0; k < n_compared; k++) {
            tj_tensor *pa = tj_program_grad(a, m->names[k]), *pb = tj_program_grad(b, m->names[k]);
            if (!pa && !pb) { /* a parameter the variant does not read (no conv bias) */
                tj_clear_error();
                continue;
            }
            char what[96];
            snprintf(what, sizeof what, "the gradient of %s", m->names[k]);
            assert_close(pa, pb, dt, what);
        }
    }
}

/* ---- merge_linears --------------------------------------------------------------------------- */

static void test_lstm_merged(void **state) {
    (void)state;
    char without[512];
    pipeline_without("merge_linears", without, sizeof without);
    for (int d = 0; d < 2; d++)
        for (int be = 0; be < n_backends(); be++)
            for (int grads = 0; grads < 2; grads++) {
                print_message("lstm: %s, %s, %s\n", tj_dtype_name(dtypes[d]), backends[be],
                              grads ? "forward and backward" : "forward");
                tj_generator *gen = tj_generator_new(11);
                model m;
                tj_tensor *in[3];
                lstm_make(&m, gen, dtypes[d], in);
                tj_graph *g = tj_trace(lstm_cell, &m, in, 3, 2, NULL);
                assert_non_null(g);
                tj_program *p = compile(g, NULL, backends[be], grads, 3);
                tj_program *q = compile(g, without, backends[be], grads, 3);
                /* the forward program's graph (autodiff's forward, with grads) */
                const tj_graph *pg = tj_program_graph(p), *qg = tj_program_graph(q);
                assert_int_equal(count_ops(pg, "aten::addmm"), 1);
                assert_int_equal(count_ops(pg, "aten::linear"), 1);
                assert_int_equal(count_ops(qg, "aten::addmm"), 0);
                assert_int_equal(count_ops(qg, "aten::linear"), 2);
                /* the second product accumulates over the first's result */
                tj_plan_stats ps, qs;
                assert_int_equal(tj_program_plan_stats(p, &ps), TJ_OK);
                assert_int_equal(tj_program_plan_stats(q, &qs), TJ_OK);
                assert_int_equal(ps.reused, qs.reused + 1);
                compare_programs(p, q, in, 3, 2, &m, 4, grads, dtypes[d]);
                tj_program_free(p);
                tj_program_free(q);
                tj_graph_free(g);
                tj_generator_free(gen);
            }
}

/* The gradients of a graph merged before autodiff: through addmm, t and the
 * summed biases, they equal the original graph's. */
static void test_lstm_merged_before_autodiff(void **state) {
    (void)state;
    char without[512];
    pipeline_without("merge_linears", without, sizeof without);
    for (int d = 0; d < 2; d++) {
        tj_generator *gen = tj_generator_new(12);
        model m;
        tj_tensor *in[3];
        lstm_make(&m, gen, dtypes[d], in);
        tj_graph *g = tj_trace(lstm_cell, &m, in, 3, 2, NULL);
        tj_graph *merged = tj_graph_clone(g, NULL);
        for (int i = 0; i < tj_graph_num_inputs(g); i++)
            if (tj_graph_input_binding(g, i))
                assert_int_equal(tj_graph_bind_input(merged, i, tj_graph_input_binding(g, i)), TJ_OK);
        assert_int_equal(tj_run_passes(merged, "merge_linears"), TJ_OK);
        assert_int_equal(count_ops(merged, "aten::addmm"), 1);
        tj_program *p = compile(merged, without, "portable", true, 3);
        tj_program *q = compile(g, without, "portable", true, 3);
        compare_programs(p, q, in, 3, 2, &m, 4, true, dtypes[d]);
        tj_program_free(p);
        tj_program_free(q);
        tj_graph_free(merged);
        tj_graph_free(g);
        tj_generator_free(gen);
    }
}

/* addmm writes over its self where the plan lets it (self and the result
 * intermediates, self read for the last time there, no other operand in the
 * same buffer), and computes what the op-by-op replay computes in every
 * case. (A graph's outputs get storage of their own at every replay.) */
static void test_addmm_in_place(void **state) {
    (void)state;
    static const struct {
        const char *body, *why;
        int reused;
    } cases[] = {
        {"  %y : Float(4, 4, strides=[4, 1], device=cpu) = aten::addmm[beta=1, alpha=1](%a, %m, %w)\n"
         "  %z : Float(4, 4, strides=[4, 1], device=cpu) = aten::relu(%y)\n  return (%z)\n", "self dead after addmm", 1},
        {"  %y : Float(4, 4, strides=[4, 1], device=cpu) = aten::addmm[beta=1, alpha=1](%a, %a, %w)\n"
         "  %z : Float(4, 4, strides=[4, 1], device=cpu) = aten::relu(%y)\n  return (%z)\n", "self is mat1 too", 0},
        {"  %y : Float(4, 4, strides=[4, 1], device=cpu) = aten::addmm[beta=1, alpha=1](%a, %m, %a)\n"
         "  %z : Float(4, 4, strides=[4, 1], device=cpu) = aten::relu(%y)\n  return (%z)\n", "self is mat2 too", 0},
        {"  %y : Float(4, 4, strides=[4, 1], device=cpu) = aten::addmm[beta=1, alpha=1](%a, %m, %w)\n"
         "  %z : Float(4, 4, strides=[4, 1], device=cpu) = aten::relu(%y)\n  return (%z, %a)\n", "self returned too", 0},
        {"  %y : Float(4, 4, strides=[4, 1], device=cpu) = aten::addmm[beta=2, alpha=3](%a, %m, %w)\n"
         "  %z : Float(4, 4, strides=[4, 1], device=cpu) = aten::relu(%y)\n  return (%z)\n", "scaled", 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "graph(%%x : Float(4, 4, strides=[4, 1], device=cpu),\n"
                 "      %%m : Float(4, 4, strides=[4, 1], device=cpu),\n"
                 "      %%w : Float(4, 4, strides=[4, 1], device=cpu)):\n"
                 "  %%a : Float(4, 4, strides=[4, 1], device=cpu) = aten::exp(%%x)\n%s",
                 cases[k].body);
        tj_graph *g = tj_graph_parse(text, NULL);
        if (!g) fail_msg("%s: %s", cases[k].why, tj_last_error());
        tj_compile_options planned = {.passes = ""}, dynamic = {.passes = "", .dynamic_replay = true};
        tj_program *p = tj_compile(g, &planned), *q = tj_compile(g, &dynamic);
        assert_non_null(p);
        assert_non_null(q);
        tj_plan_stats st;
        assert_int_equal(tj_program_plan_stats(p, &st), TJ_OK);
        assert_true(st.planned);
        tt_context("%s", cases[k].why);
        assert_int_equal(st.reused, cases[k].reused);
        tj_generator *gen = tj_generator_new(40 + k);
        int64_t sz[2] = {4, 4};
        tj_tensor *in[3] = {tt_random(gen, sz, 2, TJ_F32, -1, 1), tt_random(gen, sz, 2, TJ_F32, -1, 1),
                            tt_random(gen, sz, 2, TJ_F32, -1, 1)};
        tj_tensor *a[2], *b[2];
        assert_int_equal(tj_run(p, in, a), TJ_OK);
        assert_int_equal(tj_run(q, in, b), TJ_OK);
        for (int o = 0; o < tj_graph_num_outputs(g); o++) assert_close(a[o], b[o], TJ_F32, cases[k].why);
        tj_generator_free(gen);
        tj_program_free(p);
        tj_program_free(q);
        tj_graph_free(g);
    }
    tt_context(NULL);
}

/* ---- fold_batch_norm ------------------------------------------------------------------------- */

static void test_conv_bn_folded(void **state) {
    (void)state;
    char without[512];
    pipeline_without("fold_batch_norm", without, sizeof without);
    for (int variant = 0; variant < 4; variant++)
        for (int d = 0; d < 2; d++)
            for (int be = 0; be < n_backends(); be++)
                for (int grads = 0; grads < 2; grads++) {
                    bool conv1d = variant == 3, conv_bias = variant != 1, affine = variant != 2;
                    print_message("conv+bn: %s%s%s, %s, %s, %s\n", conv1d ? "conv1d" : "conv2d",
                                  conv_bias ? "" : ", no conv bias", affine ? "" : ", no gamma/beta",
                                  tj_dtype_name(dtypes[d]), backends[be],
                                  grads ? "forward and backward" : "forward");
                    tj_generator *gen = tj_generator_new(21 + (uint64_t)variant);
                    model m;
                    tj_tensor *in[1];
                    conv_make(&m, gen, dtypes[d], in, conv1d, conv_bias, affine);
                    tj_graph *g = tj_trace(conv_bn, &m, in, 1, 1, NULL);
                    assert_non_null(g);
                    tj_program *p = compile(g, NULL, backends[be], grads, 1);
                    tj_program *q = compile(g, without, backends[be], grads, 1);
                    /* with gradients, backward reads the convolution's result
                     * (batch_norm's own gradient needs it): nothing to fold */
                    assert_int_equal(count_ops(tj_program_graph(p), "aten::batch_norm"), grads);
                    assert_int_equal(count_ops(tj_program_graph(q), "aten::batch_norm"), 1);
                    compare_programs(p, q, in, 1, 1, &m, 4, grads, dtypes[d]);
                    tj_program_free(p);
                    tj_program_free(q);
                    tj_graph_free(g);
                    tj_generator_free(gen);
                }
}

/* A graph folded before autodiff: the gradients of the input, the conv's
 * weight and bias, gamma and beta equal the original graph's. (The running
 * statistics take the derivative of the folded formula there, where the
 * batch_norm rule gives them none, as PyTorch's buffers have none; the
 * pipeline runs after autodiff, so compiled programs never see that.) */
static void test_conv_bn_folded_before_autodiff(void **state) {
    (void)state;
    char without[512];
    pipeline_without("fold_batch_norm", without, sizeof without);
    for (int d = 0; d < 2; d++) {
        tj_generator *gen = tj_generator_new(31);
        model m;
        tj_tensor *in[1];
        conv_make(&m, gen, dtypes[d], in, false, true, true);
        tj_graph *g = tj_trace(conv_bn, &m, in, 1, 1, NULL);
        tj_graph *folded = tj_graph_clone(g, NULL);
        for (int i = 0; i < tj_graph_num_inputs(g); i++)
            if (tj_graph_input_binding(g, i))
                assert_int_equal(tj_graph_bind_input(folded, i, tj_graph_input_binding(g, i)), TJ_OK);
        assert_int_equal(tj_run_passes(folded, "fold_batch_norm"), TJ_OK);
        assert_int_equal(count_ops(folded, "aten::batch_norm"), 0);
        assert_int_equal(count_ops(folded, "aten::conv2d"), 1);
        tj_program *p = compile(folded, without, "portable", true, 1);
        tj_program *q = compile(g, without, "portable", true, 1);
        compare_programs(p, q, in, 1, 1, &m, 4, true, dtypes[d]);
        tj_program_free(p);
        tj_program_free(q);
        tj_graph_free(folded);
        tj_graph_free(g);
        tj_generator_free(gen);
    }
}

/* ---- split_batch_norm ------------------------------------------------------------------------ */

static int count_groups_holding(const tj_graph *g, const char *op) {
    int k = 0;
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g)); n; n = tj_node_next(n))
        if (tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP)
            k += count_ops(tj_node_subgraph(n), op) > 0;
    return k;
}

/* Runs p once on fresh copies of the running statistics (m's last two
 * parameters) and leaves their updated values in mean and var. */
static void running_stats_after(tj_program *p, tj_tensor **in, model *m, const tj_tensor *mean0,
                                const tj_tensor *var0, tj_tensor **mean, tj_tensor **var) {
    size_t bytes = (size_t)tj_numel(m->p[4]) * (tj_tensor_dtype(m->p[4]) == TJ_F32 ? 4 : 8);
    memcpy(tj_data(m->p[4]), tj_data((tj_tensor *)mean0), bytes);
    memcpy(tj_data(m->p[5]), tj_data((tj_tensor *)var0), bytes);
    tj_tensor *out[1];
    assert_int_equal(tj_run(p, in, out), TJ_OK);
    *mean = tj_clone(m->p[4]);
    *var = tj_clone(m->p[5]);
}

static void test_conv_bn_split(void **state) {
    (void)state;
    char without[512];
    pipeline_without("split_batch_norm", without, sizeof without);
    for (int variant = 0; variant < 3; variant++)
        for (int d = 0; d < 2; d++)
            for (int be = 0; be < n_backends(); be++)
                for (int grads = 0; grads < 2; grads++) {
                    bool conv1d = variant == 2, affine = variant != 1;
                    print_message("conv+bn (training): %s%s, %s, %s, %s\n", conv1d ? "conv1d" : "conv2d",
                                  affine ? "" : ", no gamma/beta", tj_dtype_name(dtypes[d]),
                                  backends[be], grads ? "forward and backward" : "forward");
                    tj_generator *gen = tj_generator_new(41 + (uint64_t)variant);
                    model m;
                    tj_tensor *in[1];
                    conv_make(&m, gen, dtypes[d], in, conv1d, true, affine);
                    m.training = true;
                    tj_graph *g = tj_trace(conv_bn, &m, in, 1, 1, NULL);
                    assert_non_null(g);
                    tj_program *p = compile(g, NULL, backends[be], grads, 1);
                    tj_program *q = compile(g, without, backends[be], grads, 1);
                    const tj_graph *pg = tj_program_graph(p);
                    assert_int_equal(count_ops(pg, "aten::batch_norm") + count_ops(pg, "aten::native_batch_norm"), 0);
                    assert_int_equal(count_ops(pg, "tjit::batch_norm_stats"), 1);
                    assert_int_equal(count_ops(pg, "aten::relu"), 0); /* in a group with the multiply-add */
                    assert_int_equal(count_groups_holding(pg, "aten::relu"), 1);
                    assert_int_equal(count_ops(tj_program_graph(q), "tjit::batch_norm_stats"), 0);
                    tj_tensor *mean0 = tj_clone(m.p[4]), *var0 = tj_clone(m.p[5]), *mp, *vp, *mq, *vq;
                    running_stats_after(p, in, &m, mean0, var0, &mp, &vp);
                    running_stats_after(q, in, &m, mean0, var0, &mq, &vq);
                    assert_close(mp, mq, dtypes[d], "the running mean");
                    assert_close(vp, vq, dtypes[d], "the running variance");
                    compare_programs(p, q, in, 1, 1, &m, 4, grads, dtypes[d]);
                    tj_program_free(p);
                    tj_program_free(q);
                    tj_graph_free(g);
                    tj_generator_free(gen);
                }
}

/* ---- CUDA graphs are left as they are ------------------------------------------------------ */

static const char *cuda_graph_text =
    "graph(%x : Float(4, 3, strides=[3, 1], device=cuda:0),\n"
    "      %h : Float(4, 5, strides=[5, 1], device=cuda:0),\n"
    "      %w1 : Float(8, 3, strides=[3, 1], device=cuda:0),\n"
    "      %w2 : Float(8, 5, strides=[5, 1], device=cuda:0),\n"
    "      %img : Float(1, 3, 5, 5, strides=[75, 25, 5, 1], device=cuda:0),\n"
    "      %cw : Float(8, 3, 3, 3, strides=[27, 9, 3, 1], device=cuda:0),\n"
    "      %v : Float(8, strides=[1], device=cuda:0)):\n"
    "  %none : NoneType = prim::None()\n"
    "  %a : Float(4, 8, strides=[8, 1], device=cuda:0) = aten::linear(%x, %w1, %v)\n"
    "  %b : Float(4, 8, strides=[8, 1], device=cuda:0) = aten::linear(%h, %w2, %v)\n"
    "  %s : Float(4, 8, strides=[8, 1], device=cuda:0) = aten::add[alpha=1](%a, %b)\n"
    "  %y : Float(1, 8, 3, 3, strides=[72, 9, 3, 1], device=cuda:0) = aten::conv2d[stride=[1], "
    "padding=[0], dilation=[1], groups=1](%img, %cw, %none)\n"
    "  %z : Float(1, 8, 3, 3, strides=[72, 9, 3, 1], device=cuda:0) = aten::batch_norm[training=False, "
    "momentum=0.1, eps=1e-05](%y, %v, %v, %v, %v)\n"
    "  %t : Float(1, 8, 3, 3, strides=[72, 9, 3, 1], device=cuda:0) = aten::batch_norm[training=True, "
    "momentum=0.1, eps=1e-05](%y, %v, %v, %v, %v)\n"
    "  %u : Float(1, 8, 3, 3, strides=[72, 9, 3, 1], device=cuda:0) = aten::relu(%t)\n"
    "  return (%s, %z, %u)\n";

static void test_cuda_graphs_kept(void **state) {
    (void)state;
    tj_graph *g = tj_graph_parse(cuda_graph_text, NULL);
    if (!g) fail_msg("the CUDA graph does not parse: %s", tj_last_error());
    char *before = tj_graph_to_string(g, TJ_PRINT_CANONICAL);
    assert_int_equal(tj_run_passes(g, "merge_linears,fold_batch_norm,split_batch_norm"), TJ_OK);
    char *after = tj_graph_to_string(g, TJ_PRINT_CANONICAL);
    assert_string_equal(after, before);
    free(before);
    free(after);
    tj_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(test_lstm_merged),
        TT_SCOPED_TEST(test_lstm_merged_before_autodiff),
        TT_SCOPED_TEST(test_addmm_in_place),
        TT_SCOPED_TEST(test_conv_bn_folded),
        TT_SCOPED_TEST(test_conv_bn_folded_before_autodiff),
        TT_SCOPED_TEST(test_conv_bn_split),
        TT_SCOPED_TEST(test_cuda_graphs_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
