/* test_scale.c — compile time stays linear in graph size: a 200,000-node relu
 * chain and a 200,000-node graph over 1,000 inputs (bench/scale_models.h) are
 * traced, compiled with the default pipeline and run, their results checked
 * against plain-C references; a smaller graph is compiled with gradients and
 * its input gradients checked; a graph that the passes rewrite node by node
 * (peephole, CSE, DCE, a cat of thousands) likewise. The sizes are such that a quadratic step
 * anywhere (a pass, the fuser, the IR, lowering) would take minutes: ctest's
 * TIMEOUT for this test (CMakeLists.txt) catches it. Under the sanitizers the
 * graphs are ten times smaller. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "bench/scale_models.h"

#if defined(__SANITIZE_ADDRESS__)
enum { BIG = 20000, GRAD = 4000 };
#else
enum { BIG = 200000, GRAD = 20000 };
#endif

static tj_program *trace_compile(tj_model_fn fn, int64_t n, tj_tensor **in, int n_in,
                                 const bool *requires_grad) {
    scale_model m = {n};
    tj_graph *g = tj_trace(fn, &m, in, n_in, 1, NULL);
    if (!g) fail_msg("trace: %s", tj_last_error());
    assert_true(tj_block_num_nodes(tj_graph_block(g)) >= n);
    /* the portable runner: this is about the passes' and planning's time;
     * LLVM compiles each distinct group (docs/performance.md, "Compile time") */
    tj_compile_options o = {.requires_grad = requires_grad, .backend = "portable"};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    tj_graph_free(g);
    return p;
}

static void relu_chain_of_200k_nodes(void **state) {
    (void)state;
    float x[6] = {-2.5f, -0.0f, 0.0f, 1e-30f, 3.0f, -7.0f};
    int64_t size = 6;
    tj_tensor *in = tj_from_array(x, &size, 1, TJ_F32);
    tj_program *p = trace_compile(scale_chain_fn, BIG, &in, 1, NULL);
    tj_tensor *out = NULL;
    assert_int_equal(tj_run(p, &in, &out), TJ_OK);
    const float *y = tj_data(out);
    for (int i = 0; i < 6; i++) assert_true(y[i] == (x[i] > 0 ? x[i] : 0.0f));
    tj_release(out);
    tj_program_free(p);
    tj_release(in);
}

/* Replays the wide graph of n nodes once and compares with its reference. */
static void run_wide_against_reference(tj_program *p, int64_t n, tj_tensor **in) {
    tj_tensor *out = NULL;
    assert_int_equal(tj_run(p, in, &out), TJ_OK);
    const float *data[SCALE_WIDE_INPUTS];
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) data[i] = tj_data(in[i]);
    double ref[SCALE_ELEMS];
    assert_true(scale_wide_reference(n, data, SCALE_ELEMS, ref, NULL));
    const float *y = tj_data(out);
    for (int e = 0; e < SCALE_ELEMS; e++) {
        if (fabs(y[e] - ref[e]) > 1e-3 * (1 + fabs(ref[e])))
            fail_msg("element %d: %.7g, the reference %.7g", e, y[e], ref[e]);
    }
    tj_release(out);
}

static void wide_graph_of_200k_nodes_over_1000_inputs(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(11);
    tj_tensor *in[SCALE_WIDE_INPUTS];
    assert_true(scale_wide_inputs(in, gen));
    tj_program *p = trace_compile(scale_wide_fn, BIG, in, SCALE_WIDE_INPUTS, NULL);
    run_wide_against_reference(p, BIG, in);
    tj_program_free(p);
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) tj_release(in[i]);
    tj_generator_free(gen);
}

/* The default backend compiles every distinct group: the plan compiles them
 * on the library's threads at once (interpreter/plan_build.c,
 * compile_kernels); four threads on one graph of about 30 distinct groups,
 * against the reference. */
static void wide_graph_with_llvm_on_four_threads(void **state) {
    (void)state;
#ifdef TJIT_HAVE_LLVM
    enum { NODES = 2000 };
    tj_generator *gen = tj_generator_new(12);
    tj_tensor *in[SCALE_WIDE_INPUTS];
    assert_true(scale_wide_inputs(in, gen));
    scale_model m = {NODES};
    tj_graph *g = tj_trace(scale_wide_fn, &m, in, SCALE_WIDE_INPUTS, 1, NULL);
    assert_non_null(g);
    int was = tj_get_num_threads();
    tj_set_num_threads(4);
    tj_compile_options o = {.backend = "llvm"};
    tj_program *p = tj_compile(g, &o);
    tj_set_num_threads(was);
    if (!p) fail_msg("compile: %s", tj_last_error());
    tj_graph_free(g);
    run_wide_against_reference(p, NODES, in);
    tj_program_free(p);
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) tj_release(in[i]);
    tj_generator_free(gen);
#else
    skip();
#endif
}

