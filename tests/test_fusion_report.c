/* test_fusion_report.c — tj_fusion_report: one hand-written graph per reason
 * the fuser gives for leaving a node outside a group or two groups apart,
 * each checked to name the right nodes; the example models' reports; and
 * TJIT_DUMP=fusion-report printing the report to stderr after the fuse pass.
 * (`tjit dump MODEL --fusion-report` is tested in test_cli.c.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "examples/models/models.h"
#include "tests/support/runtime_testing.h"
#include "tests/support/testing.h"

/* The report of text's graph after the fuse pass (malloc'd). */
static char *report_of(const char *text) {
    tj_graph *g = tj_graph_parse(text, NULL);
    if (!g) print_message("parse: %s\n", tj_last_error());
    assert_non_null(g);
    assert_int_equal(tj_pass_fuse(g), TJ_OK);
    char *r = tj_fusion_report(g);
    assert_non_null(r);
    tj_graph_free(g);
    return r;
}

static void expect_line(const char *report, const char *line) {
    if (!strstr(report, line)) {
        print_message("expected \"%s\" in the report:\n%s", line, report);
        fail();
    }
}

static void expect_absent(const char *report, const char *text) {
    if (strstr(report, text)) {
        print_message("did not expect \"%s\" in the report:\n%s", text, report);
        fail();
    }
}

/* ---- nodes the fuser does not take ------------------------------------------------------ */

static void test_integer_pow(void **state) {
    (void)state;
    /* an integer power fuses: its negative exponents compute (0 unless the
     * base is 1 or -1) as the eager kernel does */
    char *r = report_of("graph(%a : Long(3), %b : Long(3)):\n"
                        "  %d : Long(3) = aten::pow(%a, %b)\n"
                        "  %e : Long(3) = aten::mul(%d, %a)\n"
                        "  return (%e)\n");
    expect_line(r, "# 1 group formed, 2 nodes fused, 0 fusible-kind nodes left out\n");
    free(r);
}

static void test_inplace(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(3)):\n"
                        "  %c : Float(3) = aten::clone(%a)\n"
                        "  %d : Float(3) = aten::relu_(%c)\n"
                        "  %e : Float(3) = aten::neg(%d)\n"
                        "  return (%e)\n");
    expect_line(r, "  %d aten::relu_: not fusible: it writes into an input (an in-place form)\n");
    free(r);
}

static void test_unknown_sizes(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(*, 3)):\n"
                        "  %b : Float(*, 3) = aten::neg(%a)\n"
                        "  %c : Float(*, 3) = aten::exp(%b)\n"
                        "  return (%c)\n");
    expect_line(r, "  %b aten::neg: not fusible: %a is not a tensor of known dtype and sizes\n");
    expect_line(r, "  %c aten::exp: not fusible: %b is not a tensor of known dtype and sizes\n");
    free(r);
}

static void test_uneven_chunk(void **state) {
    (void)state;
    char *r = report_of("graph(%x : Float(5, 4)):\n"
                        "  %p : Float(3, 4), %q : Float(2, 4) = aten::chunk[chunks=2, dim=0](%x)\n"
                        "  %s : Float(3, 4) = aten::neg(%p)\n"
                        "  %t : Float(3, 4) = aten::exp(%s)\n"
                        "  return (%t, %q)\n");
    expect_line(r, "  %p aten::chunk: not fusible: not a chunk into equal pieces");
    expect_line(r, "# 1 group formed, 2 nodes fused, 1 fusible-kind node left out\n");
    free(r);
}

static void test_dead_node(void **state) {
    (void)state;
    char *r = report_of("graph(%x : Float(4)):\n"
                        "  %a : Float(4) = aten::neg(%x)\n"
                        "  %b : Float(4) = aten::exp(%x)\n"
                        "  return (%a)\n");
    expect_line(r, "  %b aten::exp: nobody reads its result (dead code is left to dce)\n");
    expect_line(r, "  %a aten::neg: no producer or user it could join (it reads only graph inputs, "
                   "and only the graph returns it)\n");
    free(r);
}

