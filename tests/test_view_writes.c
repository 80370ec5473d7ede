/* test_view_writes.c — models that write in place through views, against
 * PyTorch. Each model below is the C twin of the PyTorch function of the
 * same name in tests/views/make_golden.py, whose outputs, inputs after the
 * call, and input gradients (for a loss of sum(out_k * gout_k)) are the
 * golden files in tests/views/data/NAME/; each model's comment quotes its
 * twin. For every model:
 *   - tjit's eager run, the traced graph replayed by the portable backend
 *     and by LLVM (fused), equal PyTorch within 1e-5 of the output's largest
 *     magnitude, and so do the inputs the model writes;
 *   - the traced graph, once functionalized, holds no write in place but
 *     one aten::copy_ per graph input written (writes through views became
 *     scatters when traced, other writes their out-of-place forms);
 *   - the gradients from the compiled program (autodiff of the traced graph)
 *     equal PyTorch's;
 * and a subset passes a second-order finite-difference check. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/gradcheck.h"
#include "tests/support/testing.h"

#define REL_TOL 1e-5
enum { MAX_IO = 4 };

#define L(...) ((const int64_t[]){__VA_ARGS__})
#define N(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define BEGIN tj_scope_begin()
#define RETURN1(a)                  \
    do {                            \
        out[0] = tj_keep(a);        \
        tj_scope_end();             \
        return out[0] ? TJ_OK : tj_last_status(); \
    } while (0)
#define UNUSED (void)ctx, (void)n_in, (void)n_out
#define MODEL(name) static tj_status name(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out)

/* PyTorch: def select_mul(x):
 *     b = x.clone()
 *     b.select(0, 1).mul_(2.0)
 *     return [b] */
MODEL(select_mul) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_scalar_(tj_select(b, 0, 1), 2.0);
    RETURN1(b);
}

/* PyTorch: def slice_add(x, y):
 *     b = x * 1.0
 *     b[:, 1:3].add_(y[:, :2])
 *     return [b] */
MODEL(slice_add) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_mul_scalar(in[0], 1.0);
    tj_add_(tj_slice(b, 1, 1, 3, 1), tj_slice(in[1], 1, 0, 2, 1), 1.0);
    RETURN1(b);
}

/* PyTorch: def narrow_copy(x, y):
 *     b = x.clone()
 *     b.narrow(1, 0, 2).copy_(y)
 *     return [b + 1.0] */
MODEL(narrow_copy) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_copy_(tj_narrow(b, 1, 0, 2), in[1]);
    RETURN1(tj_add_scalar(b, 1.0, 1.0));
}

/* PyTorch: def diagonal_add(x):
 *     b = x.clone()
 *     b.diagonal().add_(1.0)
 *     return [b] */
MODEL(diagonal_add) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_add_scalar_(tj_diagonal(b, 0, 0, 1), 1.0, 1.0);
    RETURN1(b);
}

/* PyTorch: def transpose_select(x):
 *     b = x.clone()
 *     b.t().select(0, 2).mul_(3.0)
 *     return [b] */
MODEL(transpose_select) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_scalar_(tj_select(tj_t(b), 0, 2), 3.0);
    RETURN1(b);
}

/* PyTorch: def view_slice(x):
 *     b = x.clone()
 *     b.view(6, 2)[1:4].mul_(0.5)
 *     return [b] */
MODEL(view_slice) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_scalar_(tj_slice(tj_view(b, L(6, 2), 2), 0, 1, 4, 1), 0.5);
    RETURN1(b);
}

/* PyTorch: def two_views(x):
 *     b = x.clone()
 *     v1 = b[0]
 *     v2 = b[:, 1]
 *     v1.add_(1.0)
 *     v2.mul_(2.0)
 *     return [b, v1, v2] */
MODEL(two_views) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]), *v1 = tj_select(b, 0, 0), *v2 = tj_select(b, 1, 1);
    tj_add_scalar_(v1, 1.0, 1.0);
    tj_mul_scalar_(v2, 2.0);
    out[0] = tj_keep(b), out[1] = tj_keep(v1), out[2] = tj_keep(v2);
    tj_scope_end();
    return out[0] && out[1] && out[2] ? TJ_OK : tj_last_status();
}

