/* test_fuser_rows.c — row groups (fuser/fuser.h): a softmax, log_softmax,
 * layer_norm or reduction (sum, mean, amax, amin, logsumexp) over the last
 * dim fused with the pointwise ops that feed it and those that read its
 * result (a reduction's: at the reduced sizes, and at the full sizes reading
 * it broadcast along the row).
 * - The transformer block: softmax(scores * 0.125) and both
 *   layer_norm(x + residual) become one group each; two row ops never share
 *   a group, and the fusion report says why.
 * - The differential tester: random row-group models (tests/support/
 *   row_cases.c) fused and run by every CPU backend built (the portable
 *   runner; LLVM), on contiguous and strided inputs, equal the unfused
 *   replay within the bounds, and no group falls back op by op.
 *   TJIT_ROW_CASES sets the count (default 300).
 * - Backward: the same models compiled with gradients for every input, fused
 *   (row groups in the forward graph, with the values backward saves among
 *   their outputs) and unfused: the input gradients agree within the bounds.
 * - Special rows: a constant row's layer_norm is exactly its bias; a row
 *   holding +inf gives NaN and one holding -inf a 0 where eager does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "fuser/fuser.h"
#include "tests/support/fuser_cases.h"
#include "tests/support/row_cases.h"

static int row_groups(tj_graph *g, int *loose_rows) {
    int n = 0;
    *loose_rows = 0;
    for (tj_node *x = tj_block_first(tj_graph_block(g)); x; x = tj_node_next(x)) {
        if (tj_node_kind_of(x) == TJ_NODE_FUSION_GROUP) n += tjf_row_node(tj_node_subgraph(x)) != NULL;
        else *loose_rows += tjf_row_op(x) != TJF_ROW_NONE;
    }
    return n;
}

static void transformer_rows_fuse(void **state) {
    (void)state;
    const tjx_model *m = tjx_find_model("transformer");
    tj_generator *gen = tj_generator_new(5);
    void *params = m->create(gen);
    tj_tensor *in[4];
    assert_int_equal(m->make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(m->forward, params, in, m->n_in, m->n_out, NULL);
    assert_non_null(g);
    tj_program *unfused = tt_compile_with(g, false, "portable", NULL);
    assert_int_equal(tj_pass_fuse(g), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    int loose, epilogues = 0;
    assert_int_equal(row_groups(g, &loose), 3); /* the softmax and both layer_norms */
    for (tj_node *x = tj_block_first(tj_graph_block(g)); x; x = tj_node_next(x)) {
        if (tj_node_kind_of(x) != TJ_NODE_FUSION_GROUP) continue;
        tj_graph *sub = tj_node_subgraph(x);
        const tj_node *anchor = tjf_anchor_node(sub);
        if (anchor) { /* gelu(linear(x)): the MLP's first layer with its activation */
            epilogues++;
            assert_string_equal(tj_op_name(tj_node_op(anchor)), "aten::linear");
            assert_string_equal(tj_op_name(tj_node_op(tj_block_last(tj_graph_block(sub)))), "aten::gelu");
            continue;
        }
        const tj_node *row = tjf_row_node(sub);
        /* its prologue came with it: the scale or the residual add */
        tj_node *first = tj_block_first(tj_graph_block(sub));
        assert_true(first != row);
        const char *pro = tj_op_name(tj_node_op(first));
        assert_true(!strcmp(pro, "aten::mul.Scalar") || !strcmp(pro, "aten::add"));
    }
    assert_int_equal(loose, 0);
    assert_int_equal(epilogues, 1);
    char *report = tj_fusion_report(g);
    assert_non_null(report);
    assert_non_null(strstr(report, "both hold a row op"));
    free(report);
    const char *backends[] = {"portable", "llvm"};
    for (int b = 0; b < 2; b++) {
        if (!tjf_find_backend(backends[b])) continue;
        tj_program *fused = tt_compile_with(g, false, backends[b], NULL);
        tj_tensor *want, *got;
        assert_int_equal(tj_run(unfused, in, &want), TJ_OK);
        assert_int_equal(tj_run(fused, in, &got), TJ_OK);
        assert_int_equal(tt_row_far(want, got), 0);
        tj_release(want);
        tj_release(got);
        tj_program_free(fused);
    }
    tj_program_free(unfused);
    tj_graph_free(g);
    for (int i = 0; i < m->n_in; i++) tj_release(in[i]);
    m->destroy(params);
    tj_generator_free(gen);
}

