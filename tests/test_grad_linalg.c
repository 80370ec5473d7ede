/* test_grad_linalg.c — derivatives of the matmul, convolution and pooling
 * family, table-driven: every row of core/ops_linalg.def is listed in
 * tjg_rules_linalg, every op with a rule has cases below, and every case
 * passes a first- and a second-order finite-difference check in f64 through
 * the graph autodiff (the second order differentiates the backward graph,
 * whose backward ops are rows of this family too).
 *
 * A case is written as text: the op's tensor inputs as sizes ("1,2,5,5"),
 * "-" for an absent optional one, "idx" for max pooling indices (those of
 * max_pool2d_with_indices on the case's self input, with the case's
 * attributes); and the attributes that differ from the schema's defaults
 * ("stride=2 padding=1,0 ceil_mode=1"). Sizes stay tiny: finite differences
 * run the graph twice per input element. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "passes/grad.h"
#include "tests/support/gradcheck.h"

/* The family's rows, read from the file the op table is built from. */
static const int family[] = {
#define TJ_OP(id, name, schema, kind, infer, cpu) TJ_OP_##id,
#include "core/ops_linalg.def"
#undef TJ_OP
};
enum { N_FAMILY = sizeof family / sizeof family[0] };

typedef struct gcase {
    const char *op, *inputs, *attrs;
} gcase;