/* PyTorch: def base_then_view(x):
 *     b = x.clone()
 *     v = b[1]
 *     b.mul_(2.0)
 *     return [v * 1.0] */
MODEL(base_then_view) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]), *v = tj_select(b, 0, 1);
    tj_mul_scalar_(b, 2.0);
    RETURN1(tj_mul_scalar(v, 1.0));
}

/* PyTorch: def chunk_write(x):
 *     b = x.clone()
 *     c = b.chunk(2, dim=1)
 *     c[1].mul_(-1.0)
 *     return [b] */
MODEL(chunk_write) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]), *c[2];
    if (tj_chunk(b, 2, 1, c, 2) == 2) tj_mul_scalar_(c[1], -1.0);
    RETURN1(b);
}

/* PyTorch: def unbind_write(x):
 *     b = x.clone()
 *     rows = b.unbind(0)
 *     rows[2].add_(10.0)
 *     return [b, rows[0] * 1.0] */
MODEL(unbind_write) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]), *rows[3] = {0};
    if (tj_unbind(b, 0, rows, 3) == 3) tj_add_scalar_(rows[2], 10.0, 1.0);
    out[0] = tj_keep(b), out[1] = tj_keep(tj_mul_scalar(rows[0], 1.0));
    tj_scope_end();
    return out[0] && out[1] ? TJ_OK : tj_last_status();
}

/* PyTorch: def split_copy(x):
 *     b = x.clone()
 *     parts = b.split([2, 3], dim=0)
 *     parts[1].copy_(torch.ones(3, 2))
 *     return [b] */
MODEL(split_copy) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]), *parts[2];
    if (tj_split_with_sizes(b, L(2, 3), 2, 0, parts, 2) == 2)
        tj_copy_(parts[1], tj_ones(L(3, 2), 2, TJ_F32));
    RETURN1(b);
}

/* PyTorch: def unsqueeze_write(x):
 *     b = x.clone()
 *     b.unsqueeze(0)[0, 1].mul_(0.0)
 *     return [b] */
MODEL(unsqueeze_write) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_scalar_(tj_select(tj_select(tj_unsqueeze(b, 0), 0, 0), 0, 1), 0.0);
    RETURN1(b);
}

/* PyTorch: def permute_add(x, y):
 *     b = x.clone()
 *     b.permute(2, 1, 0)[1].add_(y)
 *     return [b] */
MODEL(permute_add) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_add_(tj_select(tj_permute(b, L(2, 1, 0), 3), 0, 1), in[1], 1.0);
    RETURN1(b);
}

/* PyTorch: def loop_rows(x):
 *     b = x.clone()
 *     for i in range(3):
 *         b[i].mul_(i + 1.0)
 *     return [b.sum(0)] */
MODEL(loop_rows) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    for (int i = 0; i < 3; i++) tj_mul_scalar_(tj_select(b, 0, i), i + 1.0);
    RETURN1(tj_sum(b, L(0), 1, false));
}

/* PyTorch: def rnn_buffer(x, h0):
 *     out = torch.zeros(4, 3)
 *     h = h0
 *     for t in range(4):
 *         h = torch.tanh(x[t] + h)
 *         out[t].copy_(h)
 *     return [out] */
MODEL(rnn_buffer) {
    UNUSED; BEGIN;
    tj_tensor *o = tj_zeros(L(4, 3), 2, tj_tensor_dtype(in[0])), *h = in[1];
    for (int t = 0; t < 4; t++) {
        h = tj_tanh(tj_add(tj_select(in[0], 0, t), h, 1.0));
        tj_copy_(tj_select(o, 0, t), h);
    }
    RETURN1(o);
}

/* PyTorch: def masked_scale(x, m):
 *     b = x.clone()
 *     b[:, 0].mul_(m[:, 0])
 *     return [b] */
MODEL(masked_scale) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_(tj_select(b, 1, 0), tj_select(in[1], 1, 0));
    RETURN1(b);
}

/* PyTorch: def select_slice(x):
 *     b = x.clone()
 *     b[1][2:].add_(5.0)
 *     return [b] */