/* Runs case c unfused and fused by backend on both layouts. */
static void run_row_case(tt_row_case *c, int seed, tj_generator *gen, const char *backend,
                         int *fused_cases) {
    tj_graph *g = tj_trace(c->model, &c->recipe, c->in, c->n_in, 2, NULL);
    if (!g) fail_msg("row case %d: trace: %s", seed, tj_last_error());
    int groups = 0;
    tj_program *plain = tt_compile_with(g, false, backend, NULL);
    tj_program *fused = tt_compile_with(g, true, backend, &groups);
    tj_graph *fg = tj_graph_clone(g, NULL);
    assert_int_equal(tj_pass_fuse(fg), TJ_OK);
    int loose, rows = row_groups(fg, &loose);
    bool neighbours = tt_row_neighbours(&c->recipe) > 0;
    if (neighbours && rows != 1) {
        char *text = tj_graph_to_string(fg, 0);
        fail_msg("row case %d: the row op is not in a group:\n%s", seed, text);
    }
    *fused_cases += rows;
    tj_graph_free(fg);
    for (int layout = 0; layout < 2; layout++) {
        tj_tensor *args[5];
        for (int i = 0; i < c->n_in; i++)
            args[i] = layout ? tt_fuser_restride(gen, c->in[i], i % 2) : tj_retain(c->in[i]);
        tj_tensor *a[2], *b[2];
        if (tj_run(plain, args, a)) fail_msg("row case %d: unfused: %s", seed, tj_last_error());
        if (tj_run(fused, args, b)) fail_msg("row case %d: fused: %s", seed, tj_last_error());
        for (int k = 0; k < 2; k++) {
            int far = tt_row_far(a[k], b[k]);
            if (far) {
                char *text = tj_graph_to_string(g, 0);
                fail_msg("row case %d (%s, %s inputs), output %d: %d elements past the bounds\n%s",
                         seed, backend, layout ? "strided" : "contiguous", k, far, text);
            }
            tj_release(a[k]);
            tj_release(b[k]);
        }
        for (int i = 0; i < c->n_in; i++) tj_release(args[i]);
    }
    tj_program_free(plain);
    tj_program_free(fused);
    tj_graph_free(g);
}

static void random_row_groups(void **state) {
    (void)state;
    const char *env = getenv("TJIT_ROW_CASES");
    int n = env ? atoi(env) : 300;
    const char *backends[] = {"portable", "llvm"};
    for (int b = 0; b < 2; b++) {
        if (!tjf_find_backend(backends[b])) continue;
        tj_generator *gen = tj_generator_new(77);
        int fused_cases = 0;
        for (int i = 0; i < n; i++) {
            tt_row_case c;
            tt_row_case_setup(i, gen, &c);
            run_row_case(&c, i, gen, backends[b], &fused_cases);
            tt_row_case_free(&c);
        }
        printf("row groups (%s): %d random models, %d row groups, equal to unfused within the bounds\n",
               backends[b], n, fused_cases);
        assert_true(fused_cases > n / 2);
        tj_generator_free(gen);
    }
}

/* Gradients of every input through case c, fused by backend or not. */
static void gradients(tt_row_case *c, const char *backend, bool fuse, tj_tensor *const gout[2],
                      tj_tensor *grads[5]) {
    tj_graph *g = tj_trace(c->model, &c->recipe, c->in, c->n_in, 2, NULL);
    assert_non_null(g);
    bool rg[5] = {true, true, true, true, true};
    tj_compile_options o = {.passes = fuse ? NULL : "", .backend = backend, .requires_grad = rg};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("compile with gradients: %s", tj_last_error());
    tj_tensor *out[2];
    if (tj_run(p, c->in, out) || tj_backward(p, gout, grads))
        fail_msg("forward and backward: %s", tj_last_error());
    tj_release(out[0]);
    tj_release(out[1]);
    tj_program_free(p);
    tj_graph_free(g);
}