static void wide_graph_gradients(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(12);
    tj_tensor *in[SCALE_WIDE_INPUTS], *grad[SCALE_WIDE_INPUTS] = {0};
    bool requires[SCALE_WIDE_INPUTS];
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) requires[i] = true;
    assert_true(scale_wide_inputs(in, gen));
    tj_program *p = trace_compile(scale_wide_fn, GRAD, in, SCALE_WIDE_INPUTS, requires);
    tj_tensor *out = NULL;
    assert_int_equal(tj_run(p, in, &out), TJ_OK);
    assert_int_equal(tj_backward(p, NULL, grad), TJ_OK);
    const float *data[SCALE_WIDE_INPUTS];
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) data[i] = tj_data(in[i]);
    double y[SCALE_ELEMS];
    double *ref = malloc(sizeof(double) * SCALE_WIDE_INPUTS * SCALE_ELEMS);
    assert_non_null(ref);
    assert_true(scale_wide_reference(GRAD, data, SCALE_ELEMS, y, ref));
    int nonzero = 0;
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) {
        if (!grad[i]) fail_msg("no gradient for input %d", i);
        const float *gi = tj_data(grad[i]);
        for (int e = 0; e < SCALE_ELEMS; e++) {
            double r = ref[i * SCALE_ELEMS + e];
            nonzero += r != 0;
            if (fabs(gi[e] - r) > 1e-3 * (1 + fabs(r)))
                fail_msg("d/d input %d, element %d: %.7g, the reference %.7g", i, e, gi[e], r);
        }
        tj_release(grad[i]);
    }
    assert_true(nonzero > SCALE_WIDE_INPUTS); /* the check compares real gradients */
    free(ref);
    tj_release(out);
    tj_program_free(p);
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) tj_release(in[i]);
    tj_generator_free(gen);
}

/* Graphs the passes rewrite node by node (bench/scale_models.h): peephole,
 * CSE and DCE remove most of them and one cat takes thousands of inputs;
 * forward at full size, and gradients at the smaller one. */
static void rewrites(int64_t n, bool with_grad) {
    double xs[SCALE_ELEMS] = {-1.5, -0.0, 0.0, 0.25, 2.0, -3.0, 1e-300, 0.75};
    int64_t sizes[2] = {2, 4};
    tj_tensor *x = tj_from_array(xs, sizes, 2, TJ_F64);
    tj_program *p = trace_compile(scale_rewrites_fn, n, &x, 1, with_grad ? (bool[]){true} : NULL);
    tj_tensor *out = NULL, *grad = NULL;
    assert_int_equal(tj_run(p, &x, &out), TJ_OK);
    int64_t n_pieces = scale_rewrite_pieces(n);
    assert_int_equal(tj_numel(out), n_pieces * SCALE_ELEMS);
    double *ref = malloc(sizeof(double) * (size_t)(n_pieces * SCALE_ELEMS)), gref[SCALE_ELEMS];
    assert_non_null(ref);
    scale_rewrites_reference(n, xs, SCALE_ELEMS, ref, gref);
    const double *y = tj_data(out);
    for (int64_t i = 0; i < n_pieces * SCALE_ELEMS; i++)
        if (fabs(y[i] - ref[i]) > 1e-9 * (1 + fabs(ref[i])))
            fail_msg("element %ld: %.17g, the reference %.17g", (long)i, y[i], ref[i]);
    if (with_grad) {
        assert_int_equal(tj_backward(p, NULL, &grad), TJ_OK);
        const double *gx = tj_data(grad);
        for (int e = 0; e < SCALE_ELEMS; e++)
            if (fabs(gx[e] - gref[e]) > 1e-9 * gref[e])
                fail_msg("d/dx element %d: %.17g, the reference %.17g", e, gx[e], gref[e]);
        tj_release(grad);
    }
    free(ref);
    tj_release(out);
    tj_program_free(p);
    tj_release(x);
}

static void rewritten_graph_of_200k_nodes(void **state) {
    (void)state;
    rewrites(BIG, false);
}

static void rewritten_graph_gradients(void **state) {
    (void)state;
    rewrites(GRAD, true);
}

/* Naming n values alike gives x, x.1, x.2, ... in O(n) (the graph remembers
 * the suffixes taken), and a freed suffix is the first one given again. */
static void many_values_of_one_name(void **state) {
    (void)state;
    enum { N = 50000 };
    tj_graph *g = tj_graph_new();
    tj_value **v = malloc(sizeof *v * N);
    assert_non_null(v);
    char want[32];
    for (int i = 0; i < N; i++) {
        v[i] = tj_graph_add_input(g, NULL, "x");
        assert_non_null(v[i]);
        if (i) snprintf(want, sizeof want, "x.%d", i);
        assert_string_equal(tj_value_name(v[i]), i ? want : "x");
    }
    assert_int_equal(tj_value_set_name(v[7], NULL), TJ_OK);
    assert_int_equal(tj_value_set_name(v[3], NULL), TJ_OK);
    tj_value *a = tj_graph_add_input(g, NULL, "x"), *b = tj_graph_add_input(g, NULL, "x.9");
    tj_value *c = tj_graph_add_input(g, NULL, "x"), *d = tj_graph_add_input(g, NULL, "x");
    assert_string_equal(tj_value_name(a), "x.3");
    assert_string_equal(tj_value_name(b), "x.7");
    snprintf(want, sizeof want, "x.%d", N);
    assert_string_equal(tj_value_name(c), want);
    snprintf(want, sizeof want, "x.%d", N + 1);
    assert_string_equal(tj_value_name(d), want);
    free(v);
    tj_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(relu_chain_of_200k_nodes),
        cmocka_unit_test(wide_graph_of_200k_nodes_over_1000_inputs),
        cmocka_unit_test(wide_graph_with_llvm_on_four_threads),
        cmocka_unit_test(wide_graph_gradients),
        cmocka_unit_test(rewritten_graph_of_200k_nodes),
        cmocka_unit_test(rewritten_graph_gradients),
        cmocka_unit_test(many_values_of_one_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