/* ---- producers and consumers kept apart ---------------------------------------------------- */

static void test_cycle(void **state) {
    (void)state;
    /* add(a, bmm(a, w)): with sigmoid and add in one group, bmm would both
     * read the group and feed it (a batched product takes no epilogue) */
    char *r = report_of("graph(%x : Float(2, 4, 4), %w : Float(2, 4, 4)):\n"
                        "  %a : Float(2, 4, 4) = aten::sigmoid(%x)\n"
                        "  %m : Float(2, 4, 4) = aten::bmm(%a, %w)\n"
                        "  %c : Float(2, 4, 4) = aten::add[alpha=1.](%a, %m)\n"
                        "  return (%c)\n");
    expect_line(r, "  %c aten::add: not merged with its producer %a aten::sigmoid: another user, "
                   "%m aten::bmm, comes before the consumer and feeds it: merging would create a cycle "
                   "through %m\n");
    expect_line(r, "  %a aten::sigmoid: not merged into its user %c aten::add: another user, %m "
                   "aten::bmm, comes before the consumer and feeds it: merging would create a cycle");
    free(r);
}

static void test_used_before_without_cycle(void **state) {
    (void)state;
    char *r = report_of("graph(%x : Float(4, 4), %w : Float(4, 4)):\n"
                        "  %a : Float(4, 4) = aten::sigmoid(%x)\n"
                        "  %m : Float(4, 4) = aten::mm(%a, %w)\n"
                        "  %c : Float(4, 4) = aten::neg(%a)\n"
                        "  return (%c, %m)\n");
    expect_line(r, "  %c aten::neg: not merged with its producer %a aten::sigmoid: another user, %m "
                   "aten::mm, comes before the consumer: merging would need it moved");
    expect_absent(r, "cycle");
    free(r);
}

static void test_output_sizes(void **state) {
    (void)state;
    char *r = report_of("graph(%x : Float(4, 1), %y : Float(4, 8)):\n"
                        "  %a : Float(4, 1) = aten::neg(%x)\n"
                        "  %c : Float(4, 8) = aten::mul(%a, %y)\n"
                        "  return (%c, %a)\n");
    expect_line(r, "  %a aten::neg: not merged into its user %c aten::mul: its result %a is read "
                   "outside with sizes [4, 1], not the group's iteration sizes [4, 8]\n");
    free(r);
}

static void test_chunk_piece_used_outside(void **state) {
    (void)state;
    char *r = report_of("graph(%x : Float(4, 4)):\n"
                        "  %p : Float(2, 4), %q : Float(2, 4) = aten::chunk[chunks=2, dim=0](%x)\n"
                        "  %s : Float(2, 4) = aten::mul(%p, %q)\n"
                        "  return (%s, %p)\n");
    expect_line(r, "  %p aten::chunk: not merged into its user %s aten::mul: a piece of the chunk is "
                   "read outside, by the graph's return (chunk pieces cannot be group outputs)\n");
    free(r);
}

