/* test_llvm.c — the LLVM backend (backends/llvm/):
 *   - every fusible op has an emitter, and each op alone, in every compute
 *     dtype its rule allows, on special values (signed zeros, infinities,
 *     NaN, denormals, huge and tiny numbers), gives the unfused op's bits:
 *     exactly for "llvm-libm", and for "llvm" exactly except where it takes a
 *     vectorised function instead of libm (f64 exp/log/tanh/erf and what is
 *     built on them, f32 erf and pow), which stay within a stated ulp bound
 *     (sin, cos, log1p, expm1 and f64 pow are the portable runner's own
 *     functions in both modes: exact);
 *   - the fuser's differential tester (tests/support/fuser_cases.c): random
 *     pointwise models fused into LLVM kernels against the unfused replay,
 *     bit for bit, across dtypes, broadcasting, strides and chunks;
 *   - kernels big enough to be split across threads, rows split mid-way;
 *   - kernel caching: one compile per spec, identical kernels shared, the
 *     on-disk cache reused by a second process and never read from a
 *     directory that others may write; the portable runner taking
 *     over a group with the reason; threads compiling at once; vectorised IR
 *     for the pointwise chain.
 * Built without LLVM, every test is skipped. TJIT_LLVM_CASES sets the
 * number of random cases of each differential test (default 300). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/fuser_cases.h"
#include "examples/models/models.h"
#include "tests/support/runtime_testing.h"
#ifdef TJIT_HAVE_LLVM
#include "backends/llvm/tjl.h"
#endif

static const char *self_path; /* argv[0], to run this test as a second process */

#ifndef TJIT_HAVE_LLVM
#define LLVM_ONLY skip()
#else
#define LLVM_ONLY

/* ---- each op alone ------------------------------------------------------------- */

enum { N = 1027 }; /* odd: vector bodies and their remainders both run */

/* Floats worth a look, cycled through with random ones between. */
static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, INFINITY, -INFINITY, NAN,
                                  1e-40, -1e-40, 1e-310, -1e-310, 1e30, -1e30, 1e300, -1e300,
                                  88.7, -87.5, 709.7, -745.0, 2.5, -3.5, 1e-8, 20.0, -20.0,
                                  0.625, -0.625, 7.9, 16777217.0};

/* Inside a scope: the tensors belong to it. */
static tj_tensor *op_input(tj_generator *gen, tj_dtype dt, int which) {
    int64_t n = N;
    if (dt == TJ_BOOL || dt == TJ_I64) return tt_random(gen, &n, 1, dt, -6, 6);
    tj_tensor *t = tt_random(gen, &n, 1, TJ_F64, -4, 4);
    double *v = (double *)tj_data(t);
    int ns = (int)(sizeof specials / sizeof specials[0]);
    for (int i = 0; i < N; i += 2) v[i] = specials[(i / 2 + which * 7) % ns];
    for (int i = 1; i < N; i += 8) v[i] *= 100; /* and some of moderate size */
    return tj_to_dtype(t, dt); /* both belong to the caller's scope */
}

/* Whether "llvm" computes op in dtype t with another function than libm's
 * (so the bits may differ from the portable runner's within the bound). */
static bool vectorised_libm(const tj_op_info *op, tj_dtype t) {
    static const char *f64_ops[] = {"aten::exp", "aten::log", "aten::tanh", "aten::sigmoid",
                                    "aten::silu", "aten::gelu", "aten::erf"};
    static const char *f32_ops[] = {"aten::erf", "aten::gelu", "aten::pow", "aten::pow.Tensor_Scalar"};
    const char *name = op->name;
    for (size_t i = 0; t == TJ_F64 && i < sizeof f64_ops / sizeof *f64_ops; i++)
        if (!strcmp(name, f64_ops[i])) return true;
    for (size_t i = 0; t == TJ_F32 && i < sizeof f32_ops / sizeof *f32_ops; i++)
        if (!strcmp(name, f32_ops[i])) return true;
    return false;
}

