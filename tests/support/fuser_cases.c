/* fuser_cases.c — the fuser's differential tester (fuser_cases.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/fuser.h"
#include "tests/support/fuser_cases.h"

static int count_groups(tj_graph *g) {
    int n = 0;
    for (tj_node *x = tj_block_first(tj_graph_block(g)); x; x = tj_node_next(x))
        n += tj_node_kind_of(x) == TJ_NODE_FUSION_GROUP;
    return n;
}

static tj_program *compile_copy(tj_graph *g, bool fuse, const char *backend, int *groups,
                                bool dynamic) {
    tj_graph *copy = tj_graph_clone(g, NULL);
    assert_non_null(copy);
    for (int i = 0; i < tj_graph_num_inputs(g); i++)
        if (tj_graph_input_binding(g, i)) tj_graph_bind_input(copy, i, tj_graph_input_binding(g, i));
    if (fuse) {
        assert_int_equal(tj_pass_fuse(copy), TJ_OK);
        if (groups) *groups += count_groups(copy);
    }
    assert_int_equal(tj_graph_verify(copy), TJ_OK);
    tj_compile_options opts = {.allow_size_change = false};
    opts.passes = "";
    opts.backend = backend ? backend : "portable"; /* NULL: the reference, whatever the default */
    opts.dynamic_replay = dynamic;
    tj_program *p = tj_compile(copy, &opts);
    if (!p) fail_msg("compile: %s", tj_last_error());
    tj_graph_free(copy);
    return p;
}

tj_program *tt_compile_with(tj_graph *g, bool fuse, const char *backend, int *groups) {
    return compile_copy(g, fuse, backend, groups, false);
}

