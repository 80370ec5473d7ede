/* test_autodiff.c — derived backward graphs through the public API: an MLP's
 * gradients against a hand-written backward, fused against unfused backward,
 * saved values that backward reads and nothing else, accumulation and the
 * errors of tj_backward and tj_program_grad, input gradients, and a
 * Hessian-vector product (a gradient of a gradient) against finite
 * differences; untyped values of a parsed graph on the gradient's path. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "examples/models/models.h"
#include "tests/support/gradcheck.h"

/* ---- a small f64 MLP with a loss ----------------------------------------------------- */

typedef struct small_mlp {
    tj_tensor *w1, *b1, *w2, *b2;
} small_mlp;

static void small_mlp_init(small_mlp *m, tj_generator *gen) {
    int64_t w1[2] = {5, 4}, b1[1] = {5}, w2[2] = {3, 5}, b2[1] = {3};
    m->w1 = tt_random(gen, w1, 2, TJ_F64, -1, 1);
    m->b1 = tt_random(gen, b1, 1, TJ_F64, -1, 1);
    m->w2 = tt_random(gen, w2, 2, TJ_F64, -1, 1);
    m->b2 = tt_random(gen, b2, 1, TJ_F64, -1, 1);
    tj_tensor_set_name(m->w1, "fc1.weight");
    tj_tensor_set_name(m->b1, "fc1.bias");
    tj_tensor_set_name(m->w2, "fc2.weight");
    tj_tensor_set_name(m->b2, "fc2.bias");
}

static void small_mlp_free(small_mlp *m) {
    tj_release(m->w1);
    tj_release(m->b1);
    tj_release(m->w2);
    tj_release(m->b2);
}