MODEL(select_slice) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_add_scalar_(tj_slice(tj_select(b, 0, 1), 0, 2, INT64_MAX, 1), 5.0, 1.0);
    RETURN1(b);
}

/* PyTorch: def overlapping_views(x):
 *     b = x.clone()
 *     v = b[:, 1:3]
 *     w = b[:, 2:4]
 *     v.mul_(2.0)
 *     return [w * 1.0] */
MODEL(overlapping_views) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]), *v = tj_slice(b, 1, 1, 3, 1), *w = tj_slice(b, 1, 2, 4, 1);
    tj_mul_scalar_(v, 2.0);
    RETURN1(tj_mul_scalar(w, 1.0));
}

/* PyTorch: def running_stats(x, buf):
 *     buf[0].mul_(0.9).add_(0.1 * x.mean(0))
 *     buf[1].mul_(0.9).add_(0.1 * x.var(0, unbiased=False))
 *     return [x * 2.0] */
MODEL(running_stats) {
    UNUSED; BEGIN;
    tj_tensor *mean = tj_mean(in[0], L(0), 1, false), *var = tj_var(in[0], L(0), 1, 0, false);
    tj_add_(tj_mul_scalar_(tj_select(in[1], 0, 0), 0.9), tj_mul_scalar(mean, 0.1), 1.0);
    tj_add_(tj_mul_scalar_(tj_select(in[1], 0, 1), 0.9), tj_mul_scalar(var, 0.1), 1.0);
    RETURN1(tj_mul_scalar(in[0], 2.0));
}

/* PyTorch: def copy_broadcast(x, y):
 *     b = x.clone()
 *     b[0].copy_(y)
 *     return [b] */
MODEL(copy_broadcast) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_copy_(tj_select(b, 0, 0), in[1]);
    RETURN1(b);
}

/* PyTorch: def copy_dtype(x, y):
 *     b = x.clone()
 *     b[1].copy_(y.double())
 *     return [b] */
MODEL(copy_dtype) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_copy_(tj_select(b, 0, 1), tj_to_dtype(in[1], TJ_F64));
    RETURN1(b);
}

/* PyTorch: def diagonal_offset(x):
 *     b = x.clone()
 *     b.diagonal(1, 1, 2).mul_(2.0)
 *     return [b] */
MODEL(diagonal_offset) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_scalar_(tj_diagonal(b, 1, 1, 2), 2.0);
    RETURN1(b);
}

/* PyTorch: def reshape_slice(x):
 *     b = x.clone()
 *     b.reshape(12)[3:7].mul_(-1.0)
 *     return [b] */
MODEL(reshape_slice) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_scalar_(tj_slice(tj_reshape(b, L(12), 1), 0, 3, 7, 1), -1.0);
    RETURN1(b);
}

/* PyTorch: def flatten_select(x):
 *     b = x.clone()
 *     b.flatten(1)[0].add_(1.0)
 *     return [b] */
MODEL(flatten_select) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_add_scalar_(tj_select(tj_flatten(b, 1, -1), 0, 0), 1.0, 1.0);
    RETURN1(b);
}

/* PyTorch: def write_then_matmul(x, w):
 *     b = x.clone()
 *     b[0].mul_(2.0)
 *     return [b @ w] */
MODEL(write_then_matmul) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_mul_scalar_(tj_select(b, 0, 0), 2.0);
    RETURN1(tj_matmul(b, in[1]));
}

/* PyTorch: def narrow_returned(x):
 *     b = x.clone()
 *     v = b.narrow(0, 1, 2)
 *     v.mul_(3.0)
 *     return [v, b] */
MODEL(narrow_returned) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]), *v = tj_narrow(b, 0, 1, 2);
    tj_mul_scalar_(v, 3.0);
    out[0] = tj_keep(v), out[1] = tj_keep(b);
    tj_scope_end();
    return out[0] && out[1] ? TJ_OK : tj_last_status();
}

/* PyTorch: def chained_inplace(x):
 *     b = x.clone()
 *     b[:, 2].mul_(2.0).add_(1.0).sub_(0.5)
 *     return [torch.relu(b)] */
