/* test_tracer.c — tj_trace: one node per high-level call and none for the
 * ops kernels call inside themselves, parameters as bound inputs, C numbers
 * as attributes, the errors (outputs not from the trace, bad arguments,
 * tracing inside tracing), host-read warnings, in-place ops on inputs, views
 * and constants, and the check option. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "examples/models/models.h"
#include "tests/support/runtime_testing.h"

/* For tests that create an example model's parameters, which must not belong
 * to a scope: the model's destroy function releases them. */
static int setup_plain(void **state) {
    (void)state;
    tj_clear_error();
    return 0;
}

static tj_tensor *randn(tj_generator *gen, int64_t rows, int64_t cols) {
    int64_t s[2] = {rows, cols};
    tj_tensor *t = tj_randn(s, 2, TJ_F32, gen);
    assert_non_null(t);
    return t;
}

static void assert_contains(const char *text, const char *needle) {
    if (!text || !strstr(text, needle)) {
        fprintf(stderr, "expected \"%s\" in:\n%s\n", needle, text ? text : "(null)");
        fail();
    }
}

/* Replays g once on inputs and returns its outputs (owned by the scope). */
static void replay(const tj_graph *g, tj_tensor *const *inputs, tj_tensor **outputs) {
    tj_program *p = tj_compile(g, NULL);
    assert_non_null(p);
    if (tj_run(p, inputs, outputs) != TJ_OK) {
        fprintf(stderr, "tj_run: %s\n", tj_last_error());
        fail();
    }
    tj_program_free(p);
}

/* ---- one node per call ------------------------------------------------------------ */

static void test_lstm_cell_records_high_level_ops(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(1);
    void *params = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){2, 3, 4, 1, 1});
    assert_non_null(params);
    tj_scope_begin();
    tj_tensor *in[3];
    assert_int_equal(tjx_lstm_cell.make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(tjx_lstm_cell.forward, params, in, 3, 2, NULL);
    assert_non_null(g);
    assert_int_equal(tt_count_nodes(g, "aten::linear"), 2);
    assert_int_equal(tt_count_nodes(g, "aten::chunk"), 1);
    assert_int_equal(tt_count_nodes(g, "aten::sigmoid"), 3);
    assert_int_equal(tt_count_nodes(g, "aten::tanh"), 2);
    assert_int_equal(tt_count_nodes(g, "aten::mul"), 3);
    assert_int_equal(tt_count_nodes(g, "aten::add"), 2);
    assert_int_equal(tj_block_num_nodes(tj_graph_block(g)), 13); /* nothing else */
    const char *decomposed[] = {"aten::mm", "aten::addmm", "aten::t", "aten::matmul", "aten::narrow",
                                "aten::slice", "prim::Constant"};
    for (size_t i = 0; i < sizeof decomposed / sizeof *decomposed; i++)
        assert_int_equal(tt_count_nodes(g, decomposed[i]), 0);
    /* the chunk keeps its attributes and has four outputs */
    tj_node *chunk = tt_find_node(g, "aten::chunk");
    assert_int_equal(tj_node_num_outputs(chunk), 4);
    assert_int_equal(tj_node_attr(chunk, tj_node_attr_index(chunk, "chunks"))->i, 4);
    assert_int_equal(tj_node_attr(chunk, tj_node_attr_index(chunk, "dim"))->i, 1);
    /* three inputs, then the four weights bound as parameters */
    assert_int_equal(tj_graph_num_inputs(g), 7);
    assert_int_equal(tj_graph_num_outputs(g), 2);
    const char *names[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int i = 0; i < 3; i++) assert_null(tj_graph_input_binding(g, i));
    for (int k = 0; k < 4; k++) {
        bool found = false;
        for (int i = 3; i < 7; i++) {
            const char *name = tj_value_name(tj_graph_input(g, i));
            if (name && !strcmp(name, names[k])) {
                found = true;
                assert_non_null(tj_graph_input_binding(g, i));
                assert_string_equal(tj_tensor_name(tj_graph_input_binding(g, i)), names[k]);
            }
        }
        assert_true(found);
    }
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
    tj_scope_end();
    tjx_lstm_cell.destroy(params);
    tj_generator_free(gen);
}