static double ulp_of(double x, tj_dtype t) {
    int e;
    frexp(x, &e);
    double u = ldexp(1.0, e - (t == TJ_F32 ? 24 : 53));
    double tiny = t == TJ_F32 ? 0x1p-149 : 0x1p-1074;
    return u > tiny ? u : tiny;
}

/* got against want (the unfused op): exact, or within `ulps` plus, for gelu,
 * the cancellation in 1 + erf(x) (scaled by |x|). */
static void compare_op(const tj_op_info *op, tj_tensor *got, tj_tensor *want, tj_tensor *x, double ulps,
                       const char *what) {
    tt_ref g = tt_ref_of(got), w = tt_ref_of(want), a = tt_ref_of(x);
    tj_dtype t = tj_tensor_dtype(want);
    assert_int_equal(tj_tensor_dtype(got), t);
    assert_int_equal(g.numel, w.numel);
    bool gelu = !strcmp(op->name, "aten::gelu");
    for (int64_t i = 0; i < g.numel; i++) {
        double G = g.v[i], W = w.v[i];
        if (G == W || (isnan(G) && isnan(W))) continue;
        double tol = ulps * ulp_of(W, t) + (gelu ? ulps * ulp_of(a.v[i], t) : 0);
        if (ulps > 0 && isfinite(G) && isfinite(W) && fabs(G - W) <= tol) continue;
        fail_msg("%s (%s): element %lld (input %.17g): got %.17g, want %.17g", op->name, what,
                 (long long)i, a.v[i], G, W);
    }
    tt_ref_free(&g);
    tt_ref_free(&w);
    tt_ref_free(&a);
}

/* Attribute variant v of op: floats, optional floats and choices varied. */
static void op_attrs(const tj_op_info *op, int v, tj_attr *attrs) {
    const tj_schema *sc = &op->schema;
    static const double f[] = {2.5, -1.0, 0.5, 3.0};
    static const double lo[] = {-1.0, TJ_NONE, 0.5, 2.0}, hi[] = {2.0, 1.5, TJ_NONE, -1.0};
    int opt = 0;
    for (int k = 0; k < sc->n_attrs; k++) {
        const tj_arg *arg = &sc->args[sc->attr_pos[k]];
        attrs[k] = arg->def;
        if (arg->type == TJ_ARG_FLOAT) attrs[k].f = f[(v + k) % 4];
        if (arg->type == TJ_ARG_FLOAT_OPT) attrs[k].f = opt++ ? hi[v] : lo[v];
        if (arg->type == TJ_ARG_SCALAR) /* odd variants write whole numbers as integers */
            attrs[k].scalar = v % 2 && f[(v + k) % 4] == (int64_t)f[(v + k) % 4]
                                  ? tj_scalar_int((int64_t)f[(v + k) % 4]) : tj_scalar_float(f[(v + k) % 4]);
        if (arg->type == TJ_ARG_SCALAR_OPT) {
            double b = opt++ ? hi[v] : lo[v];
            attrs[k].scalar = v % 2 && b == (int64_t)b ? tj_scalar_int((int64_t)b) : tj_scalar_float(b);
        }
        if (arg->type == TJ_ARG_STR && arg->choices) attrs[k].s = v % 2 ? "tanh" : "none";
    }
}