/* A chain y_k = y_{k-1} + x_k over n_inputs graph inputs (malloc'd text). */
static char *add_chain(int n_inputs) {
    size_t cap = 200 + 120 * (size_t)n_inputs, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    len += (size_t)snprintf(t + len, cap - len, "graph(");
    for (int i = 0; i < n_inputs; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s%%x%d : Float(8)", i ? ", " : "", i);
    len += (size_t)snprintf(t + len, cap - len, "):\n");
    for (int i = 1; i < n_inputs; i++)
        len += (size_t)snprintf(t + len, cap - len, "  %%y%d : Float(8) = aten::add[alpha=1.](%%%s%d, %%x%d)\n",
                                i, i == 1 ? "x" : "y", i == 1 ? 0 : i - 1, i);
    snprintf(t + len, cap - len, "  return (%%y%d)\n", n_inputs - 1);
    return t;
}

static void test_operand_cap(void **state) {
    (void)state;
    /* 62 inputs, 61 adds: the whole chain would need 63 operands */
    char *text = add_chain(62);
    char *r = report_of(text);
    expect_line(r, "# neighbouring groups not merged\n  %62 prim::FusionGroup -> %63 prim::FusionGroup: "
                   "operand cap: the merged group would have 63 operands (inputs, outputs and chunk "
                   "pieces), more than 60\n");
    expect_absent(r, "group-size cap");
    free(r);
    free(text);
}

static void test_group_size_cap(void **state) {
    (void)state;
    enum { N = 70 };
    char text[N * 64 + 100];
    size_t len = (size_t)snprintf(text, sizeof text, "graph(%%y0 : Float(8)):\n");
    for (int i = 1; i <= N; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "  %%y%d : Float(8) = aten::%s(%%y%d)\n",
                                i, i % 2 ? "neg" : "sin", i - 1);
    snprintf(text + len, sizeof text - len, "  return (%%y%d)\n", N);
    char *r = report_of(text);
    expect_line(r, "# neighbouring groups not merged\n  %1 prim::FusionGroup -> %2 prim::FusionGroup: "
                   "group-size cap: the merged group would hold 70 nodes, more than 64\n");
    expect_line(r, "# 2 groups formed, 70 nodes fused, 0 fusible-kind nodes left out\n");
    free(r);
}

/* A row group (softmax after a scale) next to another (exp of a
 * log_softmax after an add): one row op a group. */
static void test_two_row_ops(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(4, 8), %c : Float(4, 8)):\n"
                        "  %d : Float(4, 8) = aten::mul.Scalar[other=0.5](%a)\n"
                        "  %e : Float(4, 8) = aten::softmax[dim=-1](%d)\n"
                        "  %f : Float(4, 8) = aten::add[alpha=1.](%e, %c)\n"
                        "  %g : Float(4, 8) = aten::log_softmax[dim=-1](%f)\n"
                        "  %h : Float(4, 8) = aten::exp(%g)\n"
                        "  return (%h)\n");
    expect_line(r, "# neighbouring groups not merged\n  %2 prim::FusionGroup -> %3 prim::FusionGroup: "
                   "both hold a row op (softmax, log_softmax, layer_norm, a reduction over the last dim); "
                   "a group holds one\n");
    expect_line(r, "# 2 groups formed, 5 nodes fused, 0 fusible-kind nodes left out\n");
    free(r);
}

/* A [8] scale of a bias cannot join the softmax's group, which iterates
 * rows of [4, 8]. */
static void test_row_sizes(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(4, 8), %b : Float(8)):\n"
                        "  %d : Float(8) = aten::mul.Scalar[other=0.5](%b)\n"
                        "  %e : Float(4, 8) = aten::add[alpha=1.](%a, %d)\n"
                        "  %f : Float(4, 8) = aten::softmax[dim=-1](%e)\n"
                        "  return (%f)\n");
    expect_line(r, "  %d aten::mul.Scalar: not merged into its user %3 prim::FusionGroup: %d has sizes "
                   "[8], not those of the row op, whose rows the group iterates\n");
    expect_line(r, "# 1 group formed, 2 nodes fused, 1 fusible-kind node left out\n");
    free(r);
}

/* RMSNorm: the mean of squares over the last dim, its epilogue of the
 * reduced sizes and the full-size product reading it broadcast: one group. */