static tj_status loss_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    out[0] = tj_cross_entropy_loss(in[0], in[1], NULL, "mean", -100, 0.0);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_ops_inside_kernels_not_recorded(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(2);
    int64_t ts[1] = {4};
    tj_tensor *in[2] = {randn(gen, 4, 5), tj_zeros(ts, 1, TJ_I64)};
    tj_graph *g = tj_trace(loss_model, NULL, in, 2, 1, NULL);
    assert_non_null(g);
    /* the loss and the prim::None of its absent weight; no log_softmax, nll_loss */
    assert_int_equal(tj_block_num_nodes(tj_graph_block(g)), 2);
    assert_int_equal(tt_count_nodes(g, "aten::cross_entropy_loss"), 1);
    assert_int_equal(tt_count_nodes(g, "prim::None"), 1);
    tj_graph_free(g);
    tj_generator_free(gen);
}

/* ---- parameters and attributes ------------------------------------------------------ */

typedef struct affine {
    tj_tensor *w, *b;
} affine;

static tj_status affine_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    affine *m = ctx;
    out[0] = tj_linear(in[0], m->w, m->b);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_parameters_become_bound_inputs(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(3);
    affine m = {randn(gen, 3, 4), NULL};
    int64_t bs[1] = {3};
    m.b = tj_ones(bs, 1, TJ_F32);
    assert_int_equal(tj_tensor_set_name(m.w, "layer.weight"), TJ_OK);
    tj_tensor *x = randn(gen, 2, 4);
    tj_graph *g = tj_trace(affine_model, &m, &x, 1, 1, NULL);
    assert_non_null(g);
    assert_int_equal(tj_graph_num_inputs(g), 3);
    assert_null(tj_graph_input_binding(g, 0));
    assert_ptr_equal(tj_graph_input_binding(g, 1), m.w);
    assert_ptr_equal(tj_graph_input_binding(g, 2), m.b);
    assert_null(tj_graph_input_binding(g, 3)); /* out of range */
    assert_null(tj_graph_input_binding(g, -1));
    assert_string_equal(tj_value_name(tj_graph_input(g, 1)), "layer.weight");
    assert_string_equal(tj_value_name(tj_graph_input(g, 2)), "param_1"); /* the second parameter */
    /* a parameter's type is the tensor's */
    const tj_type *ty = tj_value_type(tj_graph_input(g, 1));
    assert_int_equal(ty->ndim, 2);
    assert_int_equal(ty->sizes[0], 3);
    assert_int_equal(ty->sizes[1], 4);
    /* the graph holds its own references: it outlives the caller's */
    tj_graph *copy = tj_graph_clone(g, NULL);
    tj_graph_free(copy);
    tj_graph_free(g);
    tj_generator_free(gen);
}

static tj_status scalar_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    double k = 2.5; /* a C number: an attribute, never a graph input */
    int64_t dim = 1;
    out[0] = tj_sum(tj_mul_scalar(tj_add_scalar(in[0], k, 1.0), 3.0 * k), &dim, 1, true);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_c_numbers_become_attributes(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(4);
    tj_tensor *x = randn(gen, 2, 3);
    tj_graph *g = tj_trace(scalar_model, NULL, &x, 1, 1, NULL);
    assert_non_null(g);
    assert_int_equal(tj_graph_num_inputs(g), 1);
    assert_int_equal(tt_count_nodes(g, "prim::Constant"), 0);
    tj_node *add = tj_block_first(tj_graph_block(g));
    assert_string_equal(tj_node_name(add), "aten::add.Scalar");
    assert_int_equal(tj_node_num_inputs(add), 1);
    assert_true(tj_node_attr(add, tj_node_attr_index(add, "other"))->f == 2.5);
    tj_node *mul = tj_node_next(add);
    assert_true(tj_node_attr(mul, tj_node_attr_index(mul, "other"))->f == 7.5);
    tj_node *sum = tj_node_next(mul);
    const tj_attr *dim = tj_node_attr(sum, tj_node_attr_index(sum, "dim"));
    assert_int_equal(dim->ints.n, 1);
    assert_int_equal(dim->ints.data[0], 1);
    assert_true(tj_node_attr(sum, tj_node_attr_index(sum, "keepdim"))->b);
    char *text = tj_graph_to_string(g, TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES);
    assert_contains(text, "other=2.5");
    assert_contains(text, "keepdim=True");
    free(text);
    tj_graph_free(g);
    tj_generator_free(gen);
}

