/* test_grad_view.c — derivatives of the view and shape family, table-driven:
 * every TJ_KIND_VIEW and TJ_KIND_SHAPE op is listed in tjg_rules_view, every
 * one with a rule has cases below, and every case passes a first- and a
 * second-order finite-difference check in f64 through the graph autodiff:
 * view sizes with -1, negative dims, slices with steps, chunks of uneven
 * pieces, cat of three tensors along several dims, and multi-output ops
 * with some outputs left undifferentiated (their gradients are zero). Also:
 * exact gradients where a node has more operands or outputs than the graph
 * emitter takes at once, and cat's gradients in its inputs' dtypes. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "passes/grad.h"
#include "tests/support/gradcheck.h"

#define L(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}
#define L0 0, {0}
#define BIG INT64_MAX

/* One call: up to three inputs (cat and stack take them all), an int[]
 * argument and up to five ints in the order the schema takes them after the
 * list; keep names the outputs that get a gradient ("101": the first and
 * the third; NULL: all). */
typedef struct gcase {
    const char *op;
    int n_in;
    struct { int ndim; int64_t sizes[TJ_MAX_DIMS]; } in[3];
    int n_list;
    int64_t list[TJ_MAX_DIMS];
    int64_t p[5];
    const char *keep;
    const char *wrt; /* which inputs are differentiated, like keep */
} gcase;

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define IN1(...) 1, {{L(__VA_ARGS__)}}
#define IN0 1, {{L0}}
static const gcase cases[] = {
    {"aten::view", IN1(2, 3, 2), L(6, 2)},
    {"aten::view", IN1(3, 4), L(2, -1, 3)},
    {"aten::reshape", IN1(2, 3, 2), L(3, 4)},
    {"aten::reshape", IN1(2, 3), L(-1)},
    {"aten::reshape", IN0, L(1, 1)},
    {"aten::flatten.using_ints", IN1(2, 3, 2), L0, {0, -1}},
    {"aten::flatten.using_ints", IN1(2, 3, 2), L0, {1, 2}},
    {"aten::flatten.using_ints", IN0, L0, {0, -1}},
    {"aten::contiguous", IN1(2, 3)},
    {"aten::squeeze", IN1(1, 3, 1, 2)},
    {"aten::squeeze.dim", IN1(1, 3, 1, 2), L0, {2}},
    {"aten::squeeze.dim", IN1(1, 3, 1, 2), L0, {-4}},
    {"aten::squeeze.dim", IN1(1, 3, 1, 2), L0, {1}},
    {"aten::unsqueeze", IN1(3, 2), L0, {0}},
    {"aten::unsqueeze", IN1(3, 2), L0, {-1}},
    {"aten::unsqueeze", IN1(3, 2), L0, {1}},
    {"aten::unsqueeze", IN0, L0, {0}},
    {"aten::transpose.int", IN1(2, 3, 2), L0, {0, 2}},
    {"aten::transpose.int", IN1(2, 3, 2), L0, {-1, 1}},
    {"aten::t", IN1(2, 3)},
    {"aten::t", IN1(3)},
    {"aten::permute", IN1(2, 3, 2), L(2, 0, 1)},
    {"aten::permute", IN1(2, 3, 2), L(-1, -3, -2)},
    {"aten::expand", IN1(3, 1), L(2, 3, 4)},
    {"aten::expand", IN1(1), L(3)},
    {"aten::expand", IN1(3, 1), L(-1, 2)},
    {"aten::select.int", IN1(3, 4), L0, {0, 1}},
    {"aten::select.int", IN1(3, 4), L0, {1, -1}},
    {"aten::select.int", IN1(2, 3, 2), L0, {-2, 2}},
    {"aten::narrow", IN1(5, 3), L0, {0, 1, 3}},
    {"aten::narrow", IN1(5, 3), L0, {1, -2, 2}},
    {"aten::slice.Tensor", IN1(7, 2), L0, {0, 1, 6, 2}},
    {"aten::slice.Tensor", IN1(3, 7), L0, {1, -5, BIG, 3}},
    {"aten::slice.Tensor", IN1(4, 3), L0, {0, 0, BIG, 1}},
    {"aten::slice.Tensor", IN1(4, 3), L0, {-1, 2, 1, 1}},
    {"aten::chunk", IN1(5, 2), L0, {3, 0}},
    {"aten::chunk", IN1(5, 2), L0, {3, 0}, "101"},
    {"aten::chunk", IN1(5, 2), L0, {3, 0}, "010"},
    {"aten::chunk", IN1(2, 7), L0, {3, -1}, "110"},
    {"aten::chunk", IN1(4, 2), L0, {1, 0}},
    {"aten::split.Tensor", IN1(5, 2), L0, {2, 0}, "011"},
    {"aten::split.Tensor", IN1(2, 5), L0, {3, 1}},
    {"aten::split_with_sizes", IN1(6, 2), L(1, 3, 2), {0}},
    {"aten::split_with_sizes", IN1(6, 2), L(1, 3, 2), {0}, "100"},
    {"aten::split_with_sizes", IN1(2, 6), L(2, 0, 4), {-1}, "101"},
    {"aten::split_with_sizes", IN1(2, 6), L(2, 0, 4), {-1}, "010"},
    {"aten::unbind.int", IN1(3, 2), L0, {0}},
    {"aten::unbind.int", IN1(3, 2), L0, {0}, "010"},
    {"aten::unbind.int", IN1(2, 3), L0, {1}, "101"},
    {"aten::unbind.int", IN1(2, 3, 2), L0, {-1}, "01"},
    {"aten::cat", 3, {{L(2, 1, 3)}, {L(2, 2, 3)}, {L(2, 3, 3)}}, L0, {1}},
    {"aten::cat", 3, {{L(1, 3)}, {L(2, 3)}, {L(1, 3)}}, L0, {0}},
    {"aten::cat", 3, {{L(1, 3)}, {L(2, 3)}, {L(1, 3)}}, L0, {-2}},
    {"aten::cat", 3, {{L(2, 2)}, {L(2, 1)}, {L(2, 3)}}, L0, {-1}},
    {"aten::cat", 1, {{L(2, 2)}}, L0, {0}},
    {"aten::cat", 3, {{L(2, 1, 3)}, {L(2, 2, 3)}, {L(2, 3, 3)}}, L0, {-2}, NULL, "101"},
    {"aten::stack", 3, {{L(2, 3)}, {L(2, 3)}, {L(2, 3)}}, L0, {0}},
    {"aten::stack", 3, {{L(2, 3)}, {L(2, 3)}, {L(2, 3)}}, L0, {1}},
    {"aten::stack", 3, {{L(2, 3)}, {L(2, 3)}, {L(2, 3)}}, L0, {-1}},
    {"aten::stack", 2, {{L0}, {L0}}, L0, {0}},
    {"aten::stack", 3, {{L(2, 3)}, {L(2, 3)}, {L(2, 3)}}, L0, {2}, NULL, "010"},
    {"aten::diagonal", IN1(3, 4), L0, {0, 0, 1}},
    {"aten::diagonal", IN1(3, 4), L0, {-1, 1, 0}},
    {"aten::diagonal", IN1(2, 3, 4), L0, {1, -1, 1}},
    {"aten::select_scatter", 2, {{L(3, 4)}, {L(4)}}, L0, {0, 1}},
    {"aten::select_scatter", 2, {{L(2, 3, 2)}, {L(2, 2)}}, L0, {-2, -1}},
    {"aten::select_scatter", 2, {{L(3, 4)}, {L(3)}}, L0, {1, 2}, NULL, "01"},
    {"aten::slice_scatter", 2, {{L(7, 2)}, {L(3, 2)}}, L0, {0, 1, 6, 2}},
    {"aten::slice_scatter", 2, {{L(3, 7)}, {L(3, 2)}}, L0, {-1, -5, BIG, 3}},
    {"aten::slice_scatter", 2, {{L(4, 3)}, {L(4, 3)}}, L0, {0, 0, BIG, 1}, NULL, "10"},
    {"aten::diagonal_scatter", 2, {{L(3, 4)}, {L(3)}}, L0, {0, 0, 1}},
    {"aten::diagonal_scatter", 2, {{L(3, 4)}, {L(2)}}, L0, {-1, 0, 1}},
    {"aten::diagonal_scatter", 2, {{L(2, 3, 4)}, {L(3, 2)}}, L0, {1, 0, 2}},
    {"aten::select_backward", IN1(4), L(3, 4), {0, 1}},
    {"aten::select_backward", IN1(3), L(3, 4), {1, -1}},
    {"aten::slice_backward", IN1(3, 2), L(7, 2), {0, 1, 6, 2}},
    {"aten::slice_backward", IN1(3, 2), L(3, 7), {-1, -5, BIG, 3}},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* The case's attributes in schema order: the list, then the ints. */
static void attrs_of(const tj_op_info *op, const gcase *k, tj_attr *a) {
    const tj_schema *s = &op->schema;
    for (int i = 0, p = 0; i < s->n_attrs; i++) {
        const tj_arg *arg = &s->args[s->attr_pos[i]];
        a[i] = arg->def;
        if (arg->type == TJ_ARG_INTS) a[i].ints.data = k->list, a[i].ints.n = k->n_list;
        else if (arg->type == TJ_ARG_INT) a[i].i = k->p[p++];
    }
}

static void label_of(const gcase *k, char *buf, size_t n) {
    int at = snprintf(buf, n, "%s (", k->op);
    for (int i = 0; i < k->n_in && at < (int)n; i++)
        for (int d = 0; d < k->in[i].ndim && at < (int)n; d++)
            at += snprintf(buf + at, n - (size_t)at, "%s%lld", d ? "x" : i ? ", " : "",
                           (long long)k->in[i].sizes[d]);
    if (at < (int)n)
        snprintf(buf + at, n - (size_t)at, "; p %lld %lld %lld; keep %s; wrt %s)",
                 (long long)k->p[0], (long long)k->p[1], (long long)k->p[2],
                 k->keep ? k->keep : "all", k->wrt ? k->wrt : "all");
}

static bool in_view_table(int id) {
    for (const tjg_rule_entry *e = tjg_rules_view; e->op >= 0; e++)
        if (e->op == id) return true;
    return false;
}

static void every_view_op_is_listed(void **state) {
    (void)state;
    int n = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tjc_op(i);
        if (op->kind != TJ_KIND_VIEW && op->kind != TJ_KIND_SHAPE) continue;
        n++;
        const tjg_rule_entry *e = tjg_rule_for(op);
        if (!e || !in_view_table(i)) fail_msg("%s is not in tjg_rules_view", op->name);
        if (!e->rule && !e->why) fail_msg("%s has neither a rule nor a reason", op->name);
        if (!e->rule) continue;
        bool has_case = !strcmp(op->name, "aten::as_strided_scatter") ||
                        !strcmp(op->name, "aten::as_strided_copy"); /* as_strided_gradients */
        for (int c = 0; c < N_CASES; c++) has_case |= !strcmp(cases[c].op, op->name);
        if (!has_case) fail_msg("%s has a rule but no case in test_grad_view.c", op->name);
    }
    assert_true(n >= 23);
    for (int c = 0; c < N_CASES; c++)
        if (!tj_op_find(cases[c].op)) fail_msg("case %d names no op: %s", c, cases[c].op);
}