static void each_op_alone(const tjf_backend *backend, bool exact) {
    tj_generator *gen = tj_generator_new(21);
    int checked = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tj_op_at(i);
        if (!tjf_fusible_op(op)) continue;
        int n_in = op->schema.n_tensor_args;
        for (int dt = 0; dt < TJ_NUM_DTYPES; dt++) {
            for (int v = 0; v < 4; v++) {
                tj_scope_begin();
                tj_tensor *in[3];
                for (int k = 0; k < n_in; k++) /* where's condition is bool */
                    in[k] = op_input(gen, k == 0 && op->pw_rule == TJC_PW_SELECT ? TJ_BOOL : (tj_dtype)dt, k + v);
                tj_attr attrs[4];
                op_attrs(op, v, attrs);
                tj_tensor *want;
                if (tj_invoke(tj_op_id(op), in, n_in, attrs, op->schema.n_attrs, &want, 1) != 1) {
                    tj_clear_error(); /* a dtype or attribute the op refuses */
                    tj_scope_end();
                    continue;
                }
                tj_dtype compute, result;
                assert_int_equal(tjc_pw_types(op, in, n_in, attrs, &compute, &result), TJ_OK);
                tj_tensor *got;
                if (tt_run_op_kernel(backend, op, attrs, in, n_in, &got) != TJ_OK)
                    fail_msg("%s on %s: %s", op->name, tj_dtype_name((tj_dtype)dt), tj_last_error());
                char what[64];
                snprintf(what, sizeof what, "%s, attributes %d", tj_dtype_name((tj_dtype)dt), v);
                double ulps = exact || !vectorised_libm(op, compute) ? 0 : 8;
                compare_op(op, got, want, in[0], ulps, what);
                tj_release(got); /* the kernel's output; the rest belongs to the scope */
                checked++;
                tj_scope_end();
            }
        }
    }
    print_message("%s: %d op, dtype and attribute combinations\n", backend->name, checked);
    assert_true(checked > 150);
    tj_generator_free(gen);
}
#endif

static void every_fusible_op_has_an_emitter(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    int n = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tj_op_at(i);
        if (!tjf_fusible_op(op)) continue;
        if (!tjl_has_emitter(op)) fail_msg("%s: fusible, but the LLVM backend has no emitter for it", op->name);
        n++;
    }
    assert_true(n >= 50);
#endif
}

static void ops_alone_match_libm_mode_exactly(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    each_op_alone(tjl_libm_backend(), true);
#endif
}

static void ops_alone_match_vectorised_mode(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    each_op_alone(tjl_backend(), false);
#endif
}

/* ---- random models ---------------------------------------------------------------- */

#ifdef TJIT_HAVE_LLVM
static void differential(const char *backend, bool (*op_ok)(const tj_op_info *), bool no_f64, uint64_t seed0) {
    const char *env = getenv("TJIT_LLVM_CASES");
    int cases = env ? atoi(env) : 300;
    tj_generator *gen = tj_generator_new(seed0);
    tt_fuser_opts o = {backend, op_ok, true, no_f64};
    tt_fuser_counts c = {0, 0, 0};
    tjl_stats before = tjl_get_stats();
    for (int i = 0; i < cases; i++) tt_fuser_run_case((int)seed0 * 100000 + i, gen, &o, &c);
    tj_generator_free(gen);
    tjl_stats s = tjl_get_stats();
    print_message("%s: %d of %d cases fused (%d groups): %lld kernels compiled, %lld shared, "
                  "%lld fell back\n", backend, c.fused_cases, cases, c.groups,
                  (long long)(s.compiled - before.compiled), (long long)(s.memory_hits - before.memory_hits),
                  (long long)(s.fallbacks - before.fallbacks));
    assert_true(c.fused_cases * 10 >= cases * 7);
    assert_int_equal(s.fallbacks, before.fallbacks);
}

/* The ops whose "llvm" code is libm's or mirrors the portable runner's in f32. */
static bool same_bits_in_f32(const tj_op_info *op) {
    return strcmp(op->name, "aten::erf") && strcmp(op->name, "aten::gelu") && strcmp(op->name, "aten::pow") &&
           strcmp(op->name, "aten::pow.Tensor_Scalar");
}
#endif

static void random_models_libm_mode(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    differential("llvm-libm", NULL, false, 31);
#endif
}

static void random_models_vectorised_mode(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    differential("llvm", same_bits_in_f32, true, 32);
#endif
}

/* ---- big kernels: threads ------------------------------------------------------ */