/* ---- errors -------------------------------------------------------------------------- */

static tj_status returns_ctx(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    out[0] = tj_relu(in[0]);
    /* a new reference owned by the current scope, as an op's result would be */
    out[1] = tj_retain(ctx);
    tjc_scope_track(out[1]);
    return TJ_OK;
}

static tj_status returns_null(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)in;
    (void)n_in;
    (void)n_out;
    out[0] = NULL;
    return TJ_OK;
}

static tj_status fails(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    int64_t bad[1] = {7};
    out[0] = tj_add(in[0], tj_zeros(bad, 1, TJ_F32), 1.0); /* does not broadcast */
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_output_not_from_trace(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(5);
    tj_tensor *x = randn(gen, 2, 3);
    /* made before tracing and never read by an op: the graph cannot compute it */
    tj_tensor *outside = randn(gen, 2, 3);
    tj_tensor_set_name(outside, "stale");
    tj_scope_begin();
    assert_null(tj_trace(returns_ctx, outside, &x, 1, 2, NULL));
    tj_scope_end();
    tt_assert_error("output 1 ('stale') does not depend on the trace");
    tj_clear_error();
    assert_null(tj_trace(returns_null, NULL, &x, 1, 1, NULL));
    tt_assert_error("output 0 is NULL");
    tj_clear_error();
    assert_null(tj_trace(fails, NULL, &x, 1, 1, NULL));
    tt_assert_error("the model failed");
    tt_assert_error("aten::add");
    tj_generator_free(gen);
}

static tj_status difference(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    out[0] = tj_sub(in[0], in[1], 1.0);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_bad_arguments(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(6);
    tj_tensor *x[2] = {randn(gen, 2, 3), NULL};
    assert_null(tj_trace(NULL, NULL, x, 1, 1, NULL));
    tt_assert_error("the model function is NULL");
    assert_null(tj_trace(scalar_model, NULL, x, 1, 0, NULL));
    tt_assert_error("at least one output");
    assert_null(tj_trace(scalar_model, NULL, x, -1, 1, NULL));
    tt_assert_error("n_in=-1");
    assert_null(tj_trace(scalar_model, NULL, NULL, 1, 1, NULL));
    tt_assert_error("input array");
    assert_null(tj_trace(scalar_model, NULL, x, 2, 1, NULL));
    tt_assert_error("input 1 is NULL");
    /* one tensor given twice: replay could not tell the two inputs apart */
    tj_tensor *twice[2] = {x[0], x[0]};
    assert_null(tj_trace(difference, NULL, twice, 2, 1, NULL));
    tt_assert_error("inputs 0 and 1 are the same tensor");
    tj_generator_free(gen);
}

static tj_status nested_trace(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_out;
    tj_graph *inner = tj_trace(scalar_model, NULL, in, n_in, 1, NULL);
    *(tj_status *)ctx = inner ? TJ_OK : tj_last_status();
    tj_graph_free(inner);
    out[0] = tj_relu(in[0]);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_tracing_inside_tracing_refused(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(7);
    tj_tensor *x = randn(gen, 2, 3);
    tj_status inner = TJ_OK;
    tj_graph *g = tj_trace(nested_trace, &inner, &x, 1, 1, NULL);
    assert_int_equal(inner, TJ_ERR_UNSUPPORTED);
    /* the outer trace is not disturbed */
    assert_non_null(g);
    assert_int_equal(tj_block_num_nodes(tj_graph_block(g)), 1);
    tj_graph_free(g);
    /* and tracing works again afterwards */
    g = tj_trace(scalar_model, NULL, &x, 1, 1, NULL);
    assert_non_null(g);
    tj_graph_free(g);
    tj_generator_free(gen);
}

/* A model that replays a compiled program inside itself. */
static tj_status replays_inside(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                int n_out) {
    (void)n_in;
    (void)n_out;
    tj_tensor *y = NULL;
    tj_status st = tj_run(ctx, in, &y);
    if (st) return st;
    out[0] = tj_relu(y);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_replay_inside_tracing_refused(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(13);
    tj_tensor *x = randn(gen, 2, 3);
    tj_graph *inner = tj_trace(scalar_model, NULL, &x, 1, 1, NULL);
    tj_program *p = tj_compile(inner, NULL);
    assert_non_null(p);
    assert_null(tj_trace(replays_inside, p, &x, 1, 1, NULL));
    tt_assert_error("tj_run: cannot replay a program while tracing on this thread");
    tj_clear_error();
    /* outside tracing the same model runs */
    tj_tensor *y;
    assert_int_equal(replays_inside(p, &x, 1, &y, 1), TJ_OK);
    tj_program_free(p);
    tj_graph_free(inner);
    tj_generator_free(gen);
}

/* ---- host reads ------------------------------------------------------------------------ */

static tj_status reads_host(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    double total = 0;
    tj_status st = tj_item(tj_sum(in[0], NULL, 0, false), &total);
    if (st) return st;
    float *p = tj_data(in[0]);
    out[0] = tj_add_scalar(in[0], total + p[0], 1.0);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_host_reads_record_warnings(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(8);
    tj_tensor *x = randn(gen, 2, 3);
    tj_tensor_set_name(x, "x");
    tj_graph *g = tj_trace(reads_host, NULL, &x, 1, 1, NULL);
    assert_non_null(g);
    assert_int_equal(tj_graph_num_warnings(g), 2);
    assert_contains(tj_graph_warning(g, 0), "tj_item");
    assert_contains(tj_graph_warning(g, 1), "tj_data");
    assert_contains(tj_graph_warning(g, 1), "'x'");
    assert_null(tj_graph_warning(g, 2));
    tj_graph_free(g);
    /* a model that does not read the host has none */
    g = tj_trace(scalar_model, NULL, &x, 1, 1, NULL);
    assert_int_equal(tj_graph_num_warnings(g), 0);
    tj_graph_free(g);
    tj_generator_free(gen);
}

/* ---- in-place ops ---------------------------------------------------------------------- */

static tj_status scales_input(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_mul_scalar_(in[0], 2.0); /* the caller sees its input doubled */
    out[0] = tj_add(in[0], in[1], 1.0);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_inplace_on_input_replays_faithfully(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(9);
    tj_tensor *x = randn(gen, 2, 3), *y = randn(gen, 2, 3);
    tj_tensor *x_eager = tt_copy(x), *x_replay = tt_copy(x);
    tj_tensor *in[2] = {tt_copy(x), y};
    tj_graph *g = tj_trace(scales_input, NULL, in, 2, 1, NULL);
    assert_non_null(g);
    assert_int_equal(tt_count_nodes(g, "aten::mul_.Scalar"), 1);
    tj_tensor *eager, *replayed;
    tj_tensor *ein[2] = {x_eager, y}, *rin[2] = {x_replay, y};
    assert_int_equal(scales_input(NULL, ein, 2, &eager, 1), TJ_OK);
    replay(g, rin, &replayed);
    tt_assert_same(replayed, eager);
    tt_assert_same(x_replay, x_eager); /* the input was mutated in both */
    tj_tensor *doubled = tj_mul_scalar(x, 2.0);
    tt_assert_same(x_replay, doubled);
    tj_graph_free(g);
    tj_generator_free(gen);
}

static tj_status writes_view_reads_base(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                        int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_tensor *row = tj_narrow(in[0], 0, 0, 1);
    tj_add_scalar_(row, 1.0, 1.0);
    out[0] = tj_relu(in[0]); /* reads the base: the write is a slice_scatter */
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status writes_base_reads_view(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                        int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_tensor *row = tj_narrow(in[0], 0, 0, 1);
    tj_mul_scalar_(in[0], 3.0);
    out[0] = tj_relu(row);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status writes_view_reads_view(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                        int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_tensor *row = tj_narrow(in[0], 0, 1, 1);
    tj_add_scalar_(row, 1.0, 1.0); /* writes the input through a view ... */
    out[0] = tj_mul_scalar(row, 2.0); /* ... and reads the same view: fine */
    return out[0] ? TJ_OK : tj_last_status();
}

/* Traces fn on a copy of x, replays it on another, runs it eagerly on a
 * third: the outputs and the inputs (written in place) agree. */
static tj_graph *traced_equals_eager(tj_model_fn fn, tj_tensor *x) {
    tj_tensor *x0 = tt_copy(x), *x_eager = tt_copy(x), *x_replay = tt_copy(x);
    tj_graph *g = tj_trace(fn, NULL, &x0, 1, 1, NULL);
    if (!g) fail_msg("trace: %s", tj_last_error());
    tj_tensor *eager, *replayed;
    assert_int_equal(fn(NULL, &x_eager, 1, &eager, 1), TJ_OK);
    replay(g, &x_replay, &replayed);
    tt_assert_same(replayed, eager);
    tt_assert_same(x_replay, x_eager);
    tt_assert_same(x0, x_eager); /* and the trace's own run */
    return g;
}

static void test_inplace_through_alias(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(10);
    tj_tensor *x = randn(gen, 2, 3);
    /* a write through a view of an input, then the base read: functionalized,
     * with the input's final value copied back once */
    tj_graph *g = traced_equals_eager(writes_view_reads_base, x);
    assert_int_equal(tt_count_nodes(g, "aten::slice_scatter"), 1);
    assert_int_equal(tt_count_nodes(g, "aten::add_.Scalar"), 0);
    assert_int_equal(tt_count_nodes(g, "aten::copy_"), 1);
    tj_graph_free(g);
    /* the base written in place, then a view made before read: made again */
    g = traced_equals_eager(writes_base_reads_view, x);
    assert_int_equal(tt_count_nodes(g, "aten::narrow"), 1);
    tj_graph_free(g);
    /* reading the view that was written */
    g = traced_equals_eager(writes_view_reads_view, x);
    assert_int_equal(tt_count_nodes(g, "aten::narrow"), 1);
    assert_int_equal(tt_count_nodes(g, "aten::slice.Tensor"), 1); /* the view made again */
    tj_graph_free(g);
    tj_generator_free(gen);
}

static tj_status accumulates(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_tensor *acc = tj_full(tj_sizes(in[0]), tj_ndim(in[0]), 1.0, TJ_F32); /* a constant */
    tj_add_(acc, in[0], 1.0);
    tj_add_(acc, in[0], 1.0);
    out[0] = tj_mul_scalar(acc, 2.0);
    return out[0] ? TJ_OK : tj_last_status();
}

/* The same, writing through a view of the constant. */
static tj_status accumulates_view(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                  int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    int64_t s[2] = {2 * tj_size(in[0], 0), tj_size(in[0], 1)};
    tj_tensor *acc = tj_zeros(s, 2, TJ_F32);
    tj_tensor *top = tj_narrow(acc, 0, 0, tj_size(in[0], 0));
    tj_add_(top, in[0], 1.0);
    out[0] = tj_add_scalar(top, 1.0, 1.0);
    return out[0] ? TJ_OK : tj_last_status();
}

static void check_constant_not_shared(tj_model_fn model) {
    tj_generator *gen = tj_generator_new(11);
    tj_tensor *x = randn(gen, 2, 3), *x2 = randn(gen, 2, 3);
    tj_graph *g = tj_trace(model, NULL, &x, 1, 1, NULL);
    assert_non_null(g);
    assert_int_equal(tt_count_nodes(g, "aten::clone"), 1);
    tj_program *p = tj_compile(g, NULL);
    assert_non_null(p);
    tj_tensor *eager, *first, *second, *eager2, *third;
    assert_int_equal(model(NULL, &x, 1, &eager, 1), TJ_OK);
    assert_int_equal(tj_run(p, &x, &first), TJ_OK);
    assert_int_equal(tj_run(p, &x, &second), TJ_OK);
    tt_assert_same(first, eager);
    tt_assert_same(second, eager);
    assert_int_equal(model(NULL, &x2, 1, &eager2, 1), TJ_OK);
    assert_int_equal(tj_run(p, &x2, &third), TJ_OK);
    tt_assert_same(third, eager2);
    tj_program_free(p);
    tj_graph_free(g);
    tj_generator_free(gen);
}

static void test_inplace_on_constant_is_private(void **state) {
    (void)state;
    tt_context("written directly");
    check_constant_not_shared(accumulates);
    tt_context("written through a view");
    check_constant_not_shared(accumulates_view);
    tt_context(NULL);
}

/* ---- the check option ------------------------------------------------------------------- */

static tj_status branches(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    double total = 0;
    tj_status st = tj_item(tj_sum(in[0], NULL, 0, false), &total);
    if (st) return st;
    tj_tensor *h = tj_mul_scalar(in[0], 2.0);
    out[0] = total > 0 ? tj_relu(h) : tj_tanh(h);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_check_inputs(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(12);
    int64_t s[2] = {2, 3};
    tj_tensor *pos = tj_ones(s, 2, TJ_F32), *neg = tj_full(s, 2, -1.0, TJ_F32);
    /* no data-dependent control flow: passes, even for another batch size */
    tj_tensor *other = randn(gen, 5, 3);
    tj_trace_options opts = {.check_inputs = &other};
    tj_graph *g = tj_trace(scalar_model, NULL, &pos, 1, 1, &opts);
    assert_non_null(g);
    tj_graph_free(g);
    /* a branch on a host value differs, and the first differing line is named */
    opts.check_inputs = &neg;
    assert_null(tj_trace(branches, NULL, &pos, 1, 1, &opts));
    tt_assert_error("traces differently on the check inputs");
    tt_assert_error("line 4:");
    tt_assert_error("first trace:    %3 = aten::relu(%2)\n");
    tt_assert_error("second trace:   %3 = aten::tanh(%2)");
    /* the same inputs pass */
    opts.check_inputs = &pos;
    g = tj_trace(branches, NULL, &pos, 1, 1, &opts);
    assert_non_null(g);
    assert_int_equal(tj_graph_num_warnings(g), 1);
    tj_graph_free(g);
    tj_generator_free(gen);
}

int main(void) {
#define T(f) TT_SCOPED_TEST(f)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lstm_cell_records_high_level_ops, setup_plain, setup_plain),
        T(test_ops_inside_kernels_not_recorded),
        T(test_parameters_become_bound_inputs),
        T(test_c_numbers_become_attributes),
        T(test_output_not_from_trace),
        T(test_bad_arguments),
        T(test_tracing_inside_tracing_refused),
        T(test_replay_inside_tracing_refused),
        T(test_host_reads_record_warnings),
        T(test_inplace_on_input_replays_faithfully),
        T(test_inplace_through_alias),
        T(test_inplace_on_constant_is_private),
        T(test_check_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