/* "101" as a mask. */
static void mask_of(const char *bits, bool *mask, int cap) {
    int n = bits ? (int)strlen(bits) : 0;
    assert_true(n <= cap);
    for (int i = 0; i < n; i++) mask[i] = bits[i] == '1';
}

static void check_cases(bool second) {
    tj_generator *gen = tj_generator_new(12);
    for (int c = 0; c < N_CASES; c++) {
        const gcase *k = &cases[c];
        const tj_op_info *op = tj_op_find(k->op);
        tj_attr a[TJ_MAX_ARGS];
        attrs_of(op, k, a);
        char label[200];
        label_of(k, label, sizeof label);
        tj_tensor *x[3];
        for (int i = 0; i < k->n_in; i++)
            x[i] = tt_random(gen, k->in[i].sizes, k->in[i].ndim, TJ_F64, -1.5, 1.5);
        bool keep[16], wrt[3];
        mask_of(k->keep, keep, 16);
        mask_of(k->wrt, wrt, 3);
        bool *kp = k->keep ? keep : NULL, *wp = k->wrt ? wrt : NULL;
        if (second) tt_gradgradcheck_op_outputs(op, x, k->n_in, a, wp, kp, label);
        else tt_gradcheck_op_outputs(op, x, k->n_in, a, wp, kp, label);
        for (int i = 0; i < k->n_in; i++) tj_release(x[i]);
    }
    tj_generator_free(gen);
}