#ifdef TJIT_HAVE_LLVM
/* h = sigmoid(g0) * tanh(g1 + bias) + g2 * c over chunks of gates [B, 3H],
 * and exp(-h): rows of H, a broadcast bias, and c contiguous or strided. */
static tj_status gates_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_scope_begin();
    tj_tensor *g[3];
    tj_chunk(in[0], 3, 1, g, 3);
    tj_tensor *h = tj_add(tj_mul(tj_sigmoid(g[0]), tj_tanh(tj_add(g[1], in[1], 1.0))), tj_mul(g[2], in[2]), 1.0);
    out[0] = tj_keep(h);
    out[1] = tj_keep(tj_exp(tj_neg(h)));
    tj_scope_end();
    return out[1] ? TJ_OK : tj_last_status();
}

#endif

static void big_kernels_split_across_threads(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    tj_generator *gen = tj_generator_new(41);
    const int64_t B = 513, H = 300; /* 153900 elements: over the grain; threads split rows */
    int64_t gs[2] = {B, 3 * H}, bs[1] = {H}, cs[2] = {B, H}, ct[2] = {H, B};
    tj_tensor *in[3] = {tt_random(gen, gs, 2, TJ_F32, -3, 3), tt_random(gen, bs, 1, TJ_F32, -1, 1),
                        tt_random(gen, cs, 2, TJ_F32, -2, 2)};
    tj_graph *g = tj_trace(gates_model, NULL, in, 3, 2, NULL);
    assert_non_null(g);
    tj_program *plain = tt_compile_with(g, false, NULL, NULL);
    int groups = 0;
    tj_program *fused = tt_compile_with(g, true, "llvm", &groups);
    assert_int_equal(groups, 1);
    tj_tensor *base = tt_random(gen, ct, 2, TJ_F32, -2, 2); /* c transposed: a strided input */
    tj_tensor *ctr = tj_transpose(base, 0, 1);
    tj_release(tj_copy_(ctr, in[2]));
    for (int threads = 1; threads <= 2; threads++) {
        tj_set_num_threads(threads);
        for (int layout = 0; layout < 2; layout++) {
            tj_tensor *args[3] = {in[0], in[1], layout ? ctr : in[2]};
            tj_tensor *a[2], *b[2];
            assert_int_equal(tj_run(plain, args, a), TJ_OK);
            assert_int_equal(tj_run(fused, args, b), TJ_OK);
            for (int o = 0; o < 2; o++) {
                tt_assert_identical(a[o], b[o], layout ? "strided, threads" : "contiguous, threads", threads);
                tj_release(a[o]);
                tj_release(b[o]);
            }
        }
    }
    tj_set_num_threads(0);
    tj_release(ctr);
    tj_release(base);
    tj_program_free(plain);
    tj_program_free(fused);
    tj_graph_free(g);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tj_generator_free(gen);
#endif
}

/* ---- caching -------------------------------------------------------------------- */

#ifdef TJIT_HAVE_LLVM
static double chain_constant = 1.0; /* varied to make kernels no other test has loaded */