static const gcase cases[] = {
    /* ---- matmul: 1-D operands, batch broadcasting, broadcast bias ---- */
    {"aten::mm", "3,4 4,2", ""},
    {"aten::bmm", "2,3,4 2,4,2", ""},
    {"aten::matmul", "3,4 4,2", ""},
    {"aten::matmul", "4 4", ""},
    {"aten::matmul", "4 4,2", ""},
    {"aten::matmul", "3,4 4", ""},
    {"aten::matmul", "4 2,4,3", ""},
    {"aten::matmul", "2,3,4 4", ""},
    {"aten::matmul", "2,3,4 4,2", ""},
    {"aten::matmul", "2,1,3,4 3,4,2", ""},
    {"aten::addmm", "3,2 3,4 4,2", "beta=0.5 alpha=2"},
    {"aten::addmm", "2 3,4 4,2", ""},
    {"aten::linear", "4 3,4 3", ""},
    {"aten::linear", "2,4 3,4 -", ""},
    {"aten::linear", "2,2,4 3,4 3", ""},
    {"aten::linear", "2,3,4 4 -", ""}, /* a vector weight: x @ w */
    {"aten::linear", "4 4 -", ""},
    {"aten::linear", "2,4 4 1", ""},

    /* ---- convolution ---- */
    {"aten::conv2d", "1,2,5,5 2,2,3,3 2", ""},
    {"aten::conv2d", "2,2,5,5 3,2,3,3 3", "stride=2 padding=1"},
    {"aten::conv2d", "1,2,5,5 2,2,2,2 -", "dilation=2 padding=1"},
    {"aten::conv2d", "1,4,4,4 4,2,3,3 4", "groups=2 padding=1"},
    {"aten::conv2d", "2,5,5 2,2,3,3 2", "stride=2,1 padding=0,1"},
    {"aten::conv2d", "1,2,4,4 3,2,1,1 -", ""},
    {"aten::conv1d", "1,2,7 2,2,3 2", ""},
    {"aten::conv1d", "2,4,7 2,2,3 -", "stride=2 padding=1 dilation=2 groups=2"},
    {"aten::conv1d", "2,6 3,2,2 3", "stride=2"},
    {"aten::conv_transpose2d.input", "1,2,3,3 2,2,3,3 2", ""},
    {"aten::conv_transpose2d.input", "1,2,3,3 2,1,3,3 1", "stride=2 padding=1 output_padding=1"},
    {"aten::conv_transpose2d.input", "1,4,3,3 4,1,2,2 -", "stride=2 groups=2"},
    /* output_padding at least the stride: allowed because the dilation is larger */
    {"aten::conv_transpose2d.input", "1,2,3,3 2,2,2,2 2", "dilation=2 output_padding=1"},
    {"aten::conv_transpose2d.input", "2,3,3 2,2,3,3 -", "padding=1 stride=2,1 output_padding=1,0"},
    {"tjit::conv2d_backward_input", "1,2,3,3 2,2,3,3", "input_size=1,2,5,5"},
    {"tjit::conv2d_backward_input", "1,2,3,3 2,2,3,3", "input_size=1,2,6,6 stride=2 padding=1"},
    {"tjit::conv2d_backward_input", "1,4,3,3 4,2,3,3", "input_size=1,4,5,5 groups=2"},
    {"tjit::conv2d_backward_input", "1,2,1,2 2,2,3,3", "input_size=1,2,5,6 dilation=2"},
    {"tjit::conv2d_backward_weight", "1,2,3,3 1,2,5,5", "weight_size=2,2,3,3"},
    {"tjit::conv2d_backward_weight", "2,3,3,3 2,2,6,6", "weight_size=3,2,3,3 stride=2 padding=1"},
    {"tjit::conv2d_backward_weight", "1,4,3,3 1,4,5,5", "weight_size=4,2,3,3 groups=2"},
    {"tjit::conv2d_backward_weight", "1,2,2,2 1,2,5,5", "weight_size=2,2,2,2 dilation=2 stride=2"},

    /* ---- pooling ---- */
    {"aten::max_pool2d_with_indices", "1,2,5,5", "kernel_size=2"},
    {"aten::max_pool2d_with_indices", "2,2,5,5", "kernel_size=3 stride=2 padding=1"},
    {"aten::max_pool2d_with_indices", "1,2,5,5", "kernel_size=2 stride=2 ceil_mode=1"},
    {"aten::max_pool2d_with_indices", "1,2,6,6", "kernel_size=2 stride=1 dilation=2"},
    {"aten::max_pool2d_with_indices", "2,5,5", "kernel_size=3,2 stride=1,2"},
    {"aten::max_pool2d", "1,2,5,5", "kernel_size=3 stride=2 padding=1 ceil_mode=1"},
    {"aten::max_pool2d", "2,6,5", "kernel_size=2 dilation=2,1"},
    {"aten::max_pool2d_with_indices_backward", "1,2,4,4 1,2,5,5 idx",
     "kernel_size=2 stride=1 padding=0 dilation=1 ceil_mode=0"},
    {"aten::max_pool2d_with_indices_backward", "2,2,3,3 2,2,5,5 idx",
     "kernel_size=3 stride=2 padding=1 dilation=1 ceil_mode=1"},
    {"tjit::max_pool2d_gather", "1,2,5,5 idx",
     "kernel_size=3 stride=2 padding=1 dilation=1 ceil_mode=0"},
    {"tjit::max_pool2d_gather", "2,6,6 idx",
     "kernel_size=2 stride=1 padding=0 dilation=2 ceil_mode=0"},
    {"aten::avg_pool2d", "1,2,5,5", "kernel_size=2"},
    {"aten::avg_pool2d", "2,2,5,5", "kernel_size=3 stride=2 padding=1 count_include_pad=0"},
    {"aten::avg_pool2d", "1,2,5,5", "kernel_size=3 stride=2 padding=1 ceil_mode=1"},
    {"aten::avg_pool2d", "1,2,6,5",
     "kernel_size=2 stride=2 padding=1 ceil_mode=1 count_include_pad=0"},
    {"aten::avg_pool2d", "2,5,5", "kernel_size=2,3 stride=1"},
    {"aten::avg_pool2d_backward", "1,2,3,3 1,2,5,5",
     "kernel_size=3 stride=2 padding=1 ceil_mode=0 count_include_pad=1"},
    {"aten::avg_pool2d_backward", "1,2,3,3 1,2,5,5",
     "kernel_size=2 stride=2 padding=0 ceil_mode=1 count_include_pad=0"},
    {"aten::adaptive_avg_pool2d", "1,2,5,5", "output_size=2,3"},
    {"aten::adaptive_avg_pool2d", "2,5,7", "output_size=3,3"},
    {"aten::adaptive_avg_pool2d", "1,2,4,4", "output_size=1,1"},
    {"aten::_adaptive_avg_pool2d_backward", "1,2,2,3 1,2,5,5", ""},
    {"aten::_adaptive_avg_pool2d_backward", "2,3,3 2,5,7", ""},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* A case made concrete: its tensors and attributes (int lists in store). */
typedef struct built {
    const tj_op_info *op;
    tj_tensor *in[4];
    int n_in;
    tj_attr attrs[TJ_MAX_ARGS];
    int64_t store[TJ_MAX_ARGS][TJ_MAX_DIMS];
} built;

static int parse_ints(const char *s, int64_t *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        char *end;
        out[n++] = strtoll(s, &end, 10);
        if (end == s) fail_msg("bad integer list '%s'", s);
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void parse_attrs(built *b, const char *text) {
    const tj_schema *s = &b->op->schema;
    for (int k = 0; k < s->n_attrs; k++) b->attrs[k] = s->args[s->attr_pos[k]].def;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) fail_msg("bad attribute '%s'", tok);
        *eq = 0;
        int k = 0;
        while (k < s->n_attrs && strcmp(s->args[s->attr_pos[k]].name, tok)) k++;
        if (k == s->n_attrs) fail_msg("%s has no attribute '%s'", b->op->name, tok);
        tj_attr *a = &b->attrs[k];
        switch (s->args[s->attr_pos[k]].type) {
        case TJ_ARG_INTS:
            a->ints.n = parse_ints(eq + 1, b->store[k], TJ_MAX_DIMS);
            a->ints.data = b->store[k];
            break;
        case TJ_ARG_INT: a->i = strtoll(eq + 1, NULL, 10); break;
        case TJ_ARG_BOOL: a->b = atoi(eq + 1) != 0; break;
        case TJ_ARG_FLOAT: a->f = strtod(eq + 1, NULL); break;
        case TJ_ARG_SCALAR: {
            const char *end;
            if (!tjc_read_scalar(eq + 1, &a->scalar, &end)) fail_msg("%s: bad Scalar '%s'", b->op->name, eq + 1);
            break;
        }
        default: fail_msg("%s: attribute '%s' of a type the table cannot write", b->op->name, tok);
        }
    }
}