static void first_order(void **state) {
    (void)state;
    check_cases(false);
}

static void second_order(void **state) {
    (void)state;
    check_cases(true);
}

/* ---- as_strided ops (two int[] arguments) ------------------------------------------------- */

/* First and second order through as_strided_scatter and as_strided_copy, and
 * the refusal of as_strided_copy's derivative where it reads an element twice. */
static void as_strided_gradients(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(31);
    static const int64_t s34[] = {3, 4}, s22[] = {2, 2}, st41[] = {4, 1}, s23[] = {2, 3},
                         st12[] = {1, 2}, st11[] = {1, 1};
    tj_tensor *x = tt_random(gen, s34, 2, TJ_F64, -1.5, 1.5);
    tj_tensor *src = tt_random(gen, s22, 2, TJ_F64, -1.5, 1.5);
    const tj_op_info *scatter = tj_op_find("aten::as_strided_scatter");
    const tj_op_info *copy = tj_op_find("aten::as_strided_copy");
    tj_attr a[3] = {{.ints = {s22, 2}}, {.ints = {st41, 2}}, {.i = 1}};
    tj_tensor *two[2] = {x, src};
    tt_gradcheck_op(scatter, two, 2, a, NULL, "as_strided_scatter");
    tt_gradgradcheck_op(scatter, two, 2, a, NULL, "as_strided_scatter");
    tj_attr b[3] = {{.ints = {s23, 2}}, {.ints = {st12, 2}}, {.i = 0}};
    tt_gradcheck_op(copy, &x, 1, b, NULL, "as_strided_copy");
    tt_gradgradcheck_op(copy, &x, 1, b, NULL, "as_strided_copy");
    /* overlapping reads: the gradient would need sums; refused with the reason */
    tj_attr o[3] = {{.ints = {s22, 2}}, {.ints = {st11, 2}}, {.i = 0}};
    tj_graph *g = tt_op_graph(copy, &x, 1, o);
    assert_non_null(g);
    bool wrt[1] = {true};
    assert_null(tj_grad_graph(g, wrt));
    tt_assert_error("reads some element of self more than once");
    tj_clear_error();
    tj_graph_free(g);
    tj_release(x), tj_release(src);
    tj_generator_free(gen);
}