static tj_status small_chain(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_scope_begin();
    out[0] = tj_keep(tj_add_scalar(tj_mul(tj_tanh(in[0]), tj_sigmoid(in[1])), chain_constant, 1.0));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

/* The fused graph of small_chain on 2-D inputs of sizes sz, and its group. */
static tj_graph *chain_graph(const int64_t *sz, tj_tensor **in, tj_node **grp) {
    tj_generator *gen = tj_generator_new(5);
    in[0] = tt_random(gen, sz, 2, TJ_F32, -1, 1);
    in[1] = tt_random(gen, sz, 2, TJ_F32, -1, 1);
    tj_generator_free(gen);
    tj_graph *g = tj_trace(small_chain, NULL, in, 2, 1, NULL);
    assert_non_null(g);
    assert_int_equal(tj_pass_fuse(g), TJ_OK);
    *grp = tj_block_first(tj_graph_block(g));
    assert_int_equal(tj_node_kind_of(*grp), TJ_NODE_FUSION_GROUP);
    assert_int_equal(tj_node_num_inputs(*grp), 2);
    return g;
}

/* The group's inputs in its own order. */
static void group_args(tj_graph *g, tj_node *grp, tj_tensor *x, tj_tensor *y, tj_tensor **args) {
    for (int i = 0; i < 2; i++) args[i] = tj_node_input(grp, i) == tj_graph_input(g, 0) ? x : y;
}

static int64_t loads(tjl_stats s) { return s.compiled + s.memory_hits + s.disk_hits; }

/* Runs the group and checks the answer against the eager ops. */
static void run_and_check(tjf_group *run, tj_graph *g, tj_node *grp, tj_tensor *x, tj_tensor *y) {
    tj_tensor *args[2], *out[1];
    group_args(g, grp, x, y, args);
    if (tjf_group_run(run, args, out) != TJ_OK) fail_msg("group run: %s", tj_last_error());
    tj_scope_begin();
    tj_tensor *want = tj_add_scalar(tj_mul(tj_tanh(x), tj_sigmoid(y)), chain_constant, 1.0);
    tt_assert_identical(want, out[0], "cached kernel", 0);
    tj_scope_end();
    tj_release(out[0]);
}
#endif

static void one_compile_per_spec(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    chain_constant = 11.0;
    int64_t sz[2] = {6, 7}, other[2] = {3, 7};
    tj_tensor *in[2];
    tj_node *grp;
    tj_graph *g = chain_graph(sz, in, &grp);
    tjl_stats s0 = tjl_get_stats();
    tjf_group *run = tjf_group_new(grp, tjl_backend());
    assert_non_null(run);
    for (int rep = 0; rep < 3; rep++) run_and_check(run, g, grp, in[0], in[1]);
    assert_int_equal(tjf_group_num_kernels(run), 1);
    assert_int_equal(loads(tjl_get_stats()), loads(s0) + 1); /* a repeated spec: no new kernel */
    tj_tensor *base = tj_empty((int64_t[]){7, 6}, 2, TJ_F32);
    tj_tensor *t = tj_transpose(base, 0, 1); /* a strided input: a spec of its own */
    tj_release(tj_copy_(t, in[1]));
    run_and_check(run, g, grp, in[0], t);
    run_and_check(run, g, grp, in[0], t);
    assert_int_equal(tjf_group_num_kernels(run), 2);
    assert_int_equal(loads(tjl_get_stats()), loads(s0) + 2);
    tj_generator *gen = tj_generator_new(6); /* other sizes: another spec */
    tj_tensor *x = tt_random(gen, other, 2, TJ_F32, -1, 1), *y = tt_random(gen, other, 2, TJ_F32, -1, 1);
    run_and_check(run, g, grp, x, y); /* (its code is the first kernel's: sizes are in the launch) */
    run_and_check(run, g, grp, in[0], in[1]);
    assert_int_equal(tjf_group_num_kernels(run), 3);
    assert_int_equal(loads(tjl_get_stats()), loads(s0) + 3);
    /* a second group of the same subgraph shares the loaded kernels */
    tjl_stats s1 = tjl_get_stats();
    tjf_group *twin = tjf_group_new(grp, tjl_backend());
    run_and_check(twin, g, grp, in[0], in[1]);
    tjl_stats s2 = tjl_get_stats();
    assert_int_equal(s2.compiled, s1.compiled);
    assert_int_equal(s2.memory_hits, s1.memory_hits + 1);
    assert_int_equal(s2.loaded, s1.loaded);
    tjf_group_free(twin);
    tjf_group_free(run); /* the last references: the code is unloaded */
    assert_int_equal(tjl_get_stats().loaded, s0.loaded);
    tj_release(x);
    tj_release(y);
    tj_release(t);
    tj_release(base);
    tj_generator_free(gen);
    tj_graph_free(g);
    tj_release(in[0]);
    tj_release(in[1]);
#endif
}

#ifdef TJIT_HAVE_LLVM
/* Runs the chain once through a fresh group; the stats' change. */
static tjl_stats run_fresh(void) {
    int64_t sz[2] = {5, 9};
    tj_tensor *in[2];
    tj_node *grp;
    tj_graph *g = chain_graph(sz, in, &grp);
    tjl_stats s0 = tjl_get_stats();
    tjf_group *run = tjf_group_new(grp, tjl_backend());
    run_and_check(run, g, grp, in[0], in[1]);
    tjl_stats s1 = tjl_get_stats(), d = {s1.compiled - s0.compiled, s1.disk_hits - s0.disk_hits,
                                         s1.memory_hits - s0.memory_hits, s1.fallbacks - s0.fallbacks, 0, 0};
    tjf_group_free(run);
    tj_graph_free(g);
    tj_release(in[0]);
    tj_release(in[1]);
    return d;
}

static int count_files(const char *dir, const char *suffix) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '%s$'", dir, suffix);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}
#endif

static void disk_cache_serves_a_second_process(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    char *dir = tt_mkdtemp();
    setenv("TJIT_CACHE_DIR", dir, 1);
    chain_constant = 1234.5;
    tjl_stats d = run_fresh(); /* compiled, and written */
    assert_int_equal(d.compiled, 1);
    assert_int_equal(count_files(dir, ".o"), 1);
    d = run_fresh(); /* unloaded in between: read back from the disk */
    assert_int_equal(d.compiled, 0);
    assert_int_equal(d.disk_hits, 1);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "'%s' --cache-child '%s'", self_path, dir);
    assert_int_equal(system(cmd), 0); /* the child checks that it did not compile */
    /* a file that is not what its name says is a miss, and is rewritten */
    char list[4200];
    snprintf(list, sizeof list, "ls %s/*.o", dir);
    FILE *p = popen(list, "r");
    char name[4096] = "";
    if (p && fgets(name, sizeof name, p)) name[strcspn(name, "\n")] = 0;
    if (p) pclose(p);
    tt_write_file(name, "TJITOBJ1garbage", 15);
    d = run_fresh();
    assert_int_equal(d.compiled, 1);
    assert_int_equal(d.disk_hits, 0);
    d = run_fresh();
    assert_int_equal(d.disk_hits, 1);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
#endif
}