/* The indices max pooling with the case's attributes picks in self. */
static tj_tensor *indices_of(const built *b, tj_tensor *self) {
    tj_tensor *out[2];
    const tj_op_info *fwd = tjc_op(TJ_OP_max_pool2d_with_indices);
    /* the max pooling ops share the forward op's first five attributes */
    int n = tj_invoke(TJ_OP_max_pool2d_with_indices, &self, 1, b->attrs, fwd->schema.n_attrs, out,
                      2);
    if (n != 2) fail_msg("%s: max pooling for indices: %s", b->op->name, tj_last_error());
    tj_release(out[0]);
    return out[1];
}

static void build(built *b, const gcase *gc, tj_generator *gen) {
    memset(b, 0, sizeof *b);
    b->op = tj_op_find(gc->op);
    if (!b->op) fail_msg("no op %s", gc->op);
    parse_attrs(b, gc->attrs);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", gc->inputs);
    int idx_at = -1;
    for (char *save, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        assert_true(b->n_in < 4);
        int i = b->n_in++;
        if (!strcmp(tok, "-")) continue;
        if (!strcmp(tok, "idx")) {
            idx_at = i;
            continue;
        }
        int64_t sizes[TJ_MAX_DIMS];
        int nd = parse_ints(tok, sizes, TJ_MAX_DIMS);
        b->in[i] = tt_random(gen, sizes, nd, TJ_F64, -1, 1);
    }
    assert_int_equal(b->n_in, b->op->schema.n_tensor_args);
    if (idx_at >= 0) /* the indices max pooling picks in the input named self */
        for (int i = 0; i < b->n_in; i++)
            if (!strcmp(tjc_input_name(b->op, i), "self")) b->in[idx_at] = indices_of(b, b->in[i]);
    if (idx_at >= 0 && !b->in[idx_at]) fail_msg("%s: indices without a self input", gc->op);
}

static void release(built *b) {
    for (int i = 0; i < b->n_in; i++) tj_release(b->in[i]);
}

static const char *label_of(const gcase *gc, char *buf, size_t n) {
    snprintf(buf, n, "%s (%s; %s)", gc->op, gc->inputs, gc->attrs);
    return buf;
}