/* nll_loss(log_softmax(relu(x W1^T + b1) W2^T + b2), y) */
static tj_status small_mlp_loss(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    small_mlp *m = ctx;
    tj_scope_begin();
    tj_tensor *h = tj_relu(tj_linear(in[0], m->w1, m->b1));
    tj_tensor *lp = tj_log_softmax(tj_linear(h, m->w2, m->b2), 1);
    out[0] = tj_keep(tj_nll_loss(lp, in[1], NULL, "mean", -100));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

typedef struct setup {
    tj_generator *gen;
    small_mlp m;
    tj_tensor *in[2];
    tj_graph *g;
} setup;

static void setup_make(setup *s) {
    s->gen = tj_generator_new(21);
    small_mlp_init(&s->m, s->gen);
    int64_t xs[2] = {6, 4}, ys[1] = {6};
    s->in[0] = tt_random(s->gen, xs, 2, TJ_F64, -1, 1);
    s->in[1] = tt_random(s->gen, ys, 1, TJ_I64, 0, 2);
    s->g = tj_trace(small_mlp_loss, &s->m, s->in, 2, 1, NULL);
    assert_non_null(s->g);
}

static void setup_free(setup *s) {
    tj_graph_free(s->g);
    tj_release(s->in[0]);
    tj_release(s->in[1]);
    small_mlp_free(&s->m);
    tj_generator_free(s->gen);
}

static tj_program *compile_grad(tj_graph *g, const char *passes, const bool *requires_grad) {
    tj_compile_options o = {.passes = passes, .grad_parameters = true, .requires_grad = requires_grad};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    return p;
}

static void assert_close(tj_tensor *a, tj_tensor *b, double tol, const char *what) {
    tt_ref rb = tt_ref_of(b);
    tt_assert_close_ref_(a, &rb, tol, tol, what, 0);
    tt_ref_free(&rb);
}

static void mlp_gradients_match_a_hand_written_backward(void **state) {
    (void)state;
    setup s;
    setup_make(&s);
    tj_program *p = compile_grad(s.g, NULL, NULL);
    tj_scope_begin();
    tj_tensor *loss;
    assert_int_equal(tj_run(p, s.in, &loss), TJ_OK);
    assert_int_equal(tj_backward(p, NULL, NULL), TJ_OK);

    /* the reference: dz2 = (softmax(z2) - onehot(y)) / N, then back through the layers */
    small_mlp *m = &s.m;
    tj_tensor *x = s.in[0];
    tj_tensor *z1 = tj_linear(x, m->w1, m->b1), *h = tj_relu(z1);
    tj_tensor *z2 = tj_linear(h, m->w2, m->b2);
    tj_tensor *onehot = tj_to_dtype(tj_one_hot(s.in[1], 3), TJ_F64);
    tj_tensor *dz2 = tj_div_scalar(tj_sub(tj_softmax(z2, 1), onehot, 1.0), 6.0);
    int64_t dim0 = 0;
    tj_tensor *dw2 = tj_mm(tj_t(dz2), h), *db2 = tj_sum(dz2, &dim0, 1, false);
    tj_tensor *dz1 = tj_mul(tj_mm(dz2, m->w2), tj_gt_scalar(z1, 0.0));
    tj_tensor *dw1 = tj_mm(tj_t(dz1), x), *db1 = tj_sum(dz1, &dim0, 1, false);

    assert_close(tj_program_grad(p, "fc1.weight"), dw1, 1e-12, "fc1.weight");
    assert_close(tj_program_grad(p, "fc1.bias"), db1, 1e-12, "fc1.bias");
    assert_close(tj_program_grad(p, "fc2.weight"), dw2, 1e-12, "fc2.weight");
    assert_close(tj_program_grad(p, "fc2.bias"), db2, 1e-12, "fc2.bias");
    tj_scope_end();
    tj_program_free(p);
    setup_free(&s);
}

static void fused_backward_equals_unfused(void **state) {
    (void)state;
    /* the registry's LSTM cell at small sizes, gradients of its parameters and inputs */
    tj_generator *gen = tj_generator_new(4);
    void *params = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){3, 5, 6, 1, 1});
    tj_tensor *in[3];
    assert_int_equal(tjx_lstm_cell.make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(tjx_lstm_cell.forward, params, in, 3, 2, NULL);
    bool want[3] = {true, true, true};
    tj_program *plain = compile_grad(g, "", want), *fused = compile_grad(g, NULL, want);
    /* the backward graph really fused */
    int groups = 0;
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)tj_program_backward_graph(fused))); n;
         n = tj_node_next(n))
        groups += tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP;
    assert_true(groups >= 1);
    tj_scope_begin();
    tj_tensor *out[2], *ga[3], *gb[3];
    int64_t hs[2] = {3, 6};
    tj_tensor *gout[2] = {tt_random(gen, hs, 2, TJ_F32, -1, 1), tt_random(gen, hs, 2, TJ_F32, -1, 1)};
    assert_int_equal(tj_run(plain, in, out), TJ_OK);
    assert_int_equal(tj_backward(plain, gout, ga), TJ_OK);
    assert_int_equal(tj_run(fused, in, out), TJ_OK);
    assert_int_equal(tj_backward(fused, gout, gb), TJ_OK);
    for (int i = 0; i < 3; i++) assert_close(gb[i], ga[i], 1e-5, "input gradient");
    static const char *const names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int k = 0; k < 4; k++) assert_close(tj_program_grad(fused, names[k]), tj_program_grad(plain, names[k]), 1e-5, names[k]);
    tj_scope_end();
    tj_program_free(plain);
    tj_program_free(fused);
    tj_graph_free(g);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tjx_lstm_cell.destroy(params);
    tj_generator_free(gen);
}

static void only_what_backward_reads_is_kept(void **state) {
    (void)state;
    setup s;
    setup_make(&s);
    tj_program *p = compile_grad(s.g, NULL, NULL);
    int n = -1;
    int64_t bytes = -1;
    assert_int_equal(tj_program_saved(p, &n, &bytes), TJ_OK);
    assert_int_equal(n, 0); /* nothing before a forward */
    tj_tensor *loss;
    assert_int_equal(tj_run(p, s.in, &loss), TJ_OK);
    tj_release(loss);
    assert_int_equal(tj_program_saved(p, &n, &bytes), TJ_OK);
    /* every saved value is an input of the backward graph that some node reads */
    const tj_graph *b = tj_program_backward_graph(p);
    int n_out = tj_program_num_outputs(p);
    assert_int_equal(n, tj_graph_num_inputs(b) - n_out);
    for (int i = n_out; i < tj_graph_num_inputs(b); i++)
        assert_true(tj_value_num_uses(tj_graph_input((tj_graph *)b, i)) > 0);
    /* fewer than the forward's values: not everything is kept */
    assert_true(n > 0 && n < tj_block_num_nodes(tj_graph_block(s.g)) + 6);
    assert_true(bytes > 0);
    assert_int_equal(tj_backward(p, NULL, NULL), TJ_OK);
    assert_int_equal(tj_program_saved(p, &n, &bytes), TJ_OK);
    assert_int_equal(n, 0); /* released by backward */
    tj_program_free(p);
    setup_free(&s);
}