/* The object is planted by a trusted run, then the directory is opened to
 * others (or given to another user): a second process must compile. */
static void untrusted_cache_directory_is_not_loaded(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    char *dir = tt_mkdtemp(), *logs = tt_mkdtemp(), *log = tt_path(logs, "stderr");
    setenv("TJIT_CACHE_DIR", dir, 1);
    chain_constant = 4321.5;
    assert_int_equal(run_fresh().compiled, 1);
    assert_int_equal(run_fresh().disk_hits, 1); /* the object is good */
    unsetenv("TJIT_CACHE_DIR");
    for (int owner = 0; owner < 2; owner++) {
        if (owner && geteuid() != 0) break; /* only root can give the directory away */
        if (owner) {
            assert_int_equal(chmod(dir, 0700), 0);
            assert_int_equal(chown(dir, 65534, 65534), 0);
        } else {
            assert_int_equal(chmod(dir, 0777), 0);
        }
        char cmd[8400];
        snprintf(cmd, sizeof cmd, "'%s' --untrusted-cache-child '%s' 2>'%s'", self_path, dir, log);
        assert_int_equal(system(cmd), 0); /* the child checks that it compiled */
        char *err = tt_read_file(log);
        assert_non_null(err);
        if (!strstr(err, dir) || !strstr(err, owner ? "is owned by uid 65534" : "is writable by group and others"))
            fail_msg("no warning naming the directory and why:\n%s", err);
        free(err);
        assert_int_equal(count_files(dir, ".o"), 1); /* and wrote nothing */
    }
    tt_rmtree(dir);
    tt_rmtree(logs);
    free(log);
#endif
}