static void test_reduction_group(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(4, 8), %w : Float(8)):\n"
                        "  %1 : Float(4, 8) = aten::mul(%a, %a)\n"
                        "  %2 : Float(4, 1) = aten::mean.dim[dim=[-1], keepdim=True](%1)\n"
                        "  %3 : Float(4, 1) = aten::add.Scalar[other=1e-05, alpha=1.](%2)\n"
                        "  %4 : Float(4, 1) = aten::rsqrt(%3)\n"
                        "  %5 : Float(4, 8) = aten::mul(%a, %4)\n"
                        "  %6 : Float(4, 8) = aten::mul(%5, %w)\n"
                        "  return (%6)\n");
    expect_line(r, "# 1 group formed, 6 nodes fused, 0 fusible-kind nodes left out\n");
    free(r);
}

/* a + sum(a * 0.5, -1) without keepdim: [4] broadcasts along the last dim,
 * not along the rows, so the add stays out of the reduction's group. */
static void test_reduction_dropped_dim(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(4, 4)):\n"
                        "  %p : Float(4, 4) = aten::mul.Scalar[other=0.5](%a)\n"
                        "  %s : Float(4) = aten::sum.dim_IntList[dim=[-1], keepdim=False](%p)\n"
                        "  %e : Float(4, 4) = aten::add[alpha=1.](%a, %s)\n"
                        "  return (%e)\n");
    expect_line(r, "  %e aten::add: not merged with its producer %1 prim::FusionGroup: %1 has the sizes [4] "
                   "of a reduction without keepdim, and a member reads it into other sizes: broadcasting "
                   "aligns it with the last dim, not with the rows\n");
    expect_line(r, "# 1 group formed, 2 nodes fused, 1 fusible-kind node left out\n");
    free(r);
}

/* sum(a * 0.5, -1) + c with c [4] from outside, without keepdim: the
 * group's rows would read c along the last dim. */
static void test_reduction_outside_read(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(4, 4), %c : Float(4)):\n"
                        "  %p : Float(4, 4) = aten::mul.Scalar[other=0.5](%a)\n"
                        "  %s : Float(4) = aten::sum.dim_IntList[dim=[-1], keepdim=False](%p)\n"
                        "  %e : Float(4) = aten::add[alpha=1.](%s, %c)\n"
                        "  return (%e)\n");
    expect_line(r, "  %e aten::add: not merged with its producer %2 prim::FusionGroup: %c of sizes [4] comes "
                   "from outside into a member of a reduction without keepdim: such a group reads only "
                   "values of sizes all 1 there\n");
    free(r);
}

/* x * sum(x, -1, keepdim) over [4, 8], and a [8] value that would join:
 * members of a reduction's group have its input's or its result's sizes. */
static void test_reduction_sizes(void **state) {
    (void)state;
    char *r = report_of("graph(%a : Float(4, 8), %b : Float(8)):\n"
                        "  %d : Float(8) = aten::mul.Scalar[other=0.5](%b)\n"
                        "  %e : Float(4, 8) = aten::add[alpha=1.](%a, %d)\n"
                        "  %f : Float(4, 1) = aten::amax[dim=[-1], keepdim=True](%e)\n"
                        "  return (%f)\n");
    expect_line(r, "  %d aten::mul.Scalar: not merged into its user %3 prim::FusionGroup: %d has sizes "
                   "[8], not those of the row op, whose rows the group iterates\n");
    free(r);
}

/* ---- the example models, TJIT_DUMP ---------------------------------------------------------- */

/* outside a tensor scope: the models own their tensors and release them */
/* ---- epilogue groups: a matrix product with its pointwise users ------------------------- */

#define LINEAR_IN "graph(%x : Float(8, 4), %w : Float(6, 4), %b : Float(6)"

static void test_epilogue_group(void **state) {
    (void)state;
    char *r = report_of(LINEAR_IN "):\n"
                        "  %h : Float(8, 6) = aten::linear(%x, %w, %b)\n"
                        "  %y : Float(8, 6) = aten::relu(%h)\n"
                        "  %z : Float(8, 6) = aten::mul.Scalar[other=2.](%y)\n"
                        "  return (%z)\n");
    expect_line(r, "# 1 group formed, 3 nodes fused, 0 fusible-kind nodes left out\n");
    free(r);
}