MODEL(chained_inplace) {
    UNUSED; BEGIN;
    tj_tensor *b = tj_clone(in[0]);
    tj_sub_scalar_(tj_add_scalar_(tj_mul_scalar_(tj_select(b, 1, 2), 2.0), 1.0, 1.0), 0.5, 1.0);
    RETURN1(tj_relu(b));
}

/* PyTorch: def input_written(x, y):
 *     x2 = x * 1.0
 *     y[0].add_(x2[0])
 *     return [y * 1.0] */
MODEL(input_written) {
    UNUSED; BEGIN;
    tj_tensor *x2 = tj_mul_scalar(in[0], 1.0);
    tj_add_(tj_select(in[1], 0, 0), tj_select(x2, 0, 0), 1.0);
    RETURN1(tj_mul_scalar(in[1], 1.0));
}

typedef struct view_model {
    const char *name;
    tj_model_fn fn;
    int n_in, n_out;
    const char *grad;       /* which inputs need a gradient: "10" */
    int inputs_written;     /* graph inputs the model writes (each one aten::copy_) */
    bool second_order;      /* also checked by second-order finite differences */
} view_model;

#define ROW(f, ...) {#f, f, __VA_ARGS__}
static const view_model models[] = {
    ROW(select_mul, 1, 1, "1", 0, true),
    ROW(slice_add, 2, 1, "11", 0, false),
    ROW(narrow_copy, 2, 1, "11", 0, true),
    ROW(diagonal_add, 1, 1, "1", 0, false),
    ROW(transpose_select, 1, 1, "1", 0, false),
    ROW(view_slice, 1, 1, "1", 0, false),
    ROW(two_views, 1, 3, "1", 0, true),
    ROW(base_then_view, 1, 1, "1", 0, false),
    ROW(chunk_write, 1, 1, "0", 0, false),
    ROW(unbind_write, 1, 2, "0", 0, false),
    ROW(split_copy, 1, 1, "0", 0, false),
    ROW(unsqueeze_write, 1, 1, "1", 0, false),
    ROW(permute_add, 2, 1, "11", 0, false),
    ROW(loop_rows, 1, 1, "1", 0, false),
    ROW(rnn_buffer, 2, 1, "11", 0, true),
    ROW(masked_scale, 2, 1, "11", 0, true),
    ROW(select_slice, 1, 1, "1", 0, false),
    ROW(overlapping_views, 1, 1, "1", 0, false),
    ROW(running_stats, 2, 1, "10", 1, false),
    ROW(copy_broadcast, 2, 1, "11", 0, false),
    ROW(copy_dtype, 2, 1, "10", 0, false),
    ROW(diagonal_offset, 1, 1, "1", 0, true),
    ROW(reshape_slice, 1, 1, "1", 0, false),
    ROW(flatten_select, 1, 1, "1", 0, false),
    ROW(write_then_matmul, 2, 1, "11", 0, true),
    ROW(narrow_returned, 1, 2, "1", 0, false),
    ROW(chained_inplace, 1, 1, "1", 0, false),
    ROW(input_written, 2, 1, "10", 1, false),
};
enum { N_MODELS = sizeof models / sizeof models[0] };

/* ---- golden data ------------------------------------------------------------------- */

static tj_tensor *golden(const view_model *m, const char *what, int k) {
    char path[256];
    snprintf(path, sizeof path, "tests/views/data/%s/%s%d.npy", m->name, what, k);
    tj_tensor *t = tj_load_npy(path);
    if (!t) fail_msg("%s: %s", path, tj_last_error());
    return t; /* the test's scope releases it (or the caller, outside one) */
}

/* got against want within REL_TOL of want's largest magnitude, in f64. */
static void assert_close(tj_tensor *got, tj_tensor *want, const char *what) {
    tt_context("%s", what);
    tt_ref w = tt_ref_of(want);
    double top = 0;
    for (int64_t i = 0; i < w.numel; i++) top = fmax(top, fabs(w.v[i]));
    tj_tensor *g = tj_to_dtype(got, TJ_F32);
    assert_non_null(g);
    tt_assert_close_ref(g, &w, 0, REL_TOL * (top > 1 ? top : 1));
    tt_ref_free(&w);
    tt_context(NULL);
}