/* ---- many operands and outputs ------------------------------------------------------------ */

/* The gradients of g's inputs where wrt, for output gradients go (one per
 * output), from the derived gradient graph. */
static void graph_grads(const tj_graph *g, const bool *wrt, tj_tensor *const *inputs,
                        tj_tensor *const *go, tj_tensor **grads) {
    tj_graph *gg = tj_grad_graph(g, wrt);
    if (!gg) fail_msg("tj_grad_graph: %s", tj_last_error());
    tj_compile_options o = {.passes = "dce"};
    tj_program *p = tj_compile(gg, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    int n_in = tj_graph_num_inputs(g), n_out = tj_graph_num_outputs(g);
    tj_tensor *all[128];
    assert_true(n_in + n_out <= 128);
    for (int i = 0; i < n_in; i++) all[i] = inputs[i];
    for (int o = 0; o < n_out; o++) all[n_in + o] = go[o];
    if (tt_gradcheck_run(p, all, grads) != TJ_OK) fail_msg("run: %s", tj_last_error());
    tj_program_free(p);
    tj_graph_free(gg);
}

static tj_tensor *filled(const int64_t *sizes, int ndim, double v) {
    tj_tensor *t = tj_zeros(sizes, ndim, TJ_F64), *r = tj_add_scalar_(t, v, 1.0);
    tj_release(r);
    return t;
}

/* Models for many_pieces: cat or stack of every input along dim 0, and
 * unbind of input 0 returning the pieces where keep is true. */
typedef struct many {
    int op; /* TJ_OP_cat, TJ_OP_stack or TJ_OP_unbind */
    const bool *keep;
    int n_pieces;
} many;

static tj_status many_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    const many *m = ctx;
    tj_scope_begin(); /* the pieces not returned die with it */
    int n = 0;
    if (m->op == TJ_OP_cat) n = (out[0] = tj_keep(tj_cat(in, n_in, 0))) != NULL;
    else if (m->op == TJ_OP_stack) n = (out[0] = tj_keep(tj_stack(in, n_in, 0))) != NULL;
    tj_tensor *pieces[128];
    if (m->op == TJ_OP_unbind && tj_unbind(in[0], 0, pieces, 128) == m->n_pieces)
        for (int k = 0; k < m->n_pieces; k++)
            if (m->keep[k] && n < n_out) out[n++] = tj_keep(pieces[k]);
    tj_scope_end();
    return n == n_out ? TJ_OK : tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
}