static void backward_errors_and_accumulation(void **state) {
    (void)state;
    setup s;
    setup_make(&s);
    tj_program *p = compile_grad(s.g, NULL, NULL);
    assert_int_equal(tj_backward(p, NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("no forward to differentiate; call tj_run first");
    assert_null(tj_program_grad(p, "fc1.weight"));
    tt_assert_error("'fc1.weight' has no gradient yet");
    tj_scope_begin();
    tj_tensor *loss;
    assert_int_equal(tj_run(p, s.in, &loss), TJ_OK);
    assert_int_equal(tj_backward(p, NULL, NULL), TJ_OK);
    assert_int_equal(tj_backward(p, NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("already computed; run forward again first");
    tj_tensor *once = tj_clone(tj_program_grad(p, "fc2.weight"));
    assert_int_equal(tj_run(p, s.in, &loss), TJ_OK);
    assert_int_equal(tj_backward(p, NULL, NULL), TJ_OK); /* accumulates */
    assert_close(tj_program_grad(p, "fc2.weight"), tj_mul_scalar(once, 2.0), 1e-12, "accumulated");
    tj_program_zero_grad(p);
    assert_null(tj_program_grad(p, "fc2.weight"));
    assert_null(tj_program_grad(p, "no.such"));
    tt_assert_error("no parameter named 'no.such'");
    tj_scope_end();
    tj_clear_error();
    tj_program *plain = tj_compile(s.g, NULL);
    assert_int_equal(tj_backward(plain, NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("compiled without gradients");
    bool none[2] = {false, false};
    tj_compile_options o = {.requires_grad = none};
    assert_null(tj_compile(s.g, &o));
    tt_assert_error("no input or parameter takes one");
    tj_clear_error();
    tj_program_free(plain);
    tj_program_free(p);
    setup_free(&s);
}

static void input_gradients(void **state) {
    (void)state;
    setup s;
    setup_make(&s);
    bool want[2] = {true, false};
    tj_program *p = compile_grad(s.g, NULL, want);
    tj_scope_begin();
    tj_tensor *loss, *grads[2] = {NULL, NULL};
    assert_int_equal(tj_run(p, s.in, &loss), TJ_OK);
    assert_int_equal(tj_backward(p, NULL, grads), TJ_OK);
    assert_non_null(grads[0]);
    assert_null(grads[1]); /* integer targets take none */
    tt_assert_sizes(grads[0], tj_sizes(s.in[0]), 2);
    tj_scope_end();
    tj_program_free(p);
    setup_free(&s);
}

/* A graph read from text may leave values untyped: autodiff types the
 * values on the gradient's path from their inputs (a chunk's pieces here),
 * so the gradient matches the typed graph's instead of stopping at them; a
 * value whose type its inputs cannot give is named in an error. */
static void untyped_values_on_the_gradient_path(void **state) {
    (void)state;
    const char *typed = "graph(%x : Double(4, 3, strides=[3, 1], device=cpu)):\n"
                        "  %y : Double(4, 3, strides=[3, 1], device=cpu) = aten::tanh(%x)\n"
                        "  %a : Double(2, 3, strides=[3, 1], device=cpu), "
                        "%b : Double(2, 3, strides=[3, 1], device=cpu) = aten::chunk[chunks=2, dim=0](%y)\n"
                        "  %m : Double(2, 3, strides=[3, 1], device=cpu) = aten::mul(%a, %b)\n"
                        "  return (%m)\n";
    const char *untyped = "graph(%x : Double(4, 3, strides=[3, 1], device=cpu)):\n"
                          "  %y = aten::tanh(%x)\n"
                          "  %a, %b = aten::chunk[chunks=2, dim=0](%y)\n"
                          "  %m = aten::mul(%a, %b)\n"
                          "  return (%m)\n";
    tj_generator *gen = tj_generator_new(5);
    int64_t sizes[2] = {4, 3};
    tj_tensor *x = tj_randn(sizes, 2, TJ_F64, gen);
    tj_tensor *grads[2] = {NULL, NULL}, *outs[2] = {NULL, NULL};
    bool want = true;
    for (int k = 0; k < 2; k++) {
        tj_graph *g = tj_graph_parse(k ? untyped : typed, NULL);
        if (!g) fail_msg("parse: %s", tj_last_error());
        tj_compile_options o = {.requires_grad = &want};
        tj_program *p = tj_compile(g, &o);
        if (!p) fail_msg("compile: %s", tj_last_error());
        assert_int_equal(tj_run(p, &x, &outs[k]), TJ_OK);
        assert_int_equal(tj_backward(p, NULL, &grads[k]), TJ_OK);
        tj_program_free(p);
        tj_graph_free(g);
    }
    assert_close(outs[1], outs[0], 1e-12, "output");
    assert_close(grads[1], grads[0], 1e-12, "gradient");
    double sum = 0;
    for (int i = 0; i < 12; i++) sum += fabs(((const double *)tj_data(grads[0]))[i]);
    assert_true(sum > 0.1); /* a gradient flows: the comparison is not of zeros */
    /* an op whose input has no known type cannot give its output one */
    tj_graph *g = tj_graph_parse("graph(%x : Double(4, 3, strides=[3, 1], device=cpu), %w):\n"
                                 "  %y = aten::mul(%x, %w)\n"
                                 "  return (%y)\n",
                                 NULL);
    if (!g) fail_msg("parse: %s", tj_last_error());
    bool want2[2] = {true, false};
    tj_compile_options o = {.requires_grad = want2};
    assert_null(tj_compile(g, &o));
    assert_non_null(strstr(tj_last_error(), "aten::mul"));
    assert_non_null(strstr(tj_last_error(), "no known type"));
    tj_graph_free(g);
    for (int k = 0; k < 2; k++) tj_release(grads[k]), tj_release(outs[k]);
    tj_release(x);
    tj_generator_free(gen);
}

/* the gradient of a gradient: the loss's Hessian-vector products */
static void second_derivatives_of_a_model(void **state) {
    (void)state;
    setup s;
    setup_make(&s);
    bool wrt[6] = {true, false, true, true, true, true};
    for (int i = 2; i < tj_graph_num_inputs(s.g); i++) wrt[i] = true;
    tj_graph *gg = tj_grad_graph(s.g, wrt);
    assert_non_null(gg);
    /* check the gradient graph's own derivative against finite differences */
    int n = tj_graph_num_inputs(gg);
    tj_tensor *args[16];
    bool w2[16];
    for (int i = 0; i < n; i++) {
        tj_tensor *bound = i < tj_graph_num_inputs(s.g) ? tj_graph_input_binding(s.g, i) : NULL;
        const tj_type *t = tj_value_type(tj_graph_input(gg, i));
        args[i] = i < 2 ? tj_retain(s.in[i]) : bound ? tj_retain(bound) : tt_random(s.gen, t->sizes, t->ndim, (tj_dtype)t->dtype, -1, 1);
        w2[i] = t->dtype == TJ_F64;
    }
    /* the bindings stay: run the gradient graph with its parameters as plain inputs */
    tj_graph *plain = tj_graph_clone(gg, NULL);
    tt_gradcheck_graph(plain, args, w2, 1e-5, 1e-4, "MLP loss, second order");
    for (int i = 0; i < n; i++) tj_release(args[i]);
    tj_graph_free(plain);
    tj_graph_free(gg);
    setup_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_gradients_match_a_hand_written_backward),
        cmocka_unit_test(fused_backward_equals_unfused),
        cmocka_unit_test(only_what_backward_reads_is_kept),
        cmocka_unit_test(backward_errors_and_accumulation),
        cmocka_unit_test(input_gradients),
        cmocka_unit_test(second_derivatives_of_a_model),
        cmocka_unit_test(untyped_values_on_the_gradient_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