/* The second process of the two tests above. */
static int cache_child(const char *dir, bool trusted) {
#ifdef TJIT_HAVE_LLVM
    setenv("TJIT_CACHE_DIR", dir, 1);
    chain_constant = trusted ? 1234.5 : 4321.5;
    tjl_stats d = run_fresh();
    if (d.compiled != !trusted || d.disk_hits != trusted) {
        fprintf(stderr, "cache child: %lld compiled, %lld from disk\n", (long long)d.compiled,
                (long long)d.disk_hits);
        return 1;
    }
#else
    (void)dir;
    (void)trusted;
#endif
    return 0;
}

static void portable_runner_takes_over_with_the_reason(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    chain_constant = 77.0;
    int64_t sz[2] = {4, 5};
    tj_tensor *in[2];
    tj_node *grp;
    tj_graph *g = chain_graph(sz, in, &grp);
    setenv("TJIT_LLVM_SKIP", "aten::sin,aten::tanh", 1);
    tjf_spec spec;
    tj_tensor *args[2];
    group_args(g, grp, in[0], in[1], args);
    tjf_spec_of(args, 2, &spec);
    tjl_stats s0 = tjl_get_stats();
    tjf_kernel *k = tjl_backend()->compile(tj_node_subgraph(grp), &spec);
    unsetenv("TJIT_LLVM_SKIP");
    assert_non_null(k);
    assert_non_null(tjl_kernel_fallback(k));
    assert_non_null(strstr(tjl_kernel_fallback(k), "aten::tanh is in TJIT_LLVM_SKIP"));
    assert_null(tjl_kernel_symbol(k));
    assert_int_equal(tjl_get_stats().fallbacks, s0.fallbacks + 1);
    tj_tensor *out = tj_empty(sz, 2, TJ_F32);
    assert_int_equal(tjl_backend()->launch(k, args, &out), TJ_OK);
    tj_scope_begin();
    tt_assert_identical(tj_add_scalar(tj_mul(tj_tanh(in[0]), tj_sigmoid(in[1])), 77.0, 1.0), out,
                        "fallback", 0);
    tj_scope_end();
    tjl_backend()->release(k);
    tj_release(out);
    tj_graph_free(g);
    tj_release(in[0]);
    tj_release(in[1]);
#endif
}

#ifdef TJIT_HAVE_LLVM
/* A thread's share of concurrent_compiles: groups of its own constants. */
static void *compile_some(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int k = 0; k < 4; k++) {
        tj_generator *gen = tj_generator_new((uint64_t)(id * 10 + k));
        int64_t sz[2] = {3 + id, 40 + k};
        tj_tensor *x = tt_random(gen, sz, 2, TJ_F32, -2, 2), *y = tt_random(gen, sz, 2, TJ_F32, -2, 2);
        const tj_op_info *mul = tj_op_find("aten::mul"), *tanh_op = tj_op_find("aten::tanh");
        tj_tensor *got = NULL, *t = NULL;
        tj_attr none[1];
        /* two one-op kernels per round, compiled while the other threads compile theirs */
        if (tt_run_op_kernel(tjl_backend(), tanh_op, none, &x, 1, &t) ||
            tt_run_op_kernel(tjl_backend(), mul, none, (tj_tensor *[]){t, y}, 2, &got))
            return (void *)1;
        tj_scope_begin();
        tj_tensor *want = tj_mul(tj_tanh(x), y);
        tt_ref a = tt_ref_of(want), b = tt_ref_of(got);
        bool same = a.numel == b.numel;
        for (int64_t i = 0; same && i < a.numel; i++) same = a.v[i] == b.v[i];
        tt_ref_free(&a);
        tt_ref_free(&b);
        tj_scope_end();
        tj_release(got);
        tj_release(t);
        tj_release(x);
        tj_release(y);
        tj_generator_free(gen);
        if (!same) return (void *)1;
    }
    return NULL;
}
#endif

