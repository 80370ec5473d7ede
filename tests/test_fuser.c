/* test_fuser.c — the fuser and the portable fused-loop runner: the LSTM
 * cell's gates in one group, the kernel cache by input spec, and a
 * differential tester: random pointwise models (random ops from the table,
 * broadcasting, 0-dim and chunked inputs, mixed dtypes) traced, fused and run
 * on contiguous and strided inputs must equal the unfused replay bit for bit,
 * since both run the same typed loops. TJIT_FUSER_CASES sets the number of
 * random cases (default 1500). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "examples/models/models.h"
#include "fuser/fuser.h"
#include "tests/support/testing.h"

static int groups_made; /* fusion groups formed by compile_with, for coverage checks */

static int count_kind(tj_graph *g, tj_node_kind kind, const char *op_name);

static tj_program *compile_with(tj_graph *g, bool fuse) {
    tj_graph *copy = tj_graph_clone(g, NULL);
    assert_non_null(copy);
    for (int i = 0; i < tj_graph_num_inputs(g); i++)
        if (tj_graph_input_binding(g, i)) tj_graph_bind_input(copy, i, tj_graph_input_binding(g, i));
    if (fuse) {
        assert_int_equal(tj_pass_fuse(copy), TJ_OK);
        groups_made += count_kind(copy, TJ_NODE_FUSION_GROUP, NULL);
    }
    assert_int_equal(tj_graph_verify(copy), TJ_OK);
    tj_compile_options opts = {.allow_size_change = false};
    opts.passes = "";
    tj_program *p = tj_compile(copy, &opts);
    if (!p) fail_msg("compile: %s", tj_last_error());
    tj_graph_free(copy);
    return p;
}

static int count_kind(tj_graph *g, tj_node_kind kind, const char *op_name) {
    int n = 0;
    for (tj_node *x = tj_block_first(tj_graph_block(g)); x; x = tj_node_next(x))
        if (tj_node_kind_of(x) == kind &&
            (!op_name || (tj_node_op(x) && !strcmp(tj_op_name(tj_node_op(x)), op_name))))
            n++;
    return n;
}

/* Exact equality, NaN equal to NaN. */
static void assert_identical(tj_tensor *a, tj_tensor *b, const char *what, int seed) {
    tt_ref ra = tt_ref_of(a), rb = tt_ref_of(b);
    if (tj_tensor_dtype(a) != tj_tensor_dtype(b) || ra.numel != rb.numel)
        fail_msg("case %d, %s: dtype or size differs", seed, what);
    for (int64_t i = 0; i < ra.numel; i++)
        if (!(ra.v[i] == rb.v[i] || (isnan(ra.v[i]) && isnan(rb.v[i]))))
            fail_msg("case %d, %s: element %lld: unfused %.17g, fused %.17g", seed, what,
                     (long long)i, ra.v[i], rb.v[i]);
    tt_ref_free(&ra);
    tt_ref_free(&rb);
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

typedef struct recipe {
    uint64_t seed;
    int n_inputs;
} recipe;

static uint64_t next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int pick(uint64_t *s, int n) { return (int)(next(s) % (uint64_t)n); }

/* The fusible ops of the table with 1 to 3 inputs. */
static int fusible_ops(const tj_op_info **ops) {
    int n = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tj_op_at(i);
        if (tjf_fusible_op(op) && op->schema.n_tensor_args <= 3) ops[n++] = op;
    }
    return n;
}

/* A random pointwise model: values start as the inputs (and chunks of the
 * last one); each op takes random earlier values; ops that reject their
 * operands' dtypes are skipped. Outputs the last value and one earlier. */
static tj_status random_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_out;
    const recipe *r = ctx;
    uint64_t s = r->seed * 7919 + 17;
    static const tj_op_info *ops[256];
    static int n_ops;
    if (!n_ops) n_ops = fusible_ops(ops);
    tj_tensor *pool[64];
    int n = 0;
    tj_scope_begin();
    for (int i = 0; i < n_in - 1; i++) pool[n++] = in[i];
    int first_made = n; /* outputs come from here on: values made in this scope */
    tj_tensor *pieces[3];
    int k = tj_chunk(in[n_in - 1], 3, -1, pieces, 3);
    for (int i = 0; i < k; i++) pool[n++] = pieces[i];
    int steps = 3 + pick(&s, 9);
    for (int t = 0; t < steps * 4 && n < 40; t++) {
        const tj_op_info *op = ops[pick(&s, n_ops)];
        const tj_schema *sc = tj_op_schema(op);
        tj_tensor *args[3];
        for (int i = 0; i < sc->n_tensor_args; i++) /* mostly recent values: chains to fuse */
            args[i] = pool[pick(&s, 10) < 7 ? n - 1 - pick(&s, n < 3 ? n : 3) : pick(&s, n)];
        tj_attr attrs[4];
        for (int a = 0; a < sc->n_attrs; a++) {
            const tj_arg *arg = &sc->args[sc->attr_pos[a]];
            attrs[a] = arg->def;
            if (arg->type == TJ_ARG_FLOAT) attrs[a].f = pick(&s, 2) ? 0.5 : (double)(pick(&s, 5) - 2);
            if (arg->type == TJ_ARG_FLOAT_OPT) attrs[a].f = pick(&s, 3) ? (double)pick(&s, 3) - 1.0 : TJ_NONE;
            if (arg->type == TJ_ARG_STR && arg->choices) attrs[a].s = pick(&s, 2) ? "tanh" : "none";
        }
        tj_tensor *res;
        if (tj_invoke(tj_op_id(op), args, sc->n_tensor_args, attrs, sc->n_attrs, &res, 1) == 1) {
            pool[n++] = res;
            if (--steps == 0) break;
        }
        tj_clear_error();
    }
    /* outputs belong to the caller's scope, like any tj_ function's results */
    out[0] = tj_keep(pool[n - 1]);
    out[1] = tj_keep(pool[first_made + pick(&s, n - first_made)]);
    tj_scope_end();
    return TJ_OK;
}