/* stack and cat of more inputs than one unbind or split_with_sizes node may
 * have outputs (the graph emitter types 16), and unbind into more. */
static void many_pieces(void **state) {
    (void)state;
    enum { N = 20, M = 40 };
    int64_t s2[] = {2}, sm[] = {M};
    tj_tensor *x[N], *go[M], *grads[N];
    bool wrt[N];
    for (int i = 0; i < N; i++) x[i] = filled(s2, 1, i), wrt[i] = true;
    const int joins[] = {TJ_OP_stack, TJ_OP_cat};
    for (int j = 0; j < 2; j++) {
        many m = {joins[j], NULL, 0};
        tj_graph *g = tj_trace(many_model, &m, x, N, 1, NULL);
        if (!g) fail_msg("trace: %s", tj_last_error());
        int64_t sizes[2] = {N, 2}, flat[1] = {2 * N};
        tj_tensor *seed = tj_arange(0, 2 * N, 1, TJ_F64);
        go[0] = j == 0 ? tj_view(seed, sizes, 2) : tj_view(seed, flat, 1);
        graph_grads(g, wrt, x, go, grads);
        for (int i = 0; i < N; i++) { /* input i gets elements 2i and 2i+1 */
            tt_assert_values(grads[i], ((double[]){2.0 * i, 2.0 * i + 1}), 2, 0);
            tj_release(grads[i]);
        }
        tj_release(go[0]);
        tj_release(seed);
        tj_graph_free(g);
    }
    for (int i = 0; i < N; i++) tj_release(x[i]);
    /* unbind into M pieces; every third one gets no gradient */
    tj_tensor *u = filled(sm, 1, 0);
    bool keep[M];
    int kept = 0;
    for (int k = 0; k < M; k++) keep[k] = k % 3 != 1;
    for (int k = 0; k < M; k++)
        if (keep[k]) go[kept++] = filled(NULL, 0, k);
    many m = {TJ_OP_unbind, keep, M};
    tj_graph *g = tj_trace(many_model, &m, &u, 1, kept, NULL);
    if (!g) fail_msg("trace: %s", tj_last_error());
    bool w = true;
    tj_tensor *gu;
    graph_grads(g, &w, &u, go, &gu);
    double want[M];
    for (int k = 0; k < M; k++) want[k] = keep[k] ? k : 0;
    tt_assert_values(gu, want, M, 0);
    tj_release(gu);
    for (int k = 0; k < kept; k++) tj_release(go[k]);
    tj_graph_free(g);
    tj_release(u);
}

/* Autodiff refuses nodes of more than 64 outputs, but a rule run eagerly
 * may see them: unbind into more pieces than one stack node takes. */