static void concurrent_compiles(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    enum { THREADS = 4 };
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, compile_some, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        assert_int_equal(pthread_join(th[i], &r), 0);
        assert_null(r);
    }
#endif
}

/* ---- what the code looks like ---------------------------------------------------- */

static void the_chain_vectorises(void **state) {
    (void)state;
    LLVM_ONLY;
#ifdef TJIT_HAVE_LLVM
    chain_constant = 1.0;
    int64_t sz[2] = {100, 100};
    tj_tensor *in[2];
    tj_node *grp;
    tj_graph *g = chain_graph(sz, in, &grp);
    tjf_spec spec;
    tjf_spec_of(in, 2, &spec);
    char *ir = tjl_kernel_text(tj_node_subgraph(grp), &spec, false, TJL_TEXT_IR_OPT);
    char *as = tjl_kernel_text(tj_node_subgraph(grp), &spec, false, TJL_TEXT_ASM);
    assert_non_null(ir);
    assert_non_null(as);
    assert_non_null(strstr(ir, "vector.body")); /* the loop vectorised */
    assert_non_null(strstr(ir, " x float>"));
    /* tanh and sigmoid inline: no calls per element but intrinsics (llvm.fma) */
    for (const char *c = strstr(ir, "call float @"); c; c = strstr(c + 1, "call float @"))
        if (strncmp(c, "call float @llvm.", 17)) fail_msg("a call in the kernel: %.60s", c);
    assert_non_null(strstr(as, "tjl_kernel:"));
    free(ir);
    free(as);
    /* tjit dump --kernels: every group of a model */
    const tjx_model *m = tjx_find_model("lstm_cell");
    tj_generator *gen = tj_generator_new(0);
    void *params = m->create(gen);
    tj_tensor *mi[8];
    assert_int_equal(m->make_inputs(params, gen, mi), TJ_OK);
    tj_graph *mg = tj_trace(m->forward, params, mi, m->n_in, m->n_out, NULL);
    tj_program *p = tj_compile(mg, &(tj_compile_options){.backend = "llvm"});
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(tjl_dump_kernels(tj_program_graph(p), true, f), TJ_OK);
    fclose(f);
    assert_non_null(strstr(text, "# kernel of fusion group"));
    assert_non_null(strstr(text, "define void @tjl_kernel("));
    assert_non_null(strstr(text, "# assembly"));
    assert_non_null(strstr(text, "chunks"));
    free(text);
    tj_program_free(p);
    tj_graph_free(mg);
    for (int i = 0; i < m->n_in; i++) tj_release(mi[i]);
    m->destroy(params);
    tj_generator_free(gen);
    tj_graph_free(g);
    tj_release(in[0]);
    tj_release(in[1]);
#endif
}

int main(int argc, char **argv) {
    self_path = argv[0];
    if (argc == 3 && !strcmp(argv[1], "--cache-child")) return cache_child(argv[2], true);
    if (argc == 3 && !strcmp(argv[1], "--untrusted-cache-child")) return cache_child(argv[2], false);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_fusible_op_has_an_emitter),
        cmocka_unit_test(ops_alone_match_libm_mode_exactly),
        cmocka_unit_test(ops_alone_match_vectorised_mode),
        cmocka_unit_test(big_kernels_split_across_threads),
        cmocka_unit_test(one_compile_per_spec),
        cmocka_unit_test(disk_cache_serves_a_second_process),
        cmocka_unit_test(untrusted_cache_directory_is_not_loaded),
        cmocka_unit_test(portable_runner_takes_over_with_the_reason),
        cmocka_unit_test(concurrent_compiles),
        cmocka_unit_test(the_chain_vectorises),
        cmocka_unit_test(random_models_libm_mode),
        cmocka_unit_test(random_models_vectorised_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