static void every_row_is_listed(void **state) {
    (void)state;
    for (int f = 0; f < N_FAMILY; f++) {
        const tj_op_info *op = tjc_op(family[f]);
        const tjg_rule_entry *e = tjg_rule_for(op);
        if (!e) fail_msg("%s is in no table of derivative rules", op->name);
        if (!e->rule && !e->why) fail_msg("%s has neither a rule nor a reason", op->name);
        bool ours = false;
        for (const tjg_rule_entry *r = tjg_rules_linalg; r->op >= 0; r++)
            ours |= r->op == family[f];
        if (!ours) fail_msg("%s is a row of ops_linalg.def but listed in another family", op->name);
    }
    for (const tjg_rule_entry *r = tjg_rules_linalg; r->op >= 0; r++) {
        bool row = false;
        for (int f = 0; f < N_FAMILY; f++) row |= r->op == family[f];
        if (!row) fail_msg("%s is listed but is no row of ops_linalg.def", tjc_op(r->op)->name);
    }
}

static void every_rule_has_cases(void **state) {
    (void)state;
    for (const tjg_rule_entry *r = tjg_rules_linalg; r->op >= 0; r++) {
        if (!r->rule) continue;
        int n = 0;
        for (int k = 0; k < N_CASES; k++) n += tj_op_find(cases[k].op) == tjc_op(r->op);
        if (n == 0) fail_msg("%s has a rule but no case in the table", tjc_op(r->op)->name);
    }
}

static void check_all(bool second_order) {
    tj_generator *gen = tj_generator_new(11);
    for (int k = 0; k < N_CASES; k++) {
        built b;
        char label[320];
        build(&b, &cases[k], gen);
        label_of(&cases[k], label, sizeof label);
        if (second_order) tt_gradgradcheck_op(b.op, b.in, b.n_in, b.attrs, NULL, label);
        else tt_gradcheck_op(b.op, b.in, b.n_in, b.attrs, NULL, label);
        release(&b);
    }
    tj_generator_free(gen);
}

static void first_order(void **state) {
    (void)state;
    check_all(false);
}
static void second_order(void **state) {
    (void)state;
    check_all(true);
}

/* The rules run eagerly give what the graph gives: conv2d's three gradients
 * and max pooling's, on tensors (tjg_eager_grad), against the graph's. */
static void eager_matches_graph(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(12);
    const gcase pick[] = {
        {"aten::conv2d", "2,2,5,5 3,2,3,3 3", "stride=2 padding=1"},
        {"aten::max_pool2d_with_indices", "2,2,5,5", "kernel_size=3 stride=2 padding=1"},
    };
    for (size_t p = 0; p < sizeof pick / sizeof pick[0]; p++) {
        built b;
        build(&b, &pick[p], gen);
        tj_tensor *out[2];
        int n_out = tj_invoke(b.op->id, b.in, b.n_in, b.attrs, b.op->schema.n_attrs, out, 2);
        assert_true(n_out >= 1);
        tj_tensor *gy[2] = {tt_random(gen, tj_sizes(out[0]), tj_ndim(out[0]), TJ_F64, -1, 1), NULL};
        bool needs[4] = {true, true, true, true};
        tj_tensor *eager[4];
        assert_int_equal(tjg_eager_grad(b.op, b.in, b.n_in, b.attrs, out, n_out, gy, needs, eager),
                         TJ_OK);
        tj_graph *g = tt_op_graph(b.op, b.in, b.n_in, b.attrs);
        assert_non_null(g);
        bool wrt[4];
        tj_tensor *all[8];
        int n_g = tj_graph_num_inputs(g), k = 0;
        for (int i = 0; i < b.n_in; i++)
            if (b.in[i]) wrt[k] = true, all[k++] = b.in[i];
        all[n_g] = gy[0];
        if (n_out > 1) all[n_g + 1] = tj_zeros(tj_sizes(out[1]), tj_ndim(out[1]), TJ_I64);
        tj_graph *gg = tj_grad_graph(g, wrt);
        assert_non_null(gg);
        tj_compile_options o = {.passes = "dce"};
        tj_program *prog = tj_compile(gg, &o);
        assert_non_null(prog);
        tj_tensor *graph_grads[4];
        assert_int_equal(tt_gradcheck_run(prog, all, graph_grads), TJ_OK);
        for (int i = 0, j = 0; i < b.n_in; i++) {
            if (!b.in[i]) continue;
            tt_ref r = tt_ref_of(graph_grads[j]);
            tt_assert_close_ref(eager[i], &r, 1e-12, 1e-12);
            tt_ref_free(&r);
            tj_release(graph_grads[j++]);
            tj_release(eager[i]);
        }
        if (n_out > 1) tj_release(all[n_g + 1]);
        for (int o2 = 0; o2 < n_out; o2++) tj_release(out[o2]);
        tj_release(gy[0]);
        tj_program_free(prog);
        tj_graph_free(gg);
        tj_graph_free(g);
        release(&b);
    }
    tj_generator_free(gen);
}

