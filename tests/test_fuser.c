/* test_fuser.c — the fuser and the portable fused-loop runner: the LSTM
 * cell's gates in one group, the kernel cache by input spec, and a
 * differential tester: random pointwise models (random ops from the table,
 * broadcasting, 0-dim and chunked inputs, mixed dtypes) traced, fused and run
 * on contiguous and strided inputs must equal the unfused replay bit for bit,
 * since both run the same typed loops (the tester is in
 * tests/support/fuser_cases.c, shared with test_llvm.c). TJIT_FUSER_CASES
 * sets the number of random cases (default 1500). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "examples/models/models.h"
#include "fuser/fuser.h"
#include "tests/support/fuser_cases.h"

static int count_kind(tj_graph *g, tj_node_kind kind, const char *op_name);

static tj_program *compile_with(tj_graph *g, bool fuse) {
    return tt_compile_with(g, fuse, NULL, NULL);
}

static int count_kind(tj_graph *g, tj_node_kind kind, const char *op_name) {
    int n = 0;
    for (tj_node *x = tj_block_first(tj_graph_block(g)); x; x = tj_node_next(x))
        if (tj_node_kind_of(x) == kind &&
            (!op_name || (tj_node_op(x) && !strcmp(tj_op_name(tj_node_op(x)), op_name))))
            n++;
    return n;
}

static void assert_identical(tj_tensor *a, tj_tensor *b, const char *what, int seed) {
    tt_assert_identical(a, b, what, seed);
}

static void lstm_gates_form_one_group(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(3);
    void *params = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){4, 8, 16, 1, 1});
    tj_tensor *in[3], *a[2], *b[2];
    assert_int_equal(tjx_lstm_cell.make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(tjx_lstm_cell.forward, params, in, 3, 2, NULL);
    assert_non_null(g);
    int pointwise = 0;
    for (tj_node *x = tj_block_first(tj_graph_block(g)); x; x = tj_node_next(x))
        pointwise += tj_node_op(x) && tj_op_kind_of(tj_node_op(x)) == TJ_KIND_POINTWISE;
    tj_program *unfused = compile_with(g, false);
    assert_int_equal(tj_pass_fuse(g), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    /* two matrix products outside, one group inside which everything else is */
    assert_int_equal(tj_block_num_nodes(tj_graph_block(g)), 3);
    assert_int_equal(count_kind(g, TJ_NODE_OP, "aten::linear"), 2);
    assert_int_equal(count_kind(g, TJ_NODE_FUSION_GROUP, NULL), 1);
    tj_node *grp = tj_block_last(tj_graph_block(g));
    tj_graph *sub = tj_node_subgraph(grp);
    assert_int_equal(count_kind(sub, TJ_NODE_CONSTANT_CHUNK, NULL), 2);
    int inside = 0;
    for (tj_node *x = tj_block_first(tj_graph_block(sub)); x; x = tj_node_next(x))
        inside += tj_node_kind_of(x) == TJ_NODE_OP;
    assert_int_equal(inside, pointwise + 3); /* the gates' add became four adds of pieces */
    assert_int_equal(tj_pass_fuse(g), TJ_OK); /* idempotent */
    assert_int_equal(tj_block_num_nodes(tj_graph_block(g)), 3);

    tj_program *fused = compile_with(g, false);
    tj_scope_begin();
    assert_int_equal(tj_run(unfused, in, a), TJ_OK);
    assert_int_equal(tj_run(fused, in, b), TJ_OK);
    assert_identical(a[0], b[0], "h", 0);
    assert_identical(a[1], b[1], "c", 0);
    tj_scope_end();
    tj_program_free(unfused);
    tj_program_free(fused);
    tj_graph_free(g);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tjx_lstm_cell.destroy(params);
    tj_generator_free(gen);
}

/* ---- the differential tester --------------------------------------------------- */

static void fused_equals_unfused_on_random_graphs(void **state) {
    (void)state;
    const char *env = getenv("TJIT_FUSER_CASES");
    int cases = env ? atoi(env) : 1500;
    tj_generator *gen = tj_generator_new(11);
    tt_fuser_opts o = {NULL, NULL, false, false};
    tt_fuser_counts c = {0, 0, 0};
    for (int seed = 0; seed < cases; seed++) tt_fuser_run_case(seed, gen, &o, &c);
    tj_generator_free(gen);
    /* the comparison means something only when most cases fused */
    print_message("%d of %d random cases formed fusion groups (%d groups)\n", c.fused_cases, cases,
                  c.groups);
    assert_true(c.fused_cases * 10 >= cases * 7);
}

/* A kernel per input spec: a repeated spec reuses it, strided inputs get
 * their own. */