static void test_anchor_operand(void **state) {
    (void)state;
    char *r = report_of(LINEAR_IN "):\n"
                        "  %t : Float(8, 4) = aten::tanh(%x)\n"
                        "  %h : Float(8, 6) = aten::linear(%t, %w, %b)\n"
                        "  %y : Float(8, 6) = aten::relu(%h)\n"
                        "  return (%y)\n");
    expect_line(r, "  %t aten::tanh: not merged into its user ");
    expect_line(r, "it feeds the matrix product of ");
    expect_line(r, "whose operands come from outside its group (the product runs first, its epilogue after)\n");
    free(r);
}

static void test_two_anchors(void **state) {
    (void)state;
    char *r = report_of(LINEAR_IN ", %v : Float(6, 6)):\n"
                        "  %h : Float(8, 6) = aten::linear(%x, %w, %b)\n"
                        "  %y : Float(8, 6) = aten::relu(%h)\n"
                        "  %k : Float(8, 6) = aten::linear(%y, %v, %b)\n"
                        "  %z : Float(8, 6) = aten::tanh(%k)\n"
                        "  return (%z)\n");
    expect_line(r, "prim::FusionGroup: both hold a matrix product; a group holds one\n");
    expect_line(r, "# 2 groups formed, 4 nodes fused, 0 fusible-kind nodes left out\n");
    free(r);
}

static void test_anchor_and_row_op(void **state) {
    (void)state;
    char *r = report_of(LINEAR_IN ", %r : Float(8, 6)):\n"
                        "  %q : Float(8, 6) = aten::mul.Scalar[other=2.](%r)\n"
                        "  %s : Float(8, 6) = aten::softmax[dim=-1](%q)\n"
                        "  %h : Float(8, 6) = aten::linear(%x, %w, %b)\n"
                        "  %y : Float(8, 6) = aten::add[alpha=1.](%h, %s)\n"
                        "  return (%y)\n");
    expect_line(r, "a matrix product's epilogue and a row op (softmax, log_softmax, layer_norm, a "
                   "reduction over the last dim) do not share a group\n");
    expect_line(r, "# 2 groups formed, 4 nodes fused, 0 fusible-kind nodes left out\n");
    free(r);
}

static void test_anchor_sizes(void **state) {
    (void)state;
    char *r = report_of(LINEAR_IN ", %r : Float(2, 8, 6)):\n"
                        "  %h : Float(8, 6) = aten::linear(%x, %w, %b)\n"
                        "  %y : Float(2, 8, 6) = aten::add[alpha=1.](%h, %r)\n"
                        "  return (%y)\n");
    expect_line(r, "  %y aten::add: not merged with its producer %h aten::linear: %y has sizes [2, 8, 6], "
                   "not those of the matrix product, whose rows the group runs block by block\n");
    free(r);
}

static void test_anchor_form_and_device(void **state) {
    (void)state;
    char *r = report_of("graph(%x : Float(8, 4), %w : Float(6, 4)):\n"
                        "  %b : NoneType = prim::None()\n"
                        "  %h : Float(8, 6) = aten::linear(%x, %w, %b)\n"
                        "  %y : Float(8, 6) = aten::relu(%h)\n"
                        "  return (%y)\n");
    expect_line(r, "  %y aten::relu: not merged with its producer %h aten::linear: not fusible: a matrix "
                   "product takes an epilogue as linear(x, w, b), mm, matmul by a 2-D matrix or "
                   "conv2d(x, w, b), every operand an f32 or f64 tensor (no absent bias)\n");
    free(r);
    r = report_of("graph(%x : Float(8, 4, device=cuda:0), %w : Float(4, 6, device=cuda:0)):\n"
                  "  %h : Float(8, 6, device=cuda:0) = aten::mm(%x, %w)\n"
                  "  %y : Float(8, 6, device=cuda:0) = aten::relu(%h)\n"
                  "  return (%y)\n");
    expect_line(r, "  %y aten::relu: not merged with its producer %h aten::mm: not fusible: a matrix "
                   "product takes an epilogue on the CPU only\n");
    free(r);
}