static void many_pieces_eager(void **state) {
    (void)state;
    enum { M = 150 };
    int64_t sm[] = {M};
    tj_tensor *u = filled(sm, 1, 0), *out[M], *go[M], *gu;
    assert_int_equal(tj_unbind(u, 0, out, M), M);
    for (int k = 0; k < M; k++) go[k] = k % 4 ? filled(NULL, 0, k) : NULL;
    bool needs = true;
    tj_attr dim = {.i = 0};
    assert_int_equal(tjg_eager_grad(tjc_op(TJ_OP_unbind), &u, 1, &dim, out, M, go, &needs, &gu), TJ_OK);
    double want[M];
    for (int k = 0; k < M; k++) want[k] = k % 4 ? k : 0;
    tt_assert_values(gu, want, M, 0);
    tj_release(gu);
    for (int k = 0; k < M; k++) tj_release(out[k]), tj_release(go[k]);
    tj_release(u);
}

/* cat promotes: each input's gradient comes back in its own dtype. */
static void cat_dtypes(void **state) {
    (void)state;
    int64_t s2[] = {2}, s3[] = {3};
    tj_tensor *in[2] = {filled(s2, 1, 1), tj_zeros(s3, 1, TJ_F32)};
    tj_tensor *out = tj_cat(in, 2, 0);
    assert_int_equal(tj_tensor_dtype(out), TJ_F64);
    tj_tensor *go = tj_arange(0, 5, 1, TJ_F64), *grads[2];
    bool needs[2] = {true, true};
    tj_attr dim = {.i = 0};
    assert_int_equal(tjg_eager_grad(tjc_op(TJ_OP_cat), in, 2, &dim, &out, 1, &go, needs, grads), TJ_OK);
    assert_int_equal(tj_tensor_dtype(grads[0]), TJ_F64);
    assert_int_equal(tj_tensor_dtype(grads[1]), TJ_F32);
    tt_assert_values(grads[0], ((double[]){0, 1}), 2, 0);
    tt_assert_values(grads[1], ((double[]){2, 3, 4}), 3, 0);
    for (int i = 0; i < 2; i++) tj_release(grads[i]), tj_release(in[i]);
    tj_release(go);
    tj_release(out);
}

/* The gradient ops refuse bad arguments with messages, like every op. */
#define EXPECT_NULL(call, needle)      \
    do {                               \
        tj_tensor *r_ = (call);        \
        assert_null(r_);               \
        tt_assert_error(needle);       \
        tj_clear_error();              \
    } while (0)

static void gradient_ops_refuse_bad_arguments(void **state) {
    (void)state;
    int64_t s4[] = {4}, s34[] = {3, 4}, neg[] = {3, -1}, s32[] = {3, 2};
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tj_tensor *g = tj_zeros(s4, 1, TJ_F64), *g32 = tj_zeros(s32, 2, TJ_F64);
    EXPECT_NULL(tj_select_backward(g, s34, 2, 1, 0),
                "grad_output has sizes [4], but the view it is the gradient of has sizes [3]");
    EXPECT_NULL(tj_select_backward(g, s34, 2, 0, 3), "index 3 is out of range for dim 0 of size 3");
    EXPECT_NULL(tj_select_backward(g, s34, 2, 2, 0), "aten::select_backward");
    EXPECT_NULL(tj_select_backward(g, neg, 2, 0, 0), "negative size -1");
    EXPECT_NULL(tj_select_backward(g, NULL, 0, 0, 0), "has 0 entries");
    EXPECT_NULL(tj_slice_backward(g32, s34, 2, 0, 0, BIG, 0), "step must be positive, got 0");
    EXPECT_NULL(tj_slice_backward(g32, s34, 2, 0, 0, BIG, 2),
                "grad_output has sizes [3, 2], but the view it is the gradient of has sizes [2, 4]");
    EXPECT_NULL(tj_new_zeros(g, neg, 2), "negative size -1");
    EXPECT_NULL(tj_new_zeros(g, nine, 9), "has 9 entries");
    tj_release(g);
    tj_release(g32);
}

int main(void) {
    TT_GRADCHECK_SKIP_WITHOUT_DEVICE();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_view_op_is_listed),
        cmocka_unit_test(first_order),
        cmocka_unit_test(as_strided_gradients),
        cmocka_unit_test(second_order),
        cmocka_unit_test(many_pieces),
        cmocka_unit_test(many_pieces_eager),
        cmocka_unit_test(cat_dtypes),
        cmocka_unit_test(gradient_ops_refuse_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