static tj_status small_chain(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_scope_begin();
    out[0] = tj_keep(tj_add_scalar(tj_mul(tj_tanh(in[0]), tj_sigmoid(in[1])), 1.0, 1.0));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static void kernels_are_cached_by_spec(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(5);
    int64_t sz[2] = {6, 6};
    tj_tensor *in[2] = {tt_random(gen, sz, 2, TJ_F32, -1, 1), tt_random(gen, sz, 2, TJ_F32, -1, 1)};
    tj_graph *g = tj_trace(small_chain, NULL, in, 2, 1, NULL);
    assert_non_null(g);
    assert_int_equal(tj_pass_fuse(g), TJ_OK);
    tj_node *grp = tj_block_first(tj_graph_block(g));
    assert_int_equal(tj_node_kind_of(grp), TJ_NODE_FUSION_GROUP);
    tjf_group *run = tjf_group_new(grp, tjf_portable_backend());
    assert_non_null(run);
    /* the group's inputs, in its own order, as graph input positions */
    int pos[2];
    assert_int_equal(tj_node_num_inputs(grp), 2);
    for (int i = 0; i < 2; i++)
        pos[i] = tj_node_input(grp, i) == tj_graph_input(g, 0) ? 0 : 1;
    tj_tensor *args[2] = {in[pos[0]], in[pos[1]]};
    tj_tensor *out[1];
    for (int rep = 0; rep < 3; rep++) {
        assert_int_equal(tjf_group_run(run, args, out), TJ_OK);
        tj_release(out[0]);
    }
    assert_int_equal(tjf_group_num_kernels(run), 1);
    tj_tensor *t = tj_transpose(in[1], 0, 1);
    tj_tensor *strided[2] = {pos[0] == 1 ? t : in[0], pos[1] == 1 ? t : in[0]};
    assert_int_equal(tjf_group_run(run, strided, out), TJ_OK);
    assert_int_equal(tjf_group_num_kernels(run), 2);
    /* and the answer follows the strides */
    tj_scope_begin();
    tj_tensor *want = tj_add_scalar(tj_mul(tj_tanh(in[0]), tj_sigmoid(t)), 1.0, 1.0);
    tt_ref r = tt_ref_of(want);
    tt_assert_close_ref(out[0], &r, 0, 0);
    tt_ref_free(&r);
    tj_scope_end();
    tj_release(out[0]);
    tj_release(t);
    tjf_group_free(run);
    tj_graph_free(g);
    tj_release(in[0]);
    tj_release(in[1]);
    tj_generator_free(gen);
}

/* 100 adds of 100 distinct inputs: groups stay within the operand limit. */
static tj_status wide_chain(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_out;
    tj_scope_begin();
    tj_tensor *x = in[0];
    for (int i = 1; i < n_in; i++) x = tj_add(x, in[i], 1.0);
    out[0] = tj_keep(x);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static void groups_respect_the_operand_limit(void **state) {
    (void)state;
    enum { N = 100 };
    tj_generator *gen = tj_generator_new(9);
    int64_t sz[1] = {33};
    tj_tensor *in[N];
    for (int i = 0; i < N; i++) in[i] = tt_random(gen, sz, 1, TJ_F64, -1, 1);
    tj_graph *g = tj_trace(wide_chain, NULL, in, N, 1, NULL);
    tj_program *plain = compile_with(g, false), *fused = compile_with(g, true);
    assert_int_equal(tj_pass_fuse(g), TJ_OK);
    int groups = count_kind(g, TJ_NODE_FUSION_GROUP, NULL);
    assert_true(groups >= 2);
    for (tj_node *x = tj_block_first(tj_graph_block(g)); x; x = tj_node_next(x))
        if (tj_node_kind_of(x) == TJ_NODE_FUSION_GROUP)
            assert_true(tj_node_num_inputs(x) + tj_node_num_outputs(x) <= TJF_MAX_ARGS + 12);
    tj_tensor *a, *b;
    assert_int_equal(tj_run(plain, in, &a), TJ_OK);
    assert_int_equal(tj_run(fused, in, &b), TJ_OK);
    assert_identical(a, b, "wide chain", 0);
    tj_release(a);
    tj_release(b);
    tj_program_free(plain);
    tj_program_free(fused);
    tj_graph_free(g);
    for (int i = 0; i < N; i++) tj_release(in[i]);
    tj_generator_free(gen);
}

/* A chunk hoisted above a pointwise op (split(cos(e)) -> cos(split(e))) and
 * grouped, then the producer of the chunked value (e = exp(x), read by gelu
 * too) offered to the group: it must stay outside, since the runner chunks
 * only group inputs (found by the graph fuzzer: replay failed with "a chunk
 * of something other than a group input"). */
static void chunked_value_producer_stays_outside(void **state) {
    (void)state;
    tj_graph *g = tj_graph_parse(
        "graph(%x : Double(2, 4)):\n"
        "  %e : Double(2, 4) = aten::exp(%x)\n"
        "  %c : Double(2, 4) = aten::cos(%e)\n"
        "  %g : Double(2, 4) = aten::gelu(%e)\n"
        "  %p : Double(2, 4) = aten::split.Tensor[split_size=4, dim=1](%c)\n"
        "  return (%g, %p)\n",
        NULL);
    assert_non_null(g);
    int groups = 0;
    tj_program *plain = tt_compile_with(g, false, NULL, NULL);
    tj_program *fused = tt_compile_with(g, true, NULL, &groups);
    assert_true(groups >= 1);
    int64_t sz[2] = {2, 4};
    tj_generator *gen = tj_generator_new(5);
    tj_tensor *x = tt_random(gen, sz, 2, TJ_F64, -1, 1), *a[2], *b[2];
    assert_int_equal(tj_run(plain, &x, a), TJ_OK);
    if (tj_run(fused, &x, b) != TJ_OK) fail_msg("fused: %s", tj_last_error());
    for (int o = 0; o < 2; o++) {
        assert_identical(a[o], b[o], "chunk of a group-made value", 0);
        tj_release(a[o]);
        tj_release(b[o]);
    }
    tj_release(x);
    tj_generator_free(gen);
    tj_program_free(plain);
    tj_program_free(fused);
    tj_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunked_value_producer_stays_outside),
        cmocka_unit_test(lstm_gates_form_one_group),
        cmocka_unit_test(kernels_are_cached_by_spec),
        cmocka_unit_test(groups_respect_the_operand_limit),
        cmocka_unit_test(fused_equals_unfused_on_random_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