static void test_models(void **state) {
    (void)state;
    for (int k = 0; k < tjx_num_models(); k++) {
        const tjx_model *m = tjx_model_at(k);
        tt_context("model %s", m->name);
        tj_generator *gen = tj_generator_new(5);
        void *params = m->create(gen);
        assert_non_null(params);
        tj_tensor *inputs[8] = {0};
        assert_int_equal(m->make_inputs(params, gen, inputs), TJ_OK);
        tj_graph *g = tj_trace(m->forward, params, inputs, m->n_in, m->n_out, NULL);
        assert_non_null(g);
        assert_int_equal(tj_run_passes(g, "dce,constant_fold,peephole,cse,dce,canonicalize,fuse"), TJ_OK);
        char *r = tj_fusion_report(g);
        assert_non_null(r);
        expect_line(r, "# fusion report\n# left outside any group\n");
        expect_line(r, "# neighbouring groups not merged\n");
        expect_line(r, " formed, ");
        if (!strcmp(m->name, "lstm_cell"))
            expect_line(r, "# 1 group formed, 15 nodes fused, 0 fusible-kind nodes left out\n");
        free(r);
        tj_graph_free(g);
        for (int i = 0; i < m->n_in; i++) tj_release(inputs[i]);
        m->destroy(params);
        tj_generator_free(gen);
    }
}

static void test_dump_env(void **state) {
    (void)state;
    tj_graph *g = tj_graph_parse("graph(%x : Float(2, 4, 4), %w : Float(2, 4, 4)):\n"
                                 "  %a : Float(2, 4, 4) = aten::sigmoid(%x)\n"
                                 "  %m : Float(2, 4, 4) = aten::bmm(%a, %w)\n"
                                 "  %c : Float(2, 4, 4) = aten::add[alpha=1.](%a, %m)\n"
                                 "  return (%c)\n", NULL);
    assert_non_null(g);
    char path[] = "/tmp/tjit_fusion_reportXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0 && dup2(fd, 2) >= 0);
    setenv("TJIT_DUMP", "fusion-report", 1);
    tj_status st = tj_run_passes(g, "dce,fuse,canonicalize");
    unsetenv("TJIT_DUMP");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    assert_int_equal(st, TJ_OK);
    char *out = tt_read_file(path);
    unlink(path);
    assert_non_null(out);
    expect_line(out, "# fusion report\n# left outside any group\n");
    expect_line(out, "merging would create a cycle through %m\n");
    expect_absent(out, "# after"); /* the report, not the graph */
    /* one report: after fuse, not after the other passes */
    assert_null(strstr(strstr(out, "# fusion report") + 1, "# fusion report"));
    free(out);
    tj_graph_free(g);
}

int main(void) {
#define T(f) TT_SCOPED_TEST(f)
    const struct CMUnitTest tests[] = {
        T(test_integer_pow),     T(test_inplace),          T(test_unknown_sizes),
        T(test_uneven_chunk),    T(test_dead_node),        T(test_cycle),
        T(test_used_before_without_cycle), T(test_output_sizes), T(test_chunk_piece_used_outside),
        T(test_operand_cap),     T(test_group_size_cap),   T(test_two_row_ops),
        T(test_row_sizes),       T(test_reduction_group),  T(test_reduction_dropped_dim),
        T(test_reduction_outside_read), T(test_reduction_sizes),
        T(test_epilogue_group),  T(test_anchor_operand),   T(test_two_anchors),
        T(test_anchor_and_row_op), T(test_anchor_sizes),   T(test_anchor_form_and_device),
        cmocka_unit_test(test_models),
        T(test_dump_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