static void fresh_inputs(const view_model *m, tj_tensor **in) {
    for (int k = 0; k < m->n_in; k++) in[k] = tj_clone(golden(m, "in", k));
}

/* The outputs and the inputs after the call against PyTorch's. */
static void check_against_golden(const view_model *m, tj_tensor **in, tj_tensor **out,
                                 const char *how) {
    char what[160];
    for (int k = 0; k < m->n_out; k++) {
        snprintf(what, sizeof what, "%s, %s, output %d", m->name, how, k);
        assert_close(out[k], golden(m, "out", k), what);
    }
    for (int k = 0; k < m->n_in; k++) {
        snprintf(what, sizeof what, "%s, %s, input %d after the call", m->name, how, k);
        assert_close(in[k], golden(m, "after", k), what);
    }
}

static int writers(const tj_graph *g) {
    int n = 0;
    for (tj_node *k = tj_block_first(tj_graph_block((tj_graph *)g)); k; k = tj_node_next(k))
        n += tj_node_kind_of(k) == TJ_NODE_OP && tj_op_schema(tj_node_op(k))->mutates_inputs;
    return n;
}

static void replay(const view_model *m, const tj_graph *g, const char *backend) {
    tj_compile_options o = {.backend = backend};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("%s: compile (%s): %s", m->name, backend, tj_last_error());
    tj_tensor *in[MAX_IO], *out[MAX_IO] = {0};
    for (int rep = 0; rep < 2; rep++) { /* the second run replays the static plan */
        fresh_inputs(m, in);
        if (tj_run(p, in, out) != TJ_OK) fail_msg("%s: run (%s): %s", m->name, backend, tj_last_error());
        check_against_golden(m, in, out, backend); /* tj_run hands outputs to the scope */
    }
    tj_program_free(p);
}

static void gradients(const view_model *m, const tj_graph *g) {
    bool grad[MAX_IO] = {false};
    for (int k = 0; k < m->n_in; k++) grad[k] = m->grad[k] == '1';
    tj_compile_options o = {.requires_grad = grad};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("%s: compile with gradients: %s", m->name, tj_last_error());
    tj_tensor *in[MAX_IO], *out[MAX_IO] = {0}, *gout[MAX_IO], *gin[MAX_IO] = {0};
    fresh_inputs(m, in);
    if (tj_run(p, in, out) != TJ_OK) fail_msg("%s: run: %s", m->name, tj_last_error());
    for (int k = 0; k < m->n_out; k++) gout[k] = golden(m, "gout", k);
    check_against_golden(m, in, out, "compiled with gradients");
    if (tj_backward(p, gout, gin) != TJ_OK) fail_msg("%s: backward: %s", m->name, tj_last_error());
    char what[160];
    for (int k = 0; k < m->n_in; k++) {
        if (!grad[k]) continue;
        snprintf(what, sizeof what, "%s, gradient of input %d", m->name, k);
        if (!gin[k]) fail_msg("%s: no gradient", what);
        assert_close(gin[k], golden(m, "grad", k), what);
    }
    tj_program_free(p);
}

static void test_model(void **state) {
    const view_model *m = *state;
    /* eager */
    tj_tensor *in[MAX_IO], *out[MAX_IO] = {0};
    fresh_inputs(m, in);
    if (m->fn(NULL, in, m->n_in, out, m->n_out) != TJ_OK) fail_msg("%s: %s", m->name, tj_last_error());
    check_against_golden(m, in, out, "eager"); /* the outputs belong to the test's scope */
    /* traced, on inputs of its own (the trace runs the model too) */
    fresh_inputs(m, in);
    tj_graph *g = tj_trace(m->fn, NULL, in, m->n_in, m->n_out, NULL);
    if (!g) fail_msg("%s: trace: %s", m->name, tj_last_error());
    char what[160];
    for (int k = 0; k < m->n_in; k++) {
        snprintf(what, sizeof what, "%s, the trace's run, input %d after the call", m->name, k);
        assert_close(in[k], golden(m, "after", k), what);
    }
    /* after functionalize, the only writes left copy into the inputs written */
    tj_graph *pure = tj_graph_clone(g, NULL);
    assert_int_equal(tj_run_passes(pure, "functionalize"), TJ_OK);
    assert_int_equal(writers(pure), m->inputs_written);
    tj_graph_free(pure);
    replay(m, g, "portable");
#ifdef TJIT_HAVE_LLVM
    replay(m, g, "llvm");
#endif
    if (strchr(m->grad, '1')) gradients(m, g);
    tj_graph_free(g);
}