static void row_groups_backward(void **state) {
    (void)state;
    const char *backends[] = {"portable", "llvm"};
    for (int b = 0; b < 2; b++) {
        if (!tjf_find_backend(backends[b])) continue;
        tj_generator *gen = tj_generator_new(78);
        int n = 80;
        for (int seed = 0; seed < n; seed++) {
            tt_row_case c;
            tt_row_case_setup(seed, gen, &c);
            tj_tensor *gout[2];
            for (int k = 0; k < 2; k++) /* x's sizes, or a reduction's */
                gout[k] = tt_random(gen, c.out_sizes[k], c.out_ndim[k], tj_tensor_dtype(c.in[0]), -1, 1);
            tj_tensor *want[5] = {0}, *got[5] = {0};
            gradients(&c, backends[b], false, gout, want);
            gradients(&c, backends[b], true, gout, got);
            for (int i = 0; i < c.n_in; i++) {
                assert_non_null(want[i]);
                assert_non_null(got[i]);
                int far = tt_row_far(want[i], got[i]);
                if (far) fail_msg("row case %d (%s): the gradient of input %d: %d elements past the bounds",
                                  seed, backends[b], i, far);
                tj_release(want[i]);
                tj_release(got[i]);
            }
            tj_release(gout[0]);
            tj_release(gout[1]);
            tt_row_case_free(&c);
        }
        printf("row groups backward (%s): %d random models, input gradients fused equal unfused within "
               "the bounds\n", backends[b], n);
        tj_generator_free(gen);
    }
}

/* layer_norm(x + 0) of a constant row, fused: exactly the bias; softmax of
 * a row holding +inf: NaN; holding -inf: 0 there. */
static tj_status special_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    int64_t n = tj_sizes(in[0])[1];
    tj_scope_begin();
    tj_tensor *x = tj_add_scalar(in[0], 0.0, 1.0);
    out[0] = tj_keep(tj_layer_norm(x, &n, 1, in[1], in[2], 1e-5));
    out[1] = tj_keep(tj_softmax(tj_mul_scalar(in[0], 1.0), -1));
    tj_scope_end();
    return TJ_OK;
}

static void special_rows(void **state) {
    (void)state;
    const char *backends[] = {"portable", "llvm"};
    for (int b = 0; b < 2; b++) {
        if (!tjf_find_backend(backends[b])) continue;
        float xs[3][4] = {{3, 3, 3, 3}, {1, INFINITY, 2, 0}, {1, -INFINITY, 2, 0}};
        float ws[4] = {2, 0.5f, 1, 3}, bs[4] = {0.25f, -1, 7, 0};
        int64_t xsz[2] = {3, 4}, n = 4;
        tj_tensor *in[3] = {tj_from_array(xs, xsz, 2, TJ_F32), tj_from_array(ws, &n, 1, TJ_F32),
                            tj_from_array(bs, &n, 1, TJ_F32)};
        tj_graph *g = tj_trace(special_model, NULL, in, 3, 2, NULL);
        assert_non_null(g);
        tj_program *p = tt_compile_with(g, true, backends[b], NULL);
        tj_tensor *out[2];
        assert_int_equal(tj_run(p, in, out), TJ_OK);
        const float *ln = tj_data(out[0]), *sm = tj_data(out[1]);
        for (int j = 0; j < 4; j++) assert_true(ln[j] == bs[j]);
        for (int j = 0; j < 4; j++) assert_true(isnan(sm[4 + j]));
        assert_true(sm[8 + 1] == 0.0f);
        assert_true(fabs(sm[8] + sm[10] + sm[11] - 1.0) < 1e-6);
        tj_release(out[0]);
        tj_release(out[1]);
        tj_program_free(p);
        tj_graph_free(g);
        for (int i = 0; i < 3; i++) tj_release(in[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(transformer_rows_fuse),
        cmocka_unit_test(random_row_groups),
        cmocka_unit_test(row_groups_backward),
        cmocka_unit_test(special_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