void tt_assert_identical(tj_tensor *a, tj_tensor *b, const char *what, int seed) {
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

typedef tt_fuser_recipe recipe;

static int pick(uint64_t *s, int n) { return (int)(tt_splitmix64(s) % (uint64_t)n); }

/* The fusible ops of the table with 1 to 3 inputs that op_ok accepts. */
static int fusible_ops(const tj_op_info **ops, int cap, bool (*op_ok)(const tj_op_info *)) {
    int n = 0;
    for (int i = 0; i < tj_op_count() && n < cap; i++) {
        const tj_op_info *op = tj_op_at(i);
        if (tjf_fusible_op(op) && op->schema.n_tensor_args <= 3 && (!op_ok || op_ok(op))) ops[n++] = op;
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
        const tj_op_info *op = r->ops[pick(&s, r->n_ops)];
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
            if (arg->type == TJ_ARG_SCALAR || arg->type == TJ_ARG_SCALAR_OPT) {
                int64_t whole = (int64_t)pick(&s, 5) - 2;
                attrs[a].scalar = pick(&s, 2) ? tj_scalar_float(pick(&s, 2) ? 0.5 : (double)whole) : tj_scalar_int(whole);
                if (arg->type == TJ_ARG_SCALAR_OPT && !pick(&s, 3)) attrs[a].scalar = tj_scalar_none();
            }
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
tj_tensor *tt_fuser_restride(tj_generator *gen, tj_tensor *t, int how) {
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

void tt_fuser_case_setup(int seed, tj_generator *gen, const tt_fuser_opts *o, tt_fuser_case *c) {
    static const tj_op_info *all_ops[256];
    static int n_all;
    if (!n_all) n_all = fusible_ops(all_ops, 256, NULL);
    memset(c, 0, sizeof *c);
    recipe *r = &c->recipe;
    *r = (recipe){(uint64_t)seed, 0, all_ops, n_all};
    if (o->op_ok) {
        r->ops = c->ops;
        r->n_ops = fusible_ops(c->ops, 256, o->op_ok);
    }
    c->model = random_model;
    uint64_t s = (uint64_t)seed * 0x2545F4914F6CDD1Dull + 1;
    int nd = pick(&s, 4);
    int64_t base[3];
    for (int d = 0; d < nd; d++) base[d] = 1 + pick(&s, 6);
    if (pick(&s, 25) == 0 && nd) base[pick(&s, nd)] = 0; /* an empty tensor */
    tj_dtype dt = pick(&s, 3) || o->no_f64 ? TJ_F32 : TJ_F64;
    if (o->int_inputs && pick(&s, 4) == 0) dt = TJ_I64;
    r->n_inputs = 2 + pick(&s, 3);
    tj_tensor **in = c->in;
    for (int i = 0; i < r->n_inputs; i++) {
        int64_t sz[3];
        int k = nd;
        memcpy(sz, base, sizeof sz);
        if (i > 0 && pick(&s, 3) == 0 && k) sz[pick(&s, k)] = 1; /* broadcast a dim */
        if (i > 0 && pick(&s, 5) == 0) k = 0;                   /* a 0-dim input */
        tj_dtype d = i == 1 && pick(&s, 6) == 0 ? (dt == TJ_F32 && !o->no_f64 ? TJ_F64 : TJ_I64) : dt;
        if (o->int_inputs && i == 2 && pick(&s, 3) == 0) d = TJ_BOOL;
        in[i] = tt_random(gen, sz, k, d, -2, 2);
    }
    int64_t csz[3] = {base[0], base[1], base[2]}; /* the chunked input: 3 pieces of base */
    int cn = nd ? nd : 1;
    if (!nd) csz[0] = 1;
    csz[cn - 1] *= 3;
    in[r->n_inputs] = tt_random(gen, csz, cn, dt, -2, 2);
    c->n_in = r->n_inputs + 1;
    c->draws = s;
}

void tt_fuser_case_free(tt_fuser_case *c) {
    for (int i = 0; i < c->n_in; i++) tj_release(c->in[i]);
    c->n_in = 0;
}

void tt_fuser_run_case(int seed, tj_generator *gen, const tt_fuser_opts *o, tt_fuser_counts *c) {
    tt_fuser_case fc;
    tt_fuser_case_setup(seed, gen, o, &fc);
    recipe r = fc.recipe;
    if (o->op_ok) r.ops = fc.ops;
    uint64_t s = fc.draws;
    tj_tensor **in = fc.in;
    int n_in = fc.n_in;

    tj_graph *g = tj_trace(random_model, &r, in, n_in, 2, NULL);
    if (!g) fail_msg("case %d: trace: %s", seed, tj_last_error());
    int before = c->groups;
    tj_program *plain = tt_compile_with(g, false, NULL, NULL);
    tj_program *fused = tt_compile_with(g, true, o->backend, &c->groups);
    /* the register interpreter, op by op: the static plans of the other two
     * must not change a bit */
    tj_program *dynamic = compile_copy(g, false, NULL, NULL, true);
    c->cases++;
    c->fused_cases += c->groups > before;
    for (int layout = 0; layout < 2; layout++) {
        tj_tensor *args[6];
        for (int i = 0; i < n_in; i++)
            args[i] = layout ? tt_fuser_restride(gen, in[i], pick(&s, 2)) : tj_retain(in[i]);
        tj_tensor *a[2], *b[2], *d[2];
        if (tj_run(plain, args, a) != TJ_OK) fail_msg("case %d: unfused: %s", seed, tj_last_error());
        if (tj_run(fused, args, b) != TJ_OK) fail_msg("case %d: fused: %s", seed, tj_last_error());
        if (tj_run(dynamic, args, d) != TJ_OK) fail_msg("case %d: dynamic: %s", seed, tj_last_error());
        for (int out = 0; out < 2; out++) {
            tt_assert_identical(a[out], b[out], layout ? "strided inputs" : "contiguous inputs", seed);
            tt_assert_identical(a[out], d[out], layout ? "planned vs dynamic replay, strided inputs"
                                                       : "planned vs dynamic replay", seed);
            tj_release(a[out]);
            tj_release(b[out]);
            tj_release(d[out]);
        }
        for (int i = 0; i < n_in; i++) tj_release(args[i]);
    }
    tj_program_free(plain);
    tj_program_free(fused);
    tj_program_free(dynamic);
    tj_graph_free(g);
    tt_fuser_case_free(&fc);
}

tj_status tt_run_op_kernel(const tjf_backend *backend, const tj_op_info *op, const tj_attr *attrs,
                           tj_tensor *const *in, int n_in, tj_tensor **out) {
    *out = NULL;
    tj_graph *sub = tj_graph_new();
    tj_value *v[3];
    int64_t sizes[TJ_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < n_in; i++) {
        tj_type t = tj_type_of_tensor(in[i]);
        v[i] = tj_graph_add_input(sub, &t, NULL);
        int64_t next[TJ_MAX_DIMS];
        if (tjc_broadcast_shapes(op->name, sizes, nd, tj_sizes(in[i]), tj_ndim(in[i]), next, &nd)) {
            tj_graph_free(sub);
            return tj_last_status();
        }
        memcpy(sizes, next, sizeof sizes);
    }
    tj_dtype compute, result;
    tj_status st = tjc_pw_types(op, in, n_in, attrs, &compute, &result);
    tj_node *n = st ? NULL : tj_node_create_op(sub, op, v, n_in, attrs, op->schema.n_attrs, 1);
    if (!st && (!n || tj_block_append(tj_graph_block(sub), n))) st = tj_last_status();
    if (!st) {
        tj_type ot = tj_type_contiguous(result, sizes, nd);
        tj_value_set_type(tj_node_output(n, 0), &ot);
        st = tj_graph_add_output(sub, tj_node_output(n, 0));
    }
    tjf_spec *spec = calloc(1, sizeof *spec);
    tjf_kernel *k = NULL;
    if (!st) {
        tjf_spec_of(in, n_in, spec);
        k = backend->compile(sub, spec);
        if (!k) st = tj_last_status();
    }
    if (!st) {
        *out = tjc_alloc(sizes, nd, result);
        st = backend->launch(k, in, out);
    }
    if (k) backend->release(k);
    free(spec);
    tj_graph_free(sub);
    return st;
}