/* First- and second-order finite differences through the traced graph, in
 * f64: the gradient graph's own gradient is checked too. */
static void test_second_order(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(5);
    int n = 0;
    for (int i = 0; i < N_MODELS; i++) {
        const view_model *m = &models[i];
        if (!m->second_order) continue;
        tj_tensor *in[MAX_IO], *args[2 * MAX_IO];
        bool wrt[MAX_IO] = {false}, w2[2 * MAX_IO];
        for (int k = 0; k < m->n_in; k++) { /* no scope here: the checker releases what it runs */
            tj_tensor *f32 = golden(m, "in", k);
            in[k] = tj_to_dtype(f32, TJ_F64);
            tj_release(f32);
            wrt[k] = m->grad[k] == '1';
        }
        tj_graph *g = tj_trace(m->fn, NULL, in, m->n_in, m->n_out, NULL);
        if (!g) fail_msg("%s: trace: %s", m->name, tj_last_error());
        tt_gradcheck_graph(g, in, wrt, 1e-5, 1e-4, m->name);
        tj_graph *gg = tj_grad_graph(g, wrt);
        if (!gg) fail_msg("%s: tj_grad_graph: %s", m->name, tj_last_error());
        int n_gg = tj_graph_num_inputs(gg);
        assert_true(n_gg <= 2 * MAX_IO);
        for (int k = 0; k < n_gg; k++) {
            const tj_type *t = tj_value_type(tj_graph_input(gg, k));
            args[k] = k < m->n_in ? in[k] : tt_random(gen, t->sizes, t->ndim, (tj_dtype)t->dtype, -1, 1);
            w2[k] = k < m->n_in ? wrt[k] : true;
        }
        char label[96];
        snprintf(label, sizeof label, "%s, second order", m->name);
        tt_gradcheck_graph(gg, args, w2, 1e-5, 1e-4, label);
        for (int k = 0; k < n_gg; k++) tj_release(args[k]);
        tj_graph_free(gg);
        tj_graph_free(g);
        n++;
    }
    tj_generator_free(gen);
    assert_true(n >= 5);
}

/* What PyTorch refuses: writing into an input that requires a gradient
 * (directly or through a view) is refused when gradients are asked for,
 * naming the input; the same graph compiles without gradients. */
static void test_refusals(void **state) {
    (void)state;
    const view_model *m = NULL;
    for (int i = 0; i < N_MODELS; i++)
        if (!strcmp(models[i].name, "input_written")) m = &models[i];
    assert_non_null(m);
    tj_tensor *in[MAX_IO];
    fresh_inputs(m, in);
    tj_graph *g = tj_trace(m->fn, NULL, in, m->n_in, m->n_out, NULL);
    assert_non_null(g);
    bool grad[2] = {true, true};
    tj_compile_options o = {.requires_grad = grad};
    assert_null(tj_compile(g, &o));
    tt_assert_error("aten::copy_");
    tt_assert_error("writes in place into graph input 1, which requires a gradient");
    tj_clear_error();
    tj_program *p = tj_compile(g, NULL);
    assert_non_null(p);
    tj_program_free(p);
    tj_graph_free(g);
}

int main(void) {
    struct CMUnitTest tests[N_MODELS + 2];
    for (int i = 0; i < N_MODELS; i++)
        tests[i] = (struct CMUnitTest){models[i].name, test_model, tt_setup_scope, tt_teardown_scope,
                                       (void *)&models[i]};
    tests[N_MODELS] = (struct CMUnitTest)cmocka_unit_test(test_second_order);
    tests[N_MODELS + 1] = (struct CMUnitTest)TT_SCOPED_TEST(test_refusals);
    return _cmocka_run_group_tests("view_writes", tests, N_MODELS + 2, NULL, NULL);
}