/* A copy of t laid out transposed or strided (same sizes and values). */
static tj_tensor *restride(tj_generator *gen, tj_tensor *t, int how) {
    int nd = tj_ndim(t);
    if (nd < 2 || how == 0) return tt_noncontiguous(gen, t);
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, tj_sizes(t), sizeof(int64_t) * (size_t)nd);
    int64_t tmp = sizes[0];
    sizes[0] = sizes[nd - 1];
    sizes[nd - 1] = tmp;
    tj_tensor *base = tj_empty(sizes, nd, tj_tensor_dtype(t));
    tj_tensor *view = tj_transpose(base, 0, nd - 1);
    tj_release(tj_copy_(view, t));
    tj_release(base);
    return view;
}

static int cases_fused; /* cases whose fused program has a group */

static void run_case(int seed, tj_generator *gen) {
    uint64_t s = (uint64_t)seed * 0x2545F4914F6CDD1Dull + 1;
    int nd = pick(&s, 4);
    int64_t base[3];
    for (int d = 0; d < nd; d++) base[d] = 1 + pick(&s, 6);
    if (pick(&s, 25) == 0 && nd) base[pick(&s, nd)] = 0; /* an empty tensor */
    tj_dtype dt = pick(&s, 3) ? TJ_F32 : TJ_F64;
    recipe r = {(uint64_t)seed, 2 + pick(&s, 3)};
    tj_tensor *in[6];
    for (int i = 0; i < r.n_inputs; i++) {
        int64_t sz[3];
        int k = nd;
        memcpy(sz, base, sizeof sz);
        if (i > 0 && pick(&s, 3) == 0 && k) sz[pick(&s, k)] = 1; /* broadcast a dim */
        if (i > 0 && pick(&s, 5) == 0) k = 0;                   /* a 0-dim input */
        tj_dtype d = i == 1 && pick(&s, 6) == 0 ? (dt == TJ_F32 ? TJ_F64 : TJ_I64) : dt;
        in[i] = tt_random(gen, sz, k, d, -2, 2);
    }
    int64_t csz[3] = {base[0], base[1], base[2]}; /* the chunked input: 3 pieces of base */
    int cn = nd ? nd : 1;
    if (!nd) csz[0] = 1;
    csz[cn - 1] *= 3;
    in[r.n_inputs] = tt_random(gen, csz, cn, dt, -2, 2);
    int n_in = r.n_inputs + 1;

    tj_graph *g = tj_trace(random_model, &r, in, n_in, 2, NULL);
    if (!g) fail_msg("case %d: trace: %s", seed, tj_last_error());
    int before = groups_made;
    tj_program *plain = compile_with(g, false), *fused = compile_with(g, true);
    cases_fused += groups_made > before;
    for (int layout = 0; layout < 2; layout++) {
        tj_tensor *args[6];
        for (int i = 0; i < n_in; i++)
            args[i] = layout ? restride(gen, in[i], pick(&s, 2)) : tj_retain(in[i]);
        tj_tensor *a[2], *b[2];
        if (tj_run(plain, args, a) != TJ_OK) fail_msg("case %d: unfused: %s", seed, tj_last_error());
        if (tj_run(fused, args, b) != TJ_OK) fail_msg("case %d: fused: %s", seed, tj_last_error());
        for (int o = 0; o < 2; o++) {
            assert_identical(a[o], b[o], layout ? "strided inputs" : "contiguous inputs", seed);
            tj_release(a[o]);
            tj_release(b[o]);
        }
        for (int i = 0; i < n_in; i++) tj_release(args[i]);
    }
    tj_program_free(plain);
    tj_program_free(fused);
    tj_graph_free(g);
    for (int i = 0; i < n_in; i++) tj_release(in[i]);
}

static void fused_equals_unfused_on_random_graphs(void **state) {
    (void)state;
    const char *env = getenv("TJIT_FUSER_CASES");
    int cases = env ? atoi(env) : 1500;
    tj_generator *gen = tj_generator_new(11);
    for (int seed = 0; seed < cases; seed++) run_case(seed, gen);
    tj_generator_free(gen);
    /* the comparison means something only when most cases fused */
    print_message("%d of %d random cases formed fusion groups (%d groups)\n", cases_fused, cases,
                  groups_made);
    assert_true(cases_fused * 10 >= cases * 7);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lstm_gates_form_one_group),
        cmocka_unit_test(kernels_are_cached_by_spec),
        cmocka_unit_test(groups_respect_the_operand_limit),
        cmocka_unit_test(fused_equals_unfused_on_random_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