/* A rule that needs only an input's sizes reads its type: conv2d's input
 * gradient keeps the weight alone, its weight gradient the input alone. */
static void saves_only_what_backward_reads(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(13);
    const gcase conv = {"aten::conv2d", "1,2,5,5 2,2,3,3 2", "stride=2 padding=1"};
    built b;
    build(&b, &conv, gen);
    tj_graph *g = tt_op_graph(b.op, b.in, b.n_in, b.attrs);
    assert_non_null(g);
    const struct {
        bool wrt[3];
        int saved;
    } want[] = {{{true, false, false}, 1}, {{false, true, false}, 1}, {{false, false, true}, 0},
                {{true, true, true}, 2}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        tj_gradient gr;
        assert_int_equal(tj_autodiff(g, want[k].wrt, &gr), TJ_OK);
        assert_int_equal(gr.n_saved, want[k].saved);
        tj_gradient_free(&gr);
    }
    tj_graph_free(g);
    release(&b);
    tj_generator_free(gen);
}

/* ---- a chain: second derivatives of a small CNN ----------------------------------------
 * conv2d -> tanh -> max_pool2d -> conv_transpose2d (stride 2, groups 2) -> avg_pool2d ->
 * adaptive_avg_pool2d -> square: the gradient graph, differentiated again, against finite
 * differences of it (what a gradient penalty or a Hessian-vector product needs). */
static tj_status small_cnn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    int64_t one[1] = {1}, two[1] = {2}, three[1] = {3}, zero[1] = {0};
    tj_scope_begin();
    tj_tensor *y = tj_tanh(tj_conv2d(in[0], in[1], in[2], one, 1, one, 1, one, 1, 1));
    y = tj_max_pool2d(y, two, 1, NULL, 0, zero, 1, one, 1, false);
    y = tj_conv_transpose2d(y, in[3], in[4], two, 1, zero, 1, zero, 1, 2, one, 1);
    y = tj_avg_pool2d(y, three, 1, two, 1, one, 1, false, true);
    y = tj_adaptive_avg_pool2d(y, (int64_t[]){2, 2}, 2);
    out[0] = tj_mul(y, y);
    tj_keep(out[0]);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static void cnn_second_order(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(14);
    const int64_t sizes[5][4] = {{1, 2, 6, 6}, {4, 2, 3, 3}, {4}, {4, 1, 2, 2}, {2}};
    const int nd[5] = {4, 4, 1, 4, 1};
    tj_tensor *in[6];
    for (int i = 0; i < 5; i++) in[i] = tt_random(gen, sizes[i], nd[i], TJ_F64, -1, 1);
    tj_graph *g = tj_trace(small_cnn, NULL, in, 5, 1, NULL);
    if (!g) fail_msg("tracing: %s", tj_last_error());
    bool wrt[6] = {true, true, true, true, true, true};
    tj_graph *gg = tj_grad_graph(g, wrt);
    if (!gg) fail_msg("tj_grad_graph: %s", tj_last_error());
    const tj_type *t = tj_value_type(tj_graph_output(g, 0));
    in[5] = tt_random(gen, t->sizes, t->ndim, TJ_F64, -1, 1);
    tt_gradcheck_graph(gg, in, wrt, 1e-5, 1e-4, "small CNN (second order)");
    for (int i = 0; i < 6; i++) tj_release(in[i]);
    tj_graph_free(gg);
    tj_graph_free(g);
    tj_generator_free(gen);
}

int main(void) {
    TT_GRADCHECK_SKIP_WITHOUT_DEVICE();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_row_is_listed),
        cmocka_unit_test(every_rule_has_cases),
        cmocka_unit_test(first_order),
        cmocka_unit_test(second_order),
        cmocka_unit_test(eager_matches_graph),
        cmocka_unit_test(saves_only_what_backward_reads),
        cmocka_unit_test(cnn_second_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
